//! Forms of real Source QCs that Valve's compiler accepts and mdlc once refused (issue 16),
//! built from `testdata/source/real_forms` and read back by two independent readers
//! (`tests/oracle/sequences.py`: valvemdl and srctools). The expected values follow the rules
//! of Valve's 2006 SDK compiler (alliedmodders/hl2sdk, branch episode1, `utils/studiomdl`):
//!
//! - `Cmd_PoseParameter` reads the range only when the line has it, and sets it anew;
//!   `LookupPoseParameter` makes a pose parameter a `blend` names, where it is first named,
//!   with the range 0 to 0; each `blend` widens the range to hold its start and end.
//! - `Cmd_Attachment` reads up to three `rotate` angles, as many as the line has.
//! - `write.cpp` stores an event at cycle `frame / (numframes − 1)` of the sequence's first
//!   animation, the frame counted from the animation's first frame (the start of a `frame A
//!   B` range), and fails on a frame past the end.
//!
//! - `Cmd_DeclareSequence` adds a sequence with its name and `STUDIO_OVERRIDE`, all else zero.
//!
//! Words after a macro's arguments continue the expansion's last command: real QCs rely on it
//! (`$GenericShoot … match "idle"`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::{Path, PathBuf};

use common::{fresh_dir, mdlc};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/source/real_forms")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("real-forms-{name}")))
}

/// Builds `qc` into `dir/out`; returns stderr.
fn build(qc: &Path, dir: &Path) -> String {
    let out = common::build_into_out(qc, dir);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{}: {err}", qc.display());
    err
}

/// Writes fixture `name` to `to` with `from` replaced by `with`, its `../anim_chain/` files
/// named where they are; returns `to`.
fn edited_fixture(name: &str, from: &str, with: &str, to: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture(name))
        .unwrap()
        .replace(from, with)
        .replace(
            "../anim_chain/",
            &format!("{}/", fixture("../anim_chain").display()),
        );
    std::fs::write(to, text).unwrap();
    to.to_path_buf()
}

fn codes(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("warning[")
                .or_else(|| l.strip_prefix("error["))
        })
        .filter_map(|l| l.split_once(']').map(|(c, _)| c.to_string()))
        .collect()
}

fn inspect_json(mdl: &Path) -> Value {
    common::inspect_json(mdl)
}

/// The `cycle` of each event of a JSON list.
fn cycles(events: &Value) -> Vec<f64> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cycle"].as_f64().unwrap())
        .collect()
}

