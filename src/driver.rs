//! The driver: the one recipe that runs the stages in order. With the CLI, it is the only code
//! that touches files; every stage it calls is a function of its input.
//!
//! Recipes today:
//! * `check` of an SMD/VTA file: read bytes → check they are text → parse → lower (only when
//!   the parse found no error, so one broken line is reported once, not again by every later
//!   stage).
//! * `check` of a project (QC or TOML): read the project into a `ProjectSpec` (QC: tokenize with
//!   includes and macros, then commands) → build the model IR, which loads and checks every
//!   file the project references.
//! * `import-qc`: read a QC project → write it as TOML, after checking that the TOML reads
//!   back into the same `ProjectSpec`.

use std::path::Path;

use crate::diag::{Code, Diagnostic, FileId, Sources};
use crate::load::fs::{Fs, RealFs};
use crate::load::shared::SharedSmds;
use crate::load::{add_text, check_lone_smd};
use crate::project::spec::TargetChoice;
use crate::project::{ProjectSpec, Target};

/// Everything one run found: the files it read (for rendering) and every diagnostic.
#[derive(Debug, Default)]
pub struct Report {
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
    /// Files that could not be read at all (I/O failures: exit code 2).
    pub io_failures: usize,
    /// Binary files read (by `inspect`), which are not in `sources`.
    pub binary_files: usize,
}

impl Report {
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    /// How many files were checked (read or not).
    pub fn sources_count(&self) -> usize {
        self.sources.len() + self.io_failures + self.binary_files
    }

    pub fn warning_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == crate::diag::Severity::Warning)
            .count()
    }
}

/// `mdlc check` on SMD/VTA files only (kept for the tests written against it).
pub fn check_files(paths: &[impl AsRef<Path>]) -> Report {
    check_paths(paths, None)
}

/// What kind of input a path is, by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// `.smd`, `.vta`: one source file.
    Smd,
    /// `.qc`, `.qci`: a QC project.
    Qc,
    /// `.toml`: a project in mdlc's own format.
    Toml,
}

impl InputKind {
    pub fn of(path: &Path) -> Option<InputKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "smd" | "vta" => InputKind::Smd,
            "qc" | "qci" => InputKind::Qc,
            "toml" => InputKind::Toml,
            _ => return None,
        })
    }
}

