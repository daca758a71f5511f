//! The face of a Source `$model`: the `{ … }` block after `$model name "file.smd"` with its
//! eyeballs, eyelids, mouths, flex files and flexes, flex controllers, local variables and flex
//! rules (`qc-source.md` "$model"; the reading below follows `Cmd_Model` and the `Option_*`
//! functions of the 2006 SDK's `utils/studiomdl/studiomdl.cpp`).
//!
//! Both front ends read the block with [`parse`]: the QC reader gives it its tokens (after
//! `$include` and macros), the TOML reader the words of a body option's `flex` string. The items
//! are kept in the order written, because Valve's compiler numbers the flex descriptions in that
//! order (an eyelid adds four, a mouth one, a flex or flex pair one or two, a local variable one).
//!
//! Where Valve's reader is stricter than needed, mdlc reads more (each noted where it is done):
//! a rule's operators need no spaces around them, `%name=expr` is read, numbers may start with
//! a `.`, and names are looked up after the whole block is read, so a rule may name a
//! controller declared after it.

use std::path::Path;

use crate::diag::{Code, Diagnostic, FileSpan, Span};

use super::spec::{resolve_path, FileRef, Loc, Spanned};

/// A word of a face block: a QC token, or a word of a TOML `flex` string.
#[derive(Clone, Debug)]
pub struct Word {
    pub text: String,
    pub quoted: bool,
    /// A line break comes before it (or it is the first word).
    pub line_start: bool,
    pub span: FileSpan,
}

/// The face block of one `$model`, items in the order written.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FaceSpec {
    pub items: Vec<FaceItem>,
    /// `noautodmxrules`: the block's own controllers and rules drive the flex shapes of a DMX
    /// mesh; without it, later compilers make controllers and rules of the DMX's controls.
    pub no_auto_dmx_rules: bool,
    /// The folder VTA names are relative to (the QC's folder with `$cd`/`$pushd`; TOML: the
    /// file's folder, or its `flex_dir`).
    pub base: std::path::PathBuf,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FaceItem {
    Eyeball(EyeballSpec),
    Eyelid(EyelidSpec),
    Mouth(MouthSpec),
    Flex(FlexSpec),
    Controller(FlexControllerSpec),
    /// `localvar a b …`: flex descriptions no VTA frame drives, only rules.
    LocalVar(Spanned<String>),
    Rule(FlexRuleSpec),
}

/// `eyeball name bone x y z "material" diameter angle "iris" iris_scale`.
#[derive(Clone, Debug, PartialEq)]
pub struct EyeballSpec {
    pub name: Spanned<String>,
    pub bone: Spanned<String>,
    /// The eye's centre in model space (the reference pose), as written.
    pub origin: [f32; 3],
    /// The material of the eyeball's mesh.
    pub material: Spanned<String>,
    pub diameter: f32,
    /// The angle (degrees) the eye looks sideways at rest: `zoffset = tan(angle)`.
    pub angle: f32,
    /// The iris material (Valve's later builds do not store it).
    pub iris: Spanned<String>,
    /// As written; the file stores its inverse.
    pub iris_scale: Spanned<f32>,
    pub span: Loc,
}

/// One of an eyelid's three shapes: its VTA frame and its target (distance on the eyeball).
#[derive(Clone, Debug, PartialEq)]
pub struct LidShape {
    pub frame: Spanned<i32>,
    pub target: f32,
}

/// `eyelid type "file.vta" lowerer F T neutral F T raiser F T [split S] [eyeball name]`.
#[derive(Clone, Debug, PartialEq)]
pub struct EyelidSpec {
    /// `upper_…` or `lower_…` (the first letter decides, as in Valve's compiler).
    pub name: Spanned<String>,
    pub file: FileRef,
    /// The three shapes in the order written (`lowerer`, `neutral`, `raiser`): each adds a flex
    /// description `<name>_<kind>` in that order.
    pub shapes: Vec<(LidKind, LidShape)>,
    pub split: f32,
    pub eyeball: Option<Spanned<String>>,
    pub span: Loc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LidKind {
    Lowerer,
    Neutral,
    Raiser,
}

impl LidKind {
    pub fn word(self) -> &'static str {
        match self {
            LidKind::Lowerer => "lowerer",
            LidKind::Neutral => "neutral",
            LidKind::Raiser => "raiser",
        }
    }
}

/// `mouth index "flex" "bone" x y z`.
#[derive(Clone, Debug, PartialEq)]
pub struct MouthSpec {
    pub index: Spanned<i32>,
    pub flex: Spanned<String>,
    pub bone: Spanned<String>,
    pub forward: [f32; 3],
    pub span: Loc,
}

