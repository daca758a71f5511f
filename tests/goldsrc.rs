//! The GoldSrc writer on hand-built models (offsets computed by hand from `goldsrc.md` §3),
//! the reader's round trip and first-difference naming, and the `build` and `inspect`
//! commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::mdlc;

use std::path::{Path, PathBuf};
use std::process::Output;

use mdlc::formats::goldsrc::model::*;
use mdlc::formats::goldsrc::read;
use mdlc::formats::goldsrc::write::write_files;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn i32_at(b: &[u8], o: usize) -> i32 {
    i32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}

fn f32_at(b: &[u8], o: usize) -> f32 {
    f32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn tri_model(name: &str, fan: bool) -> GsModelData {
    let c = if fan { -3 } else { 3 };
    GsModelData {
        name: name.into(),
        kind: 0,
        vert_bones: vec![0, 0, 1],
        norm_bones: vec![0; 2],
        verts: vec![[0.0, 0.0, 0.0], [8.0, 0.0, 0.0], [0.0, 8.0, 0.5]],
        norms: vec![[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]],
        meshes: vec![GsMesh {
            numtris: 1,
            skinref: 0,
            numnorms: 2,
            commands: vec![c, 0, 0, 0, 0, 1, 1, 3, 0, 2, 1, 0, 3, 0],
        }],
    }
}

/// Two bones, a controller, an attachment, no hit boxes, one sequence of 3 frames with an event,
/// 3 transition nodes, two body parts (2 models, one blank; 1 model), a 4×2 texture, 2 skins.
fn sample() -> GsModel {
    let mut bone1 = GsBone {
        name: "child".into(),
        parent: 0,
        bonecontroller: [-1, -1, -1, -1, -1, 0],
        value: [1.0, 2.0, 3.0, 0.1, 0.2, 0.3],
        scale: [0.5; 6],
    };
    bone1.scale[5] = 0.25;
    let mut channels0: [Option<Vec<u16>>; 6] = Default::default();
    channels0[0] = Some(vec![0x0301, 5]); // valid 1, total 3
    let mut channels1: [Option<Vec<u16>>; 6] = Default::default();
    channels1[5] = Some(vec![0x0302, 1, 2]); // valid 2, total 3: 6 bytes, then ALIGN
    GsModel {
        name: "sample.mdl".into(),
        eyeposition: [-0.0, 1.0, 2.0],
        min: [-1.0, -2.0, -3.0],
        max: [1.0, 2.0, 3.0],
        bbmin: [-4.0; 3],
        bbmax: [4.0; 3],
        flags: 512,
        bones: vec![
            GsBone {
                name: "root".into(),
                parent: -1,
                bonecontroller: [-1; 6],
                value: [0.0; 6],
                scale: [1.0; 6],
            },
            bone1,
        ],
        controllers: vec![GsController {
            bone: 1,
            kind: 0x20 | 0x8000,
            start: -180.0,
            end: 180.0,
            index: 0,
        }],
        attachments: vec![GsAttachment {
            bone: 1,
            org: [1.0, 2.0, 3.0],
        }],
        hitboxes: Vec::new(),
        sequences: vec![GsSequence {
            label: "idle".into(),
            fps: 30.0,
            flags: 1,
            activity: 1,
            actweight: 2,
            events: vec![GsEvent {
                frame: 2,
                event: 1004,
                options: "common/npc_step1.wav".into(),
            }],
            numframes: 3,
            pivots: Vec::new(),
            motiontype: 0x40,
            linearmovement: [3.0, 0.0, 0.0],
            bbmin: [-1.0; 3],
            bbmax: [1.0; 3],
            blendtype: [0, 0],
            blendstart: [0.0, 0.0],
            blendend: [1.0, 0.0],
            seqgroup: 0,
            entrynode: 1,
            exitnode: 3,
            nodeflags: 1,
            blends: vec![vec![channels0, channels1]],
        }],
        seq_groups: vec![GsSeqGroup {
            label: "default".into(),
            name: String::new(),
        }],
        transitions: vec![vec![0, 3, 3], vec![1, 0, 3], vec![1, 1, 0]],
        body_parts: vec![
            GsBodyPart {
                name: "body".into(),
                models: vec![
                    tri_model("first", false),
                    GsModelData {
                        name: "blank".into(),
                        ..Default::default()
                    },
                ],
            },
            GsBodyPart {
                name: "head".into(),
                models: vec![tri_model("second", true)],
            },
        ],
        textures: vec![GsTexture {
            name: "skin.bmp".into(),
            flags: 0,
            width: 4,
            height: 2,
            pixels: (0..8).collect(),
            palette: (0..768).map(|i| (i % 256) as u8).collect(),
        }],
        skins: vec![vec![0], vec![0]],
        external_textures: false,
    }
}

#[test]
fn main_file_layout_follows_goldsrc_md_section_3_by_hand() {
    let files = write_files(&sample(), "out/sample");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "out/sample.mdl");
    let b = &files[0].1;
    // header
    assert_eq!(&b[0..4], b"IDST");
    assert_eq!(i32_at(b, 4), 10);
    assert_eq!(&b[8..18], b"sample.mdl");
    assert!(b[18..72].iter().all(|&x| x == 0));
    assert_eq!(f32_at(b, 76).to_bits(), 0x8000_0000, "-0.0 kept");
    assert_eq!(i32_at(b, 136), 512);
    // 2. bones at 244, 2 × 112 → 468
    assert_eq!((i32_at(b, 140), i32_at(b, 144)), (2, 244));
    assert_eq!(i32_at(b, 244 + 112 + 32), 0, "child's parent");
    assert_eq!(i32_at(b, 244 + 112 + 40 + 20), 0, "child's ZR controller");
    // 3. controllers at 468, 24 → 492
    assert_eq!((i32_at(b, 148), i32_at(b, 152)), (1, 468));
    assert_eq!(i32_at(b, 468 + 4), 0x8020);
    // 4. attachments at 492, 88 → 580
    assert_eq!((i32_at(b, 212), i32_at(b, 216)), (1, 492));
    assert_eq!(i32_at(b, 492 + 36), 1);
    assert_eq!(f32_at(b, 492 + 48), 3.0);
    // 5. no hit boxes: the offset is recorded anyway
    assert_eq!((i32_at(b, 156), i32_at(b, 160)), (0, 580));
    // 6. animations: table 2 × 12 at 580 → 604; bone 0 X at 604 (offset 24), 4 bytes;
    //    bone 1 ZR at 608 (offset 608 - 592 = 16), 6 bytes → 614, ALIGN → 616
    assert_eq!(u16_at(b, 580), 24);
    assert_eq!(u16_at(b, 592 + 10), 16);
    assert_eq!(
        (0..5).map(|k| u16_at(b, 592 + 2 * k)).collect::<Vec<_>>(),
        [0; 5]
    );
    assert_eq!((u16_at(b, 604), u16_at(b, 606)), (0x0301, 5));
    assert_eq!(u16_at(b, 608), 0x0302);
    assert_eq!(&b[614..616], &[0, 0]);
    // 7. sequences at 616, 176 → 792
    assert_eq!((i32_at(b, 164), i32_at(b, 168)), (1, 616));
    assert_eq!(i32_at(b, 616 + 120), 1, "numblends");
    assert_eq!(i32_at(b, 616 + 124), 580, "animindex");
    assert_eq!(f32_at(b, 616 + 144), 1.0, "blendend[0]");
    // 8. events at 792, 76 → 868; no pivots: pivotindex 868
    assert_eq!((i32_at(b, 616 + 48), i32_at(b, 616 + 52)), (1, 792));
    assert_eq!((i32_at(b, 616 + 60), i32_at(b, 616 + 64)), (0, 868));
    assert_eq!(i32_at(b, 792 + 4), 1004);
    assert_eq!(&b[792 + 12..792 + 12 + 20], b"common/npc_step1.wav");
    // 9. groups at 868, 104 → 972
    assert_eq!((i32_at(b, 172), i32_at(b, 176)), (1, 868));
    assert_eq!(&b[868..875], b"default");
    // 10. transitions: 9 bytes at 972 → 981, ALIGN → 984
    assert_eq!((i32_at(b, 236), i32_at(b, 240)), (3, 972));
    assert_eq!(&b[972..984], &[0, 3, 3, 1, 0, 3, 1, 1, 0, 0, 0, 0]);
    // 11. body parts at 984, 2 × 76 → 1136; 12. models 3 × 112 at 1136 → 1472
    assert_eq!((i32_at(b, 204), i32_at(b, 208)), (2, 984));
    assert_eq!(
        (
            i32_at(b, 984 + 64),
            i32_at(b, 984 + 68),
            i32_at(b, 984 + 72)
        ),
        (2, 1, 1136)
    );
    assert_eq!(
        (
            i32_at(b, 1060 + 64),
            i32_at(b, 1060 + 68),
            i32_at(b, 1060 + 72)
        ),
        (1, 2, 1360)
    );
    // 13. model 0: vertinfo 1472 (3 → 1476), norminfo 1476 (2 → 1480), verts 1480 (→ 1516),
    //     norms 1516 (→ 1540), meshes 1540 (→ 1560), commands 1560 (28 → 1588)
    let m0 = 1136;
    assert_eq!(i32_at(b, m0 + 84), 1472);
    assert_eq!(i32_at(b, m0 + 96), 1476);
    assert_eq!(i32_at(b, m0 + 88), 1480);
    assert_eq!(i32_at(b, m0 + 100), 1516);
    assert_eq!(i32_at(b, m0 + 76), 1540);
    assert_eq!(i32_at(b, 1540 + 4), 1560);
    assert_eq!(&b[1472..1476], &[0, 0, 1, 0]);
    //     the blank model: every offset at the current position, 1588
    let m1 = 1136 + 112;
    assert_eq!(&b[m1..m1 + 6], b"blank\0");
    for o in [76, 84, 88, 96, 100] {
        assert_eq!(i32_at(b, m1 + o), 1588, "blank offset at {o}");
    }
    //     model 2: vertinfo 1588 → 1592, norminfo 1592 → 1596, verts 1596 → 1632, norms
    //     1632 → 1656, meshes 1656 → 1676, commands 1676 → 1704
    let m2 = 1136 + 224;
    assert_eq!(i32_at(b, m2 + 84), 1588);
    assert_eq!(i32_at(b, m2 + 96), 1592);
    assert_eq!(i32_at(b, m2 + 88), 1596);
    assert_eq!(i32_at(b, m2 + 100), 1632);
    assert_eq!(i32_at(b, m2 + 76), 1656);
    assert_eq!(i32_at(b, 1656 + 4), 1676);
    assert_eq!(i16::from_le_bytes([b[1676], b[1677]]), -3);
    // 14. textures at 1704 (→ 1784); 15. skins 2 × 1 shorts at 1784 (→ 1788);
    // 16. pixels at 1788: 8 + 768 → 2564 = length
    assert_eq!((i32_at(b, 180), i32_at(b, 184)), (1, 1704));
    assert_eq!(
        (i32_at(b, 192), i32_at(b, 196), i32_at(b, 200)),
        (1, 2, 1784)
    );
    assert_eq!(i32_at(b, 188), 1788);
    assert_eq!(i32_at(b, 1704 + 76), 1788);
    assert_eq!(i32_at(b, 72), 2564);
    assert_eq!(b.len(), 2564);
    assert_eq!(b[1788 + 8 + 767], 255);
}

