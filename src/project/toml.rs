//! The TOML project format (`model.toml`): reads it into a [`ProjectSpec`].
//!
//! The document is parsed by the `toml` crate into a [`DeTable`] that keeps the byte range of
//! every key and value, then walked by hand: each table checks its keys against the list it
//! allows (an unknown key is reported with the nearest known one), each value is converted with
//! its expected type, and missing required keys are reported at the table's header. Nothing
//! stops at the first problem: one run reports every problem of the file. The format is
//! documented key by key in `docs/project-format.md`; [`super::write`] writes it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Sources, Span};
use crate::project::face::{self, FaceSpec};
use crate::project::spec::{
    resolve_path, Activity, AnimCommand, Animation, Attachment, Blend, BodyModel, BodyOption,
    BodyPart, BoneSaveFrame, BoneWeight, Collision, Controller, DefineBone, Event, FileRef, Hitbox,
    HitboxSet, JiggleBone, JiggleGroup, JiggleKind, JiggleProp, Loc, Lod, PoseParameter,
    ProjectSpec, ReplaceModel, Sequence, Spanned, TargetChoice, TextureGroup, TextureRenderMode,
    Transition, WeightList, DEFAULT_FPS, DEFAULT_ROTATION,
};
use crate::project::Target;
use crate::suggest::suggest;

type V<'i> = toml::Spanned<DeValue<'i>>;

/// Keys of each table (also the candidates of "did you mean").
const ROOT_KEYS: &[&str] = &[
    "model",
    "skeleton",
    "sequence_settings",
    "texture_group",
    "body",
    "lod",
    "define_bone",
    "controller",
    "attachment",
    "hitbox_set",
    "animation",
    "sequence",
    "pose_parameter",
    "weight_list",
    "ik_chain",
    "ik_autoplay_lock",
    "jiggle_bone",
    "collision",
];
const JIGGLE_KEYS: &[&str] = &[
    "bone",
    "is_flexible",
    "is_rigid",
    "has_base_spring",
    "is_boing",
];
const IK_CHAIN_KEYS: &[&str] = &["name", "bone", "knee", "height", "pad", "floor", "center"];
const IK_LOCK_KEYS: &[&str] = &["chain", "pos_weight", "local_q_weight"];
const MODEL_KEYS: &[&str] = &[
    "name",
    "target",
    "materials",
    "textures",
    "texture_render_modes",
    "rename_materials",
    "gamma",
    "external_textures",
    "surfaceprop",
    "contents",
    "static_prop",
    "eye_position",
    "illum_position",
    "max_eye_deflection",
    "bbox",
    "cbox",
    "flags",
    "header_flags",
    "keyvalues",
    "include_models",
];
const SKELETON_KEYS: &[&str] = &[
    "root",
    "hierarchy",
    "surfaceprops",
    "rename_bones",
    "mirror_bones",
    "always_collapse",
    "collapse_bones",
    "bone_merge",
    "pivots",
    "hit_groups",
    "procedural_bones",
    "limit_rotation",
    "lock_bone_lengths",
    "realign_bones",
    "force_realign",
    "screen_align",
];
const SCREEN_ALIGN_KEYS: &[&str] = &["bone", "mode"];
const FORCE_REALIGN_KEYS: &[&str] = &["bone", "rotation"];
const LIMIT_ROTATION_KEYS: &[&str] = &["bone", "sequences"];
const SEQ_SETTINGS_KEYS: &[&str] = &[
    "groups",
    "group_size_kb",
    "skip_transitions",
    "section_frames",
    "anim_block_size",
    "bone_save_frames",
];
const BONE_SAVE_FRAME_KEYS: &[&str] = &["bone", "position", "rotation"];
const BODY_KEYS: &[&str] = &["name", "options"];
const BODY_OPTION_KEYS: &[&str] = &[
    "file",
    "name",
    "reverse",
    "scale",
    "origin_offset",
    "flex",
    "flex_dir",
];
const LOD_KEYS: &[&str] = &[
    "distance",
    "shadow",
    "replace_models",
    "remove_models",
    "replace_materials",
    "remove_meshes",
    "replace_bones",
    "bone_tree_collapse",
    "facial",
    "use_shadowlod_materials",
];
const REPLACE_MODEL_KEYS: &[&str] = &["from", "to", "name", "reverse", "scale"];
const PAIR_KEYS: &[&str] = &["from", "to"];
const DEFINE_BONE_KEYS: &[&str] = &["name", "parent", "position", "rotation", "fixup"];
const FIXUP_KEYS: &[&str] = &["position", "rotation"];
const CONTROLLER_KEYS: &[&str] = &["index", "bone", "axis", "start", "end"];
const ATTACHMENT_KEYS: &[&str] = &[
    "name",
    "bone",
    "position",
    "flags",
    "rotate",
    "x_and_z_axes",
];
const HITBOX_SET_KEYS: &[&str] = &["name", "boxes"];
const HITBOX_KEYS: &[&str] = &["group", "bone", "min", "max", "name"];
const TEXTURE_GROUP_KEYS: &[&str] = &["name", "skins"];
const RENDER_MODE_KEYS: &[&str] = &["texture", "mode"];
const HIERARCHY_KEYS: &[&str] = &["bone", "parent"];
const JOINT_SURFACEPROP_KEYS: &[&str] = &["bone", "surfaceprop"];
const PIVOT_KEYS: &[&str] = &["index", "bone"];
const HIT_GROUP_KEYS: &[&str] = &["group", "bone"];
const SECTION_FRAMES_KEYS: &[&str] = &["frames", "min_frames"];
/// Keys of an animation, in `[[animation]]` and (with `animation_flags` for `flags`) in a
/// `[[sequence]]` that names a `file`.
const ANIM_KEYS: &[&str] = &[
    "name",
    "file",
    "fps",
    "loop",
    "frames",
    "origin",
    "rotation",
    "scale",
    "motion",
    "start_loop",
    "flags",
    "commands",
];
/// Keys of `[[sequence]]` that belong to the animation its `file` implies.
const SEQ_ANIM_KEYS: &[&str] = &[
    "fps",
    "loop",
    "frames",
    "origin",
    "rotation",
    "scale",
    "motion",
    "start_loop",
    "animation_flags",
    "commands",
];
const SEQ_OWN_KEYS: &[&str] = &[
    "name",
    "file",
    "animations",
    "blend_width",
    "blends",
    "activity",
    "activity_weight",
    "events",
    "pivots",
    "node",
    "transition",
    "fade_in",
    "fade_out",
    "exit_phase",
    "flags",
    "extras",
    "group",
];
const BLEND_KEYS: &[&str] = &["param", "min", "max"];
const EVENT_KEYS: &[&str] = &["frame", "event", "options"];
const TRANSITION_KEYS: &[&str] = &["entry", "exit", "reversible"];
const POSE_KEYS: &[&str] = &["name", "min", "max", "wrap", "loop", "widened_from"];
const WEIGHT_LIST_KEYS: &[&str] = &["name", "weights"];
const BONE_WEIGHT_KEYS: &[&str] = &["bone", "weight", "pos_weight"];
const COLLISION_KEYS: &[&str] = &["file", "joints", "commands", "text", "scale"];

