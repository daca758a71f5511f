//! Compiles every Source QC of the corpus with the Source back end, checks the output with
//! mdlc's own invariants and the Python oracles, and compares it with Valve's builds where
//! they exist (parsing both with mdlc's reader).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::{Path, PathBuf};

use common::corpus_dir;
use mdlc::formats::source::{self, read};
use mdlc::load::fs::RealFs;
use source_common::*;

/// (corpus QC, folder with Valve's files, model file stem)
const PAIRS: &[(&str, &str)] = &[
    ("reepblue-chamberdoor-frame/Punt/Portalish_2012/modelsrc/props_gameplay/oldies/chamberdoor_frame.qc", "reepblue-chamberdoor-frame/Punt/Portalish_2012/modelsrc/props_gameplay/oldies/chamberdoor_frame.mdl"),
    ("ha-sky-camera/modelsrc/editor/sky_camera/camera.qc", "ha-sky-camera/hammer/models/editor/sky_camera.mdl"),
    ("ha-env-dustpuff/modelsrc/editor/env_dustpuff/env_dustpuff.qc", "ha-env-dustpuff/hammer/models/editor/env_dustpuff.mdl"),
    ("ha-suit-charger-hl2/modelsrc/editor/item_suitcharger_hl2/suit_charger001.qc", "ha-suit-charger-hl2/hammer/models/editor/item_suit_charger_hl2.mdl"),
    ("ha-health-charger-mesa/modelsrc/editor/item_healthcharger_mesa/health_charger.qc", "ha-health-charger-mesa/hammer/models/editor/item_health_charger_mesa.mdl"),
    ("ha-hev-charger-mesa/modelsrc/editor/item_suitcharger_mesa/hev_charger.qc", "ha-hev-charger-mesa/hammer/models/editor/item_suit_charger_mesa.mdl"),
    ("mapbase-door01-left/modelsrc/door01_left/door01_left.qc", "mapbase-door01-left/compiled/VPKs/shared_content_v7_0/models/props_c17/door01_left.mdl"),
    ("mapbase-bunker-gun01/modelsrc/weapons/bunker_gun01/bunker_gun01.qc", "mapbase-bunker-gun01/compiled/VPKs/hl2_mapbase_content/models/props_combine/bunker_gun01.mdl"),
];