/// How a flex line names its description.
#[derive(Clone, Debug, PartialEq)]
pub enum FlexKind {
    /// `flex "name" …`
    Single,
    /// `flexpair "name" S …`: two descriptions `nameR`, `nameL`, the shape split at x = ±S.
    Pair(f32),
    /// `defaultflex …`: the description `default`, and the frame every delta is taken from.
    Default,
}

/// `flex`, `flexpair` or `defaultflex` with its options (`frame N`, `position P`, `split S`,
/// `decay D`), and the `flexfile` in force.
#[derive(Clone, Debug, PartialEq)]
pub struct FlexSpec {
    pub kind: FlexKind,
    /// The description's name (`default` for `defaultflex`).
    pub name: Spanned<String>,
    pub file: FileRef,
    pub frame: Option<Spanned<i32>>,
    /// `position P`: the weight at which the shape is reached (target1), 1 by default.
    pub position: f32,
    /// `split S`; a `flexpair` takes its own value when none is given.
    pub split: Option<f32>,
    pub decay: f32,
    pub span: Loc,
}

/// One controller of `flexcontroller group [range min max] name …`.
#[derive(Clone, Debug, PartialEq)]
pub struct FlexControllerSpec {
    pub group: String,
    pub name: Spanned<String>,
    pub min: f32,
    pub max: f32,
}

/// `%name = expression`.
#[derive(Clone, Debug, PartialEq)]
pub struct FlexRuleSpec {
    pub name: Spanned<String>,
    pub expr: Vec<Spanned<ExprToken>>,
    pub span: Loc,
}

/// A token of a flex rule's expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprToken {
    Number(f32),
    /// A controller.
    Name(String),
    /// `%name`: another flex description's value.
    Flex(String),
    Plus,
    Minus,
    Star,
    Slash,
    Open,
    Close,
    Comma,
    Min,
    Max,
}

/// Reads a face block's words (without the outer braces). `base` is the folder VTA paths are
/// relative to; `make_ref` is not needed beyond it (a VTA name without extension gets `.vta`).
pub fn parse(words: &[Word], base: &Path, diags: &mut Vec<Diagnostic>) -> FaceSpec {
    let mut p = Parser {
        words,
        pos: 0,
        base,
        diags,
        flexfile: None,
        items: Vec::new(),
        no_auto_dmx_rules: false,
    };
    p.run();
    FaceSpec {
        items: p.items,
        no_auto_dmx_rules: p.no_auto_dmx_rules,
        // normalised as file references are (`a/../b` → `b`), so two spellings compare equal
        base: resolve_path(base, "."),
    }
}

/// Splits `text` into words as the QC reader does (whitespace, double quotes, `//` and `/* */`
/// comments, braces as words of their own), spans relative to `span`: exact when `exact`,
/// otherwise every word gets the whole `span` (a TOML string with escapes).
pub fn words(text: &str, span: FileSpan, exact: bool) -> Vec<Word> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let at = |s: usize, e: usize| -> FileSpan {
        if exact {
            let start = span.span.start.saturating_add(s as u32);
            let end = span.span.start.saturating_add(e as u32);
            FileSpan {
                file: span.file,
                span: Span::new(start, end),
            }
        } else {
            span
        }
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            if b[i..end].contains(&b'\n') {
                line_start = true;
            }
            i = end;
        } else if c == b'"' {
            let s = i + 1;
            let e = text[s..].find(['"', '\n']).map_or(b.len(), |e| s + e);
            out.push(Word {
                text: text[s..e].to_string(),
                quoted: true,
                line_start,
                span: at(i, (e + 1).min(b.len())),
            });
            line_start = false;
            i = if e < b.len() && b[e] == b'"' {
                e + 1
            } else {
                e
            };
        } else if c == b'{' || c == b'}' {
            out.push(Word {
                text: (c as char).to_string(),
                quoted: false,
                line_start,
                span: at(i, i + 1),
            });
            line_start = false;
            i += 1;
        } else {
            let s = i;
            while i < b.len()
                && !b[i].is_ascii_whitespace()
                && b[i] != b'"'
                && b[i] != b'{'
                && b[i] != b'}'
                && !b[i..].starts_with(b"//")
            {
                i += 1;
            }
            out.push(Word {
                text: text[s..i].to_string(),
                quoted: false,
                line_start,
                span: at(s, i),
            });
            line_start = false;
        }
    }
    out
}

struct Parser<'a, 'd> {
    words: &'a [Word],
    pos: usize,
    base: &'a Path,
    diags: &'d mut Vec<Diagnostic>,
    /// The `flexfile` in force.
    flexfile: Option<FileRef>,
    items: Vec<FaceItem>,
    no_auto_dmx_rules: bool,
}

