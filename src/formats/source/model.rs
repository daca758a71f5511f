//! The Source back end's contract: [`SourceModel`], every value of the `.mdl`, `.vvd` and `.vtx`
//! files decided (`source-geometry.md` §5–§8, `source-animation.md` §3–§6). [`super::prepare`]
//! (with [`super::anim`] and [`super::strips`]) makes it from the IR; the writers lay it out and
//! decide nothing. The `P` of the record names stands for "prepared": each is one on-disk record
//! (or a run of them) with its values final and its links still indices.

use super::animcodec::{Encoded, LocalPose};
use super::face::{PEyeball, PFace};
use super::math::M34;
use super::records::{
    AimAtBone, AxisInterpBone, JiggleBone, QuatInterpInfo, VtxBoneStateChange, VtxStrip,
    VtxStripGroup, VtxVertex,
};
use super::strips::Variant;

pub struct PBone {
    pub name: String,
    pub parent: Option<usize>,
    pub pos: [f32; 3],
    pub quat: [f32; 4],
    pub rot: [f32; 3],
    pub pose_to_bone: M34,
    /// Model-space bind pose.
    pub world: M34,
    pub flags: i32,
}

/// At most three bones and their weights, held inline: no corner or vertex of a large mesh
/// has an allocation of its own for them (half a million vertices would cost 16 MB more and as
/// many calls to the allocator). Reads as a slice; a fourth pair pushed is ignored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Links3<B> {
    n: u8,
    l: [(B, f32); 3],
}

impl<B: Copy> Links3<B> {
    /// No links (`fill` only fills the unused slots).
    pub const fn empty(fill: B) -> Self {
        Links3 {
            n: 0,
            l: [(fill, 0.0); 3],
        }
    }

    /// Adds a bone and its weight; a fourth is ignored (callers keep at most three).
    pub fn push(&mut self, bone: B, weight: f32) {
        if let Some(slot) = self.l.get_mut(usize::from(self.n)) {
            *slot = (bone, weight);
            self.n += 1;
        }
    }
}

impl<B> std::ops::Deref for Links3<B> {
    type Target = [(B, f32)];
    fn deref(&self) -> &[(B, f32)] {
        self.l.get(..usize::from(self.n)).unwrap_or(&[])
    }
}

impl<B> std::ops::DerefMut for Links3<B> {
    fn deref_mut(&mut self) -> &mut [(B, f32)] {
        self.l.get_mut(..usize::from(self.n)).unwrap_or(&mut [])
    }
}

