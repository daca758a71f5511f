//! The `mdlc` command: parses arguments, calls the driver, prints diagnostics, sets the exit code
//! (0 success, 1 the input has errors, 2 usage or I/O failure).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use codespan_reporting::term::termcolor::{BufferedStandardStream, ColorChoice};
use mdlc::diag::{self, MessageFormat};
use mdlc::driver;
use mdlc::project::Target;

#[derive(Parser, Debug)]
#[command(
    name = "mdlc",
    version,
    about = "A model compiler for Valve's GoldSrc and Source engines",
    long_about = "mdlc reads model projects (QC files in both the Half-Life and the Source \
                  dialect, or its own model.toml) and the SMD/VTA sources they use, and \
                  reports every problem with its file, line and column.",
    after_help = "Examples:\n  mdlc check model.qc\n  mdlc check model_reference.smd idle.smd\n  \
                  mdlc check --message-format json model.toml\n  mdlc import-qc model.qc -o model.toml\n  \
                  mdlc build model.qc -o out/\n  mdlc inspect out/model.mdl"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check projects (QC, model.toml) and SMD/VTA files and print every problem; writes no file
    #[command(
        long_about = "Reads each file, checks it completely and prints every diagnostic. A \
                      project (.qc or .toml) is checked with every file it references: includes, \
                      meshes, animations. Exits with 1 if any file has an error, 0 otherwise \
                      (warnings alone do not fail), and 2 if a file named on the command line \
                      cannot be read. Never writes a file.",
        after_help = "Examples:\n  mdlc check testdata/models/creature/model.toml\n  \
                      mdlc check barney.qc --target goldsrc\n  \
                      mdlc check --message-format json anims/*.smd > problems.jsonl"
    )]
    Check {
        /// Files to check: SMD/VTA sources, QC projects (.qc) or mdlc projects (.toml)
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The engine to check a project for (default: the project's `target`; for a QC,
        /// inferred from its commands; a lone SMD/VTA file is checked by Source's rules unless
        /// this says goldsrc)
        #[arg(long, value_enum)]
        target: Option<TargetArg>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Convert a QC project into an mdlc project file (model.toml)
    #[command(
        long_about = "Reads a QC project (with its $include files and macros) and writes the \
                      equivalent model.toml: readable, grouped, with a comment wherever a QC \
                      value could not be carried over. The TOML is read back before it is \
                      written, so building from it gives the same model as building from the \
                      QC. Writes nothing if the QC has an error; never replaces an existing \
                      file unless --force is given.",
        after_help = "Examples:\n  mdlc import-qc barney.qc\n  mdlc import-qc props/crate.qc -o props/crate/model.toml"
    )]
    ImportQc {
        /// The QC file
        #[arg(value_name = "QC")]
        qc: PathBuf,
        /// Where to write the TOML (default: model.toml beside the QC)
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Replace the output file if it exists
        #[arg(long)]
        force: bool,
        /// The engine (default: inferred from the QC's commands)
        #[arg(long, value_enum)]
        target: Option<TargetArg>,
        #[command(flatten)]
        output_format: OutputArgs,
    },
    /// Compile projects (QC, model.toml) into models
    #[command(
        long_about = "Reads each project and every file it references, builds the model and \
                      writes it: for GoldSrc the .mdl, with its T.mdl (external textures) and \
                      NN.mdl (sequence groups) companions. The output path is the $modelname \
                      path relative to the current directory, as Valve's studiomdl writes it, or \
                      under DIR with -o. Files are written under temporary names and renamed \
                      when all are complete; nothing is written when any error was reported. \
                      Exits with 1 on errors, 2 when a file cannot be read or written.",
        after_help = "Examples:\n  mdlc build headcrab.qc\n  mdlc build models/*/model.toml -o build/\n  \
                      mdlc build barney.qc --target goldsrc --message-format json"
    )]
    Build {
        /// Projects to build: .qc or .toml files
        #[arg(required = true, value_name = "PROJECT")]
        projects: Vec<PathBuf>,
        /// Write under DIR instead of the current directory (path parts of $modelname that
        /// would leave DIR are dropped with a warning)
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// The engine (default: the project's `target`; for a QC, inferred from its commands)
        #[arg(long, value_enum)]
        target: Option<TargetArg>,
        #[command(flatten)]
        output_format: OutputArgs,
    },
    /// Print the contents of a compiled model and check its invariants
    #[command(
        long_about = "Reads a GoldSrc .mdl file with its T.mdl and NN.mdl companions, or a \
                      Source .mdl with its .vvd and .vtx files (beside it), and prints every \
                      record with its fields, offsets with what they point at, and the result of \
                      the invariant checks (offsets in range, length = file size, triangle \
                      commands, animation data). With --pose (Source models), prints instead \
                      each bone's local position, quaternion and Euler angles in one frame of an \
                      animation, decoded as the engine decodes it. Exits with 1 when an \
                      invariant does not hold or the pose cannot be given, 2 when the file \
                      cannot be read.",
        after_help = "Examples:\n  mdlc inspect models/headcrab.mdl\n  mdlc inspect --json models/headcrab.mdl > headcrab.json\n  \
                      mdlc inspect models/props_combine/bunker_gun01.mdl --pose fire --frame 1.5\n  \
                      mdlc inspect bunker_gun01.mdl --pose idle --bone Bunker_Gun.Gun_Yaw --json"
    )]
    Inspect {
        /// The main .mdl file
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Print the records as JSON instead of text
        #[arg(long)]
        json: bool,
        /// Print the bones' local transforms in this animation, or in this sequence's first
        /// animation (Source models)
        #[arg(long, value_name = "NAME")]
        pose: Option<String>,
        /// The frame of --pose, from 0 to the animation's frame count − 1; fractions
        /// interpolate as the engine does
        #[arg(
            long,
            value_name = "F",
            default_value_t = 0.0,
            requires = "pose",
            allow_negative_numbers = true
        )]
        frame: f32,
        /// Only this bone (with --pose)
        #[arg(long, value_name = "BONE", requires = "pose")]
        bone: Option<String>,
        /// When to colour diagnostics
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TargetArg {
    Goldsrc,
    Source,
}

