//! Faces (issue 20): flex descriptions, controllers, controller UI, rules, eyeballs and mouths,
//! read back by an independent reader (`tests/oracle/face.py`, valvemdl plus the header's mouth
//! table) and compared with Valve's build of `mapbase-mp-male01`, with what the QC says, and
//! with the QC's rule expressions evaluated directly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{corpus_dir, fresh_dir, mdlc};
use serde_json::Value;

fn male01_dir(corpus: &Path) -> PathBuf {
    corpus.join("mapbase-mp-male01/modelsrc/player/rebels/group01/male_01")
}

fn male06_dir(corpus: &Path) -> PathBuf {
    corpus.join("sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk")
}

/// Builds `qc` into a fresh folder; returns the `.mdl` written (the only one).
fn build(qc: &Path, name: &str) -> PathBuf {
    let out = common::build_fresh(qc, &format!("faces-{name}"));
    let mdls = common::files_with_ext(&out, &["mdl"]);
    assert_eq!(mdls.len(), 1, "{mdls:?}");
    mdls[0].clone()
}

/// The face oracle's JSON, `None` when the oracle is not available (never under CI).
fn face(mdl: &Path) -> Option<Value> {
    let v = source_common::oracle_json("face.py", mdl)?;
    assert_eq!(v["problems"], Value::Array(vec![]), "{}", mdl.display());
    Some(v)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn close_list(a: &Value, b: &Value, eps: f64) -> bool {
    let (a, b) = (a.as_array().unwrap(), b.as_array().unwrap());
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (f(x) - f(y)).abs() <= eps)
}

#[test]
fn male01_face_matches_valves_build() {
    let Some(corpus) = corpus_dir() else { return };
    let qc = male01_dir(&corpus).join("male_01.qc");
    let ours = build(&qc, "male01");
    let valve = corpus
        .join("mapbase-mp-male01/compiled/VPKs/base_content/models/player/rebels/male_gr01_01.mdl");
    let (Some(o), Some(v)) = (face(&ours), face(&valve)) else {
        return;
    };
    source_common::oracle_check(&ours);
    // Valve's counts, as the issue states them
    assert_eq!(v["flexdescs"].as_array().unwrap().len(), 73);
    assert_eq!(v["controllers"].as_array().unwrap().len(), 54);
    assert_eq!(v["rules"].as_array().unwrap().len(), 63);
    assert_eq!(v["mouths"].as_array().unwrap().len(), 1);
    assert_eq!(v["eyeballs"].as_array().unwrap().len(), 2);
    // names, order, ranges, UI records: equal
    assert_eq!(o["flexdescs"], v["flexdescs"]);
    assert_eq!(o["controllers"], v["controllers"]);
    assert_eq!(o["ui"], v["ui"]);
    assert_eq!(o["mouths"], v["mouths"]);
    // rules: same flex, same operations; Valve leaves stale bytes in the payload of the
    // arithmetic operations (which read none), so payloads are compared for CONST (1), FETCH1
    // (2) and FETCH2 (3) only
    let (or, vr) = (
        o["rules"].as_array().unwrap(),
        v["rules"].as_array().unwrap(),
    );
    assert_eq!(or.len(), vr.len());
    for (i, (a, b)) in or.iter().zip(vr).enumerate() {
        assert_eq!(a["flex"], b["flex"], "rule {i}");
        let (ao, bo) = (a["ops"].as_array().unwrap(), b["ops"].as_array().unwrap());
        assert_eq!(ao.len(), bo.len(), "rule {i}");
        for (x, y) in ao.iter().zip(bo) {
            assert_eq!(x["op"], y["op"], "rule {i}");
            if (1..=3).contains(&x["op"].as_i64().unwrap()) {
                assert_eq!(x["d"], y["d"], "rule {i}");
            }
        }
    }
    // eyeballs: bone-space values within float noise of Valve's
    let (oe, ve) = (
        o["eyeballs"].as_array().unwrap(),
        v["eyeballs"].as_array().unwrap(),
    );
    assert_eq!(oe.len(), ve.len());
    for (a, b) in oe.iter().zip(ve) {
        for k in [
            "bone",
            "upperflexdesc",
            "lowerflexdesc",
            "upperlidflexdesc",
            "lowerlidflexdesc",
        ] {
            assert_eq!(a[k], b[k], "{k}");
        }
        for k in ["org", "up", "forward", "uppertarget", "lowertarget"] {
            assert!(close_list(&a[k], &b[k], 1e-3), "{k}: {} vs {}", a[k], b[k]);
        }
        for k in ["zoffset", "radius", "iris_scale"] {
            assert!((f(&a[k]) - f(&b[k])).abs() < 1e-4, "{k}");
        }
    }
    // the eyeball meshes are marked with their eyeball's index
    let marks = |j: &Value| -> Vec<(i64, i64, i64)> {
        j["meshes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["material"].as_i64().unwrap(),
                    m["materialtype"].as_i64().unwrap(),
                    m["materialparam"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(marks(&o), marks(&v));
}

// --- rules evaluated two ways ----------------------------------------------------------------

/// The QC's rules (`%name = expression`, `//` comments cut) from the given files, in order.
fn qc_rules(files: &[PathBuf]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(p).unwrap();
        for line in text.lines() {
            let line = line.split("//").next().unwrap().trim();
            if let Some(rest) = line.strip_prefix('%') {
                let (name, expr) = rest.split_once('=').unwrap();
                out.push((name.trim().to_string(), expr.trim().to_string()));
            }
        }
    }
    out
}

/// Division as the engine does it (`public/studio.cpp` RunFlexRules): 0 unless the divisor is
/// above 0.0001.
fn div(a: f64, b: f64) -> f64 {
    if b > 0.0001 {
        a / b
    } else {
        0.0
    }
}

/// A direct evaluator of a QC expression, written for this test: `+ -` then `* /`, unary minus,
/// parentheses, `min(a, b)`, `max(a, b)`; numbers read as `f32` like the file stores them.
struct Direct<'a> {
    t: Vec<String>,
    i: usize,
    ctrl: &'a HashMap<String, f64>,
    flex: &'a HashMap<String, f64>,
}

impl Direct<'_> {
    fn tokens(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        let b: Vec<char> = s.chars().collect();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_whitespace() {
                i += 1;
            } else if "+-*/(),".contains(c) {
                out.push(c.to_string());
                i += 1;
            } else {
                let s = i;
                while i < b.len()
                    && !c.is_whitespace()
                    && !"+-*/(),".contains(b[i])
                    && !b[i].is_whitespace()
                {
                    i += 1;
                }
                out.push(b[s..i].iter().collect());
            }
        }
        out
    }
    fn peek(&self) -> &str {
        self.t.get(self.i).map_or("", String::as_str)
    }
    fn next(&mut self) -> String {
        self.i += 1;
        self.t[self.i - 1].clone()
    }
    fn expr(&mut self) -> f64 {
        let mut v = self.term();
        while matches!(self.peek(), "+" | "-") {
            let op = self.next();
            let r = self.term();
            v = if op == "+" { v + r } else { v - r };
        }
        v
    }
    fn term(&mut self) -> f64 {
        let mut v = self.unary();
        while matches!(self.peek(), "*" | "/") {
            let op = self.next();
            let r = self.unary();
            v = if op == "*" { v * r } else { div(v, r) };
        }
        v
    }
    fn unary(&mut self) -> f64 {
        if self.peek() == "-" {
            self.next();
            return -self.unary();
        }
        let t = self.next();
        if t == "(" {
            let v = self.expr();
            assert_eq!(self.next(), ")");
            return v;
        }
        let l = t.to_ascii_lowercase();
        if l == "min" || l == "max" {
            assert_eq!(self.next(), "(");
            let a = self.expr();
            assert_eq!(self.next(), ",");
            let b = self.expr();
            assert_eq!(self.next(), ")");
            return if l == "min" { a.min(b) } else { a.max(b) };
        }
        if let Ok(n) = t.parse::<f32>() {
            return n as f64;
        }
        if let Some(name) = t.strip_prefix('%') {
            return self
                .flex
                .get(&name.to_ascii_lowercase())
                .copied()
                .unwrap_or(0.0);
        }
        *self
            .ctrl
            .get(&l)
            .unwrap_or_else(|| panic!("controller {t} in the QC but not in the file"))
    }
}