#[test]
fn external_textures_and_group_files_come_first() {
    let mut gs = sample();
    gs.external_textures = true;
    let mut s2 = gs.sequences[0].clone();
    s2.label = "walk".into();
    s2.seqgroup = 1;
    s2.events.clear();
    gs.sequences.push(s2);
    gs.seq_groups.push(GsSeqGroup {
        label: "anims".into(),
        name: "models\\sample01.mdl".into(),
    });
    let files = write_files(&gs, "sample");
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["sample01.mdl", "sampleT.mdl", "sample.mdl"]);
    // group file: 76-byte header, then the sequence's table (2 × 12 → 100), its streams
    // (4 + 6 bytes → 110, ALIGN → 112)
    let g = &files[0].1;
    assert_eq!(&g[0..4], b"IDSQ");
    assert_eq!(i32_at(g, 4), 10);
    assert_eq!(&g[8..27], b"models\\sample01.mdl");
    assert_eq!(i32_at(g, 72), 112);
    assert_eq!(g.len(), 112);
    assert_eq!(u16_at(g, 76), 24);
    // T file: header, textures at 244 (→ 324), skins at 324 (→ 328), pixels at 328 → 1104
    let t = &files[1].1;
    assert_eq!(&t[0..4], b"IDST");
    assert!(t[8..72].iter().all(|&x| x == 0), "no name");
    assert_eq!(i32_at(t, 72), 1104);
    assert_eq!(
        (i32_at(t, 180), i32_at(t, 184), i32_at(t, 188)),
        (1, 244, 328)
    );
    assert_eq!(
        (i32_at(t, 192), i32_at(t, 196), i32_at(t, 200)),
        (1, 2, 324)
    );
    assert_eq!(i32_at(t, 140), 0, "no bones in the T file");
    assert_eq!(t.len(), 1104);
    // main file: no texture fields, ends after the model data
    let m = &files[2].1;
    for o in [180, 184, 188, 192, 196, 200] {
        assert_eq!(i32_at(m, o), 0, "texture field at {o}");
    }
    assert_eq!(i32_at(m, 172), 2);
    // the walk sequence's animindex points into the group file
    let seq1 = i32_at(m, 168) as usize + 176;
    assert_eq!(i32_at(m, seq1 + 124), 76);
    assert_eq!(i32_at(m, seq1 + 156), 1);
    // and the whole set reads back with every invariant holding
    let p = read::parse(m, Some(t), &[g]).unwrap();
    assert_eq!(p.problems, Vec::<String>::new());
    assert_eq!(p.textures.len(), 1);
    assert_eq!(p.sequences[1].anims[0][0].offset[0], 24);
}