/// Reads a model.toml (already in `sources` as `file`); paths are relative to the TOML's folder.
///
/// Returns `None` when any error was reported (every problem of the file is reported first).
/// The target is `forced_target` when given, else `model.target`, else Source
/// ([`TargetChoice::Default`]).
pub fn parse_toml(
    path: &Path,
    file: FileId,
    sources: &Sources,
    forced_target: Option<Target>,
    diags: &mut Vec<Diagnostic>,
) -> Option<ProjectSpec> {
    let text = sources.text(file);
    let root = match DeTable::parse(text) {
        Ok(t) => t,
        Err(e) => {
            let range = e.span().unwrap_or(0..0);
            let range = clamp(range, text.len());
            let message = e.message().trim().trim_end_matches('.').to_string();
            let first = message.lines().next().unwrap_or("").to_string();
            let mut d = Diagnostic::new(
                Code::TomlSyntax,
                format!("invalid TOML: {first}"),
                at(file, range),
                "here",
            );
            for extra in message.lines().skip(1).filter(|l| !l.trim().is_empty()) {
                d = d.with_note(extra.trim().to_string());
            }
            diags.push(d);
            return None;
        }
    };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut cx = Cx {
        file,
        dir,
        text: text.to_string(),
        diags: Vec::new(),
    };
    let spec = read_root(&mut cx, root.get_ref(), path, forced_target);
    let mut found = cx.diags;
    found.sort_by_key(|d| d.primary().map(|p| (p.span.start, p.span.end)));
    let errors = found.iter().filter(|d| d.is_error()).count();
    diags.extend(found);
    if errors > 0 {
        None
    } else {
        Some(spec)
    }
}

fn clamp(r: Range<usize>, len: usize) -> Range<usize> {
    let start = r.start.min(len);
    start..r.end.clamp(start, len)
}

fn at(file: FileId, r: Range<usize>) -> FileSpan {
    Span::new(r.start as u32, r.end as u32).in_file(file)
}

struct Cx {
    file: FileId,
    dir: PathBuf,
    /// The TOML text (spans of the words of a `flex` string are found in it).
    text: String,
    diags: Vec<Diagnostic>,
}

impl Cx {
    /// Reads a body option's `flex` string as a `$model` block. The words' spans point into
    /// the TOML file when the string is written without escapes (a `'''…'''` literal or a
    /// plain `"""…"""` string); otherwise each points at the whole string.
    fn face(&mut self, f: &Spanned<String>, base: &Path) -> FaceSpec {
        let span = f.span.0;
        let raw = self.text.get(span.span.range()).unwrap_or("");
        let open = ["'''", "\"\"\"", "'", "\""]
            .iter()
            .find(|d| raw.starts_with(**d))
            .map_or(0, |d| d.len());
        // a newline right after a multi-line string's opening delimiter is not part of it
        let skip = if open == 3 && raw.get(open..).is_some_and(|r| r.starts_with('\n')) {
            1
        } else {
            0
        };
        let inner_start = open + skip;
        let exact = raw
            .get(inner_start..)
            .is_some_and(|r| r.starts_with(f.value.as_str()));
        let start = span.span.start.saturating_add(inner_start as u32);
        let inner = Span::new(start, span.span.end).in_file(span.file);
        let words = face::words(&f.value, if exact { inner } else { span }, exact);
        face::parse(&words, base, &mut self.diags)
    }

    fn at(&self, r: Range<usize>) -> FileSpan {
        at(self.file, r)
    }

    fn spanned<T>(&self, value: T, r: Range<usize>) -> Spanned<T> {
        Spanned::new(value, self.at(r))
    }

    fn loc(&self, r: Range<usize>) -> Loc {
        Loc(self.at(r))
    }

    fn wrong_type(&mut self, v: &V<'_>, what: &str, expected: &str) {
        let found = article(v.get_ref().type_str());
        self.diags.push(Diagnostic::new(
            Code::TomlWrongType,
            format!("{what} must be {expected}, found {found}"),
            self.at(v.span()),
            format!("expected {expected}"),
        ));
    }

    fn out_of_range(&mut self, v: &V<'_>, message: String, note: &str) {
        self.diags.push(
            Diagnostic::new(
                Code::TomlNumberOutOfRange,
                message,
                self.at(v.span()),
                "out of range",
            )
            .with_note(note.to_string()),
        );
    }
}

fn article(ty: &str) -> String {
    match ty {
        "integer" => "an integer".into(),
        "array" => "an array".into(),
        other => format!("a {other}"),
    }
}

/// A table being read: its keys were checked against the allowed list when it was opened.
struct Table<'t, 'i> {
    map: &'t DeTable<'i>,
    header: Range<usize>,
    /// How messages name the table: `[model]`, `[[body]]`, `an option of \`options\``.
    what: String,
}

impl<'t, 'i> Table<'t, 'i> {
    fn open(
        cx: &mut Cx,
        map: &'t DeTable<'i>,
        header: Range<usize>,
        what: &str,
        allowed: &[&str],
    ) -> Self {
        for (k, _) in map.iter() {
            let key: &str = k.get_ref();
            if allowed.contains(&key) {
                continue;
            }
            let place = if what == TOP_LEVEL {
                format!("at {what}")
            } else {
                format!("in {what}")
            };
            let mut d = Diagnostic::new(
                Code::TomlUnknownKey,
                format!("unknown key `{key}` {place}"),
                cx.at(k.span()),
                "unknown key",
            );
            if let Some(s) = suggest(key, allowed) {
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
            d = d.with_note(format!("expected one of: {}", list_keys(allowed)));
            cx.diags.push(d);
        }
        Table {
            map,
            header,
            what: what.to_string(),
        }
    }

    fn get(&self, key: &str) -> Option<&'t V<'i>> {
        self.map.get(key)
    }

    fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some()
    }