/// Reads a project file (QC or TOML) into a `ProjectSpec`. `None` when the file could not be
/// read or had errors that leave no usable spec (every problem is in `diags`).
pub fn read_project(
    path: &Path,
    kind: InputKind,
    fs: &dyn Fs,
    forced_target: Option<Target>,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<ProjectSpec> {
    let spec = match kind {
        InputKind::Qc => {
            let tokens = crate::qc::tokens::tokenize(path, fs, sources, diags);
            if tokens.is_empty() && diags.iter().any(|d| d.is_error()) {
                return None;
            }
            crate::qc::commands::parse_project(path, &tokens, forced_target, diags)
        }
        InputKind::Toml => {
            let name = path.display().to_string();
            let bytes = match fs.read(path) {
                Ok(b) => b,
                Err(e) => {
                    diags.push(Diagnostic::unreadable(Path::new(&name), e));
                    return None;
                }
            };
            let (id, ok) = add_text(sources, &name, bytes, diags);
            if !ok {
                return None;
            }
            crate::project::toml::parse_toml(path, id, sources, forced_target, diags)?
        }
        InputKind::Smd => return None,
    };
    if let TargetChoice::Inferred { target, because } = &spec.target {
        diags.push(
            Diagnostic::new(
                Code::TargetInferred,
                format!("building for {} (inferred from the QC)", target.as_str()),
                because.span.span(),
                format!("`{}` is a {} command", because.value, target.as_str()),
            )
            .with_note("give `--target goldsrc` or `--target source` to choose"),
        );
    }
    Some(spec)
}

/// `mdlc check`: reads every file (SMD, VTA, QC, TOML) and everything a project references,
/// builds the model as far as the back ends' input, and writes nothing.
pub fn check_paths(paths: &[impl AsRef<Path>], forced_target: Option<Target>) -> Report {
    let mut report = Report::default();
    let fs = RealFs;
    for path in paths {
        let path = path.as_ref();
        let name = path.display().to_string();
        let kind = InputKind::of(path);
        match kind {
            Some(InputKind::Qc) | Some(InputKind::Toml) => {
                if !path.is_file() {
                    report.io_failures += 1;
                    report
                        .diagnostics
                        .push(Diagnostic::unreadable(Path::new(&name), "no such file"));
                    continue;
                }
                let kind = kind.unwrap_or(InputKind::Qc);
                if let Some(spec) = read_project(
                    path,
                    kind,
                    &fs,
                    forced_target,
                    &mut report.sources,
                    &mut report.diagnostics,
                ) {
                    crate::build::build_model(
                        &spec,
                        &fs,
                        &mut report.sources,
                        &mut report.diagnostics,
                    );
                }
            }
            Some(InputKind::Smd) | None => match std::fs::read(path) {
                Ok(bytes) => {
                    let (id, ok) =
                        add_text(&mut report.sources, &name, bytes, &mut report.diagnostics);
                    if ok {
                        check_lone_smd(&report.sources, id, forced_target, &mut report.diagnostics);
                    }
                }
                Err(e) => {
                    report.io_failures += 1;
                    report
                        .diagnostics
                        .push(Diagnostic::unreadable(Path::new(&name), e));
                }
            },
        }
    }
    report
}

/// The outcome of `import-qc`: the diagnostics, and the TOML text when the QC had no error.
#[derive(Debug, Default)]
pub struct Import {
    pub report: Report,
    pub toml: Option<String>,
}

/// `mdlc import-qc`: reads a QC project and returns the equivalent `model.toml` text, for a file
/// at `out`. The text is read back before it is returned: if it does not give the same
/// `ProjectSpec` (a bug in mdlc), an error says so and no text is returned.
pub fn import_qc(qc: &Path, out: &Path, forced_target: Option<Target>) -> Import {
    // The TOML's paths are written relative to its folder: both ends must be absolute for that
    // (`gman.qc` in the current folder, `-o /elsewhere/model.toml`).
    let (qc_abs, out_abs) = (std::path::absolute(qc), std::path::absolute(out));
    let (qc, out) = match (&qc_abs, &out_abs) {
        (Ok(q), Ok(o)) => (q.as_path(), o.as_path()),
        _ => (qc, out),
    };
    let mut import = Import::default();
    let report = &mut import.report;
    let fs = RealFs;
    if !qc.is_file() {
        report.io_failures += 1;
        let name = qc.display().to_string();
        report
            .diagnostics
            .push(Diagnostic::unreadable(Path::new(&name), "no such file"));
        return import;
    }
    let Some(spec) = read_project(
        qc,
        InputKind::Qc,
        &fs,
        forced_target,
        &mut report.sources,
        &mut report.diagnostics,
    ) else {
        return import;
    };
    if report.error_count() > 0 {
        return import;
    }
    let toml_dir = out.parent().unwrap_or(Path::new(""));
    let text = crate::project::write::write_toml(&spec, toml_dir);
    // Read it back: the TOML must say exactly what the QC says.
    let mut check_sources = Sources::new();
    let mut check_diags = Vec::new();
    let id = check_sources.add(out.display().to_string(), text.clone());
    let forced = Some(spec.target.target());
    let back = crate::project::toml::parse_toml(out, id, &check_sources, forced, &mut check_diags);
    let problems: Vec<String> = check_diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| crate::diag::render_plain(&check_sources, d))
        .collect();
    if back.map(comparable) != Some(comparable(spec.clone())) || !problems.is_empty() {
        let mut d = Diagnostic::about_file(
            Code::InternalError,
            format!(
                "internal error: the TOML written for `{}` does not read back the same",
                qc.display()
            ),
            qc.display().to_string(),
        )
        .with_note("this is a bug in mdlc; nothing was written");
        for p in problems.into_iter().take(5) {
            d.notes.push(p);
        }
        report.diagnostics.push(d);
        return import;
    }
    import.toml = Some(text);
    import
}

/// A spec with what a TOML copy cannot share with its QC cleared: the project file it came from,
/// whether the target was given or inferred (the TOML always states it), and the commands that
/// were not carried over (the TOML keeps them only as comments).
fn comparable(mut spec: ProjectSpec) -> ProjectSpec {
    spec.source = std::path::PathBuf::new();
    spec.target = TargetChoice::Default(spec.target.target());
    spec.not_carried.clear();
    spec
}

