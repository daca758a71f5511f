//! The `.phy` reader behind `mdlc inspect x.phy` (issue 19, first part), on every collision
//! model Valve's compiler wrote in `../shared/corpus`, against an independent reader written in
//! Python from the public layout (`tests/oracle/phy.py`) and against facts checked by hand: the
//! solid counts and names of the text section, the AR2 cartridge's two convex pieces, the
//! checksum equal to the `.mdl` beside each file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::{Path, PathBuf};

use common::{corpus_dir, mdlc};
use serde_json::Value;

fn phys(corpus: &Path) -> Vec<PathBuf> {
    let mut v = common::files_with_ext(corpus, &["phy"]);
    v.sort();
    v
}

fn inspect(phy: &Path) -> (Value, bool) {
    let out = mdlc(
        &["inspect", "--json", phy.to_str().unwrap()],
        Path::new("."),
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        out.status.success(),
    )
}

#[test]
fn every_valve_phy_reads_with_its_invariants() {
    let Some(corpus) = corpus_dir() else { return };
    let files = phys(&corpus);
    // the bunker gun, three chargers, the chamber door frame, the AR2 cartridge, the citizen
    assert_eq!(files.len(), 7, "{files:?}");
    for f in &files {
        let (v, ok) = inspect(f);
        assert!(ok, "{}: {}", f.display(), v["problems"]);
        assert_eq!(v["problems"], Value::Array(vec![]), "{}", f.display());
        // the checksum is the model's (Valve's .mdl is beside every .phy of the corpus)
        let mdl = std::fs::read(f.with_extension("mdl")).unwrap();
        let check = i32::from_le_bytes([mdl[8], mdl[9], mdl[10], mdl[11]]);
        assert_eq!(v["phy"]["checksum"], check, "{}", f.display());
    }
}

#[test]
fn solids_and_pieces_are_what_valve_wrote() {
    let Some(corpus) = corpus_dir() else { return };
    let find = |name: &str| {
        phys(&corpus)
            .into_iter()
            .find(|p| p.file_name().unwrap().to_str().unwrap() == name)
            .unwrap()
    };
    let pieces = |v: &Value, s: usize| v["phy"]["solids"][s]["pieces"].as_array().unwrap().len();
    // the citizen's ragdoll: 15 solids, the pelvis first
    let (v, _) = inspect(&find("male_gr01_01.phy"));
    assert_eq!(v["phy"]["solids"].as_array().unwrap().len(), 15);
    let first = &v["phy"]["blocks"][0];
    assert_eq!(first["block"], "solid");
    assert!(first["values"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!(["name", "ValveBiped.Bip01_Pelvis"])));
    let constraints = v["phy"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["block"] == "ragdollconstraint")
        .count();
    assert_eq!(constraints, 14, "one constraint per solid but the root");
    // the AR2 cartridge ($concave): one solid of two convex pieces
    let (v, _) = inspect(&find("combine_rifle_cartridge01.phy"));
    assert_eq!(v["phy"]["solids"].as_array().unwrap().len(), 1);
    assert_eq!(pieces(&v, 0), 2);
    // the bunker gun: one convex piece of 8 points (a box)
    let (v, _) = inspect(&find("bunker_gun01.phy"));
    assert_eq!(pieces(&v, 0), 1);
    assert_eq!(v["phy"]["solids"][0]["pieces"][0]["points"], 8);
    assert_eq!(v["phy"]["solids"][0]["pieces"][0]["triangles"], 12);
}

/// Our reader and the independent one agree on every file: solids, pieces, point and triangle
/// counts, bounds, names.
#[test]
fn an_independent_reader_agrees() {
    let Some(corpus) = corpus_dir() else { return };
    for f in phys(&corpus) {
        let Some(o) = source_common::oracle_json("phy.py", &f) else {
            return;
        };
        let (v, _) = inspect(&f);
        let ours = v["phy"]["solids"].as_array().unwrap();
        let theirs = o["solids"].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{}", f.display());
        for (a, b) in ours.iter().zip(theirs) {
            let counts = |s: &Value| -> Vec<(u64, u64)> {
                s["pieces"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        (
                            p["points"].as_u64().unwrap(),
                            p["triangles"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            };
            let (pa, pb) = (counts(a), counts(b));
            assert_eq!(pa, pb, "{}", f.display());
            for k in 0..2 {
                for i in 0..3 {
                    let x = a["bounds_inches"][k][i].as_f64().unwrap();
                    let y = b["bounds"][k][i].as_f64().unwrap();
                    assert!((x - y).abs() < 1e-3, "{}: {x} vs {y}", f.display());
                }
            }
        }
        let names: Vec<Value> = v["phy"]["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["block"] == "solid")
            .map(|b| {
                b["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|kv| kv[0] == "name")
                    .map(|kv| kv[1].clone())
                    .unwrap()
            })
            .collect();
        assert_eq!(Value::Array(names), o["names"], "{}", f.display());
        assert_eq!(v["phy"]["checksum"], o["checksum"]);
    }
}

/// A broken file is an error, never a panic: truncated and bit-flipped copies of a real file.
#[test]
fn broken_phy_files_never_panic() {
    let Some(corpus) = corpus_dir() else { return };
    let f = phys(&corpus)
        .into_iter()
        .find(|p| p.ends_with("male_gr01_01.phy"))
        .unwrap();
    let bytes = std::fs::read(&f).unwrap();
    let mut rng = common::Rng(0x1234_5678_9abc_def1);
    for i in 0..300 {
        let mut b = bytes.clone();
        if i % 3 == 0 {
            b.truncate(rng.below(b.len()));
        } else {
            for _ in 0..4 {
                let k = rng.below(b.len());
                b[k] ^= 1 << rng.below(8);
            }
        }
        // reading never panics; a read file's problems are listed
        if let Ok(p) = mdlc::formats::source::phy::read_phy(&b) {
            let _ = mdlc::formats::source::phy::problems(&p, None);
            let _ = mdlc::formats::source::phy::to_text(&p, &[]);
        }
    }
}