impl From<TargetArg> for Target {
    fn from(t: TargetArg) -> Target {
        match t {
            TargetArg::Goldsrc => Target::GoldSrc,
            TargetArg::Source => Target::Source,
        }
    }
}

#[derive(clap::Args, Debug)]
struct OutputArgs {
    /// How to print diagnostics: `human` (source line and caret, on stderr) or `json` (one
    /// object per line on stdout; see docs/diagnostics.md)
    #[arg(long, value_enum, default_value_t = Format::Human)]
    message_format: Format,
    /// When to colour human output
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check {
            files,
            target,
            output,
        } => {
            let report = driver::check_paths(&files, target.map(Target::from));
            finish(&report, &output)
        }
        Command::ImportQc {
            qc,
            output,
            force,
            target,
            output_format,
        } => {
            let out = output.unwrap_or_else(|| qc.with_file_name("model.toml"));
            if out.exists() && !force {
                eprintln!(
                    "mdlc: `{}` exists; give --force to replace it",
                    out.display()
                );
                return ExitCode::from(2);
            }
            let import = driver::import_qc(&qc, &out, target.map(Target::from));
            let code = finish(&import.report, &output_format);
            if code != ExitCode::SUCCESS {
                return code;
            }
            let Some(text) = import.toml else {
                return ExitCode::from(1);
            };
            match write_atomically(&out, text.as_bytes()) {
                Ok(()) => {
                    eprintln!("mdlc: wrote {}", out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("mdlc: cannot write `{}`: {e}", out.display());
                    ExitCode::from(2)
                }
            }
        }
        Command::Build {
            projects,
            output,
            target,
            output_format,
        } => {
            let build = driver::build_paths(&projects, output.as_deref(), target.map(Target::from));
            let code = finish(&build.report, &output_format);
            if code != ExitCode::SUCCESS {
                if !build.outputs.is_empty() {
                    eprintln!("mdlc: nothing was written");
                }
                return code;
            }
            let files: Vec<_> = build.outputs.into_iter().flat_map(|o| o.files).collect();
            let written = mdlc::output::write_outputs(&files);
            // The process ends here: the OS takes back the texts of every file read and the
            // output bytes at once, faster than freeing them piece by piece.
            std::mem::forget(files);
            std::mem::forget(build.report);
            match written {
                Ok(paths) => {
                    // one write for all the lines (a bare stderr writes each piece of each)
                    let mut lines = String::new();
                    for p in paths {
                        lines.push_str(&format!("mdlc: wrote {}\n", p.display()));
                    }
                    let _ = std::io::stderr().lock().write_all(lines.as_bytes());
                    ExitCode::SUCCESS
                }
                Err((path, e)) => {
                    eprintln!(
                        "mdlc: cannot write `{}`: {e}; no output was changed",
                        path.display()
                    );
                    ExitCode::from(2)
                }
            }
        }
        Command::Inspect {
            file,
            json,
            pose,
            frame,
            bone,
            color,
        } => {
            let query =
                pose.map(|name| mdlc::formats::source::pose::PoseQuery { name, frame, bone });
            let inspect = mdlc::inspect::inspect(&file, json, query.as_ref());
            if !inspect.text.is_empty() {
                let mut out = std::io::stdout().lock();
                if let Err(e) = out
                    .write_all(inspect.text.as_bytes())
                    .and_then(|()| out.flush())
                {
                    if e.kind() != std::io::ErrorKind::BrokenPipe {
                        eprintln!("mdlc: cannot write the dump: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            let args = OutputArgs {
                message_format: Format::Human,
                color,
            };
            finish(&inspect.report, &args)
        }
    }
}

/// Prints the diagnostics and picks the exit code: 2 for I/O failures, 1 for errors, else 0.
fn finish(report: &driver::Report, output: &OutputArgs) -> ExitCode {
    let format = match output.message_format {
        Format::Human => MessageFormat::Human,
        Format::Json => MessageFormat::Json,
    };
    if let Err(e) = print_report(report, format, output.color) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("mdlc: cannot write diagnostics: {e}");
            return ExitCode::from(2);
        }
    }
    if report.io_failures > 0 {
        ExitCode::from(2)
    } else if report.error_count() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`, so a failed or
/// killed run never leaves a half-written file.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.mdlc-tmp-{}", std::process::id()));
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn print_report(
    report: &driver::Report,
    format: MessageFormat,
    color: Color,
) -> std::io::Result<()> {
    match format {
        MessageFormat::Json => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for d in &report.diagnostics {
                writeln!(out, "{}", diag::render_json(&report.sources, d))?;
            }
            out.flush()
        }
        MessageFormat::Human => {
            let choice = match color {
                Color::Always => ColorChoice::Always,
                Color::Never => ColorChoice::Never,
                Color::Auto if std::io::stderr().is_terminal() => ColorChoice::Auto,
                Color::Auto => ColorChoice::Never,
            };
            // Buffered: codespan writes a diagnostic in many small pieces, each a system call
            // on a bare stream (a 35-project batch made 3,000 of them for its notes).
            let mut err = BufferedStandardStream::stderr(choice);
            for d in &report.diagnostics {
                diag::render_styled(&report.sources, d, &mut err)?;
            }
            let (e, w) = (report.error_count(), report.warning_count());
            if e + w > 0 {
                let plural =
                    |n: usize, s: &str| format!("{n} {s}{}", if n == 1 { "" } else { "s" });
                writeln!(
                    err,
                    "mdlc: {} and {} in {}",
                    plural(e, "error"),
                    plural(w, "warning"),
                    plural(report.sources_count(), "file")
                )?;
            }
            err.flush()
        }
    }
}
