//! `ProjectSpec`: one model as its project file describes it, whichever front end read it.
//!
//! Both front ends lower into this type: the TOML project format (`project::toml`) and QC in
//! both dialects (`qc`). It is *resolved*: every value that a QC takes from an earlier command
//! (the `$scale`, `$origin`, `$upaxis` in force, the `$cd`/`$pushd` directory, the dialect's
//! defaults) is stored on the item it applies to, so the order of items no longer carries
//! meaning beyond the order of lists. `mdlc import-qc` writes this type out as TOML, and a test
//! checks that the TOML reads back into an equal `ProjectSpec` (spans aside).
//!
//! Nothing here has been checked against the SMD files yet: bone names are strings, files are
//! paths that may not exist. `ir::build` (lowering) loads the files and reports what does not
//! fit, pointing at the spans kept here.
//!
//! Units: positions in the model's units (inches for Valve's games), angles as noted per field
//! (QC writes degrees in some commands and radians nowhere; SMD uses radians).

use std::path::PathBuf;

pub use crate::diag::{Loc, Spanned};
pub use crate::ir::written::{
    motion_bit, Activity, AnimCommand, Blend, BoneSaveFrame, Event, IkAutoplayLock, IkChain,
    JiggleBone, JiggleGroup, JiggleKind, JiggleProp, MotionFlag, PoseParameter, Target, Transition,
};

/// A file the project refers to. Equality compares the resolved path only.
#[derive(Clone, Debug)]
pub struct FileRef {
    /// As written in the project file (after macro expansion), for messages and import-qc.
    pub written: String,
    /// Where the front end resolved it: relative paths are joined to the directory they are
    /// relative to (the TOML file's folder; the QC's folder plus `$cd`/`$pushd`), backslashes
    /// turned into `/`, and the default extension added where the dialect adds one. The file
    /// may not exist: lowering reports that, with the nearest existing name.
    pub path: PathBuf,
    pub span: Loc,
}

impl PartialEq for FileRef {
    fn eq(&self, other: &FileRef) -> bool {
        self.path == other.path
    }
}