impl<'a, B> IntoIterator for &'a Links3<B> {
    type Item = &'a (B, f32);
    type IntoIter = std::slice::Iter<'a, (B, f32)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A prepared vertex's output bone indices and weights.
pub type BoneWeights = Links3<u8>;

impl Default for BoneWeights {
    fn default() -> Self {
        Links3::empty(0)
    }
}

impl FromIterator<(u8, f32)> for BoneWeights {
    fn from_iter<I: IntoIterator<Item = (u8, f32)>>(iter: I) -> Self {
        let mut w = BoneWeights::default();
        for (b, x) in iter {
            w.push(b, x);
        }
        w
    }
}

pub struct PVertex {
    pub pos: [f32; 3],
    pub normal: [f32; 3],
    /// v already flipped.
    pub uv: [f32; 2],
    /// Output bone indices and weights, largest first, 1..=3 entries.
    pub weights: BoneWeights,
    pub tangent: [f32; 4],
    /// Highest LOD that uses the vertex.
    pub group: usize,
}

pub struct PMesh {
    /// Skin-table column (texture index).
    pub material: usize,
    /// Final order: LOD group descending.
    pub vertices: Vec<PVertex>,
    /// Per LOD: triangles as mesh-local vertex indices (winding already reversed).
    pub lod_tris: Vec<Vec<[u32; 3]>>,
    pub num_lod_vertexes: [i32; 8],
    /// `mstudiomesh_t.materialtype`: 1 for an eyeball's mesh, else 0.
    pub material_type: i32,
    /// The model's eyeball index when `material_type` is 1.
    pub material_param: i32,
    /// `mstudioflex_t` of the mesh, in flex-key order, with their vertex animations.
    pub flexes: Vec<super::face::PFlex>,
}

impl PMesh {
    /// Which vertices some flex of the mesh moves.
    pub fn flexed(&self) -> Vec<bool> {
        let mut out = vec![false; self.vertices.len()];
        for f in &self.flexes {
            for a in &f.anims {
                if let Some(v) = out.get_mut(usize::from(a.index)) {
                    *v = true;
                }
            }
        }
        out
    }
}

pub struct PModel {
    pub name: String,
    pub meshes: Vec<PMesh>,
    /// `mstudioeyeball_t` of this model, in QC order.
    pub eyeballs: Vec<PEyeball>,
}

pub struct PBodyPart {
    pub name: String,
    pub models: Vec<PModel>,
}

pub struct PAttachment {
    pub name: String,
    pub bone: usize,
    pub local: M34,
}

pub struct PHitbox {
    pub bone: usize,
    pub group: i32,
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub name: String,
}

pub struct PHitboxSet {
    pub name: String,
    pub boxes: Vec<PHitbox>,
}

/// Everything the three files hold, every value decided: what [`super::prepare::prepare`] makes
/// of the IR [`Model`](crate::ir::model::Model) and the writers ([`super::write`]) only lay out.
pub struct SourceModel {
    pub name: String,
    pub static_prop: bool,
    pub flags: i32,
    pub bones: Vec<PBone>,
    pub textures: Vec<String>,
    pub cd_materials: Vec<String>,
    pub skins: Vec<Vec<i16>>,
    pub body_parts: Vec<PBodyPart>,
    pub num_lods: usize,
    /// switchPoint per LOD.
    pub lod_switch: Vec<f32>,
    pub attachments: Vec<PAttachment>,
    /// `mstudioikchain_t` with their three `mstudioiklink_t` each (`public/studio.h`).
    pub ik_chains: Vec<PIkChain>,
    /// `mstudioiklock_t` of `$ikautoplaylock`: chain, position weight, local rotation weight.
    pub ik_autoplay_locks: Vec<(i32, f32, f32)>,
    pub hitbox_sets: Vec<PHitboxSet>,
    /// Animations, sequences, pose parameters, nodes and bone scales.
    pub anim: AnimPlan,
    pub eye_position: [f32; 3],
    pub illum_position: [f32; 3],
    /// `studiohdr2_t.flMaxEyeDeflection`: the cosine of the largest eye turn, 0 for the
    /// engine's default (cos 30°, `studio.h`).
    pub max_eye_deflection: f32,
    pub hull: ([f32; 3], [f32; 3]),
    pub view_bb: ([f32; 3], [f32; 3]),
    pub surface_prop: String,
    pub contents: i32,
    pub keyvalues: Option<String>,
    /// Flex descriptions, controllers and their UI, rules and mouths.
    pub face: PFace,
    /// The collision model, when the project has one (`$collisionmodel`/`$collisionjoints`).
    pub physics: Option<super::physics::PhysPlan>,
    /// Each bone's surface property (`$jointsurfaceprop`, else the model's).
    pub bone_surface_props: Vec<String>,
    /// `$proceduralbones`, in the order the files give them.
    pub procedural: Vec<PProc>,
}

/// A procedural bone as written (`STUDIO_PROC_*` of source-sdk-2013 `studio.h`).
#[derive(Clone, Debug, PartialEq)]
pub struct PProc {
    pub bone: usize,
    pub rule: PProcRule,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PProcRule {
    /// `STUDIO_PROC_AXISINTERP`.
    AxisInterp(AxisInterpBone),
    /// `STUDIO_PROC_QUATINTERP`: the control bone and the triggers.
    QuatInterp(i32, Vec<QuatInterpInfo>),
    /// `STUDIO_PROC_AIMATBONE` (`false`) or `STUDIO_PROC_AIMATATTACH` (`true`).
    AimAt(AimAtBone, bool),
    /// `STUDIO_PROC_JIGGLE`.
    Jiggle(JiggleBone),
}

impl PProcRule {
    /// `mstudiobone_t.proctype`.
    pub fn proctype(&self) -> i32 {
        match self {
            PProcRule::AxisInterp(_) => 1,
            PProcRule::QuatInterp(..) => 2,
            PProcRule::AimAt(_, false) => 3,
            PProcRule::AimAt(_, true) => 4,
            PProcRule::Jiggle(_) => 5,
        }
    }
}

/// One VTX variant's strip groups: `groups[model][lod][mesh]`.
pub struct VtxStrips {
    pub variant: Variant,
    pub groups: Vec<Vec<Vec<Vec<Group>>>>,
}

// --- animation side ------------------------------------------------------------------------

/// `mstudiomovement_t` (§3.3).
#[derive(Clone, Debug, PartialEq)]
pub struct PMovement {
    pub endframe: i32,
    pub motionflags: i32,
    pub v0: f32,
    pub v1: f32,
    pub angle: f32,
    pub vector: [f32; 3],
    pub position: [f32; 3],
}

/// One animation (`mstudioanimdesc_t`, §3) with its local poses and encoded records.
pub struct PAnim {
    pub name: String,
    pub fps: f32,
    pub flags: i32,
    pub num_frames: usize,
    /// `num_frames × bones`, frame-major, after §2.4 and §2.5.
    pub frames: Vec<LocalPose>,
    /// Per bone (§6.6), and position weights for delta animations.
    pub weights: Vec<f32>,
    pub pos_weights: Vec<f32>,
    pub movements: Vec<PMovement>,
    pub encoded: Encoded,
    /// `mstudioikrule_t`s (`source-animation.md` §3.4), in the order Valve's compiler keeps.
    pub ikrules: Vec<PIkRule>,
}

/// `IK_SELF` … `IK_UNLATCH` (source-sdk-2013 `public/studio.h`).
pub const IK_SELF: i32 = 1;
pub const IK_WORLD: i32 = 2;
pub const IK_GROUND: i32 = 3;
pub const IK_RELEASE: i32 = 4;
pub const IK_ATTACHMENT: i32 = 5;
pub const IK_UNLATCH: i32 = 6;

/// One IK rule of an animation (`mstudioikrule_t`, `source-animation.md` §3.4), with its
/// frames still as frames (the writer turns them into cycles) and its compressed error
/// (`mstudiocompressedikerror_t`) when it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct PIkRule {
    pub index: i32,
    pub kind: i32,
    pub chain: i32,
    pub bone: i32,
    pub slot: i32,
    pub height: f32,
    pub radius: f32,
    pub floor: f32,
    pub pos: [f32; 3],
    pub q: [f32; 4],
    /// start, peak, tail, end, contact, in frames.
    pub frames: [i32; 5],
    pub attachment: String,
    /// Six scales and six run-length streams (x, y, z, then Euler x, y, z).
    pub error: Option<([f32; 6], [Vec<u8>; 6])>,
}

/// `mstudioevent_t` (§6.3).
#[derive(Clone, Debug, PartialEq)]
pub struct PEvent {
    pub cycle: f32,
    pub event: i32,
    pub kind: i32,
    pub options: String,
    /// Named events only; empty for numbered ones.
    pub name: String,
}

/// `STUDIO_AL_SPLINE`: the layer's weight eases in and out (§6.7).
pub const AL_SPLINE: i32 = 0x40;
/// `STUDIO_AL_XFADE`: after its tail the layer cross-fades against the weight beneath it.
pub const AL_XFADE: i32 = 0x80;
/// `STUDIO_AL_NOBLEND`: the layer's weight ignores the weight beneath it.
pub const AL_NOBLEND: i32 = 0x200;
/// `STUDIO_AL_LOCAL`: the layer is blended in local space.
pub const AL_LOCAL: i32 = 0x1000;
/// `STUDIO_AL_POSE`: the autolayer is driven by pose parameter `iPose`.
pub const AL_POSE: i32 = 0x4000;

/// `mstudioautolayer_t` (§6.7).
#[derive(Clone, Debug, PartialEq)]
pub struct PAutoLayer {
    pub sequence: i16,
    pub pose: i16,
    pub flags: i32,
    pub start: f32,
    pub peak: f32,
    pub tail: f32,
    pub end: f32,
    /// Not written: start, peak, tail and end as the QC gave them (frames of the sequence's
    /// first animation, or pose-parameter units), which `usesequence` IK rules blend by.
    pub frames: [f32; 4],
}

/// `mstudioseqdesc_t` (§6).
pub struct PSeq {
    pub name: String,
    pub activity: String,
    pub actweight: i32,
    pub flags: i32,
    /// Animation indices, `groupsize[0] × groupsize[1]`, x fastest (§6.4).
    pub anims: Vec<i16>,
    pub groupsize: [i32; 2],
    pub paramindex: [i32; 2],
    pub paramstart: [f32; 2],
    pub paramend: [f32; 2],
    /// Pose keys when a grid axis has more than one entry (§6.4); empty otherwise.
    pub posekeys: Vec<f32>,
    pub events: Vec<PEvent>,
    pub fadein: f32,
    pub fadeout: f32,
    pub entry_node: i32,
    pub exit_node: i32,
    pub nodeflags: i32,
    /// One weight per bone (§6.6).
    pub weights: Vec<f32>,
    pub autolayers: Vec<PAutoLayer>,
    pub bbox: ([f32; 3], [f32; 3]),
    pub keyvalues: Option<String>,
    /// `mstudioiklock_t` of the sequence's `iklock`s: chain, position weight, local rotation
    /// weight.
    pub iklocks: Vec<(i32, f32, f32)>,
    /// The largest IK rule count of the sequence's animations (§6.8).
    pub numikrules: i32,
}

/// `mstudioposeparamdesc_t` (§6.5).
#[derive(Clone, Debug, PartialEq)]
pub struct PPoseParam {
    pub name: String,
    pub flags: i32,
    pub start: f32,
    pub end: f32,
    pub loop_range: f32,
}

/// Everything the animation side adds to the plan.
pub struct AnimPlan {
    pub anims: Vec<PAnim>,
    pub seqs: Vec<PSeq>,
    pub pose_params: Vec<PPoseParam>,
    /// Node names, numbered from 1 in this order (§6.10).
    pub nodes: Vec<String>,
    /// `nodes² ` transition bytes (§6.10).
    pub node_table: Vec<u8>,
    /// Per bone: `(posscale, rotscale)` (§5.1).
    pub scales: Vec<([f32; 3], [f32; 3])>,
    /// `$includemodel` files, `models/` prepended (§8.2).
    pub include_models: Vec<String>,
    /// `$limitrotation`: bones with BONE_FIXED_ALIGNMENT and their `qAlignment`.
    pub alignments: Vec<(usize, [f32; 4])>,
    /// `$animblocksize`: the animation data goes to an `.ani` file in blocks.
    pub blocks: Option<AnimBlocks>,
}

/// How the animation data is demand-loaded (`$animblocksize`, `$bonesaveframe`; the 2006 SDK's
/// `write.cpp`, `WriteAnimations` and `WriteModelFiles`).
#[derive(Clone, Debug, PartialEq)]
pub struct AnimBlocks {
    /// Bytes a block may hold before the next animation starts a new one (more only when one
    /// animation alone is larger).
    pub size: usize,
    /// Per plan bone: `BONE_HAS_SAVEFRAME_POS`, `BONE_HAS_SAVEFRAME_ROT` — whose first frame each
    /// animation keeps in the MDL for the engine to show while its block loads.
    pub save: Vec<(bool, bool)>,
}

/// `BONE_HAS_SAVEFRAME_POS` / `_ROT` (source-sdk-2013 `public/studio.h`).
pub const BONE_HAS_SAVEFRAME_POS: i32 = 0x0020_0000;
pub const BONE_HAS_SAVEFRAME_ROT: i32 = 0x0040_0000;

// --- VTX ---------------------------------------------------------------------------------------

/// A built strip group, with its records' counts filled and offsets relative to the group's
/// own arrays (the writer turns them into byte offsets).
pub struct Group {
    pub flags: u8,
    pub verts: Vec<VtxVertex>,
    pub indices: Vec<u16>,
    pub strips: Vec<(VtxStrip, Vec<VtxBoneStateChange>)>,
}

impl Group {
    pub fn header(&self) -> VtxStripGroup {
        VtxStripGroup {
            num_verts: self.verts.len() as i32,
            num_indices: self.indices.len() as i32,
            num_strips: self.strips.len() as i32,
            flags: self.flags,
            ..Default::default()
        }
    }
}

/// An IK chain as written (source-sdk-2013 `public/studio.h`, `mstudioikchain_t` and
/// `mstudioiklink_t`): name, the output bones from the first link (hip) to the end (foot),
/// the first link's knee direction (the others' are zero, as Valve's compiler leaves them).
#[derive(Clone, Debug, PartialEq)]
pub struct PIkChain {
    pub name: String,
    pub bones: [i32; 3],
    pub knee: [f32; 3],
    /// Not in the record: what a `footstep` IK rule takes from the chain (`ir::model::IkChain`).
    pub height: f32,
    pub radius: f32,
    pub floor: f32,
    pub center: [f32; 3],
}
