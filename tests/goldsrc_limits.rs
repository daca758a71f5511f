//! What mdlc refuses or warns about in a GoldSrc project where Valve's HL1 compiler would
//! overflow one of its fixed arrays, write a model the engine or its viewer cannot use, or hang
//! (`goldsrc.md` §5 "Limits", Valve's `utils/studiomdl/studiomdl.h` array sizes, the Half-Life
//! client's `StudioModelRenderer.cpp` and the model viewer's `studio_utils.cpp`), plus a model
//! with nothing in it for either target. Every input is generated here (a few hundred lines of
//! QC or SMD rather than checked-in fixtures) next to a copy of the one-triangle model of
//! `testdata/goldsrc/write/tri`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

mod common;
use common::mdlc;

use mdlc::diag::{Diagnostic, Sources};
use mdlc::driver::{compile_goldsrc, compile_source, read_project, InputKind};
use mdlc::formats::goldsrc::read;
use mdlc::load::fs::RealFs;
use mdlc::project::Target;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A fresh folder holding `tri.smd` and `tri.bmp`.
fn scratch(name: &str) -> PathBuf {
    let dir = common::fresh_dir(
        Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("goldsrc_limits")
            .join(name),
    );
    let tri = Path::new(ROOT).join("testdata/goldsrc/write/tri");
    for f in ["tri.smd", "tri.bmp"] {
        std::fs::copy(tri.join(f), dir.join(f)).unwrap();
    }
    dir
}

/// One diagnostic: its code, and the file name, line and column of its primary span.
#[derive(Debug, PartialEq)]
struct Found {
    code: String,
    at: Option<(String, usize, usize)>,
}

struct Built {
    files: Option<Vec<(PathBuf, Vec<u8>)>>,
    found: Vec<Found>,
    rendered: String,
}

impl Built {
    fn codes(&self) -> Vec<&str> {
        self.found.iter().map(|f| f.code.as_str()).collect()
    }

    /// The (file name, line, column) of the one diagnostic with `code`.
    fn at(&self, code: &str) -> (String, usize, usize) {
        let hits: Vec<&Found> = self.found.iter().filter(|f| f.code == code).collect();
        assert_eq!(hits.len(), 1, "one {code} expected:\n{}", self.rendered);
        hits[0].at.clone().expect("a span")
    }

    fn errors(&self) -> Vec<&str> {
        self.codes()
            .into_iter()
            .filter(|c| c.starts_with('E'))
            .collect()
    }
}

fn build_for(dir: &Path, qc: &str, text: &str, target: Target) -> Built {
    let path = dir.join(qc);
    std::fs::write(&path, text).unwrap();
    let mut sources = Sources::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let spec = read_project(
        &path,
        InputKind::Qc,
        &RealFs,
        Some(target),
        &mut sources,
        &mut diags,
    );
    let files = spec.and_then(|spec| match target {
        Target::GoldSrc => compile_goldsrc(&spec, &RealFs, None, &mut sources, &mut diags, None),
        Target::Source => compile_source(&spec, &RealFs, None, &mut sources, &mut diags, None),
    });
    let found = diags
        .iter()
        .map(|d| Found {
            code: d.code.as_str().to_string(),
            at: d.primary().and_then(|p| {
                let f = sources.get(p.file)?;
                let (line, col) = f.line_col(p.span.start);
                let name = Path::new(&f.name)
                    .file_name()?
                    .to_string_lossy()
                    .into_owned();
                Some((name, line, col))
            }),
        })
        .collect();
    let rendered = diags
        .iter()
        .map(|d| mdlc::diag::render_plain(&sources, d))
        .collect();
    Built {
        files,
        found,
        rendered,
    }
}

fn build(dir: &Path, qc: &str, text: &str) -> Built {
    build_for(dir, qc, text, Target::GoldSrc)
}