/// The engine's evaluation of a rule's operations (`public/studio.cpp` RunFlexRules).
fn run_ops(ops: &[Value], ctrl: &[f64], dest: &[f64]) -> f64 {
    let mut s: Vec<f64> = Vec::new();
    for o in ops {
        let d = o["d"].as_i64().unwrap() as usize;
        match o["op"].as_i64().unwrap() {
            1 => s.push(o["value"].as_f64().unwrap()),
            2 => s.push(ctrl[d]),
            3 => s.push(dest[d]),
            8 => {
                let a = s.pop().unwrap();
                s.push(-a);
            }
            op => {
                let b = s.pop().unwrap();
                let a = s.pop().unwrap();
                s.push(match op {
                    4 => a + b,
                    5 => a - b,
                    6 => a * b,
                    7 => div(a, b),
                    13 => a.max(b),
                    14 => a.min(b),
                    _ => panic!("op {op}"),
                });
            }
        }
    }
    assert_eq!(s.len(), 1, "a rule leaves one value");
    s[0]
}

/// Evaluates every rule of `mdl` the engine's way and the QC's expressions directly, on 1,000
/// random controller settings, and requires the same values.
fn rules_agree(mdl: &Path, rule_files: &[PathBuf]) {
    let Some(o) = face(mdl) else { return };
    let descs: Vec<String> = o["flexdescs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_ascii_lowercase())
        .collect();
    let ctrls = o["controllers"].as_array().unwrap();
    let rules = o["rules"].as_array().unwrap();
    let written = qc_rules(rule_files);
    assert_eq!(rules.len(), written.len(), "one rule per QC rule");
    let mut rng = common::Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..1000 {
        let values: Vec<f64> = ctrls
            .iter()
            .map(|c| {
                let (lo, hi) = (f(&c["min"]), f(&c["max"]));
                lo + (hi - lo) * (rng.below(10_001) as f64 / 10_000.0)
            })
            .collect();
        let by_name: HashMap<String, f64> = ctrls
            .iter()
            .zip(&values)
            .rev() // the first of two equal names wins
            .map(|(c, v)| (c["name"].as_str().unwrap().to_ascii_lowercase(), *v))
            .collect();
        let mut dest = vec![0.0; descs.len()];
        let mut flex: HashMap<String, f64> = HashMap::new();
        for (r, (name, expr)) in rules.iter().zip(&written) {
            let target = r["flex"].as_u64().unwrap() as usize;
            assert_eq!(descs[target], name.to_ascii_lowercase());
            let engine = run_ops(r["ops"].as_array().unwrap(), &values, &dest);
            let mut d = Direct {
                t: Direct::tokens(expr),
                i: 0,
                ctrl: &by_name,
                flex: &flex,
            };
            let direct = d.expr();
            assert_eq!(d.i, d.t.len(), "{expr}");
            assert!(
                (engine - direct).abs() <= 1e-9 * direct.abs().max(1.0),
                "%{name} = {expr}: engine {engine}, direct {direct}"
            );
            dest[target] = engine;
            flex.insert(name.to_ascii_lowercase(), engine);
        }
    }
}

#[test]
fn male01_rules_evaluate_as_their_expressions() {
    let Some(corpus) = corpus_dir() else { return };
    let qc = male01_dir(&corpus).join("male_01.qc");
    let mdl = build(&qc, "male01-rules");
    rules_agree(&mdl, &[qc]);
}

#[test]
fn male06_rules_evaluate_as_their_expressions() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = male06_dir(&corpus);
    let mdl = build(&dir.join("male_sdk/male_06_sdk.qc"), "male06-rules");
    rules_agree(
        &mdl,
        &[dir.join("facerules_xsi.qci"), dir.join("bodyrules_xsi.qci")],
    );
}

