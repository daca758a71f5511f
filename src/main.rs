//! The `mdlc` command: parses arguments, calls the driver, prints diagnostics, sets the exit code
//! (0 success, 1 the input has errors, 2 usage or I/O failure).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use mdlc::diag::{self, MessageFormat};
use mdlc::driver;

#[derive(Parser, Debug)]
#[command(
    name = "mdlc",
    version,
    about = "A model compiler for Valve's GoldSrc and Source engines",
    long_about = "mdlc reads SMD/VTA model sources (and, in later versions, QC and model.toml \
                  projects) and reports every problem with its file, line and column.",
    after_help = "Examples:\n  mdlc check model_reference.smd idle.smd\n  mdlc check --message-format json *.smd"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check SMD and VTA files and print every problem; writes no file
    #[command(
        long_about = "Reads each file, checks it completely and prints every diagnostic. \
                      Exits with 1 if any file has an error, 0 otherwise (warnings alone do not \
                      fail), and 2 if a file cannot be read. Never writes a file.",
        after_help = "Examples:\n  mdlc check testdata/models/creature/creature_reference.smd\n  \
                      mdlc check --message-format json anims/*.smd > problems.jsonl"
    )]
    Check {
        /// Files to check (.smd, .vta)
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
    },
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
        Command::Check { files, output } => {
            let report = driver::check_files(&files);
            let format = match output.message_format {
                Format::Human => MessageFormat::Human,
                Format::Json => MessageFormat::Json,
            };
            if let Err(e) = print_report(&report, format, output.color) {
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
    }
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
            let mut err = StandardStream::stderr(choice);
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
            Ok(())
        }
    }
}
