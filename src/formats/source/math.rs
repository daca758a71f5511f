//! The little matrix and quaternion algebra the Source back end needs (`matrix3x4_t` rows with
//! the translation in column 3; Euler `R = Rz(z)·Ry(y)·Rx(x)`, `source-animation.md` §1.1).

#![allow(clippy::needless_range_loop)] // 3×4 matrix code reads best with indices

pub type M34 = [[f32; 4]; 3];

pub const IDENTITY: M34 = [
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
];

/// The matrix of a Euler rotation (radians) and a translation.
pub fn from_euler(rot: [f32; 3], pos: [f32; 3]) -> M34 {
    let (sx, cx) = rot[0].sin_cos();
    let (sy, cy) = rot[1].sin_cos();
    let (sz, cz) = rot[2].sin_cos();
    [
        [
            cy * cz,
            sx * sy * cz - cx * sz,
            cx * sy * cz + sx * sz,
            pos[0],
        ],
        [
            cy * sz,
            sx * sy * sz + cx * cz,
            cx * sy * sz - sx * cz,
            pos[1],
        ],
        [-sy, sx * cy, cx * cy, pos[2]],
    ]
}

/// Bone-to-model matrices from each bone's local transform and parent, in list order: a bone
/// whose parent comes later in the list (or is missing) counts as a root.
pub fn chain(bones: impl Iterator<Item = (M34, Option<usize>)>) -> Vec<M34> {
    let mut world: Vec<M34> = Vec::new();
    for (local, parent) in bones {
        let w = match parent.and_then(|p| world.get(p)) {
            Some(pw) => mul(pw, &local),
            None => local,
        };
        world.push(w);
    }
    world
}

pub fn mul(a: &M34, b: &M34) -> M34 {
    let mut o = [[0.0f32; 4]; 3];
    for r in 0..3 {
        for c in 0..4 {
            let mut v = a[r][0] * b[0][c] + a[r][1] * b[1][c] + a[r][2] * b[2][c];
            if c == 3 {
                v += a[r][3];
            }
            o[r][c] = v;
        }
    }
    o
}

/// Inverse of a rigid transform: rotation transposed, translation −Rᵀ·t.
pub fn invert(m: &M34) -> M34 {
    let mut o = [[0.0f32; 4]; 3];
    for r in 0..3 {
        for c in 0..3 {
            o[r][c] = m[c][r];
        }
        o[r][3] = -(m[0][r] * m[0][3] + m[1][r] * m[1][3] + m[2][r] * m[2][3]);
    }
    o
}

pub fn apply(m: &M34, p: [f32; 3]) -> [f32; 3] {
    [
        m[0][0] * p[0] + m[0][1] * p[1] + m[0][2] * p[2] + m[0][3],
        m[1][0] * p[0] + m[1][1] * p[1] + m[1][2] * p[2] + m[1][3],
        m[2][0] * p[0] + m[2][1] * p[1] + m[2][2] * p[2] + m[2][3],
    ]
}

pub fn rotate(m: &M34, p: [f32; 3]) -> [f32; 3] {
    [
        m[0][0] * p[0] + m[0][1] * p[1] + m[0][2] * p[2],
        m[1][0] * p[0] + m[1][1] * p[1] + m[1][2] * p[2],
        m[2][0] * p[0] + m[2][1] * p[1] + m[2][2] * p[2],
    ]
}

/// Euler angles (radians) of the rotation part (`MatrixAngles` convention).
pub fn to_euler(m: &M34) -> [f32; 3] {
    let cy = (m[0][0] * m[0][0] + m[1][0] * m[1][0]).sqrt();
    if cy > 0.001 {
        [
            m[2][1].atan2(m[2][2]),
            (-m[2][0]).atan2(cy),
            m[1][0].atan2(m[0][0]),
        ]
    } else {
        [(-m[1][2]).atan2(m[1][1]), (-m[2][0]).atan2(cy), 0.0]
    }
}

/// Quaternion (x, y, z, w) of Euler angles (`AngleQuaternion(RadianEuler)`).
pub use crate::ir::anim::euler_quat;

/// `align(p, q)` of `source-animation.md` §1.3: `q` or `−q`, whichever is closer to `p`.
/// The rotation matrix of a quaternion (`QuaternionMatrix`; a zero quaternion gives no rotation).
pub fn quat_matrix(q: [f32; 4], pos: [f32; 3]) -> M34 {
    let [x, y, z, w] = q;
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
            pos[0],
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
            pos[1],
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
            pos[2],
        ],
    ]
}