/// The one-triangle model with `extra` QC lines after its body and before its sequence.
fn tri_qc(extra: &str) -> String {
    format!("$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n{extra}$sequence \"idle\" \"tri\"\n")
}

/// A header line, `n` generated command lines, the body and the sequence: the command number
/// `k` (0-based) is on line `k + 3`.
fn with_lines(n: usize, line: impl Fn(usize) -> String) -> String {
    let mut qc = String::from("$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n");
    for k in 0..n {
        qc.push_str(&line(k));
        qc.push('\n');
    }
    qc.push_str("$sequence \"idle\" \"tri\"\n");
    qc
}

// --- 1. a model with nothing in it ------------------------------------------------------------

#[test]
fn an_empty_qc_or_one_with_only_modelname_is_an_error_for_both_targets() {
    let dir = scratch("empty");
    for target in [Target::GoldSrc, Target::Source] {
        let b = build_for(&dir, "empty.qc", "", target);
        assert!(b.files.is_none(), "{target:?}: a file was written");
        assert_eq!(b.errors(), ["E0412"], "{}", b.rendered);
        assert_eq!(b.at("E0412"), ("empty.qc".into(), 1, 1));

        let b = build_for(
            &dir,
            "named.qc",
            "// nothing\n$modelname \"x.mdl\"\n",
            target,
        );
        assert!(b.files.is_none());
        assert_eq!(b.errors(), ["E0412"], "{}", b.rendered);
        // at `$modelname`'s value
        assert_eq!(b.at("E0412"), ("named.qc".into(), 2, 12));
    }
    // a model with a body (or only sequences, for Source's `$includemodel` libraries) is not empty
    let b = build_for(&dir, "ok.qc", &tri_qc(""), Target::Source);
    assert!(b.files.is_some(), "{}", b.rendered);
    let b = build_for(
        &dir,
        "anims.qc",
        "$modelname \"a.mdl\"\n$sequence \"idle\" \"tri\"\n",
        Target::Source,
    );
    assert!(!b.codes().contains(&"E0412"), "{}", b.rendered);
}

// --- 2. a sequence group without sequences ------------------------------------------------------

#[test]
fn an_empty_sequence_group_warns_and_inspect_reads_every_group_file_alone() {
    let dir = scratch("empty_group");
    let qc = "$modelname \"g.mdl\"\n$body \"body\" \"tri\"\n$sequence \"idle\" \"tri\"\n$sequencegroup \"extra\"\n";
    let b = build(&dir, "g.qc", qc);
    assert_eq!(b.at("W0546"), ("g.qc".into(), 4, 16));
    // written as Valve's tool writes it: a 76-byte header without animation (§4.2)
    let files = b.files.expect("the model builds");
    let group = &files
        .iter()
        .find(|(p, _)| p.ends_with("g01.mdl"))
        .unwrap()
        .1;
    assert_eq!(group.len(), 76);
    assert_eq!(&group[0..4], b"IDSQ");

    // a group with a sequence: no warning
    let qc2 = "$modelname \"h.mdl\"\n$body \"body\" \"tri\"\n$sequencegroup \"extra\"\n$sequence \"idle\" \"tri\"\n";
    let b = build(&dir, "h.qc", qc2);
    assert!(!b.codes().contains(&"W0546"), "{}", b.rendered);

    // `mdlc inspect` of the group files themselves (before, E0546: "too short for an MDL header")
    let o = mdlc(&["build", "g.qc", "-o", "out", "--target", "goldsrc"], &dir);
    assert_eq!(o.status.code(), Some(0));
    let o = mdlc(&["build", "h.qc", "-o", "out", "--target", "goldsrc"], &dir);
    assert_eq!(o.status.code(), Some(0));
    for (file, data) in [("out/g01.mdl", "0 bytes"), ("out/h01.mdl", "bytes")] {
        let o = mdlc(&["inspect", file], &dir);
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("  id: \"IDSQ\"\n"), "{text}");
        assert!(text.contains(data), "{text}");
        assert!(text.contains("invariants: all hold"), "{text}");
    }
    let o = mdlc(&["inspect", "--json", "out/g01.mdl"], &dir);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["group_header"]["name"], "models\\g01.mdl");
    assert_eq!(v["group_header"]["length"], 76);
    // a broken group file is still reported
    let mut bad = std::fs::read(dir.join("out/g01.mdl")).unwrap();
    bad.extend_from_slice(&[0; 4]);
    std::fs::write(dir.join("bad01.mdl"), &bad).unwrap();
    let o = mdlc(&["inspect", "bad01.mdl", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("error[E0547]") && err.contains("length is 76"),
        "{err}"
    );
}