/// Joins `rel` to `base` and removes `.` and `..` parts lexically (`a/b/../c` → `a/c`), after
/// turning backslashes into slashes, so that two spellings of one file compare equal.
pub fn resolve_path(base: &std::path::Path, rel: &str) -> PathBuf {
    use std::path::Component;
    let rel = rel.replace('\\', "/");
    let joined = base.join(&rel);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                // Pop a real folder name; `..` at the start (or after other `..`) stays.
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else if !matches!(
                    out.components().next_back(),
                    Some(Component::RootDir | Component::Prefix(_))
                ) {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where the model came from and how it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectSpec {
    /// The project file (`model.toml` or the main `.qc`).
    pub source: PathBuf,
    /// The engine, with how it was decided.
    pub target: TargetChoice,
    /// `$modelname` / `model.name`: output name, relative to the game's `models/` folder for
    /// Source; as written (may carry folders and `.mdl`).
    pub name: Option<Spanned<String>>,

    // --- materials and textures ---------------------------------------------------------------
    /// `$cdmaterials` (Source): material folders, in search order.
    pub material_dirs: Vec<Spanned<String>>,
    /// `$cdtexture` (GoldSrc): folders searched for BMP textures, in order.
    pub texture_dirs: Vec<Spanned<PathBuf>>,
    /// `$texturegroup` (only the first one counts in both compilers; later ones are kept here
    /// so the back end can warn).
    pub texture_groups: Vec<TextureGroup>,
    /// `$texrendermode texture additive|masked` (GoldSrc).
    pub texture_render_modes: Vec<TextureRenderMode>,
    /// `$renamematerial from to` (Source).
    pub rename_materials: Vec<(Spanned<String>, Spanned<String>)>,
    /// `$gamma g` (GoldSrc palette gamma; Source accepts and ignores it).
    pub gamma: Option<Spanned<f32>>,
    /// `$externaltextures` (GoldSrc: textures in `<name>T.mdl`).
    pub external_textures: bool,

    // --- geometry -----------------------------------------------------------------------------
    /// `$body`, `$bodygroup`, `$model`, in order.
    pub body_parts: Vec<BodyPart>,
    /// `$lod` and `$shadowlod` blocks, in order.
    pub lods: Vec<Lod>,

    // --- skeleton -----------------------------------------------------------------------------
    /// `$definebone` (Source).
    pub define_bones: Vec<DefineBone>,
    /// `$hierarchy`/`$heirarchy child parent` (Source); parent `""` makes a root.
    pub hierarchy: Vec<(Spanned<String>, Spanned<String>)>,
    /// `$renamebone from to`.
    pub rename_bones: Vec<(Spanned<String>, Spanned<String>)>,
    /// `$mirrorbone bone` (GoldSrc).
    pub mirror_bones: Vec<Spanned<String>>,
    /// `$alwayscollapse bone` (Source).
    pub always_collapse: Vec<Spanned<String>>,
    /// `$limitrotation bone [sequence…]` (Source): the bone, and the sequences named after it.
    pub limit_rotations: Vec<(Spanned<String>, Vec<Spanned<String>>)>,
    /// `$collapsebones` (Source).
    pub collapse_bones: bool,
    /// `$lockbonelengths` (Source): animations keep the rest lengths of bones.
    pub lock_bone_lengths: bool,
    /// `$screenalign bone [sphere|cylinder]` (Source): the bone and whether it turns about its
    /// own axis only (`cylinder`).
    pub screen_align: Vec<(Spanned<String>, bool)>,
    /// `$realignbones` (Source): every bone with one child is turned to point its X axis at it.
    pub realign_bones: bool,
    /// `$forcerealign bone skip x y z` (Source): a bone's frame turned by the Euler angles
    /// (degrees, as written).
    pub force_realign: Vec<(Spanned<String>, [f32; 3])>,
    /// `$bonemerge bone` (Source).
    pub bone_merge: Vec<Spanned<String>>,
    /// `$root bone`.
    pub root_bone: Option<Spanned<String>>,
    /// `$pivot index bone` (GoldSrc; stored, unused by Valve's tool).
    pub pivots: Vec<(Spanned<i32>, Spanned<String>)>,
    /// `$controller`.
    pub controllers: Vec<Controller>,
    /// `$attachment`.
    pub attachments: Vec<Attachment>,
    /// `$hbox`, grouped by `$hboxset` (the first set is `default` unless named). Empty: the back
    /// end generates hit boxes.
    pub hitbox_sets: Vec<HitboxSet>,
    /// `$hgroup group bone`.
    pub hit_groups: Vec<(Spanned<i32>, Spanned<String>)>,

    // --- header values ------------------------------------------------------------------------
    /// `$eyeposition x y z` as written (the compilers store `(-y, x, z)`).
    pub eye_position: Option<Spanned<[f32; 3]>>,
    /// `$illumposition x y z` as written (Source).
    pub illum_position: Option<Spanned<[f32; 3]>>,
    /// `$maxeyedeflection degrees`: how far the eyes may turn from straight ahead.
    pub max_eye_deflection: Option<Spanned<f32>>,
    /// `$bbox` min, max.
    pub bbox: Option<Spanned<[[f32; 3]; 2]>>,
    /// `$cbox` min, max.
    pub cbox: Option<Spanned<[[f32; 3]; 2]>>,
    /// `$flags n` (GoldSrc header flags).
    pub flags: Option<Spanned<i32>>,
    /// `$surfaceprop` (Source).
    pub surface_prop: Option<Spanned<String>>,
    /// `$contents flag…` (Source): `solid`, `notsolid`, `grate`, `ladder`, `monster`, ….
    pub contents: Vec<Spanned<String>>,
    /// `$staticprop` (Source).
    pub static_prop: bool,
    /// `$keyvalues { … }` (Source): the block's text, braces included, as written.
    pub keyvalues: Option<Spanned<String>>,
    /// Header flag commands without arguments (Source): `$opaque`, `$mostlyopaque`,
    /// `$noforcedfade`, `$ambientboost`, `$forcephonemecrossfade`, `$obsolete`,
    /// `$donotcastshadows`, `$casttextureshadows`, `$skipboneinbbox` — by name, lower case.
    pub header_flags: Vec<Spanned<String>>,

    // --- animation ----------------------------------------------------------------------------
    /// `$animation`, and the animations `$sequence` implies (named `@<sequence>`,
    /// `@<sequence>_<n>`), in declaration order.
    pub animations: Vec<Animation>,
    /// `$sequence`, in order (HL1 QCs may repeat a name; see [`Sequence`]).
    pub sequences: Vec<Sequence>,
    /// `$poseparameter`.
    pub pose_parameters: Vec<PoseParameter>,
    /// `$weightlist`, `$defaultweightlist` (named `default`).
    pub weight_lists: Vec<WeightList>,
    /// `$sequencegroup label` names (GoldSrc), indexed by [`Sequence::group`] (0 is the main file).
    pub sequence_groups: Vec<Spanned<String>>,
    /// `$sequencegroupsize kb` (GoldSrc).
    pub sequence_group_size: Option<Spanned<i32>>,
    /// `$skiptransition node…` (Source).
    pub skip_transitions: Vec<Vec<Spanned<String>>>,
    /// `$sectionframes frames minframes` (later Source compilers).
    pub section_frames: Option<Spanned<(i32, i32)>>,
    /// `$animblocksize n` (Source).
    pub anim_block_size: Option<Spanned<i32>>,
    /// `$bonesaveframe bone [position] [rotation]` (Source), in order.
    pub bone_save_frames: Vec<BoneSaveFrame>,
    /// `$includemodel file` (Source).
    pub include_models: Vec<Spanned<String>>,
    /// `$ikchain` (Source).
    pub ik_chains: Vec<IkChain>,
    /// `$ikautoplaylock` (Source).
    pub ik_autoplay_locks: Vec<IkAutoplayLock>,
    /// `$proceduralbones file` (Source): `.vrd` or axis-interpolation files.
    pub procedural_bones: Vec<FileRef>,
    /// `$jigglebone bone { … }` (Source): bones the game simulates as springs.
    pub jiggle_bones: Vec<JiggleBone>,

    // --- physics (written by a later issue) ----------------------------------------------------
    /// `$collisionmodel` / `$collisionjoints`.
    pub collision: Option<Collision>,
    /// `$collisiontext { … }`: text appended to the `.phy`'s keyvalues as is.
    pub collision_text: String,
    /// `$jointsurfaceprop bone name`: a bone's (and its children's) surface property, for the
    /// MDL's bones and the `.phy`'s solids.
    pub joint_surface_props: Vec<(Spanned<String>, Spanned<String>)>,

    /// Commands mdlc recognises but does not carry yet: each was warned about where it was read.
    pub not_carried: Vec<Spanned<String>>,
}

/// How the target was decided.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetChoice {
    /// Written in the project (`target = "…"`) or on the command line.
    Given(Spanned<Target>),
    /// Inferred from the QC dialect: the command that decided it.
    Inferred {
        target: Target,
        because: Spanned<String>,
    },
    /// Nothing decided it (a QC with only dialect-neutral commands): Source by default.
    Default(Target),
}

impl TargetChoice {
    pub fn target(&self) -> Target {
        match self {
            TargetChoice::Given(t) => t.value,
            TargetChoice::Inferred { target, .. } | TargetChoice::Default(target) => *target,
        }
    }
}

/// `$texturegroup name { { a b } { c d } }`: row 0 lists the materials that the other rows
/// replace, position by position.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureGroup {
    pub name: Spanned<String>,
    pub skins: Vec<Vec<Spanned<String>>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TextureRenderMode {
    pub texture: Spanned<String>,
    /// `additive` or `masked` (Valve's HL1 tool accepts nothing else; `fullbright` is a later
    /// addition of other tools).
    pub mode: Spanned<String>,
}

/// A body part: one choice (`$body`, `$model`) or several (`$bodygroup`).
#[derive(Clone, Debug, PartialEq)]
pub struct BodyPart {
    pub name: Spanned<String>,
    pub options: Vec<BodyOption>,
    pub span: Loc,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BodyOption {
    /// `blank`: an empty choice.
    Blank(Loc),
    Model(BodyModel),
}

/// One mesh file of a body part.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyModel {
    pub file: FileRef,
    /// The name stored for this model (`mstudiomodel_t.name`): the file name exactly as the
    /// project wrote it (a HL1 QC writes `meshes/hd/gib_alien_01`, a Source QC often
    /// `body_ref.smd`; both compilers store what was written). TOML: the `name` key, by default
    /// the `file` string as written.
    pub name: String,
    /// `reverse`: keep the SMD's triangle winding.
    pub reverse: bool,
    /// The scale for this file: `scale f`, else the `$scale` in force.
    pub scale: f32,
    /// GoldSrc quirk (`goldsrc.md` §8.1): the origin offset left over from the last `$sequence`
    /// parsed before this body, subtracted from its vertices. Zero for Source and TOML.
    pub origin_offset: [f32; 3],
    /// The `$model` block as text (TOML: the `flex` key), for `import-qc`.
    pub flex_block: Option<Spanned<String>>,
    /// The same block read: eyeballs, eyelids, mouths, flexes, controllers, rules.
    pub face: Option<super::face::FaceSpec>,
}

/// `$lod distance { … }` or `$shadowlod { … }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lod {
    /// Switch distance; `None` for the shadow LOD.
    pub distance: Option<Spanned<f32>>,
    pub replace_models: Vec<ReplaceModel>,
    pub remove_models: Vec<Spanned<String>>,
    pub replace_materials: Vec<(Spanned<String>, Spanned<String>)>,
    pub remove_meshes: Vec<Spanned<String>>,
    pub replace_bones: Vec<(Spanned<String>, Spanned<String>)>,
    pub bone_tree_collapse: Vec<Spanned<String>>,
    /// `nofacial` (true) / `facial` (false); `None` when neither is given.
    pub facial: Option<bool>,
    /// `use_shadowlod_materials` (shadow LOD only).
    pub use_shadowlod_materials: bool,
    pub span: Loc,
}

