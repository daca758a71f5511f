//! SMD and VTA files loaded for a project: found (with the case-insensitive fallback), read,
//! made text, parsed and lowered into IR pieces ([`SmdModel`]), each file once however many
//! items name it, in parallel where there are cores to spare, and shared with the other projects
//! of a batch ([`super::shared`]).
//!
//! The loader reports what it finds where the project first names a file: a missing file at
//! that reference (every reference, with the nearest existing name), a file found only in
//! another case with a warning, the file's own problems in the file. A file with an error is
//! not loaded, so a broken line is never reported again by a later stage.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::TrySendError;
use std::sync::Arc;

use crate::diag::{Code, Diagnostic, FileId, FileSpan, FileStamp, Sources, Span};
use crate::ir::written::Target;
use crate::smd::{self, lower_smd_owned, SmdModel};
use crate::threads::spare_threads;

use super::fs::{find, Fs, Lookup};
use super::shared::{Claim, SharedParse, SharedSmds};
use super::text::{add_text, prepare_text};

/// Parses and lowers one SMD/VTA file already in `sources`. Returns the IR when the file has no
/// error.
pub fn check_smd(sources: &Sources, id: FileId, diags: &mut Vec<Diagnostic>) -> Option<SmdModel> {
    check_smd_text(sources.text(id), id, diags)
}

/// [`check_smd`] on the text of file `id`, held by the caller. A long file is read in pieces
/// on the cores there are to spare, as a project's files are.
pub fn check_smd_text(text: &str, id: FileId, diags: &mut Vec<Diagnostic>) -> Option<SmdModel> {
    let threads = if text.len() >= PARALLEL_PARSE_BYTES {
        spare_threads(usize::MAX)
    } else {
        1
    };
    let parsed = smd::parse_split(text, id, threads);
    let ok = !parsed.has_errors();
    diags.extend(parsed.diagnostics);
    if !ok {
        return None;
    }
    let before = diags.len();
    let model = lower_smd_owned(parsed.smd, id, diags);
    diags[before..]
        .iter()
        .all(|d| !d.is_error())
        .then_some(model)
}

/// `mdlc check` on one SMD/VTA file outside a project: [`check_smd`], then the rules that
/// depend on the engine, Source's unless `target` is GoldSrc (a negative `time`, `E0132`).
pub fn check_lone_smd(
    sources: &Sources,
    id: FileId,
    target: Option<Target>,
    diags: &mut Vec<Diagnostic>,
) -> Option<SmdModel> {
    let smd = check_smd(sources, id, diags)?;
    lone_rules(smd, target, diags)
}

/// [`check_lone_smd`] of a file of [`STREAM_BYTES`] or more, parsed as it is read, as a
/// project's large file is ([`stream_job`]): its text is never held whole, and a diagnostic
/// reads its lines from the file again. `Err` when the file must be read whole after all (see
/// [`smd::parse_streamed`]), with the place in `sources` it was given if it was tried.
pub fn check_lone_smd_streamed(
    fs: &dyn Fs,
    path: &Path,
    sources: &mut Sources,
    target: Option<Target>,
    diags: &mut Vec<Diagnostic>,
) -> Result<Option<SmdModel>, Option<FileId>> {
    let parsed = stream_job(fs, path, sources)?;
    if let Some(stamp) = parsed.stamp {
        sources.evict(parsed.id, parsed.path, stamp);
    }
    diags.extend(parsed.diags);
    Ok(parsed.smd.and_then(|smd| lone_rules(smd, target, diags)))
}

/// The rules of a lone file that depend on the engine: Source's unless `target` is GoldSrc.
fn lone_rules(
    smd: SmdModel,
    target: Option<Target>,
    diags: &mut Vec<Diagnostic>,
) -> Option<SmdModel> {
    match smd.negative_time {
        Some(neg) if target != Some(Target::GoldSrc) => {
            diags.push(crate::smd::lower::negative_time_error(&smd, neg));
            None
        }
        _ => Some(smd),
    }
}

