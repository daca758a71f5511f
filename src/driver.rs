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
use crate::load::{add_text, check_dmx, check_lone_smd, check_lone_smd_streamed, prepare_text};
use crate::project::spec::TargetChoice;
use crate::project::{ProjectSpec, Target};

/// `mdlc check` on SMD/VTA files only (kept for the tests written against it).
pub fn check_files(paths: &[impl AsRef<Path>]) -> Report {
    check_paths(paths, None)
}

/// What kind of input a path is, by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// `.smd`, `.vta`, `.dmx`: one source file.
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
            "smd" | "vta" | "dmx" => InputKind::Smd,
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
/// builds the model through its engine's back end, and writes nothing.
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
                    // the whole build but the writing, so that the back end's diagnostics (its
                    // limits, animation options, IK rules, collision models) are reported too
                    let (sources, diags) = (&mut report.sources, &mut report.diagnostics);
                    match spec.target.target() {
                        Target::GoldSrc => {
                            compile_goldsrc(&spec, &fs, None, sources, diags, None);
                        }
                        Target::Source => {
                            compile_source(&spec, &fs, None, sources, diags, None);
                        }
                    }
                }
            }
            Some(InputKind::Smd) | None => {
                // a large SMD is parsed as it is read, when nothing stands in the way
                let given = match check_lone_smd_streamed(
                    &fs,
                    path,
                    &mut report.sources,
                    forced_target,
                    &mut report.diagnostics,
                ) {
                    Ok(_) => continue,
                    Err(given) => given,
                };
                match std::fs::read(path) {
                    Ok(bytes) if crate::dmx::is_dmx_name(&name) => {
                        let id = report.sources.add(&name, String::new());
                        let (text, _) = check_dmx(id, &name, &bytes, &mut report.diagnostics);
                        report.sources.set_text(id, text);
                    }
                    Ok(bytes) => {
                        // (the place the streamed attempt gave the file, if it made one)
                        let id = given.unwrap_or_else(|| report.sources.add(&name, String::new()));
                        let (text, ok) = prepare_text(id, &name, bytes, &mut report.diagnostics);
                        report.sources.set_text(id, text);
                        if ok {
                            check_lone_smd(
                                &report.sources,
                                id,
                                forced_target,
                                &mut report.diagnostics,
                            );
                        }
                    }
                    Err(e) => {
                        report.io_failures += 1;
                        report
                            .diagnostics
                            .push(Diagnostic::unreadable(Path::new(&name), e));
                    }
                }
            }
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

/// The outcome of `mdlc build`: every diagnostic, the files of every model that compiled, and
/// what happened to each project. Nothing is to be written when the report has an error.
#[derive(Debug, Default)]
pub struct Build {
    pub report: Report,
    pub outputs: Vec<ModelOutput>,
    /// One per project given, in order.
    pub projects: Vec<ProjectResult>,
}

/// What happened to one project of `mdlc build`.
#[derive(Debug)]
pub struct ProjectResult {
    pub project: std::path::PathBuf,
    /// The target, once the project was read.
    pub target: Option<Target>,
    /// Its record, when it was up to date and so not built.
    pub up_to_date: Option<crate::buildsys::record::Record>,
    /// The files it read or used, in first-use order (empty when up to date: see the record).
    pub inputs: Vec<crate::load::fs::Recorded>,
    /// Its diagnostics in the build's report.
    pub diagnostics: std::ops::Range<usize>,
    pub seconds: f64,
    /// Where its up-to-date record is kept, and the options it is keyed on (`None` when the
    /// build keeps no records).
    pub record: Option<(std::path::PathBuf, String)>,
    pub started: std::time::SystemTime,
    /// Its files in [`Build::outputs`], when it compiled.
    pub output: Option<usize>,
}

/// Told when a project starts (`false`) and when it is done (`true`); called from the worker
/// threads.
pub type ProgressFn<'a> = dyn Fn(&Path, bool) + Sync + 'a;

