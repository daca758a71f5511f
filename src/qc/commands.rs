//! QC commands: walks the tokens of a QC (both dialects) and fills a [`ProjectSpec`].
//!
//! * The dialect is decided first ([`choose_target`]): `--target`, else the first command that
//!   only one dialect has (`$cdtexture`, … → GoldSrc; `$cdmaterials`, `$model`, … → Source),
//!   else GoldSrc if the QC has `$cd`, else Source.
//! * Every command of both dialects is recognised, case-insensitively, with its arguments and
//!   blocks consumed by the dialect's rules (`qc-source.md` §1.3: Style A blocks open on the
//!   command's line, Style B blocks may open on the next one). A command of the other dialect
//!   is read anyway, with a warning.
//! * The state a QC tracks (`$cd`, `$pushd`, `$scale`, `$origin`, `$upaxis`, the HL1 mesh origin
//!   quirk, `$sequencegroup`) is resolved onto the items it applies to.
//! * Commands `ProjectSpec` cannot hold are warned about and listed in `not_carried`.
//!
//! `$sequence`/`$animation` and their amendments live in [`sequence`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic, FileSpan};
use crate::project::face::{self, Word};
use crate::project::spec::{
    atof_prefix as float_prefix_f64, resolve_path, AnimCommand, Attachment, BodyModel, BodyOption,
    BodyPart, BoneSaveFrame, BoneWeight, Collision, Controller, DefineBone, FileRef, Hitbox,
    HitboxSet, Loc, Lod, PoseParameter, ReplaceModel, Spanned, TargetChoice, TextureGroup,
    TextureRenderMode, WeightList, DEFAULT_ROTATION,
};
use crate::project::{ProjectSpec, Target};
use crate::qc::QcToken;
use crate::suggest::suggest;

mod sequence;

/// Walks the tokens of a QC (from `crate::qc::tokens::tokenize`) and fills a ProjectSpec.
/// `main` is the main QC file; `forced_target` comes from `--target` on the command line.
pub fn parse_project(
    main: &Path,
    tokens: &[QcToken],
    forced_target: Option<Target>,
    diags: &mut Vec<Diagnostic>,
) -> ProjectSpec {
    let target = choose_target(tokens, forced_target);
    let dialect = match target.target() {
        Target::GoldSrc => Dialect::Hl1,
        Target::Source => Dialect::Source,
    };
    let qc_dir = main.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut p = Parser {
        toks: tokens,
        pos: 0,
        dialect,
        spec: ProjectSpec::new(main.to_path_buf(), target),
        diags,
        qc_dir,
        cd: None,
        pushd: Vec::new(),
        scale: 1.0,
        origin: [0.0; 3],
        rotation: DEFAULT_ROTATION,
        hl1_offset: [0.0; 3],
        hboxset: None,
        cmdlists: HashMap::new(),
        anim_base_scale: Vec::new(),
        usage: "",
        cmd_name: String::new(),
        implicit_pose: Vec::new(),
        collision_text_at: None,
    };
    p.run();
    for (_, d) in std::mem::take(&mut p.implicit_pose) {
        p.push(d);
    }
    // the text only goes into a `.phy`, as the 2006 SDK writes it (`CollisionModel_Write`)
    if p.spec.collision.is_none() {
        if let Some(at) = p.collision_text_at.take() {
            p.spec.collision_text.clear();
            p.push(
                Diagnostic::new(
                    Code::QcCollisionTextUnused,
                    "`$collisiontext` without `$collisionmodel` or `$collisionjoints` is ignored",
                    at,
                    "no collision model to add it to",
                )
                .with_note(
                    "the text goes into the `.phy` file, which only a collision model makes; Valve's compiler drops it the same way",
                ),
            );
        }
    }
    // Valve's HL1 tool looks textures up in the `$cdtexture` folders, else in `$cd` (else the
    // current folder, which is the QC's): make that fallback an explicit texture folder, so
    // the model (and a TOML imported from it) says where its textures are.
    if p.dialect == Dialect::Hl1 && p.spec.texture_dirs.is_empty() && !p.spec.body_parts.is_empty()
    {
        let span =
            p.cd.as_ref()
                .map(|(_, s)| *s)
                .or_else(|| tokens.first().map(|t| t.span));
        if let Some(span) = span {
            let dir = p.src_base();
            p.spec.texture_dirs.push(Spanned::new(dir, span));
        }
    }
    p.spec
}

/// The target: given, else inferred from the first command only one dialect has, else GoldSrc
/// when the QC has `$cd` (both tools know it, but it is the usual first line of a Half-Life QC
/// and rare in Source ones), else Source. `$cd` alone does not decide before a command only
/// one dialect has: Source QCs written by hand also begin with it (Scentus' ponies).
fn choose_target(tokens: &[QcToken], forced: Option<Target>) -> TargetChoice {
    if let Some(t) = forced {
        // No span for a command-line choice: point at the first token if there is one.
        let span = tokens.first().map(|t| t.span).unwrap_or(FileSpan {
            file: crate::diag::FileId(0),
            span: crate::diag::Span::new(0, 0),
        });
        return TargetChoice::Given(Spanned::new(t, span));
    }
    let mut cd = None;
    for t in tokens {
        if t.quoted || !t.text.starts_with('$') {
            continue;
        }
        let name = t.text.to_ascii_lowercase();
        let target = match lookup(&name) {
            Some(Avail::Hl1) => Target::GoldSrc,
            Some(Avail::Source | Avail::Later) => Target::Source,
            _ => {
                if name == "$cd" && cd.is_none() {
                    cd = Some(t);
                }
                continue;
            }
        };
        return TargetChoice::Inferred {
            target,
            because: Spanned::new(t.text.clone(), t.span),
        };
    }
    match cd {
        Some(t) => TargetChoice::Inferred {
            target: Target::GoldSrc,
            because: Spanned::new(t.text.clone(), t.span),
        },
        None => TargetChoice::Default(Target::Source),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Hl1,
    Source,
}

/// Which compilers have a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Avail {
    /// Valve's HL1 tool and the 2006 Source tool.
    Both,
    /// Only the HL1 tool.
    Hl1,
    /// Only the Source tool (2006).
    Source,
    /// Only later Source tools (`qc-source.md` §3).
    Later,
}

/// Every top-level command of both dialects (lower case, with `$`).
const COMMANDS: &[(&str, Avail)] = &[
    ("$modelname", Avail::Both),
    ("$cd", Avail::Both),
    ("$cdtexture", Avail::Hl1),
    ("$scale", Avail::Both),
    ("$origin", Avail::Both),
    ("$eyeposition", Avail::Both),
    ("$bbox", Avail::Both),
    ("$cbox", Avail::Both),
    ("$flags", Avail::Hl1),
    ("$body", Avail::Both),
    ("$bodygroup", Avail::Both),
    ("$sequence", Avail::Both),
    ("$sequencegroup", Avail::Hl1),
    ("$sequencegroupsize", Avail::Hl1),
    ("$controller", Avail::Both),
    ("$attachment", Avail::Both),
    ("$hbox", Avail::Both),
    ("$hgroup", Avail::Both),
    ("$texturegroup", Avail::Both),
    ("$texrendermode", Avail::Hl1),
    ("$renamebone", Avail::Both),
    ("$mirrorbone", Avail::Hl1),
    ("$gamma", Avail::Both),
    ("$externaltextures", Avail::Both),
    ("$cliptotextures", Avail::Both),
    ("$root", Avail::Both),
    ("$pivot", Avail::Hl1),
    // Source 2006
    ("$pushd", Avail::Source),
    ("$popd", Avail::Source),
    ("$cdmaterials", Avail::Source),
    ("$model", Avail::Source),
    ("$upaxis", Avail::Source),
    ("$staticprop", Avail::Source),
    ("$autocenter", Avail::Source),
    ("$zbrush", Avail::Source),
    ("$fakevta", Avail::Source),
    ("$lod", Avail::Source),
    ("$shadowlod", Avail::Source),
    ("$minlod", Avail::Source),
    ("$renamematerial", Avail::Source),
    ("$opaque", Avail::Source),
    ("$mostlyopaque", Avail::Source),
    ("$definebone", Avail::Source),
    ("$hierarchy", Avail::Source),
    ("$heirarchy", Avail::Source),
    ("$insertbone", Avail::Source),
    ("$alwayscollapse", Avail::Source),
    ("$collapsebones", Avail::Source),
    ("$realignbones", Avail::Source),
    ("$forcerealign", Avail::Source),
    ("$limitrotation", Avail::Source),
    ("$lockbonelengths", Avail::Source),
    ("$lockdefinebones", Avail::Source),
    ("$bonemerge", Avail::Source),
    ("$screenalign", Avail::Source),
    ("$proceduralbones", Avail::Source),
    ("$ikchain", Avail::Source),
    ("$ikautoplaylock", Avail::Source),
    ("$poseparameter", Avail::Source),
    ("$bonesaveframe", Avail::Source),
    ("$skipboneinbbox", Avail::Source),
    ("$animation", Avail::Source),
    ("$append", Avail::Source),
    ("$prepend", Avail::Source),
    ("$continue", Avail::Source),
    ("$declaresequence", Avail::Source),
    ("$declareanimation", Avail::Source),
    ("$cmdlist", Avail::Source),
    ("$weightlist", Avail::Source),
    ("$defaultweightlist", Avail::Source),
    ("$animblocksize", Avail::Source),
    ("$skiptransition", Avail::Source),
    ("$calctransitions", Avail::Source),
    ("$includemodel", Avail::Source),
    ("$hboxset", Avail::Source),
    ("$illumposition", Avail::Source),
    ("$surfaceprop", Avail::Source),
    ("$jointsurfaceprop", Avail::Source),
    ("$contents", Avail::Source),
    ("$jointcontents", Avail::Source),
    ("$collisionmodel", Avail::Source),
    ("$collisionjoints", Avail::Source),
    ("$collisiontext", Avail::Source),
    ("$keyvalues", Avail::Source),
    ("$noforcedfade", Avail::Source),
    ("$ambientboost", Avail::Source),
    ("$forcephonemecrossfade", Avail::Source),
    ("$constantdirectionallight", Avail::Source),
    ("$obsolete", Avail::Source),
    // later Source compilers
    ("$sectionframes", Avail::Later),
    ("$maxverts", Avail::Later),
    ("$qcassert", Avail::Later),
    ("$lcaseallsequences", Avail::Later),
    ("$defaultfadein", Avail::Later),
    ("$defaultfadeout", Avail::Later),
    ("$donotcastshadows", Avail::Later),
    ("$casttextureshadows", Avail::Later),
    ("$jigglebone", Avail::Later),
    ("$boneflexdriver", Avail::Later),
    ("$unlockdefinebones", Avail::Later),
    ("$collapsebonesaggressive", Avail::Later),
    ("$maxeyedeflection", Avail::Later),
    ("$flexcontrollerui", Avail::Later),
    ("$centerbonesonverts", Avail::Later),
    ("$internalname", Avail::Later),
    ("$motionrollback", Avail::Later),
    ("$allowactivityname", Avail::Later),
    ("$skinnedlods", Avail::Later),
];

fn lookup(name_lower: &str) -> Option<Avail> {
    COMMANDS
        .iter()
        .find(|(n, _)| *n == name_lower)
        .map(|&(_, a)| a)
}

