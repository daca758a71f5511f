//! `ikfixup` (issue 16): the 2006 SDK's `fixupIKErrors`, which holds an IK chain's end where it
//! is at the rule's contact frame and solves the chain on every frame of the rule's range.
//!
//! A leg pelvis → thigh → calf → foot with a bent knee whose foot slides 0.5 a frame: with
//! `ikfixup "lfoot" footstep` (no range: the whole animation, weight 1 on every frame, as the
//! SDK's integer cycle gives it) the foot stays where it is in frame 0, the thigh and calf
//! keep their lengths, and the pelvis does not move; with a `range` from frame 0 the SDK's
//! weight is 0 but on the last frame (cycle 1); an unknown chain is E0620, and a frame past the
//! end of an animation that does not loop is E0625.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mdlc::formats::source::{pose, read};
use source_common::{codes_at, compile_qc};

const FRAMES: usize = 11;

/// The leg: the knee bent forward (+y), the foot sliding along +y 0.5 a frame.
fn leg_smd(frames: usize, sliding: bool) -> String {
    let mut s = String::from(
        "version 1\nnodes\n0 \"pelvis\" -1\n1 \"thigh\" 0\n2 \"calf\" 1\n3 \"foot\" 2\nend\nskeleton\n",
    );
    for f in 0..frames {
        let _ = writeln!(s, "time {f}");
        // the thigh turns about x a little each frame, so the foot moves
        let r = if sliding { f as f32 * 0.015 } else { 0.0 };
        let _ = writeln!(s, "0 0 0 40 0 0 0");
        let _ = writeln!(s, "1 0 2 0 {r} 0 0");
        let _ = writeln!(s, "2 0 3 -17 0 0 0");
        let _ = writeln!(s, "3 0 -3 -17 0 0 0");
    }
    if !sliding {
        s.push_str(
            "end\ntriangles\nskin\n3 0 0 4 0 0 1 0 0\n3 1 0 4 0 0 1 0 0\n3 0 1 4 0 0 1 0 0\n",
        );
    }
    s.push_str("end\n");
    s
}

/// A folder with `ref.smd`, `walk.smd` and `model.qc`, whose `$sequence walk` has `options`.
fn project(name: &str, options: &str) -> PathBuf {
    let dir = source_common::tmp("ikfixup", name);
    std::fs::write(dir.join("ref.smd"), leg_smd(1, false)).unwrap();
    std::fs::write(dir.join("walk.smd"), leg_smd(FRAMES, true)).unwrap();
    let qc = format!(
        "$modelname \"test/fixup.mdl\"\n$cdmaterials \"models/test\"\n$body body \"ref.smd\"\n\
         $ikchain \"lfoot\" \"foot\"\n$sequence idle \"ref.smd\"\n\
         $sequence walk \"walk.smd\" {{ {options} }}\n"
    );
    std::fs::write(dir.join("model.qc"), qc).unwrap();
    dir
}

