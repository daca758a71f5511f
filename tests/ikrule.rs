//! IK rules (issue 16): `ikrule` carried into `mstudioikrule_t` records with their compressed
//! errors, as the 2006 SDK's compiler works them out, checked three ways:
//! - against Valve's own build of `mapbase-mp-male01` (the IK block, byte for byte);
//! - on a fixture whose values are worked out by hand (`testdata/source/ikrule`: a leg
//!   pelvis → thigh → calf → foot whose foot slides 1 inch a frame along SMD +y, and an arm
//!   pelvis → spine → hand whose hand rises 1 inch a frame), read back by mdlc's reader and by
//!   an independent one (`tests/oracle/ikrules.py`: valvemdl's records, its own stream decoder);
//! - errors and warnings with their spans.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::Path;

use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/ikrule");

/// One rule as both readers give it: type, chain, bone, slot, height, radius, floor, pos, q,
/// iStart, cycles (start, peak, tail, end, contact), attachment, and per frame the error
/// (x, y, z, Euler x, y, z), or `None` without error data.
#[derive(Debug)]
struct Rule {
    kind: i64,
    chain: i64,
    bone: i64,
    slot: i64,
    hrf: [f64; 3],
    pos: [f64; 3],
    q: [f64; 4],
    istart: i64,
    cycles: [f64; 5],
    attachment: String,
    error: Option<Vec<[f64; 6]>>,
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn arr<const N: usize>(v: &Value) -> [f64; N] {
    let a: Vec<f64> = v.as_array().unwrap().iter().map(f).collect();
    a.try_into().unwrap()
}

const TYPES: [&str; 7] = [
    "none",
    "touch",
    "world",
    "footstep",
    "release",
    "attachment",
    "unlatch",
];

/// The rules of every animation, by animation name, from `mdlc inspect --json`.
/// Each animation's name and rules.
type Anims = Vec<(String, Vec<Rule>)>;

fn own_rules(mdl: &Path) -> Anims {
    let m = common::inspect_json(mdl)["mdl"].clone();
    m["animations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let rules = a["ikrules"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| Rule {
                    kind: TYPES.iter().position(|t| r["type"] == *t).unwrap() as i64,
                    chain: r["chain"].as_i64().unwrap(),
                    bone: r["bone"].as_i64().unwrap(),
                    slot: r["slot"].as_i64().unwrap(),
                    hrf: [f(&r["height"]), f(&r["radius"]), f(&r["floor"])],
                    pos: arr(&r["pos"]),
                    q: arr(&r["q"]),
                    istart: r["istart"].as_i64().unwrap(),
                    cycles: ["start", "peak", "tail", "end", "contact"].map(|k| f(&r[k])),
                    attachment: r["attachment"].as_str().unwrap().to_string(),
                    error: r["error"].as_array().map(|e| {
                        e.iter()
                            .map(|x| {
                                let p: [f64; 3] = arr(&x["pos"]);
                                let a: [f64; 3] = arr(&x["angles"]);
                                [p[0], p[1], p[2], a[0], a[1], a[2]]
                            })
                            .collect()
                    }),
                })
                .collect();
            (a["name"].as_str().unwrap().to_string(), rules)
        })
        .collect()
}

/// The same from the independent reader; `None` without the Python oracles (never under CI).
fn oracle_rules(mdl: &Path) -> Option<(Anims, Value)> {
    let v = source_common::oracle_json("ikrules.py", mdl)?;
    assert_eq!(v["problems"], serde_json::json!([]), "valvemdl validate()");
    let anims = v["animations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let rules = a["rules"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| Rule {
                    kind: r["type"].as_i64().unwrap(),
                    chain: r["chain"].as_i64().unwrap(),
                    bone: r["bone"].as_i64().unwrap(),
                    slot: r["slot"].as_i64().unwrap(),
                    hrf: [f(&r["height"]), f(&r["radius"]), f(&r["floor"])],
                    pos: arr(&r["pos"]),
                    q: arr(&r["q"]),
                    istart: r["iStart"].as_i64().unwrap(),
                    cycles: ["start", "peak", "tail", "end", "contact"].map(|k| f(&r[k])),
                    attachment: r["attachment"].as_str().unwrap().to_string(),
                    error: r["error"]
                        .as_array()
                        .map(|e| e.iter().map(arr::<6>).collect()),
                })
                .collect();
            (a["name"].as_str().unwrap().to_string(), rules)
        })
        .collect();
    Some((anims, v["sequences"].clone()))
}

fn near(a: &[f64], b: &[f64], eps: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= eps)
}

