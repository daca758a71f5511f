//! A Source model's face: flex descriptions, controllers, rules, mouths, eyeballs and the flex
//! keys that drive vertex animation (`source-geometry.md` §6.6, the MDL v48 seed's flex
//! tables). Built by `build::face` from the `$model` blocks; written by the Source back end.
//!
//! Numbering follows Valve's compiler (2006 SDK `studiomdl.cpp`): flex descriptions are one list
//! for the whole model, made in the order the blocks name them; rules name controllers and
//! descriptions by index.

use crate::diag::FileSpan;

use super::model::{MaterialId, MeshId};
use super::skeleton::BoneId;

/// Everything of the face the model has (empty when no `$model` block has one).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Face {
    /// Flex descriptions (`mstudioflexdesc_t`): names, in Valve's order.
    pub flex_descs: Vec<String>,
    pub controllers: Vec<FlexController>,
    pub rules: Vec<FlexRule>,
    /// Indexed by the QC's mouth index (gaps are never written: Valve counts up to the largest).
    pub mouths: Vec<Mouth>,
    pub eyeballs: Vec<Eyeball>,
    pub keys: Vec<FlexKey>,
    /// The VTA files the keys use, each once.
    pub vtas: Vec<Vta>,
    /// The last `defaultflex` key (Valve's compiler keeps one for the model): its shape
    /// replaces the base positions of the vertices it matches.
    pub default_key: Option<usize>,
}

/// A loaded VTA file: its shapes by `time`, sorted, and the frame range its `skeleton` section
/// gives (Valve's compiler numbers frames from the first skeleton `time`; a frame in the range
/// without a shape moves nothing).
#[derive(Clone, Debug, PartialEq)]
pub struct Vta {
    pub path: std::path::PathBuf,
    pub file: crate::diag::FileId,
    pub shapes: Vec<super::anim::Shape>,
    pub first_time: i32,
    pub num_frames: usize,
    /// The body part mesh scale (the VTA's positions are multiplied by it, as the reference's).
    pub scale: f32,
    /// What a DMX mesh's shapes have besides a VTA's (`None` for a VTA file, whose shapes are
    /// matched as written, as Valve's 2006 compiler matches them).
    pub dmx: Option<DmxShapeVertices>,
}

/// Per base vertex id of a DMX mesh's shapes ([`MeshShapes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DmxShapeVertices {
    /// The side a key's vertex belongs to (1: wholly a stereo key's description, 0: wholly its
    /// pair): the file's `balance`.
    pub balance: Vec<f32>,
    /// The model bones the vertex is weighted to: the shapes are re-posed with their mesh.
    pub links: Vec<Vec<(BoneId, f32)>>,
}

impl Vta {
    /// The shape of a QC frame number (`None`: the frame moves nothing).
    pub fn shape(&self, frame: i32) -> Option<&super::anim::Shape> {
        let time = self.first_time.checked_add(frame)?;
        self.shapes.iter().find(|s| s.time == time)
    }

    /// Whether `frame` is one of the file's frames.
    pub fn has_frame(&self, frame: i32) -> bool {
        frame >= 0 && (frame as usize) < self.num_frames || self.shape(frame).is_some()
    }

    /// The base shape (frame 0), whose positions match the reference mesh.
    pub fn base(&self) -> Option<&super::anim::Shape> {
        self.shape(0)
    }
}

/// `mstudioflexcontroller_t`: a slider the game sets.
#[derive(Clone, Debug, PartialEq)]
pub struct FlexController {
    /// The group (`eyelid`, `mouth`, `phoneme` …), stored as the controller's type.
    pub group: String,
    pub name: String,
    pub min: f32,
    pub max: f32,
}

/// One operation of a flex rule's stack program (`mstudioflexop_t`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlexOp {
    Const(f32),
    /// A controller's value.
    Fetch1(usize),
    /// Another flex description's value (computed by an earlier rule).
    Fetch2(usize),
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Max,
    Min,
}

