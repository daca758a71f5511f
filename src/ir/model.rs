//! The whole model, engine-neutral: what [`build_model`](crate::build::build_model) makes of a
//! [`ProjectSpec`](crate::project::ProjectSpec) and the SMD files it names, and what the GoldSrc
//! (MDL v10) and Source (MDL v48) back ends read.
//!
//! # Invariants (hold for every `Model` that `build_model` returns)
//!
//! * **Handles are in range.** Every [`BoneId`] indexes [`Model::bones`], every [`MaterialId`]
//!   indexes [`Model::materials`], every [`MeshId`] indexes [`Model::meshes`], every [`AnimId`]
//!   indexes [`Model::animations`] and every [`SeqId`] indexes [`Model::sequences`].
//! * **Parents before children.** A bone's parent has a lower index than the bone, so world
//!   matrices can be built in index order (both engines require it).
//! * **Spans everywhere.** Every item carries the [`FileSpan`] of the text it came from: the
//!   QC/TOML command for project items, the SMD line for bones and triangles.
//! * **Full `f32`, nothing quantised, no engine limit applied.** Limits (bone counts, name
//!   lengths, blend counts) belong to the target's validation.
//! * **Values as the source files give them**, with one exception: mesh positions and rest-pose
//!   positions are multiplied by their file's scale (both compilers do so when they load a
//!   file). The root transform of animations (`origin`, `rotation`, `scale`) is *not* applied:
//!   the two compilers apply it in different orders (GoldSrc: `(p − origin)·scale`, Source:
//!   `p·scale − origin`, `goldsrc.md` §7, `source-animation.md` §2.4), so each back end does it.
//! * `$staticprop` (Source): the bones are not merged here (a later pass does it); a command
//!   naming the bone `static_prop` that pass makes is resolved to bone 0.
//! * Mesh corners: weights are in the merged skeleton, non-empty and add up to 1. For GoldSrc
//!   each corner lies wholly on its first-column bone (Valve's HL1 tool reads nine values and
//!   ignores weights).

use std::path::PathBuf;

use crate::diag::{Diagnostic, FileId, FileSpan, Spanned};

use super::written::{AnimCommand, Blend, Event, MotionFlag, Target, Transition};

use super::anim::Pose;
use super::mesh::Mesh;
use super::skeleton::BoneId;