/// `(name, start, end)` of each pose parameter of a JSON list.
fn pose_ranges(list: &Value) -> Vec<(String, f64, f64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["start"].as_f64().unwrap(),
                p["end"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn real_source_forms_build_as_valves_compiler_reads_them() {
    let dir = scratch("main");
    let err = build(&fixture("real_forms.qc"), &dir);
    assert_eq!(
        codes(&err),
        ["W0206", "W0235", "W0234", "W0233", "W0120"],
        "{err}"
    );
    assert!(
        err.contains("real_forms.qc:11:"),
        "W0206 points at `fps`: {err}"
    );
    let mdl = dir.join("out/test/real_forms.mdl");

    // our reader
    let ours = inspect_json(&mdl);
    let pose = pose_ranges(&ours["mdl"]["pose_parameters"]);
    // aim_pitch: 0..0 widened by -45..30; head_yaw: made by `look` with 0..0, widened by
    // -30..60; lean: made by `lean1` (widened to -90..90), set to -10..10 by `$poseparameter`,
    // widened by `lean2`'s -20..5 only
    let want = [
        ("aim_pitch".to_string(), -45.0, 30.0),
        ("head_yaw".to_string(), -30.0, 60.0),
        ("lean".to_string(), -20.0, 10.0),
    ];
    assert_eq!(pose, want);

    // the independent readers
    let Some(o) = source_common::oracle_sequences(&mdl) else {
        return;
    };
    assert_eq!(o["errors"]["valvemdl"], Value::Array(vec![]), "{o}");
    assert_eq!(o["errors"]["srctools"], Value::Array(vec![]), "{o}");
    let v = &o["valvemdl"];
    assert_eq!(pose_ranges(&v["poseparameters"]), want);
    let seqs = v["sequences"].as_array().unwrap();
    let seq = |name: &str| {
        seqs.iter()
            .find(|s| s["label"] == name)
            .unwrap_or_else(|| panic!("no sequence {name}"))
    };
    // `fps 25 loop` after the macro's arguments: the sequence loops, its animation runs at 25
    assert_eq!(seq("shoot")["flags"].as_i64().unwrap() & 1, 1);
    assert_eq!(seq("shoot")["activityname"], "ACT_RANGE_ATTACK1");
    let anims = v["animations"].as_array().unwrap();
    let shoot_anim = anims.iter().find(|a| a["name"] == "@shoot").unwrap();
    assert_eq!(shoot_anim["fps"].as_f64().unwrap(), 25.0);
    // the blends point at the pose parameters by index
    assert_eq!(seq("aim")["paramindex"][0], 0);
    assert_eq!(seq("look")["paramindex"][0], 1);
    assert_eq!(seq("lean1")["paramindex"][0], 2);
    assert_eq!(seq("lean2")["paramindex"][0], 2);
    // `frame 2 4` has three frames: events at frames 0, 1, 2 of the range
    assert_eq!(cycles(&seq("crop")["events"]), [0.0, 0.5, 1.0]);
    // `$declaresequence`: STUDIO_OVERRIDE (0x800), no blends, after the sequences before it
    let labels: Vec<&str> = seqs.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["shoot", "aim", "look", "lean1", "lean2", "crop", "run_all", "walk_all"]
    );
    for name in ["run_all", "walk_all"] {
        let d = seq(name);
        assert_eq!(d["flags"], 0x800, "{d}");
        assert_eq!(d["numblends"], 0, "{d}");
        assert_eq!(d["animindices"], Value::Array(vec![]), "{d}");
        assert_eq!(d["events"], Value::Array(vec![]), "{d}");
    }
    // every invariant of mdlc's own reader holds too
    assert_eq!(ours["problems"], Value::Array(vec![]), "{ours}");
    let srct = o["srctools"]["sequences"].as_array().unwrap();
    let declared: Vec<i64> = srct
        .iter()
        .filter(|s| s["label"] == "run_all" || s["label"] == "walk_all")
        .map(|s| s["flags"].as_i64().unwrap())
        .collect();
    assert_eq!(declared, [0x800, 0x800]);
    let crop = srct.iter().find(|s| s["label"] == "crop").unwrap();
    assert_eq!(cycles(&crop["events"]), [0.0, 0.5, 1.0]);
}

/// `rotate -90` is `rotate -90 0 0`.
#[test]
fn an_attachment_rotated_by_one_angle_is_rotated_by_three_with_zeros() {
    let dir = scratch("angles");
    build(&fixture("real_forms.qc"), &dir);
    build(&fixture("real_forms_three_angles.qc"), &dir);
    let one = inspect_json(&dir.join("out/test/real_forms.mdl"));
    let three = inspect_json(&dir.join("out/test/real_forms3.mdl"));
    assert_eq!(one["mdl"]["attachments"], three["mdl"]["attachments"]);
    assert_eq!(one["mdl"]["attachments"].as_array().unwrap().len(), 1);
    // and it is rotated: not the identity
    let identity = edited_fixture("real_forms.qc", "rotate -90", "", &dir.join("identity.qc"));
    build(&identity, &dir);
    let none = inspect_json(&dir.join("out/test/real_forms.mdl"));
    assert_ne!(none["mdl"]["attachments"], one["mdl"]["attachments"]);
}

/// An event past the end of the range is an error with its span; a negative one a warning.
#[test]
fn event_frames_past_the_end_are_errors_and_negative_ones_warnings() {
    let dir = scratch("events");
    let swing = fixture("../anim_chain/swing.smd");
    let reference = fixture("../anim_chain/ref.smd");
    let qc = |events: &str| {
        format!(
            "$modelname \"test/e.mdl\"\n$cdmaterials \"x/\"\n$body body \"{}\"\n$sequence \"crop\" \"{}\" frame 2 4 {events}\n",
            reference.display(),
            swing.display()
        )
    };
    std::fs::write(dir.join("past.qc"), qc("{ event 1001 3 }")).unwrap();
    let out = mdlc(&["build", "past.qc", "-o", "out", "--color", "never"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error[E0621]: event `1001` is at frame 3, past the end of sequence `crop`"),
        "{err}"
    );
    assert!(err.contains("past.qc:4:"), "{err}");
    assert!(
        err.contains("frames 0 to 2 (the SMD's frames 2 to 4)"),
        "{err}"
    );
    assert!(!dir.join("out").exists());

    std::fs::write(dir.join("neg.qc"), qc("{ event 1001 -1 }")).unwrap();
    let out = mdlc(&["build", "neg.qc", "-o", "out", "--color", "never"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning[W0621]"), "{err}");
    let Some(o) = source_common::oracle_sequences(&dir.join("out/test/e.mdl")) else {
        return;
    };
    let ev = &o["valvemdl"]["sequences"][0]["events"][0];
    assert_eq!(ev["cycle"].as_f64().unwrap(), -0.5);
}

/// `$ikchain` and `$ikautoplaylock` of the Mapbase citizen against Valve's build of the same
/// sources: the chains (names, the three bones, knee directions), the locks, and the bone
/// flags (the chain bones carry BONE_USED_BY_ATTACHMENT) agree, read by mdlc's reader and by
/// valvemdl.
#[test]
fn ik_chains_and_locks_match_valves_build_of_male01() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let dir = scratch("male01");
    let qc = corpus.join("mapbase-mp-male01/modelsrc/player/rebels/group01/male_01/male_01.qc");
    build(&qc, &dir);
    let ours = common::files_with_ext(&dir.join("out"), &["mdl"]);
    assert_eq!(ours.len(), 1, "{ours:?}");
    let valve = common::files_with_ext(&corpus.join("mapbase-mp-male01/compiled"), &["mdl"]);
    assert_eq!(valve.len(), 1, "{valve:?}");
    let (o, v) = (inspect_json(&ours[0]), inspect_json(&valve[0]));
    assert_eq!(o["mdl"]["ik_chains"].as_array().unwrap().len(), 4);
    assert_eq!(o["mdl"]["ik_chains"], v["mdl"]["ik_chains"]);
    assert_eq!(o["mdl"]["ik_autoplay_locks"].as_array().unwrap().len(), 2);
    assert_eq!(o["mdl"]["ik_autoplay_locks"], v["mdl"]["ik_autoplay_locks"]);
    let flags = |j: &Value| -> Vec<(String, Value)> {
        j["mdl"]["bones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["name"].as_str().unwrap().to_string(), b["flags"].clone()))
            .collect()
    };
    assert_eq!(flags(&o), flags(&v));

    // valvemdl reads both the same way, and validates ours
    let Some(py) = source_common::oracle_python() else {
        return;
    };
    let script = "import sys, json, valvemdl\n\
        out = []\n\
        for p in sys.argv[1:]:\n\
        \x20   m = valvemdl.Mdl(p)\n\
        \x20   out.append({'problems': list(m.validate()), 'chains': [[c.name, [[l.bone, l.kneeDir.x, l.kneeDir.y, l.kneeDir.z] for l in c.links]] for c in m.ikchains]})\n\
        print(json.dumps(out))";
    let r = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(&ours[0])
        .arg(&valve[0])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let j: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(j[0]["problems"], Value::Array(vec![]), "{j}");
    assert_eq!(j[0]["chains"], j[1]["chains"]);
    assert_eq!(j[0]["chains"].as_array().unwrap().len(), 4);
}

/// A sequence's `iklock chain pos localq` becomes an `mstudioiklock_t` of the sequence (2006 SDK
/// `write.cpp`, the chain looked up among the `$ikchain`s by name). The SDK male's QC locks its
/// feet in three sequences; its chains are rhand, lhand, rfoot, lfoot (0-3), so
/// `iklock lfoot 1 1 iklock rfoot 1 1` is [(3, 1, 1), (2, 1, 1)] and `layer_Aim_all`'s
/// `iklock rfoot 1 0 iklock lfoot 1 0` is [(2, 1, 0), (3, 1, 0)]. Read back by valvemdl.
#[test]
fn sequence_ik_locks_are_written_as_the_qc_gives_them() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let dir = scratch("male06-iklock");
    let qc =
        corpus.join("sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk/male_sdk/male_06_sdk.qc");
    let err = build(&qc, &dir);
    assert!(!err.contains("`iklock` is not applied"), "{err}");
    let mdl = common::files_with_ext(&dir.join("out"), &["mdl"]);
    let Some(o) = source_common::oracle_sequences(&mdl[0]) else {
        return;
    };
    assert_eq!(
        o["errors"]["valvemdl"],
        Value::Array(vec![]),
        "{}",
        o["errors"]
    );
    let locks: Vec<(String, Value)> = o["valvemdl"]["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["numiklocks"] != 0)
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_string(),
                s["iklocks"].clone(),
            )
        })
        .collect();
    let both = serde_json::json!([[3, 1.0, 1.0], [2, 1.0, 1.0]]);
    assert_eq!(
        locks,
        [
            ("crouch_run_all_delta".to_string(), both.clone()),
            (
                "layer_Aim_all".to_string(),
                serde_json::json!([[2, 1.0, 0.0], [3, 1.0, 0.0]])
            ),
            ("aim_walk_all_delta".to_string(), both),
        ]
    );
}

/// An `iklock` naming no `$ikchain` is E0620 at the name (Valve's compiler: "unknown chain … in
/// sequence iklock"), with the chains in a note; nothing is written.
#[test]
fn an_iklock_of_an_unknown_chain_is_an_error() {
    let dir = scratch("iklock-unknown");
    let anim = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain");
    let qc = format!(
        "$modelname \"t.mdl\"\n$cdmaterials \"m\"\n$body b \"{0}/ref.smd\"\n$ikchain arm \"hand\"\n$sequence s \"{0}/swing.smd\" iklock leg 1 1\n",
        anim.display()
    );
    std::fs::write(dir.join("k.qc"), qc).unwrap();
    let out = mdlc(
        &["build", "k.qc", "-o", "out", "--message-format", "json"],
        &dir,
    );
    assert!(!out.status.success());
    let errors: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "E0620");
    assert_eq!(errors[0]["line"], 5);
    assert!(errors[0]["message"]
        .as_str()
        .unwrap()
        .contains("IK chain `leg`"));
    assert!(!dir.join("out").join("t.mdl").exists());
}