fn sp<T>(value: T, w: &Word) -> Spanned<T> {
    Spanned::new(value, w.span)
}

fn is_brace(w: &Word) -> bool {
    !w.quoted && (w.text == "{" || w.text == "}")
}

impl<'a> Parser<'a, '_> {
    fn run(&mut self) {
        while let Some(w) = self.words.get(self.pos) {
            self.pos += 1;
            if is_brace(w) {
                continue;
            }
            let l = w.text.to_ascii_lowercase();
            let ok = match l.as_str() {
                "eyeball" if !w.quoted => self.eyeball(w),
                "eyelid" if !w.quoted => self.eyelid(w),
                "mouth" if !w.quoted => self.mouth(w),
                "flex" if !w.quoted => self.flex(w, FlexKind::Single),
                "flexpair" if !w.quoted => self.flex(w, FlexKind::Single),
                "defaultflex" if !w.quoted => self.flex(w, FlexKind::Default),
                "flexfile" if !w.quoted => self.flexfile(),
                "localvar" if !w.quoted => self.localvar(),
                "flexcontroller" if !w.quoted => self.controller(w),
                // Later compilers make flex controllers and rules of their own from a DMX
                // mesh's controls unless told not to (`build::face` says what mdlc does).
                "noautodmxrules" if !w.quoted => {
                    self.no_auto_dmx_rules = true;
                    Some(())
                }
                "attachment" | "spherenormals" | "dmxeyelid" if !w.quoted => {
                    // Valve's 2006 compiler ignores `attachment` here and reads
                    // `spherenormals` (normals pointing away from a point); later compilers
                    // read `dmxeyelid` (an eyelid made of a DMX mesh's shapes), which no Valve
                    // build at hand shows the records of: not carried.
                    self.diags.push(
                        Diagnostic::new(
                            Code::QcNotSupported,
                            format!(
                                "`{}` in a `$model` block is not supported yet; ignored",
                                w.text
                            ),
                            w.span,
                            "ignored with the rest of its line",
                        )
                        .with_note("the model is built without it"),
                    );
                    self.rest_of_line();
                    Some(())
                }
                _ if !w.quoted && w.text.starts_with('%') => self.rule(w),
                _ => {
                    self.diags.push(
                        Diagnostic::new(
                            Code::QcFaceUnknownCommand,
                            format!("unknown command `{}` in a `$model` block", w.text),
                            w.span,
                            "not a face command",
                        )
                        .with_note("a `$model` block holds eyeball, eyelid, mouth, flexfile, flex, flexpair, defaultflex, flexcontroller, localvar, noautodmxrules and %rule lines")
                        .with_note("Valve's compiler stops with \"unknown model option\""),
                    );
                    self.rest_of_line();
                    Some(())
                }
            };
            if ok.is_none() {
                self.rest_of_line();
            }
        }
    }

    /// The next word on the current line, if any (braces end a line's arguments).
    fn same_line(&mut self) -> Option<&'a Word> {
        let w = self.words.get(self.pos)?;
        if w.line_start || is_brace(w) {
            return None;
        }
        self.pos += 1;
        Some(w)
    }

    fn rest_of_line(&mut self) {
        while self.same_line().is_some() {}
    }

    fn missing(&mut self, cmd: &Word, what: &str, usage: &str) {
        let at = self
            .words
            .get(self.pos.saturating_sub(1))
            .map_or(cmd.span, |w| w.span);
        self.diags.push(
            Diagnostic::new(
                Code::QcFaceArgument,
                format!("`{}` needs {what}", cmd.text),
                at,
                format!("{what} expected after this"),
            )
            .with_note(format!("usage: {usage}")),
        );
    }

    fn arg(&mut self, cmd: &Word, what: &str, usage: &str) -> Option<&'a Word> {
        let w = self.same_line();
        if w.is_none() {
            self.missing(cmd, what, usage);
        }
        w
    }

    fn number(&mut self, cmd: &Word, what: &str, usage: &str) -> Option<(f32, &'a Word)> {
        let w = self.arg(cmd, what, usage)?;
        if let Some(v) = parse_number(&w.text) {
            return Some((v, w));
        }
        // Valve's compiler reads these numbers with `verify_atof`: a word that starts with `-`,
        // `.` or a digit is read by C's `atof` (`-3,80436` is -3, a decimal comma ends the
        // number), any other word stops it ("expecting number").
        if w.text
            .starts_with(|c: char| c == '-' || c == '.' || c.is_ascii_digit())
        {
            let v = super::spec::atof_prefix(&w.text).map_or(0.0, |(v, _)| v as f32);
            if v.is_finite() {
                self.diags.push(
                    Diagnostic::new(
                        Code::QcNumberTrailing,
                        format!("`{}` is read as {v}", w.text),
                        w.span,
                        "characters after the number are ignored",
                    )
                    .with_note(format!(
                        "`{}` needs {what}; Valve's compiler reads the number as C's `atof` does",
                        cmd.text
                    )),
                );
                return Some((v, w));
            }
        }
        self.diags.push(
            Diagnostic::new(
                Code::QcFaceArgument,
                format!("`{}` needs {what}, not `{}`", cmd.text, w.text),
                w.span,
                "not a number",
            )
            .with_note(format!("usage: {usage}")),
        );
        None
    }

    fn integer(&mut self, cmd: &Word, what: &str, usage: &str) -> Option<Spanned<i32>> {
        let (v, w) = self.number(cmd, what, usage)?;
        if v.fract() != 0.0 || v.abs() > 1.0e9 {
            self.diags.push(
                Diagnostic::new(
                    Code::QcFaceArgument,
                    format!(
                        "`{}` needs {what}, a whole number, not `{}`",
                        cmd.text, w.text
                    ),
                    w.span,
                    "not a whole number",
                )
                .with_note(format!("usage: {usage}")),
            );
            return None;
        }
        Some(sp(v as i32, w))
    }

    fn vec3(&mut self, cmd: &Word, what: &str, usage: &str) -> Option<[f32; 3]> {
        let x = self.number(cmd, what, usage)?.0;
        let y = self.number(cmd, what, usage)?.0;
        let z = self.number(cmd, what, usage)?.0;
        Some([x, y, z])
    }

    fn vta(&self, w: &Word) -> FileRef {
        let name = w.text.replace('\\', "/");
        let with_ext = if Path::new(&name).extension().is_none() {
            format!("{name}.vta")
        } else {
            name
        };
        FileRef {
            written: w.text.clone(),
            path: resolve_path(self.base, &with_ext),
            span: Loc(w.span),
        }
    }

    fn eyeball(&mut self, cmd: &Word) -> Option<()> {
        const U: &str =
            "eyeball name bone x y z \"material\" diameter angle \"iris material\" iris_scale";
        let name = self.arg(cmd, "a name", U)?;
        let bone = self.arg(cmd, "a bone", U)?;
        let origin = self.vec3(cmd, "the eye's centre x y z", U)?;
        let material = self.arg(cmd, "the eyeball's material", U)?;
        let diameter = self.number(cmd, "a diameter", U)?.0;
        let angle = self.number(cmd, "an angle", U)?.0;
        let iris = self.arg(cmd, "the iris material", U)?;
        let (scale, sw) = self.number(cmd, "an iris scale", U)?;
        if scale == 0.0 {
            self.diags.push(
                Diagnostic::new(
                    Code::QcFaceArgument,
                    "an eyeball's iris scale cannot be 0",
                    sw.span,
                    "the file stores 1 / this value",
                )
                .with_note(format!("usage: {U}")),
            );
            return None;
        }
        self.items.push(FaceItem::Eyeball(EyeballSpec {
            name: sp(name.text.clone(), name),
            bone: sp(bone.text.clone(), bone),
            origin,
            material: sp(material.text.clone(), material),
            diameter,
            angle,
            iris: sp(iris.text.clone(), iris),
            iris_scale: sp(scale, sw),
            span: Loc(cmd.span),
        }));
        Some(())
    }

    fn eyelid(&mut self, cmd: &Word) -> Option<()> {
        const U: &str = "eyelid upper_x|lower_x \"file.vta\" lowerer F T neutral F T raiser F T [split S] [eyeball name]";
        let name = self.arg(cmd, "a name", U)?;
        let file = self.arg(cmd, "a VTA file", U)?;
        let mut lid = EyelidSpec {
            name: sp(name.text.clone(), name),
            file: self.vta(file),
            shapes: Vec::new(),
            split: 0.0,
            eyeball: None,
            span: Loc(cmd.span),
        };
        while let Some(o) = self.same_line() {
            let kind = match o.text.to_ascii_lowercase().as_str() {
                "lowerer" => Some(LidKind::Lowerer),
                "neutral" => Some(LidKind::Neutral),
                "raiser" => Some(LidKind::Raiser),
                "split" => {
                    lid.split = self.number(cmd, "a split value", U)?.0;
                    None
                }
                "eyeball" => {
                    let e = self.arg(cmd, "an eyeball name", U)?;
                    lid.eyeball = Some(sp(e.text.clone(), e));
                    None
                }
                _ => {
                    self.unknown_option(
                        cmd,
                        o,
                        &["lowerer", "neutral", "raiser", "split", "eyeball"],
                    );
                    return None;
                }
            };
            if let Some(kind) = kind {
                let frame = self.integer(cmd, "a frame number", U)?;
                let target = self.number(cmd, "a target", U)?.0;
                lid.shapes.retain(|(k, _)| *k != kind);
                lid.shapes.push((kind, LidShape { frame, target }));
            }
        }
        for kind in [LidKind::Lowerer, LidKind::Neutral, LidKind::Raiser] {
            if !lid.shapes.iter().any(|(k, _)| *k == kind) {
                self.diags.push(
                    Diagnostic::new(
                        Code::QcFaceArgument,
                        format!("eyelid `{}` has no `{}` shape", lid.name.value, kind.word()),
                        cmd.span,
                        "this eyelid",
                    )
                    .with_note(format!("usage: {U}"))
                    .with_note("Valve's compiler would use an undefined frame and target"),
                );
                return Some(());
            }
        }
        self.items.push(FaceItem::Eyelid(lid));
        Some(())
    }

    fn unknown_option(&mut self, cmd: &Word, o: &Word, known: &[&str]) {
        self.diags.push(
            Diagnostic::new(
                Code::QcFaceArgument,
                format!("unknown option `{}` of `{}`", o.text, cmd.text),
                o.span,
                "not an option here",
            )
            .with_note(format!("the options are {}", known.join(", "))),
        );
    }

    fn mouth(&mut self, cmd: &Word) -> Option<()> {
        const U: &str = "mouth index \"flex\" \"bone\" x y z";
        let index = self.integer(cmd, "a mouth index", U)?;
        if !(0..=127).contains(&index.value) {
            self.diags.push(Diagnostic::new(
                Code::QcFaceArgument,
                format!("mouth index {} is out of range (0 to 127)", index.value),
                index.span.0,
                "the index of the mouth record",
            ));
            return None;
        }
        let flex = self.arg(cmd, "a flex name", U)?;
        let bone = self.arg(cmd, "a bone", U)?;
        let forward = self.vec3(cmd, "a forward direction x y z", U)?;
        self.items.push(FaceItem::Mouth(MouthSpec {
            index,
            flex: sp(flex.text.clone(), flex),
            bone: sp(bone.text.clone(), bone),
            forward,
            span: Loc(cmd.span),
        }));
        Some(())
    }

    fn flexfile(&mut self) -> Option<()> {
        let cmd = &self.words[self.pos - 1];
        let f = self.arg(cmd, "a VTA file", "flexfile \"file.vta\" { … }")?;
        self.flexfile = Some(self.vta(f));
        Some(())
    }

    fn flex(&mut self, cmd: &Word, kind: FlexKind) -> Option<()> {
        let pair = cmd.text.eq_ignore_ascii_case("flexpair");
        const U: &str = "flex \"name\" frame N [position P] [split S] [decay D]";
        let (kind, name) = match kind {
            FlexKind::Default => (FlexKind::Default, sp("default".to_string(), cmd)),
            _ => {
                let n = self.arg(cmd, "a flex name", U)?;
                let kind = if pair {
                    FlexKind::Pair(self.number(cmd, "a split value", U)?.0)
                } else {
                    FlexKind::Single
                };
                (kind, sp(n.text.clone(), n))
            }
        };
        let Some(file) = self.flexfile.clone() else {
            self.diags.push(
                Diagnostic::new(
                    Code::QcFaceArgument,
                    format!("`{}` before any `flexfile`", cmd.text),
                    cmd.span,
                    "no VTA file is in force",
                )
                .with_note("write `flexfile \"faces.vta\" { … }` around the flex lines"),
            );
            return None;
        };
        let mut f = FlexSpec {
            kind,
            name,
            file,
            frame: None,
            position: 1.0,
            split: None,
            decay: 1.0,
            span: Loc(cmd.span),
        };
        while let Some(o) = self.same_line() {
            match o.text.to_ascii_lowercase().as_str() {
                "frame" => f.frame = Some(self.integer(cmd, "a frame number", U)?),
                "position" => f.position = self.number(cmd, "a position", U)?.0,
                "split" => f.split = Some(self.number(cmd, "a split value", U)?.0),
                "decay" => f.decay = self.number(cmd, "a decay", U)?.0,
                _ => {
                    self.unknown_option(cmd, o, &["frame", "position", "split", "decay"]);
                    return None;
                }
            }
        }
        if f.frame.is_none() {
            self.diags.push(
                Diagnostic::new(
                    Code::QcFaceArgument,
                    format!("`{}` `{}` has no `frame`", cmd.text, f.name.value),
                    cmd.span,
                    "which VTA frame is this shape?",
                )
                .with_note(format!("usage: {U}")),
            );
            return None;
        }
        self.items.push(FaceItem::Flex(f));
        Some(())
    }

    fn localvar(&mut self) -> Option<()> {
        while let Some(w) = self.same_line() {
            self.items.push(FaceItem::LocalVar(sp(w.text.clone(), w)));
        }
        Some(())
    }

    fn controller(&mut self, cmd: &Word) -> Option<()> {
        const U: &str = "flexcontroller group [range min max] name …";
        let group = self.arg(cmd, "a group", U)?;
        let (mut min, mut max) = (0.0, 1.0);
        let mut any = false;
        while let Some(w) = self.same_line() {
            if !w.quoted && w.text.eq_ignore_ascii_case("range") {
                min = self.number(cmd, "a minimum", U)?.0;
                max = self.number(cmd, "a maximum", U)?.0;
            } else {
                any = true;
                self.items.push(FaceItem::Controller(FlexControllerSpec {
                    group: group.text.clone(),
                    name: sp(w.text.clone(), w),
                    min,
                    max,
                }));
            }
        }
        if !any {
            self.missing(cmd, "a controller name", U);
        }
        Some(())
    }

    fn rule(&mut self, cmd: &Word) -> Option<()> {
        // `%name = expr`, `%name= expr`, `%name =expr` and `%name=expr` all read the same
        // (Valve's reader needs the spaces).
        let mut pieces: Vec<(String, FileSpan)> = Vec::new();
        let mut push_word = |w: &Word, skip: usize| {
            if skip < w.text.len() {
                let span = if w.quoted {
                    w.span
                } else {
                    FileSpan {
                        file: w.span.file,
                        span: Span::new(
                            w.span.span.start.saturating_add(skip as u32),
                            w.span.span.end,
                        ),
                    }
                };
                pieces.push((w.text[skip..].to_string(), span));
            }
        };
        push_word(cmd, 1);
        loop {
            match self.same_line() {
                Some(w) if !w.quoted && w.text == "\\\\" => {
                    // a line continuation: the expression goes on with the next line
                    if let Some(n) = self.words.get(self.pos).filter(|n| !is_brace(n)) {
                        self.pos += 1;
                        push_word(n, 0);
                    }
                }
                Some(w) => push_word(w, 0),
                None => break,
            }
        }
        // the name: up to `=`
        let all = pieces;
        let mut name = String::new();
        let mut name_span = cmd.span;
        let mut rest: Vec<(String, FileSpan)> = Vec::new();
        let mut seen_eq = false;
        for (text, span) in all {
            if seen_eq {
                rest.push((text, span));
                continue;
            }
            if let Some(eq) = text.find('=') {
                seen_eq = true;
                if name.is_empty() {
                    name = text[..eq].to_string();
                    name_span = sub(span, 0, eq);
                }
                if eq + 1 < text.len() {
                    rest.push((text[eq + 1..].to_string(), sub(span, eq + 1, text.len())));
                }
            } else if name.is_empty() {
                name = text;
                name_span = span;
            } else {
                self.diags.push(Diagnostic::new(
                    Code::QcFlexExpression,
                    format!("flex rule `%{name}` needs `=` after its name"),
                    span,
                    "`=` expected before this",
                ));
                return Some(());
            }
        }
        if name.is_empty() || !seen_eq {
            self.diags.push(
                Diagnostic::new(
                    Code::QcFlexExpression,
                    "a flex rule needs a name and `=`",
                    cmd.span,
                    "this rule",
                )
                .with_note("write `%name = expression`"),
            );
            return Some(());
        }
        let mut expr = Vec::new();
        for (text, span) in &rest {
            if !lex_expr(text, *span, &mut expr, self.diags) {
                return Some(());
            }
        }
        if expr.is_empty() {
            self.diags.push(Diagnostic::new(
                Code::QcFlexExpression,
                format!("flex rule `%{name}` has no expression"),
                cmd.span,
                "nothing after `=`",
            ));
            return Some(());
        }
        if let Err((at, what)) = check_expr(&expr) {
            let span = expr.get(at).map_or(cmd.span, |t| t.span.0);
            let label = if at >= expr.len() {
                "the expression ends here"
            } else {
                "here"
            };
            let span = if at >= expr.len() {
                expr.last().map_or(cmd.span, |t| t.span.0)
            } else {
                span
            };
            self.diags.push(
                Diagnostic::new(
                    Code::QcFlexExpression,
                    format!("flex rule `%{name}`: {what}"),
                    span,
                    label,
                )
                .with_note("a rule uses numbers, controllers, %flexes, + - * /, parentheses, min(a, b) and max(a, b)"),
            );
            return Some(());
        }
        self.items.push(FaceItem::Rule(FlexRuleSpec {
            name: Spanned::new(name, name_span),
            expr,
            span: Loc(cmd.span),
        }));
        Some(())
    }
}

