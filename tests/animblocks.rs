//! `$animblocksize` and `$bonesaveframe` (issue 16): the animation data moved into an `.ani`
//! file in blocks, the animation descriptions pointing into it, and each animation's first
//! frame kept in the MDL for the bones `$bonesaveframe` (or the 2006 SDK's default) chooses.
//!
//! The same model is built with and without `$animblocksize`; what the engine decodes from the
//! `.ani` must be what it decodes from the MDL-only build, frame by frame, bit for bit (the
//! encoding is the same, only its place changes), IK rules included. The layout rules (a new
//! block when the next animation would overflow it) come from the 2006 SDK's `write.cpp`; the
//! header, the first block at 416, blocks not padded, `animblockikruleindex` 0 without rules
//! are what Valve's own v48 builds show (Half-Life 2's `classic_torso.mdl`/`.ani` and
//! `gman_posture1.mdl`/`.ani`, read with mdlc's reader); the MDL is also read by valvemdl and
//! srctools.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mdlc::formats::source::{pose, read};
use source_common::{close, codes_at, compile_qc, quat_close, write_files};

/// The text under the primary label of each `code` diagnostic in `dir/model.qc`.
fn labelled(diags: &[mdlc::diag::Diagnostic], dir: &Path, code: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("model.qc")).unwrap();
    let only: Vec<_> = diags
        .iter()
        .filter(|d| d.code.as_str() == code)
        .cloned()
        .collect();
    codes_at(&only, &text).into_iter().map(|(_, t)| t).collect()
}

const IKRULE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/ikrule");
const SAVE_POS: i32 = 0x0020_0000;
const SAVE_ROT: i32 = 0x0040_0000;

/// A 6-bone animation of `frames` frames on the ikrule fixture's skeleton: the pelvis walks
/// 0.5 a frame along x, the hand rises 0.05 a frame, every bone turns a little each frame.
fn moving_smd(frames: usize) -> String {
    let mut s = String::from(
        "version 1\nnodes\n0 \"pelvis\" -1\n1 \"thigh\" 0\n2 \"calf\" 1\n3 \"foot\" 2\n4 \"spine\" 0\n5 \"hand\" 4\nend\nskeleton\n",
    );
    for f in 0..frames {
        let t = f as f32;
        let r = (t * 0.1).sin() * 0.3;
        let _ = writeln!(s, "time {f}");
        let _ = writeln!(s, "0 {} 0 40 0 0 {r}", t * 0.5);
        let _ = writeln!(s, "1 0 4 0 {r} 0 0");
        let _ = writeln!(s, "2 0 0 -18 {} 0 0", -r);
        let _ = writeln!(s, "3 0 0 -18 0 {r} 0");
        let _ = writeln!(s, "4 0 0 10 0 0 {}", r * 0.5);
        let _ = writeln!(s, "5 10 0 {} 0 0 0", t * 0.05);
    }
    s.push_str("end\n");
    s
}

/// A folder with `long.smd` (200 frames: sectioned), `med.smd` (40 frames) and `model.qc`:
/// `head` (`$animblocksize` and such lines, or nothing), then the body, an IK chain and
/// sequences with IK rules, a delta one and the two generated animations; `extra` more
/// sequences of `med.smd`.
fn project(name: &str, head: &str, extra: usize) -> PathBuf {
    let dir = source_common::tmp("animblocks", name);
    std::fs::write(dir.join("long.smd"), moving_smd(200)).unwrap();
    std::fs::write(dir.join("med.smd"), moving_smd(40)).unwrap();
    let mut qc = format!(
        "$modelname \"test/blocks.mdl\"\n$cdmaterials \"models/test\"\n{head}\n\
         $body body \"{IKRULE}/ref.smd\"\n\
         $ikchain \"lfoot\" \"foot\" knee 0.707 -0.707 0\n\
         $sequence idle \"{IKRULE}/ref.smd\"\n\
         $sequence walk \"{IKRULE}/walk.smd\" {{\n\tikrule \"lfoot\" footstep range 0 1 3 4\n\tikrule \"lfoot\" release\n}}\n\
         $sequence walk_delta \"{IKRULE}/walk.smd\" subtract idle 0 delta\n\
         $sequence long \"long.smd\" loop\n\
         $sequence med \"med.smd\"\n"
    );
    for k in 0..extra {
        let _ = writeln!(qc, "$sequence med{k} \"med.smd\" fps {}", 20 + k % 20);
    }
    std::fs::write(dir.join("model.qc"), qc).unwrap();
    dir
}