/// `$animblocksize` is applied with no warning: the model and its `.ani` file are built
/// (`tests/animblocks.rs` checks what is in them).
#[test]
fn anim_block_size_writes_an_ani() {
    let dir = scratch("animblocks");
    let text = format!(
        "$modelname \"test/b.mdl\"\n$cdmaterials \"x/\"\n$animblocksize 32\n$body body \"{}\"\n$sequence idle \"{}\"\n",
        fixture("../anim_chain/ref.smd").display(),
        fixture("../anim_chain/swing.smd").display()
    );
    std::fs::write(dir.join("b.qc"), text).unwrap();
    let err = build(&dir.join("b.qc"), &dir);
    assert!(!err.contains("warning["), "{err}");
    assert!(dir.join("out/test/b.mdl").is_file());
    assert!(dir.join("out/test/b.ani").is_file());
}

/// An attachment with an empty bone name (Punt's laser props in reepblue/SourceSDKContent) is
/// attached to the root bone with W0420 at the empty name, exactly as if it named that bone.
#[test]
fn an_attachment_without_a_bone_is_put_on_the_root_bone() {
    let dir = scratch("empty-bone");
    let err = build(&fixture("empty_bone.qc"), &dir);
    assert_eq!(codes(&err), ["W0420"], "{err}");
    assert!(err.contains("empty_bone.qc:8:20"), "{err}");
    let empty = inspect_json(&dir.join("out/test/empty_bone.mdl"));
    let named = edited_fixture(
        "empty_bone.qc",
        "\"emit\" \"\"",
        "\"emit\" \"root\"",
        &dir.join("named.qc"),
    );
    assert!(codes(&build(&named, &dir)).is_empty());
    let root = inspect_json(&dir.join("out/test/empty_bone.mdl"));
    let attachments = &empty["mdl"]["attachments"];
    assert_eq!(attachments.as_array().unwrap().len(), 1);
    assert_eq!(attachments, &root["mdl"]["attachments"]);
}

