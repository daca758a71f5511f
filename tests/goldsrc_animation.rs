#![allow(clippy::unwrap_used, clippy::expect_used)]
//! GoldSrc skeleton and animation stage against Valve's own output: every goldsrc-hl1 QC with
//! an expected file, gs-chrome-sphere and gs-man. The expected `.mdl` files are parsed here
//! (`goldsrc.md` §4) independently of mdlc's reader; the geometry the stage needs (bone-local
//! vertices) is taken from the expected file too, so this test checks the animation stage alone.

mod common;
use common::corpus_dir;

use std::path::{Path, PathBuf};

use mdlc::diag::{Diagnostic, Sources};
use mdlc::driver::{self, InputKind};
use mdlc::formats::goldsrc::animation::{build_animation, Animation};
use mdlc::formats::goldsrc::geometry::Geometry;
use mdlc::formats::goldsrc::model::{GsBodyPart, GsModelData};
use mdlc::load::fs::RealFs;
use mdlc::project::Target;

// --- a minimal independent reader of MDL v10 ---------------------------------------------------

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn i32(&self, at: usize) -> i32 {
        i32::from_le_bytes(self.0[at..at + 4].try_into().unwrap())
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.0[at..at + 2].try_into().unwrap())
    }
    fn f32(&self, at: usize) -> f32 {
        f32::from_le_bytes(self.0[at..at + 4].try_into().unwrap())
    }
    fn vec3(&self, at: usize) -> [f32; 3] {
        [self.f32(at), self.f32(at + 4), self.f32(at + 8)]
    }
    fn name(&self, at: usize, len: usize) -> String {
        let raw = &self.0[at..at + len];
        let end = raw.iter().position(|&b| b == 0).unwrap_or(len);
        String::from_utf8_lossy(&raw[..end]).into_owned()
    }
}

#[derive(Debug, PartialEq)]
struct Bone {
    name: String,
    parent: i32,
    controllers: [i32; 6],
    value: [u32; 6],
    scale: [u32; 6],
}

#[derive(Debug, PartialEq)]
struct Seq {
    label: String,
    fps: u32,
    flags: i32,
    activity: i32,
    actweight: i32,
    numframes: i32,
    motiontype: i32,
    linear: [u32; 3],
    bbmin: [u32; 3],
    bbmax: [u32; 3],
    numblends: i32,
    blendtype: [i32; 2],
    blendstart: [u32; 2],
    blendend: [u32; 2],
    seqgroup: i32,
    entry: i32,
    exit: i32,
    nodeflags: i32,
    events: Vec<(i32, i32, String)>,
    pivots: Vec<(i32, i32)>,
}

#[derive(Debug, PartialEq)]
struct Hitbox {
    bone: i32,
    group: i32,
    min: [u32; 3],
    max: [u32; 3],
}

/// Per blend, per bone, per channel: a stream's words (None = offset 0).
type Streams = Vec<Vec<[Option<Vec<u16>>; 6]>>;

struct Expected {
    bones: Vec<Bone>,
    seqs: Vec<Seq>,
    /// Per sequence, per blend, per bone, per channel: the stream's words (None = offset 0).
    anims: Vec<Streams>,
    hitboxes: Vec<Hitbox>,
    groups: Vec<(String, String)>,
    transitions: Vec<Vec<u8>>,
    geometry: Geometry,
}

fn bits3(v: [f32; 3]) -> [u32; 3] {
    v.map(f32::to_bits)
}

/// The words of one channel: spans until `frames` frames are covered.
fn stream(b: &Bytes, at: usize, frames: usize) -> Vec<u16> {
    let mut out = Vec::new();
    let mut pos = at;
    let mut covered = 0usize;
    while covered < frames {
        let h = b.u16(pos);
        let valid = usize::from(h & 0xff);
        let total = usize::from(h >> 8);
        assert!(valid >= 1 && total >= valid, "bad span at {pos}");
        out.push(h);
        for i in 0..valid {
            out.push(b.u16(pos + 2 + 2 * i));
        }
        pos += 2 + 2 * valid;
        covered += total;
    }
    out
}