/// Reads a DMX file (binary or `keyvalues2`) into the same IR pieces as an SMD. Returns the text
/// to keep for its diagnostics (the header line of a binary file, which has no other lines to
/// show; the whole text of a `keyvalues2` file) and the model when the file has no error.
pub fn check_dmx(
    id: FileId,
    name: &str,
    bytes: &[u8],
    diags: &mut Vec<Diagnostic>,
) -> (String, Option<SmdModel>) {
    if bytes.len() > crate::diag::MAX_FILE_LEN {
        diags.push(super::text::too_large(name, bytes.len()));
        return (String::new(), None);
    }
    let binary = memchr::memchr(0, bytes).is_some();
    let header = crate::dmx::read::header_len(bytes).unwrap_or(0);
    let text = if binary {
        String::from_utf8_lossy(&bytes[..header]).into_owned()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    };
    let head = Span::new(0, header.min(text.len()) as u32);
    let dmx = match crate::dmx::parse(bytes) {
        Ok(d) => d,
        Err(e) => {
            // (a text file's offset is one into its text unless it held bytes that are not
            // UTF-8; then, or for a binary file, the header and the offset)
            let rest = (!binary && text.len() == bytes.len())
                .then(|| text.get(e.offset..))
                .flatten()
                .filter(|r| !r.is_empty());
            let (span, note) = match rest {
                Some(r) => {
                    let end = r.find(['\n', '\r']).map_or(text.len(), |n| e.offset + n);
                    (
                        Span::new(e.offset as u32, end as u32),
                        "the rest of the file is not read".to_string(),
                    )
                }
                None => (head, format!("at byte {} of the file", e.offset)),
            };
            diags.push(
                Diagnostic::new(
                    Code::DmxUnreadable,
                    format!("`{name}` cannot be read as DMX: {}", e.message),
                    span.in_file(id),
                    "not readable from here",
                )
                .with_note(note),
            );
            return (text, None);
        }
    };
    let before = diags.len();
    let model = crate::dmx::lower_dmx(&dmx, id, head, diags);
    let ok = diags[before..].iter().all(|d| !d.is_error());
    (text, model.filter(|_| ok))
}

pub struct LoadedSmd {
    pub path: PathBuf,
    pub file: FileId,
    /// Shared with the other projects of a batch that use the file ([`super::shared`]).
    pub smd: Arc<SmdModel>,
}

#[derive(Clone, Debug)]
enum Cached {
    Ok(usize),
    /// Missing, with the nearest name (reported at every reference).
    Missing(Option<PathBuf>),
    /// Unreadable or with SMD errors (already reported once).
    Bad,
}

/// A name written without an extension is an SMD (`name.smd`), or, when there is none, a DMX
/// file of that name, as Valve's later compilers find it (a Garry's Mod model's
/// `$bodygroup` `studio hood` built from `hood.dmx`; the notes of issue 16 show Valve's build).
fn dmx_instead(fs: &dyn Fs, fr: SmdRef<'_>) -> Option<Lookup> {
    let written = fr.written.replace('\\', "/");
    if Path::new(&written).extension().is_some()
        || !fr
            .path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("smd"))
    {
        return None;
    }
    match find(fs, &fr.path.with_extension("dmx")) {
        Lookup::Missing { .. } => None,
        found => Some(found),
    }
}

struct ParseJob {
    path: PathBuf,
    name: String,
    id: FileId,
    bytes: Vec<u8>,
    stamp: Option<FileStamp>,
}

/// A parsed [`ParseJob`]: the text when it must stay in memory (something was reported about
/// it, or it cannot be read again), the diagnostics and the lowered file.
struct Parsed {
    path: PathBuf,
    id: FileId,
    text: Option<String>,
    stamp: Option<FileStamp>,
    diags: Vec<Diagnostic>,
    smd: Option<SmdModel>,
}