/// Options of [`build_with`].
#[derive(Clone, Copy, Default)]
pub struct BuildOptions<'a> {
    /// `-o DIR` (with `--game DIR`, `DIR/models`).
    pub out_dir: Option<&'a Path>,
    pub forced_target: Option<Target>,
    /// `--game`: only Source projects may be built (`E0800` for a GoldSrc one).
    pub game: bool,
    /// Worker threads (default: the machine's cores).
    pub jobs: Option<usize>,
    /// Keep and use up-to-date records (`--force` turns the skipping off, not the records).
    pub records: bool,
    /// Skip projects whose record says they are up to date.
    pub skip_up_to_date: bool,
    /// Called when a project starts (`false`) and ends (`true`), from the worker threads.
    pub progress: Option<&'a ProgressFn<'a>>,
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
/// and `.sw.vtx` (and `.phy` with a collision model, `.ani` with `$animblocksize`), where `<base>` is [`output_path`](crate::output::output_path). `None` when an error was reported.
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
    let files = crate::formats::source::compile_owned(model, diags)?;
    const SUFFIXES: [&str; 7] = [
        ".mdl",
        ".vvd",
        ".dx90.vtx",
        ".dx80.vtx",
        ".sw.vtx",
        ".phy",
        ".ani",
    ];
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

/// `mdlc build` without records, progress or options beyond the output folder and target: see
/// [`build_with`].
pub fn build_paths(
    paths: &[impl AsRef<Path>],
    out_dir: Option<&Path>,
    forced_target: Option<Target>,
) -> Build {
    build_with(
        paths,
        &BuildOptions {
            out_dir,
            forced_target,
            ..BuildOptions::default()
        },
    )
}

/// `mdlc build`: reads each project, builds its model and compiles it; writes nothing itself
/// (see [`write_outputs`](crate::output::write_outputs)). With `records`, a project whose
/// up-to-date record ([`crate::buildsys::record`]) matches is not built.
///
/// Projects are independent: with several of them, they are built on as many threads as the
/// machine has cores (or `jobs`), each into its own [`Build`], and the builds are then joined
/// in input order (diagnostics, files and outputs exactly as one thread would give them).
pub fn build_with(paths: &[impl AsRef<Path>], opts: &BuildOptions<'_>) -> Build {
    let mut build = build_all(paths, opts);
    refuse_same_outputs(&mut build);
    build
}

/// Two projects of one run that write the same file (the same project given twice, or two
/// sharing `$modelname`): the later one gets E0801 and no outputs, so the run writes nothing.
fn refuse_same_outputs(build: &mut Build) {
    let mut owner: std::collections::HashMap<std::path::PathBuf, usize> = Default::default();
    let mut clashes = Vec::new();
    for (i, p) in build.projects.iter().enumerate() {
        let files: Vec<&Path> = match (&p.up_to_date, p.output) {
            (Some(rec), _) => rec.outputs.iter().map(|f| f.path.as_path()).collect(),
            (None, Some(o)) => build.outputs[o]
                .files
                .iter()
                .map(|f| f.0.as_path())
                .collect(),
            (None, None) => Vec::new(),
        };
        for f in files {
            let key: std::path::PathBuf = f.components().collect();
            match owner.get(&key) {
                Some(&first) if first != i => {
                    clashes.push((i, first, f.to_path_buf()));
                    break;
                }
                _ => {
                    owner.insert(key, i);
                }
            }
        }
    }
    for (i, first, file) in clashes.into_iter().rev() {
        let name = build.projects[i].project.display().to_string();
        let d = Diagnostic::about_file(
            Code::SameOutput,
            format!(
                "`{name}` writes `{}`, as `{}` before it does",
                file.display(),
                build.projects[first].project.display()
            ),
            name,
        )
        .with_note("give each project once, or give one of them another `$modelname`");
        let at = build.projects[i].diagnostics.end;
        build.report.diagnostics.insert(at, d);
        for (j, p) in build.projects.iter_mut().enumerate() {
            if j == i {
                p.diagnostics.end += 1;
            } else if j > i {
                p.diagnostics = p.diagnostics.start + 1..p.diagnostics.end + 1;
            }
        }
        build.projects[i].output = None;
        build.projects[i].up_to_date = None;
    }
}