/// Every controller, rule, eyeball and mouth the male06 QC (and what it includes) writes is in
/// the file, counted from the QC text by this test.
#[test]
fn male06_builds_with_every_face_item_of_its_qc() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = male06_dir(&corpus);
    let mdl = build(&dir.join("male_sdk/male_06_sdk.qc"), "male06-count");
    let Some(o) = face(&mdl) else { return };
    source_common::oracle_check(&mdl);
    let mut controllers = 0;
    let mut eyeballs = 0;
    let mut mouths = 0;
    for file in [
        "male_sdk/male_06_sdk.qc",
        "facerules_xsi.qci",
        "bodyrules_xsi.qci",
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for line in text.lines() {
            let words: Vec<&str> = line
                .split("//")
                .next()
                .unwrap()
                .split_whitespace()
                .collect();
            match words.first().copied() {
                Some("flexcontroller") => {
                    // group, then names, `range a b` taking two numbers
                    let mut n = 0;
                    let mut k = 2;
                    while k < words.len() {
                        if words[k] == "range" {
                            k += 3;
                        } else {
                            n += 1;
                            k += 1;
                        }
                    }
                    controllers += n;
                }
                Some("eyeball") => eyeballs += 1,
                Some("mouth") => mouths += 1,
                _ => {}
            }
        }
    }
    let rules = qc_rules(&[dir.join("facerules_xsi.qci"), dir.join("bodyrules_xsi.qci")]);
    assert!(controllers > 40 && !rules.is_empty());
    assert_eq!(o["controllers"].as_array().unwrap().len(), controllers);
    assert_eq!(o["rules"].as_array().unwrap().len(), rules.len());
    assert_eq!(o["eyeballs"].as_array().unwrap().len(), eyeballs);
    assert_eq!(o["mouths"].as_array().unwrap().len(), mouths);
    // each eyeball's mesh is marked
    let marked = o["meshes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["materialtype"] == 1)
        .count();
    assert_eq!(marked, eyeballs);
}

// --- a small fixture, worked out by hand ----------------------------------------------------

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/face")
}

/// `testdata/source/face`: bone `head` at (0, 0, 60) turned 90° about Z, so model space maps
/// into its space by `(x, y, z) ↦ (y − 0, −x, z − 60)`. The eyeball at (1.5, −3, 62) lies at
/// (−3, −1.5, 2) there; up (0, 0, 1) stays (0, 0, 1); forward (0, −1, 0) becomes (−1, 0, 0);
/// diameter 1 → radius 0.5; angle 4° → zoffset tan 4° = 0.0699268; iris scale 0.5 → 2.
#[test]
fn fixture_eyeball_has_the_values_worked_out_by_hand() {
    let mdl = build(&fixture_dir().join("face.qc"), "fixture");
    let Some(o) = face(&mdl) else { return };
    source_common::oracle_check(&mdl);
    let e = &o["eyeballs"][0];
    assert_eq!(o["eyeballs"].as_array().unwrap().len(), 1);
    assert_eq!(e["bone"], 1);
    let want = serde_json::json!({
        "org": [-3.0, -1.5, 2.0], "up": [0.0, 0.0, 1.0], "forward": [-1.0, 0.0, 0.0]
    });
    for k in ["org", "up", "forward"] {
        assert!(close_list(&e[k], &want[k], 1e-5), "{k}: {}", e[k]);
    }
    assert!((f(&e["radius"]) - 0.5).abs() < 1e-6);
    assert!((f(&e["zoffset"]) - 0.069_926_8).abs() < 1e-6);
    assert!((f(&e["iris_scale"]) - 2.0).abs() < 1e-6);
    // the mesh of material `eye_r` (the second texture) is eyeball 0's
    let marks: Vec<(i64, i64, i64)> = o["meshes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["material"].as_i64().unwrap(),
                m["materialtype"].as_i64().unwrap(),
                m["materialparam"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(marks, [(0, 0, 0), (1, 1, 0)]);
    // the eyelid's four flexes come first (the lid, then its shapes in the order written),
    // then `mouth`, `default`, the flex file's, the pair's R and L, the local variable
    assert_eq!(
        o["flexdescs"],
        serde_json::json!([
            "upper_r",
            "upper_r_lowerer",
            "upper_r_neutral",
            "upper_r_raiser",
            "mouth",
            "default",
            "smile",
            "browR",
            "browL",
            "open"
        ])
    );
    assert_eq!(
        o["mouths"],
        serde_json::json!([{"bone": 1, "forward": [0.0, 1.0, 0.0], "flexdesc": 4}])
    );
    assert_eq!(e["upperlidflexdesc"], 0);
    assert_eq!(e["upperflexdesc"], serde_json::json!([1, 2, 3]));
    assert!(close_list(
        &e["uppertarget"],
        &serde_json::json!([-0.3, 0.1, 0.25]),
        1e-6
    ));
    assert_eq!(e["lowerlidflexdesc"], 0);
    // `$maxeyedeflection 20`: the engine reads a cosine (`studio.h`: "default to cos(30)")
    let cos20 = f64::from(20f32.to_radians().cos());
    assert!((f(&o["header"]["flMaxEyeDeflection"]) - cos20).abs() < 1e-6);
}

/// One flex of the oracle's output: (flexdesc, targets, flexpair, vertices as (position,
/// delta, side, speed) sorted by position).
type Flex = (i64, Vec<f64>, i64, Vec<([f64; 3], [f64; 3], f64, f64)>);

fn flexes_of(o: &Value) -> Vec<Vec<Flex>> {
    let v3 = |v: &Value| -> [f64; 3] {
        let a = v.as_array().unwrap();
        [f(&a[0]), f(&a[1]), f(&a[2])]
    };
    o["flexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|mesh| {
            mesh.as_array()
                .unwrap()
                .iter()
                .map(|fl| {
                    let mut verts: Vec<([f64; 3], [f64; 3], f64, f64)> = fl["verts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| {
                            (
                                v3(&v["pos"]),
                                v3(&v["delta"]),
                                f(&v["side"]),
                                f(&v["speed"]),
                            )
                        })
                        .collect();
                    verts.sort_by(|a, b| a.partial_cmp(b).unwrap());
                    (
                        fl["flexdesc"].as_i64().unwrap(),
                        fl["targets"].as_array().unwrap().iter().map(f).collect(),
                        fl["flexpair"].as_i64().unwrap(),
                        verts,
                    )
                })
                .collect()
        })
        .collect()
}

