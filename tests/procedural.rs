//! `$proceduralbones` (issue 16): `.vrd` helpers and aim constraints and the older
//! axis-interpolation files, read as the 2006 SDK's compiler reads them and written as its
//! `WriteBoneInfo` lays them out, on a fixture whose values are worked out by hand
//! (`testdata/source/procedural`: bones named `Rig.…`, the files naming them without `Rig.`);
//! read back by mdlc's reader and by an independent one (`tests/oracle/procedural.py`, valvemdl),
//! and posed as the engine poses them (source-sdk-2013 `bone_setup.cpp`, `DoQuatInterpBone`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::Path;

use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/procedural");

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn arr(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(f).collect()
}

fn near(a: &[f64], b: &[f64], eps: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= eps)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `DoQuatInterpBone`: the helper's local pose for the control bone's local rotation `src`,
/// from the triggers (each `inv_tolerance`, `trigger`, `pos`, `quat`).
fn engine_pose(triggers: &[Value], src: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let weights: Vec<f64> = triggers
        .iter()
        .map(|t| {
            let d = dot(&arr(&t["trigger"]), src).abs().min(1.0);
            (1.0 - 2.0 * d.acos() * f(&t["inv_tolerance"])).max(0.0)
        })
        .collect();
    let total: f64 = weights.iter().sum();
    if total <= 0.001 {
        return (arr(&triggers[0]["quat"]), arr(&triggers[0]["pos"]));
    }
    let mut q = vec![0.0; 4];
    let mut p = vec![0.0; 3];
    for (t, w) in triggers.iter().zip(&weights) {
        if *w == 0.0 {
            continue;
        }
        let s = w / total;
        let tq = arr(&t["quat"]);
        // QuaternionAlign(trigger quat, accumulated)
        let a: f64 = (0..4).map(|i| (tq[i] - q[i]).powi(2)).sum();
        let b: f64 = (0..4).map(|i| (tq[i] + q[i]).powi(2)).sum();
        if a > b {
            q.iter_mut().for_each(|x| *x = -*x);
        }
        for i in 0..4 {
            q[i] += s * tq[i];
        }
        for (i, x) in arr(&t["pos"]).iter().enumerate() {
            p[i] += s * x;
        }
    }
    let l = dot(&q, &q).sqrt();
    (q.iter().map(|x| x / l).collect(), p)
}

/// The helper follows the forearm: `<display> … 50` adds half the forearm's rest offset
/// (10, 0, 0) to each trigger's `<basepos> 1 0 0` + position; trigger angles 0 0 90 are a 90°
/// yaw, angles 45 0 0 a 45° roll; tolerance 90° gives 1/(π/2). The aim constraint aims at the
/// attachment `target` (so STUDIO_PROC_AIMATATTACH, aim = attachment 0), its aim vector made
/// unit length. Both bones are ALWAYS_PROCEDURAL. Posed by the engine's rule, the helper takes
/// each trigger's pose at that trigger, and halfway between them half of each.
#[test]
fn vrd_helpers_and_aim_constraints() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("helpers.qc"), "procedural-vrd");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let own = common::inspect_json(&mdl)["mdl"]["bones"].clone();
    let oracle = source_common::oracle_json("procedural.py", &mdl);
    if let Some(o) = &oracle {
        assert_eq!(o["problems"], serde_json::json!([]));
    }
    let h = std::f64::consts::FRAC_1_SQRT_2;
    let (s8, c8) = (0.382_683_4, 0.923_879_5);
    let readers: Vec<(&str, Value)> = std::iter::once(("mdlc", own))
        .chain(oracle.map(|o| ("oracle", o["bones"].clone())))
        .collect();
    for (reader, bones) in &readers {
        let helper = &bones[3];
        assert_eq!(helper["proctype"], 2, "{reader}");
        let p = &helper["procedural"];
        assert_eq!(p["control"], 2, "{reader}");
        let t = p["triggers"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        let inv = 1.0 / std::f64::consts::FRAC_PI_2;
        assert!((f(&t[0]["inv_tolerance"]) - inv).abs() < 1e-6, "{reader}");
        assert!(near(&arr(&t[0]["pos"]), &[6.0, 0.0, 0.0], 1e-6), "{reader}");
        assert!(near(&arr(&t[0]["trigger"]), &[0.0, 0.0, 0.0, 1.0], 1e-6));
        assert!(near(&arr(&t[1]["pos"]), &[6.0, 2.0, 0.0], 1e-6), "{reader}");
        assert!(
            near(&arr(&t[1]["trigger"]), &[0.0, 0.0, h, h], 1e-6),
            "{reader}"
        );
        assert!(
            near(&arr(&t[1]["quat"]), &[s8, 0.0, 0.0, c8], 1e-6),
            "{reader}"
        );
        for k in 0..2 {
            let (q, pos) = engine_pose(t, &arr(&t[k]["trigger"]));
            assert!(near(&q, &arr(&t[k]["quat"]), 1e-6), "{reader} {k}");
            assert!(near(&pos, &arr(&t[k]["pos"]), 1e-6), "{reader} {k}");
        }
        // a 45° yaw, halfway: each trigger is 22.5° away, weight 1 − 2·(π/8)/(π/2) = ½
        let (_, pos) = engine_pose(t, &[0.0, 0.0, s8, c8]);
        assert!(near(&pos, &[6.0, 1.0, 0.0], 1e-4), "{reader}: {pos:?}");
        // a 22.5° yaw: weights ¾ and ¼
        let (_, pos) = engine_pose(t, &[0.0, 0.0, 0.195_090_3, 0.980_785_3]);
        assert!(near(&pos, &[6.0, 0.5, 0.0], 1e-4), "{reader}: {pos:?}");

        let aimer = &bones[4];
        assert_eq!(aimer["proctype"], 4, "{reader}");
        let a = &aimer["procedural"];
        assert_eq!(
            (a["parent"].as_i64(), a["aim"].as_i64()),
            (Some(0), Some(0))
        );
        assert!(near(&arr(&a["aimvector"]), &[1.0, 0.0, 0.0], 1e-6));
        assert!(near(&arr(&a["upvector"]), &[0.0, 0.0, 1.0], 1e-6));
        assert!(near(&arr(&a["basepos"]), &[0.0, 0.0, 5.0], 1e-6));
        for b in [helper, aimer] {
            let flags = b["flags"]["value"].as_i64().or_else(|| b["flags"].as_i64());
            assert_eq!(flags.unwrap() & 0x4, 0x4, "{reader}: ALWAYS_PROCEDURAL");
        }
    }
    source_common::oracle_check(&mdl);
}