/// Checks, parses and lowers one file (`add_text` and `check_smd` without `Sources`).
/// `threads`: how many threads may read one long file in pieces ([`crate::smd::parse_split`]).
fn parse_job(mut job: ParseJob, threads: usize) -> Parsed {
    let mut diags = Vec::new();
    // a file whose text is kept: a DMX (a binary file's text cannot be read again from the
    // file), or a file that is not text
    let kept =
        |job: ParseJob, text: String, diags: Vec<Diagnostic>, smd: Option<SmdModel>| Parsed {
            path: job.path,
            id: job.id,
            text: Some(text),
            stamp: job.stamp,
            diags,
            smd,
        };
    if crate::dmx::is_dmx_name(&job.name) {
        let (text, smd) = check_dmx(job.id, &job.name, &job.bytes, &mut diags);
        return kept(job, text, diags, smd);
    }
    let (text, ok) = prepare_text(
        job.id,
        &job.name,
        std::mem::take(&mut job.bytes),
        &mut diags,
    );
    if !ok {
        return kept(job, text, diags, None);
    }
    let parsed = crate::smd::parse_split(&text, job.id, threads);
    let parsed_ok = !parsed.has_errors();
    diags.extend(parsed.diagnostics);
    // Lowering reads the syntax tree, not the text: a text nothing was reported about is let
    // go before it, so the text, the tree and the lowered file are never all in memory at once
    // (a diagnostic of the lowering reads the file again to show its lines, as for any
    // evicted text).
    let keep = !diags.is_empty() || job.stamp.is_none();
    let text = if keep {
        Some(text)
    } else {
        drop(text);
        None
    };
    let smd = if parsed_ok {
        let before = diags.len();
        let model = lower_smd_owned(parsed.smd, job.id, &mut diags);
        diags[before..]
            .iter()
            .all(|d| !d.is_error())
            .then_some(model)
    } else {
        None
    };
    Parsed {
        path: job.path,
        id: job.id,
        text,
        stamp: job.stamp,
        diags,
        smd,
    }
}

/// A file read ahead of [`SmdLoader::load_new`], with the diagnostics that loading it gives (not
/// yet reported: `load_new` reports them where it would have found them).
enum Prefetched {
    Unreadable(std::io::Error),
    Read {
        id: FileId,
        /// What `add_text` and `check_smd` reported, in that order.
        diags: Vec<Diagnostic>,
        smd: Option<Arc<SmdModel>>,
    },
}

/// The SMD bytes of a project below which [`SmdLoader::prefetch`] parses on one thread.
const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// The least size of an SMD parsed as it is read ([`stream_job`]).
pub const STREAM_BYTES: u64 = 32 << 20;

/// A large SMD (at least [`STREAM_BYTES`], on a file system that can read it again for a
/// diagnostic) parsed and lowered as it is read, window by window, instead of being held whole
/// ([`smd::parse_streamed`]; issue 17). `Err` when it must be read whole, with the place in
/// `sources` it was given if it was tried.
///
/// Only [`SmdLoader::prefetch`] on one thread streams: a project that reads several files side
/// by side, or shares them with other projects, reads each whole.
fn stream_job(fs: &dyn Fs, path: &Path, sources: &mut Sources) -> Result<Parsed, Option<FileId>> {
    let name = path.display().to_string();
    if crate::dmx::is_dmx_name(&name) {
        return Err(None);
    }
    let Some(size) = fs
        .size(path)
        .filter(|&n| n >= STREAM_BYTES && n <= crate::diag::MAX_FILE_LEN as u64)
    else {
        return Err(None);
    };
    let Some(stamp) = fs.stamp(path).filter(|s| s.len == size) else {
        return Err(None);
    };
    let id = sources.add(name, String::new());
    let read = |sink: &mut dyn FnMut(&[u8]) -> bool| fs.read_blocks(path, sink).unwrap_or(false);
    let parsed = smd::parse_streamed(&read, id, spare_threads(usize::MAX)).ok_or(Some(id))?;
    // the text is read again for a diagnostic: only while the file is as it was read
    if fs.stamp(path) != Some(stamp) {
        return Err(Some(id));
    }
    let parsed_ok = !parsed.has_errors();
    let mut diags = parsed.diagnostics;
    let smd = if !parsed_ok {
        None
    } else {
        let before = diags.len();
        let model = lower_smd_owned(parsed.smd, id, &mut diags);
        diags[before..]
            .iter()
            .all(|d| !d.is_error())
            .then_some(model)
    };
    Ok(Parsed {
        path: path.to_path_buf(),
        id,
        text: None,
        stamp: Some(stamp),
        diags,
        smd,
    })
}

/// A file a project names: the path it resolved, as written, and where.
#[derive(Clone, Copy, Debug)]
pub struct SmdRef<'a> {
    pub path: &'a Path,
    pub written: &'a str,
    pub at: FileSpan,
}