fn parse(main: &[u8], groups: &[Vec<u8>]) -> Expected {
    let b = Bytes(main);
    assert_eq!(&main[0..4], b"IDST");
    assert_eq!(b.i32(4), 10);
    let (numbones, boneindex) = (b.i32(140) as usize, b.i32(144) as usize);
    let bones: Vec<Bone> = (0..numbones)
        .map(|i| {
            let at = boneindex + 112 * i;
            Bone {
                name: b.name(at, 32),
                parent: b.i32(at + 32),
                controllers: std::array::from_fn(|k| b.i32(at + 40 + 4 * k)),
                value: std::array::from_fn(|k| b.f32(at + 64 + 4 * k).to_bits()),
                scale: std::array::from_fn(|k| b.f32(at + 88 + 4 * k).to_bits()),
            }
        })
        .collect();
    let (nh, hi) = (b.i32(156) as usize, b.i32(160) as usize);
    let hitboxes = (0..nh)
        .map(|i| {
            let at = hi + 32 * i;
            Hitbox {
                bone: b.i32(at),
                group: b.i32(at + 4),
                min: bits3(b.vec3(at + 8)),
                max: bits3(b.vec3(at + 20)),
            }
        })
        .collect();
    let (ng, gi) = (b.i32(172) as usize, b.i32(176) as usize);
    let groups_v: Vec<(String, String)> = (0..ng)
        .map(|i| (b.name(gi + 104 * i, 32), b.name(gi + 104 * i + 32, 64)))
        .collect();
    let (ns, si) = (b.i32(164) as usize, b.i32(168) as usize);
    let mut seqs = Vec::new();
    let mut anims = Vec::new();
    for i in 0..ns {
        let at = si + 176 * i;
        let numevents = b.i32(at + 48) as usize;
        let ei = b.i32(at + 52) as usize;
        let numpivots = b.i32(at + 60) as usize;
        let pi = b.i32(at + 64) as usize;
        let numframes = b.i32(at + 56);
        let numblends = b.i32(at + 120);
        let animindex = b.i32(at + 124) as usize;
        let seqgroup = b.i32(at + 156);
        let events = (0..numevents)
            .map(|e| {
                let a = ei + 76 * e;
                (b.i32(a), b.i32(a + 4), b.name(a + 12, 64))
            })
            .collect();
        let pivots = (0..numpivots)
            .map(|p| (b.i32(pi + 20 * p + 12), b.i32(pi + 20 * p + 16)))
            .collect();
        seqs.push(Seq {
            label: b.name(at, 32),
            fps: b.f32(at + 32).to_bits(),
            flags: b.i32(at + 36),
            activity: b.i32(at + 40),
            actweight: b.i32(at + 44),
            numframes,
            motiontype: b.i32(at + 68),
            linear: bits3(b.vec3(at + 76)),
            bbmin: bits3(b.vec3(at + 96)),
            bbmax: bits3(b.vec3(at + 108)),
            numblends,
            blendtype: [b.i32(at + 128), b.i32(at + 132)],
            blendstart: [b.f32(at + 136).to_bits(), b.f32(at + 140).to_bits()],
            blendend: [b.f32(at + 144).to_bits(), b.f32(at + 148).to_bits()],
            seqgroup,
            entry: b.i32(at + 160),
            exit: b.i32(at + 164),
            nodeflags: b.i32(at + 168),
            events,
            pivots,
        });
        let file: &[u8] = if seqgroup == 0 {
            main
        } else {
            &groups[seqgroup as usize - 1]
        };
        let fb = Bytes(file);
        let mut per_blend = Vec::new();
        for q in 0..numblends as usize {
            let mut per_bone = Vec::new();
            for j in 0..numbones {
                let a = animindex + 12 * (q * numbones + j);
                let chans: [Option<Vec<u16>>; 6] = std::array::from_fn(|k| {
                    let off = fb.u16(a + 2 * k) as usize;
                    (off != 0).then(|| stream(&fb, a + off, numframes as usize))
                });
                per_bone.push(chans);
            }
            per_blend.push(per_bone);
        }
        anims.push(per_blend);
    }
    let (nt, ti) = (b.i32(236) as usize, b.i32(240) as usize);
    let transitions = (0..nt)
        .map(|i| main[ti + nt * i..ti + nt * (i + 1)].to_vec())
        .collect();
    // Geometry: bone-local vertices of every model.
    let (nbp, bpi) = (b.i32(204) as usize, b.i32(208) as usize);
    let mut body_parts = Vec::new();
    for p in 0..nbp {
        let at = bpi + 76 * p;
        let nm = b.i32(at + 64) as usize;
        let mi = b.i32(at + 72) as usize;
        let mut models = Vec::new();
        for m in 0..nm {
            let ma = mi + 112 * m;
            let nv = b.i32(ma + 80) as usize;
            let vbi = b.i32(ma + 84) as usize;
            let vi = b.i32(ma + 88) as usize;
            models.push(GsModelData {
                name: b.name(ma, 64),
                vert_bones: main[vbi..vbi + nv].to_vec(),
                verts: (0..nv).map(|v| b.vec3(vi + 12 * v)).collect(),
                ..GsModelData::default()
            });
        }
        body_parts.push(GsBodyPart {
            name: b.name(at, 64),
            models,
        });
    }
    Expected {
        bones,
        seqs,
        anims,
        hitboxes,
        groups: groups_v,
        transitions,
        geometry: Geometry {
            body_parts,
            ..Geometry::default()
        },
    }
}

