//! DMX sources (`src/dmx`): a model built from DMX files equals the same model built from the
//! SMD files they were made from. The DMX files are written at test time by an outside tool,
//! `srctools` (`tests/oracle/smd_to_dmx.py` lays the elements out as Blender Source Tools does),
//! in the binary encodings 1 to 5 and in `keyvalues2`, so the reader is checked against another
//! implementation of the format, not against itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::{Path, PathBuf};

use common::corpus_dir;
use mdlc::load::fs::RealFs;
use source_common::*;

const QC_DIR: &str = "mapbase-bunker-gun01/modelsrc/weapons/bunker_gun01";
const VALVE_MDL: &str =
    "mapbase-bunker-gun01/compiled/VPKs/hl2_mapbase_content/models/props_combine/bunker_gun01.mdl";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn smds(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            smds(&p, out);
        } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("smd")) {
            out.push(p);
        }
    }
}

/// Copies the bunker gun's sources to `dir`, writes every SMD again as DMX (`encoding`,
/// `version`) beside it, and a QC naming the DMX files. Returns the new QC.
fn dmx_copy(python: &Path, corpus: &Path, dir: &Path, encoding: &str, version: u32) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    copy_dir(&corpus.join(QC_DIR), dir);
    let mut files = Vec::new();
    smds(dir, &mut files);
    assert!(files.len() >= 10, "the bunker gun's SMDs");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/smd_to_dmx.py");
    for smd in &files {
        let out = smd.with_extension("dmx");
        let st = std::process::Command::new(python)
            .arg(&script)
            .arg(smd)
            .arg(&out)
            .arg(encoding)
            .arg(version.to_string())
            .status()
            .unwrap();
        assert!(st.success(), "{} -> {encoding} {version}", smd.display());
        std::fs::remove_file(smd).unwrap();
    }
    let qc = std::fs::read_to_string(dir.join("bunker_gun01.qc")).unwrap();
    // Every file the QC names: `x.smd` -> `x.dmx`; a name without extension (the sequences'
    // animation files) is found as `x.dmx` once `x.smd` is gone.
    let new = dir.join("bunker_gun01_dmx.qc");
    std::fs::write(
        &new,
        qc.replace(".smd\"", ".dmx\"").replace(".SMD\"", ".dmx\""),
    )
    .unwrap();
    new
}

/// A VTX or VVD file without its checksum (the MDL's name differs, `.dmx` for `.smd`).
fn without_checksum(name: &str, bytes: &[u8]) -> Vec<u8> {
    let at = if name.ends_with(".vvd") { 8 } else { 16 };
    let mut b = bytes.to_vec();
    b[at..at + 4].fill(0);
    b
}

fn build(qc: &Path) -> Output {
    let (files, diags) = compile_qc(qc);
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{}: {errors:?}", qc.display());
    files.expect("output")
}

#[test]
fn a_model_built_from_dmx_equals_the_model_built_from_its_smds() {
    let Some(corpus) = corpus_dir() else { return };
    let Some(python) = oracle_python() else {
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-dmx");
    let reference = build(&corpus.join(QC_DIR).join("bunker_gun01.qc"));
    let geometry = |files: &Output| -> Vec<(String, Vec<u8>)> {
        files
            .iter()
            .filter(|(n, _)| n.ends_with(".vvd") || n.ends_with(".vtx"))
            .map(|(n, b)| (n.clone(), without_checksum(n, b)))
            .collect()
    };
    for (encoding, version) in [
        ("binary", 1),
        ("binary", 2),
        ("binary", 3),
        ("binary", 4),
        ("binary", 5),
    ] {
        let dir = tmp.join(format!("{encoding}{version}"));
        let qc = dmx_copy(&python, &corpus, &dir, encoding, version);
        let out = build(&qc);
        // Positions, normals, texture coordinates and weights are the SMD's exactly (binary
        // DMX holds the same 32-bit floats): the vertex and strip files are the same bytes.
        assert_eq!(geometry(&out), geometry(&reference), "{encoding} {version}");

        // Bones, sequences and frames: the same, with rotations that went through quaternions
        // (within 1e-5 radians).
        let mdl = write_files(&dir.join("out"), &out);
        let ours = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
        let smd_mdl = write_files(&dir.join("out_smd"), &reference);
        let theirs = mdlc::inspect::source::read_files(&smd_mdl, &RealFs).unwrap();
        let bones = |f: &mdlc::formats::source::Files| -> Vec<(String, i32)> {
            f.mdl
                .bones
                .iter()
                .map(|b| (b.name.clone(), b.rec.parent))
                .collect()
        };
        assert_eq!(bones(&ours), bones(&theirs));
        for (a, b) in ours.mdl.bones.iter().zip(&theirs.mdl.bones) {
            let (pa, pb) = (a.rec.pos, b.rec.pos);
            let (ra, rb) = (a.rec.rot, b.rec.rot);
            for k in 0..3 {
                assert!((pa[k] - pb[k]).abs() < 1e-4, "{} pos", a.name);
                assert!((ra[k] - rb[k]).abs() < 1e-4, "{} rot", a.name);
            }
        }
        let frames = |f: &mdlc::formats::source::Files| -> Vec<(String, i32)> {
            f.mdl
                .anims
                .iter()
                .map(|(name, a)| (name.clone(), a.numframes))
                .collect()
        };
        assert_eq!(frames(&ours), frames(&theirs), "{encoding} {version}");
        let seqs = |f: &mdlc::formats::source::Files| f.mdl.seqs.len();
        assert_eq!(seqs(&ours), seqs(&theirs));

        // And Valve's build of the SMDs (an outside reference): its vertex counts per LOD.
        if encoding == "binary" && version == 2 {
            let valve =
                mdlc::inspect::source::read_files(&corpus.join(VALVE_MDL), &RealFs).unwrap();
            assert_eq!(
                ours.vvd.as_ref().unwrap().hdr.num_lod_vertexes,
                valve.vvd.as_ref().unwrap().hdr.num_lod_vertexes
            );
        }

        // A file cut short anywhere is an error with a message, never a panic.
        let sample = dir.join("bunker_gun01_physics.dmx");
        let bytes = std::fs::read(&sample).unwrap();
        for cut in (0..bytes.len()).step_by((bytes.len() / 97).max(1)) {
            assert!(mdlc::dmx::parse(&bytes[..cut]).is_err(), "{cut}");
        }
        assert!(mdlc::dmx::parse(&bytes).is_ok());
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `keyvalues2` writes six decimals: the model is the same up to that rounding (same bones,
/// vertex counts per LOD, triangles and frames).
#[test]
fn a_keyvalues2_dmx_reads_as_its_binary_twin() {
    let Some(corpus) = corpus_dir() else { return };
    let Some(python) = oracle_python() else {
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-dmx-kv2");
    let qc = dmx_copy(&python, &corpus, &tmp, "keyvalues2", 1);
    let out = build(&qc);
    let mdl = write_files(&tmp.join("out"), &out);
    let ours = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    let valve = mdlc::inspect::source::read_files(&corpus.join(VALVE_MDL), &RealFs).unwrap();
    assert_eq!(
        ours.vvd.as_ref().unwrap().hdr.num_lod_vertexes,
        valve.vvd.as_ref().unwrap().hdr.num_lod_vertexes
    );
    let names = |f: &mdlc::formats::source::Files| -> Vec<String> {
        f.mdl.bones.iter().map(|b| b.name.clone()).collect()
    };
    assert_eq!(names(&ours), names(&valve));
    let _ = std::fs::remove_dir_all(&tmp);
}
