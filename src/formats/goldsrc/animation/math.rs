//! Valve's HL1 studiomdl arithmetic, emulated exactly (`goldsrc.md` §0, §8.1): `float`
//! operations stay `f32` (no fused multiply-add), the few `double` intermediates are `f64`.

use std::f64::consts::PI;

/// A 3×4 bone matrix (rotation and translation), row-major as in `mathlib.c`.
pub type Matrix = [[f32; 4]; 3];

/// `clip_rotations`: wraps an angle into [−π, π) by repeated ±2π, compared and computed in
/// double, stored as float.
pub fn clip_angle(a: f32) -> f32 {
    let mut v = a;
    // A non-finite value never leaves the loop in C; the IR holds finite values only, the guard
    // keeps this total anyway.
    let mut guard = 0;
    while at_or_above_pi(v) && guard < 1_000_000 {
        v = (f64::from(v) - PI * 2.0) as f32;
        guard += 1;
    }
    while below_minus_pi(v) && guard < 2_000_000 {
        v = (f64::from(v) + PI * 2.0) as f32;
        guard += 1;
    }
    v
}

/// The one-step wrap of a rotation difference (`if (v >= Q_PI) v -= Q_PI*2; if (v < -Q_PI) …`).
/// Compared in double, unlike [`clip_angle`]: with [`at_or_above_pi`] and [`below_minus_pi`]
/// the compiler computed both wraps of every value in the range loop of `build_animation`
/// and kept one (twice the instructions there).
pub fn wrap_once(v: f32) -> f32 {
    let mut v = v;
    if f64::from(v) >= PI {
        v = (f64::from(v) - PI * 2.0) as f32;
    }
    if f64::from(v) < -PI {
        v = (f64::from(v) + PI * 2.0) as f32;
    }
    v
}

/// C's `v >= Q_PI` for a float `v` (compared in double), as a float comparison: the float
/// nearest π, `f32::consts::PI`, is above π and the float below it under π, so the floats at
/// or above π are those at or above `f32::consts::PI` (no conversion to double per value).
#[inline]
fn at_or_above_pi(v: f32) -> bool {
    v >= std::f32::consts::PI
}

/// C's `v < -Q_PI` for a float `v` (compared in double), as a float comparison: likewise the
/// floats under −π are those at or below `-f32::consts::PI`.
#[inline]
fn below_minus_pi(v: f32) -> bool {
    v <= -std::f32::consts::PI
}

/// Radians → the float degrees studiomdl hands to `AngleMatrix` (`rad * (180.0 / Q_PI)`).
pub fn to_degrees(rad: f32) -> f32 {
    (f64::from(rad) * (180.0 / PI)) as f32
}

/// `AngleMatrix` of `mathlib.c`: angles in degrees (x = roll, y = pitch, z = yaw), matrix
/// `Rz · Ry · Rx`, sines and cosines in double stored as float, products in float. The sequence
/// boxes call its two halves, [`angle_sin_cos`] and [`sin_cos_matrix`], to reuse sines and
/// cosines.
#[cfg(test)]
pub fn angle_matrix(deg: [f32; 3]) -> Matrix {
    sin_cos_matrix(deg.map(angle_sin_cos))
}

/// The float sine and cosine `AngleMatrix` takes of one angle in degrees.
pub fn angle_sin_cos(deg: f32) -> (f32, f32) {
    sin_cos((f64::from(deg) * (PI * 2.0 / 360.0)) as f32)
}

/// The rest of [`angle_matrix`]: the matrix of the [`angle_sin_cos`] of each angle.
pub fn sin_cos_matrix(sc: [(f32, f32); 3]) -> Matrix {
    let [(sr, cr), (sp, cp), (sy, cy)] = sc;
    let mut m = [[0.0f32; 4]; 3];
    m[0][0] = cp * cy;
    m[1][0] = cp * sy;
    m[2][0] = -sp;
    m[0][1] = sr * sp * cy + cr * -sy;
    m[1][1] = sr * sp * sy + cr * cy;
    m[2][1] = sr * cp;
    m[0][2] = cr * sp * cy + -sr * -sy;
    m[1][2] = cr * sp * sy + -sr * cy;
    m[2][2] = cr * cp;
    m
}

