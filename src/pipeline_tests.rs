//! Unit tests of the whole pipeline that need a stage's crate-private test hooks (the stages
//! themselves may not call the recipe, `crate::driver`).

fn qc_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            qc_files(&p, out);
        } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("qc")) {
            out.push(p);
        }
    }
}

/// Every sequence of every GoldSrc corpus model (when `../shared` is there): the box of
/// `sequence_box` (`formats::goldsrc::animation::boxes`) equals, bit for bit, the one of the
/// previous algorithm and of the vertex loop.
#[test]
fn corpus_boxes_equal_the_previous_and_the_vertex_loop() {
    use crate::diag::Sources;
    use crate::driver::{self, InputKind};
    use crate::formats::goldsrc::animation::boxes::tests as boxes;
    use crate::load::fs::RealFs;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/goldsrc-hl1/modelsrc/models");
    let mut qcs = Vec::new();
    qc_files(&root, &mut qcs);
    if qcs.is_empty() {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "no QC under {}",
            root.display()
        );
        return;
    }
    let mut compiled = 0;
    let (mut checked, mut differing) = (0, Vec::new());
    for qc in &qcs {
        boxes::reset_checked();
        let mut sources = Sources::new();
        let mut diags = Vec::new();
        let Some(spec) =
            driver::read_project(qc, InputKind::Qc, &RealFs, None, &mut sources, &mut diags)
        else {
            continue;
        };
        let out = std::path::Path::new("/nonexistent-out");
        if driver::compile_goldsrc(&spec, &RealFs, Some(out), &mut sources, &mut diags, None)
            .is_some()
        {
            compiled += 1;
        }
        let (n, bad) = boxes::checked();
        checked += n;
        differing.extend(bad.into_iter().map(|b| format!("{}: {b}", qc.display())));
    }
    assert!(compiled >= 35, "{compiled} corpus models compiled");
    assert!(checked > 100, "{checked} sequence boxes checked");
    assert!(differing.is_empty(), "{}", differing.join("\n"));
}