/// `$bonemerge` on a helper bone: the helper and, through `MarkProceduralBoneChain`, its
/// control bone and their parents are used by bone merge (0x40000), as in Valve's builds (a
/// Garry's Mod player model, TURB0000's `scorpio`, merges its wrist and knee helpers: Valve's
/// build flags the hands and calves that drive them); a bone on neither chain is not.
#[test]
fn a_merged_helper_tags_its_control_bone() {
    let dir = common::fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join("procedural-merge"));
    let qc = std::fs::read_to_string(Path::new(FIXTURES).join("helpers.qc"))
        .unwrap()
        .replace("\"ref.smd\"", &format!("\"{FIXTURES}/ref.smd\""))
        .replace("\"arm.vrd\"", &format!("\"{FIXTURES}/arm.vrd\""))
        + "$bonemerge \"Rig.elbow_helper\"\n";
    std::fs::write(dir.join("merge.qc"), qc).unwrap();
    let out = common::build_fresh(&dir.join("merge.qc"), "procedural-merge-out");
    let mdl = common::files_with_ext(&out, &["mdl"]).remove(0);
    let bones = common::inspect_json(&mdl)["mdl"]["bones"].clone();
    let merged: Vec<(String, bool)> = bones
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_string(),
                b["flags"]["value"].as_i64().unwrap() & 0x40000 != 0,
            )
        })
        .collect();
    let want = [
        ("Rig.pelvis", true),
        ("Rig.upperarm", true),
        ("Rig.forearm", true),
        ("Rig.elbow_helper", true),
        ("Rig.aimer", false),
    ];
    assert_eq!(
        merged,
        want.map(|(n, m)| (n.to_string(), m)).to_vec(),
        "USED_BY_BONE_MERGE"
    );
}

/// The older axis-interpolation text: `bone "elbow_helper" "x" "forearm" "x" 3` (MAX's axis 3
/// is the engine's 2), `axis n px py pz a b c` poses on top of `basepos 1 0 0`, angles a roll.
#[test]
fn axis_interpolation_files() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("axis.qc"), "procedural-axis");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let own = common::inspect_json(&mdl)["mdl"]["bones"][3].clone();
    let mut readers = vec![("mdlc", own)];
    if let Some(o) = source_common::oracle_json("procedural.py", &mdl) {
        readers.push(("oracle", o["bones"][3].clone()));
    }
    let h = std::f64::consts::FRAC_1_SQRT_2;
    for (reader, b) in &readers {
        assert_eq!(b["proctype"], 1, "{reader}");
        let p = &b["procedural"];
        assert_eq!(
            (p["control"].as_i64(), p["axis"].as_i64()),
            (Some(2), Some(2))
        );
        assert!(near(&arr(&p["pos"][0]), &[1.0, 0.0, 0.0], 1e-6), "{reader}");
        assert!(near(&arr(&p["pos"][1]), &[1.0, 1.0, 0.0], 1e-6), "{reader}");
        assert!(
            near(&arr(&p["quat"][1]), &[h, 0.0, 0.0, h], 1e-6),
            "{reader}"
        );
    }
}