/// Compiles `dir/model.qc` into `dir/out`; returns the files and the MDL path.
fn compile(dir: &Path) -> (Vec<(String, Vec<u8>)>, PathBuf) {
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    let files = out.unwrap_or_else(|| panic!("{diags:#?}"));
    let mdl = write_files(&dir.join("out"), &files);
    (files, mdl)
}

fn file<'a>(files: &'a [(String, Vec<u8>)], suffix: &str) -> &'a [u8] {
    &files
        .iter()
        .find(|(n, _)| n.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} among the files"))
        .1
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Every animation decodes from the `.ani` exactly as from the MDL-only build, IK rules too;
/// the blocks are laid out as Valve's v48 builds lay them out.
#[test]
fn the_ani_holds_what_the_mdl_would() {
    let plain_dir = project("plain", "", 8);
    let (plain_files, _) = compile(&plain_dir);
    let plain = read::read_mdl(file(&plain_files, ".mdl")).unwrap();

    let dir = project("blocks", "$animblocksize 2", 8);
    let (files, mdl_path) = compile(&dir);
    let mdl = file(&files, ".mdl");
    let ani = file(&files, ".ani");
    let m = read::read_mdl_ani(mdl, Some(ani)).unwrap();
    assert!(dir.join("out/test/blocks.ani").is_file());

    // the .ani: a studiohdr_t-sized IDAG header with its length and nothing else, blocks one
    // after the other from 416 (the header rounded up to 16), the last ending the file, as in
    // Valve's builds
    assert_eq!(&ani[0..4], b"IDAG");
    assert_eq!(i32_at(ani, 4), 48);
    assert_eq!(i32_at(ani, 76) as usize, ani.len());
    assert!(ani[8..76].iter().chain(&ani[80..408]).all(|&x| x == 0));
    assert_eq!(m.ani_name, "models/test/blocks.ani");
    let blocks = &m.anim_blocks;
    assert!(blocks.len() > 3, "{} blocks", blocks.len());
    assert_eq!((blocks[0].datastart, blocks[0].dataend), (0, 0));
    assert_eq!(blocks[1].datastart, 416);
    for w in blocks[1..].windows(2) {
        assert_eq!(w[0].dataend, w[1].datastart);
    }
    assert_eq!(blocks.last().unwrap().dataend as usize, ani.len());
    for b in &blocks[1..] {
        assert_eq!(b.datastart % 4, 0);
    }

    // The pieces in file order, as Valve's v48 builds lay them out (Half-Life 2's
    // `male_shared.ani`): an animation without sections is one piece, its chain with its IK
    // rules; a sectioned one is a piece per section, then one of its IK rules. A piece starts a
    // new block (at the block's first byte) only when it would take its block past 2 KB, so a
    // block over 2 KB holds one piece. The animdesc names the block of its last piece, and
    // `animindex` is the first chain's place from that block's start.
    let base = mdl.len();
    let mut pieces: Vec<(i32, usize)> = Vec::new();
    for a in &m.animations {
        assert!(
            a.rec.animblock >= 1,
            "`{}` in block {}",
            a.name,
            a.rec.animblock
        );
        assert_eq!(a.rec.ikruleindex, 0);
        assert_eq!(a.rec.numikrules as usize, a.ikrules.len(), "`{}`", a.name);
        let at = |c: &mdlc::formats::source::read::RChain| c.start.unwrap() - base;
        let first = at(&a.chains[0]);
        let ab = &blocks[a.rec.animblock as usize];
        assert_eq!(
            i64::from(a.rec.animindex),
            first as i64 - i64::from(ab.datastart),
            "`{}`",
            a.name
        );
        if a.rec.sectionframes == 0 {
            assert!(a.chains.iter().all(|c| c.animblock == a.rec.animblock));
            pieces.push((a.rec.animblock, first));
        } else {
            pieces.extend(a.chains.iter().map(|c| (c.animblock, at(c))));
            if a.ikrules.is_empty() {
                assert_eq!(a.rec.animblock, a.chains.last().unwrap().animblock);
            } else {
                let ik = ab.datastart as usize + a.rec.animblockikruleindex as usize;
                pieces.push((a.rec.animblock, ik));
            }
        }
    }
    for w in pieces.windows(2) {
        let ((b0, _), (b1, s1)) = (w[0], w[1]);
        assert!(b1 == b0 || b1 == b0 + 1, "{w:?}");
        if b1 != b0 {
            assert_eq!(s1, blocks[b1 as usize].datastart as usize, "{w:?}");
        }
    }
    for (k, b) in blocks.iter().enumerate().skip(1) {
        let held = pieces.iter().filter(|p| p.0 == k as i32).count();
        assert!(held >= 1, "block {k} holds nothing");
        if held > 1 {
            // at most 2 KB, and up to 15 bytes of alignment before the next block
            assert!(b.dataend - b.datastart <= 2048 + 15, "block {k}: {b:?}");
        }
    }
    let long = m.animations.iter().find(|a| a.name == "@long").unwrap();
    assert!(long.rec.sectionframes > 0, "`long` is sectioned");
    assert!(long.chains.len() > 2);
    let spread: std::collections::BTreeSet<i32> = long.chains.iter().map(|c| c.animblock).collect();
    assert!(
        spread.len() > 1,
        "`long`'s sections lie in blocks {spread:?}"
    );

    // decoded: equal frame by frame to the MDL-only build
    for (i, (a, p)) in m.animations.iter().zip(&plain.animations).enumerate() {
        assert_eq!(a.name, p.name);
        for f in 0..a.rec.numframes {
            let x = pose::decode_anim(&m.bytes, &m, i, f as f32).unwrap();
            let y = pose::decode_anim(&plain.bytes, &plain, i, f as f32).unwrap();
            assert_eq!(x, y, "`{}` frame {f}", a.name);
        }
        assert_eq!(a.ikrules.len(), p.ikrules.len(), "`{}`", a.name);
        for (r, s) in a.ikrules.iter().zip(&p.ikrules) {
            assert_eq!(r.rec.r#type, s.rec.r#type);
            assert_eq!(r.rec.start, s.rec.start);
            assert_eq!(r.rec.end, s.rec.end);
            assert_eq!(
                r.error.as_ref().map(|e| &e.1),
                s.error.as_ref().map(|e| &e.1)
            );
        }
    }
    let walk = m.animations.iter().find(|a| a.name == "@walk").unwrap();
    assert_eq!(walk.ikrules.len(), 2);
    assert!(walk.ikrules[0].error.is_some());

    // the MDL alone says where the data is but cannot give it
    let alone = read::read_mdl(mdl).unwrap();
    let e = pose::decode_anim(&alone.bytes, &alone, 1, 0.0).unwrap_err();
    assert!(e.contains(".ani"), "{e}");
    assert!(mdlc::formats::source::anim_problems(&m).is_empty());
    assert!(mdlc::formats::source::anim_problems(&alone).is_empty());

    // the MDL-only build is unchanged by all this: no blocks, no zero frames, no flags
    assert!(!plain_files.iter().any(|(n, _)| n.ends_with(".ani")));
    assert_eq!(plain.hdr.numanimblocks, 0);
    assert!(plain.animations.iter().all(|a| a.zero_frame.is_none()));
    assert!(plain
        .bones
        .iter()
        .all(|b| b.rec.flags & (SAVE_POS | SAVE_ROT) == 0));

    // independent readers take the MDL as it is
    if let Some(v) = source_common::oracle_check(&mdl_path) {
        assert_eq!(v["srctools_sequences"].as_array().unwrap().len(), 13);
    }
}

/// Without `$bonesaveframe`, every bone keeps its rotation and the root and the bones that
/// move more than 2 units their position too (the 2006 SDK's rule); the zero frames are
/// frames 0, span, 2·span of each animation as the engine decodes them, as many and as far
/// apart as in Valve's v48 builds.
#[test]
fn zero_frames_are_frames_span_apart() {
    let dir = project("zero", "$animblocksize 64", 0);
    let (files, _) = compile(&dir);
    let m = read::read_mdl_ani(file(&files, ".mdl"), Some(file(&files, ".ani"))).unwrap();
    let flags: Vec<(String, i32)> = m
        .bones
        .iter()
        .map(|b| (b.name.clone(), b.rec.flags & (SAVE_POS | SAVE_ROT)))
        .collect();
    // the pelvis is the root; the hand rises 10 units in `long` and 2 in `med`; the others
    // keep their place
    let both = SAVE_POS | SAVE_ROT;
    assert_eq!(
        flags,
        [
            ("pelvis".to_string(), both),
            ("thigh".into(), SAVE_ROT),
            ("calf".into(), SAVE_ROT),
            ("foot".into(), both),
            ("spine".into(), SAVE_ROT),
            ("hand".into(), both),
        ]
    );
    assert_eq!(m.anim_blocks.len(), 2, "all in one 64 KB block");
    // (frames, looping) → (span, count), as Valve's v48 builds keep them (Half-Life 2's
    // `male_shared`: 5 → (4, 1), 40 → (9, 3), looping 200 → (9, 3); see
    // `zero_frame_sampling_is_valves` in write.rs for the whole table)
    let mut seen = Vec::new();
    for (i, a) in m.animations.iter().enumerate() {
        let z = pose::zero_frames(&m, a).unwrap();
        let span = a.rec.zeroframespan as usize;
        seen.push((
            a.name.clone(),
            a.rec.numframes,
            a.rec.zeroframespan,
            a.rec.zeroframecount,
        ));
        assert_eq!(z.len(), a.rec.zeroframecount as usize);
        for (k, z) in z.iter().enumerate() {
            let frame = pose::decode_anim(&m.bytes, &m, i, (k * span) as f32).unwrap();
            assert_eq!(z.len(), m.bones.len());
            for (b, (zf, d)) in z.iter().zip(&frame).enumerate() {
                let want_pos = flags[b].1 & SAVE_POS != 0;
                assert_eq!(zf.0.is_some(), want_pos);
                assert!(zf.1.is_some());
                if let Some(p) = zf.0 {
                    // a Vector48 holds 11 significant bits
                    let eps = d.pos.iter().fold(0.02f32, |e, v| e.max(v.abs() / 1000.0));
                    assert!(
                        close(&p, &d.pos, eps),
                        "`{}` sample {k} bone {b}: {p:?} {:?}",
                        a.name,
                        d.pos
                    );
                }
                if let Some(q) = zf.1 {
                    assert!(
                        quat_close(q, d.quat, 2e-4),
                        "`{}` sample {k} bone {b}: {q:?} {:?}",
                        a.name,
                        d.quat
                    );
                }
            }
        }
    }
    let got: Vec<(&str, i32, i16, i16)> =
        seen.iter().map(|s| (s.0.as_str(), s.1, s.2, s.3)).collect();
    for want in [
        ("@idle", 1, 0, 1),
        ("@walk", 5, 4, 1),
        ("@med", 40, 9, 3),
        ("@long", 200, 9, 3),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    let walk_delta = m
        .animations
        .iter()
        .find(|a| a.name == "@walk_delta")
        .unwrap();
    assert!(
        walk_delta.rec.flags & 0x4 != 0,
        "a delta animation keeps its delta"
    );
}

/// `$bonesaveframe` chooses the bones (any case), a name the model does not have is skipped
/// with W0624 at its span, and `$animblocksize 0` writes no `.ani` (the SDK's "off").
#[test]
fn bonesaveframe_chooses_the_bones() {
    let head = "$animblocksize 8\n$bonesaveframe \"THIGH\" position\n$bonesaveframe \"hand\" rotation position\n$bonesaveframe \"nope\"";
    let dir = project("save", head, 0);
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    let files = out.unwrap();
    assert_eq!(labelled(&diags, &dir, "W0624"), ["\"nope\""]);
    let m = read::read_mdl_ani(file(&files, ".mdl"), Some(file(&files, ".ani"))).unwrap();
    let flags: Vec<i32> = m
        .bones
        .iter()
        .map(|b| b.rec.flags & (SAVE_POS | SAVE_ROT))
        .collect();
    assert_eq!(flags, [0, SAVE_POS, 0, 0, 0, SAVE_POS | SAVE_ROT]);
    for a in &m.animations {
        let z = pose::zero_frames(&m, a).unwrap().swap_remove(0);
        let kept: Vec<(bool, bool)> = z.iter().map(|x| (x.0.is_some(), x.1.is_some())).collect();
        assert_eq!(
            kept,
            [
                (false, false),
                (true, false),
                (false, false),
                (false, false),
                (false, false),
                (true, true)
            ]
        );
    }

    let off = project("off", "$animblocksize 0\n$bonesaveframe \"hand\"", 0);
    let (out, diags) = compile_qc(&off.join("model.qc"));
    let files = out.unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(!files.iter().any(|(n, _)| n.ends_with(".ani")));
    let m = read::read_mdl(file(&files, ".mdl")).unwrap();
    assert!(m
        .bones
        .iter()
        .all(|b| b.rec.flags & (SAVE_POS | SAVE_ROT) == 0));
}

/// A negative size is E0622 at the `$animblocksize` value, with no output. More blocks than
/// the engine keeps (255 besides the MDL) is W0625 there: the smallest size in KB that fits is
/// taken (Valve's later compilers build such projects: Garry's Mod's player animations), and
/// the files are those of a QC that asks for that size.
#[test]
fn block_errors() {
    let dir = project("negative", "$animblocksize -4", 0);
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    assert!(out.is_none());
    assert_eq!(labelled(&diags, &dir, "E0622"), ["-4"]);

    // 1 KB blocks and 260 animations of over 1 KB each: a block per animation
    let dir = project("many", "$animblocksize 1", 255);
    let (out, diags) = compile_qc(&dir.join("model.qc"));
    let grown = out.unwrap_or_else(|| panic!("{diags:#?}"));
    let w = diags.iter().find(|d| d.code.as_str() == "W0625").unwrap();
    assert!(
        w.message
            .contains("blocks of 1 KB, and Source reads at most 255: mdlc writes blocks of 2 KB"),
        "{}",
        w.message
    );
    assert_eq!(labelled(&diags, &dir, "W0625"), ["1"]);
    // 2 KB, one more, fits: the same files as a QC asking for it
    let fits = project("many-fits", "$animblocksize 2", 255);
    let (files, fits_diags) = compile_qc(&fits.join("model.qc"));
    let files = files.unwrap_or_else(|| panic!("{fits_diags:#?}"));
    assert!(!fits_diags.iter().any(|d| d.code.as_str() == "W0625"));
    let m = read::read_mdl_ani(file(&files, ".mdl"), Some(file(&files, ".ani"))).unwrap();
    assert!(m.anim_blocks.len() <= 256, "{}", m.anim_blocks.len());
    assert!(
        w.message
            .contains(&format!("({} blocks)", m.anim_blocks.len() - 1)),
        "{}",
        w.message
    );
    for name in [".mdl", ".ani", ".vvd"] {
        assert_eq!(file(&grown, name), file(&files, name), "{name}");
    }
}

/// The CLI: `mdlc build` writes the `.ani` beside the `.mdl`, `mdlc inspect` reads it (the
/// blocks in the dump, poses decoded from it), Ninja lists it as an output, and `import-qc`
/// carries `$animblocksize` and `$bonesaveframe` into a TOML that builds the same model.
#[test]
fn cli_builds_inspects_and_imports() {
    let dir = project(
        "cli",
        "$animblocksize 4\n$bonesaveframe \"pelvis\" position rotation",
        2,
    );
    let qc = dir.join("model.qc");
    let out = common::build_into_out(&qc, &dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mdl = dir.join("out/test/blocks.mdl");
    assert!(dir.join("out/test/blocks.ani").is_file());

    let j = common::inspect_json(&mdl);
    let blocks = &j["mdl"]["header"]["animblocks"];
    assert_eq!(blocks["name"], "models/test/blocks.ani");
    assert_eq!(blocks["ani_read"], true);
    assert!(blocks["blocks"].as_array().unwrap().len() > 1);
    assert_eq!(
        j["problems"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        j["problems"]
    );
    let p = common::inspect_json_with(&mdl, &["--pose", "long", "--frame", "150"]);
    assert!(p.to_string().contains("pelvis"), "{p}");

    // without the .ani beside it, inspect still reads the MDL, and says why a pose cannot be had
    std::fs::remove_file(dir.join("out/test/blocks.ani")).unwrap();
    let j = common::inspect_json(&mdl);
    assert_eq!(j["mdl"]["header"]["animblocks"]["ani_read"], false);
    let o = common::mdlc(
        &[
            "inspect",
            mdl.to_str().unwrap(),
            "--pose",
            "long",
            "--frame",
            "3",
        ],
        &dir,
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains(".ani"), "{o:?}");

    let ninja = common::mdlc(&["ninja", qc.to_str().unwrap(), "-o", "out"], &dir);
    let text = String::from_utf8_lossy(&ninja.stdout).to_string()
        + &std::fs::read_to_string(dir.join("build.ninja")).unwrap_or_default();
    assert!(text.contains("blocks.ani"), "{text}");

    let toml = common::import_builds_same(&qc, "animblocks-import");
    assert!(toml.contains("anim_block_size = 4"), "{toml}");
    assert!(
        toml.contains(
            "bone_save_frames = [{ bone = \"pelvis\", position = true, rotation = true }]"
        ),
        "{toml}"
    );
}
