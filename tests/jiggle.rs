//! `$jigglebone` (issue 16): the QC block read as people write it, turned into
//! `mstudiojigglebone_t` (source-sdk-2013 `public/studio.h`) on a `STUDIO_PROC_JIGGLE` bone with
//! `BONE_ALWAYS_PROCEDURAL`, as the game's client needs it (`c_baseanimating.cpp`).
//!
//! - `testdata/source/jiggle/valve.qc` holds three blocks of two models whose Valve builds are
//!   public (github.com/TURB0000/Gmod-models, Garry's Mod's studiomdl, MDL v48); the records
//!   below are the bytes Valve's compiler wrote for them, read out of those `.mdl` files.
//! - `jiggle.qc` uses every group and most properties; its values are checked through mdlc's
//!   reader and an independent one (`tests/oracle/procedural.py`, valvemdl).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::Path;

use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/jiggle");

/// Valve's records for `valve.qc`'s bones: Cortana's `breast_jiggle` (flexible, angle
/// constraint, fixed length), Mahiro's `breast_L` (flexible with `allow_length_flex`, and a
/// base spring) and `hair1` (flexible, `allow_length_flex`, no base spring: the base fields
/// still hold Valve's defaults).
const VALVE: [(&str, &str); 3] = [
    (
        "breast_jiggle",
        "310000000000c8420000a0410000c8420000e0400000af43000000410000c84200000000c2b8b23d\
         0000000000000000000000000000000000000000000000000000000000000000000000000000c842\
         000000000000c8c20000c842000000000000c8c20000c842000000000000c8c20000c84200000000\
         0000000000000000000000000000000000000000",
    ),
    (
        "breast_L",
        "510000000000a040000020410000af43000060410000af43000060410000c842000000005077563d\
         0000000000000000000000000000000000000000000000000000000000000000000000000000af43\
         00006041cdcc4cbecdcc4c3e00000000000000bf0000003f00000000000000bf0000003f00000000\
         0000000000000000000000000000000000000000",
    ),
    (
        "hair1",
        "110000000000204200000000000048420000e040000048420000e0400000c84200000000f3665f3f\
         0000000000000000000000000000000000000000000000000000000000000000000000000000c842\
         000000000000c8c20000c842000000000000c8c20000c842000000000000c8c20000c84200000000\
         0000000000000000000000000000000000000000",
    ),
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// `(name, flags, proctype, the 140 bytes procindex points at)` of every jiggle bone, read
/// with the header's and `mstudiobone_t`'s offsets (`source-geometry.md` §4: `numbones` at 156,
/// 216-byte bones, `flags` at 160, `proctype`/`procindex` at 164/168).
fn jiggle_records(mdl: &[u8]) -> Vec<(String, i32, i32, Vec<u8>)> {
    let (n, at) = (i32_at(mdl, 156) as usize, i32_at(mdl, 160) as usize);
    (0..n)
        .filter_map(|i| {
            let b = at + i * 216;
            let name_at = b + i32_at(mdl, b) as usize;
            let end = mdl[name_at..].iter().position(|&c| c == 0).unwrap();
            let name = String::from_utf8(mdl[name_at..name_at + end].to_vec()).unwrap();
            let proctype = i32_at(mdl, b + 164);
            let rec = b + i32_at(mdl, b + 168) as usize;
            (proctype != 0).then(|| {
                (
                    name,
                    i32_at(mdl, b + 160),
                    proctype,
                    mdl[rec..rec + 140].to_vec(),
                )
            })
        })
        .collect()
}

#[test]
fn valve_blocks_give_valve_records_byte_for_byte() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("valve.qc"), "jiggle-valve");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let bytes = std::fs::read(&mdl).unwrap();
    let got = jiggle_records(&bytes);
    assert_eq!(got.len(), 3);
    for ((name, flags, proctype, rec), (want_name, want)) in got.iter().zip(VALVE) {
        assert_eq!(name, want_name);
        // BONE_ALWAYS_PROCEDURAL | BONE_USED_BY_VERTEX_LOD0, as in Valve's builds
        assert_eq!(*flags, 0x404, "{name}");
        assert_eq!(*proctype, 5, "{name}");
        assert_eq!(hex(rec), want, "{name}");
    }
    source_common::oracle_check(&mdl);
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// The jiggle record of bone `i` as mdlc's inspect and as the oracle read it; both must agree
/// on every field.
fn both(own: &Value, oracle: Option<&Value>, i: usize) -> Value {
    let mine = own[i]["procedural"].clone();
    assert_eq!(mine["kind"], "jiggle", "{mine}");
    if let Some(o) = oracle {
        let theirs = &o["bones"][i]["procedural"];
        assert_eq!(o["bones"][i]["proctype"], 5);
        for (k, v) in theirs.as_object().unwrap() {
            assert!(
                (f(v) - f(&mine[k])).abs() <= 1e-6,
                "bone {i} {k}: valvemdl {v}, mdlc {}",
                mine[k]
            );
        }
    }
    mine
}