fn sub(span: FileSpan, from: usize, to: usize) -> FileSpan {
    let len = span.span.end.saturating_sub(span.span.start) as usize;
    if to > len {
        return span;
    }
    FileSpan {
        file: span.file,
        span: Span::new(
            span.span.start.saturating_add(from as u32),
            span.span.start.saturating_add(to as u32),
        ),
    }
}

/// Valve's `verify_atof` accepts what C's `atof` reads whole; mdlc reads Rust floats (which
/// also covers `.5` and `1e-3`).
pub fn parse_number(s: &str) -> Option<f32> {
    let v: f32 = s.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Splits one word of an expression into tokens (`(1`, `x*0.5`, `%AU12R` …). Returns false after
/// reporting a character that has no meaning in an expression.
fn lex_expr(
    text: &str,
    span: FileSpan,
    out: &mut Vec<Spanned<ExprToken>>,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let one = |t: ExprToken| Spanned::new(t, sub(span, i, i + 1));
        match c {
            b'(' => out.push(one(ExprToken::Open)),
            b')' => out.push(one(ExprToken::Close)),
            b'+' => out.push(one(ExprToken::Plus)),
            b'-' => out.push(one(ExprToken::Minus)),
            b'*' => out.push(one(ExprToken::Star)),
            b'/' => out.push(one(ExprToken::Slash)),
            b',' => out.push(one(ExprToken::Comma)),
            _ if c.is_ascii_digit() || c == b'.' => {
                let s = i;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                    i += 1;
                }
                // an exponent: 1e-3
                if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                    let mut j = i + 1;
                    if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                        j += 1;
                    }
                    if j < b.len() && b[j].is_ascii_digit() {
                        i = j;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                let s_span = sub(span, s, i);
                match parse_number(&text[s..i]) {
                    Some(v) => out.push(Spanned::new(ExprToken::Number(v), s_span)),
                    None => {
                        diags.push(Diagnostic::new(
                            Code::QcFlexExpression,
                            format!("`{}` is not a number", &text[s..i]),
                            s_span,
                            "not a number",
                        ));
                        return false;
                    }
                }
                continue;
            }
            _ if c == b'%' || c == b'_' || c.is_ascii_alphabetic() => {
                let s = i;
                i += 1;
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                let word = &text[s..i];
                let t = if let Some(flex) = word.strip_prefix('%') {
                    if flex.is_empty() {
                        diags.push(Diagnostic::new(
                            Code::QcFlexExpression,
                            "`%` without a flex name",
                            sub(span, s, i),
                            "a flex name must follow `%`",
                        ));
                        return false;
                    }
                    ExprToken::Flex(flex.to_string())
                } else if word.eq_ignore_ascii_case("min") {
                    ExprToken::Min
                } else if word.eq_ignore_ascii_case("max") {
                    ExprToken::Max
                } else {
                    ExprToken::Name(word.to_string())
                };
                out.push(Spanned::new(t, sub(span, s, i)));
                continue;
            }
            _ => {
                diags.push(
                    Diagnostic::new(
                        Code::QcFlexExpression,
                        format!("`{}` has no meaning in a flex rule", &text[i..i + char_len(text, i)]),
                        sub(span, i, i + char_len(text, i)),
                        "unexpected character",
                    )
                    .with_note("a rule uses numbers, controllers, %flexes, + - * /, parentheses, min(a, b) and max(a, b)"),
                );
                return false;
            }
        }
        i += 1;
    }
    true
}

