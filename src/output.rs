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

/// Writes every file under a temporary name in its destination folder (creating folders as
/// needed), then renames them all; on any failure the temporary files are removed and the
/// previous outputs stay as they were. Returns the paths written.
pub fn write_outputs(
    files: &[(std::path::PathBuf, Vec<u8>)],
) -> Result<Vec<std::path::PathBuf>, (std::path::PathBuf, std::io::Error)> {
    let mut temps: Vec<(std::path::PathBuf, &std::path::PathBuf)> = Vec::new();
    let cleanup = |temps: &[(std::path::PathBuf, &std::path::PathBuf)]| {
        for (t, _) in temps {
            let _ = std::fs::remove_file(t);
        }
    };
    for (path, bytes) in files {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{file_name}.mdlc-tmp-{}", std::process::id()));
        let result = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
            _ => Ok(()),
        }
        .and_then(|()| std::fs::write(&tmp, bytes));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            cleanup(&temps);
            return Err((path.clone(), e));
        }
        temps.push((tmp, path));
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