/// Errors are stored as `value / scale` truncated toward zero, scale at least 128/32767 inch
/// or (π/8)/32767: within one step of the true value.
const STEP: f64 = 128.0 / 32767.0 + 1e-6;
const PI2: f64 = std::f64::consts::FRAC_PI_2;

fn check_rules(reader: &str, anims: &[(String, Vec<Rule>)]) {
    let get = |name: &str| -> &Vec<Rule> {
        &anims
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{reader}: no {name}"))
            .1
    };
    // `idle` moves both chains and has no rule: two automatic releases without error data
    let idle = get("@idle");
    assert_eq!(idle.len(), 2, "{reader}");
    for (c, r) in idle.iter().enumerate() {
        assert_eq!(
            (r.kind, r.chain, r.slot, r.bone),
            (4, c as i64, c as i64, 0)
        );
        assert_eq!(r.cycles, [0.0, 0.0, 1.0, 1.0, 0.0], "{reader}");
        assert!(r.error.is_none(), "{reader}");
    }
    // `noautoik` and a delta: no rules
    assert!(get("@walk_free").is_empty(), "{reader}");
    assert!(get("@walk_delta").is_empty(), "{reader}");

    let walk = get("@walk");
    assert_eq!(
        walk.iter().map(|r| r.kind).collect::<Vec<_>>(),
        [3, 1, 5, 4, 6],
        "{reader}"
    );
    // footstep range 0 1 3 4 (5 frames: cycles /4), contact = peak. Footfall: the foot at
    // frame 1, model (−5, 0, 4), on the floor (z 0); the chain's default height 18. The foot
    // is at model (−(4+t), 0, 4) turned 90° about Z: the error is foot − target with angles
    // (0, 0, 90°); before the peak and from the end the target is the foot itself (on z 0).
    let fs = &walk[0];
    assert_eq!((fs.chain, fs.slot, fs.bone, fs.istart), (0, 0, 0, 0));
    assert_eq!(fs.hrf, [18.0, 0.0, 0.0], "{reader}");
    assert!(near(&fs.pos, &[-5.0, 0.0, 0.0], 1e-5), "{reader} {fs:?}");
    assert_eq!(fs.q, [0.0, 0.0, 0.0, 1.0]);
    assert_eq!(fs.cycles, [0.0, 0.25, 0.75, 1.0, 0.25], "{reader}");
    let e = fs.error.as_ref().unwrap();
    assert_eq!(e.len(), 5);
    for (t, x) in [0.0, 0.0, -1.0, -2.0, 0.0].iter().enumerate() {
        assert!(
            near(&e[t], &[*x, 0.0, 4.0, 0.0, 0.0, PI2], STEP),
            "{reader} frame {t}: {:?}",
            e[t]
        );
    }
    // touch "pelvis" over the whole animation: the hand in the pelvis's space. The pelvis is
    // the first link of the arm's chain (pelvis → spine → hand), so Valve's compiler turns it
    // to point its X axis at the spine (`RealignBones`): X' = +Z; of its old axes X is the most
    // perpendicular to that, so Z' = X' × X = +Y and Y' = Z' × X' = +X. The hand, at
    // (10, 0, 10 + t) from the pelvis in the model, is at (10 + t, 10, 0) in that frame, turned
    // by the inverse of [X' Y' Z']: Euler (90°, 0, 90°)
    let touch = &walk[1];
    assert_eq!((touch.chain, touch.bone), (1, 0), "{reader}");
    assert_eq!(touch.q, [0.0; 4], "{reader}: the SDK leaves q unset");
    let e = touch.error.as_ref().unwrap();
    for (t, x) in e.iter().enumerate() {
        assert!(
            near(x, &[10.0 + t as f64, 10.0, 0.0, PI2, 0.0, PI2], STEP),
            "{reader} {t}: {x:?}"
        );
    }
    // attachment "grip" range 2 2 4 4: the hand's pose at the contact (frame 2) is the target,
    // stored on the rule (bone = the chain's end, 5); errors from frame 2: (0, 0, t − 2)
    let att = &walk[2];
    assert_eq!((att.bone, att.istart), (5, 2), "{reader}");
    assert_eq!(att.attachment, "grip");
    assert!(near(&att.pos, &[0.0, 10.0, 52.0], 1e-5), "{reader}");
    let h = std::f64::consts::FRAC_1_SQRT_2;
    assert!(
        near(&att.q, &[0.0, 0.0, h, h], 1e-6),
        "{reader} {:?}",
        att.q
    );
    assert_eq!(att.cycles, [0.5, 0.5, 1.0, 1.0, 0.5], "{reader}");
    let e = att.error.as_ref().unwrap();
    assert_eq!(e.len(), 3);
    for (k, x) in e.iter().enumerate() {
        assert!(
            near(x, &[0.0, 0.0, k as f64, 0.0, 0.0, 0.0], STEP),
            "{reader}"
        );
    }
    // release: zero errors over the whole animation; unlatch with its own values
    for r in &walk[3..] {
        assert!(r.error.as_ref().unwrap().iter().all(|x| x == &[0.0; 6]));
    }
    let un = &walk[4];
    assert_eq!(un.slot, 5);
    assert_eq!(
        un.hrf,
        [3.0, 2.0, 1.0],
        "{reader}: height 3, pad 4 = radius 2, floor 1"
    );
    assert_eq!(un.cycles[4], 0.5);

    // `range 0 . . 4`: peak and tail at the middle (2), contact = peak; the target is blended
    // in with 3s² − 2s³: at frame 1, s = ½ → half way between the foot (−5) and the footfall
    // (−6): error +0.5; at frame 3 −0.5
    let step = get("@step");
    assert_eq!(step[0].cycles, [0.0, 0.5, 0.5, 1.0, 0.5], "{reader}");
    let e = step[0].error.as_ref().unwrap();
    for (t, x) in [0.0, 0.5, 0.0, -0.5, 0.0].iter().enumerate() {
        assert!(near(&e[t][..3], &[*x, 0.0, 4.0], STEP), "{reader} {t}");
    }
    assert_eq!(
        (step[1].kind, step[1].chain),
        (4, 1),
        "automatic release of the arm"
    );

    // two footsteps of one chain with their starts and ends left open (`range . 1 2 .` and
    // `range . 3 3 .`, 5 frames): each made-up start is half way round (2 frames) from the
    // middle of the gap after the other's tail (frames 2 and 4), the end of the one before is
    // that start: the first runs 0..2, the second 2..4 (its end 0 wraps to 4), contacts at
    // the peaks
    let gait = get("@gait");
    assert_eq!(gait[0].cycles, [0.0, 0.25, 0.5, 0.5, 0.25], "{reader}");
    assert_eq!(gait[1].cycles, [0.5, 0.75, 0.75, 1.0, 0.75], "{reader}");
    assert_eq!(gait[0].error.as_ref().unwrap().len(), 3, "{reader}");
    assert_eq!(gait[1].istart, 2, "{reader}");

    // fakeorigin 1 2 3 fakerotate 0 90 0: bone −1, the target turned 90° about Z like the hand,
    // so the error is the hand's offset turned back: (8, 1, 47 + t), no rotation
    let fake = &get("@fake")[0];
    assert_eq!(fake.bone, -1);
    assert_eq!(fake.pos, [1.0, 2.0, 3.0]);
    assert!(near(&fake.q, &[0.0, 0.0, h, h], 1e-6), "{reader}");
    for (t, x) in fake.error.as_ref().unwrap().iter().enumerate() {
        assert!(
            near(x, &[8.0, 1.0, 47.0 + t as f64, 0.0, 0.0, 0.0], STEP * 13.0),
            "{reader} {t}: {x:?}"
        );
    }
}