/// A missing file is skipped with W0414, as Valve's compiler skips it (the SDK male's
/// `../male.vrd` is not in its repository); bad lines, unknown control bones and a hierarchy
/// that differs from the model's are errors with their spans, a helper not in the model W0415;
/// nothing is written on error.
#[test]
fn procedural_bone_diagnostics() {
    let path = Path::new(FIXTURES).join("missing.qc");
    let (out, diags) = source_common::compile_qc(&path);
    assert!(out.is_some(), "{diags:?}");
    assert!(diags.iter().any(|d| d.code.as_str() == "W0414"));

    let path = Path::new(FIXTURES).join("errors.qc");
    let (out, diags) = source_common::compile_qc(&path);
    assert!(out.is_none());
    let vrd = std::fs::read_to_string(Path::new(FIXTURES).join("bad.vrd")).unwrap();
    let got: Vec<(&str, &str)> = diags
        .iter()
        .filter(|d| d.code.as_str().starts_with("E042") || d.code.as_str() == "W0415")
        .map(|d| {
            let l = d.labels.iter().find(|l| l.primary).unwrap();
            let s = l.at.span.start as usize;
            (d.code.as_str(), &vrd[s..s + 6])
        })
        .collect();
    assert_eq!(
        got,
        [
            ("E0423", "<trigg"),
            ("E0424", "forarm"),
            ("W0415", "nother"),
            ("E0424", "pelvis"),
        ],
        "{diags:?}"
    );
}

/// `import-qc` carries `$proceduralbones` into `[skeleton] procedural_bones`, and the TOML builds
/// the same MDL byte for byte.
#[test]
fn procedural_bones_survive_import() {
    let qc = Path::new(FIXTURES).join("helpers.qc");
    let text = common::import_builds_same(&qc, "procedural-import");
    assert!(text.contains("procedural_bones = ["), "{text}");
}

/// The SDK male: its `$proceduralbones` file is missing from the repository, which is W0414 now,
/// not the "not supported" warning.
#[test]
fn sdk_male_procedural_bones_are_not_unsupported() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let qc =
        corpus.join("sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk/male_sdk/male_06_sdk.qc");
    let (out, diags) = source_common::compile_qc(&qc);
    assert!(out.is_some());
    assert!(!diags
        .iter()
        .any(|d| d.code.as_str() == "W0220" && d.message.contains("proceduralbones")));
    assert!(diags.iter().any(|d| d.code.as_str() == "W0414"));
}

/// `$screenalign` sets `BONE_SCREEN_ALIGN_SPHERE` (0x08) or `BONE_SCREEN_ALIGN_CYLINDER` (0x10)
/// on the bone (2006 SDK `TagScreenAlignedBones`), read back by mdlc and by valvemdl; the TOML
/// `import-qc` writes builds the same model.
#[test]
fn screen_aligned_bones_are_flagged() {
    let qc = Path::new(FIXTURES).join("screenalign.qc");
    let dir = common::build_fresh(&qc, "procedural-screenalign");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let own = common::inspect_json(&mdl)["mdl"]["bones"].clone();
    let flag = |name: &str| {
        own.as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .unwrap()["flags"]["value"]
            .as_i64()
            .unwrap()
            & 0x18
    };
    assert_eq!(flag("Rig.forearm"), 0x10);
    assert_eq!(flag("Rig.aimer"), 0x08);
    assert_eq!(flag("Rig.elbow_helper"), 0x08);
    assert_eq!(flag("Rig.pelvis"), 0);
    if let Some(o) = source_common::oracle_json("procedural.py", &mdl) {
        let by: Vec<(String, i64)> = o["bones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["name"].as_str().unwrap().into(),
                    b["flags"].as_i64().unwrap() & 0x18,
                )
            })
            .collect();
        assert!(by.contains(&("Rig.forearm".into(), 0x10)), "{by:?}");
        assert!(by.contains(&("Rig.aimer".into(), 0x08)), "{by:?}");
    }
    let text = common::import_builds_same(&qc, "screenalign-import");
    assert!(text.contains("mode = \"cylinder\""), "{text}");
}