/// The fixture's flexes decoded from the file (positions from the VVD, half-float deltas),
/// against face.vta worked out by hand: each moved vertex moves by its shape minus the base
/// shape; `smile`'s speeds are each delta's length over the longest (0.25 / 0.5 → 127/255);
/// the pair `brow` split at x = ±1 keeps full size and stores the fade as `side`: 0 at x = −2,
/// smoothstep(0.5) = 0.5 → 127/255 at x = 0, 1 at x = 2; the eyelid's lowerer and raiser frames
/// move the eye's top vertex by −0.2 and +0.1 (the neutral is frame 0, which moves nothing).
#[test]
fn fixture_flexes_move_vertices_by_the_vta_deltas() {
    let mdl = build(&fixture_dir().join("face.qc"), "fixture-flexes");
    let Some(o) = face(&mdl) else { return };
    let half = 1.0 / 1024.0; // half-float precision at these sizes, with truncation
    let got = flexes_of(&o);
    let third = 127.0 / 255.0;
    let want: Vec<Vec<Flex>> = vec![
        // mesh 0 (`skin`): smile, then the pair
        vec![
            (
                6,
                vec![0.0, 1.0, 10.0, 11.0],
                0,
                vec![
                    ([-2.0, -3.0, 64.0], [-0.25, 0.0, 0.0], 0.0, third),
                    ([0.0, -3.0, 64.0], [0.0, 0.0, 0.5], 0.0, 1.0),
                ],
            ),
            (
                7,
                vec![0.0, 1.0, 10.0, 11.0],
                8,
                vec![
                    ([-2.0, -3.0, 60.0], [0.0, 0.0, 1.0], 0.0, 1.0),
                    ([0.0, -3.0, 64.0], [0.0, 0.0, 1.0], third, 1.0),
                    ([2.0, -3.0, 60.0], [0.0, 0.0, 1.0], 1.0, 1.0),
                ],
            ),
        ],
        // mesh 1 (`eye_r`): the eyelid's lowerer and raiser keys
        vec![
            (
                0,
                vec![-11.0, -10.0, -0.3, 0.1],
                0,
                vec![([1.5, -3.5, 62.5], [0.0, 0.0, -0.2], 0.0, 1.0)],
            ),
            (
                0,
                vec![0.1, 0.25, 10.0, 11.0],
                0,
                vec![([1.5, -3.5, 62.5], [0.0, 0.0, 0.1], 0.0, 1.0)],
            ),
        ],
    ];
    assert_eq!(got.len(), want.len());
    for (gm, wm) in got.iter().zip(&want) {
        assert_eq!(gm.len(), wm.len(), "{gm:?}");
        for (g, w) in gm.iter().zip(wm) {
            assert_eq!((g.0, g.2), (w.0, w.2));
            assert!(
                g.1.iter().zip(&w.1).all(|(a, b)| (a - b).abs() < 1e-6),
                "{g:?}"
            );
            assert_eq!(g.3.len(), w.3.len(), "{g:?}");
            for (gv, wv) in g.3.iter().zip(&w.3) {
                assert_eq!(gv.0, wv.0);
                for k in 0..3 {
                    assert!(
                        (gv.1[k] - wv.1[k]).abs() <= half * wv.1[k].abs().max(0.25),
                        "{gv:?} {wv:?}"
                    );
                }
                assert!(
                    (gv.2 - wv.2).abs() < 1e-9 && (gv.3 - wv.3).abs() < 1e-9,
                    "{gv:?} {wv:?}"
                );
            }
        }
    }
}

/// Valve's build of male01 against ours: per mesh the same flexes in the same order (flex,
/// targets, pair), and each moves the vertices at the same positions by the same deltas, within
/// half-float precision (the vertices' order inside a mesh is mdlc's own).
#[test]
fn male01_flexes_match_valves_build() {
    let Some(corpus) = corpus_dir() else { return };
    let ours = build(&male01_dir(&corpus).join("male_01.qc"), "male01-flexes");
    let valve = corpus
        .join("mapbase-mp-male01/compiled/VPKs/base_content/models/player/rebels/male_gr01_01.mdl");
    let (Some(o), Some(v)) = (face(&ours), face(&valve)) else {
        return;
    };
    let (go, gv) = (flexes_of(&o), flexes_of(&v));
    assert_eq!(go.len(), gv.len());
    let mut moved = 0;
    for (m, (a, b)) in go.iter().zip(&gv).enumerate() {
        assert_eq!(a.len(), b.len(), "mesh {m}");
        for (x, y) in a.iter().zip(b) {
            assert_eq!((x.0, x.2), (y.0, y.2), "mesh {m}");
            assert!(x.1.iter().zip(&y.1).all(|(p, q)| (p - q).abs() < 1e-6));
            assert_eq!(x.3.len(), y.3.len(), "mesh {m} flex {}", x.0);
            for (p, q) in x.3.iter().zip(&y.3) {
                for k in 0..3 {
                    assert!(
                        (p.0[k] - q.0[k]).abs() < 1e-3,
                        "mesh {m} flex {}: {p:?} {q:?}",
                        x.0
                    );
                    let tol = 2.0 / 1024.0 * q.1[k].abs().max(0.01);
                    assert!(
                        (p.1[k] - q.1[k]).abs() <= tol,
                        "mesh {m} flex {}: {p:?} {q:?}",
                        x.0
                    );
                }
                assert!((p.2 - q.2).abs() <= 1.0 / 255.0 + 1e-9, "side {p:?} {q:?}");
                assert!((p.3 - q.3).abs() <= 1.0 / 255.0 + 1e-9, "speed {p:?} {q:?}");
                moved += 1;
            }
        }
    }
    assert!(moved > 1000, "{moved}");
}

#[test]
fn fixture_rules_with_every_operator_evaluate_as_written() {
    let qc = fixture_dir().join("face.qc");
    let mdl = build(&qc, "fixture-rules");
    rules_agree(&mdl, &[qc]);
}

