//! Bone realignment (issue 16), as the 2006 SDK's compiler does it (`simplify.cpp`,
//! `RealignBones`): the first two links of every `$ikchain` point their X axis at the next link,
//! `$realignbones` turns every other bone with one child, `$forcerealign` turns a bone further,
//! and a `$definebone`d bone keeps its frame. `testdata/source/realign`: a leg and an arm that
//! hang along −Z, a neck with one child (the head), a `$definebone`d tail with one child.
//!
//! What must not change is what the game shows: `plain.qc` is the same model without the
//! commands that turn bones, and every bone of every frame must be at the same place, turned by
//! the same fixed realignment (so every skinned vertex is where it was).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/realign");

type V3 = [f64; 3];
type Q = [f64; 4];

fn v(x: &Value) -> Vec<f64> {
    x.as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_f64().unwrap())
        .collect()
}

fn qmul(a: &Q, b: &Q) -> Q {
    [
        a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
        a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
        a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
        a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
    ]
}

fn conj(q: &Q) -> Q {
    [-q[0], -q[1], -q[2], q[3]]
}

fn rotate(q: &Q, p: V3) -> V3 {
    let r = qmul(&qmul(q, &[p[0], p[1], p[2], 0.0]), &conj(q));
    [r[0], r[1], r[2]]
}

/// The same rotation (a quaternion and its negative are one rotation).
fn same_turn(a: &Q, b: &Q, eps: f64) -> bool {
    (a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>().abs() - 1.0).abs() < eps
}

fn near(a: &[f64], b: &[f64], eps: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= eps)
}

/// Every bone's model-space rotation and position in frame `f` of `anim`, by name, as the
/// engine decodes the animation (`mdlc inspect --pose --json`).
fn world(mdl: &Path, anim: &str, f: usize) -> HashMap<String, (Q, V3)> {
    let j = common::inspect_json_with(mdl, &["--pose", anim, "--frame", &f.to_string()]);
    let mut list: Vec<(Q, V3)> = Vec::new();
    let mut out = HashMap::new();
    for b in j["bones"].as_array().unwrap() {
        let (q, p) = (v(&b["quat"]), v(&b["pos"]));
        let q: Q = [q[0], q[1], q[2], q[3]];
        let p: V3 = [p[0], p[1], p[2]];
        let w = match b["parent"].as_i64().unwrap() {
            -1 => (q, p),
            k => {
                let (pq, pp) = list[k as usize];
                let r = rotate(&pq, p);
                (qmul(&pq, &q), [0, 1, 2].map(|i| pp[i] + r[i]))
            }
        };
        list.push(w);
        out.insert(b["name"].as_str().unwrap().to_string(), w);
    }
    out
}

/// Builds `name.qc` into a folder of its own for test `tag` (tests run in parallel).
fn build(name: &str, tag: &str) -> PathBuf {
    let dir = common::build_fresh(
        &Path::new(FIXTURES).join(format!("{name}.qc")),
        &format!("realign-{tag}-{name}"),
    );
    common::files_with_ext(&dir, &["mdl"]).remove(0)
}