#[test]
fn what_is_written_reads_back_the_same() {
    let gs = sample();
    let files = write_files(&gs, "sample");
    let b = &files[0].1;
    let p = read::parse(b, None, &[]).unwrap();
    assert_eq!(p.problems, Vec::<String>::new());
    assert_eq!(p.header.name, gs.name);
    assert_eq!(p.header.eyeposition, gs.eyeposition);
    assert_eq!((p.header.min, p.header.max), (gs.min, gs.max));
    assert_eq!(p.bones.len(), 2);
    for (r, w) in p.bones.iter().zip(&gs.bones) {
        assert_eq!(
            (&r.name, r.parent, r.bonecontroller, r.value, r.scale),
            (&w.name, w.parent, w.bonecontroller, w.value, w.scale)
        );
    }
    let c = &p.bonecontrollers[0];
    assert_eq!(
        (c.bone, c.kind, c.start, c.end, c.index),
        (1, 0x8020, -180.0, 180.0, 0)
    );
    assert_eq!(
        (p.attachments[0].bone, p.attachments[0].org),
        (1, [1.0, 2.0, 3.0])
    );
    let s = &p.sequences[0];
    assert_eq!(s.desc.label, "idle");
    assert_eq!(
        (s.desc.numframes, s.desc.motiontype, s.desc.nodeflags),
        (3, 0x40, 1)
    );
    assert_eq!(s.events[0].options, "common/npc_step1.wav");
    assert_eq!(s.anims[0][1].offset, [0, 0, 0, 0, 0, 16]);
    assert_eq!(p.transitions, gs.transitions);
    assert_eq!(p.bodyparts.len(), 2);
    assert_eq!(p.bodyparts[1].part.base, 2);
    assert_eq!(p.bodyparts[0].models[1].model.name, "blank");
    assert_eq!(p.bodyparts[1].models[0].decoded_tris, [1]);
    assert_eq!(p.textures[0].name, "skin.bmp");
    assert_eq!((p.textures[0].width, p.textures[0].height), (4, 2));
    assert_eq!(p.skins, gs.skins);
}