// --- build ------------------------------------------------------------------------------------

/// One model's output: the files to write (final paths) and their bytes.
#[derive(Debug, Default)]
pub struct ModelOutput {
    /// The project it came from.
    pub project: std::path::PathBuf,
    /// `(path, bytes)` in the order Valve's tool writes them: group files, `T.mdl`, main file.
    pub files: Vec<(std::path::PathBuf, Vec<u8>)>,
}

/// The outcome of `mdlc build`: every diagnostic, and the files of every model that compiled.
/// Nothing is to be written when the report has an error.
#[derive(Debug, Default)]
pub struct Build {
    pub report: Report,
    pub outputs: Vec<ModelOutput>,
}

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
    use std::path::{Component, PathBuf};
    let base = match &model.name {
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
        let d = match &model.name {
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

/// Reads a project and compiles it for GoldSrc: the header name and the files' bytes, named
/// from `base` (see [`output_path`]). `None` when an error was reported.
///
/// Without `$modelname`, the model is named after the project file (`foo.qc` → `foo.mdl` in
/// the header, group files `models\foo01.mdl`), as Valve's tool names it after the QC path
/// it is given when run from the QC's folder; a warning says so.
///
/// Built beside other projects, SMD files they parsed are taken from `shared`
/// ([`crate::build::build_model_sharing`]).
pub fn compile_goldsrc(
    spec: &ProjectSpec,
    fs: &dyn Fs,
    out_dir: Option<&Path>,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
    shared: Option<&SharedSmds>,
) -> Option<Vec<(std::path::PathBuf, Vec<u8>)>> {
    let mut model = crate::build::build_model_sharing(spec, fs, sources, diags, shared)?;
    let base = output_path(&model, &spec.source, out_dir, diags);
    let default_name = spec
        .source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    match &model.name {
        Some(n) => header_name_differs(n, diags),
        None => {
            let name = default_name.as_deref().unwrap_or("model");
            let header = format!(
                "{}.mdl",
                crate::formats::goldsrc::compile::valve_strip_extension(name)
            );
            let message =
                format!("no `$modelname` in `{name}`: the model is named `{header}` after it");
            let d = Diagnostic::about_file(
                Code::GsNoModelName,
                message,
                spec.source.display().to_string(),
            )
            .with_note("Valve's HL1 compiler names a model without `$modelname` after the QC path it is given (run from the QC's folder: the QC's file name), with `.mdl` for the extension")
            .with_note("help: add `$modelname \"NAME.mdl\"` to choose the name");
            diags.push(d);
        }
    }
    let gs = crate::formats::goldsrc::compile::compile_named(
        &mut model,
        default_name.as_deref(),
        sources,
        diags,
    )?;
    let base_str = base.to_string_lossy().into_owned();
    Some(
        crate::formats::goldsrc::write::write_files(&gs, &base_str)
            .into_iter()
            .map(|(p, b)| (std::path::PathBuf::from(p), b))
            .collect(),
    )
}

/// Warns when Valve's `StripExtension`, which stops only at `/`, would cut a `$modelname`
/// written with `\` elsewhere than mdlc's output path does (`..\models\foo`, a `.` in a folder
/// name): the header keeps Valve's name, the files go where the path says.
fn header_name_differs(name: &crate::project::spec::Spanned<String>, diags: &mut Vec<Diagnostic>) {
    use crate::formats::goldsrc::compile::{output_base, valve_strip_extension};
    let valve = valve_strip_extension(&name.value);
    let ours = output_base(&name.value);
    if valve == ours {
        return;
    }
    diags.push(
        Diagnostic::new(
            Code::GsHeaderNameDiffers,
            format!("Valve's HL1 compiler names this model `{valve}.mdl`, not `{ours}.mdl`"),
            name.span.span(),
            "this name",
        )
        .with_note("Valve's tool removes the extension from the last `.` back to the nearest `/`, and does not stop at `\\`")
        .with_note(format!("the header's name field keeps Valve's `{valve}.mdl`; the files are named after `{ours}`"))
        .with_note("help: end the name with `.mdl`, or write `/` between folders"),
    );
}

/// Reads a project and compiles it for Source: `<base>.mdl`, `.vvd`, `.dx90.vtx`, `.dx80.vtx`
/// and `.sw.vtx`, where `<base>` is [`output_path`]. `None` when an error was reported.
/// `shared`: as for [`compile_goldsrc`].
pub fn compile_source(
    spec: &ProjectSpec,
    fs: &dyn Fs,
    out_dir: Option<&Path>,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
    shared: Option<&SharedSmds>,
) -> Option<Vec<(std::path::PathBuf, Vec<u8>)>> {
    let model = crate::build::build_model_sharing(spec, fs, sources, diags, shared)?;
    let base = output_path(&model, &spec.source, out_dir, diags);
    let files = crate::formats::source::compile(&model, diags)?;
    const SUFFIXES: [&str; 5] = [".mdl", ".vvd", ".dx90.vtx", ".dx80.vtx", ".sw.vtx"];
    Some(
        files
            .into_iter()
            .map(|(name, bytes)| {
                let suffix = SUFFIXES
                    .iter()
                    .find(|s| name.ends_with(*s))
                    .copied()
                    .unwrap_or("");
                let mut p = base.clone().into_os_string();
                p.push(suffix);
                (std::path::PathBuf::from(p), bytes)
            })
            .collect(),
    )
}

/// `mdlc build`: reads each project, builds its model and compiles it; writes nothing itself
/// (see [`write_outputs`]).
///
/// Projects are independent: with several of them, they are built on as many threads as the
/// machine has cores, each into its own [`Build`], and the builds are then joined in input
/// order (diagnostics, files and outputs exactly as one thread would give them).
pub fn build_paths(
    paths: &[impl AsRef<Path>],
    out_dir: Option<&Path>,
    forced_target: Option<Target>,
) -> Build {
    /// Appends `part` to `build`: its files get the next file ids (with the texts a finished
    /// project keeps, those its diagnostics cite: [`Sources::keep_cited`]), its diagnostics
    /// follow.
    fn join_build(build: &mut Build, part: Build) {
        let offset = build.report.sources.len() as u32;
        let sources = &part.report.sources;
        let diagnostics: Vec<Diagnostic> = part
            .report
            .diagnostics
            .into_iter()
            .map(|mut d| {
                for l in &mut d.labels {
                    // (a shared id becomes the project's place for the file first)
                    l.at.file = FileId(sources.local(l.at.file).0.saturating_add(offset));
                }
                d
            })
            .collect();
        build.report.sources.append(part.report.sources);
        build.report.diagnostics.extend(diagnostics);
        build.report.io_failures += part.report.io_failures;
        build.outputs.extend(part.outputs);
    }

    /// Reads, builds and compiles one project into `build`.
    fn build_one(
        path: &Path,
        out_dir: Option<&Path>,
        forced_target: Option<Target>,
        shared: Option<&SharedSmds>,
        build: &mut Build,
    ) {
        let fs = RealFs;
        let report = &mut build.report;
        let name = path.display().to_string();
        let kind = match InputKind::of(path) {
            Some(k @ (InputKind::Qc | InputKind::Toml)) => k,
            _ => {
                report.io_failures += 1;
                report.diagnostics.push(
                    Diagnostic::about_file(
                        Code::FileUnreadable,
                        format!(
                            "`{name}` is not a project: `mdlc build` takes a .qc or a .toml file"
                        ),
                        name,
                    )
                    .with_note("`mdlc check` checks single SMD files"),
                );
                return;
            }
        };
        if !path.is_file() {
            report.io_failures += 1;
            report
                .diagnostics
                .push(Diagnostic::unreadable(Path::new(&name), "no such file"));
            return;
        }
        let Some(spec) = read_project(
            path,
            kind,
            &fs,
            forced_target,
            &mut report.sources,
            &mut report.diagnostics,
        ) else {
            return;
        };
        let files = match spec.target.target() {
            Target::GoldSrc => compile_goldsrc(
                &spec,
                &fs,
                out_dir,
                &mut report.sources,
                &mut report.diagnostics,
                shared,
            ),
            Target::Source => compile_source(
                &spec,
                &fs,
                out_dir,
                &mut report.sources,
                &mut report.diagnostics,
                shared,
            ),
        };
        if let Some(files) = files {
            build.outputs.push(ModelOutput {
                project: path.to_path_buf(),
                files,
            });
        }
    }

    let paths: Vec<&Path> = paths.iter().map(|p| p.as_ref()).collect();
    // One project needs no worker threads (and no asking for the core count, which reads the
    // cgroup files).
    let threads = match paths.len() {
        0 | 1 => 1,
        n => crate::threads::cores().min(n),
    };
    if threads <= 1 {
        let mut build = Build::default();
        for path in &paths {
            build_one(path, out_dir, forced_target, None, &mut build);
            // nothing reads a finished project's texts but its diagnostics
            if paths.len() > 1 {
                build.report.sources.keep_cited(&build.report.diagnostics);
            }
        }
        return build;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Projects built side by side share the SMD files they both read (parsed once).
    let shared = SharedSmds::default();
    let work = || {
        let _worker = crate::threads::ProjectWorker::enter();
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(path) = paths.get(i) else { break };
            let mut build = Build::default();
            build_one(path, out_dir, forced_target, Some(&shared), &mut build);
            // what is left of a finished project until all are: its outputs and diagnostics
            build.report.sources.keep_cited(&build.report.diagnostics);
            done.push((i, build));
        }
        done
    };
    // This thread is one of the workers.
    let mut parts: Vec<(usize, Build)> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut done = work();
        for w in others {
            done.extend(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        done
    });
    parts.sort_by_key(|(i, _)| *i);
    let mut build = Build::default();
    for (_, part) in parts {
        join_build(&mut build, part);
    }
    build
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

// --- inspect ----------------------------------------------------------------------------------

/// The outcome of `mdlc inspect`: the dump (text or JSON) and the diagnostics (a file that is
/// not a model, a missing companion, every invariant that does not hold).
#[derive(Debug, Default)]
pub struct Inspect {
    pub report: Report,
    pub text: String,
}

/// Reads a model and dumps it: a GoldSrc model with its `T.mdl` and `NN.mdl` companions, a
/// Source model with its `.vvd` and `.vtx` files (all beside it). With `pose` (Source only), prints
/// the bones' local transforms in one animation frame instead of the dump.
pub fn inspect(
    path: &Path,
    json: bool,
    pose: Option<&crate::formats::source::pose::PoseQuery>,
) -> Inspect {
    use crate::formats::goldsrc::read;
    let mut out = Inspect::default();
    let name = path.display().to_string();
    let main = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.report.io_failures += 1;
            out.report
                .diagnostics
                .push(Diagnostic::unreadable(Path::new(&name), e));
            return out;
        }
    };
    // Source models (MDL v44-v49) go to the Source reader, which finds the VVD and VTX beside.
    let version = main
        .get(4..8)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let is_source = main.starts_with(b"IDST") && matches!(version, Some(44..=49));
    if let Some(q) = pose {
        out.report.binary_files = 1;
        if is_source {
            inspect_source_pose(path, &name, q, json, &mut out);
        } else {
            out.report.diagnostics.push(
                Diagnostic::about_file(
                    Code::InspectPoseNotSource,
                    format!("`--pose` reads Source models only, and `{name}` is not one"),
                    name.clone(),
                )
                .with_note("Source models are MDL versions 44 to 49; `mdlc inspect FILE` without `--pose` dumps a GoldSrc model's animation streams"),
            );
        }
        return out;
    }
    if is_source {
        out.report.binary_files = 1;
        match crate::formats::source::inspect(path, &RealFs, json) {
            Ok((text, problems)) => {
                out.text = text;
                for p in problems {
                    out.report.diagnostics.push(Diagnostic::about_file(
                        Code::InspectInvariant,
                        p,
                        name.clone(),
                    ));
                }
            }
            Err(e) => out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` cannot be read as a Source model: {e}"),
                name,
            )),
        }
        return out;
    }
    if main.starts_with(b"IDSQ") {
        out.report.binary_files = 1;
        inspect_group_file(&main, &name, json, &mut out);
        return out;
    }
    let header = match read::header(&main) {
        Ok(h) => h,
        Err(e) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` is not a GoldSrc model: {e}"),
                name,
            ));
            return out;
        }
    };
    let stem = path.with_extension("");
    let stem = stem.to_string_lossy();
    let tpath = std::path::PathBuf::from(format!("{stem}T.mdl"));
    let textures = if header.numtextures == 0 {
        match std::fs::read(&tpath) {
            Ok(b) => Some(b),
            Err(e) => {
                // A model with textures inside has no T file; one without needs it: Valve's
                // model viewer and the engine load it whenever `numtextures` is 0 (mdlc's
                // build refuses such a model without `$externaltextures`, E0544).
                out.report.diagnostics.push(Diagnostic::about_file(
                    Code::InspectInvariant,
                    format!(
                        "the model keeps its textures in `{}`, which cannot be read: {e}",
                        tpath.display()
                    ),
                    name.clone(),
                ));
                None
            }
        }
    } else {
        None
    };
    let mut groups = Vec::new();
    let mut missing_groups: Vec<usize> = Vec::new();
    for g in 1..header.numseqgroups.clamp(1, 1000) as usize {
        let gp =
            std::path::PathBuf::from(crate::formats::goldsrc::write::group_file_name(&stem, g));
        match std::fs::read(&gp) {
            Ok(b) => groups.push(b),
            Err(e) => {
                out.report.diagnostics.push(Diagnostic::about_file(
                    Code::InspectInvariant,
                    format!("cannot read sequence group file `{}`: {e}", gp.display()),
                    name.clone(),
                ));
                groups.push(Vec::new());
                missing_groups.push(g);
            }
        }
    }
    out.report.binary_files =
        1 + usize::from(textures.is_some()) + groups.len() - missing_groups.len();
    let group_refs: Vec<&[u8]> = groups.iter().map(Vec::as_slice).collect();
    let parsed = match read::parse(&main, textures.as_deref(), &group_refs) {
        Ok(p) => p,
        Err(e) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` is not a GoldSrc model: {e}"),
                name,
            ));
            return out;
        }
    };
    let set = read::FileSet {
        main: &main,
        textures: textures.as_deref(),
        groups: group_refs.clone(),
    };
    out.text = if json {
        serde_json::to_string_pretty(&parsed).unwrap_or_default()
    } else {
        read::dump(&parsed, &set)
    };
    for p in &parsed.problems {
        // An unreadable companion was reported already; its empty stand-in is not news.
        let about_missing_group = missing_groups
            .iter()
            .any(|g| p.starts_with(&format!("group file {g:02}:")));
        let about_missing_t = textures.is_none() && p.contains("no T file was given");
        if about_missing_group || about_missing_t {
            continue;
        }
        out.report.diagnostics.push(Diagnostic::about_file(
            Code::InspectInvariant,
            format!("invariant does not hold: {p}"),
            name.clone(),
        ));
    }
    out
}

/// `mdlc inspect` of a GoldSrc sequence group file (`NN.mdl`, `IDSQ`) given alone: its header
/// (`goldsrc.md` §4.2) and the invariants that hold without the main model; its animations are
/// decoded through the main model, which names the file.
fn inspect_group_file(bytes: &[u8], name: &str, json: bool, out: &mut Inspect) {
    use crate::formats::goldsrc::read::{Record, StudioSeqHdr};
    if bytes.len() < StudioSeqHdr::SIZE {
        out.report.diagnostics.push(Diagnostic::about_file(
            Code::InspectNotMdl,
            format!(
                "`{name}` is not a GoldSrc sequence group file: {} bytes is too short for its header ({} bytes)",
                bytes.len(),
                StudioSeqHdr::SIZE
            ),
            name,
        ));
        return;
    }
    let h = StudioSeqHdr::parse(bytes.get(..StudioSeqHdr::SIZE).unwrap_or(bytes));
    let mut problems = Vec::new();
    if h.version != 10 {
        problems.push(format!("version is {}, not 10", h.version));
    }
    if i64::from(h.length) != bytes.len() as i64 {
        problems.push(format!(
            "length is {} but the file has {} bytes",
            h.length,
            bytes.len()
        ));
    }
    if bytes.get(8..72).is_some_and(|n| !n.contains(&0)) {
        problems.push("the name fills its 64 bytes without a terminating NUL".into());
    }
    let data = bytes.len() - StudioSeqHdr::SIZE;
    out.text = if json {
        serde_json::to_string_pretty(&serde_json::json!({
            "group_header": h,
            "animation_bytes": data,
        }))
        .unwrap_or_default()
    } else {
        let mut t = String::new();
        t.push_str("sequence group file\n");
        t.push_str(&format!(
            "header @ 0 ({}, {} bytes)\n",
            StudioSeqHdr::NAME,
            StudioSeqHdr::SIZE
        ));
        t.push_str(&format!("  id: \"{}\"\n", h.id));
        t.push_str(&format!("  version: {}\n", h.version));
        t.push_str(&format!("  name: \"{}\"\n", h.name));
        t.push_str(&format!("  length: {}\n", h.length));
        t.push_str(&format!(
            "animation data @ {}: {data} bytes{}\n",
            StudioSeqHdr::SIZE,
            if data == 0 {
                " (a group without sequences)"
            } else {
                " (decoded through the main model: `mdlc inspect` its `.mdl`)"
            }
        ));
        if problems.is_empty() {
            t.push_str("invariants: all hold\n");
        }
        t
    };
    for p in problems {
        out.report.diagnostics.push(Diagnostic::about_file(
            Code::InspectInvariant,
            format!("invariant does not hold: {p}"),
            name,
        ));
    }
}

/// `mdlc inspect --pose` of a Source model: the pose text, or the diagnostic saying why not.
fn inspect_source_pose(
    path: &Path,
    name: &str,
    q: &crate::formats::source::pose::PoseQuery,
    json: bool,
    out: &mut Inspect,
) {
    use crate::formats::source::pose::PoseError;
    let (result, problems) = match crate::formats::source::inspect_pose(path, &RealFs, q, json) {
        Ok(r) => r,
        Err(e) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` cannot be read as a Source model: {e}"),
                name,
            ));
            return;
        }
    };
    for p in problems {
        out.report
            .diagnostics
            .push(Diagnostic::about_file(Code::InspectInvariant, p, name));
    }
    let did_you_mean = |d: Diagnostic, s: &Option<String>| match s {
        Some(s) => d.with_note(format!("help: did you mean `{s}`?")),
        None => d,
    };
    // A short list of names is shown whole; a long one is left to the dump.
    let listed = |what: &str, names: &[String]| {
        if names.is_empty() || names.len() > 20 {
            None
        } else {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            Some(format!("the model's {what}: {}", names.join(", ")))
        }
    };
    match result {
        Ok(text) => out.text = text,
        Err(PoseError::UnknownName {
            name: n,
            suggestion,
            sequences,
        }) => {
            let mut d = did_you_mean(
                Diagnostic::about_file(
                    Code::InspectUnknownAnimation,
                    format!("`{name}` has no animation or sequence `{n}`"),
                    name,
                ),
                &suggestion,
            );
            if let Some(l) = listed("sequences", &sequences) {
                d = d.with_note(l);
            }
            out.report.diagnostics.push(
                d.with_note("`mdlc inspect FILE` lists the model's sequences and animations"),
            );
        }
        Err(PoseError::FrameOutOfRange {
            frame,
            animation,
            numframes,
        }) => {
            out.report.diagnostics.push(
                Diagnostic::about_file(
                    Code::InspectFrameOutOfRange,
                    format!("frame {frame} is outside animation `{animation}`"),
                    name,
                )
                .with_note(if numframes > 0 {
                    format!(
                        "the animation has {numframes} frames: give a frame from 0 to {} (fractions interpolate)",
                        numframes - 1
                    )
                } else {
                    format!("the animation has {numframes} frames")
                }),
            );
        }
        Err(PoseError::UnknownBone {
            name: n,
            suggestion,
            bones,
        }) => {
            let d = did_you_mean(
                Diagnostic::about_file(
                    Code::InspectUnknownBone,
                    format!("`{name}` has no bone `{n}`"),
                    name,
                ),
                &suggestion,
            );
            out.report.diagnostics.push(match listed("bones", &bones) {
                Some(l) => d.with_note(l),
                None => d.with_note("`mdlc inspect FILE` lists the model's bones"),
            });
        }
        Err(PoseError::Undecodable { what, why }) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectPoseUndecodable,
                format!("cannot decode {what}: {why}"),
                name,
            ));
        }
    }
}