/// A Source model is named by its file as the QC wrote it, folders and backslashes included
/// (2006 SDK: `Option_Studio` keeps the token and `write.cpp` copies it into
/// `mstudiomodel_t.name`; Scentus' Garry's Mod build of `player_mature_base` has
/// `meshes\pony_mature\body.smd`), cut at 63 bytes.
#[test]
fn a_source_model_is_named_by_its_file_as_written() {
    let dir = scratch("model-name");
    std::fs::create_dir_all(dir.join("meshes")).unwrap();
    std::fs::copy(fixture("../anim_chain/ref.smd"), dir.join("meshes/ref.smd")).unwrap();
    let long = format!("meshes\\{}\\..\\ref.smd", "x".repeat(70));
    std::fs::write(
        dir.join("named.qc"),
        format!(
            "$modelname \"test/named.mdl\"\n$cdmaterials \"models/test\"\n\
             $bodygroup body {{\n studio \"meshes\\ref.smd\"\n studio \"{long}\"\n}}\n\
             $sequence idle \"meshes/ref.smd\"\n"
        ),
    )
    .unwrap();
    build(&dir.join("named.qc"), &dir);
    let m = inspect_json(&dir.join("out/test/named.mdl"));
    let names: Vec<&str> = m["mdl"]["body_parts"][0]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["meshes\\ref.smd", &long[..63]]);
}