// --- mdlc's values in the same shape ------------------------------------------------------------

fn ours_bones(a: &Animation) -> Vec<Bone> {
    a.bones
        .iter()
        .map(|b| Bone {
            name: b.name.clone(),
            parent: b.parent,
            controllers: b.bonecontroller,
            value: b.value.map(f32::to_bits),
            scale: b.scale.map(f32::to_bits),
        })
        .collect()
}

fn ours_seqs(a: &Animation) -> Vec<Seq> {
    a.sequences
        .iter()
        .map(|s| Seq {
            label: s.label.clone(),
            fps: s.fps.to_bits(),
            flags: s.flags,
            activity: s.activity,
            actweight: s.actweight,
            numframes: s.numframes,
            motiontype: s.motiontype,
            linear: bits3(s.linearmovement),
            bbmin: bits3(s.bbmin),
            bbmax: bits3(s.bbmax),
            numblends: s.blends.len() as i32,
            blendtype: s.blendtype,
            blendstart: s.blendstart.map(f32::to_bits),
            blendend: s.blendend.map(f32::to_bits),
            seqgroup: s.seqgroup,
            entry: s.entrynode,
            exit: s.exitnode,
            nodeflags: s.nodeflags,
            events: s
                .events
                .iter()
                .map(|e| (e.frame, e.event, e.options.clone()))
                .collect(),
            pivots: s.pivots.iter().map(|p| (p.start, p.end)).collect(),
        })
        .collect()
}

fn ours_hitboxes(a: &Animation) -> Vec<Hitbox> {
    a.hitboxes
        .iter()
        .map(|h| Hitbox {
            bone: h.bone,
            group: h.group,
            min: bits3(h.bbmin),
            max: bits3(h.bbmax),
        })
        .collect()
}

// --- the comparison ---------------------------------------------------------------------------

#[derive(Default, Debug)]
struct Score {
    models: usize,
    bones: usize,
    sequences: usize,
    streams: usize,
    hitboxes: usize,
    /// Totals compared (so a vacuous comparison shows).
    total_bones: usize,
    total_sequences: usize,
    total_channels: usize,
    total_hitboxes: usize,
    auto_hitbox_models: usize,
    groups: usize,
    transitions: usize,
    all: usize,
}

fn cases(corpus: &Path) -> Vec<(PathBuf, PathBuf, Vec<PathBuf>)> {
    let mut out = Vec::new();
    let hl1 = corpus.join("goldsrc-hl1");
    for qc in common::files_with_ext(&hl1.join("modelsrc/models"), &["qc"]) {
        let folder = qc.parent().unwrap().file_name().unwrap().to_owned();
        let stem = qc.file_stem().unwrap().to_owned();
        let mut mdl = hl1.join("expected").join(folder).join(stem);
        mdl.set_extension("mdl");
        if mdl.is_file() {
            out.push((qc, mdl, Vec::new()));
        }
    }
    let cs = corpus.join("gs-chrome-sphere");
    out.push((
        cs.join("models/chrome_sphere/chrome_sphere.qc"),
        cs.join("compiled_models/chrome_sphere.mdl"),
        Vec::new(),
    ));
    let man = corpus.join("gs-man");
    out.push((
        man.join("models/man/man.qc"),
        man.join("compiled_models/man.mdl"),
        vec![man.join("compiled_models/man01.mdl")],
    ));
    out
}

