//! Outputs: where a model's files go (`$modelname`, `-o`) and how a set of files is written
//! (under temporary names, renamed together, so that a failed or killed build never leaves a
//! half-written or mismatched set). With the CLI, the only code that writes files.

use std::path::Path;

use crate::diag::{Code, Diagnostic};

/// The output path (without `.mdl`) for a model: `$modelname` without its extension, relative
/// to the current directory like Valve's tool, with `\` taken as a folder separator as Valve's
/// Windows build does; without `$modelname`, the project path without its extension (beside
/// the project, the name Valve's tool gives when run from the project's folder). With
/// `out_dir`, the path is put under it (without `$modelname`: the project's file name only),
/// and parts that would leave it (`..`, a root, a drive such as `C:`) are dropped with a
/// warning.
pub fn output_path(
    model: &crate::ir::model::Model,
    project: &Path,
    out_dir: Option<&Path>,
    diags: &mut Vec<Diagnostic>,
) -> std::path::PathBuf {
    output_path_named(model.name.as_ref(), project, out_dir, diags)
}

/// [`output_path`] from the model's `$modelname` alone (what `mdlc ninja` knows of a project
/// it reads without building it).
pub fn output_path_named(
    name: Option<&crate::diag::Spanned<String>>,
    project: &Path,
    out_dir: Option<&Path>,
    diags: &mut Vec<Diagnostic>,
) -> std::path::PathBuf {
    use std::path::{Component, PathBuf};
    let base = match name {
        Some(n) => crate::formats::goldsrc::compile::output_base(&n.value.replace('\\', "/")),
        None => match out_dir {
            Some(_) => project_stem(project),
            None => project.with_extension("").to_string_lossy().into_owned(),
        },
    };
    let Some(dir) = out_dir else {
        return PathBuf::from(base);
    };
    let mut kept = PathBuf::new();
    let mut dropped = Vec::new();
    for (i, c) in Path::new(&base).components().enumerate() {
        match c {
            // a Windows drive (`C:\models\x.mdl`) is a root too
            Component::Normal(p) if i == 0 && is_drive(&p.to_string_lossy()) => {
                dropped.push(p.to_string_lossy().into_owned());
            }
            Component::Normal(p) => kept.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !kept.pop() {
                    dropped.push("..".to_string());
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                dropped.push(c.as_os_str().to_string_lossy().into_owned());
            }
        }
    }
    if !dropped.is_empty() {
        let message = format!(
            "the output path `{base}` leaves `{}`; it is written as `{}`",
            dir.display(),
            dir.join(&kept).display()
        );
        let d = match name {
            Some(n) => {
                Diagnostic::new(Code::OutputPathOutside, message, n.span.span(), "this path")
            }
            None => Diagnostic::about_file(
                Code::OutputPathOutside,
                message,
                project.display().to_string(),
            ),
        };
        diags.push(d.with_note(format!(
            "with `-o`, nothing is written outside the folder; dropped: {}",
            dropped.join(" ")
        )));
    }
    dir.join(kept)
}

/// `C:` and the like: a drive letter and a colon.
fn is_drive(part: &str) -> bool {
    let b = part.as_bytes();
    b.len() == 2 && b.first().is_some_and(u8::is_ascii_alphabetic) && b.get(1) == Some(&b':')
}

/// The project's file name without its extension (`dir/foo.qc` → `foo`).
fn project_stem(project: &Path) -> String {
    project
        .file_stem()
        .map_or_else(|| "model".to_string(), |s| s.to_string_lossy().into_owned())
}

/// Outputs of at least this many bytes in all are written on several threads.
const PARALLEL_WRITE_BYTES: usize = 16 << 20;