    /// An optional key, converted by `f` (which reports a wrong value and returns `None`).
    fn opt<T>(
        &self,
        cx: &mut Cx,
        key: &str,
        f: impl FnOnce(&mut Cx, &V<'i>, &str) -> Option<T>,
    ) -> Option<T> {
        let v = self.get(key)?;
        f(cx, v, &format!("`{key}`"))
    }

    /// A required key: missing, it is reported at the table's header.
    fn req<T>(
        &self,
        cx: &mut Cx,
        key: &str,
        f: impl FnOnce(&mut Cx, &V<'i>, &str) -> Option<T>,
    ) -> Option<T> {
        match self.get(key) {
            Some(v) => f(cx, v, &format!("`{key}`")),
            None => {
                cx.diags.push(Diagnostic::new(
                    Code::TomlMissingKey,
                    format!("missing key `{key}` in {}", self.what),
                    cx.at(self.header.clone()),
                    format!("this table has no `{key}`"),
                ));
                None
            }
        }
    }

    fn flag(&self, cx: &mut Cx, key: &str) -> bool {
        self.opt(cx, key, boolean).unwrap_or(false)
    }
}

const TOP_LEVEL: &str = "the top level";

fn list_keys(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

// --- value conversions ---------------------------------------------------------------------

fn string(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Spanned<String>> {
    match v.get_ref().as_str() {
        Some(s) => Some(cx.spanned(s.to_string(), v.span())),
        None => {
            cx.wrong_type(v, what, "a string");
            None
        }
    }
}

fn plain_string(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<String> {
    string(cx, v, what).map(|s| s.value)
}

fn boolean(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<bool> {
    match v.get_ref().as_bool() {
        Some(b) => Some(b),
        None => {
            cx.wrong_type(v, what, "a boolean (`true` or `false`)");
            None
        }
    }
}

/// The value of an integer as `i64`, `None` when it does not fit.
fn int_value(v: &DeValue<'_>) -> Option<Option<i64>> {
    let i = v.as_integer()?;
    Some(i64::from_str_radix(i.as_str(), i.radix()).ok())
}

fn int32(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<i32> {
    match int_value(v.get_ref()) {
        Some(Some(n)) => match i32::try_from(n) {
            Ok(n) => Some(n),
            Err(_) => {
                cx.out_of_range(
                    v,
                    format!("{what} is out of range"),
                    "expected an integer from -2147483648 to 2147483647",
                );
                None
            }
        },
        Some(None) => {
            cx.out_of_range(
                v,
                format!("{what} is out of range"),
                "expected an integer from -2147483648 to 2147483647",
            );
            None
        }
        None => {
            cx.wrong_type(v, what, "an integer");
            None
        }
    }
}

/// A number (float or integer) as `f64`, read from its text; `None` after reporting.
fn number_f64(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<f64> {
    let n = match v.get_ref() {
        DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
        DeValue::Integer(_) => int_value(v.get_ref()).flatten().map(|n| n as f64),
        _ => {
            cx.wrong_type(v, what, "a number");
            return None;
        }
    };
    match n {
        Some(n) if n.is_finite() => Some(n),
        _ => {
            cx.out_of_range(
                v,
                format!("{what} must be a finite number"),
                "`inf` and `nan` are not allowed",
            );
            None
        }
    }
}

/// A number as `f32`, rounded once from its decimal text (so the writer's shortest `f32`
/// digits read back exactly).
fn number(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<f32> {
    let n64 = number_f64(cx, v, what)?;
    let n = match v.get_ref() {
        DeValue::Float(f) => f.as_str().parse::<f32>().unwrap_or(f32::INFINITY),
        _ => n64 as f32,
    };
    if n.is_finite() {
        Some(n)
    } else {
        cx.out_of_range(
            v,
            format!("{what} is too large"),
            "expected a number that fits a 32-bit float (up to about 3.4e38)",
        );
        None
    }
}

/// An angle in degrees, converted to radians (through `f64`, see `docs/project-format.md`).
fn degrees_to_radians(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<f32> {
    let d = number_f64(cx, v, what)?;
    let r = deg_to_rad(d);
    if r.is_finite() {
        Some(r)
    } else {
        cx.out_of_range(
            v,
            format!("{what} is too large"),
            "expected an angle in degrees",
        );
        None
    }
}

/// Degrees to radians as the project format defines it: in `f64`, rounded once to `f32`.
pub fn deg_to_rad(d: f64) -> f32 {
    d.to_radians() as f32
}

/// A `[[jiggle_bone]]`'s group of `kind` (`is_flexible = { length = 20, … }`), if it has one:
/// a number per property, `[min, max]` for a range, `true` for `allow_length_flex`.
fn jiggle_group(cx: &mut Cx, t: &Table<'_, '_>, kind: JiggleKind) -> Option<JiggleGroup> {
    let gv = t.get(kind.word())?;
    let what = format!("`{}`", kind.word());
    let names: Vec<&str> = kind.properties().iter().map(|p| p.0).collect();
    let g = table(cx, gv, &what, &what, &names)?;
    let mut props = Vec::new();
    for &(name, arity) in kind.properties() {
        let Some(pv) = g.get(name) else {
            continue;
        };
        let what = format!("`{name}`");
        // each property is checked, whether or not one before it was wrong
        let values = match arity {
            0 => match boolean(cx, pv, &what) {
                Some(true) => Vec::new(),
                _ => continue,
            },
            1 => match number(cx, pv, &what) {
                Some(x) => vec![x],
                None => continue,
            },
            _ => match fixed::<f32, 2>(cx, pv, &what, number) {
                Some(x) => x.to_vec(),
                None => continue,
            },
        };
        props.push(JiggleProp {
            name: cx.spanned(name.to_string(), pv.span()),
            values,
        });
    }
    Some(JiggleGroup {
        kind: cx.spanned(kind, gv.span()),
        props,
    })
}

/// An array, each element converted by `f`. Every element is checked; `None` if any failed.
fn array<'i, T>(
    cx: &mut Cx,
    v: &V<'i>,
    what: &str,
    mut f: impl FnMut(&mut Cx, &V<'i>, &str) -> Option<T>,
) -> Option<Vec<T>> {
    let Some(a) = v.get_ref().as_array() else {
        cx.wrong_type(v, what, "an array");
        return None;
    };
    let elem = format!("an element of {what}");
    let mut out = Vec::new();
    let mut ok = true;
    for e in a.iter() {
        match f(cx, e, &elem) {
            Some(x) => out.push(x),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// An array of exactly `N` elements.
fn fixed<'i, T: Copy + Default, const N: usize>(
    cx: &mut Cx,
    v: &V<'i>,
    what: &str,
    f: impl FnMut(&mut Cx, &V<'i>, &str) -> Option<T>,
) -> Option<[T; N]> {
    let items = array(cx, v, what, f);
    let len = v.get_ref().as_array().map_or(0, |a| a.len());
    if v.get_ref().is_array() && len != N {
        cx.diags.push(
            Diagnostic::new(
                Code::TomlWrongLength,
                format!("{what} must have {N} elements, found {len}"),
                cx.at(v.span()),
                format!("expected {N} elements"),
            )
            .with_note(fixed_note(N)),
        );
        return None;
    }
    let items = items?;
    let mut out = [T::default(); N];
    for (o, i) in out.iter_mut().zip(items) {
        *o = i;
    }
    Some(out)
}

fn fixed_note(n: usize) -> String {
    match n {
        2 => "expected `[a, b]`".into(),
        3 => "expected `[x, y, z]`".into(),
        _ => format!("expected an array of {n} numbers"),
    }
}

fn vec3(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<[f32; 3]> {
    fixed::<f32, 3>(cx, v, what, number)
}

fn vec3_deg(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<[f32; 3]> {
    fixed::<f32, 3>(cx, v, what, degrees_to_radians)
}

fn strings(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Vec<Spanned<String>>> {
    array(cx, v, what, string)
}

/// An inline table (or a `[table]`), opened with its allowed keys.
fn table<'t, 'i>(
    cx: &mut Cx,
    v: &'t V<'i>,
    what: &str,
    name: &str,
    allowed: &[&str],
) -> Option<Table<'t, 'i>> {
    match v.get_ref().as_table() {
        Some(map) => Some(Table::open(cx, map, v.span(), name, allowed)),
        None => {
            cx.wrong_type(v, what, "a table");
            None
        }
    }
}

/// The tables of an array of tables (`[[body]]`): each with its header span.
fn tables<'t, 'i>(cx: &mut Cx, v: &'t V<'i>, key: &str, allowed: &[&str]) -> Vec<Table<'t, 'i>> {
    let what = format!("`{key}`");
    let Some(a) = v.get_ref().as_array() else {
        cx.diags.push(
            Diagnostic::new(
                Code::TomlWrongType,
                format!(
                    "{what} must be an array of tables, found {}",
                    article(v.get_ref().type_str())
                ),
                cx.at(v.span()),
                "expected an array of tables",
            )
            .with_note(format!("write each item under its own `[[{key}]]` header")),
        );
        return Vec::new();
    };
    let name = format!("`[[{key}]]`");
    let mut out = Vec::new();
    for e in a.iter() {
        if let Some(t) = table(cx, e, &format!("an element of {what}"), &name, allowed) {
            out.push(t);
        }
    }
    out
}

/// An array of `{ <keys[0]> = "a", <keys[1]> = "b" }` tables, both keys required.
fn keyed_pairs(
    cx: &mut Cx,
    v: &V<'_>,
    what: &str,
    keys: &[&str],
) -> Option<Vec<(Spanned<String>, Spanned<String>)>> {
    array(cx, v, what, |cx, v, w| {
        let t = table(cx, v, w, w, keys)?;
        let a = t.req(cx, keys[0], string);
        let b = t.req(cx, keys[1], string);
        Some((a?, b?))
    })
}

/// `[{ from = "a", to = "b" }, …]`.
fn pairs(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Vec<(Spanned<String>, Spanned<String>)>> {
    keyed_pairs(cx, v, what, PAIR_KEYS)
}

/// `["keyword", "arg", …]`: an order-dependent command kept as written.
fn command(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<AnimCommand> {
    let words = strings(cx, v, what)?;
    let mut it = words.into_iter();
    match it.next() {
        Some(keyword) => Some(AnimCommand {
            keyword,
            args: it.collect(),
        }),
        None => {
            cx.diags.push(
                Diagnostic::new(
                    Code::TomlWrongLength,
                    format!("{what} is empty"),
                    cx.at(v.span()),
                    "expected a keyword",
                )
                .with_note("a command is written `[\"keyword\", \"argument\", …]`"),
            );
            None
        }
    }
}

fn commands(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Vec<AnimCommand>> {
    array(cx, v, what, command)
}

impl Cx {
    fn file_ref(&mut self, v: &V<'_>, what: &str) -> Option<FileRef> {
        let s = string(self, v, what)?;
        Some(FileRef {
            path: resolve_path(&self.dir, &s.value),
            written: s.value,
            span: s.span,
        })
    }

    fn dir_ref(&mut self, v: &V<'_>, what: &str) -> Option<Spanned<PathBuf>> {
        let s = string(self, v, what)?;
        Some(Spanned {
            value: resolve_path(&self.dir, &s.value),
            span: s.span,
        })
    }
}

fn file_ref(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<FileRef> {
    cx.file_ref(v, what)
}

// --- the document ----------------------------------------------------------------------------

fn read_root(cx: &mut Cx, root: &DeTable<'_>, path: &Path, forced: Option<Target>) -> ProjectSpec {
    let root = Table::open(cx, root, 0..0, TOP_LEVEL, ROOT_KEYS);
    let mut spec = ProjectSpec::new(path.to_path_buf(), TargetChoice::Default(Target::Source));

    let model = root
        .get("model")
        .and_then(|v| table(cx, v, "`model`", "`[model]`", MODEL_KEYS));
    let mut target_span = 0..0;
    let mut written_target = None;
    if let Some(m) = &model {
        if let Some(v) = m.get("target") {
            target_span = v.span();
            written_target = target(cx, v);
        }
        read_model(cx, m, &mut spec);
    }
    spec.target = match (forced, written_target) {
        (Some(t), _) | (None, Some(t)) => TargetChoice::Given(cx.spanned(t, target_span)),
        (None, None) => TargetChoice::Default(Target::Source),
    };

    if let Some(t) = root
        .get("skeleton")
        .and_then(|v| table(cx, v, "`skeleton`", "`[skeleton]`", SKELETON_KEYS))
    {
        read_skeleton(cx, &t, &mut spec);
    }
    if let Some(t) = root.get("sequence_settings").and_then(|v| {
        table(
            cx,
            v,
            "`sequence_settings`",
            "`[sequence_settings]`",
            SEQ_SETTINGS_KEYS,
        )
    }) {
        read_sequence_settings(cx, &t, &mut spec);
    }
    if let Some(v) = root.get("texture_group") {
        for t in tables(cx, v, "texture_group", TEXTURE_GROUP_KEYS) {
            let name = t.req(cx, "name", string);
            let skins = t.req(cx, "skins", |cx, v, w| array(cx, v, w, strings));
            if let (Some(name), Some(skins)) = (name, skins) {
                spec.texture_groups.push(TextureGroup { name, skins });
            }
        }
    }
    if let Some(v) = root.get("body") {
        for t in tables(cx, v, "body", BODY_KEYS) {
            if let Some(b) = read_body(cx, &t) {
                spec.body_parts.push(b);
            }
        }
    }
    if let Some(v) = root.get("lod") {
        for t in tables(cx, v, "lod", LOD_KEYS) {
            if let Some(l) = read_lod(cx, &t) {
                spec.lods.push(l);
            }
        }
    }
    if let Some(v) = root.get("define_bone") {
        for t in tables(cx, v, "define_bone", DEFINE_BONE_KEYS) {
            if let Some(b) = read_define_bone(cx, &t) {
                spec.define_bones.push(b);
            }
        }
    }
    if let Some(v) = root.get("controller") {
        for t in tables(cx, v, "controller", CONTROLLER_KEYS) {
            let index = t.req(cx, "index", |cx, v, w| {
                int32(cx, v, w).map(|n| cx.spanned(n, v.span()))
            });
            let bone = t.req(cx, "bone", string);
            let axis = t.req(cx, "axis", string);
            let start = t.req(cx, "start", number);
            let end = t.req(cx, "end", number);
            if let (Some(index), Some(bone), Some(axis), Some(start), Some(end)) =
                (index, bone, axis, start, end)
            {
                spec.controllers.push(Controller {
                    index,
                    bone,
                    axis,
                    start,
                    end,
                    span: cx.loc(t.header.clone()),
                });
            }
        }
    }
    if let Some(v) = root.get("attachment") {
        for t in tables(cx, v, "attachment", ATTACHMENT_KEYS) {
            let name = t.req(cx, "name", string);
            let bone = t.req(cx, "bone", string);
            let position = t.opt(cx, "position", vec3).unwrap_or([0.0; 3]);
            let flags = t.opt(cx, "flags", strings).unwrap_or_default();
            let rotate_deg = t.opt(cx, "rotate", vec3);
            let x_and_z_axes = t.opt(cx, "x_and_z_axes", |cx, v, w| {
                fixed::<f32, 6>(cx, v, w, number)
            });
            if let (Some(name), Some(bone)) = (name, bone) {
                spec.attachments.push(Attachment {
                    name,
                    bone,
                    position,
                    flags,
                    rotate_deg,
                    x_and_z_axes,
                    span: cx.loc(t.header.clone()),
                });
            }
        }
    }
    if let Some(v) = root.get("hitbox_set") {
        for t in tables(cx, v, "hitbox_set", HITBOX_SET_KEYS) {
            let name = t
                .opt(cx, "name", string)
                .unwrap_or_else(|| cx.spanned("default".to_string(), t.header.clone()));
            let boxes = t.req(cx, "boxes", |cx, v, w| array(cx, v, w, hitbox));
            if let Some(boxes) = boxes {
                spec.hitbox_sets.push(HitboxSet { name, boxes });
            }
        }
    }
    read_animations_and_sequences(cx, &root, &mut spec);
    if let Some(v) = root.get("pose_parameter") {
        for t in tables(cx, v, "pose_parameter", POSE_KEYS) {
            let name = t.req(cx, "name", string);
            let min = t.req(cx, "min", number);
            let max = t.req(cx, "max", number);
            let wrap = t.flag(cx, "wrap");
            let loop_range = t.opt(cx, "loop", number);
            let widened_from = t.opt(cx, "widened_from", int32).unwrap_or(0);
            if let (Some(name), Some(min), Some(max)) = (name, min, max) {
                spec.pose_parameters.push(PoseParameter {
                    name,
                    min,
                    max,
                    wrap,
                    loop_range,
                    widened_from: usize::try_from(widened_from).unwrap_or(0),
                });
            }
        }
    }
    if let Some(v) = root.get("weight_list") {
        for t in tables(cx, v, "weight_list", WEIGHT_LIST_KEYS) {
            let name = t.req(cx, "name", string);
            let weights = t.req(cx, "weights", |cx, v, w| array(cx, v, w, bone_weight));
            if let (Some(name), Some(weights)) = (name, weights) {
                spec.weight_lists.push(WeightList { name, weights });
            }
        }
    }
    if let Some(v) = root.get("ik_chain") {
        for t in tables(cx, v, "ik_chain", IK_CHAIN_KEYS) {
            let name = t.req(cx, "name", string);
            let bone = t.req(cx, "bone", string);
            let knee = t.opt(cx, "knee", vec3);
            let height = t.opt(cx, "height", number);
            let pad = t.opt(cx, "pad", number);
            let floor = t.opt(cx, "floor", number);
            let center = t.opt(cx, "center", vec3);
            if let (Some(name), Some(bone)) = (name, bone) {
                let mut c = crate::project::spec::IkChain::new(name, bone);
                c.knee = knee.unwrap_or(c.knee);
                c.height = height.unwrap_or(c.height);
                c.radius = pad.map_or(c.radius, |p| p / 2.0);
                c.floor = floor.unwrap_or(c.floor);
                c.center = center.unwrap_or(c.center);
                spec.ik_chains.push(c);
            }
        }
    }
    if let Some(v) = root.get("jiggle_bone") {
        for t in tables(cx, v, "jiggle_bone", JIGGLE_KEYS) {
            let bone = t.req(cx, "bone", string);
            let groups = JiggleKind::ALL
                .into_iter()
                .filter_map(|kind| jiggle_group(cx, &t, kind))
                .collect();
            if let Some(bone) = bone {
                spec.jiggle_bones.push(JiggleBone::new(bone, groups));
            }
        }
    }
    if let Some(v) = root.get("ik_autoplay_lock") {
        for t in tables(cx, v, "ik_autoplay_lock", IK_LOCK_KEYS) {
            let chain = t.req(cx, "chain", string);
            let pos_weight = t.req(cx, "pos_weight", number);
            let local_q_weight = t.req(cx, "local_q_weight", number);
            if let (Some(chain), Some(pos_weight), Some(local_q_weight)) =
                (chain, pos_weight, local_q_weight)
            {
                spec.ik_autoplay_locks
                    .push(crate::project::spec::IkAutoplayLock {
                        chain,
                        pos_weight,
                        local_q_weight,
                    });
            }
        }
    }
    if let Some(t) = root
        .get("collision")
        .and_then(|v| table(cx, v, "`collision`", "`[collision]`", COLLISION_KEYS))
    {
        let file = t.req(cx, "file", file_ref);
        let joints = t.flag(cx, "joints");
        let cmds = t.opt(cx, "commands", commands).unwrap_or_default();
        if let Some(text) = t.opt(cx, "text", string) {
            spec.collision_text = text.value;
        }
        let scale = t.opt(cx, "scale", number).unwrap_or(1.0);
        if let Some(file) = file {
            spec.collision = Some(Collision {
                joints,
                file,
                commands: cmds,
                scale,
                span: cx.loc(t.header.clone()),
            });
        }
    }
    spec
}

fn target(cx: &mut Cx, v: &V<'_>) -> Option<Target> {
    let s = string(cx, v, "`target`")?;
    match s.value.as_str() {
        "goldsrc" => Some(Target::GoldSrc),
        "source" => Some(Target::Source),
        other => {
            let mut d = Diagnostic::new(
                Code::TomlUnknownValue,
                format!("unknown target `{other}`"),
                cx.at(v.span()),
                "not a target",
            );
            if let Some(s) = suggest(other, &["goldsrc", "source"]) {
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
            cx.diags.push(d.with_note(
                "expected `\"goldsrc\"` (Half-Life 1, MDL v10) or `\"source\"` (MDL v48)",
            ));
            None
        }
    }
}

fn read_model(cx: &mut Cx, m: &Table<'_, '_>, spec: &mut ProjectSpec) {
    spec.name = m.opt(cx, "name", string);
    spec.material_dirs = m.opt(cx, "materials", strings).unwrap_or_default();
    spec.texture_dirs = m
        .opt(cx, "textures", |cx, v, w| {
            array(cx, v, w, |cx, v, w| cx.dir_ref(v, w))
        })
        .unwrap_or_default();
    spec.texture_render_modes = m
        .opt(cx, "texture_render_modes", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                let t = table(cx, v, w, w, RENDER_MODE_KEYS)?;
                let texture = t.req(cx, "texture", string);
                let mode = t.req(cx, "mode", string);
                Some(TextureRenderMode {
                    texture: texture?,
                    mode: mode?,
                })
            })
        })
        .unwrap_or_default();
    spec.rename_materials = m.opt(cx, "rename_materials", pairs).unwrap_or_default();
    spec.gamma = m.opt(cx, "gamma", |cx, v, w| {
        number(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    spec.external_textures = m.flag(cx, "external_textures");
    spec.surface_prop = m.opt(cx, "surfaceprop", string);
    spec.contents = m.opt(cx, "contents", strings).unwrap_or_default();
    spec.static_prop = m.flag(cx, "static_prop");
    spec.eye_position = m.opt(cx, "eye_position", |cx, v, w| {
        vec3(cx, v, w).map(|p| cx.spanned(p, v.span()))
    });
    spec.illum_position = m.opt(cx, "illum_position", |cx, v, w| {
        vec3(cx, v, w).map(|p| cx.spanned(p, v.span()))
    });
    spec.max_eye_deflection = m.opt(cx, "max_eye_deflection", |cx, v, w| {
        number(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    spec.bbox = m.opt(cx, "bbox", bounds);
    spec.cbox = m.opt(cx, "cbox", bounds);
    spec.flags = m.opt(cx, "flags", |cx, v, w| {
        int32(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    spec.header_flags = m.opt(cx, "header_flags", strings).unwrap_or_default();
    spec.keyvalues = m.opt(cx, "keyvalues", string);
    spec.include_models = m.opt(cx, "include_models", strings).unwrap_or_default();
}

/// `[[min x, y, z], [max x, y, z]]`.
fn bounds(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Spanned<[[f32; 3]; 2]>> {
    fixed::<[f32; 3], 2>(cx, v, what, vec3).map(|b| cx.spanned(b, v.span()))
}

fn read_skeleton(cx: &mut Cx, t: &Table<'_, '_>, spec: &mut ProjectSpec) {
    spec.root_bone = t.opt(cx, "root", string);
    spec.hierarchy = t
        .opt(cx, "hierarchy", |cx, v, w| {
            keyed_pairs(cx, v, w, HIERARCHY_KEYS)
        })
        .unwrap_or_default();
    spec.joint_surface_props = t
        .opt(cx, "surfaceprops", |cx, v, w| {
            keyed_pairs(cx, v, w, JOINT_SURFACEPROP_KEYS)
        })
        .unwrap_or_default();
    spec.rename_bones = t.opt(cx, "rename_bones", pairs).unwrap_or_default();
    spec.mirror_bones = t.opt(cx, "mirror_bones", strings).unwrap_or_default();
    spec.always_collapse = t.opt(cx, "always_collapse", strings).unwrap_or_default();
    spec.collapse_bones = t.flag(cx, "collapse_bones");
    spec.lock_bone_lengths = t.flag(cx, "lock_bone_lengths");
    spec.realign_bones = t.flag(cx, "realign_bones");
    spec.screen_align = t
        .opt(cx, "screen_align", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                let t = table(cx, v, w, w, SCREEN_ALIGN_KEYS)?;
                let bone = t.req(cx, "bone", string);
                let cylinder = match t.opt(cx, "mode", string) {
                    None => Some(false),
                    Some(m) if m.value == "sphere" => Some(false),
                    Some(m) if m.value == "cylinder" => Some(true),
                    Some(m) => {
                        cx.diags.push(
                            Diagnostic::new(
                                Code::TomlUnknownValue,
                                format!("unknown screen alignment `{}`", m.value),
                                m.span.span(),
                                "not a mode",
                            )
                            .with_note("expected `\"sphere\"` or `\"cylinder\"`"),
                        );
                        None
                    }
                };
                Some((bone?, cylinder?))
            })
        })
        .unwrap_or_default();
    spec.force_realign = t
        .opt(cx, "force_realign", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                let t = table(cx, v, w, w, FORCE_REALIGN_KEYS)?;
                let bone = t.req(cx, "bone", string);
                let rot = t.req(cx, "rotation", vec3);
                Some((bone?, rot?))
            })
        })
        .unwrap_or_default();
    spec.bone_merge = t.opt(cx, "bone_merge", strings).unwrap_or_default();
    spec.limit_rotations = t
        .opt(cx, "limit_rotation", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                let t = table(cx, v, w, w, LIMIT_ROTATION_KEYS)?;
                let bone = t.req(cx, "bone", string);
                let seqs = t.opt(cx, "sequences", strings).unwrap_or_default();
                Some((bone?, seqs))
            })
        })
        .unwrap_or_default();
    spec.procedural_bones = t
        .opt(cx, "procedural_bones", |cx, v, w| array(cx, v, w, file_ref))
        .unwrap_or_default();
    spec.pivots = t
        .opt(cx, "pivots", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                index_bone(cx, v, w, PIVOT_KEYS, "index")
            })
        })
        .unwrap_or_default();
    spec.hit_groups = t
        .opt(cx, "hit_groups", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                index_bone(cx, v, w, HIT_GROUP_KEYS, "group")
            })
        })
        .unwrap_or_default();
}

/// `{ index = 0, bone = "b" }` / `{ group = 1, bone = "b" }`.
fn index_bone(
    cx: &mut Cx,
    v: &V<'_>,
    what: &str,
    keys: &[&str],
    index_key: &str,
) -> Option<(Spanned<i32>, Spanned<String>)> {
    let t = table(cx, v, what, what, keys)?;
    let index = t.req(cx, index_key, |cx, v, w| {
        int32(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    let bone = t.req(cx, "bone", string);
    Some((index?, bone?))
}

fn read_sequence_settings(cx: &mut Cx, t: &Table<'_, '_>, spec: &mut ProjectSpec) {
    spec.sequence_groups = t.opt(cx, "groups", strings).unwrap_or_default();
    spec.sequence_group_size = t.opt(cx, "group_size_kb", |cx, v, w| {
        int32(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    spec.skip_transitions = t
        .opt(cx, "skip_transitions", |cx, v, w| array(cx, v, w, strings))
        .unwrap_or_default();
    spec.section_frames = t.opt(cx, "section_frames", |cx, v, w| {
        let s = table(cx, v, w, w, SECTION_FRAMES_KEYS)?;
        let frames = s.req(cx, "frames", int32);
        let min = s.req(cx, "min_frames", int32);
        Some(cx.spanned((frames?, min?), v.span()))
    });
    spec.anim_block_size = t.opt(cx, "anim_block_size", |cx, v, w| {
        int32(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    spec.bone_save_frames = t
        .opt(cx, "bone_save_frames", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                let t = table(cx, v, w, w, BONE_SAVE_FRAME_KEYS)?;
                let bone = t.req(cx, "bone", string);
                let position = t.opt(cx, "position", boolean).unwrap_or(false);
                let rotation = t.opt(cx, "rotation", boolean).unwrap_or(false);
                Some(BoneSaveFrame {
                    bone: bone?,
                    position,
                    rotation,
                })
            })
        })
        .unwrap_or_default();
}

fn read_body(cx: &mut Cx, t: &Table<'_, '_>) -> Option<BodyPart> {
    let name = t.req(cx, "name", string);
    let options = t.req(cx, "options", |cx, v, w| array(cx, v, w, body_option));
    Some(BodyPart {
        name: name?,
        options: options?,
        span: cx.loc(t.header.clone()),
    })
}

fn body_option(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<BodyOption> {
    match v.get_ref() {
        DeValue::String(s) if s.as_ref() == "blank" => Some(BodyOption::Blank(cx.loc(v.span()))),
        DeValue::String(_) => cx.file_ref(v, what).map(|file| {
            BodyOption::Model(BodyModel {
                name: file.written.clone(),
                file,
                reverse: false,
                scale: 1.0,
                origin_offset: [0.0; 3],
                flex_block: None,
                face: None,
            })
        }),
        DeValue::Table(_) => {
            let t = table(cx, v, what, "a body option", BODY_OPTION_KEYS)?;
            let file = t.req(cx, "file", file_ref);
            let reverse = t.flag(cx, "reverse");
            let scale = t.opt(cx, "scale", number).unwrap_or(1.0);
            let origin_offset = t.opt(cx, "origin_offset", vec3).unwrap_or([0.0; 3]);
            let flex_block = t.opt(cx, "flex", string);
            let flex_dir = t.opt(cx, "flex_dir", string);
            let face = flex_block.as_ref().map(|f| {
                let base = match &flex_dir {
                    Some(d) => resolve_path(&cx.dir, &d.value),
                    None => cx.dir.clone(),
                };
                cx.face(f, &base)
            });
            let name = t.opt(cx, "name", string);
            let file = file?;
            Some(BodyOption::Model(BodyModel {
                name: name.map_or_else(|| file.written.clone(), |n| n.value),
                file,
                reverse,
                scale,
                origin_offset,
                flex_block,
                face,
            }))
        }
        _ => {
            cx.wrong_type(v, what, "a file name, `\"blank\"` or a table");
            None
        }
    }
}

fn read_lod(cx: &mut Cx, t: &Table<'_, '_>) -> Option<Lod> {
    let shadow = t.flag(cx, "shadow");
    let distance = t.opt(cx, "distance", |cx, v, w| {
        number(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    let mut ok = true;
    match (shadow, t.get("distance")) {
        (true, Some(d)) => {
            cx.diags.push(
                Diagnostic::new(
                    Code::TomlConflictingKeys,
                    "a shadow LOD has no `distance`".to_string(),
                    cx.at(d.span()),
                    "not allowed with `shadow = true`",
                )
                .with_note("the shadow LOD (`$shadowlod`) is used for shadows at every distance"),
            );
            ok = false;
        }
        (false, None) => {
            cx.diags.push(
                Diagnostic::new(
                    Code::TomlMissingKey,
                    "missing key `distance` in `[[lod]]`".to_string(),
                    cx.at(t.header.clone()),
                    "this table has no `distance`",
                )
                .with_note(
                    "a LOD needs its switch distance, or `shadow = true` for the shadow LOD",
                ),
            );
            ok = false;
        }
        _ => {}
    }
    let replace_models = t
        .opt(cx, "replace_models", |cx, v, w| {
            array(cx, v, w, replace_model)
        })
        .unwrap_or_default();
    let remove_models = t.opt(cx, "remove_models", strings).unwrap_or_default();
    let replace_materials = t.opt(cx, "replace_materials", pairs).unwrap_or_default();
    let remove_meshes = t.opt(cx, "remove_meshes", strings).unwrap_or_default();
    let replace_bones = t.opt(cx, "replace_bones", pairs).unwrap_or_default();
    let bone_tree_collapse = t.opt(cx, "bone_tree_collapse", strings).unwrap_or_default();
    let facial = t.opt(cx, "facial", boolean);
    let use_shadowlod_materials = t.flag(cx, "use_shadowlod_materials");
    ok.then(|| Lod {
        distance,
        replace_models,
        remove_models,
        replace_materials,
        remove_meshes,
        replace_bones,
        bone_tree_collapse,
        facial,
        use_shadowlod_materials,
        span: cx.loc(t.header.clone()),
    })
}

fn replace_model(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<ReplaceModel> {
    let t = table(cx, v, what, what, REPLACE_MODEL_KEYS)?;
    let from = t.req(cx, "from", string);
    let to = t.req(cx, "to", file_ref);
    let reverse = t.flag(cx, "reverse");
    let scale = t.opt(cx, "scale", number).unwrap_or(1.0);
    let name = t.opt(cx, "name", string);
    let to = to?;
    Some(ReplaceModel {
        from: from?,
        name: name.map_or_else(|| to.written.clone(), |n| n.value),
        to,
        reverse,
        scale,
    })
}

fn read_define_bone(cx: &mut Cx, t: &Table<'_, '_>) -> Option<DefineBone> {
    let name = t.req(cx, "name", string);
    let parent = t.opt(cx, "parent", string).filter(|p| !p.value.is_empty());
    let position = t.opt(cx, "position", vec3).unwrap_or([0.0; 3]);
    let rotation_deg = t.opt(cx, "rotation", vec3).unwrap_or([0.0; 3]);
    let fixup = t.opt(cx, "fixup", |cx, v, w| {
        let f = table(cx, v, w, "`fixup`", FIXUP_KEYS)?;
        let p = f.opt(cx, "position", vec3).unwrap_or([0.0; 3]);
        let r = f.opt(cx, "rotation", vec3).unwrap_or([0.0; 3]);
        Some((p, r))
    });
    Some(DefineBone {
        name: name?,
        parent,
        position,
        rotation_deg,
        fixup,
        span: cx.loc(t.header.clone()),
    })
}

fn hitbox(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Hitbox> {
    let t = table(cx, v, what, "a hit box", HITBOX_KEYS)?;
    let group = t.opt(cx, "group", int32).unwrap_or(0);
    let bone = t.req(cx, "bone", string);
    let min = t.req(cx, "min", vec3);
    let max = t.req(cx, "max", vec3);
    let name = t.opt(cx, "name", string);
    Some(Hitbox {
        group,
        bone: bone?,
        min: min?,
        max: max?,
        name,
        span: cx.loc(v.span()),
    })
}

fn bone_weight(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<BoneWeight> {
    let t = table(cx, v, what, what, BONE_WEIGHT_KEYS)?;
    let bone = t.req(cx, "bone", string);
    let weight = t.req(cx, "weight", number);
    let pos_weight = t.opt(cx, "pos_weight", number);
    Some(BoneWeight {
        bone: bone?,
        weight: weight?,
        pos_weight,
    })
}

/// The animation keys shared by `[[animation]]` and a `[[sequence]]` with `file`.
fn read_animation_body(
    cx: &mut Cx,
    t: &Table<'_, '_>,
    name: Spanned<String>,
    file: FileRef,
    flags_key: &str,
) -> Animation {
    let fps = t.opt(cx, "fps", number).unwrap_or(DEFAULT_FPS);
    let looping = t.flag(cx, "loop");
    let frames = t.opt(cx, "frames", |cx, v, w| fixed::<i32, 2>(cx, v, w, int32));
    let origin = t.opt(cx, "origin", vec3).unwrap_or([0.0; 3]);
    let rotation = t.opt(cx, "rotation", vec3_deg).unwrap_or(DEFAULT_ROTATION);
    let scale = t.opt(cx, "scale", number).unwrap_or(1.0);
    let motion = t.opt(cx, "motion", strings).unwrap_or_default();
    let start_loop = t.opt(cx, "start_loop", int32);
    let flags = t.opt(cx, flags_key, strings).unwrap_or_default();
    let cmds = t.opt(cx, "commands", commands).unwrap_or_default();
    Animation {
        name,
        file,
        fps,
        looping,
        frames: frames.map(|[a, b]| (a, b)),
        origin,
        rotation,
        scale,
        motion,
        start_loop,
        flags,
        commands: cmds,
        span: cx.loc(t.header.clone()),
    }
}

fn read_animations_and_sequences(cx: &mut Cx, root: &Table<'_, '_>, spec: &mut ProjectSpec) {
    // Animations in the order they are written: `[[animation]]` tables and the animations that
    // `[[sequence]]` tables with `file` imply, by the position of their headers.
    let mut anims: Vec<(usize, Animation)> = Vec::new();
    if let Some(v) = root.get("animation") {
        for t in tables(cx, v, "animation", ANIM_KEYS) {
            let name = t.req(cx, "name", string);
            let file = t.req(cx, "file", file_ref);
            if let (Some(name), Some(file)) = (name, file) {
                let a = read_animation_body(cx, &t, name, file, "flags");
                anims.push((t.header.start, a));
            } else {
                // still check the other keys
                let dummy = cx.spanned(String::new(), t.header.clone());
                let f = FileRef {
                    written: String::new(),
                    path: PathBuf::new(),
                    span: dummy.span,
                };
                let _ = read_animation_body(cx, &t, dummy, f, "flags");
            }
        }
    }
    if let Some(v) = root.get("sequence") {
        let mut keys: Vec<&str> = SEQ_OWN_KEYS.to_vec();
        keys.extend_from_slice(SEQ_ANIM_KEYS);
        for t in tables(cx, v, "sequence", &keys) {
            if let Some((seq, implied)) = read_sequence(cx, &t) {
                if let Some(a) = implied {
                    anims.push((t.header.start, a));
                }
                spec.sequences.push(seq);
            }
        }
    }
    anims.sort_by_key(|(pos, _)| *pos);
    spec.animations = anims.into_iter().map(|(_, a)| a).collect();
}

fn read_sequence(cx: &mut Cx, t: &Table<'_, '_>) -> Option<(Sequence, Option<Animation>)> {
    let name = t.req(cx, "name", string);
    let file = t.opt(cx, "file", file_ref);
    let animations = t.opt(cx, "animations", strings);
    let mut ok = true;
    match (t.get("file"), t.get("animations")) {
        (Some(f), Some(_)) => {
            cx.diags.push(
                Diagnostic::new(
                    Code::TomlConflictingKeys,
                    "a sequence has either `file` or `animations`, not both".to_string(),
                    cx.at(f.span()),
                    "`file` here",
                )
                .with_note("`file = \"x.smd\"` is short for an animation `@<sequence name>` made from that file; list it in `animations` instead, or declare it with `[[animation]]`"),
            );
            ok = false;
        }
        (None, None) => {
            cx.diags.push(
                Diagnostic::new(
                    Code::TomlMissingKey,
                    "missing key `file` or `animations` in `[[sequence]]`".to_string(),
                    cx.at(t.header.clone()),
                    "this sequence plays nothing",
                )
                .with_note("give the animation file (`file = \"idle.smd\"`) or the names of `[[animation]]`s (`animations = [\"idle\"]`)"),
            );
            ok = false;
        }
        (None, Some(_)) => {
            // animation keys need `file`
            for (k, _) in t.map.iter() {
                let key: &str = k.get_ref();
                if SEQ_ANIM_KEYS.contains(&key) {
                    cx.diags.push(
                        Diagnostic::new(
                            Code::TomlConflictingKeys,
                            format!("`{key}` belongs to the animation of a sequence with `file`"),
                            cx.at(k.span()),
                            "not allowed with `animations`",
                        )
                        .with_note(format!(
                            "set `{}` on the `[[animation]]` this sequence plays{}",
                            if key == "animation_flags" {
                                "flags"
                            } else {
                                key
                            },
                            if key == "loop" {
                                ", or add `\"loop\"` to the sequence's `flags`"
                            } else {
                                ""
                            }
                        )),
                    );
                    ok = false;
                }
            }
        }
        (Some(_), None) => {}
    }
    let blend_width = t.opt(cx, "blend_width", |cx, v, w| {
        int32(cx, v, w).map(|n| cx.spanned(n, v.span()))
    });
    let blends = t
        .opt(cx, "blends", |cx, v, w| {
            array(cx, v, w, |cx, v, w| {
                let b = table(cx, v, w, "a blend", BLEND_KEYS)?;
                let param = b.req(cx, "param", string);
                let min = b.req(cx, "min", number);
                let max = b.req(cx, "max", number);
                Some(Blend {
                    param: param?,
                    min: min?,
                    max: max?,
                })
            })
        })
        .unwrap_or_default();
    let activity_name = t.opt(cx, "activity", string);
    let activity_weight = t.opt(cx, "activity_weight", int32);
    if let (None, Some(v)) = (&activity_name, t.get("activity_weight")) {
        if !t.has("activity") {
            cx.diags.push(Diagnostic::new(
                Code::TomlConflictingKeys,
                "`activity_weight` without `activity`".to_string(),
                cx.at(v.span()),
                "needs `activity`",
            ));
            ok = false;
        }
    }
    let events = t
        .opt(cx, "events", |cx, v, w| array(cx, v, w, event))
        .unwrap_or_default();
    let pivots = t
        .opt(cx, "pivots", |cx, v, w| {
            array(cx, v, w, |cx, v, w| fixed::<i32, 3>(cx, v, w, int32))
        })
        .unwrap_or_default();
    let node = t.opt(cx, "node", string);
    let transition = t.opt(cx, "transition", |cx, v, w| {
        let tr = table(cx, v, w, "`transition`", TRANSITION_KEYS)?;
        let entry = tr.req(cx, "entry", string);
        let exit = tr.req(cx, "exit", string);
        let reversible = tr.flag(cx, "reversible");
        Some(Transition {
            entry: entry?,
            exit: exit?,
            reversible,
        })
    });
    let fade_in = t.opt(cx, "fade_in", number);
    let fade_out = t.opt(cx, "fade_out", number);
    let exit_phase = t.opt(cx, "exit_phase", number);
    let flags = t.opt(cx, "flags", strings).unwrap_or_default();
    let extras = t.opt(cx, "extras", commands).unwrap_or_default();
    let group = t.opt(cx, "group", int32).unwrap_or(0);

    let (animations, implied) = match (file, animations) {
        (Some(file), None) => {
            let anim_name = Spanned {
                value: format!("@{}", name.as_ref().map_or("", |n| n.value.as_str())),
                span: name.as_ref().map_or(cx.loc(t.header.clone()), |n| n.span),
            };
            let a = read_animation_body(cx, t, anim_name.clone(), file, "animation_flags");
            (vec![anim_name], Some(a))
        }
        (None, Some(list)) => (list, None),
        _ => return None,
    };
    let name = name?;
    if !ok {
        return None;
    }
    Some((
        Sequence {
            name,
            animations,
            blend_width,
            blends,
            activity: activity_name.map(|name| Activity {
                name,
                weight: activity_weight.unwrap_or(1),
            }),
            events,
            pivots,
            node,
            transition,
            fade_in,
            fade_out,
            exit_phase,
            flags,
            extras,
            group,
            span: cx.loc(t.header.clone()),
        },
        implied,
    ))
}

fn event(cx: &mut Cx, v: &V<'_>, what: &str) -> Option<Event> {
    let t = table(cx, v, what, "an event", EVENT_KEYS)?;
    let frame = t.req(cx, "frame", int32);
    let id = t.req(cx, "event", |cx, v, w| match v.get_ref() {
        DeValue::String(s) => Some(cx.spanned(s.to_string(), v.span())),
        DeValue::Integer(_) => int_value(v.get_ref())
            .flatten()
            .map(|n| cx.spanned(n.to_string(), v.span()))
            .or_else(|| {
                cx.out_of_range(
                    v,
                    format!("{w} is out of range"),
                    "expected an event number",
                );
                None
            }),
        _ => {
            cx.wrong_type(v, w, "an event number or name");
            None
        }
    });
    let options = t.opt(cx, "options", plain_string);
    Some(Event {
        id: id?,
        frame: frame?,
        options,
    })
}
