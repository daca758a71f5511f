//! The driver: the recipes that run the stages in order, and nothing else. Files are read by the
//! load stage (`crate::load`) and written by `crate::output`; every stage called here is a
//! function of its input (docs/design.md).
//!
//! Recipes:
//! * `check` of an SMD/VTA file: read bytes → check they are text → parse → lower (only when
//!   the parse found no error, so one broken line is reported once, not again by every later
//!   stage).
//! * `check` of a project (QC or TOML): read the project into a `ProjectSpec` (QC: tokenize with
//!   includes and macros, then commands) → build the model IR, which loads and checks every
//!   file the project references.
//! * `build` of projects: read each project → build the model → compile it with the target's
//!   back end → the files to write (`crate::output::write_outputs` writes them); several
//!   projects on several threads, sharing their SMD files, joined in input order.
//! * `import-qc`: read a QC project → write it as TOML, after checking that the TOML reads
//!   back into the same `ProjectSpec`.

use std::path::Path;

pub use crate::diag::Report;
use crate::diag::{Code, Diagnostic, FileId, Sources};
use crate::load::fs::{Fs, RealFs};
use crate::load::shared::SharedSmds;
use crate::load::{add_text, check_lone_smd};
use crate::project::spec::TargetChoice;
use crate::project::{ProjectSpec, Target};

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

/// Reads a project and compiles it for GoldSrc: the header name and the files' bytes, named
/// from `base` (see [`output_path`](crate::output::output_path)). `None` when an error was reported.
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
    let base = crate::output::output_path(&model, &spec.source, out_dir, diags);
    let default_name = spec
        .source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    crate::formats::goldsrc::compile::name_warnings(
        &model,
        default_name.as_deref(),
        &spec.source.display().to_string(),
        diags,
    );
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

/// Reads a project and compiles it for Source: `<base>.mdl`, `.vvd`, `.dx90.vtx`, `.dx80.vtx`
/// and `.sw.vtx`, where `<base>` is [`output_path`](crate::output::output_path). `None` when an error was reported.
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
    let base = crate::output::output_path(&model, &spec.source, out_dir, diags);
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
/// (see [`write_outputs`](crate::output::write_outputs)).
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