// --- errors -------------------------------------------------------------------------------------

/// Builds a QC (written next to a copy of the fixture's head.smd) and returns every
/// diagnostic as (code, line), and whether any model file was written.
fn diagnose(qc: &str, name: &str) -> (Vec<(String, u64)>, bool) {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("faces-err-{name}")));
    std::fs::copy(fixture_dir().join("head.smd"), dir.join("head.smd")).unwrap();
    std::fs::copy(fixture_dir().join("face.vta"), dir.join("face.vta")).unwrap();
    std::fs::write(dir.join("f.qc"), qc).unwrap();
    let out = mdlc(
        &["build", "f.qc", "-o", "out", "--message-format", "json"],
        &dir,
    );
    let found: Vec<(String, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["severity"] != "note")
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let wrote = dir.join("out").exists()
        && !common::files_with_ext(&dir.join("out"), &["mdl", "vvd", "vtx"]).is_empty();
    let errors = !out.status.success();
    assert!(errors || found.iter().all(|(c, _)| c.starts_with('W')));
    (found, wrote)
}

fn head(block: &str) -> String {
    format!("$modelname \"t.mdl\"\n$cdmaterials \"m\"\n$model \"head\" \"head.smd\" {{\n{block}\n}}\n$sequence idle \"head.smd\"\n")
}

#[test]
fn face_errors_point_at_their_line_and_write_nothing() {
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, u64)]);
    let cases: &[Case] = &[
        (
            "bone",
            "eyeball \"e\" \"skull\" 0 0 60 \"eye_r\" 1 4 \"iris\" 0.5\nmouth 0 \"mouth\" \"jaw\" 0 1 0",
            &[("E0415", 4), ("E0415", 5)],
        ),
        (
            "material",
            "eyeball \"e\" \"head\" 0 0 60 \"eye_l\" 1 4 \"iris\" 0.5",
            &[("E0416", 4)],
        ),
        (
            "controller",
            "flexcontroller mouth smile\nlocalvar open\n%open = smile * frwn",
            &[("E0418", 6)],
        ),
        (
            "flex",
            "flexcontroller mouth smile\n%opn = smile\nlocalvar open\n%open = %shut",
            &[("E0419", 5), ("E0419", 7)],
        ),
    ];
    let eye = "eyeball \"e\" \"head\" 1.5 -3 62 \"eye_r\" 1 4 \"iris\" 0.5\n";
    let more: &[Case] = &[
        (
            "lid-range",
            &format!("{eye}eyelid upper_r \"face.vta\" lowerer 3 -0.7 neutral 0 0.1 raiser 4 0.2 eyeball \"e\""),
            &[("E0417", 5)],
        ),
        (
            "not-vta",
            "flexfile \"head.smd\" {\nflex \"a\" frame 1\n}",
            &[("E0421", 4)],
        ),
        (
            "frame",
            "flexfile \"face.vta\" {\nflex \"a\" frame 1\nflex \"b\" frame 9\n}",
            &[("E0422", 6)],
        ),
    ];
    for (name, block, want) in cases.iter().chain(more) {
        let (found, wrote) = diagnose(&head(block), name);
        let want: Vec<(String, u64)> = want.iter().map(|(c, l)| (c.to_string(), *l)).collect();
        assert_eq!(found, want, "{name}");
        assert!(!wrote, "{name}: an error must leave no output");
    }
    // warnings: the model is written
    let (found, wrote) = diagnose(
        &head(&format!("{eye}eyelid upper_r \"face.vta\" lowerer 3 -0.2 neutral 0 0.1 raiser 4 0.2 eyeball \"eye\"")),
        "no-eyeball",
    );
    assert_eq!(found, [("W0412".to_string(), 5)]);
    assert!(wrote);
    // the limit: 97 controllers
    let names: Vec<String> = (0..97).map(|i| format!("c{i}")).collect();
    let (found, wrote) = diagnose(
        &head(&format!("flexcontroller g {}", names.join(" "))),
        "limit",
    );
    assert_eq!(found, [("E0420".to_string(), 4)]);
    assert!(!wrote);
}

/// Valve's compiler reads face numbers with `verify_atof` (C `atof` after a check of the first
/// character): an eye centre written with decimal commas (`-3,80436`, Scentus' pony QCs) is read
/// up to the comma, with W0224 at each such number, and gives the eye of the whole numbers.
#[test]
fn face_numbers_with_a_decimal_comma_are_read_as_valves_atof_does() {
    let (found, wrote) = diagnose(
        &head("eyeball \"e\" \"head\" 1,5 -3,2 62 \"eye_r\" 1 4 \"iris\" 0.5"),
        "comma",
    );
    assert_eq!(found, [("W0224".to_string(), 4), ("W0224".to_string(), 4)]);
    assert!(wrote);
    let comma = Path::new(env!("CARGO_TARGET_TMPDIR")).join("faces-err-comma/out/t.mdl");
    let comma = common::inspect_json(&comma)["mdl"]["face"]["eyeballs"].clone();
    let (found, _) = diagnose(
        &head("eyeball \"e\" \"head\" 1 -3 62 \"eye_r\" 1 4 \"iris\" 0.5"),
        "whole",
    );
    assert!(found.is_empty(), "{found:?}");
    let whole = Path::new(env!("CARGO_TARGET_TMPDIR")).join("faces-err-whole/out/t.mdl");
    let whole = common::inspect_json(&whole)["mdl"]["face"]["eyeballs"].clone();
    assert_eq!(comma.as_array().map(Vec::len), Some(1), "{comma}");
    assert_eq!(comma, whole);
    // a word Valve's check refuses is still an error
    let (found, wrote) = diagnose(
        &head("eyeball \"e\" \"head\" x1 -3 62 \"eye_r\" 1 4 \"iris\" 0.5"),
        "word",
    );
    assert_eq!(found, [("E0237".to_string(), 4)]);
    assert!(!wrote);
}

