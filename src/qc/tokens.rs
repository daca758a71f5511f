//! QC tokenizer and preprocessor, one for both dialects (qc-source.md §1.1, §1.4, §1.5;
//! goldsrc.md §6.1).
//!
//! [`tokenize`] reads the main QC, splits it into tokens (the private `lexer` module has the
//! exact rules and how they differ from Valve's byte-oriented reader), and handles the three
//! directives Valve's tokenizer handles itself, wherever a token is read (top level, inside
//! blocks, in argument positions), so that they never reach the command parser:
//!
//! * `$include file`: reading goes on inside that file, then returns. The path is relative to the
//!   directory of the *main* QC (Valve's "qdir"), backslashes become `/`, absolute paths are used
//!   as given; files are looked up without regard to case (with a warning when only another case
//!   exists). Nesting is limited to 16 files; a file that includes itself is an error, not a
//!   stack overflow.
//! * `$definemacro name p1 p2 … \\` and its body lines (every line ending in `\\`, plus the first
//!   line without one); a later token `$name` (any case) is replaced by the body, with each
//!   `$p$` replaced by the argument, also inside words (`$p$_layer`), but not inside quoted
//!   tokens. The arguments are the next tokens on the invocation's line.
//! * `$definevariable name value`: afterwards `$name$` is replaced anywhere.
//!
//! Every token knows whether a line break comes before it; the first token of an included file
//! or of a macro body, and the token after an include or an expansion ends, count as starting a
//! line. Tokens of a macro body have spans in the `$definemacro` lines.
//!
//! Choices where Valve's tools are unhelpful or unknown (each more permissive, so every QC they
//! accept reads the same here):
//! * `$definevariable` is a later addition, documented only by VDC ("$definevariable"), which
//!   says variables do not work inside quotes and not inside macros defined elsewhere. mdlc
//!   replaces them in quoted tokens and in macro bodies too (as at least one later compiler
//!   does): `"$dir$/idle.smd"` is the obvious intent, and a QC written for Valve's tool has no
//!   reason to write `$name$` of a defined variable meaning the literal text. The first
//!   definition of a name is kept (VDC), with a warning.
//! * Valve's macro expansion pastes argument text into the body and reads it again, so a quoted
//!   argument with spaces becomes several tokens. mdlc substitutes tokens: a body token that is
//!   exactly `$param$` becomes the argument token as written (quoted or not); inside a longer
//!   word the argument's text is pasted.
//! * Macro names, parameter names and variable names are compared without regard to ASCII case,
//!   like every other QC keyword in Source. A macro defined twice keeps its first definition.
//! * A macro body is lexed line by line, so a quoted string or `/* */` comment cannot continue
//!   from one body line to the next (no real QC does that; the `\\` would be cut out of it).

mod lexer;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Sources};
use crate::load::add_text;
use crate::load::fs::{find, Fs, Lookup};
use crate::qc::QcToken;
use crate::suggest::edit_distance;

use lexer::{find_byte, find_str, Lexer, RawTok};

/// How many files may be open at once (the main QC and its nested includes), and how many macro
/// expansions may be nested (Valve: 16 include-stack slots shared by both).
pub const MAX_DEPTH: usize = 16;

/// How many tokens macro expansions may produce in one run: a guard against macros that invoke
/// other macros several times each (the output would grow exponentially). Real QCs stay far
/// below it.
pub const MAX_EXPANDED: usize = 1_000_000;