/// `replacemodel from to [reverse]`: `from` names a reference file already loaded (extension
/// stripped), `to` is the replacement mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaceModel {
    pub from: Spanned<String>,
    pub to: FileRef,
    /// The name stored for the replacement model, as for [`BodyModel::name`].
    pub name: String,
    pub reverse: bool,
    pub scale: f32,
}

/// `$definebone name parent x y z rx ry rz [fx fy fz frx fry frz]` (angles in degrees, in the
/// QAngle order pitch, yaw, roll).
#[derive(Clone, Debug, PartialEq)]
pub struct DefineBone {
    pub name: Spanned<String>,
    /// `None` for `""` (a root).
    pub parent: Option<Spanned<String>>,
    pub position: [f32; 3],
    pub rotation_deg: [f32; 3],
    pub fixup: Option<([f32; 3], [f32; 3])>,
    pub span: Loc,
}

/// `$controller index|mouth bone type start end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Controller {
    /// 0..3, or 4 for `mouth`.
    pub index: Spanned<i32>,
    pub bone: Spanned<String>,
    /// `X Y Z XR YR ZR` (plus `LX`… accepted by the HL1 table).
    pub axis: MotionFlag,
    pub start: f32,
    pub end: f32,
    pub span: Loc,
}

/// `$attachment name|index bone x y z [options]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Attachment {
    /// Source: the name. GoldSrc: the index as written (Valve's tool ignores it and numbers
    /// attachments in QC order).
    pub name: Spanned<String>,
    pub bone: Spanned<String>,
    /// Position, already multiplied by the `$scale` in force.
    pub position: [f32; 3],
    /// `absolute`, `rigid`, `world_align` (Source).
    pub flags: Vec<Spanned<String>>,
    /// `rotate p y r` in degrees (Source).
    pub rotate_deg: Option<[f32; 3]>,
    /// `x_and_z_axes xx xy xz zx zy zz` (Source).
    pub x_and_z_axes: Option<[f32; 6]>,
    pub span: Loc,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HitboxSet {
    pub name: Spanned<String>,
    pub boxes: Vec<Hitbox>,
}