/// Motion types of the HL1 dialect (`goldsrc.md` §5).
const HL1_MOTION: &[&str] = &[
    "x", "y", "z", "xr", "yr", "zr", "lx", "ly", "lz", "ax", "ay", "az", "axr", "ayr", "azr",
];
/// Motion types of the Source dialect (`qc-source.md` §4.5).
const SOURCE_MOTION: &[&str] = &[
    "x", "y", "z", "xr", "yr", "zr", "lx", "ly", "lz", "lxr", "lyr", "lzr", "lm", "lq",
];

/// Collision block commands (`qc-source.md` §2.3, plus the later `$maxconvexpieces`).
const COLLISION_COMMANDS: &[&str] = &[
    "$mass",
    "$automass",
    "$inertia",
    "$damping",
    "$rotdamping",
    "$drag",
    "$rollingdrag",
    "$concave",
    "$masscenter",
    "$jointskip",
    "$jointmerge",
    "$rootbone",
    "$jointconstrain",
    "$jointinertia",
    "$jointdamping",
    "$jointrotdamping",
    "$jointmassbias",
    "$noselfcollisions",
    "$jointcollide",
    "$animatedfriction",
    "$maxconvexpieces",
    "$remove2d",
    "$weldposition",
    "$weldnormal",
    "$assumeworldspace",
];

const LOD_OPTIONS: &[&str] = &[
    "replacemodel",
    "removemodel",
    "replacebone",
    "bonetreecollapse",
    "replacematerial",
    "removemesh",
    "nofacial",
    "facial",
    "use_shadowlod_materials",
];

pub(crate) struct Parser<'t, 'd> {
    toks: &'t [QcToken],
    pos: usize,
    dialect: Dialect,
    spec: ProjectSpec,
    diags: &'d mut Vec<Diagnostic>,
    /// The main QC's folder: every relative path starts here.
    qc_dir: PathBuf,
    /// `$cd` as written, with the span of the command.
    cd: Option<(String, FileSpan)>,
    /// `$pushd` folders, innermost last.
    pushd: Vec<String>,
    scale: f32,
    origin: [f32; 3],
    rotation: [f32; 3],
    /// HL1: the origin offset the last `$sequence` left behind (`goldsrc.md` §8.1).
    hl1_offset: [f32; 3],
    hboxset: Option<usize>,
    /// `$cmdlist` name (lower case) → commands, expanded where `cmdlist name` is used.
    cmdlists: HashMap<String, Vec<AnimCommand>>,
    /// Per entry of `spec.animations`: the `$scale` in force when it was declared.
    anim_base_scale: Vec<f32>,
    /// Syntax of the command being read, for "missing argument" notes.
    usage: &'static str,
    /// The command being read, as written.
    cmd_name: String,
    /// Pose parameters a sequence named before any `$poseparameter` did (by index in
    /// `spec.pose_parameters`), with the warning reported if none declares them later.
    implicit_pose: Vec<(usize, Diagnostic)>,
    /// The first `$collisiontext`, for the warning when no collision model takes its text.
    collision_text_at: Option<FileSpan>,
}

/// A Style-A block in progress (`qc-source.md` §1.3).
pub(crate) struct StyleA {
    opens: Vec<FileSpan>,
    seen_brace: bool,
    /// `$continue`: the `{` may be on the next line without a warning.
    brace_may_follow: bool,
}

impl StyleA {
    pub(crate) fn new() -> Self {
        StyleA {
            opens: Vec::new(),
            seen_brace: false,
            brace_may_follow: false,
        }
    }
}

pub(crate) fn is_open(t: &QcToken) -> bool {
    !t.quoted && t.text == "{"
}

pub(crate) fn is_close(t: &QcToken) -> bool {
    !t.quoted && t.text == "}"
}

/// The longest prefix of `s` that C's `atof` reads, and its value.
fn float_prefix(s: &str) -> Option<(f32, usize)> {
    // C's `atof` returns a double that the tools store in a float: round twice, like them.
    float_prefix_f64(s).map(|(v, len)| (v as f32, len))
}

/// Where to read a `$cd` that names a Windows folder (`C:\models\x`, or `\quiver\valve\x` from
/// the drive's root) on a machine that is not Windows, where it cannot exist: the QC's folder or
/// the nearest folder above it whose path ends with the most of the same folder names (compared
/// without case, as Windows does), as a path from the QC's folder, with the names that matched.
/// `None` on Windows, for any other folder, or when no name matches.
fn reroot_cd(qc_dir: &Path, cd: &str) -> Option<(String, String)> {
    if cfg!(windows) {
        return None;
    }
    let b = cd.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    if !drive && !cd.starts_with('\\') {
        return None;
    }
    let names: Vec<&str> = cd
        .get(if drive { 2 } else { 0 }..)?
        .split(['\\', '/'])
        .filter(|n| !n.is_empty() && *n != ".")
        .collect();
    let here = if qc_dir.as_os_str().is_empty() {
        std::path::absolute(".").ok()?
    } else {
        std::path::absolute(qc_dir).ok()?
    };
    let mut best: Option<(usize, usize)> = None; // (names matched, folders up)
    for (up, folder) in here.ancestors().enumerate() {
        let own: Vec<String> = folder
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let matched = own
            .iter()
            .rev()
            .zip(names.iter().rev())
            .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
            .count();
        if matched > 0 && best.is_none_or(|(m, _)| matched > m) {
            best = Some((matched, up));
        }
    }
    let (matched, up) = best?;
    let rel = if up == 0 {
        ".".to_string()
    } else {
        vec![".."; up].join("/")
    };
    let tail = names.get(names.len() - matched..)?.join("/");
    Some((rel, tail))
}

fn lower(t: &QcToken) -> String {
    t.text.to_ascii_lowercase()
}

fn sp<T>(value: T, t: &QcToken) -> Spanned<T> {
    Spanned::new(value, t.span)
}

fn rad(deg: f32) -> f32 {
    f64::from(deg).to_radians() as f32
}

/// Valve's HL1 `rotate` / `$origin` rotation: `(atof(token) + 90) * (Q_PI / 180.0)`, all in
/// double, stored in a float (`studiomdl.c` `Option_Rotate`, `Cmd_Origin`; `goldsrc.md` §6.2).
fn hl1_rotation(deg: f64) -> f32 {
    ((deg + 90.0) * (std::f64::consts::PI / 180.0)) as f32
}