/// `mdlc build f.qc` in `dir` with JSON diagnostics: the process's output and the diagnostics.
fn build_f_qc(dir: &Path) -> (std::process::Output, Vec<Value>) {
    let out = mdlc(
        &[
            "build",
            "f.qc",
            "-o",
            "out",
            "--force",
            "--message-format",
            "json",
        ],
        dir,
    );
    let diags = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    (out, diags)
}

/// A VTA whose moving vertex lies far from every mesh vertex: the motion is dropped with W0413
/// (at the base shape); a shape moving a vertex its base shape lacks is E0421.
#[test]
fn vta_vertices_that_match_nothing_are_reported() {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join("faces-vta-far"));
    std::fs::copy(fixture_dir().join("head.smd"), dir.join("head.smd")).unwrap();
    let vta = |moved: &str| {
        format!(
            "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\ntime 1\nend\nvertexanimation\ntime 0\n0 0 -3 64 0 -1 0\n1 50 50 50 0 0 1\ntime 1\n{moved}\nend\n"
        )
    };
    std::fs::write(dir.join("far.vta"), vta("1 50 50 51 0 0 1")).unwrap();
    std::fs::write(dir.join("bad.vta"), vta("7 0 -3 65 0 -1 0")).unwrap();
    for (file, want, ok) in [
        ("far.vta", ("W0413", 11), true),
        ("bad.vta", ("E0421", 14), false),
    ] {
        let qc = head(&format!("flexfile \"{file}\" {{\nflex \"a\" frame 1\n}}"));
        std::fs::write(dir.join("f.qc"), qc).unwrap();
        let (out, diags) = build_f_qc(&dir);
        let found: Vec<(String, String, u64)> = diags
            .iter()
            .filter(|d| d["severity"] != "note")
            .map(|d| {
                (
                    d["code"].as_str().unwrap().to_string(),
                    d["file"].as_str().unwrap().to_string(),
                    d["line"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [(want.0.to_string(), file.to_string(), want.1)],
            "{file}"
        );
        assert_eq!(out.status.success(), ok, "{file}");
    }
}

/// A VTA that repeats a vertex (one VTA vertex per triangle corner, as Blender Source Tools and
/// the SDK's male_06 write them): the mesh vertex takes one of the repeats, and a repeat moving
/// the same way loses nothing, so it is no W0413; a repeat moving another way is.
#[test]
fn repeated_vta_vertices_that_move_alike_are_not_reported() {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join("faces-vta-twins"));
    std::fs::copy(fixture_dir().join("head.smd"), dir.join("head.smd")).unwrap();
    let vta = |moved: &str| {
        format!(
            "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\ntime 1\nend\nvertexanimation\ntime 0\n0 0 -3 64 0 -1 0\n1 0 -3 64 0 -1 0\ntime 1\n{moved}\nend\n"
        )
    };
    for (moved, warned) in [
        ("0 0 -3 65 0 -1 0\n1 0 -3 65 0 -1 0", false),
        ("0 0 -3 65 0 -1 0\n1 0 -3 66 0 -1 0", true),
    ] {
        std::fs::write(dir.join("twin.vta"), vta(moved)).unwrap();
        let qc = head("flexfile \"twin.vta\" {\nflex \"a\" frame 1\n}");
        std::fs::write(dir.join("f.qc"), qc).unwrap();
        let (out, diags) = build_f_qc(&dir);
        assert!(out.status.success());
        let codes: Vec<String> = diags
            .iter()
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            codes.iter().any(|c| c == "W0413"),
            warned,
            "{moved}: {codes:?}"
        );
    }
}

/// `mdlc inspect --flex` prints the flex's vertices with their decoded deltas (the fixture's
/// pair `brow`: three vertices moved up by 1, sides 0, 127/255, 1); an unknown name is E0655.
#[test]
fn inspect_flex_prints_the_deltas_of_one_flex() {
    let mdl = build(&fixture_dir().join("face.qc"), "inspect-flex");
    let v = common::inspect_json_with(&mdl, &["--flex", "browr"]);
    assert_eq!(v["flex"], "browR");
    let rows = v["vertices"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let mut got: Vec<(Vec<f64>, Vec<f64>, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["pos"].as_array().unwrap().iter().map(f).collect(),
                r["delta"].as_array().unwrap().iter().map(f).collect(),
                f(&r["side"]),
            )
        })
        .collect();
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let want = [
        ([-2.0, -3.0, 60.0], 0.0),
        ([0.0, -3.0, 64.0], 127.0 / 255.0),
        ([2.0, -3.0, 60.0], 1.0),
    ];
    for ((pos, delta, side), (wp, ws)) in got.iter().zip(want) {
        assert_eq!(pos, &wp.to_vec());
        assert_eq!(delta, &vec![0.0, 0.0, 1.0]);
        assert!((side - ws).abs() < 1e-7, "{side} {ws}");
    }
    let bad = mdlc(
        &[
            "inspect",
            mdl.to_str().unwrap(),
            "--flex",
            "nose",
            "--color",
            "never",
        ],
        Path::new("."),
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("error[E0655]"));
}

/// A model without a face keeps Valve's empty-face layout (checked on Valve's build of the
/// bunker gun, which has pose parameters): every flex index, the controller UI's too, is where
/// the IK chains start (and the pose parameters).
#[test]
fn a_model_without_a_face_keeps_valves_empty_layout() {
    let Some(corpus) = corpus_dir() else { return };
    let ours = build(
        &corpus.join("mapbase-bunker-gun01/modelsrc/weapons/bunker_gun01/bunker_gun01.qc"),
        "no-face",
    );
    let valve = corpus.join(
        "mapbase-bunker-gun01/compiled/VPKs/hl2_mapbase_content/models/props_combine/bunker_gun01.mdl",
    );
    for mdl in [ours, valve] {
        let Some(o) = face(&mdl) else { return };
        let h = &o["header"];
        let i = |k: &str| h[k].as_i64().unwrap();
        assert!(i("numlocalposeparameters") > 0);
        for k in [
            "flexdescindex",
            "flexcontrollerindex",
            "flexruleindex",
            "flexcontrolleruiindex",
            "mouthindex",
            "localposeparamindex",
        ] {
            assert_eq!(i(k), i("ikchainindex"), "{k} of {}", mdl.display());
        }
        assert!(o["flexdescs"].as_array().unwrap().is_empty());
        assert_eq!(f(&o["header"]["flMaxEyeDeflection"]), 0.0);
    }
}