/// `$hbox group bone x1 y1 z1 x2 y2 z2 [name]`, corners multiplied by the `$scale` in force.
#[derive(Clone, Debug, PartialEq)]
pub struct Hitbox {
    pub group: i32,
    pub bone: Spanned<String>,
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub name: Option<Spanned<String>>,
    pub span: Loc,
}

/// An animation: one SMD and what to do with its frames. `$animation`, or implied by a
/// `$sequence` that names a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Animation {
    pub name: Spanned<String>,
    pub file: FileRef,
    pub fps: f32,
    /// `loop`.
    pub looping: bool,
    /// `frame(s) start end`: the SMD frame numbers to use; `None` = all.
    pub frames: Option<(i32, i32)>,
    /// Translation subtracted from root bones (`$origin`, `origin`), before the rotation.
    pub origin: [f32; 3],
    /// Root rotation as Euler radians `(x, y, z)`; default `(0, 0, π/2)`
    /// (`source-animation.md` §2.4): `$upaxis`, `$origin`'s rotation, `rotate`, `angles`.
    pub rotation: [f32; 3],
    /// Scale of positions: the `$scale` in force times the `scale` option.
    pub scale: f32,
    /// Motion extraction / pinning flags (`LX`, `XR`, …).
    pub motion: Vec<MotionFlag>,
    /// `startloop n` (Source).
    pub start_loop: Option<i32>,
    /// Flag words: `snap`, `post`, `fudgeloop`, `noautoik`, `autoik` (lower case).
    pub flags: Vec<Spanned<String>>,
    /// Order-dependent commands (`subtract`, `weightlist`, `alignto`, `walkframe`, `ikrule`, …),
    /// each as its keyword and arguments as written.
    pub commands: Vec<AnimCommand>,
    pub span: Loc,
}