#[test]
fn ik_rules_are_worked_out_as_valves_compiler_does() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("rules.qc"), "ikrule-rules");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    check_rules("mdlc", &own_rules(&mdl));
    let m = common::inspect_json(&mdl)["mdl"].clone();
    let counts: Vec<i64> = m["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["numikrules"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, [2, 5, 0, 0, 2, 2, 3]);
    if let Some((anims, seqs)) = oracle_rules(&mdl) {
        check_rules("oracle", &anims);
        let oc: Vec<i64> = seqs
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["numikrules"].as_i64().unwrap())
            .collect();
        assert_eq!(oc, counts);
        source_common::oracle_check(&mdl);
    }
}

/// The block of IK rules and compressed errors an animdesc points at, as bytes: the rule
/// records, then each rule's error data, to the end of the last one.
fn ik_block(mdl: &[u8], anim: usize) -> Vec<u8> {
    let i32_at = |o: usize| i32::from_le_bytes(mdl[o..o + 4].try_into().unwrap());
    let animindex = i32_at(184) as usize; // localanimindex
    let at = animindex + anim * 100;
    let (n, idx) = (i32_at(at + 60) as usize, i32_at(at + 64) as usize);
    let table = at + idx;
    let mut end = table + n * 152;
    for j in 0..n {
        let rule = table + j * 152;
        let c = i32_at(rule + 60) as usize;
        if c != 0 {
            let err = rule + c;
            let offs: Vec<usize> = (0..6)
                .map(|k| {
                    i16::from_le_bytes(mdl[err + 24 + 2 * k..err + 26 + 2 * k].try_into().unwrap())
                        as usize
                })
                .collect();
            // the last stream's end: walk its runs over the rule's frames
            let frames = 101; // male01's ragdoll: 101 frames, every rule over all of them
            let mut p = err + offs[5];
            let mut seen = 0;
            while seen < frames {
                let (valid, total) = (mdl[p] as usize, mdl[p + 1] as usize);
                p += 2 + 2 * valid;
                seen += total;
            }
            end = end.max(p);
        }
    }
    mdl[table..end].to_vec()
}

