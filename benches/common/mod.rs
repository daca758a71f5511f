//! What the benches share.

use std::path::{Path, PathBuf};

/// Every file under `dir` whose extension is `ext` (any case; every file when `None`), in
/// sorted path order, into `out`.
pub fn files_under(dir: &Path, ext: Option<&str>, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, ext, out);
        } else if ext.is_none_or(|x| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(x))) {
            out.push(p);
        }
    }
}