/// Which comparison with Valve's files fails, per model; the test pins the total (a ratchet).
fn compare(ours: &source::Files, valve: &source::Files) -> Vec<String> {
    let mut d = Vec::new();
    let (a, b) = (&ours.mdl, &valve.mdl);
    let names = |m: &read::Mdl| m.bones.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
    if names(a) != names(b) {
        d.push(format!("bone names {:?} vs {:?}", names(a), names(b)));
    } else {
        for (x, y) in a.bones.iter().zip(&b.bones) {
            if x.rec.parent != y.rec.parent {
                d.push(format!("bone {} parent", x.name));
            }
            if !close(&x.rec.pos, &y.rec.pos, 1e-3) || !quat_close(x.rec.quat, y.rec.quat, 1e-4) {
                d.push(format!(
                    "bone {} pose {:?} {:?} vs {:?} {:?}",
                    x.name, x.rec.pos, x.rec.quat, y.rec.pos, y.rec.quat
                ));
            }
            if x.rec.flags != y.rec.flags {
                d.push(format!(
                    "bone {} flags 0x{:x} vs 0x{:x}",
                    x.name, x.rec.flags, y.rec.flags
                ));
            }
        }
    }
    if a.textures != b.textures {
        d.push(format!("textures {:?} vs {:?}", a.textures, b.textures));
    }
    if a.cd_materials != b.cd_materials {
        d.push(format!(
            "cdmaterials {:?} vs {:?}",
            a.cd_materials, b.cd_materials
        ));
    }
    if a.skins != b.skins {
        d.push(format!("skins {:?} vs {:?}", a.skins, b.skins));
    }
    let shape = |m: &read::Mdl| {
        m.body_parts
            .iter()
            .map(|bp| {
                (
                    bp.name.clone(),
                    bp.models
                        .iter()
                        .map(|md| {
                            (
                                md.rec.name.as_str(),
                                md.meshes
                                    .iter()
                                    .map(|me| me.rec.material)
                                    .collect::<Vec<_>>(),
                            )
                        })
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    if shape(a) != shape(b) {
        d.push(format!("body parts {:?} vs {:?}", shape(a), shape(b)));
    }
    let att = |m: &read::Mdl| {
        m.attachments
            .iter()
            .map(|x| (x.name.clone(), x.rec.localbone))
            .collect::<Vec<_>>()
    };
    if att(a) != att(b) {
        d.push(format!("attachments {:?} vs {:?}", att(a), att(b)));
    } else {
        for (x, y) in a.attachments.iter().zip(&b.attachments) {
            let fx: Vec<f32> = x.rec.local.iter().flatten().copied().collect();
            let fy: Vec<f32> = y.rec.local.iter().flatten().copied().collect();
            if !close(&fx, &fy, 1e-3) {
                d.push(format!("attachment {} matrix {:?} vs {:?}", x.name, fx, fy));
            }
        }
    }
    let hb = |m: &read::Mdl| {
        m.hitbox_sets
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.boxes
                        .iter()
                        .map(|(_, b)| (b.bone, b.group))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    if hb(a) != hb(b) {
        d.push(format!("hitboxes {:?} vs {:?}", hb(a), hb(b)));
    } else {
        for (x, y) in a.hitbox_sets.iter().zip(&b.hitbox_sets) {
            for ((_, p), (_, q)) in x.boxes.iter().zip(&y.boxes) {
                if !close(&p.bbmin, &q.bbmin, 0.02) || !close(&p.bbmax, &q.bbmax, 0.02) {
                    d.push(format!(
                        "hitbox on bone {} {:?}-{:?} vs {:?}-{:?}",
                        p.bone, p.bbmin, p.bbmax, q.bbmin, q.bbmax
                    ));
                }
            }
        }
    }
    // LOD-0 triangles as sets of positions
    match (lod0_triangle_list(ours), lod0_triangle_list(valve)) {
        (Ok(x), Ok(y)) => {
            // Within 1e-3 (the tolerance); duplicates count as often as they occur.
            let missing = unmatched_triangles(&y, &x, 1e-3);
            let extra = unmatched_triangles(&x, &y, 1e-3);
            if missing + extra > 0 || x.len() != y.len() {
                d.push(format!("LOD-0 triangles: {} ours, {} Valve's; {missing} of Valve's missing, {extra} extra", x.len(), y.len()));
            }
        }
        (e1, e2) => d.push(format!(
            "triangles unreadable: {:?} {:?}",
            e1.err(),
            e2.err()
        )),
    }
    let vc = |f: &source::Files| f.vvd.as_ref().map(|v| v.vertices.len());
    if vc(ours) != vc(valve) {
        d.push(format!("VVD vertices {:?} vs {:?}", vc(ours), vc(valve)));
    }
    d
}

#[test]
fn corpus_models_compile_check_and_match_valve() {
    let Some(dir) = corpus_dir() else { return };
    let out_root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-source-corpus");
    let _ = std::fs::remove_dir_all(&out_root);
    let mut report = Vec::new();
    let mut total_differences = 0;
    for (qc, valve) in PAIRS {
        let (files, diags) = compile_qc(&dir.join(qc));
        let errors: Vec<_> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.clone())
            .collect();
        assert!(errors.is_empty(), "{qc}: {errors:?}");
        let files = files.unwrap_or_else(|| panic!("{qc}: no output"));
        let mdl_path = write_files(
            &out_root.join(Path::new(qc).parent().unwrap().file_name().unwrap()),
            &files,
        );
        let ours = mdlc::inspect::source::read_files(&mdl_path, &RealFs).unwrap();
        let problems = source::check(&ours);
        assert!(problems.is_empty(), "{qc}: {problems:?}");
        oracle_check(&mdl_path);
        let theirs = mdlc::inspect::source::read_files(&dir.join(valve), &RealFs).unwrap();
        assert!(
            source::check(&theirs).is_empty(),
            "Valve's {valve}: {:?}",
            source::check(&theirs)
        );
        let diffs = compare(&ours, &theirs);
        total_differences += diffs.len();
        report.push(format!(
            "{qc}: {} differences\n    {}",
            diffs.len(),
            diffs.join("\n    ")
        ));
    }
    eprintln!("{}", report.join("\n"));
    let _ = std::fs::remove_dir_all(&out_root);
    // ratchet: every comparison holds now (`==` because clippy rejects `<=` against 0); if one
    // ever has to be tolerated again, raise RATCHET and go back to `<=`
    assert!(
        total_differences == RATCHET,
        "{total_differences} differences (ratchet {RATCHET}):\n{}",
        report.join("\n")
    );
}

const RATCHET: usize = 0;

#[test]
fn other_source_corpus_qcs_compile_and_pass_the_checks() {
    let Some(dir) = corpus_dir() else { return };
    let out_root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-source-other");
    let _ = std::fs::remove_dir_all(&out_root);
    for qc in ["sdk2004-lantern", "th-v357", "sdk-male06"] {
        for q in common::files_with_ext(&dir.join(qc), &["qc"]) {
            let (files, diags) = compile_qc(&q);
            if diags.iter().any(|d| d.is_error()) {
                continue;
            }
            let Some(files) = files else { continue };
            let p: PathBuf = write_files(&out_root.join(qc), &files);
            let f = mdlc::inspect::source::read_files(&p, &RealFs).unwrap();
            assert_eq!(source::check(&f), Vec::<String>::new(), "{}", q.display());
            oracle_check(&p);
        }
    }
    let _ = std::fs::remove_dir_all(&out_root);
}

/// The triangle comparison: rotations of one winding match, the opposite winding does not,
/// positions match within the tolerance (also across a rounding boundary), duplicates count.
#[test]
fn triangle_sets_compare_within_a_tolerance() {
    // 16.4835 as f32 is just below the 0.0005 boundary (×1000 rounds to 16483); one ulp up is
    // above it (rounds to 16484): the two builds' positions of the bunker gun differ like this.
    let z = 16.4835f32;
    let z_up = f32::from_bits(z.to_bits() + 1);
    assert_ne!(
        (f64::from(z) * 1000.0).round(),
        (f64::from(z_up) * 1000.0).round()
    );
    let t = [[0.0, 0.0, z], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let rotated = [t[1], t[2], t[0]];
    let reversed = [t[0], t[2], t[1]];
    let nudged = [[0.0, 0.0, z_up], t[1], t[2]];
    let far = [[0.0, 0.0, 16.4855], t[1], t[2]];
    assert_eq!(unmatched_triangles(&[t], &[rotated], 1e-3), 0);
    assert_eq!(unmatched_triangles(&[t], &[nudged], 1e-3), 0);
    assert_eq!(unmatched_triangles(&[t], &[reversed], 1e-3), 1);
    assert_eq!(unmatched_triangles(&[t], &[far], 1e-3), 1);
    assert_eq!(unmatched_triangles(&[t, t], &[rotated], 1e-3), 1);
    assert_eq!(unmatched_triangles(&[t], &[t, t], 1e-3), 0);
}