// --- 3. a model without textures ------------------------------------------------------------------

/// `tri.smd` without its triangle.
fn no_triangles(dir: &Path) {
    let smd = std::fs::read_to_string(dir.join("tri.smd")).unwrap();
    let cut = smd.find("triangles").unwrap();
    std::fs::write(
        dir.join("notri.smd"),
        format!("{}triangles\nend\n", &smd[..cut]),
    )
    .unwrap();
}

#[test]
fn a_model_without_textures_is_an_error_unless_its_textures_are_external() {
    let dir = scratch("no_textures");
    no_triangles(&dir);
    let qc = "$modelname \"nt.mdl\"\n$body \"body\" \"notri\"\n$sequence \"idle\" \"tri\"\n";
    let b = build(&dir, "nt.qc", qc);
    assert!(b.files.is_none());
    assert_eq!(b.errors(), ["E0544"], "{}", b.rendered);
    assert_eq!(b.at("E0544"), ("nt.qc".into(), 2, 1));
    // a model without body parts (only a sequence) has no texture either
    let b = build(
        &dir,
        "seq.qc",
        "$modelname \"s.mdl\"\n$sequence \"idle\" \"tri\"\n",
    );
    assert_eq!(b.errors(), ["E0544"], "{}", b.rendered);

    // with `$externaltextures` the model builds, with a T file that `inspect` reads
    let qc = "$modelname \"ne.mdl\"\n$externaltextures\n$body \"body\" \"notri\"\n$sequence \"idle\" \"tri\"\n";
    std::fs::write(dir.join("ne.qc"), qc).unwrap();
    let o = mdlc(
        &["build", "ne.qc", "-o", "out", "--target", "goldsrc"],
        &dir,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = mdlc(&["inspect", "out/ne.mdl"], &dir);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("  numtextures: 0\n"), "{text}");
    assert!(text.contains("invariants: all hold"), "{text}");
    // without its T file the model cannot be read, as the build says (E0544)
    std::fs::remove_file(dir.join("out/neT.mdl")).unwrap();
    let o = mdlc(&["inspect", "out/ne.mdl", "--color", "never"], &dir);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("error[E0547]") && err.contains("neT.mdl"),
        "{err}"
    );
}

// --- 4. limits of Valve's arrays ------------------------------------------------------------------

#[test]
fn more_than_512_attachments_hit_boxes_or_controllers_is_an_error_at_the_513th() {
    let dir = scratch("src_bones");
    let attachments = with_lines(513, |k| format!("$attachment {k} \"root\" 0 0 0"));
    let b = build(&dir, "att.qc", &attachments);
    assert!(b.files.is_none());
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    assert_eq!(b.at("E0541"), ("att.qc".into(), 515, 1));
    let hboxes = with_lines(513, |_| "$hbox 0 \"root\" 0 0 0 1 1 1".to_string());
    let b = build(&dir, "hbox.qc", &hboxes);
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    assert_eq!(b.at("E0541").1, 515);
    let controllers = with_lines(513, |k| format!("$controller {} \"root\" ZR 0 90", k % 4));
    let b = build(&dir, "ctl.qc", &controllers);
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    assert_eq!(b.at("E0541").1, 515);
    // 512 of each is allowed
    let b = build(
        &dir,
        "att512.qc",
        &with_lines(512, |k| format!("$attachment {k} \"root\" 0 0 0")),
    );
    assert!(b.errors().is_empty(), "{}", b.rendered);
}

