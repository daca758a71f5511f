//! `$limitrotation bone [sequence…]` (issue 16): the bone gets BONE_FIXED_ALIGNMENT and a
//! `qAlignment` the engine aligns its rotations to, as the 2006 SDK's `limitBoneRotations`
//! makes it (`testdata/source/limitrotation`: an arm that swings 0°, 22.5°, … 90° about Z over
//! five frames, rest pose 0°), read back by mdlc's reader and by valvemdl
//! (`tests/oracle/procedural.py`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::Path;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/limitrotation");

/// `(flags, qAlignment)` of bone 1 from both readers.
fn arm(qc: &str, name: &str) -> Vec<(i64, Vec<f64>)> {
    let dir = common::build_fresh(&Path::new(FIXTURES).join(qc), name);
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let b = common::inspect_json(&mdl)["mdl"]["bones"][1].clone();
    let q = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let mut out = vec![(b["flags"]["value"].as_i64().unwrap(), q(&b["q_alignment"]))];
    if let Some(o) = source_common::oracle_json("procedural.py", &mdl) {
        let b = &o["bones"][1];
        out.push((b["flags"].as_i64().unwrap(), q(&b["q_alignment"])));
    }
    out
}

fn yaw(deg: f64) -> [f64; 4] {
    let h = deg.to_radians() / 2.0;
    [0.0, 0.0, h.sin(), h.cos()]
}

/// Over the swing the running middle ends halfway between the last frame (90°) and the
/// first frame nudged back by 1 % (−0.225°): 44.8875°; added to the rest pose (0°) and
/// normalised, the alignment is a 22.44375° turn about Z.
#[test]
fn the_alignment_is_the_middle_of_the_swept_rotations() {
    for (flags, q) in arm("swing.qc", "limitrotation-swing") {
        assert_eq!(flags & 0x0010_0000, 0x0010_0000);
        let want = yaw(22.443_75);
        assert!(
            q.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5),
            "{q:?}"
        );
    }
}

/// With sequences named after the bone, Valve's compiler takes none of them into account
/// (its loop over them is empty): the alignment is the rest pose, the identity.
#[test]
fn with_sequences_named_the_alignment_is_the_rest_pose() {
    for (flags, q) in arm("named.qc", "limitrotation-named") {
        assert_eq!(flags & 0x0010_0000, 0x0010_0000);
        assert_eq!(q, [0.0, 0.0, 0.0, 1.0]);
    }
}
