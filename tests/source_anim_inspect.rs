//! The animation side of `mdlc inspect` on Source models: Valve's compiled models keep every
//! animation invariant `check` tests; every frame of Valve's bunker gun decodes to unit
//! quaternions, with the rest pose wherever the animation has no data; `mdlc inspect --pose`
//! prints one line per bone and refuses unknown names, frames and bones with their codes; and
//! broken bytes give errors, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{corpus_dir, files_with_ext};
use mdlc::formats::source::{self, pose, read};
use mdlc::load::fs::RealFs;

const BUNKER_GUN: &str =
    "mapbase-bunker-gun01/compiled/VPKs/hl2_mapbase_content/models/props_combine/bunker_gun01.mdl";
const DOOR: &str =
    "mapbase-door01-left/compiled/VPKs/shared_content_v7_0/models/props_c17/door01_left.mdl";

/// Every Source MDL (IDST, version 48) of the corpus: Valve's compiled models.
fn valve_mdls(corpus: &Path) -> Vec<PathBuf> {
    files_with_ext(corpus, &["mdl"])
        .into_iter()
        .filter(|p| {
            let b = std::fs::read(p).unwrap();
            b.starts_with(b"IDST") && b.get(4..8) == Some(&48i32.to_le_bytes()[..])
        })
        .collect()
}

fn rel(corpus: &Path, p: &Path) -> String {
    p.strip_prefix(corpus).unwrap_or(p).display().to_string()
}