/// Writes every file under a temporary name in its destination folder (creating folders as
/// needed), then renames them all; on any failure the temporary files are removed and the
/// previous outputs stay as they were. Returns the paths written.
pub fn write_outputs(
    files: &[(std::path::PathBuf, Vec<u8>)],
) -> Result<Vec<std::path::PathBuf>, (std::path::PathBuf, std::io::Error)> {
    let tmp_of = |path: &std::path::Path| {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        path.with_file_name(format!(".{file_name}.mdlc-tmp-{}", std::process::id()))
    };
    let write_one = |(path, bytes): &(std::path::PathBuf, Vec<u8>)| {
        let tmp = tmp_of(path);
        let result = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
            _ => Ok(()),
        }
        .and_then(|()| std::fs::write(&tmp, bytes));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map(|()| tmp)
    };
    // The kernel's copy into the page cache is done by the thread that writes: large outputs
    // (a big model's VVD and three VTX files) are written side by side, largest first.
    let total: usize = files.iter().map(|f| f.1.len()).sum();
    let threads = if total >= PARALLEL_WRITE_BYTES {
        crate::threads::spare_threads(files.len())
    } else {
        1
    };
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files.get(i).map_or(0, |f| f.1.len())));
    let written = crate::threads::map_parallel(&order, threads, |&i| files.get(i).map(write_one));
    let mut results: Vec<Option<std::io::Result<std::path::PathBuf>>> =
        (0..files.len()).map(|_| None).collect();
    for (&i, r) in order.iter().zip(written) {
        if let Some(slot) = results.get_mut(i) {
            *slot = r;
        }
    }
    let mut temps: Vec<(std::path::PathBuf, &std::path::PathBuf)> = Vec::new();
    let mut failed = None;
    for ((path, _), r) in files.iter().zip(results) {
        match r {
            Some(Ok(tmp)) => temps.push((tmp, path)),
            Some(Err(e)) => {
                failed.get_or_insert((path.clone(), e));
            }
            None => {}
        }
    }
    let cleanup = |temps: &[(std::path::PathBuf, &std::path::PathBuf)]| {
        for (t, _) in temps {
            let _ = std::fs::remove_file(t);
        }
    };
    if let Some(e) = failed {
        cleanup(&temps);
        return Err(e);
    }
    let mut done = Vec::new();
    for (i, (tmp, path)) in temps.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, path) {
            cleanup(temps.get(i..).unwrap_or(&[]));
            return Err(((*path).clone(), e));
        }
        done.push((*path).clone());
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of its own under the system's temporary folder, emptied first.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mdlc-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    /// Large outputs (written side by side) arrive whole, in new folders, with no temporary
    /// file left; what was there before is replaced.
    #[test]
    fn large_outputs_are_written_whole() {
        let dir = scratch("large");
        std::fs::create_dir_all(dir.join("m")).unwrap();
        std::fs::write(dir.join("m/a.vvd"), b"old").unwrap();
        let pattern = |n: usize, k: u8| -> Vec<u8> {
            (0..n).map(|i| (i % 251) as u8 ^ k).collect::<Vec<u8>>()
        };
        let files = vec![
            (dir.join("m/a.mdl"), pattern(1000, 1)),
            (dir.join("m/a.vvd"), pattern(PARALLEL_WRITE_BYTES, 2)),
            (dir.join("m/sub/a.dx90.vtx"), pattern(3 << 20, 3)),
            (dir.join("m/sub/a.dx80.vtx"), pattern(3 << 20, 4)),
        ];
        let done = write_outputs(&files).unwrap();
        assert_eq!(done, files.iter().map(|f| f.0.clone()).collect::<Vec<_>>());
        for (path, bytes) in &files {
            assert!(std::fs::read(path).unwrap() == *bytes, "{}", path.display());
        }
        assert_eq!(names(&dir.join("m")), ["a.mdl", "a.vvd", "sub"]);
        assert_eq!(names(&dir.join("m/sub")), ["a.dx80.vtx", "a.dx90.vtx"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// When one file cannot be written, the error names it, no output is replaced or created
    /// and no temporary file is left, whichever thread wrote what.
    #[test]
    fn a_file_that_cannot_be_written_leaves_nothing() {
        let dir = scratch("fail");
        std::fs::write(dir.join("a.mdl"), b"old").unwrap();
        // a file where the folder of one output should be
        std::fs::write(dir.join("blocked"), b"").unwrap();
        let big = vec![7u8; PARALLEL_WRITE_BYTES];
        let files = vec![
            (dir.join("a.mdl"), b"new".to_vec()),
            (dir.join("a.vvd"), big.clone()),
            (dir.join("blocked/a.dx90.vtx"), big),
        ];
        let (path, _) = write_outputs(&files).unwrap_err();
        assert_eq!(path, dir.join("blocked/a.dx90.vtx"));
        assert_eq!(names(&dir), ["a.mdl", "blocked"]);
        assert_eq!(std::fs::read(dir.join("a.mdl")).unwrap(), b"old");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