#[test]
fn the_first_difference_is_named_by_record_and_field() {
    let a = sample();
    let mut b = sample();
    b.bones[1].value[2] = 3.5;
    b.sequences[0].events[0].frame = 1; // later in the file: not the first difference
    let fa = write_files(&a, "x").remove(0).1;
    let fb = write_files(&b, "x").remove(0).1;
    fn set(m: &[u8]) -> read::FileSet<'_> {
        read::FileSet {
            main: m,
            textures: None,
            groups: Vec::new(),
        }
    }
    let (pa, pb) = (
        read::parse(&fa, None, &[]).unwrap(),
        read::parse(&fb, None, &[]).unwrap(),
    );
    let d = read::first_difference(&pa, &set(&fa), &pb, &set(&fb)).unwrap();
    assert_eq!(d, "bones[1] (mstudiobone_t).value: [1.0, 2.0, 3.0, 0.1, 0.2, 0.3] vs [1.0, 2.0, 3.5, 0.1, 0.2, 0.3]");
    assert!(read::first_difference(&pa, &set(&fa), &pa, &set(&fa)).is_none());

    // A longer stream shifts every later offset: the stream is named, not an offset.
    let mut c = sample();
    c.sequences[0].blends[0][0][0] = Some(vec![0x0201, 5, 0x0101, 6]);
    let fc = write_files(&c, "x").remove(0).1;
    let pc = read::parse(&fc, None, &[]).unwrap();
    assert_eq!(pc.problems, Vec::<String>::new());
    let d = read::first_difference(&pa, &set(&fa), &pc, &set(&fc)).unwrap();
    assert!(
        d.starts_with("sequences[0].anims[0][0].X[0] (short): 769 vs 513"),
        "{d}"
    );
}