fn face_dmx_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/face_dmx")
}

/// A file of `testdata/source/face_dmx` as text.
fn face_dmx(name: &str) -> String {
    std::fs::read_to_string(face_dmx_dir().join(name)).unwrap()
}

/// A QC that uses the DMX head through `$body` (no `$model` block).
const DMX_BODY_QC: &str =
    "$modelname \"test/body.mdl\"\n$body \"head\" \"head.dmx\"\n$sequence \"idle\" \"head.dmx\"\n";

/// `qc` built in a fresh folder `faces-dmx-<name>` beside a `head.dmx` holding `dmx`: the
/// folder (outputs under `out/`), whether the build succeeded, and its stderr.
fn build_dmx(name: &str, dmx: &str, qc: &str) -> (PathBuf, bool, String) {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("faces-dmx-{name}")));
    std::fs::write(dir.join("head.dmx"), dmx).unwrap();
    std::fs::write(dir.join("model.qc"), qc).unwrap();
    let out = common::build_into_out(&dir.join("model.qc"), &dir);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (dir, out.status.success(), err)
}

/// `testdata/source/face_dmx`: the `skin` triangles of the face fixture as a DMX mesh whose own
/// flex shapes (`deltaStates`) move them as `face.vta`'s frames 1 (`smile`) and 2 (`brow`) do;
/// `brow` is a stereo control of the file's combination operator. Read back by the face
/// oracle, worked out by hand from the file, and checked against the VTA build:
/// * descriptions: one per shape, a stereo one as `browL` then `browR` (the order of Valve's
///   build of `alastor_rel.qc`, issue 16's notes), before the block's own;
/// * `smile`'s deltas and `brow`'s equal those of the same frames of `face.vta` in the fixture's
///   build (positions from the VVD);
/// * every vertex's side is its `balance` (1 at x = −2, 0.5 → 127/255 at x = 0, 0 at x = 2),
///   for the plain shape too, and the stereo key has `browR` as its pair; no decay, so every
///   speed is 1; targets 0, 1, 10, 11 — all as in that Valve build.
#[test]
fn dmx_flex_shapes_move_vertices_as_their_vta_twins() {
    let mdl = build(&face_dmx_dir().join("face_dmx.qc"), "dmx-flexes");
    let vta_mdl = build(&fixture_dir().join("face.qc"), "dmx-flexes-vta");
    let (Some(o), Some(v)) = (face(&mdl), face(&vta_mdl)) else {
        return;
    };
    source_common::oracle_check(&mdl);
    let names: Vec<&str> = o["flexdescs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(names, ["smile", "browL", "browR"]);
    let got = flexes_of(&o);
    let half = 127.0 / 255.0;
    let want: Vec<Flex> = vec![
        (
            0,
            vec![0.0, 1.0, 10.0, 11.0],
            0,
            vec![
                ([-2.0, -3.0, 64.0], [-0.25, 0.0, 0.0], 1.0, 1.0),
                ([0.0, -3.0, 64.0], [0.0, 0.0, 0.5], half, 1.0),
            ],
        ),
        (
            1,
            vec![0.0, 1.0, 10.0, 11.0],
            2,
            vec![
                ([-2.0, -3.0, 60.0], [0.0, 0.0, 1.0], 1.0, 1.0),
                ([0.0, -3.0, 64.0], [0.0, 0.0, 1.0], half, 1.0),
                ([2.0, -3.0, 60.0], [0.0, 0.0, 1.0], 0.0, 1.0),
            ],
        ),
    ];
    assert_eq!(got, vec![want.clone()]);
    // the VTA build's `smile` (description 6) and `brow` pair (7): the same moved vertices
    // by the same deltas
    let vta = flexes_of(&v);
    let moves =
        |f: &Flex| -> Vec<([f64; 3], [f64; 3])> { f.3.iter().map(|x| (x.0, x.1)).collect() };
    let by_desc = |d: i64| vta[0].iter().find(|f| f.0 == d).unwrap();
    assert_eq!(moves(&want[0]), moves(by_desc(6)));
    assert_eq!(moves(&want[1]), moves(by_desc(7)));
}

/// Without `noautodmxrules`, Valve's later compilers make flex controllers and rules of the
/// DMX's controls; mdlc does not (no Valve build of such a model is at hand to check how), so
/// it builds the shapes, says W0421 at the mesh's file name, and still writes the model. A DMX
/// used by `$body` (no block to say `noautodmxrules` in) is reported the same way; its shapes
/// are built too.
#[test]
fn dmx_flex_shapes_without_noautodmxrules_are_built_and_reported() {
    let auto = face_dmx("face_dmx.qc").replace("\tnoautodmxrules\n", "");
    for (name, qc, at, mdl) in [
        ("auto", auto.as_str(), "model.qc:6:15", "face_dmx.mdl"),
        ("body", DMX_BODY_QC, "model.qc:2:14", "body.mdl"),
    ] {
        let (dir, ok, err) = build_dmx(name, &face_dmx("head.dmx"), qc);
        assert!(ok, "{err}");
        let codes: Vec<&str> = err
            .lines()
            .filter_map(|l| {
                l.strip_prefix("warning[")
                    .or_else(|| l.strip_prefix("error["))
            })
            .map(|l| &l[..5])
            .collect();
        assert_eq!(codes, ["W0421"], "{err}");
        assert!(err.contains(at), "{err}");
        assert!(
            err.contains("the 2 flex shapes of `head.dmx` are built"),
            "{err}"
        );
        let mdl = dir.join("out/test").join(mdl);
        let m = common::inspect_json(&mdl);
        assert_eq!(
            m["mdl"]["face"]["flex_descs"],
            serde_json::json!(["smile", "browL", "browR"])
        );
    }
}

/// A DMX mesh re-posed onto its `$definebone` skeleton (`tests/repose.rs`) takes its flex
/// shapes along: with `head` defined 2 units above the file's pose, every moved vertex is 2
/// units higher, its delta and side unchanged, and none is lost (no W0413).
#[test]
fn dmx_flex_shapes_follow_their_reposed_mesh() {
    let qc = face_dmx("face_dmx.qc").replace(
        "$model",
        "$definebone \"root\" \"\" 0 0 0 0 0 0\n$definebone \"head\" \"root\" 0 0 62 0 90 0\n$model",
    );
    let (dir, ok, err) = build_dmx("repose", &face_dmx("head.dmx"), &qc);
    assert!(ok, "{err}");
    assert!(!err.contains("warning["), "{err}");
    let moved = dir.join("out/test/face_dmx.mdl");
    let plain = build(&face_dmx_dir().join("face_dmx.qc"), "dmx-flexes-plain");
    let (Some(m), Some(p)) = (face(&moved), face(&plain)) else {
        return;
    };
    let (fm, fp) = (flexes_of(&m), flexes_of(&p));
    assert_eq!(fm.len(), fp.len());
    for (a, b) in fm[0].iter().zip(&fp[0]) {
        assert_eq!((a.0, &a.1, a.2, a.3.len()), (b.0, &b.1, b.2, b.3.len()));
        for (x, y) in a.3.iter().zip(&b.3) {
            let up = [y.0[0], y.0[1], y.0[2] + 2.0];
            assert!(
                x.0.iter().zip(up).all(|(p, q)| (p - q).abs() < 1e-4),
                "{x:?} {y:?}"
            );
            assert!(
                x.1.iter().zip(y.1).all(|(p, q)| (p - q).abs() < 1e-3),
                "{x:?} {y:?}"
            );
            assert_eq!((x.2, x.3), (y.2, y.3));
        }
    }
}

/// A DMX gives normals, and normal deltas, per corner. Here corner 4 repeats corner 0's position
/// and texture coordinates with a normal 0.0001 away, and only its normal moves in `brow`: the
/// weld makes one vertex of the two, which keeps one normal delta. That is not motion lost (the
/// position moves the same way), so no W0413 (it was reported before DMX shapes counted only
/// position motion), and the vertex moves up by 1 as its twin does.
#[test]
fn dmx_corners_welded_with_their_normal_deltas_are_not_reported() {
    let dmx = face_dmx("head.dmx");
    let edits = [
        (
            r#""faces" "int_array" [ "0", "1", "2", "-1", "0", "2", "3", "-1" ]"#,
            r#""faces" "int_array" [ "0", "1", "2", "-1", "4", "2", "3", "-1" ]"#,
        ),
        (
            "\"positionsIndices\" \"int_array\" [ \"0\", \"1\", \"2\", \"3\" ]\n\t\"normals\"",
            "\"positionsIndices\" \"int_array\" [ \"0\", \"1\", \"2\", \"3\", \"0\" ]\n\t\"normals\"",
        ),
        (
            r#""normals" "vector3_array" [ "0 -1 0" ]"#,
            r#""normals" "vector3_array" [ "0 -1 0", "0.0001 -1 0" ]"#,
        ),
        (
            r#""normalsIndices" "int_array" [ "0", "0", "0", "0" ]"#,
            r#""normalsIndices" "int_array" [ "0", "0", "0", "0", "1" ]"#,
        ),
        (
            r#""textureCoordinatesIndices" "int_array" [ "0", "1", "2", "3" ]"#,
            r#""textureCoordinatesIndices" "int_array" [ "0", "1", "2", "3", "0" ]"#,
        ),
        (
            r#""balanceIndices" "int_array" [ "0", "1", "2", "3" ]"#,
            r#""balanceIndices" "int_array" [ "0", "1", "2", "3", "0" ]"#,
        ),
        (
            r#""positionsIndices" "int_array" [ "0", "1", "2" ]"#,
            r#""positionsIndices" "int_array" [ "0", "1", "2" ]
								"normals" "vector3_array" [ "0 0 0.1" ]
								"normalsIndices" "int_array" [ "1" ]"#,
        ),
    ];
    let mut text = dmx.clone();
    for (from, to) in edits {
        assert_eq!(text.matches(from).count(), 1, "{from}");
        text = text.replace(from, to);
    }
    let (dir, ok, err) = build_dmx("twins", &text, &face_dmx("face_dmx.qc"));
    assert!(ok, "{err}");
    assert!(!err.contains("warning["), "{err}");
    let Some(o) = face(&dir.join("out/test/face_dmx.mdl")) else {
        return;
    };
    let brow = &flexes_of(&o)[0][1];
    // one vertex at (−2, −3, 60): the two corners were welded
    assert_eq!(brow.3.len(), 3, "{brow:?}");
    assert!(
        brow.3
            .contains(&([-2.0, -3.0, 60.0], [0.0, 0.0, 1.0], 1.0, 1.0)),
        "{brow:?}"
    );
}

/// A face made only of a DMX mesh's shapes is held to the engine's limits too: 1,025 more delta
/// states beside the fixture's two make 1,028 flex descriptions (`brow` is two), more than
/// `MAXSTUDIOFLEXDESC` (1,024), reported (E0420) at
/// the mesh, with nothing written.
#[test]
fn too_many_dmx_shapes_are_an_error_at_the_mesh() {
    let dmx = face_dmx("head.dmx");
    let shapes: Vec<String> = (0..1025)
        .map(|i| format!("\"DmeVertexDeltaData\" {{ \"name\" \"string\" \"s{i}\" }}"))
        .collect();
    let at = dmx.find("\"deltaStates\" \"element_array\"").unwrap();
    let open = at + dmx[at..].find('[').unwrap();
    let text = format!(
        "{}[ {}, {}",
        &dmx[..open],
        shapes.join(", "),
        &dmx[open + 1..]
    );
    let (dir, ok, err) = build_dmx("limit", &text, DMX_BODY_QC);
    assert!(!ok, "{err}");
    assert!(
        err.contains(
            "error[E0420]: the model has 1028 flex descriptions; the engine reads at most 1024"
        ),
        "{err}"
    );
    assert!(err.contains("model.qc:2:14"), "{err}");
    assert!(!dir.join("out/test/body.mdl").exists());
}
