//! Every real SMD and VTA file in `../shared/corpus` (files from public repositories, written by
//! Valve's and other exporters) must pass the front end with no error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{corpus_dir, files_with_ext};

use mdlc::diag::{render_plain, Sources};

#[test]
fn every_corpus_smd_and_vta_passes_check() {
    let Some(dir) = corpus_dir() else { return };
    let files = files_with_ext(&dir, &["smd", "vta"]);
    // SOURCES.md: 568 SMD/VTA files in the development corpus; fewer means the walk is broken.
    assert!(
        files.len() >= 500,
        "only {} SMD/VTA files found under {}",
        files.len(),
        dir.display()
    );
    let mut failures = Vec::new();
    let (mut triangles, mut frames, mut shapes) = (0usize, 0usize, 0usize);
    for path in &files {
        let mut sources = Sources::new();
        let mut diags = Vec::new();
        let (id, ok) = mdlc::load::add_text(
            &mut sources,
            &path.display().to_string(),
            std::fs::read(path).unwrap(),
            &mut diags,
        );
        let model = if ok {
            mdlc::load::check_smd(&sources, id, &mut diags)
        } else {
            None
        };
        let errors: Vec<String> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| render_plain(&sources, d))
            .collect();
        if !errors.is_empty() || model.is_none() {
            failures.push(format!("{}:\n{}", path.display(), errors.join("")));
            continue;
        }
        let model = model.unwrap();
        triangles += model.mesh.as_ref().map_or(0, |m| m.triangles.len());
        frames += model.animation.num_frames;
        shapes += model.flex.as_ref().map_or(0, |f| f.shapes.len());
        assert!(!model.skeleton.is_empty(), "{}: no bones", path.display());
    }
    assert!(
        failures.is_empty(),
        "{} of {} files have errors:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    // The corpus has meshes, animations and flex shapes; each kind must have been read.
    assert!(
        triangles > 0 && frames > 0 && shapes > 0,
        "{triangles} triangles, {frames} frames, {shapes} shapes"
    );
    eprintln!(
        "{} files: {triangles} triangles, {frames} frames, {shapes} shapes",
        files.len()
    );
}

/// QUIRKS.md §2.11: male_06's VTA frame 0 lists 14,112 corners (4,704 triangles × 3) and frames
/// 1..4 list 396, 464, 557 and 337 changed corners.
#[test]
fn male06_vta_shapes_match_the_catalogue() {
    let Some(dir) = corpus_dir() else { return };
    let files = files_with_ext(&dir.join("sdk-male06"), &["smd", "vta"]);
    let vta = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("vta")))
        .expect("male_06 has a VTA");
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let (id, ok) = mdlc::load::add_text(
        &mut sources,
        "male06.vta",
        std::fs::read(vta).unwrap(),
        &mut diags,
    );
    assert!(ok);
    let model = mdlc::load::check_smd(&sources, id, &mut diags).expect("no error");
    let shapes = &model.flex.expect("vertexanimation").shapes;
    let counts: Vec<usize> = shapes.iter().take(5).map(|s| s.vertices.len()).collect();
    assert_eq!(counts, [14_112, 396, 464, 557, 337]);
}