/// Builds the animation stage's output; the flag says whether the hit boxes are generated.
fn build(qc: &Path, geometry: &Geometry) -> (Option<Animation>, Vec<Diagnostic>, bool) {
    let mut sources = Sources::default();
    let mut diags = Vec::new();
    let spec = driver::read_project(
        qc,
        InputKind::Qc,
        &RealFs,
        Some(Target::GoldSrc),
        &mut sources,
        &mut diags,
    )
    .expect("project reads");
    let mut model = mdlc::build::build_model(&spec, &RealFs, &mut sources, &mut diags)
        .unwrap_or_else(|| panic!("{} builds: {diags:#?}", qc.display()));
    let a = build_animation(&mut model, geometry, &mut diags);
    let generated = model.hitbox_sets.iter().all(|s| s.boxes.is_empty());
    (a, diags, generated)
}

#[test]
fn corpus_matches_valve_part_by_part() {
    let Some(corpus) = corpus_dir() else { return };
    let mut score = Score::default();
    let mut report = Vec::new();
    for (qc, mdl, group_files) in cases(&corpus) {
        let main = std::fs::read(&mdl).unwrap();
        let groups: Vec<Vec<u8>> = group_files
            .iter()
            .map(|g| std::fs::read(g).unwrap())
            .collect();
        let exp = parse(&main, &groups);
        score.total_bones += exp.bones.len();
        score.total_sequences += exp.seqs.len();
        score.total_channels += exp
            .anims
            .iter()
            .flatten()
            .flatten()
            .flatten()
            .filter(|c| c.is_some())
            .count();
        score.total_hitboxes += exp.hitboxes.len();
        let (ours, diags, generated) = build(&qc, &exp.geometry);
        if generated {
            score.auto_hitbox_models += 1;
        }
        let name = mdl.file_name().unwrap().to_string_lossy().into_owned();
        let Some(ours) = ours else {
            report.push(format!("{name}: no output: {diags:#?}"));
            continue;
        };
        score.models += 1;
        let mut ok_all = true;
        let mut bad = Vec::new();

        let ob = ours_bones(&ours);
        if ob == exp.bones {
            score.bones += 1;
        } else {
            ok_all = false;
            let first = ob
                .iter()
                .zip(&exp.bones)
                .position(|(a, b)| a != b)
                .unwrap_or(ob.len().min(exp.bones.len()));
            bad.push(format!(
                "bones ({} vs {}), first difference at {first}: ours {:?} valve {:?}",
                ob.len(),
                exp.bones.len(),
                ob.get(first),
                exp.bones.get(first)
            ));
        }
        let os = ours_seqs(&ours);
        if os == exp.seqs {
            score.sequences += 1;
        } else {
            ok_all = false;
            let diff: Vec<String> = os
                .iter()
                .zip(&exp.seqs)
                .filter(|(a, b)| a != b)
                .take(2)
                .map(|(a, b)| format!("\n    ours  {a:?}\n    valve {b:?}"))
                .collect();
            bad.push(format!(
                "sequences ({} vs {}):{}",
                os.len(),
                exp.seqs.len(),
                diff.join("")
            ));
        }
        let ostreams: Vec<_> = ours.sequences.iter().map(|s| s.blends.clone()).collect();
        if ostreams == exp.anims {
            score.streams += 1;
        } else {
            ok_all = false;
            let mut where_ = String::new();
            'find: for (si, (a, b)) in ostreams.iter().zip(&exp.anims).enumerate() {
                for (q, (x, y)) in a.iter().zip(b).enumerate() {
                    for (j, (c, d)) in x.iter().zip(y).enumerate() {
                        for k in 0..6 {
                            if c[k] != d[k] {
                                where_ = format!(
                                    "seq {si} blend {q} bone {j} channel {k}: ours {:?} valve {:?}",
                                    c[k].as_ref().map(|v| &v[..v.len().min(12)]),
                                    d[k].as_ref().map(|v| &v[..v.len().min(12)])
                                );
                                break 'find;
                            }
                        }
                    }
                }
            }
            bad.push(format!("streams: {where_}"));
        }
        let oh = ours_hitboxes(&ours);
        if oh == exp.hitboxes {
            score.hitboxes += 1;
        } else {
            ok_all = false;
            let d: Vec<String> = oh
                .iter()
                .zip(&exp.hitboxes)
                .filter(|(a, b)| a != b)
                .take(2)
                .map(|(a, b)| format!("\n    ours  {a:?}\n    valve {b:?}"))
                .collect();
            bad.push(format!(
                "hitboxes ({} vs {}):{}",
                oh.len(),
                exp.hitboxes.len(),
                d.join("")
            ));
        }
        let og: Vec<(String, String)> = ours
            .seq_groups
            .iter()
            .map(|g| (g.label.clone(), g.name.clone()))
            .collect();
        if og == exp.groups {
            score.groups += 1;
        } else {
            ok_all = false;
            bad.push(format!("groups: ours {og:?} valve {:?}", exp.groups));
        }
        if ours.transitions == exp.transitions {
            score.transitions += 1;
        } else {
            ok_all = false;
            bad.push(format!(
                "transitions: ours {:?} valve {:?}",
                ours.transitions, exp.transitions
            ));
        }
        if ok_all {
            score.all += 1;
        } else {
            report.push(format!("{name}:\n  {}", bad.join("\n  ")));
        }
    }
    eprintln!("{}", report.join("\n"));
    eprintln!("{score:#?}");
    // What mdlc achieves today (37 models: 35 goldsrc-hl1, gs-chrome-sphere, gs-man).
    assert_eq!(score.models, 37);
    assert!(
        score.total_bones > 500 && score.total_sequences > 300,
        "{score:?}"
    );
    assert!(
        score.total_channels > 10_000 && score.total_hitboxes > 200,
        "{score:?}"
    );
    assert!(score.bones >= 37, "{score:?}");
    assert!(score.sequences >= 37, "{score:?}");
    assert!(score.streams >= 37, "{score:?}");
    assert!(score.hitboxes >= 37, "{score:?}");
    assert!(score.groups >= 37, "{score:?}");
    assert!(score.transitions >= 37, "{score:?}");
    assert!(score.all >= 37, "{score:?}");
}