impl<'t> Parser<'t, '_> {
    // --- tokens ---------------------------------------------------------------------------

    pub(crate) fn peek(&self) -> Option<&'t QcToken> {
        self.toks.get(self.pos)
    }

    pub(crate) fn bump(&mut self) -> Option<&'t QcToken> {
        let t = self.toks.get(self.pos)?;
        self.pos += 1;
        Some(t)
    }

    /// The next token if it is on the current line.
    pub(crate) fn same_line(&self) -> Option<&'t QcToken> {
        self.peek().filter(|t| !t.line_start)
    }

    fn last_span(&self) -> FileSpan {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .or_else(|| self.toks.first())
            .map(|t| t.span)
            .unwrap_or(FileSpan {
                file: crate::diag::FileId(0),
                span: crate::diag::Span::new(0, 0),
            })
    }

    /// Skips the rest of the line, stopping before braces (so a block's balance survives).
    pub(crate) fn skip_line(&mut self) {
        while let Some(t) = self.same_line() {
            if is_open(t) || is_close(t) {
                break;
            }
            self.pos += 1;
        }
    }

    pub(crate) fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    // --- arguments ------------------------------------------------------------------------

    /// A required argument on the current line.
    pub(crate) fn arg(&mut self, what: &str) -> Option<&'t QcToken> {
        // A brace is never an argument: leaving it lets the block stay balanced.
        match self.same_line().filter(|t| !is_open(t) && !is_close(t)) {
            Some(t) => {
                self.pos += 1;
                Some(t)
            }
            None => {
                self.missing(what);
                None
            }
        }
    }

    pub(crate) fn missing(&mut self, what: &str) {
        let at = self.last_span();
        let last = self
            .pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map(|t| t.text.clone())
            .unwrap_or_default();
        let message = if self.cmd_name.is_empty() || self.cmd_name == last {
            format!("missing {what} after `{last}`")
        } else {
            format!("missing {what} in `{}`", self.cmd_name)
        };
        let mut d = Diagnostic::new(
            Code::QcMissingArgument,
            message,
            at,
            format!("expected {what} after this"),
        );
        if !self.usage.is_empty() {
            d = d.with_note(format!("usage: {}", self.usage));
        }
        d = d.with_note("QC commands read their arguments from the same line");
        self.push(d);
    }

    /// Reads a token as a float like C's `atof`, reporting a word (read as 0 by Valve's tools)
    /// and trailing characters.
    pub(crate) fn read_f32(&mut self, t: &QcToken, what: &str) -> f32 {
        let v = self.read_f64(t, what) as f32;
        if v.is_finite() {
            v
        } else {
            self.out_of_range(t);
            0.0
        }
    }

    /// A number that is not finite (once read, or once stored in a float).
    fn out_of_range(&mut self, t: &QcToken) {
        self.push(Diagnostic::new(
            Code::QcBadValue,
            format!("`{}` is out of range", t.text),
            t.span,
            "not a finite number",
        ));
    }

    /// [`read_f32`](Self::read_f32) without the final rounding to a float, for the few values
    /// Valve's tools compute with in double before storing them.
    pub(crate) fn read_f64(&mut self, t: &QcToken, what: &str) -> f64 {
        match float_prefix_f64(&t.text) {
            Some((v, len)) => {
                if len < t.text.len() {
                    self.push(
                        Diagnostic::new(
                            Code::QcNumberTrailing,
                            format!("`{}` is read as {v}", t.text),
                            t.span,
                            "characters after the number are ignored",
                        )
                        .with_note(format!("expected {what}")),
                    );
                }
                if v.is_finite() {
                    v
                } else {
                    self.out_of_range(t);
                    0.0
                }
            }
            None => {
                self.not_a_number(t, what);
                0.0
            }
        }
    }

    fn not_a_number(&mut self, t: &QcToken, what: &str) {
        let note = match self.dialect {
            Dialect::Hl1 => "Valve's HL1 compiler silently reads a word as 0 here",
            Dialect::Source => {
                "Valve's compilers read a word as 0 here (the Source one stops with \"expecting number\")"
            }
        };
        self.push(
            Diagnostic::new(
                Code::QcExpectedNumber,
                format!("expected {what}, found `{}`", t.text),
                t.span,
                "not a number",
            )
            .with_note(note),
        );
    }

    /// Reads a token as an integer like C's `atoi` (`1.0` is 1).
    pub(crate) fn read_i32(&mut self, t: &QcToken, what: &str) -> i32 {
        let Some((v, len)) = float_prefix(&t.text) else {
            self.not_a_number(t, what);
            return 0;
        };
        let b = t.text.as_bytes();
        let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let int_text = t.text.get(..i).unwrap_or("");
        let int_text = int_text.strip_prefix('+').unwrap_or(int_text);
        let n: i64 = int_text.parse().unwrap_or(0);
        let Ok(n) = i32::try_from(n) else {
            self.push(Diagnostic::new(
                Code::QcBadValue,
                format!("`{}` is out of range", t.text),
                t.span,
                "does not fit a 32-bit integer",
            ));
            return 0;
        };
        if len < t.text.len() || v != n as f32 {
            self.push(
                Diagnostic::new(
                    Code::QcNumberTrailing,
                    format!("`{}` is read as {n}", t.text),
                    t.span,
                    "expected a whole number",
                )
                .with_note(format!("expected {what}")),
            );
        }
        n
    }

    pub(crate) fn num(&mut self, what: &str) -> Option<f32> {
        let t = self.arg(what)?;
        Some(self.read_f32(t, what))
    }

    pub(crate) fn int(&mut self, what: &str) -> Option<i32> {
        let t = self.arg(what)?;
        Some(self.read_i32(t, what))
    }

    fn vec3(&mut self, what: &str) -> Option<[f32; 3]> {
        Some([self.num(what)?, self.num(what)?, self.num(what)?])
    }

    fn name(&mut self, what: &str) -> Option<Spanned<String>> {
        let t = self.arg(what)?;
        Some(sp(t.text.clone(), t))
    }

    /// A motion type word of the dialect, upper-cased; `None` otherwise. Valve's HL1 tokenizer
    /// drops the quotes of a quoted token before `lookupControl` compares it (`scriplib.c`
    /// `GetToken`), so in that dialect `"LX"` is `LX`; in the Source dialect a quoted word is
    /// never a motion type.
    pub(crate) fn motion_word(&self, t: &QcToken) -> Option<String> {
        if t.quoted && self.dialect == Dialect::Source {
            return None;
        }
        let l = lower(t);
        self.motion_list()
            .contains(&l.as_str())
            .then(|| l.to_ascii_uppercase())
    }

    pub(crate) fn motion_list(&self) -> &'static [&'static str] {
        match self.dialect {
            Dialect::Hl1 => HL1_MOTION,
            Dialect::Source => SOURCE_MOTION,
        }
    }

    pub(crate) fn unknown_keyword(
        &mut self,
        code: Code,
        t: &QcToken,
        what: &str,
        candidates: &[&str],
        expected: &str,
    ) {
        let article = if what.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        let mut d = Diagnostic::new(
            code,
            format!("unknown {what} `{}`", t.text),
            t.span,
            format!("not {article} {what}"),
        );
        if t.text.len() > 1 || t.text.bytes().all(|b| b.is_ascii_alphanumeric()) {
            if let Some(s) = suggest(&t.text, candidates) {
                // motion types are written in upper case
                let s = if what == "motion type" {
                    s.to_ascii_uppercase()
                } else {
                    s.to_string()
                };
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
        }
        d = d.with_note(format!("expected {expected}"));
        self.push(d);
    }

    fn motion(&mut self, what: &str) -> Option<Spanned<String>> {
        let t = self.arg(what)?;
        match self.motion_word(t) {
            Some(m) => Some(sp(m, t)),
            None => {
                let list = self.motion_list();
                let expected = list
                    .iter()
                    .map(|m| m.to_ascii_uppercase())
                    .collect::<Vec<_>>()
                    .join(" ");
                self.unknown_keyword(Code::QcUnknownKeyword, t, "motion type", list, &expected);
                None
            }
        }
    }

    // --- paths ----------------------------------------------------------------------------

    /// The folder source files are read from: the QC's folder, `$cd`, then every `$pushd`.
    fn src_base(&self) -> PathBuf {
        let mut base = self.qc_dir.clone();
        if let Some((cd, _)) = &self.cd {
            base = resolve_path(&base, cd);
        }
        for d in &self.pushd {
            base = resolve_path(&base, d);
        }
        base
    }

    /// A source file: HL1 appends `.smd`; Source adds `default_ext` when there is no extension.
    pub(crate) fn file_ref(&self, t: &QcToken, default_ext: &str) -> FileRef {
        let name = t.text.replace('\\', "/");
        let with_ext = match self.dialect {
            Dialect::Hl1 if !name.to_ascii_lowercase().ends_with(".smd") => format!("{name}.smd"),
            Dialect::Hl1 => name,
            Dialect::Source if Path::new(&name).extension().is_none() => {
                format!("{name}.{default_ext}")
            }
            Dialect::Source => name,
        };
        FileRef {
            written: t.text.clone(),
            path: resolve_path(&self.src_base(), &with_ext),
            span: Loc(t.span),
        }
    }

    // --- blocks ---------------------------------------------------------------------------

    /// The next item of a Style-A command: tokens on the command's line, and every line
    /// inside braces. Braces are consumed here. `None` when the command ends.
    pub(crate) fn item(&mut self, b: &mut StyleA) -> Option<&'t QcToken> {
        loop {
            let Some(t) = self.peek() else {
                if let Some(&open) = b.opens.last() {
                    self.unclosed(open);
                    b.opens.clear();
                }
                return None;
            };
            if b.opens.is_empty() && t.line_start {
                if !b.seen_brace && is_open(t) {
                    if !b.brace_may_follow {
                        self.push(
                            Diagnostic::new(
                                Code::QcBraceOnNextLine,
                                format!("the `{{` of `{}` should be on the command's line", self.current_command()),
                                t.span,
                                "on the next line",
                            )
                            .with_note("Valve's Source compiler ends the command at the line break and stops with \"bad command {\"; mdlc reads the block"),
                        );
                    }
                    b.seen_brace = true;
                    b.opens.push(t.span);
                    self.pos += 1;
                    continue;
                }
                return None;
            }
            self.pos += 1;
            if is_open(t) {
                b.seen_brace = true;
                b.opens.push(t.span);
                continue;
            }
            if is_close(t) {
                if b.opens.pop().is_none() {
                    self.push(Diagnostic::new(
                        Code::QcUnopenedBrace,
                        "`}` without a matching `{`",
                        t.span,
                        "closes nothing",
                    ));
                }
                continue;
            }
            return Some(t);
        }
    }

    fn current_command(&self) -> String {
        self.usage
            .split_whitespace()
            .next()
            .unwrap_or("command")
            .to_string()
    }

    pub(crate) fn unclosed(&mut self, open: FileSpan) {
        self.push(
            Diagnostic::new(
                Code::QcUnclosedBrace,
                "missing `}`",
                open,
                "this `{` is never closed",
            )
            .with_note("the file ends inside the block"),
        );
    }

    /// Style B: the `{` may be on a later line. Returns its span, or reports what came instead.
    fn open_brace(&mut self, cmd: &str) -> Option<FileSpan> {
        match self.peek() {
            Some(t) if is_open(t) => {
                self.pos += 1;
                Some(t.span)
            }
            Some(t) => {
                self.push(
                    Diagnostic::new(
                        Code::QcExpectedBrace,
                        format!("expected `{{` after `{cmd}`, found `{}`", t.text),
                        t.span,
                        "expected `{`",
                    )
                    .with_note(format!("usage: {}", self.usage)),
                );
                None
            }
            None => {
                self.missing("`{`");
                None
            }
        }
    }

    /// After a `{` (already consumed): the text of the block up to its matching `}`, braces
    /// included, tokens re-joined (quoted ones in quotes, line breaks kept).
    fn capture_block(&mut self, open: FileSpan) -> Option<String> {
        let mut text = String::from("{");
        let mut depth = 1usize;
        while let Some(t) = self.bump() {
            text.push(if t.line_start { '\n' } else { ' ' });
            if t.quoted {
                text.push('"');
                text.push_str(&t.text);
                text.push('"');
            } else {
                text.push_str(&t.text);
            }
            if is_open(t) {
                depth += 1;
            } else if is_close(t) {
                depth -= 1;
                if depth == 0 {
                    return Some(text);
                }
            }
        }
        self.unclosed(open);
        None
    }

    /// Skips a block whose `{` was just consumed.
    fn skip_block(&mut self, open: FileSpan) {
        let _ = self.capture_block(open);
    }

    // --- warnings -------------------------------------------------------------------------

    pub(crate) fn not_supported(&mut self, t: &QcToken, what: &str) {
        self.push(
            Diagnostic::new(
                Code::QcNotSupported,
                format!("{what} is not supported yet; ignored"),
                t.span,
                "ignored",
            )
            .with_note("mdlc reads it but does not write it into the model yet"),
        );
        self.spec.not_carried.push(sp(t.text.clone(), t));
    }

    // --- the top level --------------------------------------------------------------------

    fn run(&mut self) {
        while let Some(t) = self.bump() {
            let ok = if !t.quoted && t.text.starts_with('$') {
                self.cmd_name = t.text.clone();
                self.command(t)
            } else {
                self.bad_command(t);
                None
            };
            self.usage = "";
            match ok {
                Some(()) => {
                    // Valve's Source compiler reads the next word as the next command wherever
                    // it stands: a command after the arguments of another on its line is one
                    // (`$popd $pushd "player"`, Garry's Mod player animations)
                    let next_is_command = self.dialect == Dialect::Source
                        && self.same_line().is_some_and(|n| {
                            !n.quoted && n.text.starts_with('$') && lookup(&lower(n)).is_some()
                        });
                    if next_is_command {
                        continue;
                    }
                    self.extra_arguments(t)
                }
                None => self.skip_line(),
            }
            // A command that failed inside a line may leave a brace: skip the stray line rest.
            while let Some(n) = self.same_line() {
                if is_open(n) {
                    self.pos += 1;
                    self.skip_block(n.span);
                } else {
                    self.pos += 1;
                }
            }
        }
    }

    fn bad_command(&mut self, t: &QcToken) {
        let (msg, label) = if is_open(t) {
            (
                "bad command `{`: a block where a command is expected".to_string(),
                "no command opens this block",
            )
        } else if is_close(t) {
            (
                "bad command `}`: no block is open".to_string(),
                "closes nothing",
            )
        } else {
            (
                format!("bad command `{}`", t.text),
                "expected a `$` command here",
            )
        };
        let code = if is_close(t) {
            Code::QcUnopenedBrace
        } else {
            Code::QcBadCommand
        };
        let mut d = Diagnostic::new(code, msg, t.span, label);
        if !is_open(t) && !is_close(t) {
            let with_dollar = format!("${}", t.text.to_ascii_lowercase());
            if lookup(&with_dollar).is_some() {
                d = d.with_note(format!("help: did you mean `{with_dollar}`?"));
            } else {
                d = d.with_note("a QC line starts with a command such as `$body` or `$sequence`; is this an extra argument of the command before it?");
            }
        }
        self.push(d);
        if is_open(t) {
            self.skip_block(t.span);
        }
    }

    /// Tokens left on the line after a command read all it takes.
    fn extra_arguments(&mut self, cmd: &QcToken) {
        let Some(t) = self.same_line() else { return };
        if is_open(t) {
            // handled by the caller (a block nobody asked for)
            self.push(Diagnostic::new(
                Code::QcBadCommand,
                format!("`{}` takes no block", cmd.text),
                t.span,
                "unexpected `{`",
            ));
            return;
        }
        match self.dialect {
            Dialect::Hl1 => self.push(
                Diagnostic::new(
                    Code::QcIgnoredArgument,
                    format!("extra argument `{}` after `{}` is ignored", t.text, cmd.text),
                    t.span,
                    "ignored",
                )
                .with_note("Valve's HL1 compiler skips the rest of the line"),
            ),
            Dialect::Source => self.push(
                Diagnostic::new(
                    Code::QcExtraArgument,
                    format!("unexpected `{}` after the arguments of `{}`", t.text, cmd.text),
                    t.span,
                    "extra argument",
                )
                .with_note("Valve's Source compiler reads it as the next command and stops with \"bad command\""),
            ),
        }
    }

    fn command(&mut self, t: &'t QcToken) -> Option<()> {
        let name = lower(t);
        let Some(avail) = lookup(&name) else {
            let names: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).collect();
            let mut d = Diagnostic::new(
                Code::QcUnknownCommand,
                format!("unknown command `{}`", t.text),
                t.span,
                "not a QC command",
            );
            if let Some(s) = suggest(&name, &names) {
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
            self.push(d);
            // Skip its arguments, and a block after them, so its lines do not cascade.
            self.skip_line();
            if let Some(n) = self.peek().filter(|n| is_open(n)) {
                self.pos += 1;
                self.skip_block(n.span);
            }
            return None;
        };
        match (self.dialect, avail) {
            (Dialect::Hl1, Avail::Both | Avail::Hl1) if t.text != name => {
                self.push(
                        Diagnostic::new(
                            Code::QcCommandCase,
                            format!("`{}` is written `{name}` in Half-Life QC files", t.text),
                            t.span,
                            "not lower case",
                        )
                        .with_note("Valve's HL1 compiler compares commands case-sensitively and rejects this; mdlc accepts it"),
                    );
            }
            (Dialect::Hl1, Avail::Source | Avail::Later) => self.push(
                Diagnostic::new(
                    Code::QcOtherDialect,
                    format!("`{}` is a Source command", t.text),
                    t.span,
                    "not in the Half-Life dialect",
                )
                .with_note("Valve's HL1 compiler stops with \"bad command\"; mdlc reads it"),
            ),
            (Dialect::Source, Avail::Hl1) => self.push(
                Diagnostic::new(
                    Code::QcOtherDialect,
                    format!("`{}` is a Half-Life command", t.text),
                    t.span,
                    "not in the Source dialect",
                )
                .with_note("Valve's Source compiler stops with \"bad command\"; mdlc reads it"),
            ),
            _ => {}
        }
        self.dispatch(t, &name)
    }

    fn dispatch(&mut self, t: &'t QcToken, name: &str) -> Option<()> {
        let hl1 = self.dialect == Dialect::Hl1;
        match name {
            "$modelname" => {
                self.usage = "$modelname path";
                self.spec.name = Some(self.name("a model name")?);
            }
            "$cd" => {
                self.usage = "$cd folder";
                let d = self.arg("a folder")?;
                if let Some((_, first)) = self.cd {
                    self.push(
                        Diagnostic::new(
                            Code::QcTwoCd,
                            "two `$cd` in one model",
                            t.span,
                            "second `$cd`",
                        )
                        .with_secondary(first, "first `$cd` here")
                        .with_note("a model has one source folder; use `$pushd`/`$popd` (Source) or paths in the file names"),
                    );
                    return Some(());
                }
                let mut folder = d.text.clone();
                if let Some((rel, tail)) = reroot_cd(&self.qc_dir, &d.text) {
                    self.push(
                        Diagnostic::new(
                            Code::QcCdRerooted,
                            format!(
                                "`$cd` names `{}`, a Windows folder this machine cannot have; mdlc reads from `{rel}`, the folder whose path ends the same way (`{tail}`)",
                                d.text
                            ),
                            d.span,
                            "the author's folder",
                        )
                        .with_note("Valve's compiler reads the files from that folder of the author's machine")
                        .with_note("help: give the folder relative to the QC, or leave `$cd` out"),
                    );
                    folder = rel;
                }
                self.cd = Some((folder, t.span));
                self.pushd.clear();
            }
            "$pushd" => {
                self.usage = "$pushd folder";
                let d = self.arg("a folder")?;
                self.pushd.push(d.text.clone());
            }
            "$popd" => {
                self.pushd.pop();
            }
            "$cdtexture" => {
                self.usage = "$cdtexture folder [folder…]";
                let first = self.arg("a folder")?;
                let mut dirs = vec![first];
                while let Some(n) = self.same_line() {
                    self.pos += 1;
                    dirs.push(n);
                }
                for d in dirs {
                    let path = resolve_path(&self.qc_dir, &d.text);
                    self.spec.texture_dirs.push(sp(path, d));
                }
            }
            "$cdmaterials" => {
                self.usage = "$cdmaterials folder [folder…]";
                let first = self.arg("a folder")?;
                self.spec.material_dirs.push(sp(first.text.clone(), first));
                while let Some(n) = self.same_line() {
                    self.pos += 1;
                    self.spec.material_dirs.push(sp(n.text.clone(), n));
                }
            }
            "$scale" => {
                self.usage = "$scale factor";
                self.scale = self.num("a scale factor")?;
            }
            "$origin" => {
                self.usage = "$origin x y z [rotation]";
                self.origin = self.vec3("a coordinate")?;
                if let Some(r) = self.same_line() {
                    self.pos += 1;
                    self.rotation[2] = match self.dialect {
                        Dialect::Hl1 => hl1_rotation(self.read_f64(r, "a rotation in degrees")),
                        Dialect::Source => rad(self.read_f32(r, "a rotation in degrees") + 90.0),
                    };
                }
            }
            "$upaxis" => {
                self.usage = "$upaxis x|-x|y|-y|z|-z";
                let a = self.arg("an axis")?;
                let half = std::f32::consts::FRAC_PI_2;
                let (x, y) = match lower(a).as_str() {
                    "x" => (0.0, half),
                    "-x" => (0.0, -half),
                    "y" => (half, 0.0),
                    "-y" => (-half, 0.0),
                    "z" | "-z" => (0.0, 0.0),
                    _ => {
                        self.unknown_keyword(
                            Code::QcUnknownKeyword,
                            a,
                            "axis",
                            &["x", "-x", "y", "-y", "z", "-z"],
                            "one of x -x y -y z -z",
                        );
                        return Some(());
                    }
                };
                self.rotation[0] = x;
                self.rotation[1] = y;
            }
            "$eyeposition" => {
                self.usage = "$eyeposition x y z";
                let v = self.vec3("a coordinate")?;
                self.spec.eye_position = Some(Spanned::new(v, t.span));
            }
            "$maxeyedeflection" => {
                self.usage = "$maxeyedeflection degrees";
                let v = self.num("an angle in degrees")?;
                self.spec.max_eye_deflection = Some(Spanned::new(v, t.span));
            }
            "$illumposition" => {
                self.usage = "$illumposition x y z [bone]";
                let v = self.vec3("a coordinate")?;
                self.spec.illum_position = Some(Spanned::new(v, t.span));
                if let Some(b) = self.same_line() {
                    self.pos += 1;
                    self.not_supported(b, "the bone of `$illumposition` (a later compiler's form)");
                }
            }
            "$bbox" | "$cbox" => {
                self.usage = "$bbox minx miny minz maxx maxy maxz";
                let a = self.vec3("a coordinate")?;
                let b = self.vec3("a coordinate")?;
                let v = Some(Spanned::new([a, b], t.span));
                if name == "$bbox" {
                    self.spec.bbox = v;
                } else {
                    self.spec.cbox = v;
                }
            }
            "$flags" => {
                self.usage = "$flags number";
                let n = self.arg("a number")?;
                let v = self.read_i32(n, "a number");
                self.spec.flags = Some(sp(v, n));
            }
            "$gamma" => {
                self.usage = "$gamma value";
                let n = self.arg("a gamma value")?;
                let v = self.read_f32(n, "a gamma value");
                self.spec.gamma = Some(sp(v, n));
            }
            "$externaltextures" => {
                if hl1 {
                    self.spec.external_textures = true;
                } else {
                    self.push(Diagnostic::new(
                        Code::QcNoEffect,
                        "`$externaltextures` has no effect on Source models; ignored",
                        t.span,
                        "obsolete",
                    ));
                }
            }
            "$cliptotextures" => {} // accepted by both tools, no effect
            "$root" => {
                self.usage = "$root bone";
                self.spec.root_bone = Some(self.name("a bone name")?);
            }
            "$pivot" => {
                self.usage = "$pivot index bone";
                let i = self.arg("an index")?;
                let v = self.read_i32(i, "an index");
                let b = self.name("a bone name")?;
                self.spec.pivots.push((sp(v, i), b));
            }
            "$mirrorbone" => {
                self.usage = "$mirrorbone bone";
                let b = self.name("a bone name")?;
                self.spec.mirror_bones.push(b);
            }
            "$renamebone" => {
                self.usage = "$renamebone from to";
                let a = self.name("a bone name")?;
                let b = self.name("a bone name")?;
                self.spec.rename_bones.push((a, b));
            }
            "$renamematerial" => {
                self.usage = "$renamematerial from to";
                let a = self.name("a material name")?;
                let b = self.name("a material name")?;
                self.spec.rename_materials.push((a, b));
            }
            "$hierarchy" | "$heirarchy" => {
                self.usage = "$hierarchy child parent";
                let a = self.name("a bone name")?;
                let b = self.name("a parent bone name")?;
                self.spec.hierarchy.push((a, b));
            }
            "$insertbone" => {
                // 2006 SDK: `Cmd_InsertHierarchy` keeps child, subparent and parent, and
                // `EnforceHierarchy` only re-parents the child (the insertion is commented out)
                self.usage = "$insertbone child subparent parent";
                let child = self.name("a bone name")?;
                let sub = self.arg("the name of the bone to insert")?;
                let parent = self.name("a parent bone name")?;
                self.push(
                    Diagnostic::new(
                        Code::QcInsertBoneNotInserted,
                        format!(
                            "`$insertbone` inserts no bone `{}`: `{}` becomes a child of `{}`",
                            sub.text, child.value, parent.value
                        ),
                        sub.span,
                        "not inserted",
                    )
                    .with_note(
                        "Valve's compiler does the same: it reads the bone to insert and only re-parents the child, as `$hierarchy child parent`",
                    ),
                );
                self.spec.hierarchy.push((child, parent));
            }
            "$alwayscollapse" => {
                self.usage = "$alwayscollapse bone";
                let b = self.name("a bone name")?;
                self.spec.always_collapse.push(b);
            }
            "$collapsebones" => self.spec.collapse_bones = true,
            "$lockbonelengths" => self.spec.lock_bone_lengths = true,
            "$realignbones" => self.spec.realign_bones = true,
            "$screenalign" => {
                // 2006 SDK `Cmd_ScreenAlign`: a word other than `cylinder` (or none) is a sphere
                self.usage = "$screenalign bone [sphere|cylinder]";
                let b = self.name("a bone name")?;
                let cylinder = self
                    .same_line()
                    .filter(|t| !is_open(t) && !is_close(t))
                    .inspect(|_| self.pos += 1)
                    .is_some_and(|t| t.text.eq_ignore_ascii_case("cylinder"));
                self.spec.screen_align.push((b, cylinder));
            }
            "$forcerealign" => {
                // 2006 SDK `Cmd_ForceRealign`: the bone, a word it skips, three angles
                self.usage = "$forcerealign bone skip x y z";
                let b = self.name("a bone name")?;
                self.arg("a word (read and not used)")?;
                let v = self.vec3("an angle in degrees")?;
                self.spec.force_realign.push((b, v));
            }
            "$limitrotation" => {
                self.usage = "$limitrotation bone [sequence…]";
                let b = self.name("a bone name")?;
                let mut seqs = Vec::new();
                while let Some(t) = self.same_line() {
                    self.pos += 1;
                    seqs.push(sp(t.text.clone(), t));
                }
                self.spec.limit_rotations.push((b, seqs));
            }
            "$proceduralbones" => {
                self.usage = "$proceduralbones file";
                let f = self.arg("a procedural bones file")?;
                // read as written: Valve's compiler adds no extension
                let fr = FileRef {
                    written: f.text.clone(),
                    path: resolve_path(&self.src_base(), &f.text.replace('\\', "/")),
                    span: Loc(f.span),
                };
                self.spec.procedural_bones.push(fr);
            }
            "$jigglebone" => self.jiggle_bone(t)?,
            "$bonemerge" => {
                self.usage = "$bonemerge bone";
                let b = self.name("a bone name")?;
                self.spec.bone_merge.push(b);
            }
            "$definebone" => self.definebone(t)?,
            "$controller" => self.controller(t)?,
            "$attachment" => self.attachment(t)?,
            "$hboxset" => {
                self.usage = "$hboxset name";
                let n = self.name("a hitbox set name")?;
                self.spec.hitbox_sets.push(HitboxSet {
                    name: n,
                    boxes: Vec::new(),
                });
                self.hboxset = Some(self.spec.hitbox_sets.len() - 1);
            }
            "$hbox" => self.hbox(t)?,
            "$hgroup" => {
                self.usage = "$hgroup group bone";
                let g = self.arg("a group number")?;
                let v = self.read_i32(g, "a group number");
                let b = self.name("a bone name")?;
                self.spec.hit_groups.push((sp(v, g), b));
            }
            "$surfaceprop" => {
                self.usage = "$surfaceprop name";
                self.spec.surface_prop = Some(self.name("a surface property")?);
            }
            "$contents" => self.contents()?,
            "$staticprop" => self.spec.static_prop = true,
            "$opaque"
            | "$mostlyopaque"
            | "$noforcedfade"
            | "$ambientboost"
            | "$forcephonemecrossfade"
            | "$obsolete"
            | "$donotcastshadows"
            | "$casttextureshadows"
            | "$skipboneinbbox" => {
                let flag = name.trim_start_matches('$').to_string();
                self.spec.header_flags.push(sp(flag, t));
            }
            "$keyvalues" => {
                self.usage = "$keyvalues { … }";
                let open = self.open_brace(&t.text)?;
                let text = self.capture_block(open)?;
                self.spec.keyvalues = Some(Spanned::new(text, t.span));
            }
            "$body" => self.body(t)?,
            "$model" => self.model(t)?,
            "$bodygroup" => self.bodygroup(t)?,
            "$texturegroup" => self.texturegroup(t)?,
            "$texrendermode" => self.texrendermode()?,
            "$lod" | "$shadowlod" => self.lod(t, name == "$shadowlod")?,
            "$sequence" => {
                if hl1 {
                    self.hl1_sequence(t)?
                } else {
                    self.source_sequence(t)?
                }
            }
            "$animation" => self.animation(t)?,
            "$append" | "$continue" | "$prepend" => self.amend(t, name)?,
            "$cmdlist" => self.cmdlist(t)?,
            "$weightlist" | "$defaultweightlist" => {
                self.weightlist(t, name == "$defaultweightlist")?
            }
            "$poseparameter" => self.poseparameter()?,
            "$declaresequence" => self.declare_sequence(t)?,
            "$declareanimation" => {
                // 2006 SDK: `Cmd_DeclareAnimation` adds an animation with no source file,
                // and the animation processing (`simplify.cpp`, the copy of each
                // animation's frames) reads every animation's source: the compiler cannot
                // build such a QC. The engine merges an `$includemodel`'s animations by name,
                // the model's own first (`virtualmodel_t::AppendAnimations`; only sequences
                // have the override flag), so nothing could fill it either.
                self.usage = "$declareanimation name";
                let name = self.arg("an animation name")?;
                self.push(
                    Diagnostic::new(
                        Code::QcDeclaredAnimationIgnored,
                        format!("`$declareanimation {}` is ignored", name.text),
                        name.span,
                        "no animation is made",
                    )
                    .with_note("a declared animation has no frames: Valve's 2006 compiler cannot build it (it reads every animation's source file), and the engine would not fill it from an `$includemodel` either (an included animation of the same name maps to the model's own)")
                    .with_note("`$declaresequence` declares a sequence an `$includemodel` fills"),
                );
                // (a project imported from the QC says so in a comment, as for the commands
                // not built)
                self.spec.not_carried.push(sp(t.text.clone(), t));
            }
            "$ikchain" => self.ik_chain()?,
            "$ikautoplaylock" => self.ik_autoplay_lock()?,
            "$sequencegroup" => {
                self.usage = "$sequencegroup label";
                let l = self.name("a group label")?;
                self.spec.sequence_groups.push(l);
            }
            "$sequencegroupsize" => {
                self.usage = "$sequencegroupsize kilobytes";
                let n = self.arg("a size in kilobytes")?;
                let v = self.read_i32(n, "a size in kilobytes");
                self.spec.sequence_group_size = Some(sp(v, n));
            }
            "$skiptransition" => {
                self.usage = "$skiptransition node node [node…]";
                let mut nodes = vec![self.name("a node name")?, self.name("a node name")?];
                while let Some(n) = self.same_line() {
                    self.pos += 1;
                    nodes.push(sp(n.text.clone(), n));
                }
                self.spec.skip_transitions.push(nodes);
            }
            "$sectionframes" => {
                self.usage = "$sectionframes frames minframes";
                let a = self.int("a frame count")?;
                let b = self.int("a frame count")?;
                self.spec.section_frames = Some(Spanned::new((a, b), t.span));
            }
            "$animblocksize" => {
                self.usage = "$animblocksize size";
                let n = self.arg("a block size")?;
                let v = self.read_i32(n, "a block size");
                self.spec.anim_block_size = Some(sp(v, n));
            }
            "$bonesaveframe" => self.bonesaveframe()?,
            "$includemodel" => {
                self.usage = "$includemodel file";
                let f = self.name("a model file")?;
                self.spec.include_models.push(f);
            }
            "$collisionmodel" | "$collisionjoints" => {
                self.collision(t, name == "$collisionjoints")?
            }
            "$jointsurfaceprop" => {
                self.usage = "$jointsurfaceprop bone name";
                let bone = self.arg("a bone")?;
                let prop = self.arg("a surface property")?;
                let pair = (sp(bone.text.clone(), bone), sp(prop.text.clone(), prop));
                self.spec.joint_surface_props.push(pair);
            }
            "$collisiontext" => self.collision_text(t)?,
            _ => self.not_carried(t, name)?,
        }
        Some(())
    }

    /// Commands read but not carried: arguments consumed, warned about, listed.
    fn not_carried(&mut self, t: &'t QcToken, name: &str) -> Option<()> {
        // (required arguments, rest of line allowed, block style)
        enum Blk {
            None,
            /// Style A: `{` on the line, optional.
            A,
        }
        let (required, rest, blk, usage): (usize, bool, Blk, &'static str) = match name {
            "$autocenter"
            | "$zbrush"
            | "$lockdefinebones"
            | "$unlockdefinebones"
            | "$calctransitions"
            | "$lcaseallsequences"
            | "$collapsebonesaggressive"
            | "$centerbonesonverts" => (0, false, Blk::None, ""),
            "$minlod" => (1, false, Blk::None, "$minlod lod"),
            "$constantdirectionallight" => (1, false, Blk::None, "$constantdirectionallight value"),
            "$defaultfadein" | "$defaultfadeout" => (1, false, Blk::None, "$defaultfadein seconds"),
            "$internalname" => (1, false, Blk::None, "$internalname name"),
            // a later compiler's explicit controller UI records; mdlc makes them from the
            // controllers' names (right_/left_ pairs) as those compilers do without it
            "$flexcontrollerui" => (0, true, Blk::A, "$flexcontrollerui name { … }"),
            "$jointcontents" => (2, true, Blk::None, "$jointcontents bone flag…"),
            "$maxverts" => (1, true, Blk::None, "$maxverts limit [clamp]"),
            "$qcassert" => (1, true, Blk::None, "$qcassert condition arguments…"),
            "$boneflexdriver" => (1, true, Blk::None, "$boneflexdriver bone axis flex a b"),
            "$fakevta" => (
                1,
                false,
                Blk::A,
                "$fakevta name [{ appendvta file frame … }]",
            ),
            // `$include`, `$definemacro` and unknown later words: the rest of the line.
            _ => (0, true, Blk::None, ""),
        };
        self.usage = usage;
        for _ in 0..required {
            self.arg("an argument")?;
        }
        if rest {
            while self
                .same_line()
                .is_some_and(|n| !is_open(n) && !is_close(n))
            {
                self.pos += 1;
            }
        }
        match blk {
            Blk::None => {}
            Blk::A => {
                let mut b = StyleA::new();
                while self.item(&mut b).is_some() {}
            }
        }
        self.not_supported(t, &format!("`{}`", t.text));
        Some(())
    }

    /// `$jigglebone bone { group { property value… } … }` (VDC "$jigglebone"): the groups
    /// `is_flexible`, `is_rigid`, `has_base_spring` and `is_boing`, each a block of properties
    /// with their numbers, which may be spread over lines as in the files people ship. A word
    /// that is not a group or property of it is skipped with the numbers after it (`W0237`),
    /// so a later compiler's addition does not stop a build; a group without its block, or a
    /// property without its numbers, is an error.
    fn jiggle_bone(&mut self, t: &'t QcToken) -> Option<()> {
        use crate::project::spec::{JiggleBone, JiggleGroup, JiggleKind, JiggleProp};
        self.usage = "$jigglebone bone { is_flexible|is_rigid|has_base_spring|is_boing { property value… } … }";
        let bone = self.name("a bone name")?;
        let open = self.open_brace(&t.text)?;
        let mut groups: Vec<JiggleGroup> = Vec::new();
        loop {
            let Some(w) = self.bump() else {
                self.unclosed(open);
                return None;
            };
            if is_close(w) {
                break;
            }
            if is_open(w) {
                self.jiggle_unknown(w, "a block without a group name");
                self.skip_block(w.span);
                continue;
            }
            let Some(kind) = JiggleKind::from_word(&w.text) else {
                let words: Vec<&str> = JiggleKind::ALL.iter().map(|k| k.word()).collect();
                self.jiggle_unknown_word(w, "jiggle bone group", &words, "skipped, with its block");
                if self.peek().is_some_and(is_open) {
                    self.pos += 1;
                    self.skip_block(w.span);
                }
                continue;
            };
            let Some(gopen) = self.open_brace(&w.text) else {
                // the rest of the block is not read: no words of it are taken for groups
                self.skip_block(open);
                return None;
            };
            let mut props = Vec::new();
            loop {
                let Some(p) = self.bump() else {
                    self.unclosed(gopen);
                    return None;
                };
                if is_close(p) {
                    break;
                }
                if is_open(p) {
                    self.jiggle_unknown(p, "a block inside a group");
                    self.skip_block(p.span);
                    continue;
                }
                let Some(arity) = kind.arity(&p.text) else {
                    let words: Vec<&str> = kind.properties().iter().map(|(n, _)| *n).collect();
                    self.jiggle_unknown_word(
                        p,
                        &format!("`{}` property", kind.word()),
                        &words,
                        "skipped, with the numbers after it",
                    );
                    while self.peek().is_some_and(|n| {
                        !is_open(n) && !is_close(n) && float_prefix(&n.text).is_some()
                    }) {
                        self.pos += 1;
                    }
                    continue;
                };
                let mut values = Vec::with_capacity(arity);
                while values.len() < arity {
                    match self.peek() {
                        Some(v) if !is_open(v) && !is_close(v) => {
                            self.pos += 1;
                            values.push(self.read_f32(v, "a number"));
                        }
                        _ => break,
                    }
                }
                if values.len() < arity {
                    let last = self.last_span();
                    self.push(
                        Diagnostic::new(
                            Code::QcMissingArgument,
                            format!("`{}` takes {arity} numbers, found {}", p.text, values.len()),
                            last,
                            "expected a number after this",
                        )
                        .with_note(format!(
                            "usage: {} {}",
                            p.text,
                            if arity == 2 { "min max" } else { "value" }
                        )),
                    );
                    continue;
                }
                props.push(JiggleProp {
                    name: sp(p.text.to_ascii_lowercase(), p),
                    values,
                });
            }
            groups.push(JiggleGroup {
                kind: sp(kind, w),
                props,
            });
        }
        self.spec.jiggle_bones.push(JiggleBone::new(bone, groups));
        Some(())
    }

    fn jiggle_unknown_word(&mut self, w: &QcToken, what: &str, candidates: &[&str], label: &str) {
        let mut d = Diagnostic::new(
            Code::QcJiggleUnknown,
            format!("unknown {what} `{}`; skipped", w.text),
            w.span,
            label,
        );
        if let Some(s) = suggest(&w.text, candidates) {
            d = d.with_note(format!("help: did you mean `{s}`?"));
        }
        d = d.with_note(format!("expected one of: {}", candidates.join(", ")));
        self.push(d);
    }

    fn jiggle_unknown(&mut self, w: &QcToken, what: &str) {
        self.push(Diagnostic::new(
            Code::QcJiggleUnknown,
            format!("{what} in `$jigglebone`; skipped"),
            w.span,
            "skipped",
        ));
    }

    /// `$bonesaveframe bone [position] [rotation]`. In the 2006 SDK (`write.cpp`, the zero frames
    /// after the animation descriptions) it chooses which bones' first frame is copied into the
    /// MDL for animations demand-loaded from an `.ani` file (`$animblocksize`); without
    /// `$animblocksize` it changes no byte. An option other than `position`/`rotation` is an
    /// error there ("unknown option … on $bonesaveframe"), and here. The bone is looked up by the
    /// back end, which skips a bone it does not find, as the SDK does.
    fn bonesaveframe(&mut self) -> Option<()> {
        self.usage = "$bonesaveframe bone [position] [rotation]";
        let bone = self.name("a bone name")?;
        let (mut position, mut rotation) = (false, false);
        while let Some(o) = self.same_line() {
            if is_open(o) || is_close(o) {
                break;
            }
            self.pos += 1;
            match lower(o).as_str() {
                "position" => position = true,
                "rotation" => rotation = true,
                _ => {
                    self.unknown_keyword(
                        Code::QcUnknownOption,
                        o,
                        "`$bonesaveframe` option",
                        &["position", "rotation"],
                        "`position` or `rotation`",
                    );
                    return None;
                }
            }
        }
        self.spec.bone_save_frames.push(BoneSaveFrame {
            bone,
            position,
            rotation,
        });
        Some(())
    }

    fn definebone(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$definebone name parent x y z rx ry rz [fx fy fz frx fry frz]";
        let name = self.name("a bone name")?;
        let parent = self.arg("a parent bone name (\"\" for none)")?;
        let parent = (!parent.text.is_empty()).then(|| sp(parent.text.clone(), parent));
        let position = self.vec3("a coordinate")?;
        let rotation_deg = self.vec3("an angle in degrees")?;
        let fixup = if self.same_line().is_some() {
            Some((
                self.vec3("a coordinate")?,
                self.vec3("an angle in degrees")?,
            ))
        } else {
            None
        };
        self.spec.define_bones.push(DefineBone {
            name,
            parent,
            position,
            rotation_deg,
            fixup,
            span: Loc(t.span),
        });
        Some(())
    }

    fn controller(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$controller index|mouth bone type start end";
        let i = self.arg("a controller index")?;
        let index = if i.text.eq_ignore_ascii_case("mouth") {
            4
        } else {
            self.read_i32(i, "a controller index or `mouth`")
        };
        let bone = self.name("a bone name")?;
        let axis = self.motion("a motion type")?;
        let start = self.num("a start value")?;
        let end = self.num("an end value")?;
        self.spec.controllers.push(Controller {
            index: sp(index, i),
            bone,
            axis,
            start,
            end,
            span: Loc(t.span),
        });
        Some(())
    }

    fn attachment(&mut self, t: &QcToken) -> Option<()> {
        let hl1 = self.dialect == Dialect::Hl1;
        self.usage = if hl1 {
            "$attachment index bone x y z"
        } else {
            "$attachment name bone x y z [absolute] [rigid] [world_align] [rotate p y r] [x_and_z_axes …]"
        };
        let name = self.name(if hl1 {
            "an attachment index"
        } else {
            "an attachment name"
        })?;
        let bone = self.name("a bone name")?;
        let pos = self.vec3("a coordinate")?;
        // HL1 stores the position exactly as typed (`goldsrc.md` §4.5); Source scales it.
        let s = if hl1 { 1.0 } else { self.scale };
        let mut a = Attachment {
            name,
            bone,
            position: pos.map(|v| v * s),
            flags: Vec::new(),
            rotate_deg: None,
            x_and_z_axes: None,
            span: Loc(t.span),
        };
        if hl1 {
            // two ignored tokens are allowed
            for _ in 0..2 {
                if self.same_line().is_some() {
                    self.pos += 1;
                }
            }
        } else {
            const OPTS: &[&str] = &["absolute", "rigid", "world_align", "rotate", "x_and_z_axes"];
            while let Some(o) = self.same_line() {
                self.pos += 1;
                match lower(o).as_str() {
                    "absolute" | "rigid" | "world_align" => a.flags.push(sp(lower(o), o)),
                    "rotate" => {
                        // Valve's compiler reads up to three angles, as many as the line has
                        // (2006 SDK `studiomdl.cpp`, `Cmd_Attachment`); it leaves the missing
                        // ones undefined, mdlc makes them 0.
                        let mut angles = [0.0f32; 3];
                        let mut n = 0;
                        while n < 3 {
                            match self.same_line() {
                                Some(v) if float_prefix(&v.text).is_some() => {
                                    angles[n] = self.num("an angle in degrees")?;
                                    n += 1;
                                }
                                _ => break,
                            }
                        }
                        if n == 0 {
                            // not even one: the usual "missing argument" error
                            self.num("an angle in degrees")?;
                        }
                        if n < 3 {
                            self.push(
                                Diagnostic::new(
                                    Code::QcAttachmentFewAngles,
                                    format!(
                                        "`rotate` has {n} angle{}; the missing ones are 0",
                                        if n == 1 { "" } else { "s" }
                                    ),
                                    o.span,
                                    "expected three angles (x y z, in degrees) after this",
                                )
                                .with_note(format!(
                                    "read as `rotate {}`; Valve's compiler leaves the missing angles undefined",
                                    angles.map(|v| v.to_string()).join(" ")
                                )),
                            );
                        }
                        a.rotate_deg = Some(angles);
                    }
                    "x_and_z_axes" => {
                        let x = self.vec3("an axis component")?;
                        let z = self.vec3("an axis component")?;
                        a.x_and_z_axes = Some([x[0], x[1], x[2], z[0], z[1], z[2]]);
                    }
                    _ => {
                        self.unknown_keyword(
                            Code::QcUnknownOption,
                            o,
                            "attachment option",
                            OPTS,
                            "one of absolute rigid world_align rotate x_and_z_axes",
                        );
                        self.spec.attachments.push(a);
                        return None;
                    }
                }
            }
        }
        self.spec.attachments.push(a);
        Some(())
    }

    fn hbox(&mut self, t: &QcToken) -> Option<()> {
        let hl1 = self.dialect == Dialect::Hl1;
        self.usage = if hl1 {
            "$hbox group bone minx miny minz maxx maxy maxz"
        } else {
            "$hbox group bone minx miny minz maxx maxy maxz [name]"
        };
        let group = self.int("a hit group number")?;
        let bone = self.name("a bone name")?;
        let min = self.vec3("a coordinate")?;
        let max = self.vec3("a coordinate")?;
        let s = if hl1 { 1.0 } else { self.scale };
        let name = if hl1 {
            None
        } else {
            self.same_line().map(|n| {
                self.pos += 1;
                sp(n.text.clone(), n)
            })
        };
        let hb = Hitbox {
            group,
            bone,
            min: min.map(|v| v * s),
            max: max.map(|v| v * s),
            name,
            span: Loc(t.span),
        };
        let set = match self.hboxset {
            Some(i) => i,
            None => {
                self.spec.hitbox_sets.push(HitboxSet {
                    name: Spanned::new("default".to_string(), t.span),
                    boxes: Vec::new(),
                });
                let i = self.spec.hitbox_sets.len() - 1;
                self.hboxset = Some(i);
                i
            }
        };
        if let Some(s) = self.spec.hitbox_sets.get_mut(set) {
            s.boxes.push(hb);
        }
        Some(())
    }

    fn contents(&mut self) -> Option<()> {
        self.usage = "$contents flag [flag…]";
        const FLAGS: &[&str] = &["solid", "notsolid", "grate", "ladder", "monster"];
        let first = self.arg("a contents flag")?;
        let mut all = vec![first];
        while let Some(n) = self.same_line() {
            self.pos += 1;
            all.push(n);
        }
        for f in all {
            let l = lower(f);
            if FLAGS.contains(&l.as_str()) {
                self.spec.contents.push(sp(l, f));
            } else {
                let mut d = Diagnostic::new(
                    Code::QcIgnoredArgument,
                    format!("unknown contents flag `{}` is ignored", f.text),
                    f.span,
                    "ignored",
                )
                .with_note("expected one of solid notsolid grate ladder monster");
                if let Some(s) = suggest(&f.text, FLAGS) {
                    d = d.with_note(format!("help: did you mean `{s}`?"));
                }
                self.push(d);
            }
        }
        Some(())
    }

    // --- bodies ---------------------------------------------------------------------------

    /// A mesh file and its same-line options (`reverse`, `scale f`, Source `faces a b`,
    /// `bias b`). Stops before a `{` or `}`.
    fn body_model(&mut self, file_tok: &QcToken) -> Option<BodyModel> {
        let file = self.file_ref(file_tok, "smd");
        let mut m = BodyModel {
            name: file.written.clone(),
            file,
            reverse: false,
            scale: self.scale,
            origin_offset: match self.dialect {
                Dialect::Hl1 => self.hl1_offset,
                Dialect::Source => [0.0; 3],
            },
            flex_block: None,
            face: None,
        };
        let opts: &[&str] = match self.dialect {
            Dialect::Hl1 => &["reverse", "scale"],
            Dialect::Source => &["reverse", "scale", "faces", "bias"],
        };
        while let Some(o) = self.same_line() {
            if is_open(o) || is_close(o) {
                break;
            }
            self.pos += 1;
            let l = lower(o);
            match l.as_str() {
                "reverse" => m.reverse = true,
                "scale" => m.scale = self.num("a scale factor")?,
                "faces" if self.dialect == Dialect::Source => {
                    self.num("a face count")?;
                    self.num("a face count")?;
                }
                "bias" if self.dialect == Dialect::Source => {
                    self.num("a bias")?;
                }
                _ => {
                    let expected = format!("one of {}", opts.join(" "));
                    self.unknown_keyword(Code::QcUnknownOption, o, "body option", opts, &expected);
                    return None;
                }
            }
        }
        Some(m)
    }

    fn body(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$body name file [reverse] [scale f]";
        let name = self.name("a body part name")?;
        let f = self.arg("a mesh file")?;
        let m = self.body_model(f)?;
        self.spec.body_parts.push(BodyPart {
            name,
            options: vec![BodyOption::Model(m)],
            span: Loc(t.span),
        });
        Some(())
    }

    fn model(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$model name file [reverse] [scale f] [{ eyes, flexes, mouths }]";
        let name = self.name("a body part name")?;
        let f = self.arg("a mesh file")?;
        let mut m = self.body_model(f)?;
        // Style A: a `{` on this line (or, with a warning, the next) opens the flex block.
        let brace = match self.peek() {
            Some(b) if is_open(b) && !b.line_start => Some(b),
            Some(b) if is_open(b) => {
                self.push(
                    Diagnostic::new(
                        Code::QcBraceOnNextLine,
                        "the `{` of `$model` should be on the command's line",
                        b.span,
                        "on the next line",
                    )
                    .with_note("Valve's Source compiler ends the command at the line break and stops with \"bad command {\"; mdlc reads the block"),
                );
                Some(b)
            }
            _ => None,
        };
        if let Some(b) = brace {
            self.pos += 1;
            let start = self.pos;
            let text = self.capture_block(b.span)?;
            // the block's tokens without the closing brace
            let inner = self
                .toks
                .get(start..self.pos.saturating_sub(1))
                .unwrap_or(&[]);
            let words: Vec<Word> = inner
                .iter()
                .map(|t| Word {
                    text: t.text.clone(),
                    quoted: t.quoted,
                    line_start: t.line_start,
                    span: t.span,
                })
                .collect();
            let base = self.src_base();
            m.face = Some(face::parse(&words, &base, self.diags));
            m.flex_block = Some(Spanned::new(text, b.span));
        }
        self.spec.body_parts.push(BodyPart {
            name,
            options: vec![BodyOption::Model(m)],
            span: Loc(t.span),
        });
        Some(())
    }

    fn bodygroup(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$bodygroup name { studio file [reverse] [scale f] | blank … }";
        let name = self.name("a body group name")?;
        let open = self.open_brace(&t.text)?;
        let mut part = BodyPart {
            name,
            options: Vec::new(),
            span: Loc(t.span),
        };
        loop {
            let Some(o) = self.bump() else {
                self.unclosed(open);
                break;
            };
            if is_close(o) {
                break;
            }
            match lower(o).as_str() {
                "studio" if !o.quoted => {
                    let Some(f) = self.arg("a mesh file") else {
                        continue;
                    };
                    match self.body_model(f) {
                        Some(m) => part.options.push(BodyOption::Model(m)),
                        None => self.skip_line(),
                    }
                }
                "blank" if !o.quoted => part.options.push(BodyOption::Blank(Loc(o.span))),
                _ => {
                    self.unknown_keyword(
                        Code::QcUnknownOption,
                        o,
                        "body group option",
                        &["studio", "blank"],
                        "`studio file` or `blank`",
                    );
                    self.skip_line();
                }
            }
        }
        self.spec.body_parts.push(part);
        Some(())
    }

    fn texturegroup(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$texturegroup name { { material … } { material … } … }";
        let name = self.name("a texture group name")?;
        let open = self.open_brace(&t.text)?;
        let mut group = TextureGroup {
            name,
            skins: Vec::new(),
        };
        loop {
            let Some(o) = self.bump() else {
                self.unclosed(open);
                break;
            };
            if is_close(o) {
                break;
            }
            if !is_open(o) {
                self.push(
                    Diagnostic::new(
                        Code::QcUnknownOption,
                        format!("expected `{{` to start a skin, found `{}`", o.text),
                        o.span,
                        "outside a skin's braces",
                    )
                    .with_note("each skin is a list of materials in braces: `{ a.bmp b.bmp }`"),
                );
                continue;
            }
            let mut row = Vec::new();
            loop {
                let Some(m) = self.bump() else {
                    self.unclosed(o.span);
                    self.spec.texture_groups.push(group);
                    return None;
                };
                if is_close(m) {
                    break;
                }
                if is_open(m) {
                    // one error for the block, which is skipped to its `}` whatever it holds
                    self.push(
                        Diagnostic::new(
                            Code::QcUnknownOption,
                            "a skin cannot contain a block",
                            m.span,
                            "unexpected `{`",
                        )
                        .with_note("the block is skipped up to its `}`"),
                    );
                    let mut depth = 1usize;
                    while depth > 0 {
                        match self.bump() {
                            None => {
                                self.unclosed(m.span);
                                self.spec.texture_groups.push(group);
                                return None;
                            }
                            Some(x) if is_open(x) => depth += 1,
                            Some(x) if is_close(x) => depth -= 1,
                            Some(_) => {}
                        }
                    }
                    continue;
                }
                row.push(sp(m.text.clone(), m));
            }
            group.skins.push(row);
        }
        self.spec.texture_groups.push(group);
        Some(())
    }

    fn texrendermode(&mut self) -> Option<()> {
        self.usage = "$texrendermode texture additive|masked";
        let tex = self.name("a texture name")?;
        let mode = self.arg("a render mode")?;
        const MODES: &[&str] = &["additive", "masked", "fullbright"];
        if !MODES.contains(&lower(mode).as_str()) || mode.quoted && mode.text.is_empty() {
            self.unknown_keyword(
                Code::QcUnknownKeyword,
                mode,
                "render mode",
                MODES,
                "additive or masked (fullbright in later tools)",
            );
            return Some(());
        }
        let l = lower(mode);
        if self.dialect == Dialect::Hl1 && mode.text != l && l != "fullbright" {
            // `Cmd_SetTextureRendermode` compares with `strcmp`: `Masked` is "invalid".
            self.push(
                Diagnostic::new(
                    Code::QcKeywordCase,
                    format!("render mode `{}` is written `{l}` in Half-Life QC files", mode.text),
                    mode.span,
                    "not lower case",
                )
                .with_note("Valve's HL1 compiler compares render modes case-sensitively and stops with \"invalid rendermode at $texrendermode\"; mdlc accepts it"),
            );
        }
        self.spec.texture_render_modes.push(TextureRenderMode {
            texture: tex,
            mode: sp(lower(mode), mode),
        });
        Some(())
    }

    fn lod(&mut self, t: &QcToken, shadow: bool) -> Option<()> {
        self.usage = if shadow {
            "$shadowlod { … }"
        } else {
            "$lod distance { … }"
        };
        let distance = if shadow {
            if let Some(v) = self.same_line().filter(|v| !is_open(v)) {
                self.pos += 1;
                self.push(Diagnostic::new(
                    Code::QcIgnoredArgument,
                    format!("the value `{}` of `$shadowlod` is ignored", v.text),
                    v.span,
                    "ignored",
                ));
            }
            None
        } else {
            let d = self.arg("a switch distance")?;
            let v = self.read_f32(d, "a switch distance");
            if v < 0.0 {
                self.push(Diagnostic::new(
                    Code::QcBadValue,
                    format!("`$lod` distance {v} is negative"),
                    d.span,
                    "must be 0 or more",
                ));
            }
            Some(sp(v, d))
        };
        let open = self.open_brace(&t.text)?;
        let mut lod = Lod {
            distance,
            replace_models: Vec::new(),
            remove_models: Vec::new(),
            replace_materials: Vec::new(),
            remove_meshes: Vec::new(),
            replace_bones: Vec::new(),
            bone_tree_collapse: Vec::new(),
            facial: None,
            use_shadowlod_materials: false,
            span: Loc(t.span),
        };
        loop {
            let Some(o) = self.bump() else {
                self.unclosed(open);
                break;
            };
            if is_close(o) {
                break;
            }
            self.usage = "replacemodel from to [reverse] | removemodel name | replacebone from to | bonetreecollapse bone | replacematerial from to | removemesh material | nofacial | facial";
            if self.lod_item(o, &mut lod, shadow).is_none() {
                self.skip_line();
            }
        }
        self.spec.lods.push(lod);
        Some(())
    }

    fn lod_item(&mut self, o: &QcToken, lod: &mut Lod, shadow: bool) -> Option<()> {
        match lower(o).as_str() {
            "replacemodel" => {
                let from = self.arg("a model name")?;
                let to = self.arg("a replacement mesh file")?;
                let mut reverse = false;
                if let Some(r) = self.same_line().filter(|r| r.is("reverse")) {
                    self.pos += 1;
                    let _ = r;
                    reverse = true;
                }
                let stripped = {
                    let n = from.text.replace('\\', "/");
                    let p = Path::new(&n);
                    match (p.extension(), n.rfind('.')) {
                        (Some(_), Some(dot)) => n.get(..dot).unwrap_or(&n).to_string(),
                        _ => n.clone(),
                    }
                };
                let to_ref = self.file_ref(to, "smd");
                lod.replace_models.push(ReplaceModel {
                    from: sp(stripped, from),
                    name: to_ref.written.clone(),
                    to: to_ref,
                    reverse,
                    scale: self.scale,
                });
            }
            "removemodel" => lod.remove_models.push(self.name("a model name")?),
            "replacebone" => {
                let a = self.name("a bone name")?;
                let b = self.name("a bone name")?;
                lod.replace_bones.push((a, b));
            }
            "bonetreecollapse" => lod.bone_tree_collapse.push(self.name("a bone name")?),
            "replacematerial" => {
                let a = self.name("a material name")?;
                let b = self.name("a material name")?;
                lod.replace_materials.push((a, b));
            }
            "removemesh" => lod.remove_meshes.push(self.name("a material name")?),
            "nofacial" => lod.facial = Some(false),
            "facial" if shadow => {
                self.push(Diagnostic::new(
                    Code::QcOptionNotAllowed,
                    "`facial` is not allowed in `$shadowlod`",
                    o.span,
                    "the shadow LOD never has facial animation",
                ));
            }
            "facial" => lod.facial = Some(true),
            "use_shadowlod_materials" if shadow => lod.use_shadowlod_materials = true,
            "use_shadowlod_materials" => {
                self.push(Diagnostic::new(
                    Code::QcOptionNotAllowed,
                    "`use_shadowlod_materials` is only allowed in `$shadowlod`",
                    o.span,
                    "not in a `$shadowlod` block",
                ));
            }
            _ => {
                self.unknown_keyword(
                    Code::QcUnknownOption,
                    o,
                    "LOD option",
                    LOD_OPTIONS,
                    &format!("one of {}", LOD_OPTIONS.join(" ")),
                );
                return None;
            }
        }
        Some(())
    }

    fn collision(&mut self, t: &QcToken, joints: bool) -> Option<()> {
        self.usage = "$collisionmodel file [{ … }]";
        let f = self.arg("a collision mesh file")?;
        let mut c = Collision {
            joints,
            file: self.file_ref(f, "smd"),
            commands: Vec::new(),
            scale: self.scale,
            span: Loc(t.span),
        };
        if let Some(open) = self.peek().filter(|b| is_open(b)) {
            self.pos += 1;
            loop {
                let Some(o) = self.bump() else {
                    self.unclosed(open.span);
                    break;
                };
                if is_close(o) {
                    break;
                }
                let mut args = Vec::new();
                while let Some(a) = self.same_line().filter(|a| !is_close(a) && !is_open(a)) {
                    self.pos += 1;
                    args.push(sp(a.text.clone(), a));
                }
                let l = lower(o);
                if !COLLISION_COMMANDS.contains(&l.as_str()) {
                    let mut d = Diagnostic::new(
                        Code::QcUnknownCollisionCommand,
                        format!(
                            "unknown command `{}` in a collision block is ignored",
                            o.text
                        ),
                        o.span,
                        "not a collision command",
                    );
                    if let Some(s) = suggest(&l, COLLISION_COMMANDS) {
                        d = d.with_note(format!("help: did you mean `{s}`?"));
                    }
                    self.push(d);
                    continue;
                }
                if l == "$jointconstrain" {
                    self.check_jointconstrain(o, &args);
                }
                c.commands.push(AnimCommand {
                    keyword: sp(l, o),
                    args,
                });
            }
        }
        self.spec.collision = Some(c);
        Some(())
    }

    /// `$collisiontext { … }`: text appended to the `.phy`'s keyvalues, spaced and quoted as
    /// the 2006 SDK's `Cmd_CollisionText` does (words at the first level as written, words in
    /// nested blocks quoted, `{` joined to what follows, ` }` and a new line after each close).
    fn collision_text(&mut self, t: &QcToken) -> Option<()> {
        self.usage = "$collisiontext { … }";
        let open = self.open_brace(&t.text)?;
        let mut text = String::new();
        let mut level = 1usize;
        loop {
            let Some(w) = self.bump() else {
                self.unclosed(open);
                return None;
            };
            if is_close(w) {
                level -= 1;
                if level == 0 {
                    break;
                }
                text.push_str(" }\n");
            } else if is_open(w) {
                text.push('{');
                level += 1;
            } else if level > 1 {
                text.push('"');
                text.push_str(&w.text);
                text.push_str("\" ");
            } else {
                text.push_str(&w.text);
                text.push(' ');
            }
        }
        self.spec.collision_text.push_str(&text);
        self.collision_text_at.get_or_insert(t.span);
        Some(())
    }

    /// `$jointconstrain bone x|y|z free|fixed|limit min max [friction]`.
    fn check_jointconstrain(&mut self, o: &QcToken, args: &[Spanned<String>]) {
        let Some(axis) = args.get(1) else {
            self.push(Diagnostic::new(
                Code::QcMissingArgument,
                "missing axis after `$jointconstrain bone`",
                o.span,
                "expected `bone x|y|z free|fixed|limit min max`",
            ));
            return;
        };
        if !["x", "y", "z"].contains(&axis.value.to_ascii_lowercase().as_str()) {
            let mut d = Diagnostic::new(
                Code::QcUnknownKeyword,
                format!("unknown axis `{}`", axis.value),
                axis.span.span(),
                "not an axis",
            )
            .with_note("expected x, y or z");
            if let Some(s) = suggest(&axis.value, &["x", "y", "z"]) {
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
            self.push(d);
            return;
        }
        if let (Some(lo), Some(hi)) = (args.get(3), args.get(4)) {
            // physics numbers are read with plain atof: never an error
            let a = float_prefix(&lo.value).map_or(0.0, |v| v.0);
            let b = float_prefix(&hi.value).map_or(0.0, |v| v.0);
            if a > b {
                self.push(
                    Diagnostic::new(
                        Code::QcBadValue,
                        format!("joint limit minimum {a} is greater than the maximum {b}"),
                        lo.span.span(),
                        "minimum",
                    )
                    .with_secondary(hi.span.span(), "maximum"),
                );
            }
        }
    }

    /// `$declaresequence name`: a sequence with no animation, which a model including this
    /// one fills by name (`ir::written::DECLARED`).
    fn declare_sequence(&mut self, t: &'t QcToken) -> Option<()> {
        self.usage = "$declaresequence name";
        let name = self.arg("a sequence name")?;
        let mut seq = self.new_sequence(name, t);
        seq.flags.push(Spanned::new(
            crate::ir::written::DECLARED.to_string(),
            name.span,
        ));
        self.spec.sequences.push(seq);
        Some(())
    }

    /// `$ikchain name bone [options]`: options as the 2006 SDK's `Cmd_IKChain` reads them (a
    /// motion type and a value, `height h`, `pad p`, `floor f`, `knee x y z`, `center x y z`;
    /// other words skipped).
    fn ik_chain(&mut self) -> Option<()> {
        self.usage = "$ikchain name bone [knee x y z] [height h] [pad p] [floor f] [center x y z]";
        let name = self.name("an IK chain name")?;
        let bone = self.name("a bone name")?;
        let mut chain = crate::project::spec::IkChain::new(name.clone(), bone);
        while let Some(o) = self.same_line() {
            self.pos += 1;
            let word = lower(o);
            if self.motion_word(o).is_some() {
                self.num("a value")?;
                continue;
            }
            match word.as_str() {
                "height" => chain.height = self.num("a height")?,
                "pad" => chain.radius = self.num("a pad width")? / 2.0,
                "floor" => chain.floor = self.num("a floor height")?,
                "knee" => chain.knee = self.vec3("a knee direction component")?,
                "center" => chain.center = self.vec3("a center component")?,
                _ => {} // skipped, as Valve's compiler skips them
            }
        }
        if let Some(first) = self
            .spec
            .ik_chains
            .iter()
            .find(|c| c.name.value.eq_ignore_ascii_case(&name.value))
        {
            let d = Diagnostic::new(
                Code::QcDuplicateIkChain,
                format!("a second IK chain is named `{}`; it is ignored", name.value),
                name.span.span(),
                "name used before",
            )
            .with_secondary(first.name.span.span(), "the IK chain kept")
            .with_note("Valve's compiler keeps the first IK chain of a name, as mdlc does");
            self.push(d);
            return Some(());
        }
        self.spec.ik_chains.push(chain);
        Some(())
    }

    /// `$ikautoplaylock chain posweight localqweight`.
    fn ik_autoplay_lock(&mut self) -> Option<()> {
        self.usage = "$ikautoplaylock chain posweight localqweight";
        let chain = self.name("an IK chain name")?;
        let pos_weight = self.num("a position weight")?;
        let local_q_weight = self.num("a rotation weight")?;
        self.spec
            .ik_autoplay_locks
            .push(crate::project::spec::IkAutoplayLock {
                chain,
                pos_weight,
                local_q_weight,
            });
        Some(())
    }

    fn poseparameter(&mut self) -> Option<()> {
        self.usage = "$poseparameter name [min max] [wrap] [loop range]";
        let name = self.name("a pose parameter name")?;
        // The range is optional (Valve's compiler reads each number only if one is there):
        // without it, the range comes from the sequences that blend on the parameter.
        let range = match self.same_line() {
            Some(t) if float_prefix(&t.text).is_some() => {
                let min = self.num("a minimum")?;
                let max = self.num("a maximum")?;
                Some((min, max))
            }
            _ => None,
        };
        if range.is_none() {
            self.push(
                Diagnostic::new(
                    Code::QcPoseParameterNoRange,
                    format!("pose parameter `{}` has no range", name.value),
                    name.span.span(),
                    "no minimum and maximum after the name",
                )
                .with_note(
                    "its range is that of the sequences' blends on it, from 0 to 0 if none, as Valve's compiler makes it",
                ),
            );
        }
        let sequences = self.spec.sequences.len();
        let at = self
            .spec
            .pose_parameters
            .iter()
            .position(|p| p.name.value.eq_ignore_ascii_case(&name.value));
        let at = match at {
            // Valve's compiler finds the parameter by name and sets what the line gives.
            Some(i) => {
                self.implicit_pose.retain(|(k, _)| *k != i);
                i
            }
            None => {
                self.spec
                    .pose_parameters
                    .push(PoseParameter::new(name.clone(), 0));
                self.spec.pose_parameters.len() - 1
            }
        };
        let mut wrap = false;
        let mut loop_range = None;
        while let Some(o) = self.same_line() {
            self.pos += 1;
            match lower(o).as_str() {
                "wrap" => wrap = true,
                "loop" => loop_range = Some(self.num("a loop range")?),
                _ if float_prefix(&o.text).is_some() => {
                    // later compilers: a third number is the loop range
                    loop_range = Some(self.read_f32(o, "a loop range"));
                }
                _ => {
                    let mut d = Diagnostic::new(
                        Code::QcIgnoredArgument,
                        format!("unknown pose parameter option `{}` is ignored", o.text),
                        o.span,
                        "ignored",
                    )
                    .with_note("expected `wrap` or `loop range`");
                    if let Some(s) = suggest(&o.text, &["wrap", "loop"]) {
                        d = d.with_note(format!("help: did you mean `{s}`?"));
                    }
                    self.push(d);
                }
            }
        }
        if let Some(p) = self.spec.pose_parameters.get_mut(at) {
            if let Some((min, max)) = range {
                p.min = min;
                p.max = max;
                p.widened_from = sequences;
            }
            p.wrap |= wrap;
            if loop_range.is_some() {
                p.loop_range = loop_range;
            }
        }
        Some(())
    }

    fn weightlist(&mut self, t: &QcToken, default: bool) -> Option<()> {
        self.usage = if default {
            "$defaultweightlist bone weight [posweight p] …"
        } else {
            "$weightlist name bone weight [posweight p] …"
        };
        let name = if default {
            Spanned::new("default".to_string(), t.span)
        } else {
            self.name("a weight list name")?
        };
        if let Some(prev) = self
            .spec
            .weight_lists
            .iter()
            .find(|w| w.name.value.eq_ignore_ascii_case(&name.value))
        {
            let prev = prev.name.span.span();
            self.push(
                Diagnostic::new(
                    Code::QcDuplicateWeightList,
                    format!("weight list `{}` is defined twice", name.value),
                    name.span.span(),
                    "second definition",
                )
                .with_secondary(prev, "first defined here")
                .with_note("both are kept; a lookup by name finds the first (Valve's 2006 compiler stops here, later ones accept it: Valve's own male_06 QC does it)"),
            );
        }
        let mut list = WeightList {
            name,
            weights: Vec::new(),
        };
        let mut b = StyleA::new();
        while let Some(o) = self.item(&mut b) {
            if o.is("posweight") {
                let Some(p) = self.num("a position weight") else {
                    self.skip_line();
                    continue;
                };
                match list.weights.last_mut() {
                    Some(w) => {
                        if p > 0.0 && w.weight == 0.0 {
                            self.push(Diagnostic::new(
                                Code::QcBadValue,
                                format!(
                                    "position weight {p} for bone `{}` whose weight is 0",
                                    w.bone.value
                                ),
                                o.span,
                                "position weight without rotation weight",
                            ));
                        }
                        w.pos_weight = Some(p);
                    }
                    None => self.push(Diagnostic::new(
                        Code::QcMissingArgument,
                        "`posweight` before any bone",
                        o.span,
                        "expected `bone weight` first",
                    )),
                }
                continue;
            }
            let Some(w) = self.num("a weight") else {
                self.skip_line();
                continue;
            };
            list.weights.push(BoneWeight {
                bone: sp(o.text.clone(), o),
                weight: w,
                pos_weight: None,
            });
        }
        self.spec.weight_lists.push(list);
        Some(())
    }
}