#[test]
fn broken_files_are_reported_not_panicked_on() {
    let files = write_files(&sample(), "x");
    let good = &files[0].1;
    // length field wrong
    let mut b = good.clone();
    b[72] ^= 1;
    let p = read::parse(&b, None, &[]).unwrap();
    assert!(
        p.problems.iter().any(|x| x.contains("length")),
        "{:?}",
        p.problems
    );
    // a triangle command pointing at a vertex that does not exist
    let mut b = good.clone();
    b[1562..1564].copy_from_slice(&7i16.to_le_bytes());
    let p = read::parse(&b, None, &[]).unwrap();
    assert!(
        p.problems.iter().any(|x| x.contains("vertex index")),
        "{:?}",
        p.problems
    );
    // a stream whose spans do not cover the frames
    let mut b = good.clone();
    b[604] = 1;
    b[605] = 2;
    let p = read::parse(&b, None, &[]).unwrap();
    assert!(
        p.problems.iter().any(|x| x.contains("cover")),
        "{:?}",
        p.problems
    );
    // every truncation of the file
    for n in 0..good.len() {
        let _ = read::parse(&good[..n], None, &[&good[..n.min(80)]]);
    }
}

// --- the command line --------------------------------------------------------------------------

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh scratch folder under the target directory.
fn scratch(name: &str) -> PathBuf {
    common::fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(name))
}

fn tri_qc() -> PathBuf {
    Path::new(ROOT).join("testdata/goldsrc/write/tri/tri.qc")
}

#[test]
fn build_writes_where_modelname_says_and_inspect_reads_it() {
    let dir = scratch("build_cwd");
    let o = mdlc(
        &["build", tri_qc().to_str().unwrap(), "--color", "never"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = dir.join("tri.mdl");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[0..4], b"IDST");
    assert_eq!(&bytes[8..16], b"tri.mdl\0");
    // no temporary file is left (`.mdlc/` holds the up-to-date record, docs/build-systems.md)
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != ".mdlc")
        .collect();
    assert!(dir.join(".mdlc").is_dir());
    assert_eq!(names.len(), 1, "{names:?}");

    let o = mdlc(&["inspect", "tri.mdl"], &dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("  numbones: 1\n"), "{text}");
    assert!(text.contains("  boneindex: 244 → bones[0]\n"), "{text}");
    assert!(text.contains("invariants: all hold"), "{text}");
    // eyeposition (−b, a, c) of `0 0 10`: x is −0.0
    assert!(
        text.contains("  eyeposition: [-0.0, 0.0, 10.0]\n"),
        "{text}"
    );
    // the ZR controller from -180 to 180 turns full circle: RLOOP
    assert!(text.contains("  type: 32800\n"), "{text}");

    let o = mdlc(&["inspect", "--json", "tri.mdl"], &dir);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["header"]["numbones"], 1);
    assert_eq!(v["bonecontrollers"][0]["type"], 0x8020);
    assert_eq!(v["attachments"][0]["org"][2], 3.0);
}