/// `mstudioflexrule_t`: the value of a flex description, computed from controllers.
#[derive(Clone, Debug, PartialEq)]
pub struct FlexRule {
    pub flex: usize,
    pub ops: Vec<FlexOp>,
    pub span: FileSpan,
}

/// `mstudiomouth_t`.
#[derive(Clone, Debug, PartialEq)]
pub struct Mouth {
    pub bone: BoneId,
    pub forward: [f32; 3],
    pub flex: usize,
    pub span: FileSpan,
}

/// An eyelid's three shapes as the eyeball stores them: the lid's description, and the
/// (lowerer, neutral, raiser) descriptions with their targets.
#[derive(Clone, Debug, PartialEq)]
pub struct Lid {
    pub lid: usize,
    pub descs: [usize; 3],
    pub targets: [f32; 3],
}

/// `mstudioeyeball_t`, before the back end moves it into its bone's space.
#[derive(Clone, Debug, PartialEq)]
pub struct Eyeball {
    pub name: String,
    /// The body part mesh (the `$model`) it belongs to.
    pub mesh: MeshId,
    pub bone: BoneId,
    /// The eye's centre in model space (reference pose), as written.
    pub origin: [f32; 3],
    /// The material of the eyeball's triangles.
    pub material: MaterialId,
    /// diameter / 2.
    pub radius: f32,
    /// tan(angle).
    pub zoffset: f32,
    /// 1 / the QC's iris scale.
    pub iris_scale: f32,
    pub upper: Option<Lid>,
    pub lower: Option<Lid>,
    pub span: FileSpan,
}

/// One flex key (`s_flexkey_t` in Valve's compiler): a VTA frame driving a description on a
/// model's meshes.
#[derive(Clone, Debug, PartialEq)]
pub struct FlexKey {
    pub mesh: MeshId,
    pub flex_desc: usize,
    /// The left partner's description of a `flexpair` (0 otherwise, as Valve writes).
    pub flex_pair: usize,
    /// target0..target3: the weights at which the shape starts, peaks, holds and ends.
    pub targets: [f32; 4],
    /// Stereo split: 0 none; > 0 the right side (x > split fades in), < 0 the left.
    pub split: f32,
    pub decay: f32,
    /// The VTA file (an index into [`Face::vtas`]) and frame.
    pub vta: usize,
    pub frame: i32,
    /// A DMX mesh's shape: each vertex's `side` is its balance
    /// ([`DmxShapeVertices::balance`]), stereo or not, as Valve's build of `alastor_rel.qc` stores
    /// it; not a fade across `split`.
    pub balance_side: bool,
    pub span: FileSpan,
}

/// The flex shapes of a DMX mesh file (its meshes' `deltaStates`), laid out as a VTA file's
/// vertex animation so that they reach the mesh the way a VTA's shapes do (matched by position).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MeshShapes {
    /// Shape 0 is the base: one vertex per distinct (position, normal) pair the faces use, in
    /// the file's model space. Shape `k` is delta state `k − 1` ([`deltas`](Self::deltas)),
    /// listing the base vertices it moves with their moved position and normal.
    pub shapes: Vec<super::anim::Shape>,
    pub deltas: Vec<MeshDelta>,
    /// Per base vertex: the `balance` the file gives its position (1 on the side of a stereo
    /// shape's first, `…L`, description; 0 on the other).
    pub balance: Vec<f32>,
    /// Per base vertex: the bones of the file's skeleton its position is weighted to, with
    /// the weights (the build re-poses the shapes with the mesh when the model's bones stand
    /// in another pose than the file's).
    pub links: Vec<Vec<(u32, f32)>>,
    /// The controls of the file's `combinationOperator` (what later compilers make flex
    /// controllers and rules of, unless `noautodmxrules`).
    pub controls: usize,
}

/// One delta state of a DMX mesh file.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshDelta {
    pub name: String,
    /// A control of the combination operator that lists this shape is `stereo`: the shape
    /// becomes two descriptions, `nameL` and `nameR`, split by the vertices' balance.
    pub stereo: bool,
}