/// `mapbase-mp-male01`: the ragdoll sequence's four release rules (one per chain, target =
/// chain, range 0 0 100 100, fakeorigin/fakerotate 0) are Valve's byte for byte: the records
/// and the compressed zero errors (scales 128/32767 and (π/8)/32767, one 101-frame run each).
#[test]
fn male01_ik_rules_match_valves_build() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let base = corpus.join("mapbase-mp-male01");
    let qc = base.join("modelsrc/player/rebels/group01/male_01/male_01.qc");
    let valve = std::fs::read(
        base.join("compiled/VPKs/base_content/models/player/rebels/male_gr01_01.mdl"),
    )
    .unwrap();
    let (out, diags) = source_common::compile_qc(&qc);
    assert!(
        !diags
            .iter()
            .any(|d| d.code.as_str() == "W0620" && d.message.contains("ikrule")),
        "{diags:?}"
    );
    let files = out.unwrap();
    let dir = source_common::tmp("ikrule", "male01");
    let mdl_path = source_common::write_files(&dir, &files);
    let ours = std::fs::read(&mdl_path).unwrap();
    let (a, b) = (ik_block(&ours, 0), ik_block(&valve, 0));
    assert_eq!(a.len(), 4 * 152 + 4 * 60);
    assert_eq!(a, b);
    if let Some((anims, seqs)) = oracle_rules(&mdl_path) {
        assert_eq!(seqs[0]["numikrules"], 4);
        let rules = &anims[0].1;
        assert_eq!(rules.len(), 4);
        for (c, r) in rules.iter().enumerate() {
            assert_eq!(
                (r.kind, r.chain, r.slot, r.bone),
                (4, c as i64, c as i64, -1)
            );
            assert_eq!(r.error.as_ref().unwrap().len(), 101);
        }
    }
}

