//! The raw QC lexer: splits one file (or one range of it) into tokens, skipping whitespace and
//! comments. It knows nothing of `$include` or macros; [`super`] drives it.
//!
//! Rules (qc-source.md §1.1, goldsrc.md §6.1; one lexer for both dialects, with Source's
//! additions, which are harmless in HL1 files):
//! * whitespace is any byte <= 32;
//! * a token is `"…"` (quotes removed, no escapes, may span lines) or a run of other bytes that
//!   also stops before `;` and before `"` (braces are not self-delimiting: `{event` is one
//!   token; `"ref.smd"{` is two);
//! * at a token start, `//`, `#` and `;` begin a comment to the end of the line and `/*` a
//!   comment to the next `*/` (`foo//bar` is one token).
//!
//! **Difference from Valve's tools**: they read bytes as signed `char`, so every byte >= 128
//! outside quotes is whitespace. mdlc reads UTF-8 text, and a non-ASCII character outside quotes
//! is part of a token (`modèle.smd` stays one name). A UTF-8 byte-order mark at the start of a
//! file is skipped, so it stays harmless as it is for Valve.
//!
//! Line counting is exact, also across block comments (Valve's counter drifts inside them).

use crate::diag::{Code, Diagnostic, FileId, Span};

/// A token as written: its span (with the quotes of a quoted token) and its text's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawTok {
    pub span: Span,
    /// Byte range of the text (without the quotes).
    pub text: (usize, usize),
    pub quoted: bool,
    pub line_start: bool,
}

impl RawTok {
    pub fn text<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.text.0..self.text.1).unwrap_or("")
    }
}

/// Lexer state over `start..end` of one file's text. The text itself is passed to each call, so
/// that the file's [`Sources`](crate::diag::Sources) may grow (includes) while a file is read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lexer {
    pub file: FileId,
    pub pos: usize,
    pub end: usize,
    /// A line break (or the start) comes before the next token.
    pub line_break: bool,
}

impl Lexer {
    /// A lexer over the whole of a file (skipping a byte-order mark).
    pub fn whole(file: FileId, text: &str) -> Lexer {
        let pos = if text.starts_with('\u{feff}') { 3 } else { 0 };
        Lexer {
            file,
            pos,
            end: text.len(),
            line_break: true,
        }
    }

    /// A lexer over `start..end` of a file; `line_break` says whether the first token starts a
    /// line.
    pub fn range(file: FileId, start: usize, end: usize, line_break: bool) -> Lexer {
        Lexer {
            file,
            pos: start,
            end,
            line_break,
        }
    }