#[test]
fn every_group_and_property_reaches_the_record() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("jiggle.qc"), "jiggle-all");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let own = common::inspect_json(&mdl)["mdl"]["bones"].clone();
    let oracle = source_common::oracle_json("procedural.py", &mdl);
    if let Some(o) = &oracle {
        assert_eq!(o["problems"], Value::Array(vec![]), "{o}");
    }
    let deg = |d: f64| d.to_radians();
    let near = |a: &Value, b: f64| (f(a) - b).abs() < 1e-6;

    // Rig.tail: flexible, both ranges, frictions, allow_length_flex with its along spring
    let tail = both(&own, oracle.as_ref(), 1);
    assert_eq!(
        tail["flags"],
        0x01 | 0x04 | 0x08,
        "no length constraint: {tail}"
    );
    for (k, v) in [
        ("length", 20.0),
        ("tipMass", 10.0),
        ("yawStiffness", 100.0),
        ("yawDamping", 3.0),
        ("pitchStiffness", 200.0),
        ("pitchDamping", 4.0),
        ("alongStiffness", 50.0),
        ("alongDamping", 1.0),
        ("minYaw", deg(-30.0)),
        ("maxYaw", deg(45.0)),
        ("yawFriction", 2.0),
        ("minPitch", deg(-10.0)),
        ("maxPitch", deg(10.0)),
        ("pitchFriction", 3.0),
        ("angleLimit", 0.0),
    ] {
        assert!(near(&tail[k], v), "tail {k}: {}", tail[k]);
    }

    // Rig.antenna: rigid with an angle constraint, and a base spring; the ranges of a base
    // spring are distances and stay as written
    let antenna = both(&own, oracle.as_ref(), 2);
    assert_eq!(antenna["flags"], 0x02 | 0x10 | 0x20 | 0x40, "{antenna}");
    for (k, v) in [
        ("length", 20.0),
        ("tipMass", 100.0),
        ("angleLimit", deg(60.0)),
        ("baseMass", 5.0),
        ("baseStiffness", 800.0),
        ("baseDamping", 10.0),
        ("baseMinLeft", -0.5),
        ("baseMaxLeft", 0.5),
        ("baseLeftFriction", 10.0),
        ("baseMinUp", -0.75),
        ("baseMaxUp", 2.0),
        ("baseUpFriction", 11.0),
        ("baseMinForward", -0.25),
        ("baseMaxForward", 0.25),
        ("baseForwardFriction", 12.0),
    ] {
        assert!(near(&antenna[k], v), "antenna {k}: {}", antenna[k]);
    }

    // Rig.belly: boing only; the impact angle becomes the cosine the engine compares with a
    // dot product of unit velocities; the groups it does not have keep the defaults
    let belly = both(&own, oracle.as_ref(), 3);
    assert_eq!(belly["flags"], 0x80, "{belly}");
    for (k, v) in [
        ("boingImpactSpeed", 100.0),
        ("boingImpactAngle", 0.5),
        ("boingDampingRate", 0.5),
        ("boingFrequency", 20.0),
        ("boingAmplitude", 0.2),
        ("baseStiffness", 100.0),
        ("baseMinLeft", -100.0),
        ("baseMaxForward", 100.0),
        ("alongStiffness", 100.0),
    ] {
        assert!(near(&belly[k], v), "belly {k}: {}", belly[k]);
    }

    // `ear` finds `Rig.ear` as Valve's `.vrd` lookup finds bones (the part after the last `.`);
    // the antlion worker's wing of the Valve Developer Community page
    let ear = both(&own, oracle.as_ref(), 4);
    assert_eq!(ear["flags"], 0x01 | 0x10 | 0x20, "{ear}");
    assert!(near(&ear["angleLimit"], deg(37.0)));
    assert!(near(&ear["pitchDamping"], 8.0));

    // the pelvis is not a jiggle bone; every jiggle bone is procedural
    assert!(own[0]["procedural"].is_null());
    for i in 1..5 {
        assert_eq!(
            own[i]["flags"]["value"].as_i64().unwrap() & 0x4,
            0x4,
            "bone {i}"
        );
        assert_eq!(own[i]["proctype"], 5);
    }
}

use source_common::codes_at;