macro_rules! id {
    ($(#[doc = $doc:literal])* $name:ident) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// Index of a material in [`Model::materials`].
    MaterialId
);
id!(
    /// Index of a loaded reference mesh in [`Model::meshes`].
    MeshId
);
id!(
    /// Index of an animation in [`Model::animations`].
    AnimId
);
id!(
    /// Index of a sequence in [`Model::sequences`].
    SeqId
);

/// A whole model.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub target: Target,
    /// `$modelname` as written.
    pub name: Option<Spanned<String>>,
    /// `$cdmaterials` (Source), in search order.
    pub material_dirs: Vec<Spanned<String>>,
    /// `$cdtexture` (GoldSrc), in search order.
    pub texture_dirs: Vec<Spanned<PathBuf>>,
    /// Every material, in order of first appearance across body parts (then LOD meshes, then
    /// materials only named by `$texrendermode` or the texture group). Looked up without regard
    /// to case; the first spelling is kept (`goldsrc.md` §8.2).
    pub materials: Vec<Material>,
    /// Skin families from the first texture group (or the identity table).
    pub skins: SkinTable,
    /// `$renamematerial from to` (Source), for the back end.
    pub rename_materials: Vec<(Spanned<String>, Spanned<String>)>,
    pub gamma: Option<Spanned<f32>>,
    pub external_textures: bool,

    /// The merged skeleton, parents first.
    pub bones: Vec<ModelBone>,
    /// Every loaded reference mesh: body part options first, then LOD replacement meshes.
    pub meshes: Vec<ModelMesh>,
    pub body_parts: Vec<BodyPart>,
    pub lods: Vec<Lod>,

    pub animations: Vec<Anim>,
    pub sequences: Vec<Seq>,
    pub pose_parameters: Vec<super::written::PoseParameter>,
    pub weight_lists: Vec<WeightList>,
    pub sequence_groups: Vec<Spanned<String>>,
    pub sequence_group_size: Option<Spanned<i32>>,
    pub skip_transitions: Vec<Vec<Spanned<String>>>,
    pub section_frames: Option<Spanned<(i32, i32)>>,
    pub anim_block_size: Option<Spanned<i32>>,
    pub bone_save_frames: Vec<super::written::BoneSaveFrame>,
    pub include_models: Vec<Spanned<String>>,

    pub attachments: Vec<Attachment>,
    /// `$hboxset`s; empty when the project gives no `$hbox` (the back end generates them).
    pub hitbox_sets: Vec<HitboxSet>,
    /// `$hgroup group bone`.
    pub hit_groups: Vec<(i32, BoneId, FileSpan)>,
    pub controllers: Vec<Controller>,
    /// `$mirrorbone` (GoldSrc): bones whose positions (and their descendants') are negated.
    pub mirror_bones: Vec<(BoneId, FileSpan)>,
    /// `$alwayscollapse` (Source).
    pub always_collapse: Vec<(BoneId, FileSpan)>,
    /// `$limitrotation` (Source): the bone, and whether sequences were named after it (then
    /// Valve's compiler aligns to the rest pose only).
    pub limit_rotations: Vec<(BoneId, bool, FileSpan)>,
    pub collapse_bones: bool,
    /// `$lockbonelengths` (Source).
    pub lock_bone_lengths: bool,
    /// `$realignbones` (Source).
    pub realign_bones: bool,
    /// `$screenalign` (Source): the bone and its flag, `BONE_SCREEN_ALIGN_SPHERE` (0x08) or
    /// `BONE_SCREEN_ALIGN_CYLINDER` (0x10).
    pub screen_align: Vec<(BoneId, i32, FileSpan)>,
    /// `$forcerealign` (Source): the bone and its turn (Euler `x y z` in radians, as `$definebone`
    /// and SMD rotations: `Rz·Ry·Rx`).
    pub force_realign: Vec<(BoneId, [f32; 3], FileSpan)>,
    /// `$bonemerge` (Source).
    pub bone_merge: Vec<(BoneId, FileSpan)>,
    /// `$ikchain` (Source), in QC order.
    pub ik_chains: Vec<IkChain>,
    /// `$proceduralbones` (Source): helper bones the engine poses from other bones.
    pub procedural_bones: Vec<ProcBone>,
    /// `$ikautoplaylock` (Source): the chain (index in `ik_chains`) and the two weights.
    pub ik_autoplay_locks: Vec<(usize, f32, f32)>,
    /// `$root`.
    pub root_bone: Option<(BoneId, FileSpan)>,
    /// `$pivot index bone` (GoldSrc; stored, unused by Valve's tool): `None` when the bone is
    /// not in the skeleton.
    pub pivots: Vec<(i32, Option<BoneId>, FileSpan)>,

    /// `$eyeposition` as written (the compilers store `(-y, x, z)`).
    pub eye_position: Option<Spanned<[f32; 3]>>,
    pub illum_position: Option<Spanned<[f32; 3]>>,
    /// `$maxeyedeflection`, degrees.
    pub max_eye_deflection: Option<Spanned<f32>>,
    pub bbox: Option<Spanned<[[f32; 3]; 2]>>,
    pub cbox: Option<Spanned<[[f32; 3]; 2]>>,
    pub flags: Option<Spanned<i32>>,
    pub surface_prop: Option<Spanned<String>>,
    pub contents: Vec<Spanned<String>>,
    pub static_prop: bool,
    pub keyvalues: Option<Spanned<String>>,
    pub header_flags: Vec<Spanned<String>>,
    pub collision: Option<Collision>,
    /// `$collisiontext`: appended to the `.phy`'s text.
    pub collision_text: String,
    /// `$jointsurfaceprop`: (bone, surface property).
    pub joint_surface_props: Vec<(String, String)>,
    /// Flexes, controllers, rules, eyeballs and mouths of the `$model` blocks (Source).
    pub face: super::face::Face,
}

impl Model {
    /// Finds a bone by name without regard to case (the first match).
    pub fn find_bone(&self, name: &str) -> Option<BoneId> {
        self.bones
            .iter()
            .position(|b| b.name.eq_ignore_ascii_case(name))
            .map(|i| BoneId(i as u32))
    }

    /// Finds a material by name without regard to case.
    pub fn find_material(&self, name: &str) -> Option<MaterialId> {
        self.materials
            .iter()
            .position(|m| m.name.eq_ignore_ascii_case(name))
            .map(|i| MaterialId(i as u32))
    }

    pub fn bone(&self, id: BoneId) -> Option<&ModelBone> {
        self.bones.get(id.index())
    }

    pub fn mesh(&self, id: MeshId) -> Option<&ModelMesh> {
        self.meshes.get(id.index())
    }

    pub fn animation(&self, id: AnimId) -> Option<&Anim> {
        self.animations.get(id.index())
    }
}

/// A material (GoldSrc: a BMP texture name; Source: a material path below `$cdmaterials`).
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    /// The first spelling seen (SMD material line, trimmed; may carry `.bmp`).
    pub name: String,
    /// Every `$texrendermode` (GoldSrc) naming it, in QC order: `additive` or `masked`, as
    /// written. Valve's tool ORs the flag of each into the texture (goldsrc.md §8.2), so a
    /// texture named twice, once per mode, is both additive and masked.
    pub render_modes: Vec<Spanned<String>>,
    /// Whether a triangle of some mesh uses it (materials only named by a texture group or a
    /// render mode are not).
    pub used: bool,
    /// Where it first appeared.
    pub span: FileSpan,
    /// GoldSrc: the texture file the builder found and read for it (`None` for Source, whose
    /// materials are the game's).
    pub texture: Option<Texture>,
}

