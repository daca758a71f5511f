//! Bodies of the fuzz targets. They live in the library so that a stable `#[test]` can replay
//! saved inputs (`tests/fuzz_replay.rs`) and the `fuzz/` crate (cargo-fuzz, nightly) stays a
//! one-line wrapper.
//!
//! Each body runs a stage on arbitrary bytes and checks what must hold for every input; a
//! violated check panics, which is what a fuzzer looks for.

use crate::diag::{self, Sources};

/// SMD front end: text check, parse, lower, render every diagnostic both ways.
pub fn smd(data: &[u8]) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let (id, ok) = crate::load::add_text(&mut sources, "fuzz.smd", data.to_vec(), &mut diags);
    if ok {
        crate::load::check_smd(&sources, id, &mut diags);
    }
    check_diagnostics(&sources, &diags);
    let text = sources.text(id);
    // A file that is not text, or is empty, is always an error.
    if !ok || text.trim().is_empty() {
        assert!(
            diags.iter().any(|d| d.is_error()),
            "no error for an unreadable or empty input"
        );
    }
}

/// DMX front end: container and `model` schema on arbitrary bytes (binary or `keyvalues2`),
/// every diagnostic rendered both ways; an input without a model is always an error.
pub fn dmx(data: &[u8]) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let id = sources.add("fuzz.dmx", String::new());
    let (text, model) = crate::load::check_dmx(id, "fuzz.dmx", data, &mut diags);
    sources.set_text(id, text);
    check_diagnostics(&sources, &diags);
    if model.is_none() {
        assert!(diags.iter().any(|d| d.is_error()), "no model and no error");
    }
}

/// Checks what must hold for the diagnostics of any input: spans inside their files and on
/// character boundaries, and both renderings work.
fn check_diagnostics(sources: &Sources, diags: &[crate::diag::Diagnostic]) {
    for d in diags {
        for l in &d.labels {
            let text = sources.text(l.at.file);
            let r = l.at.span.range();
            assert!(
                r.start <= r.end && r.end <= text.len(),
                "span {r:?} outside a file of {} bytes",
                text.len()
            );
            assert!(
                text.is_char_boundary(r.start) && text.is_char_boundary(r.end),
                "span {r:?} splits a character"
            );
        }
        let plain = diag::render_plain(sources, d);
        assert!(
            !plain.contains("could not show the source"),
            "bad span in {plain}"
        );
        let json = diag::render_json(sources, d);
        assert!(json.starts_with('{') && json.ends_with('}'), "{json}");
    }
}

/// QC front end and model building: `data` is `main.qc` in an in-memory tree that also holds a
/// small valid SMD (`ref.smd`) and an include (`inc.qci`), so mutations can reach every stage.
pub fn qc(data: &[u8]) {
    use crate::load::fs::MemFs;
    let mut fs = MemFs::new();
    fs.add("p/main.qc", data.to_vec());
    fs.add("p/inc.qci", b"$sequence inc ref\n".to_vec());
    fs.add("p/ref.smd", SMALL_SMD.as_bytes().to_vec());
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let main = std::path::Path::new("p/main.qc");
    let tokens = crate::qc::tokens::tokenize(main, &fs, &mut sources, &mut diags);
    let spec = crate::qc::commands::parse_project(main, &tokens, None, &mut diags);
    if let Some(model) = crate::build::build_model(&spec, &fs, &mut sources, &mut diags) {
        compile_both(&model, &mut sources, &mut diags);
    }
    check_diagnostics(&sources, &diags);
}

/// A whole project in memory (`files`: path under `p/`, bytes), built from `p/main.qc` and
/// compiled by both back ends: for mutating a QC and its SMDs together. Returns whether the
/// Source build produced files.
pub fn project(files: &[(String, Vec<u8>)]) -> bool {
    use crate::load::fs::MemFs;
    let mut fs = MemFs::new();
    for (name, bytes) in files {
        fs.add(format!("p/{name}"), bytes.clone());
    }
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let main = std::path::Path::new("p/main.qc");
    let tokens = crate::qc::tokens::tokenize(main, &fs, &mut sources, &mut diags);
    let spec = crate::qc::commands::parse_project(main, &tokens, None, &mut diags);
    let mut built = false;
    if let Some(model) = crate::build::build_model(&spec, &fs, &mut sources, &mut diags) {
        built = compile_both(&model, &mut sources, &mut diags);
    }
    check_diagnostics(&sources, &diags);
    built
}

/// Runs both back ends on a built model (whatever its target): neither may panic, a Source build
/// must read back with every invariant holding, and their diagnostics join `diags`.
fn compile_both(
    model: &crate::ir::model::Model,
    sources: &mut Sources,
    diags: &mut Vec<crate::diag::Diagnostic>,
) -> bool {
    let mut gold = model.clone();
    gold.target = crate::project::spec::Target::GoldSrc;
    let mut scratch = Vec::new();
    let _ = crate::formats::goldsrc::compile::compile(&mut gold, sources, &mut scratch);
    let mut source = model.clone();
    source.target = crate::project::spec::Target::Source;
    let mut built = false;
    if let Some(files) = crate::formats::source::compile(&source, &mut scratch) {
        built = true;
        let mut mem = crate::load::fs::MemFs::new();
        let mut mdl = None;
        for (name, bytes) in files {
            let path = std::path::Path::new("out").join(format!("m{name}"));
            if name.ends_with(".mdl") {
                mdl = Some(path.clone());
            }
            mem.add(path, bytes);
        }
        let Some(mdl) = mdl else {
            panic!("a Source build without an .mdl");
        };
        match crate::inspect::source::read_files(&mdl, &mem) {
            Ok(f) => {
                let problems = crate::formats::source::check(&f);
                assert!(problems.is_empty(), "{problems:?}");
            }
            Err(e) => panic!("mdlc cannot read back its own Source build: {e}"),
        }
    }
    // the back ends' diagnostics are checked like the front end's (spans inside their files)
    diags.extend(scratch);
    built
}

/// TOML front end and model building, like [`qc`].
pub fn toml(data: &[u8]) {
    use crate::load::fs::MemFs;
    let mut fs = MemFs::new();
    fs.add("p/ref.smd", SMALL_SMD.as_bytes().to_vec());
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let path = std::path::Path::new("p/model.toml");
    let (id, ok) = crate::load::add_text(&mut sources, "p/model.toml", data.to_vec(), &mut diags);
    if ok {
        if let Some(spec) = crate::project::toml::parse_toml(path, id, &sources, None, &mut diags) {
            crate::build::build_model(&spec, &fs, &mut sources, &mut diags);
        }
    }
    check_diagnostics(&sources, &diags);
}

/// A valid two-bone SMD with one triangle and two frames.
const SMALL_SMD: &str = "version 1\nnodes\n0 \"root\" -1\n1 \"arm\" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\n1 0 0 10 0 0 0\ntime 1\n1 0 0 10 0 0 1\nend\ntriangles\nskin\n1 0 0 10 0 1 0 0 0 2 1 0.75 0 0.25\n1 5 0 10 0 1 0 1 0\n1 0 0 15 0 1 0 0 1\nend\n";