#[test]
fn inspect_fails_on_a_broken_file_and_on_a_non_model() {
    let dir = scratch("inspect_broken");
    let o = mdlc(&["build", tri_qc().to_str().unwrap(), "-o", "out"], &dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut b = std::fs::read(dir.join("out/tri.mdl")).unwrap();
    b.extend_from_slice(&[0; 4]);
    std::fs::write(dir.join("bad.mdl"), &b).unwrap();
    let o = mdlc(&["inspect", "bad.mdl", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("error[E0547]"), "{}", stderr(&o));
    std::fs::write(dir.join("text.mdl"), b"hello").unwrap();
    let o = mdlc(&["inspect", "text.mdl", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("error[E0546]"), "{}", stderr(&o));
    let o = mdlc(&["inspect", "missing.mdl"], &dir);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn output_dir_keeps_everything_inside_it() {
    let dir = scratch("build_outside");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for f in ["tri.smd", "tri.bmp"] {
        std::fs::copy(
            Path::new(ROOT).join("testdata/goldsrc/write/tri").join(f),
            dir.join("src").join(f),
        )
        .unwrap();
    }
    let qc = std::fs::read_to_string(tri_qc())
        .unwrap()
        .replace("\"tri.mdl\"", "\"../../up/tri.mdl\"");
    std::fs::write(dir.join("src/tri.qc"), qc).unwrap();
    let o = mdlc(
        &["build", "src/tri.qc", "-o", "out", "--color", "never"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning[W0542]"), "{}", stderr(&o));
    let bytes = std::fs::read(dir.join("out/up/tri.mdl")).unwrap();
    // the header keeps the name as given
    assert_eq!(&bytes[8..25], b"../../up/tri.mdl\0");
    assert!(!dir.join("up").exists());
}

#[test]
fn a_failed_build_writes_nothing_and_keeps_previous_outputs() {
    let dir = scratch("build_fails");
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(dir.join("out/tri.mdl"), b"previous").unwrap();
    for f in ["tri.smd", "tri.bmp"] {
        std::fs::copy(
            Path::new(ROOT).join("testdata/goldsrc/write/tri").join(f),
            dir.join(f),
        )
        .unwrap();
    }
    // LX is not a controller type
    let qc = std::fs::read_to_string(tri_qc())
        .unwrap()
        .replace("ZR -180", "LX -180");
    std::fs::write(dir.join("tri.qc"), qc).unwrap();
    let o = mdlc(&["build", "tri.qc", "-o", "out", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("out/tri.mdl")).unwrap(), b"previous");
    let names: Vec<_> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn the_source_target_writes_the_five_source_files() {
    let dir = scratch("build_source");
    let o = mdlc(
        &[
            "build",
            tri_qc().to_str().unwrap(),
            "--target",
            "source",
            "-o",
            "out",
            "--color",
            "never",
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut written: Vec<String> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".mdlc")
        .collect();
    written.sort();
    assert_eq!(
        written,
        [
            "tri.dx80.vtx",
            "tri.dx90.vtx",
            "tri.mdl",
            "tri.sw.vtx",
            "tri.vvd"
        ]
    );
    // One checksum in all of them: MDL at byte 8, VVD at 8, VTX at 16 (source-geometry.md §10).
    let read = |n: &str| std::fs::read(dir.join("out").join(n)).unwrap();
    let at = |b: &[u8], o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let sum = at(&read("tri.mdl"), 8);
    assert_eq!(at(&read("tri.vvd"), 8), sum);
    for v in ["tri.dx90.vtx", "tri.dx80.vtx", "tri.sw.vtx"] {
        assert_eq!(at(&read(v), 16), sum, "{v}");
    }
}

#[test]
fn build_of_a_corpus_model_equals_valves_file() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let qc = corpus.join("goldsrc-hl1/modelsrc/models/cube/cube.qc");
    let dir = scratch("build_cube");
    let o = mdlc(
        &[
            "build",
            qc.to_str().unwrap(),
            "-o",
            "out",
            "--message-format",
            "json",
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ours = std::fs::read(dir.join("out/cube.mdl")).unwrap();
    let valve = std::fs::read(corpus.join("goldsrc-hl1/expected/cube/cube.mdl")).unwrap();
    assert!(ours == valve, "cube.mdl differs from Valve's");
}

/// goldsrc.md §8.3: without `$cdtexture`, textures are looked up in `$cd`, not in the folder of
/// the mesh that names them (here a mesh in `meshes/`, its texture beside the QC).
#[test]
fn without_cdtexture_textures_come_from_cd() {
    let dir = scratch("textures_from_cd");
    std::fs::create_dir_all(dir.join("meshes")).unwrap();
    std::fs::write(
        dir.join("meshes/box.smd"),
        "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\ntri.bmp\n\
         0 0 0 0 0 0 1 0 0\n0 1 0 0 0 0 1 1 0\n0 0 1 0 0 0 1 0 1\nend\n",
    )
    .unwrap();
    std::fs::copy(
        Path::new(ROOT).join("testdata/goldsrc/write/tri/tri.bmp"),
        dir.join("tri.bmp"),
    )
    .unwrap();
    std::fs::write(
        dir.join("box.qc"),
        "$modelname box.mdl\n$cd \".\"\n$body body \"meshes/box\"\n$sequence idle \"meshes/box\"\n",
    )
    .unwrap();
    let o = mdlc(&["build", "box.qc", "-o", "out", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.join("out/box.mdl").is_file());
    // A texture only beside the mesh is not found there: Valve's tool would not find it either.
    std::fs::rename(dir.join("tri.bmp"), dir.join("meshes/tri.bmp")).unwrap();
    let o = mdlc(&["build", "box.qc", "-o", "out2", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[E0500]"), "{}", stderr(&o));
}

/// The bundled example (`testdata/models/creature`, a Source project) builds for GoldSrc too:
/// its materials are found as the BMPs beside it (W0501 says so once per texture), and the
/// model holds what the project says — two body parts (horns or none), two skin families over
/// three textures plus the albino skin, both sequences with the walk's motion taken out of the
/// root (24 units along Y, `LY`), and the attachment.
#[test]
fn the_bundled_example_builds_for_goldsrc() {
    let dir = scratch("bundled_goldsrc");
    let project = Path::new(ROOT).join("testdata/models/creature/model.toml");
    let o = mdlc(
        &[
            "build",
            project.to_str().unwrap(),
            "--target",
            "goldsrc",
            "--color",
            "never",
            "-o",
            dir.to_str().unwrap(),
        ],
        &dir,
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("warning[W0501]").count(), 4, "{err}");
    assert!(err.contains("0 errors and 4 warnings"), "{err}");
    let bytes = std::fs::read(dir.join("creature/creature.mdl")).unwrap();
    let p = read::parse(&bytes, None, &[]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    let names = |v: Vec<&str>| v.join(",");
    assert_eq!(
        names(p.bodyparts.iter().map(|b| b.part.name.as_str()).collect()),
        "body,horns"
    );
    assert_eq!(p.bodyparts[1].part.nummodels, 2); // horns or `blank`
    assert_eq!(
        names(p.textures.iter().map(|t| t.name.as_str()).collect()),
        "creature_skin,creature_eyes,creature_horn,creature_skin_albino"
    );
    // family 1 replaces the skin (texture 0) by the albino one (texture 3)
    assert_eq!(p.skins, vec![vec![0, 1, 2], vec![3, 1, 2]]);
    assert_eq!(
        names(p.sequences.iter().map(|s| s.desc.label.as_str()).collect()),
        "idle,walk"
    );
    let walk = &p.sequences[1].desc;
    assert_eq!(walk.numframes, 24);
    assert_eq!(walk.motiontype, 0x80); // STUDIO_LY (goldsrc.md §5)
    assert!((walk.linearmovement[1] - 24.0).abs() < 1e-4, "{walk:?}");
    assert_eq!(p.attachments.len(), 1);
}