/// The SMD files of one project: each loaded once, by the path found (a second spelling of the
/// same file is the same file).
pub struct SmdLoader<'a> {
    fs: &'a dyn Fs,
    /// The batch's parsed files, when other projects are built at the same time.
    shared: Option<&'a SharedSmds>,
    /// Source refuses a file with a negative `time` (`E0132`); GoldSrc skips those frames.
    target: Target,
    /// The files loaded without error, in load order ([`SmdLoader::load`] returns indices).
    pub files: Vec<LoadedSmd>,
    by_request: HashMap<PathBuf, Cached>,
    by_found: HashMap<PathBuf, Cached>,
    /// [`SmdLoader::prefetch`]: the lookup of each requested path.
    lookups: HashMap<PathBuf, Lookup>,
    /// [`SmdLoader::prefetch`]: each found file read, added and checked, by found path.
    prefetched: HashMap<PathBuf, Prefetched>,
}

impl<'a> SmdLoader<'a> {
    pub fn new(fs: &'a dyn Fs, target: Target, shared: Option<&'a SharedSmds>) -> Self {
        SmdLoader {
            fs,
            shared,
            target,
            files: Vec::new(),
            by_request: HashMap::new(),
            by_found: HashMap::new(),
            lookups: HashMap::new(),
            prefetched: HashMap::new(),
        }
    }

    pub fn fs(&self) -> &'a dyn Fs {
        self.fs
    }
}