#[test]
fn more_than_4_attachments_warn_as_valves_client_quits_on_them() {
    let dir = scratch("attachments");
    let b = build(
        &dir,
        "five.qc",
        &with_lines(5, |k| format!("$attachment {k} \"root\" 0 0 0")),
    );
    assert!(b.files.is_some(), "{}", b.rendered);
    assert_eq!(b.at("W0547"), ("five.qc".into(), 7, 1));
    let b = build(
        &dir,
        "four.qc",
        &with_lines(4, |k| format!("$attachment {k} \"root\" 0 0 0")),
    );
    assert!(!b.codes().contains(&"W0547"), "{}", b.rendered);
}

#[test]
fn more_than_2048_animations_or_sequences_is_an_error() {
    let dir = scratch("animations");
    // 129 sequences of 16 blends: 2064 animations (`panimation[2048]`)
    let blends = vec!["\"tri\""; 16].join(" ");
    let mut qc = String::from("$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n");
    for k in 0..129 {
        qc.push_str(&format!("$sequence \"s{k}\" {blends}\n"));
    }
    let b = build(&dir, "anims.qc", &qc);
    assert!(b.files.is_none());
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    // sequence 128 (line 131) brings the count from 2048 to 2064
    assert_eq!(b.at("E0541"), ("anims.qc".into(), 131, 1));
    // 2049 sequences of one blend: over both limits
    let mut qc = String::from("$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n");
    for k in 0..2049 {
        qc.push_str(&format!("$sequence \"s{k}\" \"tri\"\n"));
    }
    let b = build(&dir, "seqs.qc", &qc);
    assert_eq!(b.errors(), ["E0541", "E0541"], "{}", b.rendered);
    assert!(
        b.rendered.contains("too many sequences: 2049"),
        "{}",
        b.rendered
    );
}

#[test]
fn more_than_16_blends_is_an_error() {
    let dir = scratch("blends");
    let blends = vec!["\"tri\""; 17].join(" ");
    let qc = format!("$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n$sequence \"s\" {blends}\n");
    let b = build(&dir, "blends.qc", &qc);
    assert!(b.errors().contains(&"E0541"), "{}", b.rendered);
    assert!(b.rendered.contains("has 17 blends"), "{}", b.rendered);
}

#[test]
fn more_than_32_skin_rows_in_a_texture_group_is_an_error() {
    let dir = scratch("texgroup");
    let mut rows = String::from("{ \"tri.bmp\" }");
    for k in 1..33 {
        std::fs::copy(dir.join("tri.bmp"), dir.join(format!("t{k}.bmp"))).unwrap();
        rows.push_str(&format!(" {{ \"t{k}.bmp\" }}"));
    }
    let qc = tri_qc(&format!("$texturegroup \"skins\" {{ {rows} }}\n"));
    let b = build(&dir, "rows.qc", &qc);
    assert!(b.files.is_none());
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    assert_eq!(b.at("E0541").1, 3);
    assert!(b.rendered.contains("33 skin rows"), "{}", b.rendered);
    // 32 rows are allowed
    let rows32: String = rows.rsplit_once(" {").unwrap().0.to_string();
    let b = build(
        &dir,
        "rows32.qc",
        &tri_qc(&format!("$texturegroup \"skins\" {{ {rows32} }}\n")),
    );
    assert!(b.errors().is_empty(), "{}", b.rendered);
}

