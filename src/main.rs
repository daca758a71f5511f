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
                      A project whose inputs (by content), options and outputs are unchanged \
                      since its last build is not built again (--force builds it); --report and \
                      --depfile tell build systems what happened and what was read (see \
                      docs/build-systems.md). Exits with 1 on errors, 2 when a file cannot be \
                      read or written.",
        after_help = "Examples:\n  mdlc build headcrab.qc\n  mdlc build models/*/model.toml -o build/\n  \
                      mdlc build barney.qc --target goldsrc --message-format json\n  \
                      mdlc build props/*.qc --game ~/hl2/hl2 --report build.json --depfile build.d"
    )]
    Build(BuildArgs),
    /// Write a build.ninja that builds QC/TOML projects with mdlc (depfiles, up-to-date skipping)
    #[command(
        long_about = "Writes a Ninja build file with one edge per project: `mdlc build` of the \
                      project into DIR, with a depfile, so that Ninja rebuilds a model exactly \
                      when a file it read changed. Projects are read (not built) to name each \
                      edge's output. See docs/build-systems.md.",
        after_help = "Examples:\n  mdlc ninja models/*.qc -o build/ > build.ninja && ninja"
    )]
    Ninja {
        /// Projects: .qc or .toml files
        #[arg(required = true, value_name = "PROJECT")]
        projects: Vec<PathBuf>,
        /// The folder the models are built into
        #[arg(short, long, value_name = "DIR")]
        output: PathBuf,
        /// Where to write the Ninja file (default: standard output)
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// The engine, as for `mdlc build`
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
                      mdlc inspect bunker_gun01.mdl --pose idle --bone Bunker_Gun.Gun_Yaw --json\n  \
                      mdlc inspect male_06.mdl --flex AU12R"
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
        /// Print the vertex deltas of this flex (Source models): per mesh, each vertex it
        /// moves with its position, position and normal deltas, speed and side
        #[arg(long, value_name = "NAME", conflicts_with = "pose")]
        flex: Option<String>,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Progress {
    Auto,
    Always,
    Never,
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
        Command::Build(args) => build(args),
        Command::Ninja {
            projects,
            output,
            file,
            target,
            output_format,
        } => {
            let ninja = driver::ninja_file(&projects, &output, target.map(Target::from));
            let code = finish(&ninja.report, &output_format);
            if code != ExitCode::SUCCESS {
                return code;
            }
            match file {
                None => {
                    let _ = std::io::stdout().lock().write_all(ninja.text.as_bytes());
                    ExitCode::SUCCESS
                }
                Some(f) => match write_atomically(&f, ninja.text.as_bytes()) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("mdlc: cannot write `{}`: {e}", f.display());
                        ExitCode::from(2)
                    }
                },
            }
        }
        Command::Inspect {
            file,
            json,
            pose,
            frame,
            bone,
            flex,
            color,
        } => {
            let query =
                pose.map(|name| mdlc::formats::source::pose::PoseQuery { name, frame, bone });
            let inspect = mdlc::inspect::inspect(&file, json, query.as_ref(), flex.as_deref());
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

/// The arguments of `mdlc build`.
#[derive(clap::Args, Debug)]
struct BuildArgs {
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
    /// Source: write into a game folder, at DIR/models/<$modelname> as Valve's compiler
    /// does (an error for a GoldSrc project)
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    game: Option<PathBuf>,
    /// Write a JSON report of every project (status, outputs with sha256, inputs,
    /// diagnostics, seconds); see docs/build-systems.md
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Write a Make-syntax depfile: for each project, its model file and every file read
    #[arg(long, value_name = "FILE")]
    depfile: Option<PathBuf>,
    /// Rebuild projects even when their record says they are up to date
    #[arg(long)]
    force: bool,
    /// Neither read nor write up-to-date records (`.mdlc/` under the output folder), for
    /// build systems that declare every output (Bazel)
    #[arg(long)]
    no_record: bool,
    /// Build at most N projects at once (default: the machine's cores)
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Show a progress line on the terminal for builds of several projects: auto (only
    /// when stderr is a terminal), always, never
    #[arg(long, value_enum, default_value_t = Progress::Auto)]
    progress: Progress,
    #[command(flatten)]
    output_format: OutputArgs,
}

/// A file can be written at `path`: its folder exists and takes a new file (tried with a
/// temporary file, removed at once), and `path` is not a folder.
fn probe_writable(path: &std::path::Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a folder"));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let probe = path.with_file_name(format!(".{name}.mdlc-probe-{}", std::process::id()));
    // its folder is made as the models' are (a depfile beside a model not yet built)
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// The progress line of a build of several projects, on stderr: projects done of all, the
/// project started last, time spent and left. Diagnostics are printed after it is cleared.
struct ProgressLine {
    total: usize,
    start: std::time::Instant,
    state: std::sync::Mutex<(usize, String)>,
}

impl ProgressLine {
    fn update(&self, project: &std::path::Path, done: bool) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        if done {
            st.0 += 1;
        } else {
            st.1 = project.display().to_string();
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if st.0 > 0 {
            format!(
                ", about {:.0} s left",
                elapsed / st.0 as f64 * (self.total - st.0) as f64
            )
        } else {
            String::new()
        };
        let mut line = format!("[{}/{}] {} ({:.0} s{eta})", st.0, self.total, st.1, elapsed);
        if let Some((cut, _)) = line.char_indices().nth(110) {
            line.truncate(cut);
        }
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K{line}");
    }

    fn clear(&self) {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
    }
}

/// `mdlc build`.
fn build(a: BuildArgs) -> ExitCode {
    use mdlc::buildsys::{record, report};
    let out_dir = match (&a.game, &a.output) {
        (Some(g), _) => Some(g.join("models")),
        (None, o) => o.clone(),
    };
    for (what, path) in [("report", &a.report), ("depfile", &a.depfile)] {
        if let Some(p) = path {
            if let Err(e) = probe_writable(p) {
                eprintln!(
                    "mdlc: cannot write the {what} `{}`: {e}; nothing was built",
                    p.display()
                );
                return ExitCode::from(2);
            }
        }
    }
    let show = match a.progress {
        Progress::Always => true,
        Progress::Never => false,
        Progress::Auto => a.projects.len() > 1 && std::io::stderr().is_terminal(),
    };
    let line = show.then(|| ProgressLine {
        total: a.projects.len(),
        start: std::time::Instant::now(),
        state: Default::default(),
    });
    let update = |p: &std::path::Path, done: bool| {
        if let Some(l) = &line {
            l.update(p, done);
        }
    };
    let opts = driver::BuildOptions {
        out_dir: out_dir.as_deref(),
        forced_target: a.target.map(Target::from),
        game: a.game.is_some(),
        jobs: a.jobs.map(|j| j as usize),
        records: !a.no_record,
        skip_up_to_date: !a.force,
        progress: show.then_some(&update as &(dyn Fn(&std::path::Path, bool) + Sync)),
    };
    let mut build = driver::build_with(&a.projects, &opts);
    if let Some(l) = &line {
        l.clear();
    }
    let mut code = finish(&build.report, &a.output_format);
    let clean = code == ExitCode::SUCCESS;
    let json_of = |d: &mdlc::diag::Diagnostic| {
        serde_json::from_str::<serde_json::Value>(&diag::render_json(&build.report.sources, d))
            .unwrap_or(serde_json::Value::Null)
    };
    let diags_of = |p: &driver::ProjectResult, errors: bool| -> Vec<serde_json::Value> {
        build
            .report
            .diagnostics
            .get(p.diagnostics.clone())
            .unwrap_or(&[])
            .iter()
            .filter(|d| d.is_error() == errors)
            .map(json_of)
            .collect()
    };
    // what each model's files are (sizes, hashes), for the records and the report
    let out_records: Vec<Vec<record::FileRecord>> = build
        .outputs
        .iter()
        .map(|o| {
            o.files
                .iter()
                .map(|(path, bytes)| record::output_record(path, bytes, a.report.is_some()))
                .collect()
        })
        .collect();
    // the files to write: every model's, then the records of the projects built
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut records = 0usize;
    if clean {
        for p in &build.projects {
            let (Some((at, key)), Some(o), None) = (&p.record, p.output, &p.up_to_date) else {
                continue;
            };
            let Some(out) = out_records.get(o) else {
                continue;
            };
            let inputs: Option<Vec<_>> = p.inputs.iter().map(record::input_record).collect();
            let Some(inputs) = inputs else {
                continue; // an input went away meanwhile: no record, so it is built next time
            };
            let rec = record::new_record(
                key.clone(),
                p.started,
                p.target.map_or("", Target::as_str),
                inputs,
                out.clone(),
                diags_of(p, false),
            );
            if let Ok(text) = serde_json::to_vec_pretty(&rec) {
                files.push((at.clone(), text));
                records += 1;
            }
        }
    }
    let record_files = files;
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    if clean {
        for o in &mut build.outputs {
            files.append(&mut o.files);
        }
        files.extend(record_files);
    }
    let mut written_ok = clean;
    if clean {
        match mdlc::output::write_outputs(&files) {
            Ok(paths) => {
                // one write for all the lines (a bare stderr writes each piece of each)
                let mut lines = String::new();
                for p in paths.iter().take(paths.len().saturating_sub(records)) {
                    lines.push_str(&format!("mdlc: wrote {}\n", p.display()));
                }
                for p in build.projects.iter().filter(|p| p.up_to_date.is_some()) {
                    lines.push_str(&format!("mdlc: up to date: {}\n", p.project.display()));
                }
                let _ = std::io::stderr().lock().write_all(lines.as_bytes());
            }
            Err((path, e)) => {
                eprintln!(
                    "mdlc: cannot write `{}`: {e}; no output was changed",
                    path.display()
                );
                written_ok = false;
                code = ExitCode::from(2);
            }
        }
    } else if !build.outputs.is_empty() {
        eprintln!("mdlc: nothing was written");
    }
    // the report and the depfile
    let mut entries = Vec::new();
    let mut rules = Vec::new();
    for p in &build.projects {
        let model = p.output.and_then(|o| out_records.get(o));
        let status = match (&p.up_to_date, model) {
            (Some(_), _) => report::Status::UpToDate,
            (None, None) => report::Status::Failed,
            (None, Some(_)) if written_ok => report::Status::Built,
            (None, Some(_)) => report::Status::NotWritten,
        };
        let (outputs, inputs, warnings): (Vec<report::OutputEntry>, Vec<PathBuf>, _) =
            match &p.up_to_date {
                Some(rec) => (
                    rec.outputs
                        .iter()
                        .map(|f| report::OutputEntry {
                            path: f.path.display().to_string(),
                            bytes: f.bytes,
                            sha256: if a.report.is_some() {
                                record::output_sha256(f)
                            } else {
                                String::new()
                            },
                        })
                        .collect(),
                    rec.inputs.iter().map(|f| f.path.clone()).collect(),
                    rec.warnings.clone(),
                ),
                None => (
                    model
                        .map(|m| {
                            m.iter()
                                .map(|f| report::OutputEntry {
                                    path: f.path.display().to_string(),
                                    bytes: f.bytes,
                                    sha256: f.sha256.clone().unwrap_or_default(),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    p.inputs.iter().map(|r| r.path.clone()).collect(),
                    diags_of(p, false),
                ),
            };
        if matches!(status, report::Status::Built | report::Status::UpToDate) {
            // the model file: a GoldSrc build lists it last (after T.mdl and NN.mdl)
            let main = match p.target {
                Some(Target::GoldSrc) => outputs.last(),
                _ => outputs.first(),
            };
            if let Some(m) = main {
                rules.push((PathBuf::from(&m.path), inputs.clone()));
            }
        }
        entries.push(report::ProjectEntry {
            project: p.project.display().to_string(),
            target: p.target.map(|t| t.as_str().to_string()),
            status,
            outputs,
            inputs: inputs.iter().map(|i| i.display().to_string()).collect(),
            errors: diags_of(p, true),
            warnings,
            seconds: p.seconds,
        });
    }
    if let Some(path) = &a.report {
        let text = report::BuildReport::new(entries).to_json();
        if let Err(e) = write_atomically(path, text.as_bytes()) {
            eprintln!("mdlc: cannot write the report `{}`: {e}", path.display());
            code = ExitCode::from(2);
        }
    }
    if let Some(path) = &a.depfile {
        if let Err(e) = write_atomically(path, report::depfile(&rules).as_bytes()) {
            eprintln!("mdlc: cannot write the depfile `{}`: {e}", path.display());
            code = ExitCode::from(2);
        }
    }
    // The process ends here: the OS takes back the texts of every file read and the output
    // bytes at once, faster than freeing them piece by piece.
    std::mem::forget(files);
    std::mem::forget(build);
    code
}