/// A GoldSrc material's texture as the load stage found and read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Texture {
    /// The decoded image; `None` when it was not found or cannot be used.
    pub image: Option<Image>,
    /// What finding and reading it reported (a file found in another case, a missing or broken
    /// file), in order. The back end reports them where it takes the texture, in the order of
    /// Valve's texture list, so that messages come as Valve's tool would give them.
    pub diagnostics: Vec<Diagnostic>,
}

/// An 8-bit image with its palette (`goldsrc.md` §8.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    /// Rows top-down, each `stride()` bytes (the width rounded up to 4).
    pub pixels: Vec<u8>,
    /// 256 RGB triples (768 bytes).
    pub palette: Vec<u8>,
}

impl Image {
    /// Bytes per stored row: the width rounded up to a multiple of 4.
    pub fn stride(&self) -> usize {
        (self.width + 3) & !3
    }

    /// The palette index at column `x`, row `y` (top-down).
    pub fn at(&self, x: usize, y: usize) -> Option<u8> {
        if x >= self.width || y >= self.height {
            return None;
        }
        self.pixels.get(y * self.stride() + x).copied()
    }
}

/// Skin families: `families[f][r]` is the material that replaces material `r` in skin `f`.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinTable {
    /// How many materials the table covers: the materials that existed before the texture group
    /// added its own (`numskinref` in GoldSrc). Every row has this length.
    pub num_ref: usize,
    /// Row 0 is the identity.
    pub families: Vec<Vec<MaterialId>>,
    /// The texture group the table came from, if any.
    pub span: Option<FileSpan>,
    /// Every `$texturegroup` as the QC names its materials, in QC order (the first is the one
    /// the table comes from). GoldSrc keeps them all: Valve's HL1 tool adds the textures of
    /// every group to its list and takes each later row's texture-group parent from them
    /// (`studiomdl.c` `Cmd_TextureGroup`), though only the first group makes skins. Source
    /// keeps the first only.
    pub groups: Vec<TextureGroupRows>,
}

