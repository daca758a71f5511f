//! IR model → [`GsModel`]: header values, bone controllers and attachments, then the
//! [`geometry`](super::geometry) and [`animation`](super::animation) stages, then the limits of
//! `goldsrc.md` §5 and the name lengths, each reported as a diagnostic with a span (mdlc never
//! writes a file that overflows a field or an engine array).

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Sources, Spanned};
use crate::ir::model::{BodyOption, Model};

use super::animation::build_animation;
use super::geometry::build_geometry;
use super::model::{GsAttachment, GsController, GsModel, GsSeqGroup};

/// The model name as Valve's `StripExtension` (`cmdlib.c`) leaves it before `WriteFile`
/// appends `.mdl` and stores it in the header (`goldsrc.md` §2): scanning back from the end,
/// everything from the first `.` found is cut, unless a `/` comes first. Only `/` stops the
/// scan, also in Valve's Windows build, so in `..\models\foo` (no extension) the cut is at
/// the `.` of `..`; a name without a `.` after its first byte is kept whole.
pub fn valve_strip_extension(name: &str) -> &str {
    let b = name.as_bytes();
    let mut i = b.len().saturating_sub(1);
    while i > 0 && b.get(i) != Some(&b'.') {
        i -= 1;
        if b.get(i) == Some(&b'/') {
            return name;
        }
    }
    if i > 0 {
        name.get(..i).unwrap_or(name)
    } else {
        name
    }
}

/// `$modelname` with its extension removed (only a last `.xxx` after the last folder
/// separator, `/` or `\`), where mdlc writes the files (`goldsrc.md` §2); it differs from
/// [`valve_strip_extension`] only where a `.` stands in a folder name after a `\`.
pub fn output_base(modelname: &str) -> String {
    let sep = modelname.rfind(['/', '\\']).map_or(0, |i| i + 1);
    match modelname[sep..].rfind('.') {
        Some(dot) => modelname[..sep + dot].to_string(),
        None => modelname.to_string(),
    }
}

/// The GoldSrc limits compile enforces (`goldsrc.md` §5, and the array sizes of Valve's
/// `studiomdl.h`): Valve's tool checks some of them and overflows its arrays (or the engine's)
/// on the others. Vertices, normals, meshes per model and texture size are checked by
/// `geometry`; events, pivots and animation size by `animation`.
pub mod limits {
    /// Bones: Valve's tool refuses 128 or more.
    pub const MAX_BONES: usize = 127;
    /// Triangles per model, over all its textures (MAXSTUDIOTRIANGLES: `s_model_t.trimesh[]`,
    /// indexed by every triangle the SMD gives).
    pub const MAX_TRIANGLES: usize = 20000;
    /// Bones in the `nodes` of one SMD; also `$attachment`, `$hbox` and `$controller` commands
    /// (MAXSTUDIOSRCBONES: the size of Valve's tool's `node`, `attachment`, `hitbox` and
    /// `bonecontroller` arrays).
    pub const MAX_SRC_BONES: usize = 512;
    /// Animations over all sequences, one per blend (MAXSTUDIOANIMATIONS: `panimation[]`).
    pub const MAX_ANIMATIONS: usize = 2048;
    /// `$texturegroup` commands, skin rows of one group, textures in one row (Valve's tool's
    /// `texturegroup[32][32][32]`).
    pub const MAX_TEXTURE_GROUP: usize = 32;
    /// Sequences (MAXSTUDIOSEQUENCES).
    pub const MAX_SEQUENCES: usize = 2048;
    /// Textures (MAXSTUDIOSKINS).
    pub const MAX_TEXTURES: usize = 100;
    /// Models over all body parts (MAXSTUDIOMODELS).
    pub const MAX_MODELS: usize = 32;
    /// Body parts (MAXSTUDIOBODYPARTS).
    pub const MAX_BODYPARTS: usize = 32;
    /// Blends per sequence (MAXSTUDIOGROUPS).
    pub const MAX_BLENDS: usize = 16;
    /// Frames per sequence (MAXSTUDIOANIMATIONS).
    pub const MAX_FRAMES: usize = 2048;
    /// Skin families.
    pub const MAX_SKIN_FAMILIES: usize = 256;
    /// Transition nodes.
    pub const MAX_NODES: usize = 100;
    /// Sequence groups the engine client loads.
    pub const MAX_SEQ_GROUPS: usize = 16;
}

