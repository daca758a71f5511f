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

/// `$jigglebone bone { group { property value… } … }` (Source; VDC "$jigglebone", since Source
/// 2007): a bone the game's client moves as a spring around its animated pose
/// (source-sdk-2013 `public/jigglebones.cpp`). The groups and their properties are kept as
/// written (angles in degrees); the back end turns them into `mstudiojigglebone_t`.
#[derive(Clone, Debug, PartialEq)]
pub struct JiggleBone {
    pub bone: Spanned<String>,
    pub groups: Vec<JiggleGroup>,
}

impl JiggleBone {
    /// A bone's block with its groups in one canonical form, which builds the same record
    /// (`build::jiggle`): one group per kind in [`JiggleKind::ALL`] order, each property once
    /// (its last value) in [`JiggleKind::properties`] order. Both front ends make this form, so
    /// a QC and the TOML `import-qc` writes from it read back equal.
    pub fn new(bone: Spanned<String>, groups: Vec<JiggleGroup>) -> Self {
        let mut out: Vec<JiggleGroup> = Vec::new();
        for kind in JiggleKind::ALL {
            let mut merged: Option<JiggleGroup> = None;
            for g in groups.iter().filter(|g| g.kind.value == kind) {
                let m = merged.get_or_insert_with(|| JiggleGroup {
                    kind: g.kind.clone(),
                    props: Vec::new(),
                });
                for p in &g.props {
                    m.props.retain(|q| q.name.value != p.name.value);
                    m.props.push(p.clone());
                }
            }
            if let Some(mut m) = merged {
                let rank = |p: &JiggleProp| {
                    kind.properties()
                        .iter()
                        .position(|(n, _)| *n == p.name.value)
                };
                m.props.sort_by_key(rank);
                out.push(m);
            }
        }
        JiggleBone { bone, groups: out }
    }
}

/// One property group of a `$jigglebone`: `is_flexible`, `is_rigid`, `has_base_spring` or
/// `is_boing`, with its properties in order.
#[derive(Clone, Debug, PartialEq)]
pub struct JiggleGroup {
    pub kind: Spanned<JiggleKind>,
    pub props: Vec<JiggleProp>,
}

/// A property of a group: its name (one of [`JiggleKind::properties`], lower case) and its
/// values (as many as the property takes).
#[derive(Clone, Debug, PartialEq)]
pub struct JiggleProp {
    pub name: Spanned<String>,
    pub values: Vec<f32>,
}

/// The kind of a `$jigglebone` property group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JiggleKind {
    /// `is_flexible`: the tip is pulled back to the pose by yaw and pitch springs.
    Flexible,
    /// `is_rigid`: the tip keeps its length and swings under its `tip_mass` only.
    Rigid,
    /// `has_base_spring`: the bone's base moves on a spring.
    BaseSpring,
    /// `is_boing` (Source 2013): the bone squashes and stretches after an impact.
    Boing,
}

/// The properties of `is_flexible` and `is_rigid`, with how many numbers each takes.
const TIP_PROPERTIES: &[(&str, usize)] = &[
    ("length", 1),
    ("tip_mass", 1),
    ("yaw_stiffness", 1),
    ("yaw_damping", 1),
    ("pitch_stiffness", 1),
    ("pitch_damping", 1),
    ("allow_length_flex", 0),
    ("along_stiffness", 1),
    ("along_damping", 1),
    ("angle_constraint", 1),
    ("yaw_constraint", 2),
    ("yaw_friction", 1),
    ("yaw_bounce", 1),
    ("pitch_constraint", 2),
    ("pitch_friction", 1),
    ("pitch_bounce", 1),
];

const BASE_PROPERTIES: &[(&str, usize)] = &[
    ("base_mass", 1),
    ("stiffness", 1),
    ("damping", 1),
    ("left_constraint", 2),
    ("left_friction", 1),
    ("up_constraint", 2),
    ("up_friction", 1),
    ("forward_constraint", 2),
    ("forward_friction", 1),
];

const BOING_PROPERTIES: &[(&str, usize)] = &[
    ("impact_speed", 1),
    ("impact_angle", 1),
    ("damping_rate", 1),
    ("frequency", 1),
    ("amplitude", 1),
];

impl JiggleKind {
    pub const ALL: [JiggleKind; 4] = [
        JiggleKind::Flexible,
        JiggleKind::Rigid,
        JiggleKind::BaseSpring,
        JiggleKind::Boing,
    ];

    /// The QC word (and TOML key) of the group.
    pub fn word(self) -> &'static str {
        match self {
            JiggleKind::Flexible => "is_flexible",
            JiggleKind::Rigid => "is_rigid",
            JiggleKind::BaseSpring => "has_base_spring",
            JiggleKind::Boing => "is_boing",
        }
    }

    /// The group a word names (any case).
    pub fn from_word(word: &str) -> Option<JiggleKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.word().eq_ignore_ascii_case(word))
    }

    /// The group's properties and how many numbers each takes (`allow_length_flex` none, the
    /// `*_constraint` ranges two, except `angle_constraint`).
    pub fn properties(self) -> &'static [(&'static str, usize)] {
        match self {
            JiggleKind::Flexible | JiggleKind::Rigid => TIP_PROPERTIES,
            JiggleKind::BaseSpring => BASE_PROPERTIES,
            JiggleKind::Boing => BOING_PROPERTIES,
        }
    }

    /// How many numbers a property of this group takes; `None` if it has no such property.
    pub fn arity(self, property: &str) -> Option<usize> {
        self.properties()
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(property))
            .map(|&(_, k)| k)
    }
}

/// `$bonesaveframe bone [position] [rotation]`: a bone whose first frame is kept in the MDL for
/// animations demand-loaded from the `.ani` file (`qc-source.md`, `$bonesaveframe`).
#[derive(Clone, Debug, PartialEq)]
pub struct BoneSaveFrame {
    pub bone: Spanned<String>,
    pub position: bool,
    pub rotation: bool,
}