/// The rotation of a matrix as a quaternion, by the largest of trace and diagonal
/// (source-sdk-2013 `mathlib`, `MatrixAngles( matrix, Quaternion &, Vector & )`), so that
/// a compiler's stored quaternion has Valve's sign.
pub fn matrix_quat(m: &M34) -> [f32; 4] {
    let trace = m[0][0] + m[1][1] + m[2][2] + 1.0;
    let q = if trace > 1.0 + f32::EPSILON {
        [
            m[2][1] - m[1][2],
            m[0][2] - m[2][0],
            m[1][0] - m[0][1],
            trace,
        ]
    } else if m[0][0] > m[1][1] && m[0][0] > m[2][2] {
        let t = 1.0 + m[0][0] - m[1][1] - m[2][2];
        [t, m[1][0] + m[0][1], m[0][2] + m[2][0], m[2][1] - m[1][2]]
    } else if m[1][1] > m[2][2] {
        let t = 1.0 + m[1][1] - m[0][0] - m[2][2];
        [m[0][1] + m[1][0], t, m[2][1] + m[1][2], m[0][2] - m[2][0]]
    } else {
        let t = 1.0 + m[2][2] - m[0][0] - m[1][1];
        [m[0][2] + m[2][0], m[2][1] + m[1][2], t, m[1][0] - m[0][1]]
    };
    let l = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    if l > 0.0 {
        q.map(|c| c / l)
    } else {
        [0.0, 0.0, 0.0, 1.0]
    }
}

pub fn quat_align(p: [f32; 4], q: [f32; 4]) -> [f32; 4] {
    let (mut a, mut b) = (0.0f32, 0.0f32);
    for (x, y) in p.iter().zip(&q) {
        a += (x - y) * (x - y);
        b += (x + y) * (x + y);
    }
    if a > b {
        q.map(|c| -c)
    } else {
        q
    }
}

/// The +90° turn about Z studiomdl applies by default: (x, y, z) → (−y, x, z).
pub fn rot_z90(p: [f32; 3]) -> [f32; 3] {
    [-p[1], p[0], p[2]]
}

pub fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub fn scale(a: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// Valve's normalize: divides by |v| + FLT_EPSILON, so zero stays zero.
pub fn normalize(a: [f32; 3]) -> [f32; 3] {
    let l = dot(a, a).sqrt();
    scale(a, 1.0 / (l + f32::EPSILON))
}

/// An axis-aligned box that starts empty.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    pub min: [f32; 3],
    pub max: [f32; 3],
}

impl Aabb {
    pub const EMPTY: Aabb = Aabb {
        min: [f32::INFINITY; 3],
        max: [f32::NEG_INFINITY; 3],
    };

    pub fn add(&mut self, p: [f32; 3]) {
        for i in 0..3 {
            self.min[i] = self.min[i].min(p[i]);
            self.max[i] = self.max[i].max(p[i]);
        }
    }

    pub fn union(&mut self, o: &Aabb) {
        if !o.is_empty() {
            self.add(o.min);
            self.add(o.max);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.min[0] > self.max[0]
    }

    /// The box, or zeros when empty.
    pub fn or_zero(&self) -> ([f32; 3], [f32; 3]) {
        if self.is_empty() {
            ([0.0; 3], [0.0; 3])
        } else {
            (self.min, self.max)
        }
    }

    pub fn corners(&self) -> [[f32; 3]; 8] {
        let mut o = [[0.0; 3]; 8];
        for (i, c) in o.iter_mut().enumerate() {
            for a in 0..3 {
                c[a] = if i & (1 << a) != 0 {
                    self.max[a]
                } else {
                    self.min[a]
                };
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euler_matrix_and_quaternion_agree() {
        let r = [0.3, -0.7, 1.9];
        let m = from_euler(r, [1.0, 2.0, 3.0]);
        let back = to_euler(&m);
        let m2 = from_euler(back, [1.0, 2.0, 3.0]);
        for i in 0..3 {
            for j in 0..4 {
                assert!((m[i][j] - m2[i][j]).abs() < 1e-5);
            }
        }
        let inv = invert(&m);
        let p = apply(&inv, apply(&m, [4.0, 5.0, 6.0]));
        assert!((p[0] - 4.0).abs() < 1e-4 && (p[2] - 6.0).abs() < 1e-4);
        let q = euler_quat([0.0, 0.0, std::f32::consts::FRAC_PI_2]);
        assert!((q[2] - 0.70710677).abs() < 1e-6 && (q[3] - 0.70710677).abs() < 1e-6);
    }
}