/// The rest frames: each turned bone's next link lies on its +X, the rest is as the SMD has it.
#[test]
fn turned_bones_point_at_their_child() {
    let mdl = build("realign", "rest");
    let bones = common::inspect_json(&mdl)["mdl"]["bones"].clone();
    let by_name = |n: &str| {
        bones
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == n)
            .unwrap()
            .clone()
    };
    // the leg (thigh → calf → foot, 18 each) and the arm (upperarm → forearm 12 → hand 10)
    for (b, len) in [
        ("calf", 18.0),
        ("foot", 18.0),
        ("forearm", 12.0),
        ("hand", 10.0),
    ] {
        assert!(near(&v(&by_name(b)["pos"]), &[len, 0.0, 0.0], 1e-5), "{b}");
    }
    // $realignbones: the neck points at the head, (0, 3, 6) away
    assert!(near(
        &v(&by_name("head")["pos"]),
        &[45f64.sqrt(), 0.0, 0.0],
        1e-5
    ));
    // the thigh, worked out by hand: X' = −Z (at the calf); of the old axes X is the most
    // perpendicular to it (ties go to X), so Z' = X' × X = −Y and Y' = Z' × X' = +X. The
    // pose-to-bone matrix's rows are the bone's axes in the model.
    let ptb = by_name("thigh")["pose_to_bone"].clone();
    for (r, axis) in [[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]
        .iter()
        .enumerate()
    {
        assert!(near(&v(&ptb[r])[..3], axis, 1e-6), "thigh row {r}: {ptb}");
    }
    // $forcerealign "head" 0 0 0 90: the head has no child, so its frame stays the model's
    // (the SMD's rotations are all 0); turned 90° about Z it is X' = +Y, Y' = −X
    let head = by_name("head")["pose_to_bone"].clone();
    assert!(near(&v(&head[0])[..3], &[0.0, 1.0, 0.0], 1e-6), "{head}");
    assert!(near(&v(&head[1])[..3], &[-1.0, 0.0, 0.0], 1e-6), "{head}");
    // the $definebone'd tail keeps its frame, although it has one child
    assert!(near(
        &v(&by_name("tailtip")["pos"]),
        &[0.0, -6.0, 0.0],
        1e-6
    ));
    assert!(near(
        &v(&by_name("tail")["quat"]),
        &[0.0, 0.0, 0.0, 1.0],
        0.0
    ));
    // the spine (two children) and the pelvis (three) are not turned
    for b in ["spine", "pelvis"] {
        assert!(
            near(&v(&by_name(b)["quat"]), &[0.0, 0.0, 0.0, 1.0], 0.0),
            "{b}"
        );
    }
    source_common::oracle_check(&mdl);
}