    /// The next token, or `None` at the end of the range. Problems (unterminated quotes and
    /// comments) are reported and recovered from.
    pub fn next(&mut self, text: &str, diags: &mut Vec<Diagnostic>) -> Option<RawTok> {
        let bytes = text.as_bytes();
        let end = self.end.min(bytes.len());
        let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
        // Skip whitespace and comments.
        loop {
            if self.pos >= end {
                return None;
            }
            let c = at(self.pos);
            if c == b'\n' {
                self.line_break = true;
                self.pos += 1;
            } else if c <= b' ' {
                self.pos += 1;
            } else if c == b';' || c == b'#' || (c == b'/' && at(self.pos + 1) == b'/') {
                self.pos = find_byte(bytes, self.pos, end, b'\n').unwrap_or(end);
            } else if c == b'/' && at(self.pos + 1) == b'*' {
                let open = self.pos;
                match find_str(text, open + 2, end, "*/") {
                    Some(close) => {
                        if find_byte(bytes, open, close, b'\n').is_some() {
                            self.line_break = true;
                        }
                        self.pos = close + 2;
                    }
                    None => {
                        diags.push(
                            Diagnostic::new(
                                Code::QcUnterminatedComment,
                                "unterminated block comment",
                                Span::new(open as u32, (open + 2) as u32).in_file(self.file),
                                "this `/*` has no matching `*/`",
                            )
                            .with_note("the rest of the file is inside the comment"),
                        );
                        if find_byte(bytes, open, end, b'\n').is_some() {
                            self.line_break = true;
                        }
                        self.pos = end;
                    }
                }
            } else {
                break;
            }
        }
        let start = self.pos;
        let line_start = std::mem::take(&mut self.line_break);
        if at(start) == b'"' {
            return Some(match find_byte(bytes, start + 1, end, b'"') {
                Some(close) => {
                    self.pos = close + 1;
                    let breaks = bytes
                        .get(start..close)
                        .map_or(0, |s| s.iter().filter(|&&b| b == b'\n').count());
                    if breaks > 0 {
                        // Valid, but no real QC does it: almost always a missing `"`, after
                        // which every later quote pairs wrongly. Point at where it started.
                        diags.push(
                            Diagnostic::new(
                                Code::QcQuoteSpansLines,
                                format!("quoted string spans {} lines", breaks + 1),
                                Span::new(start as u32, (start + 1) as u32).in_file(self.file),
                                "this `\"` is not closed on its line",
                            )
                            .with_secondary(
                                Span::new(close as u32, (close + 1) as u32).in_file(self.file),
                                "the string ends here",
                            )
                            .with_note(
                                "a quoted string may span lines, but this is most often a \
                                 missing `\"` at the end of the first line",
                            ),
                        );
                    }
                    RawTok {
                        span: Span::new(start as u32, (close + 1) as u32),
                        text: (start + 1, close),
                        quoted: true,
                        line_start,
                    }
                }
                None => {
                    // The string is never closed. Valve's tools run it to the end of the file;
                    // the likely mistake is one missing quote, so end it at the end of its line
                    // and go on reading the next lines.
                    let eol = find_byte(bytes, start, end, b'\n').unwrap_or(end);
                    let mut stop = eol;
                    while stop > start + 1 && at(stop - 1) == b'\r' {
                        stop -= 1;
                    }
                    diags.push(
                        Diagnostic::new(
                            Code::QcUnterminatedQuote,
                            "unterminated quoted string",
                            Span::new(start as u32, (start + 1) as u32).in_file(self.file),
                            "this `\"` is never closed",
                        )
                        .with_note(
                            "a quoted string ends at the next `\"`, which may be on a later line; \
                             there is none, so mdlc ends this one at the end of its line",
                        ),
                    );
                    self.pos = eol;
                    RawTok {
                        span: Span::new(start as u32, stop as u32),
                        text: (start + 1, stop),
                        quoted: true,
                        line_start,
                    }
                }
            });
        }
        let mut i = start;
        while i < end {
            let c = at(i);
            if c <= b' ' || c == b';' || c == b'"' {
                break;
            }
            i += 1;
        }
        self.pos = i;
        // `1.0//note`: Valve's rule makes the `//` part of the token; warn, as it was surely
        // meant as a comment.
        if let Some(k) = bytes.get(start..i).and_then(|t| {
            t.windows(2)
                .position(|w| w == b"//" || w == b"/*")
                .map(|k| k + start)
        }) {
            let marker = text.get(k..k + 2).unwrap_or("//");
            diags.push(
                Diagnostic::new(
                    Code::QcCommentInToken,
                    format!("`{marker}` inside a token does not start a comment"),
                    Span::new(k as u32, (k + 2) as u32).in_file(self.file),
                    format!(
                        "part of the token `{}`",
                        text.get(start..i).unwrap_or_default()
                    ),
                )
                .with_note(format!(
                    "a comment starts only where a token would start: put a space before `{marker}`"
                )),
            );
        }
        Some(RawTok {
            span: Span::new(start as u32, i as u32),
            text: (start, i),
            quoted: false,
            line_start,
        })
    }
}

/// Position of the first `b` in `bytes[from..to]`.
pub(crate) fn find_byte(bytes: &[u8], from: usize, to: usize, b: u8) -> Option<usize> {
    bytes
        .get(from..to)?
        .iter()
        .position(|&x| x == b)
        .map(|i| i + from)
}

/// Position of the first `pat` in `text[from..to]` (byte offsets; `pat` is ASCII).
pub(crate) fn find_str(text: &str, from: usize, to: usize, pat: &str) -> Option<usize> {
    let hay = text.as_bytes().get(from..to)?;
    let pat = pat.as_bytes();
    if pat.is_empty() || hay.len() < pat.len() {
        return None;
    }
    hay.windows(pat.len())
        .position(|w| w == pat)
        .map(|i| i + from)
}