/// One `$texturegroup`: its rows (skins) of materials, each as named.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureGroupRows {
    pub rows: Vec<Vec<MaterialId>>,
    /// The group's name in the QC.
    pub span: FileSpan,
}

/// A bone of the merged skeleton.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelBone {
    /// The first spelling seen (after `$renamebone`).
    pub name: String,
    pub parent: Option<BoneId>,
    /// Rest pose: position (already multiplied by the scale of the file that introduced the
    /// bone) and SMD Euler rotation in radians (`R = Rz(z)·Ry(y)·Rx(x)`), relative to
    /// [`rest_parent`](Self::rest_parent).
    ///
    /// For `$definebone` the QAngle (pitch, yaw, roll) in degrees becomes the Euler
    /// `(roll, pitch, yaw)` in radians, which gives the same matrix
    /// (`AngleMatrix(QAngle) = Rz(yaw)·Ry(pitch)·Rx(roll)`).
    pub rest: Pose,
    /// The bone the rest pose is relative to: the parent when the bone entered the table. It
    /// differs from [`parent`](Self::parent) only after `$hierarchy` re-parents a bone; Source's
    /// compiler then keeps the bone's world matrix and recomputes the local transform
    /// (`source-animation.md` §2.3), which the back end does with its matrix code.
    pub rest_parent: Option<BoneId>,
    /// `$definebone`'s optional fixup (position, QAngle degrees), as written.
    pub fixup: Option<([f32; 3], [f32; 3])>,
    /// Whether the bone comes from `$definebone`.
    pub defined: bool,
    /// The `nodes` line of the file that introduced it, or the `$definebone` command.
    pub span: FileSpan,
}

/// One loaded reference mesh, its bones and materials mapped onto the whole model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelMesh {
    /// The file name without folders and extension (`replacemodel` and GoldSrc's model name use
    /// it), as written in the project.
    pub name: String,
    /// The file as found on disk.
    pub path: PathBuf,
    pub file: FileId,
    /// Triangles; corner bones and weights are merged-skeleton [`BoneId`]s, corner positions
    /// multiplied by [`scale`](Self::scale). [`Triangle::material`](super::Triangle) indexes
    /// `mesh.materials` (the file's own names), which [`materials`](Self::materials) maps to the
    /// model's.
    pub mesh: Mesh,
    /// `mesh.materials[i]` is the model's material `materials[i]`.
    pub materials: Vec<MaterialId>,
    pub reverse: bool,
    pub scale: f32,
    /// GoldSrc's leftover origin offset (`goldsrc.md` §8.1), not applied.
    pub origin_offset: [f32; 3],
    /// The file reference in the project.
    pub span: FileSpan,
    /// The file reference as written in the project (GoldSrc stores it as the model's name).
    pub written: String,
    /// The file's own skeleton, in `nodes` order: Valve's HL1 tool moves each model's vertices
    /// into bone space with the rest pose of the model's own file (`goldsrc.md` §8.1).
    pub file_bones: Vec<MeshBone>,
    /// Corner positions as the file gives them (before the scale), parallel to
    /// `mesh.triangles`: GoldSrc computes `(p − origin_offset)·scale` from them (empty when
    /// building for Source, which does not read them).
    pub source_positions: Vec<[[f32; 3]; 3]>,
}

/// A bone of a mesh file's own skeleton.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshBone {
    /// After `$renamebone`.
    pub name: String,
    /// Parent, an index into [`ModelMesh::file_bones`].
    pub parent: Option<u32>,
    /// Rest pose, position multiplied by the mesh's scale (GoldSrc: the last value the file
    /// writes for the bone, as [`ModelBone::rest`]).
    pub rest: Pose,
    /// The merged-skeleton bone of the same name, if any.
    pub bone: Option<BoneId>,
}