// --- hand-made model, values worked by hand from goldsrc.md ------------------------------------

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/goldsrc/animation")
        .join(rel)
}

fn model_of(qc: &Path) -> (mdlc::ir::model::Model, Vec<Diagnostic>) {
    let mut sources = Sources::default();
    let mut diags = Vec::new();
    let spec = driver::read_project(
        qc,
        InputKind::Qc,
        &RealFs,
        Some(Target::GoldSrc),
        &mut sources,
        &mut diags,
    )
    .expect("project reads");
    let model = mdlc::build::build_model(&spec, &RealFs, &mut sources, &mut diags)
        .unwrap_or_else(|| panic!("{} builds: {diags:#?}", qc.display()));
    (model, diags)
}

/// Bone 0 has vertices (−2,−2,−2) and (2,2,2); bone 1 (0,−3,−3) and (5,3,3) (bone-local).
fn hand_geometry() -> Geometry {
    Geometry {
        body_parts: vec![GsBodyPart {
            name: "body".into(),
            models: vec![GsModelData {
                name: "ref".into(),
                vert_bones: vec![0, 0, 1, 1],
                verts: vec![
                    [-2.0, -2.0, -2.0],
                    [2.0, 2.0, 2.0],
                    [0.0, -3.0, -3.0],
                    [5.0, 3.0, 3.0],
                ],
                ..GsModelData::default()
            }],
        }],
        ..Geometry::default()
    }
}

fn h(valid: u16, total: u16) -> u16 {
    valid | total << 8
}