fn char_len(text: &str, i: usize) -> usize {
    text[i..].chars().next().map_or(1, char::len_utf8)
}

/// Checks that an expression is well formed: `expr = term (("+"|"-") term)*`,
/// `term = unary (("*"|"/") unary)*`, `unary = "-" unary | primary`,
/// `primary = number | name | %flex | "(" expr ")" | (min|max) "(" expr "," expr ")"`.
/// On failure: the index of the offending token (`len` when the expression ends too early) and
/// what was expected.
pub fn check_expr(toks: &[Spanned<ExprToken>]) -> Result<(), (usize, String)> {
    struct C<'a> {
        t: &'a [Spanned<ExprToken>],
        i: usize,
        depth: usize,
    }
    impl C<'_> {
        fn peek(&self) -> Option<&ExprToken> {
            self.t.get(self.i).map(|t| &t.value)
        }
        fn expect(&mut self, want: &ExprToken, what: &str) -> Result<(), (usize, String)> {
            if self.peek() == Some(want) {
                self.i += 1;
                Ok(())
            } else {
                Err((self.i, format!("expected {what}")))
            }
        }
        fn expr(&mut self) -> Result<(), (usize, String)> {
            self.depth += 1;
            if self.depth > 200 {
                return Err((self.i, "the expression is nested too deeply".into()));
            }
            self.term()?;
            while matches!(self.peek(), Some(ExprToken::Plus | ExprToken::Minus)) {
                self.i += 1;
                self.term()?;
            }
            self.depth -= 1;
            Ok(())
        }
        fn term(&mut self) -> Result<(), (usize, String)> {
            self.unary()?;
            while matches!(self.peek(), Some(ExprToken::Star | ExprToken::Slash)) {
                self.i += 1;
                self.unary()?;
            }
            Ok(())
        }
        fn unary(&mut self) -> Result<(), (usize, String)> {
            let mut n = 0;
            while self.peek() == Some(&ExprToken::Minus) {
                self.i += 1;
                n += 1;
                if n > 200 {
                    return Err((self.i, "too many signs".into()));
                }
            }
            self.primary()
        }
        fn primary(&mut self) -> Result<(), (usize, String)> {
            match self.peek() {
                Some(ExprToken::Number(_) | ExprToken::Name(_) | ExprToken::Flex(_)) => {
                    self.i += 1;
                    Ok(())
                }
                Some(ExprToken::Open) => {
                    self.i += 1;
                    self.expr()?;
                    self.expect(&ExprToken::Close, "`)`")
                }
                Some(ExprToken::Min | ExprToken::Max) => {
                    self.i += 1;
                    self.expect(&ExprToken::Open, "`(` after min/max")?;
                    self.expr()?;
                    self.expect(&ExprToken::Comma, "`,` between the two values of min/max")?;
                    self.expr()?;
                    self.expect(&ExprToken::Close, "`)`")
                }
                _ => Err((
                    self.i,
                    "expected a number, a controller, a %flex or `(`".into(),
                )),
            }
        }
    }
    let mut c = C {
        t: toks,
        i: 0,
        depth: 0,
    };
    c.expr()?;
    if c.i < toks.len() {
        return Err((c.i, "expected an operator or the end of the rule".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::FileId;

    fn span() -> FileSpan {
        Span::new(0, 0).in_file(FileId(0))
    }

    /// Words split at ASCII bytes only, so text in any script never cuts a character.
    #[test]
    fn words_of_any_text_never_split_a_character() {
        let text = "flex \"sourire\" frame 1 // été\n%é=ü*2 /* ü */ {x}\u{1F600}//";
        let w = words(text, span(), true);
        let t: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            t,
            [
                "flex",
                "sourire",
                "frame",
                "1",
                "%é=ü*2",
                "{",
                "x",
                "}",
                "\u{1F600}"
            ]
        );
        assert!(w[4].line_start && !w[5].line_start);
        let mut d = Vec::new();
        let f = parse(&w, Path::new("."), &mut d);
        // `flex` before any flexfile, `é` in a rule, the stray `x`: errors, no panic
        assert!(!d.is_empty());
        assert!(f.items.is_empty());
    }

    /// `dmxeyelid` (later compilers) is read past with W0220, not refused: the model is built
    /// without the lid.
    #[test]
    fn dmxeyelid_is_ignored_with_a_warning() {
        let w = words(
            "dmxeyelid upper \"h.dmx\" lowerer a -1 neutral b 0 raiser c 1 righteyeball r lefteyeball l\nlocalvar v\n",
            span(),
            true,
        );
        let mut d = Vec::new();
        let f = parse(&w, Path::new("."), &mut d);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].code, Code::QcNotSupported);
        assert!(d[0].message.contains("`dmxeyelid`"), "{}", d[0].message);
        assert_eq!(f.items.len(), 1);
    }

    /// `noautodmxrules` (later compilers: no automatic rules from a DMX's controls) is a flag
    /// of the block, not an item.
    #[test]
    fn noautodmxrules_is_accepted() {
        let w = words("noautodmxrules\nlocalvar v\n", span(), true);
        let mut d = Vec::new();
        let f = parse(&w, Path::new("."), &mut d);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(f.items.len(), 1);
        assert!(f.no_auto_dmx_rules);
        let w = words("localvar v\n", span(), true);
        assert!(!parse(&w, Path::new("."), &mut d).no_auto_dmx_rules);
        let w = words("noautodmxrule\n", span(), true);
        let mut d = Vec::new();
        parse(&w, Path::new("."), &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::QcFaceUnknownCommand);
    }
}