/// The model bone file bone `q` stands for: its own ([`MeshBone::bone`]), else its nearest
/// ancestor's that the model has (a bone of a file loaded only as an LOD's replacement, as the
/// 2006 SDK maps source bones); `None` when no bone up the chain is in the model.
pub fn nearest_model_bone(file_bones: &[MeshBone], q: usize) -> Option<BoneId> {
    let mut cur = Some(q);
    for _ in 0..=file_bones.len() {
        let b = file_bones.get(cur?)?;
        if b.bone.is_some() {
            return b.bone;
        }
        cur = b.parent.map(|p| p as usize);
    }
    None
}

impl ModelMesh {
    /// The model material of a triangle.
    pub fn material_of(&self, t: &super::Triangle) -> Option<MaterialId> {
        self.materials.get(t.material as usize).copied()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct BodyPart {
    pub name: Spanned<String>,
    pub options: Vec<BodyOption>,
    pub span: FileSpan,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BodyOption {
    Blank(FileSpan),
    Mesh(MeshId),
}

/// `$lod` / `$shadowlod`, with its meshes resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Lod {
    /// `None` for the shadow LOD.
    pub distance: Option<Spanned<f32>>,
    /// `(replaced, replacement)`: both loaded meshes.
    pub replace_models: Vec<(MeshId, MeshId, FileSpan)>,
    pub remove_models: Vec<(MeshId, FileSpan)>,
    pub replace_materials: Vec<(Spanned<String>, Spanned<String>)>,
    pub remove_meshes: Vec<Spanned<String>>,
    pub replace_bones: Vec<(BoneId, BoneId, FileSpan)>,
    pub bone_tree_collapse: Vec<(BoneId, FileSpan)>,
    pub facial: Option<bool>,
    pub use_shadowlod_materials: bool,
    pub span: FileSpan,
}

/// One bone of an animation's own file.
#[derive(Clone, Debug, PartialEq)]
pub struct AnimBone {
    /// After `$renamebone`.
    pub name: String,
    /// Parent in the file (an index into [`Anim::file_bones`]).
    pub parent: Option<u32>,
    /// The merged-skeleton bone of the same name, if any (GoldSrc: exact name; Source: without
    /// regard to case). Bones of the file without one are ignored by the back ends.
    pub bone: Option<BoneId>,
}

/// An animation: the frames of one SMD, with the parameters each back end applies.
#[derive(Clone, Debug, PartialEq)]
pub struct Anim {
    pub name: Spanned<String>,
    pub path: PathBuf,
    pub file: FileId,
    /// The file's bones, in `nodes` order.
    pub file_bones: Vec<AnimBone>,
    /// `num_frames × file_bones.len()`, frame-major, SMD values as written (no scale, no root
    /// transform), gaps filled with the target's rule (GoldSrc [`FillRule::Zero`](super::FillRule::Zero), Source
    /// [`FillRule::HoldPrevious`](super::FillRule::HoldPrevious)), only the frames in the `frames` range.
    pub frames: Vec<Pose>,
    /// Parallel to [`frames`](Self::frames): whether the SMD gave the value (GoldSrc leaves a
    /// missing root bone at zero instead of applying the root transform to it).
    pub given: Vec<bool>,
    pub num_frames: usize,
    /// The SMD `time` of frame 0.
    pub first_time: i32,
    pub fps: f32,
    pub looping: bool,
    /// Translation subtracted from root bones.
    pub origin: [f32; 3],
    /// Root rotation, Euler radians.
    pub rotation: [f32; 3],
    /// Position scale. Source loads each file once: the scale of the first load wins.
    pub scale: f32,
    pub motion: Vec<MotionFlag>,
    pub start_loop: Option<i32>,
    pub flags: Vec<Spanned<String>>,
    pub commands: Vec<AnimCommand>,
    pub span: FileSpan,
}

impl Anim {
    /// The file's value of file bone `b` at frame `f`.
    pub fn pose(&self, f: usize, b: usize) -> Option<Pose> {
        if b >= self.file_bones.len() {
            return None;
        }
        self.frames.get(f * self.file_bones.len() + b).copied()
    }

    /// The file bone that drives merged bone `bone`, if any.
    pub fn file_bone_of(&self, bone: BoneId) -> Option<usize> {
        self.file_bones.iter().position(|b| b.bone == Some(bone))
    }
}

/// A sequence.
#[derive(Clone, Debug, PartialEq)]
pub struct Seq {
    pub name: Spanned<String>,
    /// Blend animations, row-major, `blend_width` per row.
    pub animations: Vec<AnimId>,
    pub blend_width: usize,
    pub blends: Vec<Blend>,
    pub activity: Option<super::written::Activity>,
    pub events: Vec<Event>,
    pub pivots: Vec<[i32; 3]>,
    pub node: Option<Spanned<String>>,
    pub transition: Option<Transition>,
    pub fade_in: Option<f32>,
    pub fade_out: Option<f32>,
    pub exit_phase: Option<f32>,
    pub flags: Vec<Spanned<String>>,
    pub extras: Vec<AnimCommand>,
    pub group: i32,
    pub span: FileSpan,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Attachment {
    pub name: Spanned<String>,
    pub bone: BoneId,
    pub position: [f32; 3],
    pub flags: Vec<Spanned<String>>,
    pub rotate_deg: Option<[f32; 3]>,
    pub x_and_z_axes: Option<[f32; 6]>,
    pub span: FileSpan,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HitboxSet {
    pub name: Spanned<String>,
    pub boxes: Vec<Hitbox>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hitbox {
    pub group: i32,
    pub bone: BoneId,
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub name: Option<Spanned<String>>,
    pub span: FileSpan,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Controller {
    /// 0..3, or 4 for `mouth`.
    pub index: i32,
    pub bone: BoneId,
    pub axis: MotionFlag,
    pub start: f32,
    pub end: f32,
    pub span: FileSpan,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WeightList {
    pub name: Spanned<String>,
    /// `(bone, weight, position weight)`.
    pub weights: Vec<(BoneId, f32, Option<f32>)>,
}

/// The collision model as loaded: its mesh, the mesh's skeleton and the block's commands
/// (`formats::source::physics` makes the `.phy` of it).
#[derive(Clone, Debug, PartialEq)]
pub struct Collision {
    pub joints: bool,
    pub path: PathBuf,
    pub file: FileId,
    pub mesh: Mesh,
    /// The file's own skeleton (bone names of a jointed collision model).
    pub skeleton: super::Skeleton,
    pub commands: Vec<AnimCommand>,
    pub span: FileSpan,
}

/// A procedural bone of `$proceduralbones` (`build::procedural`), bones resolved; values as the
/// file gives them (the trigger positions before the control bone's share is added).
#[derive(Clone, Debug, PartialEq)]
pub struct ProcBone {
    pub bone: BoneId,
    pub rule: ProcRule,
    /// The name in the file.
    pub span: FileSpan,
}

/// What poses a procedural bone (source-sdk-2013 `studio.h`, `STUDIO_PROC_*`).
#[derive(Clone, Debug, PartialEq)]
pub enum ProcRule {
    /// `<helper>`: from the control bone's local rotation, by the nearest triggers.
    QuatInterp {
        control: BoneId,
        /// `<display>`'s distance ÷ 100: the share of the control bone's rest offset added to
        /// every trigger position.
        percentage: f32,
        triggers: Vec<QuatTrigger>,
    },
    /// `<aimconstraint>`: turned to aim at an attachment or a bone.
    AimAt {
        parent: BoneId,
        aim: AimTarget,
        aim_vector: [f32; 3],
        up_vector: [f32; 3],
        base_pos: [f32; 3],
    },
    /// The older axis interpolation: six poses picked by the control bone's axis.
    AxisInterp {
        control: BoneId,
        axis: i32,
        pos: [[f32; 3]; 6],
        quat: [[f32; 4]; 6],
    },
    /// `$jigglebone`: simulated by the game's client as a spring around its animated pose.
    Jiggle(JiggleParams),
}

/// `mstudiojigglebone_t`'s values (source-sdk-2013 `public/studio.h`): the `JIGGLE_*` flags and
/// the floats in record order ([`JIGGLE_FIELDS`]), angles in radians.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JiggleParams {
    pub flags: i32,
    pub values: [f32; JIGGLE_FIELDS.len()],
}

/// `JIGGLE_IS_FLEXIBLE` … `JIGGLE_IS_BOING` (source-sdk-2013 `public/studio.h`).
pub mod jiggle_flag {
    pub const IS_FLEXIBLE: i32 = 0x01;
    pub const IS_RIGID: i32 = 0x02;
    pub const HAS_YAW_CONSTRAINT: i32 = 0x04;
    pub const HAS_PITCH_CONSTRAINT: i32 = 0x08;
    pub const HAS_ANGLE_CONSTRAINT: i32 = 0x10;
    pub const HAS_LENGTH_CONSTRAINT: i32 = 0x20;
    pub const HAS_BASE_SPRING: i32 = 0x40;
    pub const IS_BOING: i32 = 0x80;
    /// Every flag with its name, for inspect.
    pub const NAMES: [(i32, &str); 8] = [
        (IS_FLEXIBLE, "flexible"),
        (IS_RIGID, "rigid"),
        (HAS_YAW_CONSTRAINT, "yaw_constraint"),
        (HAS_PITCH_CONSTRAINT, "pitch_constraint"),
        (HAS_ANGLE_CONSTRAINT, "angle_constraint"),
        (HAS_LENGTH_CONSTRAINT, "length_constraint"),
        (HAS_BASE_SPRING, "base_spring"),
        (IS_BOING, "boing"),
    ];
}

/// The floats of `mstudiojigglebone_t` after its flags, in record order, by their names in
/// source-sdk-2013 `public/studio.h` (angles in radians; `boingImpactAngle` is compared with
/// the cosine of the turn between two velocities).
pub const JIGGLE_FIELDS: [&str; 34] = [
    "length",
    "tipMass",
    "yawStiffness",
    "yawDamping",
    "pitchStiffness",
    "pitchDamping",
    "alongStiffness",
    "alongDamping",
    "angleLimit",
    "minYaw",
    "maxYaw",
    "yawFriction",
    "yawBounce",
    "minPitch",
    "maxPitch",
    "pitchFriction",
    "pitchBounce",
    "baseMass",
    "baseStiffness",
    "baseDamping",
    "baseMinLeft",
    "baseMaxLeft",
    "baseLeftFriction",
    "baseMinUp",
    "baseMaxUp",
    "baseUpFriction",
    "baseMinForward",
    "baseMaxForward",
    "baseForwardFriction",
    "boingImpactSpeed",
    "boingImpactAngle",
    "boingDampingRate",
    "boingFrequency",
    "boingAmplitude",
];

/// One `<trigger>`: tolerance (radians), the control rotation that triggers, and the helper's
/// pose then (position includes the `<basepos>`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuatTrigger {
    pub tolerance: f32,
    pub trigger: [f32; 4],
    pub quat: [f32; 4],
    pub pos: [f32; 3],
}

/// What an aim constraint aims at.
#[derive(Clone, Debug, PartialEq)]
pub enum AimTarget {
    Attachment(String),
    Bone(BoneId),
}

/// An IK chain: its three bones from the first link (hip, shoulder) to the end (foot, hand),
/// and the first link's knee direction (2006 SDK `simplify.cpp`, `LinkIKChains`).
#[derive(Clone, Debug, PartialEq)]
pub struct IkChain {
    pub name: String,
    pub bones: [BoneId; 3],
    pub knee: [f32; 3],
    /// What a `footstep` rule takes from the chain (`written::IkChain`).
    pub height: f32,
    pub radius: f32,
    pub floor: f32,
    pub center: [f32; 3],
    /// The chain's name in the project.
    pub span: FileSpan,
}