fn sin_cos(a: f32) -> (f32, f32) {
    let a = f64::from(a);
    (a.sin() as f32, a.cos() as f32)
}

/// `R_ConcatTransforms(in1, in2)`: `in1 · in2`, sums left to right in float. Inlined into
/// the sequence box loop (left to itself the compiler sometimes calls it there instead).
#[inline]
pub fn concat(a: &Matrix, b: &Matrix) -> Matrix {
    let mut out = [[0.0f32; 4]; 3];
    for (row, ar) in out.iter_mut().zip(a) {
        // the four columns side by side (one SIMD lane each), each sum in Valve's order
        for (j, o) in row.iter_mut().enumerate() {
            *o = ar[0] * b[0][j] + ar[1] * b[1][j] + ar[2] * b[2][j];
        }
    }
    // Then the translation, added on its own: the compiler, left to merge this add into the
    // four-lane products, shuffles lanes for twice the instructions (`black_box` only keeps
    // the values apart; it changes none).
    let mut out = std::hint::black_box(out);
    for (row, ar) in out.iter_mut().zip(a) {
        row[3] += ar[3];
    }
    out
}

/// The four lanes `f(0) .. f(3)` (written so for the compiler to compute them side by side).
#[inline(always)]
pub fn lanes(f: impl Fn(usize) -> f32) -> [f32; 4] {
    [f(0), f(1), f(2), f(3)]
}

/// `VectorTransform`: `DotProduct(v, row) + row[3]` per row, in float.
pub fn transform(v: [f32; 3], m: &Matrix) -> [f32; 3] {
    let row = |r: &[f32; 4]| v[0] * r[0] + v[1] * r[1] + v[2] * r[2] + r[3];
    [row(&m[0]), row(&m[1]), row(&m[2])]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_wraps_into_half_open_range() {
        assert_eq!(clip_angle(0.5), 0.5);
        // π as a float is above π as a double, so it wraps to −π (in float).
        let pi = std::f32::consts::PI;
        assert!(f64::from(pi) > PI);
        assert_eq!(clip_angle(pi), (f64::from(pi) - 2.0 * PI) as f32);
        assert!(f64::from(clip_angle(pi)) >= -PI);
        assert_eq!(clip_angle(-4.0), (-4.0f64 + 2.0 * PI) as f32);
        assert_eq!(clip_angle(7.0), (7.0f64 - 2.0 * PI) as f32);
    }

    /// The float comparisons with ±π are C's comparisons in double: at the floats around ±π,
    /// at ±0, ±infinity and NaN, and at every 997th float.
    #[test]
    fn pi_comparisons_match_double() {
        let check = |v: f32| {
            assert_eq!(at_or_above_pi(v), f64::from(v) >= PI, "{v:e}");
            assert_eq!(below_minus_pi(v), f64::from(v) < -PI, "{v:e}");
        };
        for centre in [std::f32::consts::PI, -std::f32::consts::PI] {
            let mut v = centre;
            for _ in 0..8 {
                v = v.next_down();
            }
            for _ in 0..16 {
                check(v);
                v = v.next_up();
            }
        }
        for v in [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            check(v);
        }
        for bits in (0..=u32::MAX).step_by(997) {
            check(f32::from_bits(bits));
        }
    }

    #[test]
    fn angle_matrix_of_zero_is_identity() {
        let m = angle_matrix([0.0; 3]);
        assert_eq!(m[0][..3], [1.0, 0.0, 0.0]);
        assert_eq!(m[1][..3], [0.0, 1.0, 0.0]);
        assert_eq!(m[2][..3], [0.0, 0.0, 1.0]);
    }

    #[test]
    fn yaw_of_90_degrees_turns_x_into_y() {
        let m = angle_matrix([0.0, 0.0, 90.0]);
        let p = transform([1.0, 0.0, 0.0], &m);
        assert!((p[0]).abs() < 1e-6 && (p[1] - 1.0).abs() < 1e-6 && p[2] == 0.0);
    }
}