/// `usesequence` reads the pose of the sequence that plays the animation (2006 SDK
/// `CalcSeqTransforms`): the rest pose with the animation blended in by the sequence's bone
/// weights, then its layers, frames wrapping over the animation's length; `usesource` wraps over the file's
/// frames. A range past the last frame of an animation that does not loop is therefore not an
/// error with either (Mapbase's `male_shared.qc` has such rules). A quoted `"ACT_…"` appended
/// with `$continue` is the sequence's activity.
#[test]
fn usesequence_and_usesource_rules_read_as_valves_compiler_does() {
    let dir = common::build_fresh(
        &Path::new(FIXTURES).join("usesequence.qc"),
        "ikrule-usesequence",
    );
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let check = |reader: &str, anims: &Anims| {
        let rule = |name: &str| -> &Rule {
            &anims
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{reader}: no {name}"))
                .1[0]
        };
        // the hand rises 1 inch a frame in `walk.smd` (10 + t in the pelvis's space, see
        // `check_rules`); weighted 0 by the sequence's list it stays at rest: 10 at every frame
        let held = rule("@held");
        let e = held.error.as_ref().unwrap();
        assert_eq!(e.len(), 5, "{reader}");
        for x in e {
            assert!(
                near(x, &[10.0, 10.0, 0.0, PI2, 0.0, PI2], STEP),
                "{reader}: {x:?}"
            );
        }
        // the layer sets the hand's pose for frames 0 to 3 (its frame t, weight 1), not at 4,
        // where the layer ends (`AccumulateSeqLayers` skips a frame at or past its end)
        let e = rule("@layered").error.as_ref().unwrap();
        let rise: Vec<f64> = e.iter().map(|x| x[0] - 10.0).collect();
        assert!(
            near(&rise, &[0.0, 1.0, 2.0, 3.0, 0.0], STEP),
            "{reader}: {rise:?}"
        );
        // range 3 4 1 1 on 5 frames: tail and end wrap to 5, so 5 error frames from frame 3
        // (3 + 2 past the end); frames 5, 6, 7 read frames 0, 1, 2
        for name in ["@wrapped", "@wrapped_source"] {
            let r = rule(name);
            assert_eq!(r.cycles, [0.75, 1.0, 1.25, 1.25, 1.0], "{reader} {name}");
            let e = r.error.as_ref().unwrap();
            let rise: Vec<f64> = e.iter().map(|x| x[0] - 10.0).collect();
            assert!(
                near(&rise, &[3.0, 4.0, 0.0, 1.0, 2.0], STEP),
                "{reader} {name}: {rise:?}"
            );
        }
    };
    check("mdlc", &own_rules(&mdl));
    let m = common::inspect_json(&mdl)["mdl"].clone();
    let wrapped = m["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == "wrapped")
        .unwrap()
        .clone();
    assert_eq!(
        (wrapped["activity"].as_str(), wrapped["actweight"].as_i64()),
        (Some("ACT_WALK"), Some(2)),
        "{wrapped}"
    );
    if let Some((anims, _)) = oracle_rules(&mdl) {
        check("oracle", &anims);
        source_common::oracle_check(&mdl);
    }
}

/// Each error Valve's compiler stops at, with its span; everything is reported in one run and
/// nothing is written.
#[test]
fn ik_rule_errors() {
    for (qc, expected) in [
        (
            "errors.qc",
            vec![
                ("E0620", "\"lefoot\""),
                ("E0621", "ikrule \"lfoot\" footstep range 0 1 3 9"),
                ("E0620", "\"pelvsi\""),
                ("E0625", "x }"),
            ],
        ),
        ("mismatch.qc", vec![("E0624", "blend {")]),
        // a lock on a chain whose bone is missing adds nothing to the chain's own error; a lock
        // on a name no chain has is an error of its own
        (
            "chains.qc",
            vec![("E0402", "\"fooot\""), ("E0414", "\"lfot\"")],
        ),
        // a looping animation's rule may run on, but not for millions of frames
        ("wild.qc", vec![("E0622", "ikrule")]),
    ] {
        let path = Path::new(FIXTURES).join(qc);
        let (out, diags) = source_common::compile_qc(&path);
        assert!(out.is_none(), "{qc}");
        let text = std::fs::read_to_string(&path).unwrap();
        let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
        assert_eq!(errors.len(), expected.len(), "{qc}: {errors:?}");
        for (d, (code, at)) in errors.iter().zip(&expected) {
            assert_eq!(d.code.as_str(), *code, "{qc}: {d:?}");
            let start = d.labels.iter().find(|l| l.primary).unwrap().at.span.start as usize;
            assert!(text[start..].starts_with(at), "{qc}: {}", &text[start..]);
        }
    }
}

/// A type word Valve's compiler does not know leaves the rule typeless (type 0), as it writes
/// it, with W0623 at the word; the rest of the line still belongs to the rule.
#[test]
fn unknown_ik_rule_type_is_kept_typeless() {
    let path = Path::new(FIXTURES).join("notype.qc");
    let (out, diags) = source_common::compile_qc(&path);
    let w: Vec<_> = diags
        .iter()
        .filter(|d| d.code.as_str() == "W0623")
        .collect();
    assert_eq!(w.len(), 1, "{diags:?}");
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let dir = source_common::tmp("ikrule", "notype");
    let mdl = source_common::write_files(&dir, &out.unwrap());
    let anims = own_rules(&mdl);
    let r = &anims.iter().find(|(n, _)| n == "@a").unwrap().1[0];
    assert_eq!(r.kind, 0);
    assert_eq!(r.cycles, [0.0, 0.0, 1.0, 1.0, 0.0]);
}

/// A file whose rule claims a billion frames of error data is reported as broken by `mdlc
/// inspect`, not read into a billion-entry table.
#[test]
fn inspect_refuses_an_implausible_rule() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("rules.qc"), "ikrule-broken");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let mut bytes = std::fs::read(&mdl).unwrap();
    let i32_at = |b: &[u8], o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let desc = i32_at(&bytes, 184) as usize + 100; // animation 1, `@walk`
    let rule = desc + i32_at(&bytes, desc + 64) as usize;
    assert_ne!(
        i32_at(&bytes, rule + 60),
        0,
        "the first rule has error data"
    );
    bytes[rule + 88..rule + 92].copy_from_slice(&1.0e9f32.to_le_bytes()); // end
    let broken = dir.join("broken.mdl");
    std::fs::write(&broken, &bytes).unwrap();
    let out = common::mdlc(&["inspect", broken.to_str().unwrap()], Path::new("."));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("IK rule 0 covers cycles"), "{err}");
}
