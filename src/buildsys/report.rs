//! `mdlc build --report FILE` (JSON, schema in docs/build-report.schema.json) and `--depfile
//! FILE` (Make rules). Both are described in docs/build-systems.md.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What happened to one project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Built and written.
    Built,
    /// Its record says nothing changed: not built, no output touched.
    UpToDate,
    /// It has errors: nothing of it written.
    Failed,
    /// Built without errors but not written, because another project of the run failed
    /// (a run writes nothing when any project has an error).
    NotWritten,
}

#[derive(Clone, Debug, Serialize)]
pub struct OutputEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProjectEntry {
    pub project: String,
    /// `goldsrc` or `source`; `null` when the project could not be read far enough to know.
    pub target: Option<String>,
    pub status: Status,
    pub outputs: Vec<OutputEntry>,
    pub inputs: Vec<String>,
    pub errors: Vec<serde_json::Value>,
    pub warnings: Vec<serde_json::Value>,
    pub seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    pub mdlc: String,
    pub projects: Vec<ProjectEntry>,
}

impl BuildReport {
    pub fn new(projects: Vec<ProjectEntry>) -> Self {
        BuildReport {
            mdlc: env!("CARGO_PKG_VERSION").to_string(),
            projects,
        }
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string());
        s.push('\n');
        s
    }
}

/// A path in a Make rule: spaces, `#` and `\` before them escaped as GCC's `-MD` does, `$` doubled.
fn make_escape(path: &Path) -> String {
    let s = path.to_string_lossy();
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            ' ' => out.push_str("\\ "),
            '#' => out.push_str("\\#"),
            '$' => out.push_str("$$"),
            _ => out.push(c),
        }
    }
    out
}

/// The depfile: one rule per project that has outputs, `<main output>: <every input>`. The main
/// output is the model's `.mdl` (the last file a GoldSrc build lists, the first of a Source one).
pub fn depfile(rules: &[(PathBuf, Vec<PathBuf>)]) -> String {
    let mut out = String::new();
    for (target, inputs) in rules {
        out.push_str(&make_escape(target));
        out.push(':');
        for i in inputs {
            out.push_str(" \\\n  ");
            out.push_str(&make_escape(i));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depfile_escapes_as_make_reads_it() {
        let d = depfile(&[(
            PathBuf::from("out/my model.mdl"),
            vec![PathBuf::from("a b/c$d.smd"), PathBuf::from("e#f.qc")],
        )]);
        assert_eq!(
            d,
            "out/my\\ model.mdl: \\\n  a\\ b/c$$d.smd \\\n  e\\#f.qc\n"
        );
    }
}
