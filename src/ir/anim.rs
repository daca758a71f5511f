//! Skeletal animation frames and vertex animation (flex) shapes.

use crate::diag::FileSpan;

/// A bone's transform relative to its parent: position and Euler rotation in radians
/// (`R = Rz(z)·Ry(y)·Rx(x)`, `source-animation.md` §1.1), exactly as the SMD gives them.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Pose {
    pub pos: [f32; 3],
    pub rot: [f32; 3],
}

/// The quaternion (x, y, z, w) of an Euler rotation in radians as [`Pose::rot`] holds it
/// (x = roll, y = pitch, z = yaw; Valve's `AngleQuaternion(RadianEuler)`). Here so that the
/// builder (`.vrd` triggers) and the Source back end compute it with the same operations.
pub fn euler_quat(r: [f32; 3]) -> [f32; 4] {
    let (sr, cr) = (r[0] * 0.5).sin_cos();
    let (sp, cp) = (r[1] * 0.5).sin_cos();
    let (sy, cy) = (r[2] * 0.5).sin_cos();
    [
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
        cr * cp * cy + sr * sp * sy,
    ]
}

/// The Euler rotation in radians ([`Pose::rot`]) of a quaternion (x, y, z, w), by Valve's matrix
/// to angles rule (`MatrixAngles`; `source-animation.md` §1.2): the inverse of [`euler_quat`]
/// for pitch within ±90°. A quaternion of length 0 is no rotation. For sources that give
/// rotations as quaternions (DMX).
pub fn quat_euler(q: [f32; 4]) -> [f32; 3] {
    quat_euler_f64(q).map(|a| a as f32)
}

/// [`quat_euler`] before the rounding to `f32` (the Source back end prints it in degrees).
pub fn quat_euler_f64(q: [f32; 4]) -> [f64; 3] {
    let [x, y, z, w] = q.map(f64::from);
    let len = (x * x + y * y + z * z + w * w).sqrt();
    let (x, y, z, w) = if len > 0.0 {
        (x / len, y / len, z / len, w / len)
    } else {
        (0.0, 0.0, 0.0, 1.0)
    };
    // Columns of the rotation matrix: forward (X), left (Y), and the Z row's last entry.
    let forward = [
        1.0 - 2.0 * (y * y + z * z),
        2.0 * (x * y + w * z),
        2.0 * (x * z - w * y),
    ];
    let left = [
        2.0 * (x * y - w * z),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z + w * x),
    ];
    let up_z = 1.0 - 2.0 * (x * x + y * y);
    let xy = (forward[0] * forward[0] + forward[1] * forward[1]).sqrt();
    if xy > 0.001 {
        [
            left[2].atan2(up_z),
            (-forward[2]).atan2(xy),
            forward[1].atan2(forward[0]),
        ]
    } else {
        [0.0, (-forward[2]).atan2(xy), (-left[0]).atan2(left[1])]
    }
}

/// How a target fills the bone values an SMD leaves out of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillRule {
    /// Valve's HL1 compiler: a bone missing from a frame, or a frame missing altogether, is
    /// position 0 and rotation 0 (`goldsrc.md` §7, §11 item 6).
    Zero,
    /// Valve's Source compiler: each frame starts as a copy of the previous one, so a missing bone
    /// keeps its previous value; in the first frame it is zero (`source-animation.md` §2.1).
    HoldPrevious,
}

/// The skeleton frames of one SMD, merged by frame number.
///
/// Frames are addressed by their `time` number: frame `i` here is `time = first_time + i`. A
/// `time` block that re-opens an earlier frame adds to it, and a value given again replaces the
/// earlier one (Valve's tools do the same; lowering warns when the value changes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Animation {
    /// The smallest `time` seen (the animation starts there; QUIRKS.md §2.8).
    pub first_time: i32,
    pub num_frames: usize,
    pub num_bones: usize,
    /// `num_frames × num_bones`, frame-major; `None` where the SMD gives no value.
    pub poses: Vec<Option<Pose>>,
    /// Whether frame `i` had a `time` block at all.
    pub present: Vec<bool>,
}

/// How many more times each of `n` things is going to be used, to let each go after its last
/// use (a file's frames, an animation's values).
#[derive(Clone, Debug)]
pub struct UsesLeft(Vec<usize>);

impl UsesLeft {
    /// Counts the uses of things `0..n` in `uses` (indices outside are ignored).
    pub fn count(n: usize, uses: impl IntoIterator<Item = usize>) -> Self {
        let mut left = vec![0usize; n];
        for u in uses {
            if let Some(c) = left.get_mut(u) {
                *c += 1;
            }
        }
        Self(left)
    }

    /// Records one use of `i`: whether it was the last.
    pub fn used(&mut self, i: usize) -> bool {
        self.0.get_mut(i).is_some_and(|c| {
            *c = c.saturating_sub(1);
            *c == 0
        })
    }
}

impl Animation {
    /// Lets go of the frames (the animation is left empty): for a builder done with them.
    pub fn release_frames(&mut self) {
        self.poses = Vec::new();
        self.present = Vec::new();
        self.num_frames = 0;
    }

    /// A copy without the frames, as [`Self::release_frames`] leaves it.
    pub fn without_frames(&self) -> Animation {
        Animation {
            first_time: self.first_time,
            num_frames: 0,
            num_bones: self.num_bones,
            poses: Vec::new(),
            present: Vec::new(),
        }
    }

    /// The value the SMD gives for a bone at a frame, if any.
    pub fn get(&self, frame: usize, bone: usize) -> Option<Pose> {
        if bone >= self.num_bones {
            return None;
        }
        self.poses
            .get(frame * self.num_bones + bone)
            .copied()
            .flatten()
    }

    /// Every frame with every bone, missing values filled by `rule`; frame-major.
    pub fn resolve(&self, rule: FillRule) -> Vec<Pose> {
        let mut out = Vec::with_capacity(self.poses.len());
        for f in 0..self.num_frames {
            for b in 0..self.num_bones {
                let given = self.get(f, b);
                let value = match (given, rule) {
                    (Some(p), _) => p,
                    (None, FillRule::Zero) => Pose::default(),
                    (None, FillRule::HoldPrevious) if f > 0 => out[(f - 1) * self.num_bones + b],
                    (None, FillRule::HoldPrevious) => Pose::default(),
                };
                out.push(value);
            }
        }
        out
    }
}

/// One shape of a VTA file: the corners that move, with their position and normal in the shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// The `time` number of the shape (0 is the base shape).
    pub time: i32,
    /// The name from the `time N # name` comment, if any.
    pub name: Option<String>,
    /// `(corner index, position, normal)`; a corner counts triangle corners of the reference
    /// SMD in file order (QUIRKS.md §2.11). Sorted by corner, one entry per corner.
    pub vertices: Vec<(u32, [f32; 3], [f32; 3])>,
    pub span: FileSpan,
}

/// The `vertexanimation` section of a VTA file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexAnimation {
    /// Shapes in `time` order.
    pub shapes: Vec<Shape>,
}
