//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The shared corpus (`../shared/corpus`), or `None` on a user's machine without it. Under CI
/// (`CI=true`) a missing corpus fails the test instead of skipping it.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{} is missing; CI must have ../shared beside the checkout",
            dir.display()
        );
    }
    eprintln!("skipping: {} not found (not under CI)", dir.display());
    None
}

/// Every file below `dir` whose extension is one of `exts` (without regard to case), sorted.
pub fn files_with_ext(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, exts, out);
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, exts, &mut out);
    out
}

/// The expectations a fixture states on its first line: `<marker> E0110 line 7, W0140 line 9`
/// (`marker` is the format's comment, `// expect:` or `# expect:`), as (code, 1-based line).
pub fn parse_expectations(first_line: &str, marker: &str, what: &str) -> Vec<(String, usize)> {
    let rest = first_line
        .trim_end()
        .strip_prefix(marker)
        .unwrap_or_else(|| panic!("{what}: first line is not `{marker} …`"));
    rest.split(',')
        .map(|entry| {
            let words: Vec<&str> = entry.split_whitespace().collect();
            match words.as_slice() {
                [code, "line", n] => (code.to_string(), n.parse().unwrap()),
                _ => panic!("{what}: bad expect entry `{entry}`"),
            }
        })
        .collect()
}