/// Where to point a diagnostic about the model as a whole.
fn model_span(model: &Model) -> Option<FileSpan> {
    model
        .name
        .as_ref()
        .map(|n| n.span.span())
        .or_else(|| model.body_parts.first().map(|b| b.span))
        .or_else(|| model.sequences.first().map(|s| s.span))
}

fn at(
    model: &Model,
    span: Option<FileSpan>,
    code: Code,
    message: String,
    label: &str,
) -> Diagnostic {
    match span.or_else(|| model_span(model)) {
        Some(s) => Diagnostic::new(code, message, s, label),
        None => Diagnostic::about_file(code, message, "the model"),
    }
}

/// Cuts `s` to at most `n` bytes, at a character boundary.
fn cut(s: &str, n: usize) -> String {
    let mut end = s.len().min(n);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The motion type bit of a controller axis (`goldsrc.md` §4.4, §5), or `None` for a type
/// Valve's writer rejects.
fn controller_type(axis: &str) -> Option<i32> {
    crate::ir::written::motion_bit(axis).filter(|&b| b <= 0x20)
}

/// The warnings about a model's name (`goldsrc.md` §3): without `$modelname`, the model is named
/// after the project file (`default_name`, the file name of `project`) as Valve's tool names it
/// after the QC path it is given; with one, where Valve's `StripExtension` would cut it
/// elsewhere than mdlc's output path does.
pub fn name_warnings(
    model: &Model,
    default_name: Option<&str>,
    project: &str,
    diags: &mut Vec<Diagnostic>,
) {
    match &model.name {
        Some(n) => header_name_differs(n, diags),
        None => {
            let name = default_name.unwrap_or("model");
            let header = format!("{}.mdl", valve_strip_extension(name));
            let message =
                format!("no `$modelname` in `{name}`: the model is named `{header}` after it");
            let d = Diagnostic::about_file(Code::GsNoModelName, message, project)
            .with_note("Valve's HL1 compiler names a model without `$modelname` after the QC path it is given (run from the QC's folder: the QC's file name), with `.mdl` for the extension")
            .with_note("help: add `$modelname \"NAME.mdl\"` to choose the name");
            diags.push(d);
        }
    }
}

/// Warns when Valve's `StripExtension`, which stops only at `/`, would cut a `$modelname`
/// written with `\` elsewhere than mdlc's output path does (`..\models\foo`, a `.` in a folder
/// name): the header keeps Valve's name, the files go where the path says.
fn header_name_differs(name: &Spanned<String>, diags: &mut Vec<Diagnostic>) {
    let valve = valve_strip_extension(&name.value);
    let ours = output_base(&name.value);
    if valve == ours {
        return;
    }
    diags.push(
        Diagnostic::new(
            Code::GsHeaderNameDiffers,
            format!("Valve's HL1 compiler names this model `{valve}.mdl`, not `{ours}.mdl`"),
            name.span.span(),
            "this name",
        )
        .with_note("Valve's tool removes the extension from the last `.` back to the nearest `/`, and does not stop at `\\`")
        .with_note(format!("the header's name field keeps Valve's `{valve}.mdl`; the files are named after `{ours}`"))
        .with_note("help: end the name with `.mdl`, or write `/` between folders"),
    );
}

/// Compiles the model for GoldSrc. Returns `None` when an error was reported here or by a stage
/// (or a stage is not available yet); every independent problem is reported.
///
/// The model's animation values are let go as they are encoded (see [`build_animation`]): the
/// model is not compiled twice.
pub fn compile(
    model: &mut Model,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<GsModel> {
    compile_named(model, None, sources, diags)
}

/// [`compile`], with the name a model without `$modelname` takes: Valve's tool starts from the
/// QC path given on its command line (`studiomdl.c` `main` copies it to `outname` before the
/// QC is read), so `default_name` is the QC's file name (`foo.qc` → `foo.mdl`, group files
/// `models\foo01.mdl`). `"model"` when neither is given.
pub fn compile_named(
    model: &mut Model,
    default_name: Option<&str>,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<GsModel> {
    let errors_before = diags.iter().filter(|d| d.is_error()).count();
    let mut gs = GsModel::default();

    // --- header values -------------------------------------------------------------------------
    let written = model
        .name
        .as_ref()
        .map(|n| n.value.as_str())
        .or(default_name)
        .unwrap_or("model")
        .to_string();
    gs.name = format!("{}.mdl", valve_strip_extension(&written));
    if gs.name.len() >= 64 {
        diags.push(
            at(
                model,
                model.name.as_ref().map(|n| n.span.span()),
                Code::GsNameCut,
                format!(
                    "the model name `{}` is {} bytes long; the header keeps 63",
                    gs.name,
                    gs.name.len()
                ),
                "this name",
            )
            .with_note("the header's `name` field has 64 bytes with a terminating NUL; the output file keeps the full name"),
        );
        gs.name = cut(&gs.name, 63);
    }
    if model.sequences.is_empty() {
        diags.push(
            at(
                model,
                None,
                Code::GsNoSequence,
                "the model has no `$sequence`".to_string(),
                "in this model",
            )
            .with_note("the engine and model viewers read sequence 0 of every model, which this one does not have; Valve's HL1 compiler writes it anyway")
            .with_note("help: add a sequence, for example `$sequence \"idle\" \"reference_file\"` with the reference SMD as its animation"),
        );
    }
    if let Some(e) = &model.eye_position {
        let [a, b, c] = e.value;
        // (−b, a, c): `$eyeposition 0 0 z` stores x = −0.0 (§11.12), as negation does.
        gs.eyeposition = [-b, a, c];
    }
    if let Some(b) = &model.bbox {
        gs.min = b.value[0];
        gs.max = b.value[1];
    }
    if let Some(b) = &model.cbox {
        gs.bbmin = b.value[0];
        gs.bbmax = b.value[1];
    }
    if let Some(f) = &model.flags {
        gs.flags = f.value;
    }
    gs.external_textures = model.external_textures;

    // Controller types: the animation stage reports a type other than the six (E0522); RLOOP
    // is added for rotations that turn full circle (C truncation, then C's remainder, §4.4).
    let controller_kinds: Vec<Option<i32>> = model
        .controllers
        .iter()
        .map(|c| {
            let t = controller_type(&c.axis.value)?;
            let looped = (c.start + 360.0) as i32 % 360 == (c.end + 360.0) as i32 % 360;
            Some(if t >= 0x8 && looped { t | 0x8000 } else { t })
        })
        .collect();

    check_rotations(model, sources, diags);
    for (g, label) in model.sequence_groups.iter().enumerate() {
        // `Cmd_Sequence` puts a sequence in the last group declared before it: group g + 1.
        if !model.sequences.iter().any(|s| s.group == g as i32 + 1) {
            diags.push(
                Diagnostic::new(
                    Code::GsEmptySequenceGroup,
                    format!("sequence group `{}` has no sequence", label.value),
                    label.span.span(),
                    "no `$sequence` follows this group",
                )
                .with_note("a sequence belongs to the last `$sequencegroup` before it; Valve's HL1 compiler writes an empty group file (a 76-byte header) anyway, and so does mdlc; the engine never loads it")
                .with_note("help: remove the `$sequencegroup`, or move it before the sequences it should hold"),
            );
        }
    }

    // --- the stages ------------------------------------------------------------------------------
    let geometry = build_geometry(model, sources, diags)?;
    if geometry.textures.is_empty() && !model.external_textures {
        let span = model.body_parts.first().map(|b| b.span);
        diags.push(
            at(
                model,
                span,
                Code::GsNoTextures,
                "the model has no texture: none of its body parts has a triangle".to_string(),
                "no triangle in this model",
            )
            .with_note("a GoldSrc model without textures of its own takes them from `<name>T.mdl`: Valve's model viewer and the engine load that file when `numtextures` is 0, and it is not written (Valve's HL1 compiler writes such a model anyway)")
            .with_note("help: give the model a triangle with a texture, or add `$externaltextures` to write a `T.mdl` without textures beside it"),
        );
    }
    let animation = build_animation(model, &geometry, diags)?;
    gs.body_parts = geometry.body_parts;
    gs.textures = geometry.textures;
    gs.skins = geometry.skins;
    gs.bones = animation.bones;
    gs.sequences = animation.sequences;
    gs.seq_groups = animation.seq_groups;
    gs.transitions = animation.transitions;
    gs.hitboxes = animation.hitboxes;
    if gs.seq_groups.is_empty() {
        gs.seq_groups.push(GsSeqGroup {
            label: "default".into(),
            name: String::new(),
        });
    }
    if model.name.is_none() {
        // the animation stage names group files after `$modelname` only
        for (g, grp) in gs.seq_groups.iter_mut().enumerate().skip(1) {
            grp.name = super::animation::group_file_name(&written, g);
        }
    }

    // --- controllers and attachments on the final skeleton ----------------------------------------
    let bone_index = |name: &str| {
        gs.bones
            .iter()
            .position(|b| b.name.eq_ignore_ascii_case(name))
    };
    let used = used_bones(&gs);
    let mut controllers = Vec::new();
    for (c, kind) in model.controllers.iter().zip(&controller_kinds) {
        if !(0..=4).contains(&c.index) {
            diags.push(
                Diagnostic::new(
                    Code::GsControllerIndex,
                    format!("controller index {} is not 0 to 3 or 4 (`mouth`)", c.index),
                    c.span,
                    "this controller",
                )
                .with_note("Valve's Half-Life client reads controllers 0 to 3 from the entity's four controller bytes and gives every other index the mouth's value: a negative index reads outside those bytes, an index above 4 is one more mouth")
                .with_note("help: use an index from 0 to 3, or `mouth` (4)"),
            );
        }
        let name = model.bone(c.bone).map_or("", |b| b.name.as_str());
        let Some(bone) = bone_index(name) else {
            diags.push(dropped_bone(name, c.span, "bone controller"));
            continue;
        };
        if !used.get(bone).copied().unwrap_or(true) {
            diags.push(kept_bone(
                name,
                c.span,
                "bone controller",
                "unknown bonecontroller link",
            ));
        }
        if let Some(kind) = kind {
            controllers.push((
                bone,
                GsController {
                    bone: bone as i32,
                    kind: *kind,
                    start: c.start,
                    end: c.end,
                    index: c.index,
                },
            ));
        }
    }
    // `bonecontroller[]` of each bone is set by the animation stage (same order, same bones).
    gs.controllers = controllers.into_iter().map(|(_, c)| c).collect();
    for a in &model.attachments {
        let name = model.bone(a.bone).map_or("", |b| b.name.as_str());
        let Some(bone) = bone_index(name) else {
            diags.push(dropped_bone(name, a.span, "attachment"));
            continue;
        };
        if !used.get(bone).copied().unwrap_or(true) {
            diags.push(kept_bone(
                name,
                a.span,
                "attachment",
                "unknown attachment link",
            ));
        }
        gs.attachments.push(GsAttachment {
            bone: bone as i32,
            org: a.position,
        });
    }

    if let Some(fifth) = model.attachments.get(4) {
        diags.push(
            Diagnostic::new(
                Code::GsManyAttachments,
                format!("the model has {} attachments; Valve's Half-Life client handles 4", model.attachments.len()),
                fifth.span,
                "the fifth attachment",
            )
            .with_note("Valve's Half-Life client (`CStudioModelRenderer::StudioCalcAttachments`) quits the game on a model with more than 4 attachments; a mod with its own client may allow more")
            .with_note("help: keep at most 4 attachments unless the mod's client handles more"),
        );
    }
    check_names(model, &mut gs, diags);
    check_limits(model, &gs, diags);

    let errors = diags.iter().filter(|d| d.is_error()).count();
    (errors == errors_before).then_some(gs)
}

/// Bones with a vertex or a normal of some model, or a descendant with one (`goldsrc.md` §8.4):
/// the bones Valve's tool keeps.
fn used_bones(gs: &GsModel) -> Vec<bool> {
    let mut used = vec![false; gs.bones.len()];
    for m in gs.body_parts.iter().flat_map(|b| b.models.iter()) {
        for &b in m.vert_bones.iter().chain(&m.norm_bones) {
            if let Some(u) = used.get_mut(b as usize) {
                *u = true;
            }
        }
    }
    for i in (0..gs.bones.len()).rev() {
        let parent = gs.bones.get(i).map_or(-1, |b| b.parent);
        if used.get(i).copied().unwrap_or(false) && parent >= 0 {
            if let Some(u) = used.get_mut(parent as usize) {
                *u = true;
            }
        }
    }
    used
}

fn dropped_bone(name: &str, span: FileSpan, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::GsBoneNotInSkeleton,
        format!("bone `{name}` of this {what} is not in the GoldSrc skeleton"),
        span,
        format!("this {what}"),
    )
    .with_note("GoldSrc keeps only bones that carry vertices or lead to bones that do")
}

fn kept_bone(name: &str, span: FileSpan, what: &str, valve: &str) -> Diagnostic {
    Diagnostic::new(
        Code::GsBoneWithoutVertices,
        format!("bone `{name}` has no vertices; it is kept for this {what}"),
        span,
        format!("this {what} needs it"),
    )
    .with_note(format!(
        "Valve's studiomdl drops such bones and rejects this model (\"{valve} '{name}'\"); mdlc keeps the bone"
    ))
}

/// Name lengths: names the engine looks up must fit with their NUL (errors); names it only
/// shows are cut like Valve's tool cuts them (warnings).
fn check_names(model: &Model, gs: &mut GsModel, diags: &mut Vec<Diagnostic>) {
    let too_long = |what: &str, name: &str, field: usize, span: Option<FileSpan>| {
        at(
            model,
            span,
            Code::GsNameTooLong,
            format!(
                "{what} `{name}` is {} bytes long; GoldSrc keeps {} (the field has {field} bytes with a NUL)",
                name.len(),
                field - 1
            ),
            "this name",
        )
        .with_note("the engine looks this name up, so a cut name would not be found; shorten it")
    };
    for (i, s) in gs.sequences.iter().enumerate() {
        for e in &s.events {
            if e.options.len() >= 64 {
                let span = model.sequences.get(i).map(|q| q.span);
                diags.push(too_long("event option", &e.options, 64, span));
            }
        }
    }
    for (g, grp) in gs.seq_groups.iter().enumerate() {
        let span = model
            .sequence_groups
            .get(g.wrapping_sub(1))
            .map(|s| s.span.span());
        if grp.label.len() >= 32 {
            diags.push(too_long("sequence group label", &grp.label, 32, span));
        }
        if grp.name.len() >= 64 {
            diags.push(too_long("sequence group file name", &grp.name, 64, span));
        }
    }
    // Model names: cut at 64 like Valve's tool (a 64-byte name fills the field without a NUL).
    let meshes: Vec<Option<FileSpan>> = model
        .body_parts
        .iter()
        .flat_map(|b| b.options.iter())
        .map(|o| match o {
            BodyOption::Blank(s) => Some(*s),
            BodyOption::Mesh(m) => model.mesh(*m).map(|m| m.span),
        })
        .collect();
    let mut k = 0;
    for (bi, bp) in gs.body_parts.iter_mut().enumerate() {
        // `goldsrc.md` §1, §11.10: Valve's tool keeps a body part name in a 32-byte buffer
        // (`strncpy`, no NUL when the name fills it) and copies it unbounded into the file,
        // reading on into the next field, the part's model count (a little-endian int of 1 to
        // 32: one byte, then a zero).
        if bp.name.len() >= 32 {
            let span = model.body_parts.get(bi).map(|b| b.name.span.span());
            let count = bp.models.len().min(255) as u8;
            let valve = format!("{}{}", cut(&bp.name, 32), char::from(count));
            diags.push(
                at(
                    model,
                    span,
                    Code::GsNameCut,
                    format!(
                        "body part name `{}` is {} bytes long; Valve's HL1 compiler keeps 32 of them",
                        bp.name,
                        bp.name.len()
                    ),
                    "this name",
                )
                .with_note(format!("it copies the name into a 32-byte buffer without a terminating NUL, then from there into the file, reading on into the part's model count: the stored name is the first 32 bytes and the byte {count}, and mdlc stores the same"))
                .with_note("help: use a name of at most 31 bytes"),
            );
            bp.name = valve;
        }
        for m in &mut bp.models {
            let span = meshes.get(k).copied().flatten();
            k += 1;
            if m.name.len() >= 64 {
                let kept = cut(&m.name, 64);
                diags.push(
                    at(
                        model,
                        span,
                        Code::GsNameCut,
                        format!(
                            "model name `{}` is {} bytes long; it is stored as its first 64 bytes, without a NUL",
                            m.name,
                            m.name.len()
                        ),
                        "this mesh",
                    )
                    .with_note(format!("stored as `{kept}`"))
                    .with_note("Valve's studiomdl cuts the name at 64 bytes too, and cannot open a file whose name is longer"),
                );
                m.name = kept;
            }
        }
    }
}

/// The limits of `goldsrc.md` §5.
fn check_limits(model: &Model, gs: &GsModel, diags: &mut Vec<Diagnostic>) {
    use limits::*;
    let mut limit = |span: Option<FileSpan>, what: String, max: usize, note: &str| {
        diags.push(
            at(model, span, Code::GsLimit, what, "here")
                .with_note(format!("GoldSrc allows at most {max}; {note}")),
        );
    };
    if gs.bones.len() > MAX_BONES {
        let name = gs.bones.get(MAX_BONES).map_or("", |b| b.name.as_str());
        let span = model
            .find_bone(name)
            .and_then(|i| model.bone(i))
            .map(|b| b.span);
        limit(
            span,
            format!("too many bones: {} (the 128th is `{name}`)", gs.bones.len()),
            MAX_BONES,
            "Valve's studiomdl refuses 128 or more",
        );
    }
    let meshes: Vec<Option<FileSpan>> = model
        .body_parts
        .iter()
        .flat_map(|b| b.options.iter())
        .map(|o| match o {
            BodyOption::Blank(s) => Some(*s),
            BodyOption::Mesh(m) => model.mesh(*m).map(|m| m.span),
        })
        .collect();
    let all: Vec<_> = gs.body_parts.iter().flat_map(|b| b.models.iter()).collect();
    if all.len() > MAX_MODELS {
        limit(
            meshes.get(MAX_MODELS).copied().flatten(),
            format!("too many models: {} over all body parts", all.len()),
            MAX_MODELS,
            "the engine's arrays hold no more",
        );
    }
    if gs.body_parts.len() > MAX_BODYPARTS {
        let span = model.body_parts.get(MAX_BODYPARTS).map(|b| b.span);
        limit(
            span,
            format!("too many body parts: {}", gs.body_parts.len()),
            MAX_BODYPARTS,
            "the engine's arrays hold no more",
        );
    }
    for (i, m) in all.iter().enumerate() {
        let span = meshes.get(i).copied().flatten();
        let tris: usize = m
            .meshes
            .iter()
            .map(|mesh| mesh.numtris.max(0) as usize)
            .sum();
        if tris > MAX_TRIANGLES {
            limit(
                span,
                format!("too many triangles in model `{}`: {tris}", m.name),
                MAX_TRIANGLES,
                "Valve's studiomdl overflows its per-model triangle array beyond",
            );
        }
    }
    // Each mesh's and each animation's SMD nodes (named only when over).
    let over = |n: usize| n > MAX_SRC_BONES;
    let too_many = (model.meshes.iter())
        .filter(|m| over(m.file_bones.len()))
        .map(|m| (m.span, m.name.clone(), m.file_bones.len()))
        .chain(
            (model.animations.iter())
                .filter(|a| over(a.file_bones.len()))
                .map(|a| (a.span, a.path.display().to_string(), a.file_bones.len())),
        );
    for (span, name, bones) in too_many {
        limit(
            Some(span),
            format!("too many bones in `{name}`: {bones}"),
            MAX_SRC_BONES,
            "Valve's studiomdl overflows its array of an SMD's nodes beyond",
        );
    }
    let counted: [(&str, usize, Option<FileSpan>); 3] = [
        (
            "attachments",
            model.attachments.len(),
            model.attachments.get(MAX_SRC_BONES).map(|a| a.span),
        ),
        (
            "hit boxes",
            gs.hitboxes.len(),
            model
                .hitbox_sets
                .iter()
                .flat_map(|s| s.boxes.iter())
                .nth(MAX_SRC_BONES)
                .map(|h| h.span),
        ),
        (
            "bone controllers",
            model.controllers.len(),
            model.controllers.get(MAX_SRC_BONES).map(|c| c.span),
        ),
    ];
    for (what, n, span) in counted {
        if n > MAX_SRC_BONES {
            limit(
                span,
                format!("too many {what}: {n}"),
                MAX_SRC_BONES,
                "Valve's studiomdl overflows its array beyond",
            );
        }
    }
    let mut animations = 0;
    for (i, s) in gs.sequences.iter().enumerate() {
        let before = animations;
        animations += s.blends.len();
        if before <= MAX_ANIMATIONS && animations > MAX_ANIMATIONS {
            limit(
                model.sequences.get(i).map(|q| q.span),
                format!(
                    "too many animations: sequence `{}` brings the count of animations (one per blend of every sequence) to {animations}",
                    s.label
                ),
                MAX_ANIMATIONS,
                "Valve's studiomdl overflows its animation array beyond",
            );
        }
    }
    if model.skins.groups.len() > MAX_TEXTURE_GROUP {
        limit(
            model.skins.groups.get(MAX_TEXTURE_GROUP).map(|g| g.span),
            format!("too many texture groups: {}", model.skins.groups.len()),
            MAX_TEXTURE_GROUP,
            "Valve's studiomdl overflows its texture group array beyond",
        );
    }
    for g in &model.skins.groups {
        let widest = g.rows.iter().map(Vec::len).max().unwrap_or(0);
        if g.rows.len() > MAX_TEXTURE_GROUP || widest > MAX_TEXTURE_GROUP {
            limit(
                Some(g.span),
                format!(
                    "texture group too large: {} skin rows, {widest} textures in its longest row",
                    g.rows.len()
                ),
                MAX_TEXTURE_GROUP,
                "rows and textures per row; Valve's studiomdl overflows its texture group array beyond",
            );
        }
    }
    if gs.textures.len() > MAX_TEXTURES {
        let span = gs
            .textures
            .get(MAX_TEXTURES)
            .and_then(|t| model.find_material(&t.name))
            .and_then(|m| model.materials.get(m.index()))
            .map(|m| m.span);
        limit(
            span,
            format!("too many textures: {}", gs.textures.len()),
            MAX_TEXTURES,
            "the engine's texture arrays hold no more",
        );
    }
    if gs.skins.len() > MAX_SKIN_FAMILIES {
        limit(
            model.skins.span,
            format!("too many skin families: {}", gs.skins.len()),
            MAX_SKIN_FAMILIES,
            "",
        );
    }
    if gs.sequences.len() > MAX_SEQUENCES {
        let span = model.sequences.get(MAX_SEQUENCES).map(|s| s.span);
        limit(
            span,
            format!("too many sequences: {}", gs.sequences.len()),
            MAX_SEQUENCES,
            "Valve's studiomdl overflows its arrays beyond",
        );
    }
    if gs.transitions.len() > MAX_NODES {
        limit(
            None,
            format!("too many transition nodes: {}", gs.transitions.len()),
            MAX_NODES,
            "",
        );
    }
    if gs.seq_groups.len() > MAX_SEQ_GROUPS {
        let span = model
            .sequence_groups
            .get(MAX_SEQ_GROUPS - 1)
            .map(|s| s.span.span());
        limit(
            span,
            format!("too many sequence groups: {}", gs.seq_groups.len()),
            MAX_SEQ_GROUPS,
            "the engine loads no more",
        );
    }
    for (i, s) in gs.sequences.iter().enumerate() {
        let span = model.sequences.get(i).map(|q| q.span);
        if s.blends.len() > MAX_BLENDS {
            limit(
                span,
                format!("sequence `{}` has {} blends", s.label, s.blends.len()),
                MAX_BLENDS,
                "",
            );
        }
        if s.numframes.max(0) as usize > MAX_FRAMES {
            limit(
                span,
                format!("sequence `{}` has {} frames", s.label, s.numframes),
                MAX_FRAMES,
                "",
            );
        }
    }
}

/// Radians beyond which a skeleton rotation is refused (E0548). Valve's HL1 studiomdl wraps
/// every rotation into [−π, π) one 2π step at a time (`clip_rotations`): from 2^27 radians on a
/// step no longer changes the float and it never finishes, and below that it takes millions of
/// steps. No exporter writes angles anywhere near this; mdlc's own wrap loops are exact well
/// beyond it.
const MAX_ROTATION: f32 = 100_000.0;

/// E0548 for the first too-large rotation of each SMD file (reference skeletons and the frames
/// of animations), pointed at the value in the file when it can be found.
fn check_rotations(model: &Model, sources: &Sources, diags: &mut Vec<Diagnostic>) {
    let too_large = |r: &f32| r.abs() >= MAX_ROTATION;
    let mut reported: Vec<FileId> = Vec::new();
    let found = model
        .meshes
        .iter()
        .filter_map(|m| {
            let v = m
                .file_bones
                .iter()
                .flat_map(|b| b.rest.rot)
                .find(too_large)?;
            Some((m.file, m.span, v))
        })
        .chain(model.animations.iter().filter_map(|a| {
            let v = a.frames.iter().flat_map(|p| p.rot).find(too_large)?;
            Some((a.file, a.span, v))
        }));
    for (file, reference, value) in found {
        if reported.contains(&file) {
            continue;
        }
        reported.push(file);
        let (at, label, written) = match rotation_in_text(sources.text(file), value) {
            Some((s, w)) => (s.in_file(file), "this rotation", w),
            None => (reference, "a rotation of this file", format!("{value:e}")),
        };
        diags.push(
            Diagnostic::new(
                Code::GsRotationTooLarge,
                format!(
                    "rotation {written} in `{}` is too large to wrap into [-pi, pi)",
                    sources.name(file)
                ),
                at,
                label,
            )
            .with_note("Valve's HL1 compiler wraps each rotation into range by adding or subtracting 2 pi one step at a time; from 2^27 (134217728) radians on a step no longer changes the float value and it never finishes")
            .with_note(format!("mdlc accepts rotations of less than {MAX_ROTATION} radians")),
        );
    }
}

/// The span of the first rotation (the 5th to 7th number of a frame line in the `skeleton`
/// section) whose value is `value`, and the number as written.
fn rotation_in_text(text: &str, value: f32) -> Option<(crate::diag::Span, String)> {
    let mut in_skeleton = false;
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let mut words = Vec::new();
        let mut from = None;
        for (i, c) in line.char_indices() {
            match (c.is_whitespace(), from) {
                (false, None) => from = Some(i),
                (true, Some(f)) => {
                    words.push((f, line.get(f..i).unwrap_or("")));
                    from = None;
                }
                _ => {}
            }
        }
        if let Some(f) = from {
            words.push((f, line.get(f..).unwrap_or("")));
        }
        match words.first().map(|w| w.1) {
            Some("skeleton") => in_skeleton = true,
            Some("end") => in_skeleton = false,
            _ if in_skeleton && words.len() >= 7 => {
                for &(f, w) in words.get(4..7).unwrap_or(&[]) {
                    if w.parse::<f32>().ok() == Some(value) {
                        let b = u32::try_from(start + f).ok()?;
                        let e = u32::try_from(start + f + w.len()).ok()?;
                        return Some((crate::diag::Span::new(b, e), w.to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_base_removes_only_the_last_extension_of_the_file_name() {
        assert_eq!(output_base("headcrab.mdl"), "headcrab");
        assert_eq!(
            output_base("../../compiled_models/man.mdl"),
            "../../compiled_models/man"
        );
        assert_eq!(output_base("a.b/c"), "a.b/c");
        assert_eq!(output_base("x.y.mdl"), "x.y");
        assert_eq!(output_base("dir\\m.mdl"), "dir\\m");
    }

    #[test]
    fn valve_strip_extension_stops_only_at_a_slash() {
        assert_eq!(valve_strip_extension("headcrab.mdl"), "headcrab");
        assert_eq!(valve_strip_extension("models\\foo.mdl"), "models\\foo");
        assert_eq!(valve_strip_extension("a.b/c"), "a.b/c");
        assert_eq!(valve_strip_extension("x.y.mdl"), "x.y");
        assert_eq!(valve_strip_extension("foo"), "foo");
        assert_eq!(valve_strip_extension(".\\foo"), ".\\foo");
        // `cmdlib.c` `StripExtension`: a backslash does not stop the scan
        assert_eq!(valve_strip_extension("..\\models\\foo"), ".");
        assert_eq!(valve_strip_extension("v1.5\\foo"), "v1");
        assert_eq!(valve_strip_extension(""), "");
    }

    #[test]
    fn controller_types_and_rloop() {
        assert_eq!(controller_type("yr"), Some(0x10));
        assert_eq!(controller_type("LX"), None);
        // int(-180+360) % 360 = 180 = int(180+360) % 360: a full turn loops
        assert_eq!(
            (-180.0f32 + 360.0) as i32 % 360,
            (180.0f32 + 360.0) as i32 % 360
        );
    }
}
