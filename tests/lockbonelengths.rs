//! `$lockbonelengths` (issue 16): animations keep the bones' rest lengths, and IK chains are
//! solved to keep their ends where the animation put them, as the 2006 SDK's `LockBoneLengths`
//! does with the engine's two-link solve (`testdata/source/lockbonelengths`: a leg thigh →
//! calf → foot, rest knee 5 forward and 10 down, foot 5 back and 10 down, so both links are
//! √125 long; frame 1 of `stretch` stretches the thigh to put the knee 12 down and the foot
//! 22 below the hip). Checked on the decoded animation (`mdlc inspect --pose --json`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use serde_json::Value;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/source/lockbonelengths"
);

type V3 = [f64; 3];

fn v(x: &Value) -> Vec<f64> {
    x.as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_f64().unwrap())
        .collect()
}

fn rotate(q: &[f64], p: V3) -> V3 {
    // p + 2w(q×p) + 2 q×(q×p)
    let (x, y, z, w) = (q[0], q[1], q[2], q[3]);
    let c = [
        y * p[2] - z * p[1],
        z * p[0] - x * p[2],
        x * p[1] - y * p[0],
    ];
    let cc = [
        y * c[2] - z * c[1],
        z * c[0] - x * c[2],
        x * c[1] - y * c[0],
    ];
    [0, 1, 2].map(|i| p[i] + 2.0 * w * c[i] + 2.0 * cc[i])
}

fn mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    vec![
        a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
        a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
        a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
        a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
    ]
}

/// Model-space positions of the bones in frame `f` of `stretch`.
fn positions(mdl: &Path, f: usize) -> Vec<V3> {
    let j = common::inspect_json_with(mdl, &["--pose", "stretch", "--frame", &f.to_string()]);
    let mut world: Vec<(Vec<f64>, V3)> = Vec::new();
    for b in j["bones"].as_array().unwrap() {
        let (q, p) = (v(&b["quat"]), v(&b["pos"]));
        let p: V3 = [p[0], p[1], p[2]];
        let w = match b["parent"].as_i64().unwrap() {
            -1 => (q, p),
            k => {
                let (pq, pp) = &world[k as usize];
                let r = rotate(pq, p);
                (mul(pq, &q), [0, 1, 2].map(|i| pp[i] + r[i]))
            }
        };
        world.push(w);
    }
    world.into_iter().map(|w| w.1).collect()
}

fn dist(a: V3, b: V3) -> f64 {
    (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f64>().sqrt()
}

/// Locked: both links are √125 again, the foot stays 22 below the hip (the IK solve), the knee
/// bends forward to 2 in front, 11 down (2² + 11² = 125). Not locked: the animation's own
/// stretched leg (knee 12 down).
#[test]
fn locked_bones_keep_their_length_and_the_foot_its_place() {
    let l = 125f64.sqrt();
    let locked = common::build_fresh(&Path::new(FIXTURES).join("leg.qc"), "lock-leg");
    let p = positions(&common::files_with_ext(&locked, &["mdl"]).remove(0), 1);
    // the model is turned 90° about Z: SMD (x, y, z) is model (−y, x, z); the hip at z 40
    assert!((dist(p[2], p[1]) - l).abs() < 0.02, "{p:?}");
    assert!((dist(p[3], p[2]) - l).abs() < 0.02, "{p:?}");
    assert!(dist(p[3], [0.0, 0.0, 18.0]) < 0.02, "foot {:?}", p[3]);
    assert!(dist(p[2], [0.0, 2.0, 29.0]) < 0.02, "knee {:?}", p[2]);
    // frame 0 is the rest pose: unchanged
    let p0 = positions(&common::files_with_ext(&locked, &["mdl"]).remove(0), 0);
    assert!(dist(p0[2], [0.0, 5.0, 30.0]) < 0.02, "{p0:?}");

    let free = common::build_fresh(&Path::new(FIXTURES).join("unlocked.qc"), "lock-free");
    let p = positions(&common::files_with_ext(&free, &["mdl"]).remove(0), 1);
    assert!(dist(p[2], [0.0, 5.0, 28.0]) < 0.02, "knee {:?}", p[2]);
    assert!(dist(p[3], [0.0, 0.0, 18.0]) < 0.02, "foot {:?}", p[3]);
}