impl SmdLoader<'_> {
    pub fn load(
        &mut self,
        fr: SmdRef<'_>,
        what: &str,
        sources: &mut Sources,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<usize> {
        let at = fr.at;
        let cached = match self.by_request.get(fr.path) {
            Some(c) => c.clone(),
            None => {
                let c = self.load_new(fr, sources, diags);
                self.by_request.insert(fr.path.to_path_buf(), c.clone());
                c
            }
        };
        match cached {
            Cached::Ok(i) => Some(i),
            Cached::Bad => None,
            Cached::Missing(nearest) => {
                let mut d = Diagnostic::new(
                    Code::BuildFileMissing,
                    format!("{what} file `{}` not found", fr.written),
                    at,
                    format!("no file at `{}`", fr.path.display()),
                );
                if let Some(n) = nearest {
                    d = d.with_note(format!("help: did you mean `{}`?", n.display()));
                }
                diags.push(d);
                None
            }
        }
    }

    fn load_new(
        &mut self,
        fr: SmdRef<'_>,
        sources: &mut Sources,
        diags: &mut Vec<Diagnostic>,
    ) -> Cached {
        let at = fr.at;
        let lookup = match self.lookups.remove(fr.path) {
            Some(l) => l,
            None => find(self.fs, fr.path),
        };
        let lookup = match lookup {
            Lookup::Missing { nearest } => {
                dmx_instead(self.fs, fr).unwrap_or(Lookup::Missing { nearest })
            }
            found => found,
        };
        let found = match lookup {
            Lookup::Exact(p) => p,
            Lookup::OtherCase(p) => {
                diags.push(
                    Diagnostic::new(
                        Code::BuildFileOtherCase,
                        format!("`{}` exists only as `{}`", fr.written, p.display()),
                        at,
                        "the case of this name differs from the file's",
                    )
                    .with_note(format!(
                        "the file `{}` is used; the project only works as written on a file system that ignores case",
                        p.display()
                    ))
                    .with_note(format!("help: write `{}`", p.display())),
                );
                p
            }
            Lookup::Missing { nearest } => return Cached::Missing(nearest),
        };
        // (taken from another project's parse, the file is still this project's input)
        self.fs.used(&found);
        if let Some(c) = self.by_found.get(&found) {
            return c.clone();
        }
        let name = found.display().to_string();
        if let Some(pre) = self.prefetched.remove(&found) {
            let c = match pre {
                Prefetched::Unreadable(e) => {
                    diags.push(Diagnostic::unreadable_at(&found, e, at, "named here"));
                    Cached::Bad
                }
                Prefetched::Read {
                    id,
                    diags: found_there,
                    smd,
                } => {
                    diags.extend(found_there);
                    match smd {
                        Some(smd) => self.accept(&found, id, smd, diags),
                        None => Cached::Bad,
                    }
                }
            };
            self.by_found.insert(found, c.clone());
            return c;
        }
        let c = match self.fs.read(&found) {
            Err(e) => {
                diags.push(Diagnostic::unreadable_at(&found, e, at, "named here"));
                Cached::Bad
            }
            Ok(bytes) if crate::dmx::is_dmx_name(&name) => {
                let id = sources.add(&name, String::new());
                let (text, smd) = check_dmx(id, &name, &bytes, diags);
                sources.set_text(id, text);
                match smd {
                    Some(smd) => self.accept(&found, id, Arc::new(smd), diags),
                    None => Cached::Bad,
                }
            }
            Ok(bytes) => {
                let (id, ok) = add_text(sources, &name, bytes, diags);
                match ok.then(|| check_smd(sources, id, diags)).flatten() {
                    Some(smd) => self.accept(&found, id, Arc::new(smd), diags),
                    None => Cached::Bad,
                }
            }
        };
        self.by_found.insert(found, c.clone());
        c
    }

    /// Keeps a file that parsed and lowered without error, unless the target refuses it: a
    /// negative `time` is an error for Source (`E0132`); GoldSrc skips those frames (`W0409`
    /// where an animation has them).
    fn accept(
        &mut self,
        found: &Path,
        id: FileId,
        smd: Arc<SmdModel>,
        diags: &mut Vec<Diagnostic>,
    ) -> Cached {
        if let (Target::Source, Some(neg)) = (self.target, smd.negative_time) {
            diags.push(crate::smd::lower::negative_time_error(&smd, neg));
            return Cached::Bad;
        }
        self.files.push(LoadedSmd {
            path: found.to_path_buf(),
            file: id,
            smd,
        });
        Cached::Ok(self.files.len() - 1)
    }

    /// Reads the files at `requested` (paths as the project resolved them, in the order the
    /// project will [`load`](Self::load) them, so that they get the same file ids), then parses
    /// and lowers them, on several threads when there are cores to spare and enough bytes.
    /// Nothing is reported here: [`SmdLoader::load`] takes each result, with its diagnostics,
    /// where it would have loaded the file.
    pub fn prefetch(&mut self, requested: &[&Path], sources: &mut Sources) {
        // The files to read, in the order they are loaded (file ids follow it).
        let mut paths: Vec<PathBuf> = Vec::new();
        let mut listed: HashSet<PathBuf> = HashSet::new();
        for &path in requested {
            if self.lookups.contains_key(path) {
                continue;
            }
            let lookup = find(self.fs, path);
            let found = match &lookup {
                Lookup::Exact(p) | Lookup::OtherCase(p) => Some(p.clone()),
                Lookup::Missing { .. } => None,
            };
            self.lookups.insert(path.to_path_buf(), lookup);
            let Some(found) = found else { continue };
            if self.prefetched.contains_key(&found) || !listed.insert(found.clone()) {
                continue;
            }
            paths.push(found);
        }
        // Below `PARALLEL_PARSE_BYTES` a thread costs more than it saves (its stack, its
        // allocator arena, the start-up): small projects parse on this thread alone.
        // (The sizes are asked only when there are cores to spare: each is a system call.)
        let threads = match spare_threads(paths.len()) {
            n if n > 1
                && paths.iter().filter_map(|p| self.fs.size(p)).sum::<u64>()
                    >= PARALLEL_PARSE_BYTES as u64 =>
            {
                n
            }
            _ => 1,
        };
        // This thread reads the files in order and hands each to a parser; a parser keeps the
        // text only when something was reported about it (a later diagnostic reads an evicted
        // text again), so no more than a few texts are held at once, whatever the model's size.
        let fs = self.fs;
        if threads <= 1 {
            if let Some(shared) = self.shared {
                self.prefetch_shared(shared, &paths, sources);
                return;
            }
            for path in &paths {
                let id = match stream_job(fs, path, sources) {
                    Ok(parsed) => {
                        self.install(parsed, false, sources);
                        continue;
                    }
                    Err(id) => id,
                };
                if let Some(job) = self.read_job(fs, path, sources, id) {
                    let parsed = parse_job(job, spare_threads(usize::MAX));
                    self.install(parsed, false, sources);
                }
            }
            return;
        }
        // Parsers (one fewer than `threads`) get jobs through a channel with room for one job
        // each, so this thread does not read far ahead of them, and send what they made back
        // through another, which this thread empties between reads. When the channel is full,
        // this thread parses the file it just read itself instead of waiting: on two cores a
        // reader waiting beside two parsers left a core idle or three threads sharing two
        // (strooper, issue 17: 2-3 ms of its 25). It copies each lowered file a parser made,
        // so that what the build keeps is allocated by this thread: memory a parser frees then
        // goes back to that parser's allocator arena, which its next file reuses, instead of
        // staying held by an arena no other thread allocates from.
        let parsers = threads - 1;
        let (job_tx, job_rx) = std::sync::mpsc::sync_channel::<ParseJob>(parsers);
        let job_rx = std::sync::Mutex::new(job_rx);
        let (done_tx, done_rx) = std::sync::mpsc::channel::<Parsed>();
        let work = |done_tx: std::sync::mpsc::Sender<Parsed>| {
            loop {
                // a poisoned lock means another parser panicked: stop taking work
                let job = match job_rx.lock() {
                    Ok(r) => r.recv(),
                    Err(_) => break,
                };
                let Ok(job) = job else { break };
                // the cores are taken by the parsers: one thread each
                if done_tx.send(parse_job(job, 1)).is_err() {
                    break;
                }
            }
        };
        std::thread::scope(|scope| {
            let parsers: Vec<_> = (0..parsers)
                .map(|_| {
                    let done_tx = done_tx.clone();
                    scope.spawn(move || work(done_tx))
                })
                .collect();
            drop(done_tx);
            for path in &paths {
                while let Ok(p) = done_rx.try_recv() {
                    self.install(p, true, sources);
                }
                let Some(job) = self.read_job(fs, path, sources, None) else {
                    continue;
                };
                // Parsed here when every parser has a job waiting. (The channel cannot close
                // while this scope holds its receiver: a parser that panicked stops taking jobs,
                // so this thread ends up parsing the rest, and the panic is passed on below.)
                if let Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) =
                    job_tx.try_send(job)
                {
                    let parsed = parse_job(job, 1);
                    self.install(parsed, false, sources);
                }
            }
            drop(job_tx);
            // until every parser has stopped and dropped its sender
            while let Ok(p) = done_rx.recv() {
                self.install(p, true, sources);
            }
            for p in parsers {
                if let Err(e) = p.join() {
                    std::panic::resume_unwind(e);
                }
            }
        });
    }

    /// [`Self::prefetch`] on this thread for a project built beside others: a file another
    /// project parsed and still holds is taken from `shared`; a file another project is
    /// parsing is taken after the rest, once it is done; the others are parsed here and
    /// published. See [`super::shared`].
    fn prefetch_shared(&mut self, shared: &SharedSmds, paths: &[PathBuf], sources: &mut Sources) {
        let mut later = Vec::new();
        for path in paths {
            match shared.claim(path, false) {
                Claim::Busy => later.push(path),
                claim => self.take_claim(path, claim, sources),
            }
        }
        for path in later {
            let claim = shared.claim(path, true);
            self.take_claim(path, claim, sources);
        }
    }

    /// The file at `path` as [`SharedSmds::claim`] gave it, kept for [`Self::load_new`].
    fn take_claim(&mut self, path: &Path, claim: Claim<'_>, sources: &mut Sources) {
        match claim {
            Claim::Busy => {}
            Claim::Ready(p) => {
                let place = sources.add(path.display().to_string(), String::new());
                sources.share(place, p.id);
                self.keep(path.to_path_buf(), p, sources);
            }
            Claim::Mine(publisher) => {
                // (unreadable: recorded as such; the dropped publisher frees the file)
                let Some(mut job) = self.read_job(self.fs, path, sources, None) else {
                    return;
                };
                sources.share(job.id, publisher.id);
                job.id = publisher.id;
                let size = job.bytes.len();
                let p = parse_job(job, spare_threads(usize::MAX));
                let smd = p.smd.map(Arc::new);
                // Another project reads a file on the disk again if it must show its lines
                // (as this one does for a text it let go): only a text that cannot be read
                // again is handed on, so that the table holds no copy of a text for the run.
                let text = p.stamp.is_none().then(|| p.text.clone()).flatten();
                publisher.publish(text, p.stamp, p.diags.clone(), smd.as_ref(), size);
                let kept = SharedParse {
                    id: p.id,
                    text: p.text,
                    stamp: p.stamp,
                    diags: p.diags,
                    smd,
                };
                self.keep(p.path, kept, sources);
            }
        }
    }

    /// Keeps a parsed file for [`Self::load_new`]: its text in `sources` (or only the means
    /// to read it again), its diagnostics and the lowered file.
    fn keep(&mut self, path: PathBuf, p: SharedParse, sources: &mut Sources) {
        let SharedParse {
            id,
            text,
            stamp,
            diags,
            smd,
        } = p;
        match (text, stamp) {
            (Some(text), _) => sources.set_text(id, text),
            (None, Some(stamp)) => sources.evict(id, path.clone(), stamp),
            (None, None) => {}
        }
        self.prefetched
            .insert(path, Prefetched::Read { id, diags, smd });
    }

    /// [`Self::keep`] for a file parsed here (the lowered file copied by this thread when
    /// `copy`, see [`Self::prefetch`]).
    fn install(&mut self, p: Parsed, copy: bool, sources: &mut Sources) {
        let kept = SharedParse {
            id: p.id,
            text: p.text,
            stamp: p.stamp,
            diags: p.diags,
            smd: p.smd.map(|m| Arc::new(if copy { m.clone() } else { m })),
        };
        self.keep(p.path, kept, sources);
    }

    /// Reads one file for [`Self::prefetch`]: its place in `sources` (a placeholder until it is
    /// parsed; `id` when it has one already), or `None` (recorded as unreadable) when it cannot
    /// be read.
    fn read_job(
        &mut self,
        fs: &dyn Fs,
        path: &Path,
        sources: &mut Sources,
        id: Option<FileId>,
    ) -> Option<ParseJob> {
        let stamp = fs.stamp(path);
        match fs.read(path) {
            Err(e) => {
                self.prefetched
                    .insert(path.to_path_buf(), Prefetched::Unreadable(e));
                None
            }
            Ok(bytes) => {
                let name = path.display().to_string();
                let id = id.unwrap_or_else(|| sources.add(name.clone(), String::new()));
                // a stamp that does not match what was read cannot bring the text back
                let stamp = stamp.filter(|s| s.len == bytes.len() as u64);
                Some(ParseJob {
                    path: path.to_path_buf(),
                    name,
                    id,
                    bytes,
                    stamp,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::fs::{RealFs, RecordingFs};

    /// An SMD of at least [`STREAM_BYTES`]: a strip of weighted triangles in two materials,
    /// each vertex line written again for every triangle that uses it, and a weight sum off
    /// now and then (a repeated warning).
    fn big_smd() -> String {
        let mut s = String::from(
            "version 1\nnodes\n0 \"root\" -1\n1 \"tip\" 0\nend\nskeleton\ntime 0\n\
             0 0 0 0 0 0 0\n1 0 0 10 0 0 0\nend\ntriangles\n",
        );
        let line = |i: usize| {
            let w = if i % 9973 == 5 { "0.7" } else { "0.5" };
            format!(
                "0 {}.{:03} {} 0 0 0 1 0.{:03} 0.5 2 0 0.5 1 {w}\n",
                i / 1000,
                i % 1000,
                i % 2,
                i % 1000
            )
        };
        let mut t = 0usize;
        while (s.len() as u64) < STREAM_BYTES + (1 << 20) {
            s.push_str(if t % 7 == 0 { "metal\n" } else { "skin\n" });
            for k in 0..3 {
                s.push_str(&line(t + k));
            }
            t += 1;
        }
        s.push_str("end\n");
        s
    }

    /// `text` written to `big.smd` in a scratch folder of its own: (the folder, the file).
    fn scratch_smd(tag: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("mdlc-{tag}-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("big.smd");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// A large SMD parsed as it is read gives what the whole text gives (the same triangles,
    /// corner by corner, the same diagnostics), and a build's records hash the whole file.
    #[test]
    fn a_large_smd_read_as_a_stream_is_the_whole_file() {
        let text = big_smd();
        let (dir, path) = scratch_smd("stream", &text);
        let rec = RecordingFs::new(&RealFs);
        let mut sources = Sources::new();
        let streamed = stream_job(&rec, &path, &mut sources);
        let _ = std::fs::remove_dir_all(&dir);
        let Ok(streamed) = streamed else {
            panic!("not streamed")
        };
        assert!(streamed.text.is_none());
        let mut diags = Vec::new();
        let whole = check_smd_text(&text, streamed.id, &mut diags).unwrap();
        assert_eq!(streamed.diags, diags);
        assert_eq!(
            diags.iter().map(|d| d.code).collect::<Vec<_>>(),
            [Code::SmdWeightSum]
        );
        let (a, b) = (streamed.smd.unwrap(), whole);
        assert_eq!(a.skeleton, b.skeleton);
        let (ma, mb) = (a.mesh.unwrap(), b.mesh.unwrap());
        assert_eq!(ma.materials, mb.materials);
        assert_eq!(ma.triangles.len(), mb.triangles.len());
        assert!(ma.triangles.len() > 100_000);
        for (ta, tb) in ma.triangles.iter().zip(&mb.triangles) {
            assert_eq!((ta.material, ta.span), (tb.material, tb.span));
            // (a shared corner's line is the first of its run, and the runs differ)
            let (ca, cb) = (ma.corners_of(ta), mb.corners_of(tb));
            for (x, y) in ca.iter().zip(&cb) {
                assert_eq!(
                    (x.pos, x.normal, x.uv, x.bone),
                    (y.pos, y.normal, y.uv, y.bone)
                );
                assert_eq!(ma.weights_of(x), mb.weights_of(y));
            }
        }
        // shared lines: far fewer corners than triangle corners
        assert!(ma.corners.len() < ma.triangles.len() * 2);
        // the record of the input: the whole file's length and hash
        let inputs = rec.inputs();
        let read = inputs.iter().find(|r| r.path == path).and_then(|r| r.read);
        let (len, _, hash) = read.unwrap();
        assert_eq!(len, text.len() as u64);
        assert_eq!(hash, xxhash_rust::xxh3::xxh3_128(text.as_bytes()));
    }

    /// `mdlc check big.smd` parses a large lone file as it is read: the same diagnostics,
    /// rendered with the same lines (read from the file again), and the same lowered file as
    /// when the whole text is held; a negative `time` is still refused for Source.
    #[test]
    fn a_large_lone_smd_is_checked_as_a_stream() {
        // a second frame at a negative time: Source's rule for lone files (E0132)
        let text = big_smd().replacen(
            "1 0 0 10 0 0 0\nend\n",
            "1 0 0 10 0 0 0\ntime -1\n0 0 0 0 0 0 0\n1 0 0 10 0 0 0\nend\n",
            1,
        );
        let (dir, path) = scratch_smd("lone", &text);
        let mut streamed_sources = Sources::new();
        let mut streamed_diags = Vec::new();
        let streamed = check_lone_smd_streamed(
            &RealFs,
            &path,
            &mut streamed_sources,
            None,
            &mut streamed_diags,
        );
        let goldsrc = check_lone_smd_streamed(
            &RealFs,
            &path,
            &mut Sources::new(),
            Some(Target::GoldSrc),
            &mut Vec::new(),
        );
        let mut sources = Sources::new();
        let id = sources.add(path.display().to_string(), text.clone());
        let mut diags = Vec::new();
        let whole = check_lone_smd(&sources, id, None, &mut diags);
        let render = |s: &Sources, d: &[Diagnostic]| -> Vec<String> {
            d.iter().map(|d| crate::diag::render_plain(s, d)).collect()
        };
        let rendered = render(&streamed_sources, &streamed_diags);
        let _ = std::fs::remove_dir_all(&dir);
        let Ok(streamed) = streamed else {
            panic!("not streamed")
        };
        assert!(streamed.is_none() && whole.is_none());
        assert_eq!(
            diags.iter().map(|d| d.code).collect::<Vec<_>>(),
            [Code::SmdWeightSum, Code::SmdNegativeFrame]
        );
        assert_eq!(rendered, render(&sources, &diags));
        assert!(
            rendered.iter().any(|r| r.contains("time -1")),
            "{rendered:?}"
        );
        assert!(matches!(goldsrc, Ok(Some(_))));
    }
}
