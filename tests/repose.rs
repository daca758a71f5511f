//! Meshes re-posed onto the model's bones (the 2006 SDK's `RemapVerticesToGlobalBones`,
//! `simplify.cpp`): a mesh is skinned in its own file's rest pose; where the model's bone
//! stands elsewhere (a `$definebone`, or an earlier file's pose of the bone), each vertex is
//! taken into its bones' space with the file's pose and out with the model's, weighted.
//! Valve's build of a shipped Left 4 Dead 2 model (`alastor_rel.qc`, issue 16's notes) shows
//! it: its DMX meshes, bound in their own pose, sit on the `$definebone` skeleton.
//!
//! `testdata/source/repose`: `arm` is bound at (0, 0, 10) in `ref.smd`; the QC stands it at
//! (0, 0, 20) turned 90° about Z. Worked out by hand, `p' = B · S⁻¹ · p` with
//! `S⁻¹ = translate (0, 0, −10)` and `B = translate (0, 0, 20) · Rz(90°)`:
//! (1, 0, 10) → (0, 1, 20); (0, 1, 10) → (−1, 0, 20); (0, 0, 11) → (0, 0, 21);
//! (3, 0, 10) → (0, 3, 20); (2, 1, 10) → (−1, 2, 20); and (2, 0, 10), half on `root` (which
//! stays) and half on `arm` (→ (0, 2, 20)), → (1, 1, 15). `root`'s triangle does not move.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::{Path, PathBuf};

use common::fresh_dir;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/repose")
}

/// Builds the fixture QC with `from` replaced by `to`; returns the `.mdl` written.
fn build(name: &str, from: &str, to: &str) -> PathBuf {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("repose-{name}")));
    std::fs::copy(fixture().join("ref.smd"), dir.join("ref.smd")).unwrap();
    let qc = std::fs::read_to_string(fixture().join("repose.qc"))
        .unwrap()
        .replace(from, to);
    std::fs::write(dir.join("repose.qc"), qc).unwrap();
    let out = common::build_into_out(&dir.join("repose.qc"), &dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("out/test/repose.mdl")
}

/// The VVD's vertices (`mstudiovertex_t`, 48 bytes from `vertexDataStart`): (position,
/// normal), sorted.
fn vertices(mdl: &Path) -> Vec<([f32; 3], [f32; 3])> {
    let b = std::fs::read(mdl.with_extension("vvd")).unwrap();
    let int = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let f = |o: usize| f32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let (start, end) = (int(56) as usize, int(60) as usize);
    let mut out: Vec<([f32; 3], [f32; 3])> = (start..end)
        .step_by(48)
        .map(|o| {
            (
                [f(o + 16), f(o + 20), f(o + 24)],
                [f(o + 28), f(o + 32), f(o + 36)],
            )
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

fn positions(v: &[([f32; 3], [f32; 3])]) -> Vec<[f32; 3]> {
    v.iter().map(|x| x.0).collect()
}

/// The same points, each within 1e-4 of one of the other list (any order).
fn close(a: &[[f32; 3]], b: &[[f32; 3]]) -> bool {
    let near = |x: &[f32; 3], y: &[f32; 3]| x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-4);
    a.len() == b.len()
        && a.iter()
            .all(|x| b.iter().filter(|y| near(x, y)).count() == 1)
}

#[test]
fn a_mesh_is_reposed_onto_its_defined_bones() {
    let mdl = build("defined", "", "");
    source_common::oracle_check(&mdl);
    let got = vertices(&mdl);
    let want = [
        [-1.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 1.0, 20.0],
        [-1.0, 0.0, 20.0],
        [0.0, 0.0, 21.0],
        [1.0, 1.0, 15.0],
        [0.0, 3.0, 20.0],
        [-1.0, 2.0, 20.0],
    ];
    assert!(close(&positions(&got), &want), "{got:?}");
    // the turn about Z leaves the normals (0, 0, 1)
    assert!(got
        .iter()
        .all(|(_, n)| (n[0].abs() + n[1].abs() + (n[2] - 1.0).abs()) < 1e-5));
}

/// Without `$definebone`, the bones stand where the file binds them: nothing moves, and
/// `root`'s triangle is the same, bit for bit, as in the re-posed build.
#[test]
fn a_mesh_in_the_models_pose_keeps_its_positions() {
    let plain = build("plain", "$definebone", "// $definebone");
    let file = vertices(&plain);
    let mut want = vec![
        [-1.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 0.0, 10.0],
        [0.0, 1.0, 10.0],
        [0.0, 0.0, 11.0],
        [2.0, 0.0, 10.0],
        [3.0, 0.0, 10.0],
        [2.0, 1.0, 10.0],
    ];
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(positions(&file), want);
    let defined = positions(&vertices(&build("defined-root", "", "")));
    for p in [[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
        assert!(defined.contains(&p), "{defined:?}");
    }
}

/// A `$definebone` that differs from the file's pose by printing noise (a millionth of a
/// unit, what 6-decimal exporters leave between files of one skeleton) moves nothing: the
/// vertices are those of the build without it, bit for bit.
#[test]
fn printing_noise_in_a_pose_moves_nothing() {
    let noisy = build(
        "noise",
        "\"arm\" \"root\" 0 0 20 0 90 0",
        "\"arm\" \"root\" 0 0 10.000001 0 0.000001 0",
    );
    let plain = build("noise-plain", "$definebone", "// $definebone");
    assert_eq!(vertices(&noisy), vertices(&plain));
}
