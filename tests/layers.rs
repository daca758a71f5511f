//! The one allowed direction of imports between the stages (docs/design.md, "Stages"): every
//! `crate::…` path in the code of `src/` (comments aside) names a module its stage may use.
//! A stage never calls the recipe (`driver`), a back end never reaches around the IR into a front
//! end or the load stage, and a front end never reaches into a back end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The base every module may use.
const BASE: &[&str] = &["diag", "suggest", "threads"];

/// Each top-level module of `src/` and the modules it may use besides itself and [`BASE`].
const ALLOWED: &[(&str, &[&str])] = &[
    ("diag", &[]),
    ("suggest", &[]),
    ("threads", &[]),
    ("ir", &[]),
    ("smd", &["ir"]),
    ("dmx", &["ir", "smd"]),
    ("load", &["ir", "smd", "dmx"]),
    ("project", &["ir"]),
    ("qc", &["ir", "load", "project"]),
    ("build", &["ir", "smd", "load", "project"]),
    ("formats", &["ir"]),
    ("inspect", &["load", "formats"]),
    ("output", &["ir", "formats"]),
    ("buildsys", &["load"]),
    // the recipe, the CLI, and test support may use everything
    ("driver", &["*"]),
    ("fuzzing", &["*"]),
    ("pipeline_tests", &["*"]),
    ("lib", &["*"]),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line: without a `//` comment (no string of the sources holds `//` before a
/// `crate::` path, so cutting at the first `//` is enough here).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// Every module named as `crate::NAME` in `text`'s code.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = code(line);
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `crate::` preceded by an identifier character is another path (`mdlc_crate::`)
            let glued = rest[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            if !glued && !name.is_empty() {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_stage_imports_only_what_its_layer_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut seen = 0;
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let stage = first.trim_end_matches(".rs");
        if stage == "main" {
            continue; // the binary uses the library through `mdlc::`, not `crate::`
        }
        let Some(may) = allowed.get(stage) else {
            panic!(
                "{} is in no layer: add `{stage}` to ALLOWED (and to docs/design.md)",
                rel.display()
            );
        };
        let text = std::fs::read_to_string(f).expect("source file reads");
        for (line, used) in crate_paths(&text) {
            seen += 1;
            let ok = used == stage
                || BASE.contains(&used.as_str())
                || may.contains(&"*")
                || may.contains(&used.as_str());
            if !ok {
                wrong.push(format!(
                    "src/{}:{line}: `{stage}` uses `crate::{used}`",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        seen > 200,
        "only {seen} `crate::` paths found: is the scan broken?"
    );
    assert!(
        wrong.is_empty(),
        "imports against the pipeline's direction (docs/design.md):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_sees_paths_in_code_and_not_in_comments() {
    let text = "use crate::diag::Span; // crate::driver in a comment\n\
                //! crate::formats in a doc comment\n\
                let x = crate::ir::model::Model::default(); not_crate::qc\n";
    let got: Vec<String> = crate_paths(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(got, ["diag", "ir"]);
}