/// Every bone of every frame is where it is without realignment, turned by its fixed
/// realignment: the animation is taken through `srcRealign` (2006 SDK `TranslateAnimations`).
#[test]
fn the_model_moves_as_without_realignment() {
    let turned = build("realign", "moves");
    let plain = build("plain", "moves");
    let rest_t = world(&turned, "idle", 0);
    let rest_p = world(&plain, "idle", 0);
    assert_eq!(rest_t.len(), 12);
    let realign: HashMap<&String, Q> = rest_p
        .iter()
        .map(|(n, (qp, _))| (n, qmul(&conj(qp), &rest_t[n].0)))
        .collect();
    // the turned bones are turned, the others not
    for (n, r) in &realign {
        let identity = same_turn(r, &[0.0, 0.0, 0.0, 1.0], 1e-6);
        let expect_turned =
            ["thigh", "calf", "upperarm", "forearm", "neck", "head"].contains(&n.as_str());
        assert_eq!(!identity, expect_turned, "{n}: {r:?}");
    }
    let mut checked = 0;
    for f in 0..5 {
        let t = world(&turned, "walk", f);
        let p = world(&plain, "walk", f);
        for (n, (qp, pp)) in &p {
            let (qt, pt) = &t[n];
            // positions as the animation stores them (quantized: a few thousandths)
            assert!(near(pt, pp, 0.01), "{n} frame {f}: {pt:?} against {pp:?}");
            let want = qmul(qp, &realign[n]);
            assert!(
                same_turn(qt, &want, 1e-4),
                "{n} frame {f}: {qt:?} against {want:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 60);
    // and the animation does move the turned bones (not a still pose compared with itself)
    let (q0, _) = world(&turned, "walk", 0)["calf"];
    let (q4, _) = world(&turned, "walk", 4)["calf"];
    assert!(!same_turn(&q0, &q4, 1e-3));
}

/// A `$definebone` fixup is the bone's realignment (2006 SDK `Cmd_DefineBone`): its rest frame
/// stays as defined, and its animation is turned by the fixup (yaw 90°), so in every frame the
/// tail is turned 90° about its Z axis from where the plain model has it, and its child is
/// where it was.
#[test]
fn a_definebone_fixup_turns_the_animation() {
    let fixed = build("fixup", "fixup");
    let plain = build("plain", "fixup");
    let h = std::f64::consts::FRAC_1_SQRT_2;
    let yaw90: Q = [0.0, 0.0, h, h];
    for (anim, f) in [("idle", 0), ("walk", 0), ("walk", 3)] {
        let a = world(&fixed, anim, f);
        let p = world(&plain, anim, f);
        let want = qmul(&p["tail"].0, &yaw90);
        assert!(same_turn(&a["tail"].0, &want, 1e-4), "{anim} {f}");
        assert!(near(&a["tail"].1, &p["tail"].1, 0.01));
        assert!(near(&a["tailtip"].1, &p["tailtip"].1, 0.01), "{anim} {f}");
        assert!(
            same_turn(&a["tailtip"].0, &p["tailtip"].0, 1e-4),
            "{anim} {f}"
        );
    }
}

/// Attachments and explicit hit boxes are placed in the turned frame, as Valve's compiler
/// places them (`LinkAttachments` runs after `RealignBones` and keeps the QC's offset): the
/// attachment record holds the QC's numbers.
#[test]
fn attachments_keep_the_offset_written() {
    for name in ["realign", "plain"] {
        let mdl = build(name, "attach");
        let a = common::inspect_json(&mdl)["mdl"]["attachments"][0].clone();
        let m = &a["local"];
        let col3: Vec<f64> = (0..3).map(|r| v(&m[r])[3]).collect();
        assert!(near(&col3, &[0.0, 0.0, -5.0], 1e-6), "{name}: {a}");
    }
}

/// Two IK chains that ask one bone to point at two children: E0601 at the later chain, and
/// nothing is written.
#[test]
fn a_bone_cannot_point_at_two_children() {
    let path = Path::new(FIXTURES).join("twochildren.qc");
    let (out, diags) = source_common::compile_qc(&path);
    assert!(out.is_none());
    let text = std::fs::read_to_string(&path).unwrap();
    let got = source_common::codes_at(&diags, &text);
    assert_eq!(
        got,
        [("E0601".to_string(), "\"leg\"".to_string())],
        "{diags:?}"
    );
}

/// `import-qc` carries `$realignbones` and `$forcerealign` (`[skeleton] realign_bones`,
/// `force_realign`), and the TOML builds the same MDL byte for byte.
#[test]
fn realignment_survives_import() {
    let qc = Path::new(FIXTURES).join("realign.qc");
    let text = common::import_builds_same(&qc, "realign-import");
    assert!(text.contains("realign_bones = true"), "{text}");
    assert!(text.contains("force_realign = ["), "{text}");
}

/// `$forcerealign` and `$screenalign` naming a bone the model does not have: E0402 at the name
/// (Valve's compiler stops too: "unknown bone … in $forcedrealign", "unknown
/// g_screenalignedbone link"), and nothing is written.
#[test]
fn unknown_bones_of_realign_commands_are_errors() {
    let dir = source_common::tmp("realign", "unknown");
    std::fs::copy(Path::new(FIXTURES).join("ref.smd"), dir.join("ref.smd")).unwrap();
    let qc = dir.join("u.qc");
    std::fs::write(
        &qc,
        "$cdmaterials \"x\"\n$body body \"ref.smd\"\n$forcerealign \"nosuch\" 0 0 0 90\n\
         $screenalign \"nothere\" cylinder\n$sequence idle \"ref.smd\"\n",
    )
    .unwrap();
    let (out, diags) = source_common::compile_qc(&qc);
    assert!(out.is_none());
    let text = std::fs::read_to_string(&qc).unwrap();
    let got = source_common::codes_at(&diags, &text);
    assert_eq!(
        got,
        [("E0402", "\"nosuch\""), ("E0402", "\"nothere\"")]
            .map(|(a, b)| (a.to_string(), b.to_string())),
        "{diags:?}"
    );
}