/// A sequence: what the game plays.
#[derive(Clone, Debug, PartialEq)]
pub struct Sequence {
    /// HL1 QCs may give two sequences the same name (Valve's HL1 tool keeps both; the Source
    /// tool refuses): names are not unique in this list.
    pub name: Spanned<String>,
    /// Names of entries of [`ProjectSpec::animations`] (or of other sequences, which stand for
    /// their first animation), in blend order (row-major for a grid).
    pub animations: Vec<Spanned<String>>,
    /// `blendwidth n`.
    pub blend_width: Option<Spanned<i32>>,
    /// `blend param min max` (Source: pose parameters; GoldSrc: `blend type start end` with a
    /// motion type as `param`).
    pub blends: Vec<Blend>,
    /// `activity ACT_NAME weight` / `ACT_NAME weight`.
    pub activity: Option<Activity>,
    pub events: Vec<Event>,
    /// GoldSrc `pivot index start end`.
    pub pivots: Vec<[i32; 3]>,
    /// `node n`: entry and exit node.
    pub node: Option<Spanned<String>>,
    /// `transition from to` / `rtransition` (`reversible`).
    pub transition: Option<Transition>,
    pub fade_in: Option<f32>,
    pub fade_out: Option<f32>,
    pub exit_phase: Option<f32>,
    /// Sequence flag words (lower case): `delta`, `predelta`, `post`, `worldspace`, `autoplay`,
    /// `realtime`, `hidden`, `snap`, `loop` (GoldSrc sequences carry `loop` themselves).
    pub flags: Vec<Spanned<String>>,
    /// `addlayer`, `blendlayer`, `iklock`, `calcblend`, `blendref`, `blendcomp`, `blendcenter`,
    /// `keyvalues`: kept as written until implemented.
    pub extras: Vec<AnimCommand>,
    /// GoldSrc: index into [`ProjectSpec::sequence_groups`] + 1 (0 = main file).
    pub group: i32,
    pub span: Loc,
}

/// `$weightlist name bone w [posweight p] …`.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightList {
    pub name: Spanned<String>,
    pub weights: Vec<BoneWeight>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BoneWeight {
    pub bone: Spanned<String>,
    pub weight: f32,
    pub pos_weight: Option<f32>,
}

