//! QC front end, both dialects (HL1: `goldsrc.md` §6; Source: `qc-source.md`).
//!
//! Two stages:
//! * [`tokens`]: reads the main QC and everything it `$include`s, strips comments, expands
//!   `$definemacro` macros and `$definevariable` variables, and yields one flat list of
//!   [`QcToken`]s, each knowing whether a line break came before it (QC commands read "the
//!   rest of the line") and where it was written.
//! * [`commands`]: walks the tokens, recognises every command of both dialects with its
//!   arguments and blocks, tracks `$cd`/`$pushd`/`$popd`, `$scale`, `$origin`, `$upaxis`, and
//!   fills a [`ProjectSpec`](crate::project::ProjectSpec).

use crate::diag::FileSpan;

pub mod commands;
pub mod tokens;

/// One QC token after includes and macros.
#[derive(Clone, Debug, PartialEq)]
pub struct QcToken {
    /// The text, without the quotes of a quoted token.
    pub text: String,
    /// Written in double quotes (a quoted token is never a command, a brace or a comment).
    pub quoted: bool,
    /// A line break (or the start of a file) comes between the previous token and this one.
    /// Tokens of an included file or a macro body start on a new line.
    pub line_start: bool,
    /// Where the token was written (for a macro body: in the `$definemacro`).
    pub span: FileSpan,
}

impl QcToken {
    /// Whether the token is this keyword, compared without regard to ASCII case (Source; the
    /// HL1 dialect compares `$` commands case-sensitively, which `commands` handles).
    pub fn is(&self, word: &str) -> bool {
        !self.quoted && self.text.eq_ignore_ascii_case(word)
    }
}