/// An SMD with `bones` bones (all children of bone 0) and `tris` triangles on bone 0, the
/// first `split` of them with `tri.bmp`, the others with `tri2.bmp`.
fn smd(bones: usize, tris: usize, split: usize) -> String {
    let mut s = String::from("version 1\nnodes\n0 \"root\" -1\n");
    for b in 1..bones {
        s.push_str(&format!("{b} \"b{b}\" 0\n"));
    }
    s.push_str("end\nskeleton\ntime 0\n");
    for b in 0..bones {
        s.push_str(&format!("{b} 0 0 0 0 0 0\n"));
    }
    s.push_str("end\ntriangles\n");
    for t in 0..tris {
        s.push_str(if t < split { "tri.bmp\n" } else { "tri2.bmp\n" });
        s.push_str("0 0 0 0 0 0 1 0 0\n0 8 0 0 0 0 1 1 0\n0 0 8 0 0 0 1 0 1\n");
    }
    s.push_str("end\n");
    s
}

#[test]
fn more_than_20000_triangles_in_one_model_is_an_error_even_over_two_textures() {
    let dir = scratch("triangles");
    std::fs::copy(dir.join("tri.bmp"), dir.join("tri2.bmp")).unwrap();
    // 10001 + 10000 triangles: each mesh is under the limit, the model (`trimesh[20000]`) is not
    std::fs::write(dir.join("many.smd"), smd(1, 20001, 10001)).unwrap();
    let qc = "$modelname \"m.mdl\"\n$body \"body\" \"many\"\n$sequence \"idle\" \"tri\"\n";
    let b = build(&dir, "tris.qc", qc);
    assert!(b.files.is_none());
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    assert!(
        b.rendered
            .contains("too many triangles in model `many`: 20001"),
        "{}",
        b.rendered
    );
    std::fs::write(dir.join("many.smd"), smd(1, 20000, 10000)).unwrap();
    let b = build(&dir, "tris.qc", qc);
    assert!(b.errors().is_empty(), "{}", b.rendered);
}

#[test]
fn more_than_512_bones_in_one_smd_is_an_error() {
    let dir = scratch("nodes");
    std::fs::write(dir.join("bones.smd"), smd(513, 1, 1)).unwrap();
    let qc = "$modelname \"m.mdl\"\n$body \"body\" \"bones\"\n$sequence \"idle\" \"tri\"\n";
    let b = build(&dir, "nodes.qc", qc);
    assert!(b.files.is_none());
    assert_eq!(b.errors(), ["E0541"], "{}", b.rendered);
    assert_eq!(b.at("E0541").1, 2);
    assert!(
        b.rendered.contains("too many bones in `bones`: 513"),
        "{}",
        b.rendered
    );
}

#[test]
fn more_than_32_body_parts_or_models_is_an_error() {
    let dir = scratch("bodyparts");
    let mut qc = String::from("$modelname \"m.mdl\"\n");
    for k in 0..33 {
        qc.push_str(&format!("$body \"b{k}\" \"tri\"\n"));
    }
    qc.push_str("$sequence \"idle\" \"tri\"\n");
    let b = build(&dir, "parts.qc", &qc);
    assert!(b.files.is_none());
    // 33 body parts of one model each: both limits, at the 33rd
    assert_eq!(b.errors(), ["E0541", "E0541"], "{}", b.rendered);
    assert!(
        b.found.iter().all(|f| f.at.as_ref().unwrap().1 == 34),
        "{}",
        b.rendered
    );
}

// --- 5. controller indices -------------------------------------------------------------------------

#[test]
fn a_controller_index_other_than_0_to_4_is_an_error() {
    let dir = scratch("controllers");
    for (index, line_ok) in [
        ("5", false),
        ("-1", false),
        ("4", true),
        ("mouth", true),
        ("3", true),
    ] {
        let b = build(
            &dir,
            "ctl.qc",
            &tri_qc(&format!("$controller {index} \"root\" ZR 0 90\n")),
        );
        if line_ok {
            assert!(b.errors().is_empty(), "{index}: {}", b.rendered);
        } else {
            assert!(b.files.is_none());
            assert_eq!(b.errors(), ["E0545"], "{index}: {}", b.rendered);
            assert_eq!(b.at("E0545"), ("ctl.qc".into(), 3, 1));
        }
    }
}

