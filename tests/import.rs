//! `mdlc import-qc`: building from the written TOML gives the same model IR as building from the
//! QC, for every QC in the corpus; and the command itself writes a file only when it should.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{corpus_dir, files_with_ext};

use std::process::Command;

use mdlc::build::build_model;
use mdlc::diag::Sources;
use mdlc::driver::{self, InputKind};
use mdlc::load::fs::RealFs;

/// The Debug text of a model with every file id and byte range replaced: the QC and the TOML
/// are different files, so spans differ; everything else must be equal.
fn scrubbed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = [rest.find("FileId("), rest.find("Span { start: ")]
            .into_iter()
            .flatten()
            .min();
        let Some(at) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = if tail.starts_with("FileId(") {
            tail.find(')').unwrap() + 1
        } else {
            tail.find('}').unwrap() + 1
        };
        out.push('_');
        rest = &tail[end..];
    }
}

#[test]
fn toml_from_import_builds_the_same_ir_as_the_qc() {
    let Some(dir) = corpus_dir() else { return };
    let files = files_with_ext(&dir, &["qc"]);
    assert_eq!(
        files.len(),
        57,
        "SOURCES.md lists 57 QC files (42 + 15 folders, with mapbase-mp-male01 and mapbase-mp-ar2-cartridge)"
    );
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-import");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    for (i, qc) in files.iter().enumerate() {
        let mut sources = Sources::new();
        let mut diags = Vec::new();
        let spec = driver::read_project(qc, InputKind::Qc, &RealFs, None, &mut sources, &mut diags)
            .unwrap();
        let from_qc = build_model(&spec, &RealFs, &mut sources, &mut diags)
            .unwrap_or_else(|| panic!("{} does not build", qc.display()));

        // Written into another folder, so every path goes through the relative rewrite.
        let out = tmp.join(format!("model{i}.toml"));
        let import = driver::import_qc(qc, &out, None);
        let text = import.toml.unwrap_or_else(|| {
            panic!(
                "{}: import failed: {:?}",
                qc.display(),
                import.report.diagnostics
            )
        });
        std::fs::write(&out, &text).unwrap();
        let mut sources2 = Sources::new();
        let mut diags2 = Vec::new();
        let spec2 = driver::read_project(
            &out,
            InputKind::Toml,
            &RealFs,
            None,
            &mut sources2,
            &mut diags2,
        )
        .unwrap();
        let from_toml = build_model(&spec2, &RealFs, &mut sources2, &mut diags2).unwrap();
        assert!(
            diags2.iter().all(|d| !d.is_error()),
            "{}: {:?}",
            out.display(),
            diags2
        );

        let (a, b) = (
            scrubbed(&format!("{from_qc:?}")),
            scrubbed(&format!("{from_toml:?}")),
        );
        if a != b {
            let first = a
                .chars()
                .zip(b.chars())
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            let from = first.saturating_sub(200);
            panic!(
                "{}: the IR differs at byte {first}:\nQC:   …{}\nTOML: …{}",
                qc.display(),
                &a[from..(first + 200).min(a.len())],
                &b[from..(first + 200).min(b.len())]
            );
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn import_qc_writes_only_when_it_should() {
    let bin = env!("CARGO_BIN_EXE_mdlc");
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-import-cli");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("ok_ref.smd"), "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\nm\n0 0 0 0 0 0 1 0 0\n0 1 0 0 0 0 1 1 0\n0 0 1 0 0 0 1 0 1\nend\n").unwrap();
    std::fs::write(
        tmp.join("ok.qc"),
        "$modelname ok.mdl\n$cdmaterials models/\n$body body ok_ref\n$sequence idle ok_ref\n",
    )
    .unwrap();
    std::fs::write(
        tmp.join("bad.qc"),
        "$modelname bad.mdl\n$sequnce idle ok_ref\n",
    )
    .unwrap();

    // A QC with an error: exit 1, nothing written.
    let out = Command::new(bin)
        .args(["import-qc", "bad.qc", "-o", "bad.toml"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.join("bad.toml").exists());

    // The QC named relative to the current folder, the TOML written elsewhere by absolute path:
    // the TOML's paths are relative to where it is written, so it still checks.
    let elsewhere = tmp.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let abs = elsewhere.join("m.toml");
    let out = Command::new(bin)
        .args(["import-qc", "ok.qc", "-o", abs.to_str().unwrap()])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let check = Command::new(bin)
        .args(["check", abs.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // A good QC: exit 0, model.toml beside it (the default), which checks without error.
    let out = Command::new(bin)
        .args(["import-qc", "ok.qc"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let toml = std::fs::read_to_string(tmp.join("model.toml")).unwrap();
    assert!(toml.contains("ok_ref.smd"), "{toml}");
    let check = Command::new(bin)
        .args(["check", "model.toml"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // An existing output is not replaced without --force.
    std::fs::write(tmp.join("model.toml"), "# mine\n").unwrap();
    let out = Command::new(bin)
        .args(["import-qc", "ok.qc"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(tmp.join("model.toml")).unwrap(),
        "# mine\n"
    );
    let out = Command::new(bin)
        .args(["import-qc", "ok.qc", "--force"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_ne!(
        std::fs::read_to_string(tmp.join("model.toml")).unwrap(),
        "# mine\n"
    );
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("mdlc-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&tmp).ok();
}

/// Issue 4: `mdlc build model.toml` with `target = "goldsrc"` writes what the QC build writes.
/// For every goldsrc-hl1 model with Valve's output: import the QC, build from the TOML, compare
/// the bytes with Valve's file.
#[test]
fn goldsrc_models_built_from_imported_toml_equal_valves_files() {
    let Some(dir) = corpus_dir() else { return };
    let models = dir.join("goldsrc-hl1/modelsrc/models");
    let expected = dir.join("goldsrc-hl1/expected");
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-import-gs");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let mut compared = 0;
    for mdl in files_with_ext(&expected, &["mdl"]) {
        let folder = mdl.parent().unwrap().file_name().unwrap();
        let qc = models
            .join(folder)
            .join(mdl.with_extension("qc").file_name().unwrap());
        let toml = tmp.join(format!("{}.toml", compared));
        let import = driver::import_qc(&qc, &toml, None);
        let text = import
            .toml
            .unwrap_or_else(|| panic!("{}: {:?}", qc.display(), import.report.diagnostics));
        std::fs::write(&toml, text).unwrap();
        let mut sources = Sources::new();
        let mut diags = Vec::new();
        let spec = driver::read_project(
            &toml,
            InputKind::Toml,
            &RealFs,
            None,
            &mut sources,
            &mut diags,
        )
        .unwrap();
        let files =
            driver::compile_goldsrc(&spec, &RealFs, Some(&tmp), &mut sources, &mut diags, None)
                .unwrap_or_else(|| panic!("{} does not build from TOML: {diags:?}", qc.display()));
        let (_, main) = files
            .iter()
            .find(|(p, _)| {
                p.extension().is_some_and(|e| e == "mdl") && !p.to_string_lossy().ends_with("T.mdl")
            })
            .unwrap();
        assert!(
            *main == std::fs::read(&mdl).unwrap(),
            "{}: built from TOML, differs from Valve's file",
            qc.display()
        );
        compared += 1;
    }
    assert_eq!(
        compared, 35,
        "SOURCES.md: Valve's output exists for 35 of the 42 QCs"
    );
    std::fs::remove_dir_all(&tmp).ok();
}