/// Reads the main QC and everything it includes; returns every token in reading order.
pub fn tokenize(
    main: &Path,
    fs: &dyn Fs,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Vec<QcToken> {
    let name = main.display().to_string();
    let bytes = match fs.read(main) {
        Ok(b) => b,
        Err(e) => {
            diags.push(Diagnostic::unreadable(Path::new(&name), e));
            return Vec::new();
        }
    };
    let (id, ok) = add_text(sources, &name, bytes, diags);
    if !ok {
        return Vec::new();
    }
    let main_path = normalize(main);
    let qdir = normalize(main.parent().unwrap_or(Path::new("")));
    let mut files = HashMap::new();
    files.insert(main_path.clone(), Some(id));
    let lexer = Lexer::whole(id, sources.text(id));
    let mut pp = Pre {
        fs,
        sources,
        diags,
        qdir,
        stack: vec![Frame::File {
            lexer,
            path: main_path,
            peeked: None,
        }],
        macros: HashMap::new(),
        vars: HashMap::new(),
        files,
        force_line_start: false,
        after_macro: None,
        expanded: 0,
        out: Vec::new(),
    };
    pp.run();
    pp.out
}

/// A token being processed (text owned: it may have been substituted).
#[derive(Clone, Debug)]
struct Tok {
    text: String,
    quoted: bool,
    line_start: bool,
    span: FileSpan,
}

impl From<Tok> for QcToken {
    fn from(t: Tok) -> QcToken {
        QcToken {
            text: t.text,
            quoted: t.quoted,
            line_start: t.line_start,
            span: t.span,
        }
    }
}

struct Macro {
    /// As written in the definition.
    name: String,
    name_span: FileSpan,
    params: Vec<String>,
    body: Vec<Tok>,
}

struct Variable {
    value: String,
    name_span: FileSpan,
}

enum Frame {
    File {
        lexer: Lexer,
        /// Normalised path, to find include cycles.
        path: PathBuf,
        /// A token read ahead by [`Pre::same_line`] and put back.
        peeked: Option<Tok>,
    },
    Macro {
        /// Lower-case name, to find recursion.
        key: String,
        /// The invocation token, as written.
        call: Tok,
        toks: std::vec::IntoIter<Tok>,
        peeked: Option<Tok>,
    },
}

struct Pre<'a> {
    fs: &'a dyn Fs,
    sources: &'a mut Sources,
    diags: &'a mut Vec<Diagnostic>,
    /// Directory of the main QC: `$include` paths are relative to it.
    qdir: PathBuf,
    stack: Vec<Frame>,
    /// By lower-case name.
    macros: HashMap<String, Rc<Macro>>,
    /// By lower-case name.
    vars: HashMap<String, Variable>,
    /// Files already read, by normalised path (`None`: not text, already reported).
    files: HashMap<PathBuf, Option<FileId>>,
    /// The next token starts a line (an include just ended, or an empty macro was expanded).
    force_line_start: bool,
    /// A macro expansion just ended: its invocation and lower-case name ([`Pre::after_macro`]).
    after_macro: Option<(Tok, String)>,
    /// Tokens produced by macro expansions so far (see [`MAX_EXPANDED`]).
    expanded: usize,
    out: Vec<QcToken>,
}