/// [`build_with`] before the check of outputs across projects.
fn build_all(paths: &[impl AsRef<Path>], opts: &BuildOptions<'_>) -> Build {
    /// Appends `part` to `build`: its files get the next file ids (with the texts a finished
    /// project keeps, those its diagnostics cite: [`Sources::keep_cited`]), its diagnostics
    /// follow.
    fn join_build(build: &mut Build, part: Build) {
        let offset = build.report.sources.len() as u32;
        let first = build.report.diagnostics.len();
        let first_output = build.outputs.len();
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
        build
            .projects
            .extend(part.projects.into_iter().map(|mut p| {
                p.diagnostics = p.diagnostics.start + first..p.diagnostics.end + first;
                p.output = p.output.map(|o| o + first_output);
                p
            }));
    }

    /// Reads, builds and compiles one project into `build`, or finds it up to date.
    fn build_one(
        path: &Path,
        opts: &BuildOptions<'_>,
        shared: Option<&SharedSmds>,
        build: &mut Build,
    ) {
        if let Some(progress) = opts.progress {
            progress(path, false);
        }
        let clock = std::time::Instant::now();
        let first = build.report.diagnostics.len();
        let record = opts.records.then(|| {
            let key = crate::buildsys::record::key_text(
                path,
                opts.forced_target.map(Target::as_str),
                opts.out_dir,
            );
            (
                crate::buildsys::record::record_path(opts.out_dir, &key),
                key,
            )
        });
        let mut result = ProjectResult {
            project: path.to_path_buf(),
            target: None,
            up_to_date: None,
            inputs: Vec::new(),
            diagnostics: first..first,
            seconds: 0.0,
            record,
            started: std::time::SystemTime::now(),
            output: None,
        };
        let fresh = match (&result.record, opts.skip_up_to_date) {
            (Some((at, key)), true) => crate::buildsys::record::up_to_date(at, key),
            _ => None,
        };
        if let Some(rec) = fresh {
            result.target = match rec.target.as_str() {
                "goldsrc" => Some(Target::GoldSrc),
                "source" => Some(Target::Source),
                _ => None,
            };
            result.up_to_date = Some(rec);
        } else {
            let fs = crate::load::fs::RecordingFs::new(&RealFs);
            let before = build.outputs.len();
            result.target = build_project(path, &fs, opts, shared, build);
            result.inputs = fs.inputs();
            result.output = (build.outputs.len() > before).then_some(before);
        }
        result.diagnostics = first..build.report.diagnostics.len();
        result.seconds = clock.elapsed().as_secs_f64();
        build.projects.push(result);
        if let Some(progress) = opts.progress {
            progress(path, true);
        }
    }

    /// Reads, builds and compiles one project into `build`; returns its target once known.
    fn build_project(
        path: &Path,
        fs: &dyn Fs,
        opts: &BuildOptions<'_>,
        shared: Option<&SharedSmds>,
        build: &mut Build,
    ) -> Option<Target> {
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
                return None;
            }
        };
        if !path.is_file() {
            report.io_failures += 1;
            report
                .diagnostics
                .push(Diagnostic::unreadable(Path::new(&name), "no such file"));
            return None;
        }
        let spec = read_project(
            path,
            kind,
            fs,
            opts.forced_target,
            &mut report.sources,
            &mut report.diagnostics,
        )?;
        let target = spec.target.target();
        let files = match target {
            Target::GoldSrc if opts.game => {
                report.diagnostics.push(
                    Diagnostic::about_file(
                        Code::GameWithGoldSrc,
                        format!(
                            "`{name}` is a GoldSrc project: `--game` places Source models (in `DIR/models/`)"
                        ),
                        name,
                    )
                    .with_note("help: give `-o DIR` for a GoldSrc model (its `$modelname` path is kept under DIR)"),
                );
                None
            }
            Target::GoldSrc => compile_goldsrc(
                &spec,
                fs,
                opts.out_dir,
                &mut report.sources,
                &mut report.diagnostics,
                shared,
            ),
            Target::Source => compile_source(
                &spec,
                fs,
                opts.out_dir,
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
        Some(target)
    }

    let paths: Vec<&Path> = paths.iter().map(|p| p.as_ref()).collect();
    // One project needs no worker threads (and no asking for the core count, which reads the
    // cgroup files).
    let threads = match paths.len() {
        0 | 1 => 1,
        n => opts.jobs.unwrap_or_else(crate::threads::cores).clamp(1, n),
    };
    if threads <= 1 {
        let mut build = Build::default();
        for path in &paths {
            build_one(path, opts, None, &mut build);
            // nothing reads a finished project's texts but its diagnostics
            if paths.len() > 1 {
                build.report.sources.keep_cited(&build.report.diagnostics);
            }
        }
        return build;
    }
    // Projects built side by side share the SMD files they both read (parsed once).
    let shared = SharedSmds::default();
    // This thread is one of the workers; each holds a core while it builds a project.
    let parts = crate::threads::map_parallel(&paths, threads, |path| {
        let _worker = crate::threads::ProjectWorker::enter();
        let mut build = Build::default();
        build_one(path, opts, Some(&shared), &mut build);
        // what is left of a finished project until all are: its outputs and diagnostics
        build.report.sources.keep_cited(&build.report.diagnostics);
        build
    });
    let mut build = Build::default();
    for part in parts {
        join_build(&mut build, part);
    }
    build
}

