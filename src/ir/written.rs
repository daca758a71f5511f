//! The parts of a project the IR keeps as the project wrote them (names, motion flags, event
//! options, pose parameters) and the target engine: the vocabulary both the project front ends
//! and the back ends speak. The front ends (`crate::project`) make these values; the IR carries
//! them to the back ends unchanged.

use crate::diag::Spanned;

/// The engine a model is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Half-Life 1: MDL v10 (`goldsrc.md`).
    GoldSrc,
    /// Source: MDL v48 + VVD + VTX (`source-geometry.md`).
    Source,
}

impl Target {
    pub fn as_str(self) -> &'static str {
        match self {
            Target::GoldSrc => "goldsrc",
            Target::Source => "source",
        }
    }
}

/// A motion axis or extraction flag (`X`, `YR`, `LX`, `LXR`, `AX`, `LM`, `LQ`, …), upper case.
pub type MotionFlag = Spanned<String>;

/// The `STUDIO_*` bit of a motion word (`X` … `ZR`, `LX` … `LZR`, `LM` linear, `LQ` quadratic;
/// any case), shared by both engines' formats (`goldsrc.md` §4.4, `source-animation.md` §3.3).
pub fn motion_bit(word: &str) -> Option<i32> {
    Some(match word.to_ascii_uppercase().as_str() {
        "X" => 0x1,
        "Y" => 0x2,
        "Z" => 0x4,
        "XR" => 0x8,
        "YR" => 0x10,
        "ZR" => 0x20,
        "LX" => 0x40,
        "LY" => 0x80,
        "LZ" => 0x100,
        "LXR" => 0x200,
        "LYR" => 0x400,
        "LZR" => 0x800,
        "LM" => 0x1000,
        "LQ" => 0x2000,
        _ => return None,
    })
}

/// An order-dependent animation command, kept as written: `subtract idle 0` is
/// `{ keyword: "subtract", args: ["idle", "0"] }`.
#[derive(Clone, Debug, PartialEq)]
pub struct AnimCommand {
    pub keyword: Spanned<String>,
    pub args: Vec<Spanned<String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Blend {
    pub param: Spanned<String>,
    pub min: f32,
    pub max: f32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Activity {
    /// `ACT_…` as written (Source resolves names at run time; GoldSrc maps them to numbers,
    /// `goldsrc.md` §6.4).
    pub name: Spanned<String>,
    pub weight: i32,
}

/// `event id frame [options]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// A number (`1004`) or a name (`AE_CL_PLAYSOUND`), as written.
    pub id: Spanned<String>,
    pub frame: i32,
    pub options: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub entry: Spanned<String>,
    pub exit: Spanned<String>,
    pub reversible: bool,
}

/// `$poseparameter name [min max] [wrap] [loop v]`, or a pose parameter a sequence names
/// before any `$poseparameter` does (Valve's compiler then makes it, with the range 0 to 0).
#[derive(Clone, Debug, PartialEq)]
pub struct PoseParameter {
    pub name: Spanned<String>,
    pub min: f32,
    pub max: f32,
    pub wrap: bool,
    pub loop_range: Option<f32>,
    /// The blends of the sequences from this index on widen the range to hold their start
    /// and end (Valve's compiler widens it as each `blend` is read, and a later
    /// `$poseparameter` with a range sets it anew: 2006 SDK `studiomdl.cpp`, `ParseSequence`
    /// and `Cmd_PoseParameter`). 0 when the range was set before every sequence.
    pub widened_from: usize,
}

impl PoseParameter {
    /// A pose parameter as Valve's compiler makes it when first named: range 0 to 0, no loop,
    /// widened by the blends of the sequences from `widened_from` on.
    pub fn new(name: Spanned<String>, widened_from: usize) -> Self {
        PoseParameter {
            name,
            min: 0.0,
            max: 0.0,
            wrap: false,
            loop_range: None,
            widened_from,
        }
    }
}

/// The sequence flag word of `$declaresequence name`: a placeholder sequence with no animation
/// of its own, which a model that includes this one fills by name (Valve's compiler writes it
/// with only its name and `STUDIO_OVERRIDE`; 2006 SDK `studiomdl.cpp`, `Cmd_DeclareSequence`).
pub const DECLARED: &str = "declared";

/// `$ikchain name bone [options]` (`qc-source.md` §2.4; 2006 SDK `studiomdl.cpp`,
/// `Cmd_IKChain`): a three-bone chain ending at `bone` (its parent and grandparent are the
/// other two). Only the knee direction is stored in the chain's record; `height`, `pad`,
/// `floor` and `center` are what a `footstep` IK rule starts from. A motion type and value are
/// read and, as in Valve's compiler, used by nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct IkChain {
    pub name: Spanned<String>,
    pub bone: Spanned<String>,
    /// `knee x y z`: the ideal bending direction, in the first link's (hip, shoulder) space.
    pub knee: [f32; 3],
    /// `height h` (default 18), `pad p` (radius p/2, default 0), `floor f` (default 0),
    /// `center x y z` (the foot's contact point in the end bone's space, default 0 0 0).
    pub height: f32,
    pub radius: f32,
    pub floor: f32,
    pub center: [f32; 3],
}

impl IkChain {
    /// A chain with the 2006 SDK's defaults (`Cmd_IKChain`: height 18, the rest 0).
    pub fn new(name: Spanned<String>, bone: Spanned<String>) -> Self {
        IkChain {
            name,
            bone,
            knee: [0.0; 3],
            height: 18.0,
            radius: 0.0,
            floor: 0.0,
            center: [0.0; 3],
        }
    }
}

/// `$ikautoplaylock chain posweight localqweight` (2006 SDK `Cmd_IKAutoplayLock`).
#[derive(Clone, Debug, PartialEq)]
pub struct IkAutoplayLock {
    pub chain: Spanned<String>,
    pub pos_weight: f32,
    pub local_q_weight: f32,
}
