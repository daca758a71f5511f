//! Diagnostics of the SMD front end on the fixtures in `testdata/smd`.
//!
//! - `ok/*`: valid files (warnings allowed, never an error).
//! - `err/*.smd`: one broken idea per file. The first line says what must be reported:
//!   `// expect: E0110 line 7, E0143 line 12` (1-based line of each primary span). A fixture that
//!   cannot hold a comment (binary, empty) has the line in a sidecar `NAME.expect` instead.
//!
//! Every fixture is checked exactly as `mdlc check` does it (`mdlc::load::add_text` then
//! `mdlc::load::check_lone_smd`), and its plain and JSON renderings are snapshots in `tests/snapshots/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mdlc::diag::{self, Code, Diagnostic, Severity, Sources};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Codes that no SMD/VTA fixture can produce, and why.
/// Codes of the SMD front end and of reading files: errors and warnings numbered below 200
/// (`E00xx`, `E01xx`, `W01xx`; notes such as `N0001` are not SMD codes). Project and QC codes have fixtures of their own (`tests/project.rs`, `tests/qc.rs`).
fn is_smd_code(c: Code) -> bool {
    c.severity() != Severity::Note && c.as_str()[1..].parse::<u32>().is_ok_and(|n| n < 200)
}

const NOT_SMD_CODES: &[(Code, &str)] = &[
    (
        Code::FileUnreadable,
        "an I/O failure, covered by tests/cli.rs",
    ),
    (Code::FileTooLarge, "needs a file of 4 GiB"),
    (
        Code::InternalError,
        "reports a bug in mdlc itself (import-qc's read-back check)",
    ),
];

/// A fixture's path relative to the crate root, with `/` separators (as shown in snapshots).
fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(ROOT).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Runs `mdlc check`'s recipe on one file, naming it by its relative path.
fn check(path: &Path) -> (Sources, Vec<Diagnostic>) {
    let bytes = std::fs::read(path).unwrap();
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    if mdlc::dmx::is_dmx_name(&relative(path)) {
        let id = sources.add(relative(path), String::new());
        let (text, _) = mdlc::load::check_dmx(id, &relative(path), &bytes, &mut diags);
        sources.set_text(id, text);
        return (sources, diags);
    }
    let (id, ok) = mdlc::load::add_text(&mut sources, &relative(path), bytes, &mut diags);
    if ok {
        mdlc::load::check_lone_smd(&sources, id, None, &mut diags);
    }
    (sources, diags)
}

fn render(sources: &Sources, diags: &[Diagnostic]) -> String {
    let plain: String = diags
        .iter()
        .map(|d| diag::render_plain(sources, d))
        .collect();
    let json: Vec<String> = diags
        .iter()
        .map(|d| diag::render_json(sources, d))
        .collect();
    format!(
        "--- plain ---\n{}--- json ---\n{}\n",
        plain,
        json.join("\n")
    )
}

/// The files of `testdata/smd/<dir>` (sorted), without `.expect` sidecars.
fn fixtures(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("testdata/smd").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "expect"))
        .collect();
    v.sort();
    v
}

/// The `// expect:` entries of an err fixture: (code, line).
fn expectations(path: &Path) -> Vec<(String, usize)> {
    let sidecar = path.with_extension("expect");
    let bytes = if sidecar.exists() {
        std::fs::read(&sidecar).unwrap()
    } else {
        std::fs::read(path).unwrap()
    };
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    common::parse_expectations(
        &String::from_utf8_lossy(first),
        "// expect:",
        &relative(path),
    )
}

#[test]
fn ok_fixtures_have_no_error() {
    let files = fixtures("ok");
    assert!(files.len() >= 20, "only {} ok fixtures", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let (sources, diags) = check(path);
        failures.extend(common::ok_fixture_problems(path, &sources, &diags));
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn err_fixtures_report_what_they_expect() {
    let files = fixtures("err");
    assert!(files.len() >= 40, "only {} err fixtures", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let (sources, diags) = check(path);
        failures.extend(common::err_fixture_problems(
            &relative(path),
            &expectations(path),
            &sources,
            &diags,
        ));
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_smd_code_has_a_fixture() {
    let mut seen: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for dir in ["ok", "err"] {
        for path in fixtures(dir) {
            let (_, diags) = check(&path);
            for d in diags {
                seen.entry(d.code.as_str())
                    .or_default()
                    .push(relative(&path));
            }
        }
    }
    let excluded: BTreeSet<&str> = NOT_SMD_CODES.iter().map(|(c, _)| c.as_str()).collect();
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| is_smd_code(**c))
        .map(|c| c.as_str())
        .filter(|c| !excluded.contains(c) && !seen.contains_key(c))
        .collect();
    assert!(missing.is_empty(), "codes without a fixture: {missing:?}");
    // The exclusion list must not hide a code a fixture does produce.
    for c in &excluded {
        assert!(
            !seen.contains_key(c),
            "{c} is listed as not an SMD code but {:?} produce it",
            seen[c]
        );
    }
    // Every error code has an err fixture that expects it explicitly.
    let expected: BTreeSet<String> = fixtures("err")
        .iter()
        .flat_map(|p| expectations(p))
        .map(|(c, _)| c)
        .collect();
    let unexpected: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| is_smd_code(**c))
        .filter(|c| c.severity() == Severity::Error && !excluded.contains(c.as_str()))
        .map(|c| c.as_str())
        .filter(|c| !expected.contains(*c))
        .collect();
    assert!(
        unexpected.is_empty(),
        "error codes no err fixture expects: {unexpected:?}"
    );
}

#[test]
fn docs_mention_every_code() {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/diagnostics.md")).unwrap();
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !doc.contains(&format!("## {c}")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/diagnostics.md has no section for {missing:?}"
    );
}

#[test]
fn snapshots_ok() {
    insta::glob!("../testdata/smd/ok", "*.{smd,vta}", |path| {
        let (sources, diags) = check(path);
        insta::assert_snapshot!(render(&sources, &diags));
    });
}

#[test]
fn snapshots_err() {
    insta::glob!("../testdata/smd/err", "*.smd", |path| {
        let (sources, diags) = check(path);
        insta::assert_snapshot!(render(&sources, &diags));
    });
}