/// What `mdlc ninja` writes, and the diagnostics of reading the projects.
#[derive(Debug, Default)]
pub struct Ninja {
    pub report: Report,
    pub text: String,
}

/// `mdlc ninja`: reads each project (not its meshes) to name the model file `mdlc build -o
/// out_dir` writes for it, and gives a Ninja file with one `mdlc build` edge per project, its
/// inputs from the depfile the build writes (`deps = gcc`), and `restat` so that a project
/// `mdlc build` finds up to date does not make its dependents run.
pub fn ninja_file(
    paths: &[impl AsRef<Path>],
    out_dir: &Path,
    forced_target: Option<Target>,
) -> Ninja {
    fn escape(p: &Path) -> String {
        let s = p.to_string_lossy();
        s.replace('$', "$$").replace(' ', "$ ").replace(':', "$:")
    }
    let mut ninja = Ninja::default();
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "mdlc".to_string());
    let target_arg = forced_target.map_or(String::new(), |t| format!(" --target {}", t.as_str()));
    let mut text = format!(
        "# Written by `mdlc ninja` {}: one edge per project; inputs come from each build's depfile.\n\
         ninja_required_version = 1.3\n\n\
         rule mdlc\n\
         \x20 command = {} build $in -o {}{} --depfile $out.d --progress never\n\
         \x20 depfile = $out.d\n\
         \x20 deps = gcc\n\
         \x20 restat = 1\n\
         \x20 description = mdlc build $in\n\n",
        env!("CARGO_PKG_VERSION"),
        exe.replace('$', "$$").replace(' ', "$ "),
        escape(out_dir),
        target_arg
    );
    let fs = RealFs;
    let mut seen: std::collections::HashMap<std::path::PathBuf, &Path> = Default::default();
    for path in paths {
        let path = path.as_ref();
        let report = &mut ninja.report;
        let Some(kind @ (InputKind::Qc | InputKind::Toml)) = InputKind::of(path) else {
            report.io_failures += 1;
            report.diagnostics.push(Diagnostic::about_file(
                Code::FileUnreadable,
                format!(
                    "`{}` is not a project: give .qc or .toml files",
                    path.display()
                ),
                path.display().to_string(),
            ));
            continue;
        };
        let Some(spec) = read_project(
            path,
            kind,
            &fs,
            forced_target,
            &mut report.sources,
            &mut report.diagnostics,
        ) else {
            continue;
        };
        let base = crate::output::output_path_named(
            spec.name.as_ref(),
            path,
            Some(out_dir),
            &mut report.diagnostics,
        );
        let mut main = base.into_os_string();
        main.push(".mdl");
        let main = std::path::PathBuf::from(main);
        if let Some(first) = seen.get(&main.components().collect::<std::path::PathBuf>()) {
            report.diagnostics.push(
                Diagnostic::about_file(
                    Code::SameOutput,
                    format!(
                        "`{}` writes `{}`, as `{}` before it does",
                        path.display(),
                        main.display(),
                        first.display()
                    ),
                    path.display().to_string(),
                )
                .with_note("give each project once, or give one of them another `$modelname`"),
            );
            continue;
        }
        seen.insert(main.components().collect(), path);
        // the other files the build writes, as implicit outputs: deleting one makes Ninja
        // run the build again (GoldSrc sequence-group files depend on the animations' sizes
        // and are left out)
        let mut others: Vec<std::path::PathBuf> = Vec::new();
        let with = |suffix: &str| {
            let mut s = main.clone().into_os_string();
            let stem_len = s.len() - ".mdl".len();
            let mut t = s.to_string_lossy()[..stem_len].to_string();
            t.push_str(suffix);
            s.clear();
            s.push(t);
            std::path::PathBuf::from(s)
        };
        match spec.target.target() {
            Target::Source => {
                for suffix in [".vvd", ".dx90.vtx", ".dx80.vtx", ".sw.vtx"] {
                    others.push(with(suffix));
                }
                if spec.collision.is_some() {
                    others.push(with(".phy"));
                }
                if spec.anim_block_size.as_ref().is_some_and(|n| n.value > 0) {
                    others.push(with(".ani"));
                }
            }
            Target::GoldSrc => {
                if spec.external_textures {
                    others.push(with("T.mdl"));
                }
            }
        }
        let implicit: String = others.iter().map(|p| format!(" {}", escape(p))).collect();
        text.push_str(&format!(
            "build {}{}{}: mdlc {}\n",
            escape(&main),
            if others.is_empty() { "" } else { " |" },
            implicit,
            escape(path)
        ));
    }
    ninja.text = text;
    ninja
}
