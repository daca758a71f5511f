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

/// The `line` a diagnostic's JSON form gives (what tools see): 1-based line of the primary span.
pub fn json_line(sources: &mdlc::diag::Sources, d: &mdlc::diag::Diagnostic) -> Option<usize> {
    let v: serde_json::Value = serde_json::from_str(&mdlc::diag::render_json(sources, d)).unwrap();
    v["line"].as_u64().map(|l| l as usize)
}

/// `CODE line N: message; …` for failure messages.
pub fn summary(sources: &mdlc::diag::Sources, diags: &[mdlc::diag::Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| format!("{} line {:?}: {}", d.code, json_line(sources, d), d.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What is wrong with a valid fixture's diagnostics: any error, and a warning in a file not
/// named `warn_*` (or none in one that is).
pub fn ok_fixture_problems(
    path: &Path,
    sources: &mdlc::diag::Sources,
    diags: &[mdlc::diag::Diagnostic],
) -> Vec<String> {
    let name = path.display();
    let mut out = Vec::new();
    if diags.iter().any(|d| d.is_error()) {
        out.push(format!("{name}: {}", summary(sources, diags)));
    }
    let file = path.file_name().unwrap().to_string_lossy();
    let warns = diags
        .iter()
        .any(|d| d.severity == mdlc::diag::Severity::Warning);
    if file.starts_with("warn_") != warns {
        out.push(format!(
            "{name}: warnings {}expected: {}",
            if warns { "not " } else { "" },
            summary(sources, diags)
        ));
    }
    out
}

/// What is wrong with a broken fixture's diagnostics against its `expect` line: no error at
/// all, an expected (code, line) missing, an error that was not expected (a follow-on cascade),
/// or more than one error for a single expectation.
pub fn err_fixture_problems(
    name: &str,
    expect: &[(String, usize)],
    sources: &mdlc::diag::Sources,
    diags: &[mdlc::diag::Diagnostic],
) -> Vec<String> {
    let mut out = Vec::new();
    let errors: Vec<&mdlc::diag::Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        out.push(format!("{name}: no error"));
    }
    for (code, line) in expect {
        if !diags
            .iter()
            .any(|d| d.code.as_str() == code && json_line(sources, d) == Some(*line))
        {
            out.push(format!(
                "{name}: expected {code} at line {line}, got: {}",
                summary(sources, diags)
            ));
        }
    }
    for d in &errors {
        let line = json_line(sources, d);
        if !expect
            .iter()
            .any(|(c, l)| c == d.code.as_str() && Some(*l) == line)
        {
            out.push(format!(
                "{name}: unexpected {} at line {line:?}: {}",
                d.code, d.message
            ));
        }
    }
    if expect.len() == 1 && errors.len() > 1 {
        out.push(format!(
            "{name}: {} errors for one expected: {}",
            errors.len(),
            summary(sources, diags)
        ));
    }
    out
}

/// A small deterministic xorshift generator for the mutation fuzzers.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Mutates `data` one to four times: a random byte, a `dictionary` word inserted, a run
/// deleted, the rest cut off, a word written over, and (when `duplicate_lines`) a line repeated.
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>, dictionary: &[&[u8]], duplicate_lines: bool) {
    let kinds = if duplicate_lines { 6 } else { 5 };
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(kinds) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] = rng.next() as u8;
            }
            1 => {
                let word = dictionary[rng.below(dictionary.len())];
                data.splice(at..at, word.iter().copied());
            }
            2 if !data.is_empty() => {
                let end = (at + 1 + rng.below(40)).min(data.len());
                data.drain(at.min(end)..end);
            }
            3 => data.truncate(at),
            4 if duplicate_lines => {
                let start = data[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let end = data[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(data.len(), |i| at + i + 1);
                let line = data[start..end].to_vec();
                data.splice(end..end, line);
            }
            _ => {
                let word = dictionary[rng.below(dictionary.len())];
                let end = (at + word.len()).min(data.len());
                data.splice(at..end, word.iter().copied());
            }
        }
    }
}

/// Runs the `mdlc` binary of this build with `args`, from `dir`.
pub fn mdlc(args: &[&str], dir: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `mdlc inspect --json FILE`, parsed; panics when inspect fails.
pub fn inspect_json(file: &Path) -> serde_json::Value {
    inspect_json_with(file, &[])
}

/// `mdlc inspect FILE ARGS… --json` (`--pose`, `--frame`, `--bone`, `--flex`), parsed; panics
/// when inspect fails.
pub fn inspect_json_with(file: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["inspect", file.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("--json");
    let out = mdlc(&all, Path::new("."));
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `mdlc build QC -o out --color never`, run in `dir` (the outputs land in `dir/out`).
pub fn build_into_out(qc: &Path, dir: &Path) -> std::process::Output {
    let qc = qc.to_str().expect("a UTF-8 path");
    mdlc(&["build", qc, "-o", "out", "--color", "never"], dir)
}

/// Builds `qc` into a fresh folder named `name` under the test target folder and returns the
/// output folder (`<that>/out`); panics when the build fails.
pub fn build_fresh(qc: &Path, name: &str) -> PathBuf {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(name));
    let out = build_into_out(qc, &dir);
    assert!(
        out.status.success(),
        "{}: {}",
        qc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("out")
}

/// `dir` made anew and empty (a test's scratch folder under the target directory).
pub fn fresh_dir(dir: PathBuf) -> PathBuf {
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `mdlc import-qc` of `qc` into a fresh folder named `name`, then both built: asserts that the
/// TOML builds the same `.mdl` as the QC, byte for byte, and returns the TOML's text.
pub fn import_builds_same(qc: &Path, name: &str) -> String {
    let dir = fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(name));
    let toml = dir.join("imported.toml");
    let out = mdlc(
        &[
            "import-qc",
            qc.to_str().unwrap(),
            "-o",
            toml.to_str().unwrap(),
        ],
        &dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_qc = build_fresh(qc, &format!("{name}-qc"));
    let from_toml = build_fresh(&toml, &format!("{name}-toml"));
    let a = std::fs::read(files_with_ext(&from_qc, &["mdl"]).remove(0)).unwrap();
    let b = std::fs::read(files_with_ext(&from_toml, &["mdl"]).remove(0)).unwrap();
    assert!(a == b, "{}: the TOML builds another model", qc.display());
    std::fs::read_to_string(&toml).unwrap()
}