/// What is written with a warning: an unknown bone, a second block for a bone, groups the
/// engine does not use together, a tip without `length`.
#[test]
fn jiggle_warnings_name_what_was_written() {
    let path = Path::new(FIXTURES).join("warnings.qc");
    let (out, diags) = source_common::compile_qc(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        codes_at(&diags, &text),
        [
            ("W0416", "\"Rig.nothere\""),
            ("W0418", "is_rigid"),
            ("W0417", "\"Rig.tail\""),
            ("W0419", "is_rigid"),
            ("W0418", "is_boing"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
        "{diags:?}"
    );
    let files = out.expect("warnings only: the model is written");
    let dir = source_common::tmp("jiggle", "warnings");
    let mdl = source_common::write_files(&dir, &files);
    let bytes = std::fs::read(&mdl).unwrap();
    let recs = jiggle_records(&bytes);
    let names: Vec<&str> = recs.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["Rig.tail", "Rig.belly", "Rig.ear"]);
    let value = |rec: &[u8], field: usize| {
        f32::from_le_bytes(rec[4 + field * 4..8 + field * 4].try_into().unwrap())
    };
    // the later block of Rig.tail is the one written: flexible, length 7
    assert_eq!(i32_at(&recs[0].3, 0), 0x21);
    assert_eq!(value(&recs[0].3, 0), 7.0);
    // both flags are written, as the block asked
    assert_eq!(i32_at(&recs[1].3, 0), 0xc0);
    // no length: the default the warning names
    assert_eq!(value(&recs[2].3, 0), 10.0);
    assert_eq!(value(&recs[2].3, 1), 3.0);
}

/// A group without its block, a range with one number, a word for a number: errors at the
/// word, and nothing is written.
#[test]
fn jiggle_errors_have_spans_and_write_nothing() {
    let path = Path::new(FIXTURES).join("errors.qc");
    let (out, diags) = source_common::compile_qc(&path);
    assert!(out.is_none());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        codes_at(&diags, &text),
        [
            ("E0226", "is_flexible"),
            ("E0226", "length"),
            ("E0223", "-10"),
            ("E0222", "ten"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
        "{diags:?}"
    );
}

/// An unknown word is skipped with the numbers after it, and the rest of the block is read.
#[test]
fn unknown_words_are_skipped_with_their_numbers() {
    let dir = source_common::tmp("jiggle", "unknown");
    std::fs::copy(Path::new(FIXTURES).join("ref.smd"), dir.join("ref.smd")).unwrap();
    let qc = dir.join("unknown.qc");
    std::fs::write(
        &qc,
        "$cdmaterials \"x\"\n$body body \"ref.smd\"\n$sequence idle \"ref.smd\"\n\
         $jigglebone \"Rig.tail\" {\n\tis_flexible {\n\t\tyaw_stifness 100 2\n\t\tlength 12\n\t}\n\
         \tis_wobbly { amount 3 }\n}\n",
    )
    .unwrap();
    let (out, diags) = source_common::compile_qc(&qc);
    let text = std::fs::read_to_string(&qc).unwrap();
    assert_eq!(
        codes_at(&diags, &text),
        [("W0237", "yaw_stifness"), ("W0237", "is_wobbly")]
            .map(|(a, b)| (a.to_string(), b.to_string())),
    );
    assert!(
        diags[0..2]
            .iter()
            .any(|d| d.notes.iter().any(|n| n.contains("`yaw_stiffness`"))),
        "{diags:?}"
    );
    let mdl = source_common::write_files(&dir, &out.unwrap());
    let recs = jiggle_records(&std::fs::read(mdl).unwrap());
    assert_eq!(recs.len(), 1);
    assert_eq!(
        f32::from_le_bytes(recs[0].3[4..8].try_into().unwrap()),
        12.0
    );
}

/// `import-qc` writes `[[jiggle_bone]]` tables, and the TOML builds the same MDL byte for byte.
#[test]
fn jiggle_bones_survive_import() {
    for name in ["jiggle", "valve"] {
        let qc = Path::new(FIXTURES).join(format!("{name}.qc"));
        let text = common::import_builds_same(&qc, &format!("jiggle-import-{name}"));
        assert!(text.contains("[[jiggle_bone]]"), "{text}");
    }
}

/// A TOML group names only its own properties; `allow_length_flex` is a boolean.
#[test]
fn toml_jiggle_keys_are_checked() {
    let dir = source_common::tmp("jiggle", "toml");
    std::fs::copy(Path::new(FIXTURES).join("ref.smd"), dir.join("ref.smd")).unwrap();
    let toml = dir.join("model.toml");
    std::fs::write(
        &toml,
        "[model]\nname = \"t\"\ntarget = \"source\"\nmaterials = [\"x\"]\n\n\
         [[body]]\nname = \"body\"\noptions = [\"ref.smd\"]\n\n\
         [[jiggle_bone]]\nbone = \"Rig.tail\"\n\
         is_flexible = { length = 5, stiffness = 3, yaw_constraint = [1], allow_length_flex = 1 }\n",
    )
    .unwrap();
    let out = common::mdlc(&["check", "model.toml", "--message-format", "json"], &dir);
    assert!(!out.status.success());
    let codes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["code"].as_str().map(str::to_string))
        .collect();
    assert_eq!(codes, ["E0301", "E0306", "E0302"], "{out:?}");
}