// --- 6. activity numbers -----------------------------------------------------------------------------

#[test]
fn an_activity_number_past_a_32_bit_int_is_an_error() {
    let dir = scratch("activity");
    let qc = "$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n$sequence \"idle\" \"tri\" ACT_99999999999 1\n";
    let b = build(&dir, "act.qc", qc);
    // once, at the word (its weight is not taken for a file)
    assert_eq!(b.errors(), ["E0233"], "{}", b.rendered);
    assert_eq!(b.at("E0233"), ("act.qc".into(), 3, 24));
    let o = mdlc(
        &["build", "act.qc", "-o", "out", "--target", "goldsrc"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(!dir.join("out").exists(), "a file was written");
    let b = build(
        &dir,
        "act.qc",
        "$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n$sequence \"idle\" \"tri\" ACT_1000000000000000000000000 1\n",
    );
    assert_eq!(b.errors(), ["E0233"], "{}", b.rendered);
    // the largest number is kept
    let b = build(
        &dir,
        "act.qc",
        "$modelname \"m.mdl\"\n$body \"body\" \"tri\"\n$sequence \"idle\" \"tri\" ACT_2147483647 1\n",
    );
    let files = b.files.expect("builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.sequences[0].desc.activity, 2147483647);
}

// --- 7. rotations Valve's tool cannot wrap ----------------------------------------------------------

#[test]
fn a_huge_skeleton_rotation_is_an_error_at_the_value() {
    let dir = scratch("rotation");
    let smd = std::fs::read_to_string(dir.join("tri.smd")).unwrap();
    let huge = smd.replace(
        "0 0.000000 0.000000 0.000000 0.000000 0.000000 0.000000",
        "0 0.000000 0.000000 0.000000 0.000000 1e30 0.000000",
    );
    assert_ne!(smd, huge);
    std::fs::write(dir.join("huge.smd"), &huge).unwrap();
    // as a reference skeleton and as an animation: one error per file, at the number
    for (body, anim) in [("huge", "tri"), ("tri", "huge")] {
        let qc = format!(
            "$modelname \"m.mdl\"\n$body \"body\" \"{body}\"\n$sequence \"idle\" \"{anim}\"\n"
        );
        let b = build(&dir, "rot.qc", &qc);
        assert!(b.files.is_none(), "{body} {anim}");
        assert_eq!(b.errors(), ["E0548"], "{}", b.rendered);
        assert_eq!(b.at("E0548"), ("huge.smd".into(), 7, 39));
    }
    // a few turns are fine
    std::fs::write(dir.join("turns.smd"), huge.replace("1e30", "31.4")).unwrap();
    let b = build(
        &dir,
        "turns.qc",
        "$modelname \"m.mdl\"\n$body \"body\" \"turns\"\n$sequence \"idle\" \"turns\"\n",
    );
    assert!(b.errors().is_empty(), "{}", b.rendered);
}

// --- 8. render modes in another case -----------------------------------------------------------------

#[test]
fn a_render_mode_not_in_lower_case_warns_and_is_applied() {
    let dir = scratch("rendermode");
    let b = build(
        &dir,
        "rm.qc",
        &tri_qc("$texrendermode \"tri.bmp\" Masked\n"),
    );
    assert_eq!(b.at("W0232"), ("rm.qc".into(), 3, 26));
    let files = b.files.expect("builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.textures[0].flags & 0x40, 0x40);
    let b = build(
        &dir,
        "rm.qc",
        &tri_qc("$texrendermode \"tri.bmp\" masked\n"),
    );
    assert!(b.codes().is_empty(), "{}", b.rendered);
}