/// `rigid` (2006 SDK `IS_RIGID`): the attachment does not keep its bone. `helper`, which no
/// vertex uses, is dropped, and `grip` moves to `hand`, the nearest bone above it that
/// vertices use, its place re-expressed there: helper's frame (5, 0, 0), turned 90° about Z,
/// then (1, 0, 0) in it → turn Rz(90°), translation (5, 1, 0). Valve's build of
/// `alastor_rel.qc` moves its 7 `rigid` attachments the same way. Without `rigid`, `helper`
/// is kept and the attachment stays on it as written.
#[test]
fn a_rigid_attachment_moves_to_the_nearest_bone_vertices_use() {
    let dir = scratch("rigid");
    std::fs::copy(fixture("rigid.smd"), dir.join("rigid.smd")).unwrap();
    let qc = std::fs::read_to_string(fixture("rigid.qc")).unwrap();
    for (name, text) in [
        ("rigid.qc", qc.clone()),
        ("plain.qc", qc.replace(" rigid\n", "\n")),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
        assert!(codes(&build(&dir.join(name), &dir)).is_empty());
        let m = inspect_json(&dir.join("out/test/rigid.mdl"));
        let bones: Vec<&str> = m["mdl"]["bones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect();
        let a = &m["mdl"]["attachments"][0];
        let local: Vec<Vec<f64>> = a["local"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect();
        let (want_bones, want_bone, want) = if name == "rigid.qc" {
            (
                vec!["root", "hand"],
                "hand",
                [
                    [0.0, -1.0, 0.0, 5.0],
                    [1.0, 0.0, 0.0, 1.0],
                    [0.0, 0.0, 1.0, 0.0],
                ],
            )
        } else {
            (
                vec!["root", "hand", "helper"],
                "helper",
                [
                    [1.0, 0.0, 0.0, 1.0],
                    [0.0, 1.0, 0.0, 0.0],
                    [0.0, 0.0, 1.0, 0.0],
                ],
            )
        };
        assert_eq!(bones, want_bones, "{name}");
        assert_eq!(a["bone_name"], want_bone, "{name}");
        for (r, w) in local.iter().zip(want) {
            for (x, y) in r.iter().zip(w) {
                assert!((x - y).abs() < 1e-5, "{name}: {local:?}");
            }
        }
    }
}