impl Pre<'_> {
    fn run(&mut self) {
        while let Some(tok) = self.next() {
            if !tok.quoted {
                if let Some(word) = tok.text.strip_prefix('$') {
                    let key = word.to_ascii_lowercase();
                    // Macros come first: a macro may shadow even a built-in command.
                    if let Some(m) = self.macros.get(&key).cloned() {
                        self.invoke(&tok, key, &m);
                        continue;
                    }
                    match key.as_str() {
                        "include" => {
                            self.include(&tok);
                            continue;
                        }
                        "definemacro" => {
                            self.define_macro(&tok);
                            continue;
                        }
                        "definevariable" => {
                            self.define_variable(&tok);
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            self.out.push(tok.into());
        }
    }

    /// The next token of the top frame, without crossing into the frame below.
    fn pull(&mut self) -> Option<Tok> {
        match self.stack.last_mut()? {
            Frame::File {
                lexer,
                peeked,
                path: _,
            } => {
                if let Some(t) = peeked.take() {
                    return Some(t);
                }
                let text = self.sources.text(lexer.file);
                let raw = lexer.next(text, self.diags)?;
                let file = lexer.file;
                let mut tok = Tok {
                    text: raw.text(text).to_string(),
                    quoted: raw.quoted,
                    line_start: raw.line_start,
                    span: raw.span.in_file(file),
                };
                if let Some(s) = self.substitute_vars(&tok.text) {
                    tok.text = s;
                }
                Some(tok)
            }
            Frame::Macro { toks, peeked, .. } => peeked.take().or_else(|| toks.next()),
        }
    }

    /// The next token, leaving finished frames.
    fn next(&mut self) -> Option<Tok> {
        loop {
            if self.stack.is_empty() {
                return None;
            }
            if let Some(mut t) = self.pull() {
                if std::mem::take(&mut self.force_line_start) {
                    t.line_start = true;
                }
                self.after_macro(&mut t);
                return Some(t);
            }
            match self.stack.pop() {
                // Tokens left on the invocation's line continue the body's last command
                // (below); anything else starts a line.
                Some(Frame::Macro { call, key, .. }) => self.after_macro = Some((call, key)),
                _ => self.force_line_start = true,
            }
        }
    }

    /// The first token after a finished macro expansion: on the invocation's line (the
    /// arguments were taken, more tokens follow), it continues the last command of the body,
    /// with a warning; real QCs call macros this way, e.g. `$GenericShoot "a" "b.smd" "ACT_X"
    /// "layer" match "idle"` (issue 16). Valve's public script reader of the 2006 and 2013
    /// SDKs (`scriplib.cpp`) would end the command at the end of the expansion, but the files
    /// that do this were compiled by their authors with Valve's tools, so mdlc reads them
    /// as they were meant.
    fn after_macro(&mut self, t: &mut Tok) {
        let Some((call, key)) = self.after_macro.take() else {
            return;
        };
        // (another invocation on the line is expanded in turn and starts a line of its own)
        let invocation = !t.quoted
            && t.text
                .strip_prefix('$')
                .is_some_and(|w| self.macros.contains_key(&w.to_ascii_lowercase()));
        if t.line_start || invocation {
            return;
        }
        let name = self
            .macros
            .get(&key)
            .map_or_else(|| call.text.clone(), |m| m.name.clone());
        let n = self.macros.get(&key).map_or(0, |m| m.params.len());
        self.diags.push(
            Diagnostic::new(
                Code::QcMacroTrailingTokens,
                format!(
                    "`{}` follows the {n} argument{} of macro `{name}` on its line: it continues the macro's last command",
                    t.text,
                    if n == 1 { "" } else { "s" }
                ),
                t.span,
                "read as more of the expansion's last command",
            )
            .with_secondary(call.span, "the macro is invoked here")
            .with_note(
                "real QCs rely on this; to be explicit, give the macro a parameter for these words",
            ),
        );
    }

    /// The next token if it is on the current line of the current file or macro body.
    fn same_line(&mut self) -> Option<Tok> {
        let t = self.pull()?;
        if !t.line_start {
            return Some(t);
        }
        match self.stack.last_mut() {
            Some(Frame::File { peeked, .. } | Frame::Macro { peeked, .. }) => *peeked = Some(t),
            None => {}
        }
        None
    }

    /// Consumes the rest of the current line (after an error in a directive).
    fn skip_line(&mut self) {
        while self.same_line().is_some() {}
    }

    /// Replaces every `$name$` of a defined variable. `None` when nothing was replaced.
    fn substitute_vars(&self, text: &str) -> Option<String> {
        if self.vars.is_empty() {
            return None;
        }
        substitute(text, |w| {
            self.vars
                .get(&w.to_ascii_lowercase())
                .map(|v| v.value.clone())
        })
    }

    fn file_depth(&self) -> usize {
        self.stack
            .iter()
            .filter(|f| matches!(f, Frame::File { .. }))
            .count()
    }

    fn macro_depth(&self) -> usize {
        self.stack.len() - self.file_depth()
    }

    // --- $include ----------------------------------------------------------------------------

    fn include(&mut self, kw: &Tok) {
        let Some(name) = self.same_line() else {
            self.diags.push(
                Diagnostic::new(
                    Code::QcIncludeNoFile,
                    "`$include` without a file name",
                    kw.span,
                    "expected a file name after this, on the same line",
                )
                .with_note("write `$include \"file.qci\"`"),
            );
            return;
        };
        let written = name.text.replace('\\', "/");
        let path = if is_absolute(&written) {
            normalize(Path::new(&written))
        } else {
            normalize(&self.qdir.join(&written))
        };
        let found = match find(self.fs, &path) {
            Lookup::Exact(p) => p,
            Lookup::OtherCase(p) => {
                self.diags.push(
                    Diagnostic::new(
                        Code::QcIncludeCase,
                        format!(
                            "file found in another case: `{}`",
                            respell(&written, &path, &p)
                        ),
                        name.span,
                        format!("`{}` does not exist in this case", name.text),
                    )
                    .with_note(
                        "this only works on a case-insensitive file system (Windows); \
                         fix the name or rename the file",
                    ),
                );
                p
            }
            Lookup::Missing { nearest } => {
                let mut d = Diagnostic::new(
                    Code::QcIncludeNotFound,
                    format!("included file `{}` not found", name.text),
                    name.span,
                    "no such file",
                )
                .with_note(format!(
                    "`$include` paths are relative to the directory of the main QC (`{}`); \
                     looked for `{}`",
                    display_dir(&self.qdir),
                    path.display()
                ));
                if let Some(n) = nearest {
                    d = d.with_note(format!(
                        "help: did you mean `{}`?",
                        respell(&written, &path, &n)
                    ));
                }
                self.diags.push(d);
                return;
            }
        };
        let found = normalize(&found);
        let chain: Vec<&PathBuf> = self
            .stack
            .iter()
            .filter_map(|f| match f {
                Frame::File { path, .. } => Some(path),
                Frame::Macro { .. } => None,
            })
            .collect();
        if chain.contains(&&found) {
            let mut shown: Vec<String> =
                chain.iter().map(|p| format!("`{}`", p.display())).collect();
            shown.push(format!("`{}`", found.display()));
            self.diags.push(
                Diagnostic::new(
                    Code::QcIncludeCycle,
                    format!("`{}` includes itself", found.display()),
                    kw.span,
                    "this `$include` would read the file again, without end",
                )
                .with_secondary(name.span, "this file is already being read")
                .with_note(format!("include chain: {}", shown.join(" → "))),
            );
            return;
        }
        if self.file_depth() >= MAX_DEPTH {
            self.diags.push(
                Diagnostic::new(
                    Code::QcNestingTooDeep,
                    format!("includes nested more than {MAX_DEPTH} deep"),
                    kw.span,
                    "this `$include` is one too many",
                )
                .with_note(format!(
                    "at most {MAX_DEPTH} files can be open at once (the main QC and its includes)"
                )),
            );
            return;
        }
        let id = match self.files.get(&found) {
            Some(id) => *id,
            None => {
                let id = match self.fs.read(&found) {
                    Ok(bytes) => {
                        let (id, ok) = add_text(
                            self.sources,
                            &found.display().to_string(),
                            bytes,
                            self.diags,
                        );
                        ok.then_some(id)
                    }
                    Err(e) => {
                        self.diags.push(Diagnostic::unreadable_at(
                            &found,
                            e,
                            name.span,
                            "included here",
                        ));
                        None
                    }
                };
                self.files.insert(found.clone(), id);
                id
            }
        };
        let Some(id) = id else { return };
        self.sources.note_include(id, kw.span);
        let lexer = Lexer::whole(id, self.sources.text(id));
        self.stack.push(Frame::File {
            lexer,
            path: found,
            peeked: None,
        });
    }

    // --- $definevariable ---------------------------------------------------------------------

    fn define_variable(&mut self, kw: &Tok) {
        let Some(name) = self.same_line() else {
            self.diags.push(
                Diagnostic::new(
                    Code::QcDefineIncomplete,
                    "`$definevariable` without a name",
                    kw.span,
                    "expected a variable name and a value after this, on the same line",
                )
                .with_note("write `$definevariable name value`, then use `$name$`"),
            );
            return;
        };
        let Some(value) = self.same_line() else {
            self.diags.push(
                Diagnostic::new(
                    Code::QcDefineIncomplete,
                    format!("variable `{}` has no value", name.text),
                    name.span,
                    "expected a value after this, on the same line",
                )
                .with_note("write `$definevariable name value`; use `\"\"` for an empty value"),
            );
            return;
        };
        let key = name.text.to_ascii_lowercase();
        if let Some(first) = self.vars.get(&key) {
            self.diags.push(
                Diagnostic::new(
                    Code::QcRedefined,
                    format!("variable `{}` is defined again", name.text),
                    name.span,
                    "this definition is ignored",
                )
                .with_secondary(first.name_span, "first defined here")
                .with_note("the first definition is kept, as in Valve's compilers"),
            );
            return;
        }
        self.vars.insert(
            key,
            Variable {
                value: value.text,
                name_span: name.span,
            },
        );
    }

    // --- $definemacro ------------------------------------------------------------------------

    fn define_macro(&mut self, kw: &Tok) {
        let (file, pos, end) = match self.stack.last_mut() {
            Some(Frame::File { lexer, peeked, .. }) => {
                // Normally nothing is read ahead here; if it is, read it again.
                if let Some(p) = peeked.take() {
                    lexer.pos = p.span.span.start as usize;
                    lexer.line_break = p.line_start;
                }
                (lexer.file, lexer.pos, lexer.end)
            }
            _ => {
                self.diags.push(
                    Diagnostic::new(
                        Code::QcDefineInMacro,
                        "`$definemacro` inside a macro body",
                        kw.span,
                        "a macro cannot be defined here",
                    )
                    .with_note("define macros at the top level of a QC file"),
                );
                self.skip_line();
                return;
            }
        };
        let text = self.sources.text(file);
        let bytes = text.as_bytes();
        let end = end.min(text.len());
        // The definition line: `$definemacro name p1 p2 … \\`; everything from `\\` is dropped.
        let line_end = find_byte(bytes, pos, end, b'\n').unwrap_or(end);
        let continues = find_str(text, pos, line_end, "\\\\");
        let mut head = Lexer::range(file, pos, continues.unwrap_or(line_end), false);
        let mut words: Vec<RawTok> = Vec::new();
        while let Some(t) = head.next(text, self.diags) {
            words.push(t);
        }
        // The body: each following line with `\\` (cut there), then the first line without.
        let mut segments = Vec::new();
        let mut cur = line_end;
        if continues.is_some() {
            cur = (line_end + 1).min(end);
            while cur < end {
                let le = find_byte(bytes, cur, end, b'\n').unwrap_or(end);
                match find_str(text, cur, le, "\\\\") {
                    Some(bs) => {
                        segments.push((cur, bs));
                        cur = (le + 1).min(end);
                    }
                    None => {
                        segments.push((cur, le));
                        cur = le;
                        break;
                    }
                }
            }
        }
        let mut body = Vec::new();
        for &(s, e) in &segments {
            let mut lx = Lexer::range(file, s, e, true);
            while let Some(t) = lx.next(text, self.diags) {
                body.push(Tok {
                    text: t.text(text).to_string(),
                    quoted: t.quoted,
                    line_start: t.line_start,
                    span: t.span.in_file(file),
                });
            }
        }
        let name = words
            .first()
            .map(|w| (w.text(text).to_string(), w.span.in_file(file)));
        let params: Vec<(String, FileSpan)> = words
            .iter()
            .skip(1)
            .map(|w| (w.text(text).to_string(), w.span.in_file(file)))
            .collect();
        // Continue reading after the body.
        if let Some(Frame::File { lexer, .. }) = self.stack.last_mut() {
            lexer.pos = cur;
            if cur > pos {
                lexer.line_break = false;
            }
        }
        let Some((name, name_span)) = name else {
            self.diags.push(
                Diagnostic::new(
                    Code::QcDefineIncomplete,
                    "`$definemacro` without a macro name",
                    kw.span,
                    "expected a macro name after this, on the same line",
                )
                .with_note("write `$definemacro name param1 param2 … \\\\`, then the body lines"),
            );
            return;
        };
        if continues.is_none() {
            self.diags.push(
                Diagnostic::new(
                    Code::QcMacroNoBody,
                    format!("macro `{name}` has an empty body"),
                    name_span,
                    "the `$definemacro` line does not end with `\\\\`",
                )
                .with_note(
                    "the body is the lines after `$definemacro name params \\\\`; each body \
                     line but the last ends with `\\\\`",
                ),
            );
        }
        // Unknown `$word$` in the body: Valve's "unknown macro token". Variables defined so
        // far are allowed too (mdlc replaces them at each expansion).
        for t in body.iter().filter(|t| !t.quoted) {
            let mut unknown = None;
            let _ = substitute(&t.text, |w| {
                let known = params.iter().any(|(p, _)| p.eq_ignore_ascii_case(w))
                    || self.vars.contains_key(&w.to_ascii_lowercase());
                if !known && unknown.is_none() {
                    unknown = Some(w.to_string());
                }
                known.then(String::new)
            });
            if let Some(w) = unknown {
                let mut d = Diagnostic::new(
                    Code::QcMacroUnknownParam,
                    format!("unknown macro parameter `${w}$`"),
                    t.span,
                    format!("`{w}` is not a parameter of `{name}`"),
                );
                d = d.with_note(if params.is_empty() {
                    format!("macro `{name}` has no parameters")
                } else {
                    format!(
                        "the parameters of `{name}` are {}",
                        params
                            .iter()
                            .map(|(p, _)| format!("`{p}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                });
                if let Some(near) = nearest(&w, params.iter().map(|(p, _)| p.as_str())) {
                    d = d.with_note(format!("help: did you mean `${near}$`?"));
                }
                self.diags.push(d);
            }
        }
        // `"$file$.smd"`: Valve's tokenizer does not replace parameters inside quotes, so the
        // file name stays `$file$.smd` at every call. Almost always a mistake: say so once.
        for t in body.iter().filter(|t| t.quoted) {
            let mut found = None;
            let _ = substitute(&t.text, |w| {
                let is_param = params.iter().any(|(p, _)| p.eq_ignore_ascii_case(w));
                if is_param && found.is_none() {
                    found = Some(w.to_string());
                }
                is_param.then(String::new)
            });
            if let Some(w) = found {
                self.diags.push(
                    Diagnostic::new(
                        Code::QcParamInQuotes,
                        format!("macro parameter `${w}$` inside quotes is not replaced"),
                        t.span,
                        "stays as written at every call",
                    )
                    .with_note("QC replaces macro parameters only in unquoted words (Valve's rule, which mdlc follows)")
                    .with_note(format!("help: write it without quotes: {}", t.text)),
                );
            }
        }
        let key = name.to_ascii_lowercase();
        if let Some(first) = self.macros.get(&key) {
            self.diags.push(
                Diagnostic::new(
                    Code::QcRedefined,
                    format!("macro `{name}` is defined again"),
                    name_span,
                    "this definition is ignored",
                )
                .with_secondary(first.name_span, "first defined here")
                .with_note("the first definition is kept"),
            );
            return;
        }
        self.macros.insert(
            key,
            Rc::new(Macro {
                name,
                name_span,
                params: params.into_iter().map(|(p, _)| p).collect(),
                body,
            }),
        );
    }

    // --- macro invocation --------------------------------------------------------------------

    fn invoke(&mut self, call: &Tok, key: String, m: &Macro) {
        let active: Vec<(&str, &Tok)> = self
            .stack
            .iter()
            .filter_map(|f| match f {
                Frame::Macro { key, call, .. } => Some((key.as_str(), call)),
                Frame::File { .. } => None,
            })
            .collect();
        if let Some((_, first)) = active.iter().find(|(k, _)| *k == key) {
            let chain: Vec<String> = active
                .iter()
                .map(|(_, c)| format!("`{}`", c.text))
                .chain(std::iter::once(format!("`{}`", call.text)))
                .collect();
            self.diags.push(
                Diagnostic::new(
                    Code::QcMacroRecursive,
                    format!("macro `{}` invokes itself", m.name),
                    call.span,
                    "this expansion would never end",
                )
                .with_secondary(first.span, "expanded from here")
                .with_note(format!("expansion chain: {}", chain.join(" → "))),
            );
            self.skip_line();
            return;
        }
        if self.macro_depth() >= MAX_DEPTH {
            self.diags.push(
                Diagnostic::new(
                    Code::QcNestingTooDeep,
                    format!("macro expansions nested more than {MAX_DEPTH} deep"),
                    call.span,
                    "this expansion is one too many",
                )
                .with_note(format!(
                    "at most {MAX_DEPTH} macro expansions can be nested"
                )),
            );
            self.skip_line();
            return;
        }
        let mut args: Vec<Tok> = Vec::with_capacity(m.params.len());
        while args.len() < m.params.len() {
            match self.same_line() {
                Some(a) => args.push(a),
                None => break,
            }
        }
        if args.len() < m.params.len() {
            let missing: Vec<String> = m
                .params
                .get(args.len()..)
                .unwrap_or_default()
                .iter()
                .map(|p| format!("`{p}`"))
                .collect();
            let n = m.params.len();
            self.diags.push(
                Diagnostic::new(
                    Code::QcMacroMissingArgs,
                    format!(
                        "macro `{}` takes {n} argument{}, but {} {} given",
                        m.name,
                        if n == 1 { "" } else { "s" },
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" },
                    ),
                    call.span,
                    format!("missing {}", join_and(&missing)),
                )
                .with_secondary(m.name_span, "macro defined here")
                .with_note("the arguments are the tokens after the macro name, on the same line"),
            );
            return;
        }
        let mut toks: Vec<Tok> = Vec::with_capacity(m.body.len());
        for b in &m.body {
            let mut t = b.clone();
            if !t.quoted {
                // A token that is exactly one parameter takes the argument as it was written
                // (quoted or not), so an argument with spaces stays one token. (Valve pastes the
                // text and reads it again, which would split it.)
                let whole = t
                    .text
                    .strip_prefix('$')
                    .and_then(|s| s.strip_suffix('$'))
                    .filter(|w| !w.is_empty() && !w.contains('$'))
                    .and_then(|w| m.params.iter().position(|p| p.eq_ignore_ascii_case(w)));
                if let Some(a) = whole.and_then(|i| args.get(i)) {
                    t.text = a.text.clone();
                    t.quoted = a.quoted;
                } else if let Some(s) = substitute(&t.text, |w| {
                    m.params
                        .iter()
                        .position(|p| p.eq_ignore_ascii_case(w))
                        .and_then(|i| args.get(i))
                        .map(|a| a.text.clone())
                }) {
                    t.text = s;
                }
            }
            if let Some(s) = self.substitute_vars(&t.text) {
                t.text = s;
            }
            toks.push(t);
        }
        if self.expanded > MAX_EXPANDED {
            // Already reported: every later expansion is refused silently.
            return;
        }
        self.expanded += toks.len();
        if self.expanded > MAX_EXPANDED {
            self.diags.push(
                Diagnostic::new(
                    Code::QcNestingTooDeep,
                    format!("macro expansions produce more than {MAX_EXPANDED} tokens"),
                    call.span,
                    "this expansion is not made",
                )
                .with_note("macros that each invoke other macros several times grow exponentially"),
            );
            return;
        }
        if toks.is_empty() {
            // An empty body still ends the line.
            self.force_line_start = true;
            return;
        }
        if let Some(first) = toks.first_mut() {
            first.line_start = true;
        }
        self.stack.push(Frame::Macro {
            key,
            call: call.clone(),
            toks: toks.into_iter(),
            peeked: None,
        });
    }
}

/// Replaces each `$word$` of `text` for which `lookup` gives a value (the word is not empty and
/// holds no `$`). A `$` that does not start a known word is kept, and the `$` closing it may
/// open the next one (`$$v$` gives `$` + the value of `v`). `None` when nothing was replaced.
fn substitute(text: &str, mut lookup: impl FnMut(&str) -> Option<String>) -> Option<String> {
    let first = text.find('$')?;
    let mut out = String::with_capacity(text.len());
    out.push_str(text.get(..first).unwrap_or(""));
    let mut rest = text.get(first..).unwrap_or("");
    let mut changed = false;
    // `rest` starts with `$` at the top of each iteration.
    while let Some(after) = rest.strip_prefix('$') {
        let Some(j) = after.find('$') else {
            break;
        };
        let word = after.get(..j).unwrap_or("");
        if !word.is_empty() {
            if let Some(v) = lookup(word) {
                out.push_str(&v);
                changed = true;
                let tail = after.get(j + 1..).unwrap_or("");
                match tail.find('$') {
                    Some(k) => {
                        out.push_str(tail.get(..k).unwrap_or(""));
                        rest = tail.get(k..).unwrap_or("");
                    }
                    None => {
                        out.push_str(tail);
                        rest = "";
                    }
                }
                continue;
            }
        }
        // Not a reference: keep `$word`, the closing `$` may open the next one.
        out.push('$');
        out.push_str(word);
        rest = after.get(j..).unwrap_or("");
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// `found` (a path the file system has, for the looked-up `path`, which is `written` joined to
/// the main QC's folder and normalised) spelt the way the QC would write it: the written text
/// with its trailing names replaced by those of `found` (`../Anims/Idle.qci` → `../anims/idle.qci`).
/// Falls back to the whole of `found`.
fn respell(written: &str, path: &Path, found: &Path) -> String {
    let segs: Vec<&str> = written.split('/').collect();
    let tail_start = segs
        .iter()
        .rposition(|s| s.is_empty() || *s == "." || *s == ".." || s.ends_with(':'))
        .map_or(0, |i| i + 1);
    let n = segs.len().saturating_sub(tail_start);
    let total = path.components().count();
    let found_parts: Vec<String> = found
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match found_parts.get(total.saturating_sub(n)..) {
        Some(tail) if n > 0 && total >= n && !tail.is_empty() => {
            let mut out: Vec<String> = segs
                .get(..tail_start)
                .unwrap_or_default()
                .iter()
                .map(|s| s.to_string())
                .collect();
            out.extend(tail.iter().cloned());
            out.join("/")
        }
        _ => found.display().to_string(),
    }
}

/// `/x`, `\x` (already turned into `/x`) and `C:…` are used as given.
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/')
        || (b.len() >= 2
            && b.first().is_some_and(u8::is_ascii_alphabetic)
            && b.get(1) == Some(&b':'))
}

/// Resolves `.` and `..` components without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    let mut normals = 0usize;
    let mut rooted = false;
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if normals > 0 {
                    out.pop();
                    normals -= 1;
                } else if !rooted {
                    out.push("..");
                }
            }
            Component::Normal(n) => {
                out.push(n);
                normals += 1;
            }
            Component::RootDir | Component::Prefix(_) => {
                out.push(c.as_os_str());
                normals = 0;
                rooted = true;
            }
        }
    }
    out
}

fn display_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".to_string()
    } else {
        dir.display().to_string()
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn nearest<'n>(word: &str, candidates: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    let w = word.to_ascii_lowercase();
    candidates
        .map(|c| (edit_distance(&w, &c.to_ascii_lowercase()), c))
        .filter(|&(d, c)| d <= (c.len() / 3).max(1) || (d == 2 && c.len() >= 4))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitute_words() {
        let look = |w: &str| match w {
            "a" => Some("X".to_string()),
            "bb" => Some("Y".to_string()),
            _ => None,
        };
        assert_eq!(substitute("plain", look), None);
        assert_eq!(substitute("$a$", look).as_deref(), Some("X"));
        assert_eq!(substitute("$a$_layer", look).as_deref(), Some("X_layer"));
        assert_eq!(substitute("p$a$q$bb$r", look).as_deref(), Some("pXqYr"));
        assert_eq!(substitute("$$a$", look).as_deref(), Some("$X"));
        assert_eq!(substitute("$zz$a$", look).as_deref(), Some("$zzX"));
        assert_eq!(substitute("$sequence", look), None);
        assert_eq!(substitute("$zz$", look), None);
        assert_eq!(substitute("$a$$bb$", look).as_deref(), Some("XY"));
    }

    #[test]
    fn normalizes_paths() {
        assert_eq!(normalize(Path::new("a/b/../c/./d")), PathBuf::from("a/c/d"));
        assert_eq!(normalize(Path::new("../x")), PathBuf::from("../x"));
        assert_eq!(normalize(Path::new("/a/../../x")), PathBuf::from("/x"));
        assert!(is_absolute("C:/x") && is_absolute("/x") && !is_absolute("x/C:"));
    }

    #[test]
    fn respells_found_paths_as_written() {
        let path = Path::new("q/anims/Idle.qci");
        assert_eq!(
            respell(
                "../Anims/Idle.qci",
                Path::new("q/Anims/Idle.qci"),
                Path::new("q/anims/idle.qci")
            ),
            "../anims/idle.qci"
        );
        assert_eq!(
            respell("Anims/Idle.qci", path, Path::new("q/anims/idle.qci")),
            "anims/idle.qci"
        );
        // a missing folder: the nearest name is a folder
        assert_eq!(respell("Anmis/x.qci", path, Path::new("q/anims")), "anims");
        assert_eq!(
            respell(
                "/abs/x.qci",
                Path::new("/abs/x.qci"),
                Path::new("/abs/X.qci")
            ),
            "/abs/X.qci"
        );
    }
}