fn rotate(q: [f32; 4], v: [f32; 3]) -> [f32; 3] {
    let [x, y, z, w] = q;
    let u = [x, y, z];
    let cross = |a: [f32; 3], b: [f32; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let t = cross(u, v).map(|c| 2.0 * c);
    let c = cross(u, t);
    [
        v[0] + w * t[0] + c[0],
        v[1] + w * t[1] + c[1],
        v[2] + w * t[2] + c[2],
    ]
}

fn qmul(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    let [ax, ay, az, aw] = a;
    let [bx, by, bz, bw] = b;
    [
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ]
}

fn dist(a: [f32; 3], b: [f32; 3]) -> f32 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// Model-space positions of the four bones in each frame of animation `@walk`, as the engine
/// decodes them.
fn walk_positions(dir: &Path) -> Vec<[[f32; 3]; 4]> {
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    let files = out.unwrap_or_else(|| panic!("{diags:#?}"));
    let mdl = &files.iter().find(|(n, _)| n.ends_with(".mdl")).unwrap().1;
    let m = read::read_mdl(mdl).unwrap();
    let i = m.animations.iter().position(|a| a.name == "@walk").unwrap();
    let parents: Vec<i32> = m.bones.iter().map(|b| b.rec.parent).collect();
    assert_eq!(parents, [-1, 0, 1, 2]);
    (0..FRAMES)
        .map(|f| {
            let p = pose::decode_anim(&m.bytes, &m, i, f as f32).unwrap();
            let mut q = [[0.0f32; 4]; 4];
            let mut x = [[0.0f32; 3]; 4];
            for b in 0..4 {
                if b == 0 {
                    q[0] = p[0].quat;
                    x[0] = p[0].pos;
                } else {
                    let r = rotate(q[b - 1], p[b].pos);
                    x[b] = [x[b - 1][0] + r[0], x[b - 1][1] + r[1], x[b - 1][2] + r[2]];
                    q[b] = qmul(q[b - 1], p[b].quat);
                }
            }
            x
        })
        .collect()
}

/// Without `range`, the foot is held where it is in frame 0 on every frame; the chain keeps its
/// lengths and the pelvis its place. Without the fixup the foot slides.
#[test]
fn ikfixup_holds_the_foot() {
    let plain = walk_positions(&project("plain", ""));
    let slide = dist(plain[0][3], plain[FRAMES - 1][3]);
    assert!(slide > 2.0, "the foot slides {slide} without the fixup");

    let fixed = walk_positions(&project("held", "ikfixup \"lfoot\" footstep"));
    for (f, x) in fixed.iter().enumerate() {
        assert!(
            dist(x[3], fixed[0][3]) < 0.05,
            "frame {f}: foot at {:?}, frame 0 at {:?}",
            x[3],
            fixed[0][3]
        );
        assert!(dist(x[0], plain[f][0]) < 1e-3, "the pelvis stays");
        // the thigh's and calf's lengths: 3.61 (0, 2, 0) … as in the SMD
        assert!((dist(x[1], x[2]) - dist(plain[0][1], plain[0][2])).abs() < 0.02);
        assert!((dist(x[2], x[3]) - dist(plain[0][2], plain[0][3])).abs() < 0.02);
    }
    assert!(
        dist(fixed[0][3], plain[0][3]) < 0.05,
        "frame 0 is where it was"
    );
    // the knee moved to reach: the solve did something
    assert!(dist(fixed[FRAMES - 1][2], plain[FRAMES - 1][2]) > 0.1);
}

/// A `range` that starts at frame 0 gives weight 0 on every frame before the last (the SDK
/// compares its frame numbers with a cycle of 0, which is not past the range's start); on the
/// last frame the cycle is 1, inside `range 0 1 9 10`'s hold: only that frame's foot is put
/// where it is at the contact frame (the peak, frame 1), as with Valve's compiler.
#[test]
fn ikfixup_with_a_range_moves_only_the_last_frame() {
    let plain = walk_positions(&project("plain2", ""));
    let ranged = walk_positions(&project(
        "ranged",
        "ikfixup \"lfoot\" footstep range 0 1 9 10",
    ));
    for (f, (a, b)) in plain.iter().zip(&ranged).enumerate().take(FRAMES - 1) {
        for k in 0..4 {
            assert!(dist(a[k], b[k]) < 1e-4, "frame {f} bone {k}: {a:?} {b:?}");
        }
    }
    let last = &ranged[FRAMES - 1];
    assert!(
        dist(last[3], plain[1][3]) < 0.05,
        "{:?} {:?}",
        last[3],
        plain[1][3]
    );
    assert!(dist(plain[FRAMES - 1][3], plain[1][3]) > 2.0);
}

/// An unknown chain is E0620 at its name; a contact past the end of an animation that does not
/// loop is E0625 at the command; neither writes a model.
#[test]
fn ikfixup_errors() {
    let dir = project("unknown", "ikfixup \"rfoot\" footstep");
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    assert!(out.is_none());
    let text = std::fs::read_to_string(dir.join("model.qc")).unwrap();
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).cloned().collect();
    assert_eq!(
        codes_at(&errors, &text),
        [("E0620".to_string(), "\"rfoot\"".to_string())]
    );

    let dir = project("past", "ikfixup \"lfoot\" footstep contact 30");
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    assert!(out.is_none());
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).cloned().collect();
    let text = std::fs::read_to_string(dir.join("model.qc")).unwrap();
    assert_eq!(
        codes_at(&errors, &text),
        [("E0625".to_string(), "ikfixup".to_string())]
    );
    assert!(
        errors[0].message.contains("frame 30"),
        "{}",
        errors[0].message
    );

    // no "not applied" warning for it any more
    let dir = project("quiet", "ikfixup \"lfoot\" footstep");
    let (_, diags) = compile_qc(&dir.join("model.qc"));
    assert!(
        !diags.iter().any(|d| d.code.as_str() == "W0620"),
        "{diags:#?}"
    );
}