#[test]
fn hand_made_model() {
    let (mut model, _) = model_of(&testdata("basic/model.qc"));
    let mut diags = Vec::new();
    let a = build_animation(&mut model, &hand_geometry(), &mut diags).expect("builds");

    // Bones: defaults from the reference skeleton; controller 0 drives child ZR, the mouth
    // controller (number 1 in QC order) root X.
    assert_eq!(a.bones.len(), 2);
    assert_eq!(a.bones[0].name, "root");
    assert_eq!(a.bones[0].parent, -1);
    assert_eq!(a.bones[1].parent, 0);
    assert_eq!(a.bones[1].value, [10.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(a.bones[0].bonecontroller, [1, -1, -1, -1, -1, -1]);
    assert_eq!(a.bones[1].bonecontroller, [-1, -1, -1, -1, -1, 0]);
    // Scales: positions stay within ±128 → 128/32767; child ZR reaches 0.5 → 0.5/32767; the
    // other rotations keep π/8 (as a float) / 32767.
    let pos_scale = 128.0f32 / 32767.0;
    let pi8 = (std::f64::consts::PI / 8.0) as f32 / 32767.0;
    assert_eq!(
        a.bones[0].scale,
        [pos_scale, pos_scale, pos_scale, pi8, pi8, pi8]
    );
    assert_eq!(a.bones[1].scale[5], 0.5f32 / 32767.0);

    let [idle, walk, turn] = &a.sequences[..] else {
        panic!("three sequences")
    };
    // idle: 2 frames, child z 0 then 5 → 5 / (128/32767) = 1279.96 → 1279.
    assert_eq!((idle.numframes, idle.fps, idle.flags), (2, 10.0, 0));
    assert_eq!((idle.activity, idle.actweight), (0, 0));
    assert_eq!((idle.entrynode, idle.exitnode, idle.nodeflags), (1, 1, 0));
    assert_eq!(
        (idle.blendtype, idle.blendstart, idle.blendend),
        ([0, 0], [0.0, 0.0], [1.0, 0.0])
    );
    assert_eq!(idle.blends.len(), 1);
    assert!(idle.blends[0][0].iter().all(Option::is_none));
    assert_eq!(idle.blends[0][1][2], Some(vec![h(2, 2), 0, 1279]));
    assert!(idle.blends[0][1]
        .iter()
        .enumerate()
        .all(|(k, c)| k == 2 || c.is_none()));
    // Sequence box: bone 1's vertices moved by (10,0,0) then (10,0,5).
    assert_eq!(idle.bbmin, [-2.0, -3.0, -3.0]);
    assert_eq!(idle.bbmax, [15.0, 3.0, 8.0]);

    // walk: LX takes the root's 10 units out (root x becomes 0, 0, 0: omitted); looping sets
    // the last frame's child ZR back to frame 0's: 0, 0.5, 0 → 0, 32767, 0.
    assert_eq!((walk.numframes, walk.fps, walk.flags), (3, 20.0, 1));
    assert_eq!((walk.activity, walk.actweight), (3, 2));
    assert_eq!(walk.motiontype, 0x40);
    assert_eq!(walk.linearmovement, [10.0, 0.0, 0.0]);
    assert!(walk.blends[0][0].iter().all(Option::is_none));
    assert_eq!(walk.blends[0][1][5], Some(vec![h(3, 3), 0, 32767, 0]));
    // Events: frame 5 is after the last frame (2): clamped, with a warning.
    let ev: Vec<(i32, i32, &str)> = walk
        .events
        .iter()
        .map(|e| (e.frame, e.event, e.options.as_str()))
        .collect();
    assert_eq!(ev, vec![(2, 1004, "step"), (1, 7, "")]);
    assert_eq!(
        diags.iter().filter(|d| d.code.as_str() == "W0520").count(),
        1,
        "{diags:#?}"
    );
    assert_eq!((walk.entrynode, walk.exitnode, walk.nodeflags), (1, 2, 0));
    // The rotated frame: child vertices turned by 0.5 rad about z, then moved by 10 in x.
    let (s, c) = (0.5f64.sin(), 0.5f64.cos());
    let near = |a: f32, b: f64| (f64::from(a) - b).abs() < 1e-4;
    assert!(near(walk.bbmax[0], 15.0), "{:?}", walk.bbmax);
    assert!(near(walk.bbmax[1], 5.0 * s + 3.0 * c), "{:?}", walk.bbmax);
    assert!(near(walk.bbmin[1], -3.0), "{:?}", walk.bbmin);

    // turn: the same frames as idle, ACT_42, a reversible transition and a ZR blend.
    assert_eq!((turn.activity, turn.actweight), (42, 1));
    assert_eq!((turn.entrynode, turn.exitnode, turn.nodeflags), (2, 3, 1));
    assert_eq!(
        (turn.blendtype, turn.blendstart, turn.blendend),
        ([0x20, 0], [-10.0, 0.0], [10.0, 0.0])
    );
    assert_eq!(turn.blends, idle.blends);

    // Groups: `$sequencegroupsize 1`: the sequence without activity goes to group 1.
    assert_eq!((idle.seqgroup, walk.seqgroup, turn.seqgroup), (1, 0, 0));
    let g: Vec<(&str, &str)> = a
        .seq_groups
        .iter()
        .map(|g| (g.label.as_str(), g.name.as_str()))
        .collect();
    assert_eq!(g, vec![("default", ""), ("", "models\\basic01.mdl")]);
    // Transitions: N = largest entry node = 2; only 1 → 2 fits the table.
    assert_eq!(a.transitions, vec![vec![0, 2], vec![0, 0]]);

    // Generated hit boxes: bone 0 from (0,0,0) over its vertices and its child's position
    // (10,0,0); bone 1 over its vertices from (0,0,0); hit group 3 from `$hgroup`.
    let hb: Vec<(i32, i32, [f32; 3], [f32; 3])> = a
        .hitboxes
        .iter()
        .map(|b| (b.bone, b.group, b.bbmin, b.bbmax))
        .collect();
    assert_eq!(
        hb,
        vec![
            (0, 0, [-2.0, -2.0, -2.0], [10.0, 2.0, 2.0]),
            (1, 3, [0.0, -3.0, -3.0], [5.0, 3.0, 3.0]),
        ]
    );
}

#[test]
fn thin_bones_get_no_hit_box() {
    let (mut model, _) = model_of(&testdata("basic/model.qc"));
    let mut g = hand_geometry();
    // Bone 1 only 1 unit thick in x: no box for it (the rule is min < max − 1).
    g.body_parts[0].models[0].verts[3] = [1.0, 3.0, 3.0];
    let a = build_animation(&mut model, &g, &mut Vec::new()).unwrap();
    let bones: Vec<i32> = a.hitboxes.iter().map(|b| b.bone).collect();
    assert_eq!(bones, vec![0]);
}

#[test]
fn errors_have_codes_and_spans() {
    let qc = testdata("errors/errors.qc");
    let (mut model, _) = model_of(&qc);
    let mut diags = Vec::new();
    let a = build_animation(&mut model, &hand_geometry(), &mut diags);
    assert!(a.is_none());
    let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    for c in ["E0520", "E0521", "E0522", "E0526", "E0527"] {
        assert!(codes.contains(&c), "{c} missing: {diags:#?}");
        let d = diags.iter().find(|d| d.code.as_str() == c).unwrap();
        assert!(d.primary().is_some(), "{c} has no span");
    }
}

#[test]
fn too_many_events_and_pivots() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-gs-anim");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["ref.smd", "idle.smd"] {
        std::fs::copy(testdata("basic").join(f), dir.join(f)).unwrap();
    }
    let events: String = (0..1024).map(|_| "{ event 1 0 } ").collect();
    let pivots: String = (0..256).map(|_| "pivot 0 0 1 ").collect();
    std::fs::write(
        dir.join("many.qc"),
        format!("$cd \".\"\n$body \"b\" \"ref\"\n$sequence \"s\" \"idle\" {pivots} {events}\n"),
    )
    .unwrap();
    let (mut model, _) = model_of(&dir.join("many.qc"));
    let mut diags = Vec::new();
    assert!(build_animation(&mut model, &hand_geometry(), &mut diags).is_none());
    let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    assert!(
        codes.contains(&"E0523") && codes.contains(&"E0524"),
        "{codes:?}"
    );
    // 1023 events and 255 pivots are fine.
    let events: String = (0..1023).map(|_| "{ event 1 0 } ").collect();
    let pivots: String = (0..255).map(|_| "pivot 0 0 1 ").collect();
    std::fs::write(
        dir.join("many.qc"),
        format!("$cd \".\"\n$body \"b\" \"ref\"\n$sequence \"s\" \"idle\" {pivots} {events}\n"),
    )
    .unwrap();
    let (mut model, _) = model_of(&dir.join("many.qc"));
    let mut diags = Vec::new();
    let a = build_animation(&mut model, &hand_geometry(), &mut diags).expect("builds");
    assert_eq!(a.sequences[0].events.len(), 1023);
    assert_eq!(a.sequences[0].pivots.len(), 255);
    let _ = std::fs::remove_dir_all(&dir);
}