#[test]
fn valve_models_keep_every_invariant() {
    let Some(corpus) = corpus_dir() else { return };
    let mdls = valve_mdls(&corpus);
    assert!(
        mdls.iter().any(|p| p.ends_with(BUNKER_GUN)),
        "the bunker gun is not among {mdls:?}"
    );
    let mut bad = Vec::new();
    for p in &mdls {
        let f = mdlc::inspect::source::read_files(p, &RealFs).unwrap_or_else(|e| panic!("{e}"));
        assert!(!f.mdl.seqs.is_empty(), "{}", rel(&corpus, p));
        for problem in source::check(&f) {
            bad.push(format!("{}: {problem}", rel(&corpus, p)));
        }
        // The pose path reads the MDL alone and checks its animation side.
        let q = pose::PoseQuery {
            name: f.mdl.seqs[0].label.clone(),
            frame: 0.0,
            bone: None,
        };
        let (answer, problems) =
            mdlc::inspect::source::inspect_pose(p, &RealFs, &q, false).unwrap();
        assert!(problems.is_empty(), "{}: {problems:?}", rel(&corpus, p));
        let text = answer.unwrap_or_else(|e| panic!("{}: {e:?}", rel(&corpus, p)));
        assert_eq!(text.lines().count(), 2 + f.mdl.bones.len(), "{text}");
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn gun() -> Option<(PathBuf, read::Mdl)> {
    let p = corpus_dir()?.join(BUNKER_GUN);
    let bytes = std::fs::read(&p).unwrap();
    Some((p, read::read_mdl(&bytes).unwrap()))
}

fn unit(q: [f32; 4]) -> bool {
    let n = q.iter().map(|x| x * x).sum::<f32>().sqrt();
    (n - 1.0).abs() < 1e-3 && q.iter().all(|x| x.is_finite())
}

/// Angle between two rotations, in radians (`4·atan2(|a − b|, |a + b|)` after aligning signs,
/// which stays accurate for tiny angles where `acos` of the dot product does not).
fn angle(a: [f32; 4], b: [f32; 4]) -> f32 {
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let sign = if dot < 0.0 { -1.0 } else { 1.0 };
    let (mut diff, mut sum) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(&b) {
        let (x, y) = (*x as f64, sign * *y as f64);
        diff += (x - y) * (x - y);
        sum += (x + y) * (x + y);
    }
    (4.0 * diff.sqrt().atan2(sum.sqrt())) as f32
}

/// Every animation of Valve's bunker gun, at every integer frame and half-way between frames:
/// one pose per bone, unit quaternions, finite positions; a bone without a record is at rest
/// (identity/zero in a delta animation); a record without position data keeps the rest
/// position, one without rotation data the rest rotation; a half-way frame lies between its
/// two frames.
#[test]
fn bunker_gun_decodes_every_frame() {
    let Some((_, m)) = gun() else { return };
    assert_eq!(m.animations.len(), 24);
    let bytes = &m.bytes;
    let mut frames_seen = 0;
    for (ai, a) in m.animations.iter().enumerate() {
        let delta = a.rec.flags & 0x4 != 0;
        assert_eq!(a.rec.sectionframes, 0, "{}", a.name);
        let start = a.chains[0].start.unwrap();
        let recs = read::walk_chain(bytes, start).unwrap();
        let n = a.rec.numframes as usize;
        let mut previous: Option<Vec<source::animcodec::DecodedPose>> = None;
        for k in 0..n {
            let poses = pose::decode_anim(bytes, &m, ai, k as f32)
                .unwrap_or_else(|e| panic!("{} frame {k}: {e}", a.name));
            assert_eq!(poses.len(), m.bones.len());
            frames_seen += 1;
            for (b, p) in poses.iter().enumerate() {
                let what = format!("{} frame {k} bone {b}", a.name);
                assert!(unit(p.quat), "{what}: {:?}", p.quat);
                assert!(p.pos.iter().all(|x| x.is_finite()), "{what}");
                let rest = &m.bones[b].rec;
                let (rest_pos, rest_quat) = if delta {
                    ([0.0; 3], [0.0, 0.0, 0.0, 1.0])
                } else {
                    (rest.pos, rest.quat)
                };
                match recs.iter().find(|r| r.bone as usize == b) {
                    None => {
                        assert_eq!(p.pos, rest_pos, "{what}: no record, so at rest");
                        assert_eq!(p.quat, rest_quat, "{what}: no record, so at rest");
                    }
                    Some(r) => {
                        let rec_delta = r.flags & 0x10 != 0;
                        if r.flags & 0x05 == 0 && !rec_delta {
                            assert_eq!(p.pos, rest.pos, "{what}: no position data");
                        }
                        if r.flags & 0x2a == 0 && !rec_delta {
                            assert_eq!(p.quat, rest.quat, "{what}: no rotation data");
                        }
                    }
                }
            }
            if let Some(prev) = &previous {
                let mid = pose::decode_anim(bytes, &m, ai, k as f32 - 0.5).unwrap();
                for b in 0..m.bones.len() {
                    let (p0, p1, pm) = (prev[b], poses[b], mid[b]);
                    assert!(unit(pm.quat), "{} frame {k}-0.5 bone {b}", a.name);
                    let whole = angle(p0.quat, p1.quat);
                    assert!(
                        angle(p0.quat, pm.quat) <= whole + 1e-3
                            && angle(pm.quat, p1.quat) <= whole + 1e-3,
                        "{} bone {b}: frame {k}-0.5 is not between frames {} and {k}",
                        a.name,
                        k - 1
                    );
                    for c in 0..3 {
                        let (lo, hi) = (p0.pos[c].min(p1.pos[c]), p0.pos[c].max(p1.pos[c]));
                        assert!(
                            pm.pos[c] >= lo - 1e-3 && pm.pos[c] <= hi + 1e-3,
                            "{} bone {b} axis {c}: frame {k}-0.5 position {} outside {lo}..{hi}",
                            a.name,
                            pm.pos[c]
                        );
                    }
                }
            }
            previous = Some(poses);
        }
        // Past the last frame, and non-finite frames, are refused.
        assert!(pose::decode_anim(bytes, &m, ai, n as f32).is_err());
        assert!(pose::decode_anim(bytes, &m, ai, -0.25).is_err());
        assert!(pose::decode_anim(bytes, &m, ai, f32::NAN).is_err());
    }
    assert!(pose::decode_anim(bytes, &m, 24, 0.0).is_err());
    // 9 + 1 + 9 one-frame animations, idle 2, activate 36, fire 3, retract 42, idle_inactive 1
    assert_eq!(frames_seen, 19 + 2 + 36 + 3 + 42 + 1);
}

/// The sequences of Valve's bunker gun and door as the reader sees them (source-animation.md
/// §6): the `aim` sequence is a 3×3 blend of delta animations over `aim_yaw` (−60..60) and
/// `aim_pitch` (−35..50) with pose keys; the door's `open` sequence has numeric event 1 at
/// two thirds of its 13 frames (frame 8) and an autolayer playing `openbar`, whose weight list
/// leaves two of three bones out.
#[test]
fn valve_sequences_read_whole() {
    let Some(corpus) = corpus_dir() else { return };
    let (_, m) = gun().unwrap();
    assert_eq!(
        m.pose_params
            .iter()
            .map(|p| (p.name.as_str(), p.rec.start, p.rec.end))
            .collect::<Vec<_>>(),
        [("aim_yaw", -60.0, 60.0), ("aim_pitch", -35.0, 50.0)]
    );
    let aim = m.seqs.iter().find(|s| s.label == "aim").unwrap();
    assert_eq!(aim.rec.groupsize, [3, 3]);
    assert_eq!(aim.rec.paramindex, [0, 1]);
    assert_eq!(aim.anim_indices, [18, 17, 16, 15, 14, 13, 12, 11, 10]);
    assert_eq!(aim.pose_keys, [-60.0, 0.0, 60.0, -35.0, 7.5, 50.0]);
    assert_eq!(aim.rec.flags, 0x41c);
    assert!(aim.weights.iter().all(|&w| w == 1.0) && aim.weights.len() == 10);
    let fire = m.seqs.iter().find(|s| s.label == "fire").unwrap();
    assert_eq!(fire.activity, "ACT_BUNKER_GUN_FIRE");
    assert_eq!(fire.anim_indices, [21]);

    let door = read::read_mdl(&std::fs::read(corpus.join(DOOR)).unwrap()).unwrap();
    let open = door.seqs.iter().find(|s| s.label == "open").unwrap();
    assert_eq!(open.events.len(), 1);
    let e = &open.events[0];
    assert_eq!((e.rec.event, e.rec.r#type, e.name.as_str()), (1, 0, ""));
    assert!((e.rec.cycle - 8.0 / 12.0).abs() < 1e-6);
    assert_eq!(open.autolayers.len(), 1);
    let layer = door.seqs[open.autolayers[0].i_sequence as usize]
        .label
        .as_str();
    assert_eq!(layer, "openbar");
    let openbar = door.seqs.iter().find(|s| s.label == "openbar").unwrap();
    assert_eq!(openbar.weights.iter().filter(|&&w| w == 0.0).count(), 2);
}

/// The animation side of the text dumps of Valve's bunker gun and door, pinned (read by eye
/// against `valve_sequences_read_whole`).
#[test]
fn valve_dumps_of_the_animation_side() {
    let Some(corpus) = corpus_dir() else { return };
    for (name, p) in [
        ("valve_bunker_gun01", BUNKER_GUN),
        ("valve_door01_left", DOOR),
    ] {
        let (text, problems) =
            mdlc::inspect::source::inspect(&corpus.join(p), &RealFs, false).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let from = text.find("pose parameters (").unwrap();
        let to = text.find("VVD v").unwrap();
        insta::assert_snapshot!(name, &text[from..to]);
        let (json, _) = mdlc::inspect::source::inspect(&corpus.join(p), &RealFs, true).unwrap();
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let f = mdlc::inspect::source::read_files(&corpus.join(p), &RealFs).unwrap();
        assert_eq!(
            json["mdl"]["sequences"].as_array().unwrap().len(),
            f.mdl.seqs.len()
        );
        assert_eq!(
            json["mdl"]["animations"].as_array().unwrap().len(),
            f.mdl.animations.len()
        );
    }
}

fn mdlc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_pose_of_one_bone() {
    let Some((p, m)) = gun() else { return };
    let file = p.to_str().unwrap();
    let (code, out, err) = mdlc(&[
        "inspect",
        file,
        "--pose",
        "idle",
        "--frame",
        "0",
        "--bone",
        "Bunker_Gun.Gun_Yaw",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with(
            "animation [19] `@idle` (first animation of sequence `idle`): frame 0 of 0..=1"
        ),
        "{out}"
    );
    assert!(lines[1].starts_with("bones (1):"), "{out}");
    assert!(
        lines[2].starts_with("  [3] `Bunker_Gun.Gun_Yaw`  pos (")
            && lines[2].contains("  quat (")
            && lines[2].contains("  euler ("),
        "{out}"
    );
    // Bone 3 has no record in `@idle` (only the root has one): it is at rest.
    let (code, out, err) = mdlc(&[
        "inspect",
        file,
        "--pose",
        "@idle",
        "--bone",
        "bunker_gun.gun_yaw",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["animation"], "@idle");
    assert_eq!(v["sequence"], serde_json::Value::Null);
    assert_eq!(v["numframes"], 2);
    let bones = v["bones"].as_array().unwrap();
    assert_eq!(bones.len(), 1);
    assert_eq!(bones[0]["name"], "Bunker_Gun.Gun_Yaw");
    let get = |k: &str| -> Vec<f32> {
        bones[0][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    assert_eq!(get("pos"), m.bones[3].rec.pos);
    assert_eq!(get("quat"), m.bones[3].rec.quat);
    assert_eq!(get("euler_degrees").len(), 3);
    // All bones, at a fraction of a frame.
    let (code, out, err) = mdlc(&["inspect", file, "--pose", "activate", "--frame", "20.25"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2 + 10, "{out}");
}

#[test]
fn cli_pose_errors() {
    let Some((p, _)) = gun() else { return };
    let file = p.to_str().unwrap();
    let (code, out, err) = mdlc(&["inspect", file, "--pose", "fier"]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("error[E0650]"), "{err}");
    assert!(err.contains("did you mean `fire`?"), "{err}");
    let (code, _, err) = mdlc(&["inspect", file, "--pose", "fire", "--frame", "2.5"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0651]"), "{err}");
    assert!(err.contains("from 0 to 2"), "{err}");
    let (code, _, err) = mdlc(&["inspect", file, "--pose", "fire", "--frame", "-1"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0651]"), "{err}");
    let (code, _, err) = mdlc(&["inspect", file, "--pose", "fire", "--bone", "Gun_Yaw"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[E0652]"), "{err}");
    assert!(err.contains("did you mean `Bunker_Gun.Gun_Yaw`?"), "{err}");
    // --frame and --bone need --pose: a usage error.
    let (code, _, _) = mdlc(&["inspect", file, "--frame", "1"]);
    assert_eq!(code, 2);
    // A GoldSrc model has no Source pose.
    let Some(corpus) = corpus_dir() else { return };
    let gs = corpus.join("gs-man/compiled_models/man.mdl");
    if gs.is_file() {
        let (code, _, err) = mdlc(&["inspect", gs.to_str().unwrap(), "--pose", "idle"]);
        assert_eq!(code, 1);
        assert!(err.contains("error[E0654]"), "{err}");
    }
}

/// Bytes of the bunker gun's animation side (header fields and records) overwritten one position
/// at a time (and the file cut short): reading, checking and decoding every frame give results or errors, never a
/// panic.
#[test]
fn broken_animation_bytes_never_panic() {
    let Some((_, m)) = gun() else { return };
    let good = m.bytes.clone();
    let from = m.hdr.localanimindex as usize;
    let to = (m.hdr.localseqindex as usize + m.seqs.len() * 212 + 2048).min(good.len());
    // The header's animation-side counts and offsets (bone controllers 164, animations 180,
    // sequences 188, nodes 248, pose parameters 300), then the records themselves.
    let header = (164..172).chain(180..196).chain(248..260).chain(300..308);
    let body = (from..to).step_by(7);
    let mut exercised = 0;
    for (i, at) in header.chain(body).enumerate() {
        let mut b = good.clone();
        b[at] = [0xff, 0x80, 0x00, 0x7f, 0x01][i % 5];
        if at >= from && i % 13 == 0 {
            b.truncate(at + 1);
        }
        let Ok(m2) = read::read_mdl(&b) else { continue };
        exercised += 1;
        let files = source::Files {
            mdl: m2,
            vvd: None,
            vtx: Vec::new(),
            raw_checksums: Vec::new(),
        };
        let _ = source::check(&files);
        let m2 = &files.mdl;
        for ai in 0..m2.animations.len() {
            let n = m2.animations[ai].rec.numframes.clamp(0, 64);
            for k in 0..n {
                let _ = pose::decode_anim(&m2.bytes, m2, ai, k as f32);
                let _ = pose::decode_anim(&m2.bytes, m2, ai, k as f32 + 0.5);
            }
        }
        let q = pose::PoseQuery {
            name: "aim".into(),
            frame: 0.0,
            bone: None,
        };
        let _ = pose::pose_report(m2, &q, true);
    }
    assert!(exercised > 100, "only {exercised} mutations read back");
}

/// Writes `ref.smd` into `dir`: bones `root` and `child` (at (10, 0, 0)), one triangle across
/// both. Returns the `nodes` block for the animation files of the same skeleton.
fn two_bone_reference(dir: &std::path::Path) -> &'static str {
    let nodes = "version 1\nnodes\n0 \"root\" -1\n1 \"child\" 0\nend\n";
    std::fs::write(
        dir.join("ref.smd"),
        format!(
            "{nodes}skeleton\ntime 0\n0 0 0 0 0 0 0\n1 10 0 0 0 0 0\nend\ntriangles\nmat\n\
             0 0 0 0 0 0 1 0 0\n1 10 0 0 0 0 1 1 0\n1 10 1 0 0 0 1 0 1\nend\n"
        ),
    )
    .unwrap();
    nodes
}

/// The worked example of source-animation.md §10, compiled by mdlc and read back through
/// `mdlc inspect --pose`: `root` carries the default +90° turn about Z in every frame, `child`
/// sits at (10, 0, 0) and turns about Z by 0°, 22.5°, 45°, 67.5°, 90° (§10.6), each within one
/// quantisation step (rotscale.z = π/2 ÷ 32767 ≈ 0.0027°); frame 2.5 lies half-way (56.25°).
#[test]
fn pose_of_an_mdlc_build() {
    let dir = source_common::tmp("anim-inspect", "turn");
    let nodes = two_bone_reference(&dir);
    let mut turn = format!("{nodes}skeleton\n");
    // θ = 0, π/8, π/4, 3π/8, π/2 (the spec's 0, 0.392699, 0.785398, 1.178097, 1.570796)
    for t in 0..5 {
        let th = t as f32 * std::f32::consts::FRAC_PI_8;
        turn.push_str(&format!("time {t}\n0 0 0 0 0 0 0\n1 10 0 0 0 0 {th}\n"));
    }
    turn.push_str("end\n");
    std::fs::write(dir.join("turn.smd"), turn).unwrap();
    std::fs::write(
        dir.join("turn.qc"),
        "$modelname \"mdlc/turn.mdl\"\n$cdmaterials \"models/mdlc/\"\n$body body \"ref.smd\"\n\
         $sequence turn \"turn.smd\" fps 30\n",
    )
    .unwrap();
    let (files, diags) = source_common::compile_qc(&dir.join("turn.qc"));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let out = dir.join("out");
    let mdl = source_common::write_files(&out, &files.unwrap());
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    assert_eq!(source::check(&f), Vec::<String>::new());
    let a = f.mdl.anims.iter().position(|(n, _)| n == "@turn").unwrap();
    assert_eq!(f.mdl.animations[a].rec.numframes, 5);
    let step = 90.0 / 32767.0;
    for (frame, child_z) in [
        (0.0, 0.0),
        (1.0, 22.5),
        (2.0, 45.0),
        (3.0, 67.5),
        (4.0, 90.0),
        (2.5, 56.25),
    ] {
        let (code, text, err) = mdlc(&[
            "inspect",
            mdl.to_str().unwrap(),
            "--pose",
            "turn",
            "--frame",
            &format!("{frame}"),
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["animation"], "@turn");
        assert_eq!(v["sequence"], "turn");
        let bone = |i: usize, k: &str| -> Vec<f32> {
            v["bones"][i][k]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        };
        let root = bone(0, "euler_degrees");
        let child = bone(1, "euler_degrees");
        let near =
            |a: &[f32], b: &[f32], eps: f32| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= eps);
        assert!(
            near(&root, &[0.0, 0.0, 90.0], 2.0 * step),
            "frame {frame}: root {root:?}"
        );
        assert!(
            near(&child, &[0.0, 0.0, child_z], 2.0 * step + 1e-3),
            "frame {frame}: child {child:?}, expected z {child_z}"
        );
        assert!(
            near(&bone(1, "pos"), &[10.0, 0.0, 0.0], 0.01),
            "frame {frame}"
        );
        assert!(
            near(&bone(0, "pos"), &[0.0, 0.0, 0.0], 0.01),
            "frame {frame}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 3001-frame animation whose six channels change every frame: too long for one record's
/// i16 offsets, so it is cut into sections (§3.2). Every section's chain passes `check` with
/// the frame counts of §3.2, and frames on both sides of each section boundary (and half-way
/// across one, which reads the section's extra frame), and the last frame (a section of its
/// own), decode to the input within a few quantisation steps.
#[test]
fn sectioned_animation_round_trip() {
    let dir = source_common::tmp("anim-inspect", "long");
    let nodes = two_bone_reference(&dir);
    let n = 3001usize;
    let child = |f: f32| -> ([f32; 3], [f32; 3]) {
        (
            [10.0 + (f * 0.1).sin(), (f * 0.07).cos(), (f * 0.13).sin()],
            [
                0.3 * (f * 0.05).sin(),
                0.2 * (f * 0.03).cos(),
                0.5 * (f * 0.011).sin(),
            ],
        )
    };
    let mut long = format!("{nodes}skeleton\n");
    for t in 0..n {
        let (p, r) = child(t as f32);
        long.push_str(&format!(
            "time {t}\n0 0 0 0 0 0 0\n1 {} {} {} {} {} {}\n",
            p[0], p[1], p[2], r[0], r[1], r[2]
        ));
    }
    long.push_str("end\n");
    std::fs::write(dir.join("long.smd"), long).unwrap();
    std::fs::write(
        dir.join("long.qc"),
        "$modelname \"mdlc/long.mdl\"\n$cdmaterials \"models/mdlc/\"\n$body body \"ref.smd\"\n\
         $sequence long \"long.smd\" fps 30\n",
    )
    .unwrap();
    let (files, diags) = source_common::compile_qc(&dir.join("long.qc"));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let mdl = source_common::write_files(&dir.join("out"), &files.unwrap());
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(source::check(&f), Vec::<String>::new());
    let m = &f.mdl;
    let ai = m.anims.iter().position(|(n, _)| n == "@long").unwrap();
    let a = &m.animations[ai];
    assert_eq!(a.rec.numframes as usize, n);
    let s = a.rec.sectionframes as usize;
    assert!(
        s > 0,
        "a 3001-frame animation of changing channels is sectioned"
    );
    assert_eq!(a.chains.len(), n / s + 2);
    assert_eq!(a.chains[0].frames, s + 1);
    assert_eq!(a.chains.last().unwrap().frames, 1);
    let mut frames: Vec<f32> = vec![0.0, (n - 1) as f32, (n - 2) as f32, (n - 1) as f32 - 0.5];
    for k in [1, 2, n / s / 2, n / s - 1, n / s] {
        let b = (k * s) as f32;
        frames.extend([b - 1.0, b, b + 1.0, b - 0.5, b - 0.25]);
    }
    let rotscale = m.bones[1].rec.rotscale;
    let posscale = m.bones[1].rec.posscale;
    for fr in frames {
        if fr < 0.0 || fr > (n - 1) as f32 {
            continue;
        }
        let poses = pose::decode_anim(&m.bytes, m, ai, fr).unwrap();
        let (k, t) = (fr.floor(), fr - fr.floor());
        // Linear interpolation of the input is what the engine's blend approximates.
        let (p0, r0) = child(k);
        let (p1, r1) = child((k + 1.0).min((n - 1) as f32));
        let want_pos: Vec<f32> = (0..3).map(|c| p0[c] + t * (p1[c] - p0[c])).collect();
        let q0 = mdlc::formats::source::math::euler_quat(r0);
        let q1 = mdlc::formats::source::math::euler_quat(r1);
        let got = poses[1];
        for c in 0..3 {
            assert!(
                (got.pos[c] - want_pos[c]).abs() <= 2.0 * posscale[c] + 1e-4,
                "frame {fr}: child pos {:?}, want {want_pos:?}",
                got.pos
            );
        }
        let tol = 2.0 * (rotscale[0] + rotscale[1] + rotscale[2]) + 1e-4;
        let err = angle(got.quat, q0)
            .min(angle(got.quat, q1))
            .min(angle(got.quat, q0) + angle(got.quat, q1) - angle(q0, q1));
        assert!(
            angle(got.quat, q0) <= angle(q0, q1) + tol
                && angle(got.quat, q1) <= angle(q0, q1) + tol,
            "frame {fr}: child quat {:?} is not between {q0:?} and {q1:?} (err {err})",
            got.quat
        );
        if t == 0.0 {
            assert!(
                angle(got.quat, q0) <= tol,
                "frame {fr}: {:?} vs {q0:?}",
                got.quat
            );
        }
    }
}