/// `$collisionmodel file { … }` / `$collisionjoints file { … }`: the `.phy` collision model
/// (`formats::source::physics`).
#[derive(Clone, Debug, PartialEq)]
pub struct Collision {
    pub joints: bool,
    pub file: FileRef,
    /// Block commands (`$mass 10`, `$concave`, `$jointconstrain bone x limit -10 10`, …) as
    /// written.
    pub commands: Vec<AnimCommand>,
    /// `$scale` in effect when the collision model was read (Valve's compiler scales every
    /// mesh it loads, the physics mesh too).
    pub scale: f32,
    pub span: Loc,
}

impl ProjectSpec {
    /// An empty project for `source`, with the given target choice.
    pub fn new(source: PathBuf, target: TargetChoice) -> Self {
        ProjectSpec {
            source,
            target,
            name: None,
            material_dirs: Vec::new(),
            texture_dirs: Vec::new(),
            texture_groups: Vec::new(),
            texture_render_modes: Vec::new(),
            rename_materials: Vec::new(),
            gamma: None,
            external_textures: false,
            body_parts: Vec::new(),
            lods: Vec::new(),
            define_bones: Vec::new(),
            hierarchy: Vec::new(),
            rename_bones: Vec::new(),
            mirror_bones: Vec::new(),
            always_collapse: Vec::new(),
            limit_rotations: Vec::new(),
            collapse_bones: false,
            lock_bone_lengths: false,
            realign_bones: false,
            screen_align: Vec::new(),
            force_realign: Vec::new(),
            bone_merge: Vec::new(),
            root_bone: None,
            pivots: Vec::new(),
            controllers: Vec::new(),
            attachments: Vec::new(),
            hitbox_sets: Vec::new(),
            hit_groups: Vec::new(),
            eye_position: None,
            illum_position: None,
            max_eye_deflection: None,
            bbox: None,
            cbox: None,
            flags: None,
            surface_prop: None,
            contents: Vec::new(),
            static_prop: false,
            keyvalues: None,
            header_flags: Vec::new(),
            animations: Vec::new(),
            sequences: Vec::new(),
            pose_parameters: Vec::new(),
            weight_lists: Vec::new(),
            sequence_groups: Vec::new(),
            sequence_group_size: None,
            skip_transitions: Vec::new(),
            section_frames: None,
            anim_block_size: None,
            bone_save_frames: Vec::new(),
            include_models: Vec::new(),
            ik_chains: Vec::new(),
            ik_autoplay_locks: Vec::new(),
            procedural_bones: Vec::new(),
            jiggle_bones: Vec::new(),
            collision: None,
            collision_text: String::new(),
            joint_surface_props: Vec::new(),
            not_carried: Vec::new(),
        }
    }
}

/// The default root rotation of animations: `(0, 0, π/2)` radians (`source-animation.md` §2.4,
/// `goldsrc.md` §7).
pub const DEFAULT_ROTATION: [f32; 3] = [0.0, 0.0, std::f32::consts::FRAC_PI_2];

/// Default frames per second of an animation.
pub const DEFAULT_FPS: f32 = 30.0;

/// The longest prefix of `s` that C's `atof` reads, as a double, and its length.
pub fn atof_prefix(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut digits = i - int_start;
    if b.get(i) == Some(&b'.') {
        let frac_start = i + 1;
        let mut j = frac_start;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        digits += j - frac_start;
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_start = j;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let text = s.get(..i)?;
    let text = text.strip_prefix('+').unwrap_or(text);
    text.parse::<f64>().ok().map(|v| (v, i))
}

#[cfg(test)]
mod path_tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn resolve_path_keeps_leading_parent_dirs() {
        assert_eq!(
            resolve_path(Path::new(""), "../../textures"),
            PathBuf::from("../../textures")
        );
        assert_eq!(
            resolve_path(Path::new("a/b"), "../../../x"),
            PathBuf::from("../x")
        );
        assert_eq!(
            resolve_path(Path::new("a/b"), "..\\c\\.\\d.smd"),
            PathBuf::from("a/c/d.smd")
        );
        assert_eq!(resolve_path(Path::new("/"), "../x"), PathBuf::from("/x"));
    }
}
