//! The engine's two-link IK solve, as Valve's 2006 compiler uses it on animations
//! (`$lockbonelengths`): alliedmodders/hl2sdk, branch episode1, `public/bone_setup.cpp`
//! (`Studio_SolveIK`, `Studio_AlignIKMatrix`, and the closed-form two-link solver there). Facts
//! of the method, written anew.

use super::math::{self, M34};

/// 0.9998 is about one degree: a chain straighter than this has no knee to bend.
const KNEEMAX_EPSILON: f32 = 0.9998;

fn pos(m: &M34) -> [f32; 3] {
    [m[0][3], m[1][3], m[2][3]]
}

fn len(v: [f32; 3]) -> f32 {
    math::dot(v, v).sqrt()
}

/// `v` scaled to length `l` (a zero vector stays zero).
fn with_len(v: [f32; 3], l: f32) -> [f32; 3] {
    let n = len(v);
    if n > 0.0 {
        math::scale(v, l / n)
    } else {
        v
    }
}

/// The knee `Q` of a two-link chain from the origin with link lengths `a`, `b` whose end is at
/// `p`, bent towards `d`: in the frame whose X axis is `p` and whose Y axis is the part of `d`
/// across it, the knee is at `(x, √(a² − x²), 0)` with `x = (c + (a² − b²)/c)/2`, `c = |p|`.
/// `None` when no such knee exists (the end out of reach, or too close).
fn solve(a: f32, b: f32, p: [f32; 3], d: [f32; 3]) -> Option<[f32; 3]> {
    let x = math::normalize(p);
    let y = math::normalize(math::sub(d, math::scale(x, math::dot(d, x))));
    let c = math::dot(x, p);
    let kx = (c + (a * a - b * b) / c) / 2.0;
    let ky = (a * a - kx * kx).sqrt();
    let q = math::add(math::scale(x, kx), math::scale(y, ky));
    (kx > c - b && kx < a).then_some(q)
}

/// `Studio_AlignIKMatrix`: the matrix's X axis turned onto `to`, Y across it and the old Z.
fn align(m: &mut M34, to: [f32; 3]) {
    let x = math::normalize(to);
    let old_z = [m[0][2], m[1][2], m[2][2]];
    let y = math::normalize(math::cross(old_z, x));
    let z = math::cross(x, y);
    for r in 0..3 {
        m[r][0] = x[r];
        m[r][1] = y[r];
        m[r][2] = z[r];
    }
}

/// `Studio_SolveIK` without a knee direction: the knee bends the way it already does. Moves the
/// chain `thigh`, `knee`, `foot` of `world` so the foot is at `target`; `false` when the chain is
/// too straight to tell the bend, or the solve fails.
pub fn solve_ik(
    thigh: usize,
    knee: usize,
    foot: usize,
    target: [f32; 3],
    world: &mut [M34],
) -> bool {
    let (Some(t), Some(k), Some(f)) = (world.get(thigh), world.get(knee), world.get(foot)) else {
        return false;
    };
    let (wt, wk, wf) = (pos(t), pos(k), pos(f));
    let l1 = len(math::sub(wk, wt));
    let l2 = len(math::sub(wf, wk));
    let l3 = len(math::sub(wf, wt));
    if l3 > (l1 + l2) * KNEEMAX_EPSILON {
        return false;
    }
    let half = math::scale(math::sub(wf, wt), l1 / l3);
    let dir = math::normalize(math::sub(math::sub(wk, wt), half));
    solve_ik_towards(thigh, knee, foot, target, wk, dir, world)
}

/// `Studio_SolveIK` with a knee position and direction (the 2006 SDK's version).
fn solve_ik_towards(
    thigh: usize,
    knee: usize,
    foot: usize,
    target: [f32; 3],
    knee_pos: [f32; 3],
    knee_dir: [f32; 3],
    world: &mut [M34],
) -> bool {
    let (wt, wk, wf) = (pos(&world[thigh]), pos(&world[knee]), pos(&world[foot]));
    let mut ik_foot = math::sub(target, wt);
    let ik_knee = math::sub(knee_pos, wt);
    let l1 = len(math::sub(wk, wt));
    let l2 = len(math::sub(wf, wk));
    // knee targets are pushed far out so that nearly straight legs still bend the right way
    let d = (len(math::sub(target, wt)) - l1.min(l2)).max(l1 + l2) * 100.0;
    let target_knee = math::add(ik_knee, math::scale(knee_dir, d));
    if len(ik_foot) > (l1 + l2) * KNEEMAX_EPSILON {
        ik_foot = with_len(ik_foot, (l1 + l2) * KNEEMAX_EPSILON);
    }
    if len(ik_foot) < (l1 - l2).abs() * 1.05 {
        ik_foot = with_len(ik_foot, (l1 - l2).abs() * 1.05);
    }
    let Some(new_knee) = solve(l1, l2, ik_foot, target_knee) else {
        return false;
    };
    align(&mut world[thigh], new_knee);
    align(&mut world[knee], math::sub(ik_foot, new_knee));
    for r in 0..3 {
        world[knee][r][3] = new_knee[r] + wt[r];
        world[foot][r][3] = ik_foot[r] + wt[r];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(p: [f32; 3]) -> M34 {
        let mut m = math::IDENTITY;
        for r in 0..3 {
            m[r][3] = p[r];
        }
        m
    }

    /// A bent leg (thigh at the origin, knee 10 forward and 10 down, foot 20 down) asked to put
    /// its foot 15 down keeps its link lengths, bends the same way, and reaches the target.
    #[test]
    fn a_bent_leg_reaches_a_target_in_reach() {
        let mut w = vec![at([0.0; 3]), at([10.0, 0.0, -10.0]), at([0.0, 0.0, -20.0])];
        let l1 = 200f32.sqrt();
        assert!(solve_ik(0, 1, 2, [0.0, 0.0, -15.0], &mut w));
        let (t, k, f) = (pos(&w[0]), pos(&w[1]), pos(&w[2]));
        assert!((len(math::sub(k, t)) - l1).abs() < 1e-4);
        assert!((len(math::sub(f, k)) - l1).abs() < 1e-4);
        assert!(len(math::sub(f, [0.0, 0.0, -15.0])) < 1e-4);
        assert!(k[0] > 0.0, "the knee still bends forward: {k:?}");
        // the thigh's X axis points at the knee
        let x = [w[0][0][0], w[0][1][0], w[0][2][0]];
        assert!(len(math::sub(x, math::normalize(k))) < 1e-5);
    }

    /// A straight leg has no bend to keep: nothing moves.
    #[test]
    fn a_straight_leg_is_left_alone() {
        let mut w = vec![at([0.0; 3]), at([0.0, 0.0, -10.0]), at([0.0, 0.0, -20.0])];
        let before = w.clone();
        assert!(!solve_ik(0, 1, 2, [0.0, 0.0, -15.0], &mut w));
        assert_eq!(w, before);
    }
}
