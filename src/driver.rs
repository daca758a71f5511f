//! The driver: the one recipe that runs the stages in order. With the CLI, it is the only code
//! that touches files; every stage it calls is a function of its input.
//!
//! Today the recipe is `check` for SMD/VTA files: read bytes → check they are text → parse →
//! lower (only when the parse found no error, so one broken line is reported once, not again
//! by every later stage).

use std::path::Path;

use crate::diag::{Code, Diagnostic, FileId, Sources, Span, MAX_FILE_LEN};
use crate::ir::{lower_smd, SmdModel};
use crate::smd;

/// Everything one run found: the files it read (for rendering) and every diagnostic.
#[derive(Debug, Default)]
pub struct Report {
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
    /// Files that could not be read at all (I/O failures: exit code 2).
    pub io_failures: usize,
}

impl Report {
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    /// How many files were checked (read or not).
    pub fn sources_count(&self) -> usize {
        self.sources.len() + self.io_failures
    }

    pub fn warning_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == crate::diag::Severity::Warning)
            .count()
    }
}

/// Checks that `bytes` are text (UTF-8 without NUL) and adds them to `sources`.
///
/// Returns the file and whether it may be parsed. A file that is not text is still added (with
/// invalid bytes replaced) so that the diagnostic can show the line at fault.
pub fn add_text(
    sources: &mut Sources,
    name: &str,
    bytes: Vec<u8>,
    diags: &mut Vec<Diagnostic>,
) -> (FileId, bool) {
    if bytes.len() > MAX_FILE_LEN {
        diags.push(
            Diagnostic::about_file(
                Code::FileTooLarge,
                format!("`{name}` is too large ({} bytes)", bytes.len()),
                name,
            )
            .with_note(format!("mdlc reads files of up to {MAX_FILE_LEN} bytes")),
        );
        return (sources.add(name, String::new()), false);
    }
    let (text, bad_utf8, nul) = match String::from_utf8(bytes) {
        // `str::find` with a char searches with memchr: much faster than a byte loop.
        Ok(s) => {
            let nul = s.find('\0');
            (s, None, nul)
        }
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let nul = e.as_bytes().iter().position(|&b| b == 0);
            (
                String::from_utf8_lossy(e.as_bytes()).into_owned(),
                Some(at),
                nul,
            )
        }
    };
    let bad = match (nul, bad_utf8) {
        (Some(a), Some(b)) => Some((a.min(b), a < b)),
        (Some(a), None) => Some((a, true)),
        (None, Some(b)) => Some((b, false)),
        (None, None) => None,
    };
    let Some((at, is_nul)) = bad else {
        return (sources.add(name, text), true);
    };
    // NUL has no width on a terminal, so no caret would show under it: display it as `␀`. Only
    // the first bad byte is reported, so offsets after it may shift.
    let text = if is_nul {
        text.replace('\0', "\u{2400}")
    } else {
        text
    };
    let id = sources.add(name, text);
    // The replacement character (or the NUL) at `at` is the primary span.
    let len = sources
        .text(id)
        .get(at..)
        .and_then(|s| s.chars().next())
        .map_or(0, char::len_utf8);
    let span = Span::new(at as u32, (at + len) as u32);
    let (message, label) = if is_nul {
        (
            format!("`{name}` contains a NUL byte: it is not a text file"),
            "NUL byte",
        )
    } else {
        (
            format!("`{name}` is not valid UTF-8 text"),
            "invalid byte sequence",
        )
    };
    diags.push(
        Diagnostic::new(Code::NotText, message, span.in_file(id), label)
            .with_note("SMD, VTA and QC files are plain text; is this a binary file, or text saved in another encoding?")
            .with_note("the rest of the file is not checked"),
    );
    (id, false)
}

/// Parses and lowers one SMD/VTA file already in `sources`. Returns the IR when the file has no
/// error.
pub fn check_smd(sources: &Sources, id: FileId, diags: &mut Vec<Diagnostic>) -> Option<SmdModel> {
    let parsed = smd::parse(sources.text(id), id);
    let ok = !parsed.has_errors();
    diags.extend(parsed.diagnostics);
    if !ok {
        return None;
    }
    let before = diags.len();
    let model = lower_smd(&parsed.smd, id, diags);
    diags[before..]
        .iter()
        .all(|d| !d.is_error())
        .then_some(model)
}

/// `mdlc check FILE...`: reads, parses and lowers every file; writes nothing.
pub fn check_files(paths: &[impl AsRef<Path>]) -> Report {
    let mut report = Report::default();
    for path in paths {
        let path = path.as_ref();
        let name = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => {
                let (id, ok) = add_text(&mut report.sources, &name, bytes, &mut report.diagnostics);
                if ok {
                    check_smd(&report.sources, id, &mut report.diagnostics);
                }
            }
            Err(e) => {
                report.io_failures += 1;
                report.diagnostics.push(Diagnostic::about_file(
                    Code::FileUnreadable,
                    format!("cannot read `{name}`: {e}"),
                    name.clone(),
                ));
            }
        }
    }
    report
}
