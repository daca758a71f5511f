//! Text preparation: the bytes of a text file (SMD, VTA, QC, TOML) made into the text the
//! front ends parse. UTF-8 as it is; a file that is not UTF-8 and has no NUL byte read as
//! Latin-1 with a warning (legacy Windows sources); a NUL byte or a file over
//! [`MAX_FILE_LEN`] refused with an error at the first bad byte.

use crate::diag::{Code, Diagnostic, FileId, Sources, Span, MAX_FILE_LEN};

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
    let id = sources.add(name, String::new());
    let (text, ok) = prepare_text(id, name, bytes, diags);
    sources.set_text(id, text);
    (id, ok)
}

/// [`add_text`] for a file whose place in [`Sources`] is `id` (added with a placeholder): the
/// text to store there, and whether it may be parsed. Needs no access to `Sources`, so files
/// can be prepared on other threads.
pub fn prepare_text(
    id: FileId,
    name: &str,
    bytes: Vec<u8>,
    diags: &mut Vec<Diagnostic>,
) -> (String, bool) {
    if bytes.len() > MAX_FILE_LEN {
        diags.push(too_large(name, bytes.len()));
        return (String::new(), false);
    }
    let (text, bad_utf8, nul) = match String::from_utf8(bytes) {
        Ok(s) => {
            let nul = memchr::memchr(0, s.as_bytes());
            (s, None, nul)
        }
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let nul = memchr::memchr(0, e.as_bytes());
            if nul.is_none() {
                return latin1(id, name, e.as_bytes(), at, diags);
            }
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
        return (text, true);
    };
    // NUL has no width on a terminal, so no caret would show under it: display it as `␀`. Only
    // the first bad byte is reported, so offsets after it may shift.
    let text = if is_nul {
        text.replace('\0', "\u{2400}")
    } else {
        text
    };
    // The replacement character (or the NUL) at `at` is the primary span.
    let len = text
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
    let mut d = Diagnostic::new(Code::NotText, message, span.in_file(id), label)
        .with_note("SMD, VTA and QC files are plain text; is this a binary file, or text saved in another encoding?")
        .with_note("the rest of the file is not checked");
    if name.to_ascii_lowercase().ends_with(".dmx") {
        d = d.with_note("help: `.dmx` is Valve's DataModel format: mdlc reads it where a mesh, an animation or a collision model is named (`$model`, `$sequence`, …), not as this file; flexes are read from VTA files");
    }
    diags.push(d);
    (text, false)
}

/// `E0004` for a file (or its text) of `len` bytes, more than [`MAX_FILE_LEN`].
pub(super) fn too_large(name: &str, len: usize) -> Diagnostic {
    Diagnostic::about_file(
        Code::FileTooLarge,
        format!("`{name}` is too large ({len} bytes)"),
        name,
    )
    .with_note(format!("mdlc reads files of up to {MAX_FILE_LEN} bytes"))
}

/// A file that is not UTF-8 (and has no NUL byte) read as Latin-1, each byte one character, with
/// warning W0001 at the first byte that is not UTF-8 (`at`). Legacy Half-Life sources were
/// written on Windows in a code page: Valve's compilers read bytes, so a comment or name with
/// `é` must not stop the build.
fn latin1(
    id: FileId,
    name: &str,
    bytes: &[u8],
    at: usize,
    diags: &mut Vec<Diagnostic>,
) -> (String, bool) {
    let text: String = bytes.iter().map(|&b| char::from(b)).collect();
    if text.len() > MAX_FILE_LEN {
        // each byte from 0x80 up takes two bytes in the text
        diags.push(too_large(name, text.len()));
        return (String::new(), false);
    }
    // each byte from 0x80 up takes two bytes in the text
    let start = at
        + bytes
            .get(..at)
            .map_or(0, |p| p.iter().filter(|&&b| b >= 0x80).count());
    let len = text
        .get(start..)
        .and_then(|s| s.chars().next())
        .map_or(0, char::len_utf8);
    let span = Span::new(start as u32, (start + len) as u32);
    diags.push(
        Diagnostic::new(
            Code::NotUtf8,
            format!("`{name}` is not UTF-8 text: it is read as Latin-1"),
            span.in_file(id),
            "not UTF-8",
        )
        .with_note("each byte is taken as one character, as legacy Windows editors wrote it; Valve's compilers read the bytes as they are")
        .with_note("a name with such a character is written in UTF-8, where Valve's compilers copy the byte")
        .with_note("help: save the file as UTF-8"),
    );
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary DMX named where a mesh is expected (later compilers read them) is E0002 with a
    /// note that says what mdlc reads instead; another binary file gets no such note.
    #[test]
    fn a_binary_dmx_says_what_mdlc_reads() {
        let bytes = b"<!-- dmx encoding binary 2 format model 1 -->\n\0\x01\x02".to_vec();
        let dmx_note = |name: &str| {
            let mut diags = Vec::new();
            let (_, ok) = prepare_text(FileId(0), name, bytes.clone(), &mut diags);
            assert!(!ok);
            assert_eq!(diags.len(), 1);
            assert_eq!(diags[0].code, Code::NotText);
            diags[0].notes.iter().any(|n| n.contains("DataModel"))
        };
        assert!(dmx_note("meshes/Head.DMX"));
        assert!(!dmx_note("head.smd"));
    }
}
