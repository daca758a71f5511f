//! Up-to-date records: what a project's last successful build read and wrote, so that the next
//! `mdlc build` of it with the same options can skip it when nothing changed.
//!
//! A record is a JSON file under `<output root>/.mdlc/` (the output root is `-o DIR`, `--game
//! DIR`'s `models` folder, or the current folder), named by a hash of the project path as given
//! and the options that change outputs. It is written with the outputs, atomically, and only
//! after a build without errors. A project is up to date when its record exists and parses,
//! was written by this build of mdlc (its version and executable, [`tool_id`]) with the same options, every input has the content it
//! had (a file whose size and modification time are those recorded, and older than the build
//! that recorded it, is taken as unchanged without reading it; any other is hashed), and every
//! output still has the content written. Anything else — no record, a corrupt or foreign one,
//! a missing file — means "rebuild".

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::content_hash;

/// The record format; a record of another format is foreign (rebuild).
const FORMAT: u32 = 1;

/// One file of a record.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FileRecord {
    /// As the build named it (relative when the project or `-o` was given relative).
    pub path: PathBuf,
    pub bytes: u64,
    /// Modification time in nanoseconds since the Unix epoch (inputs only).
    #[serde(default)]
    pub mtime_ns: Option<u128>,
    /// [`content_hash`] of the contents.
    pub hash: String,
    /// Outputs only: SHA-256, for the report.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// The record of a project's last build.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub format: u32,
    pub mdlc: String,
    /// The options that change outputs ([`key_text`]).
    pub options: String,
    /// When the build that wrote the record started, in nanoseconds since the Unix epoch.
    pub started_ns: u128,
    pub target: String,
    pub inputs: Vec<FileRecord>,
    pub outputs: Vec<FileRecord>,
    /// The build's warnings, as `--message-format json` gives them (the report repeats them).
    pub warnings: Vec<serde_json::Value>,
}

/// The options of a build that change a project's outputs, as one text.
pub fn key_text(project: &Path, target: Option<&str>, out_dir: Option<&Path>) -> String {
    format!(
        "project={}\ntarget={}\nout={}\n",
        project.display(),
        target.unwrap_or("-"),
        out_dir.map_or_else(|| "-".to_string(), |d| d.display().to_string())
    )
}

/// Where the record of a project built with `key` lives.
pub fn record_path(root: Option<&Path>, key: &str) -> PathBuf {
    let name = format!("{}.json", &content_hash(key.as_bytes())[..24]);
    root.unwrap_or(Path::new("")).join(".mdlc").join(name)
}

/// Nanoseconds since the Unix epoch.
pub fn nanos(t: SystemTime) -> u128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The record of an input the build noted ([`crate::load::fs::RecordingFs`]): from what was
/// read, or read from the disk now for a file another project of the batch read. `None` when
/// the file cannot be read any more.
pub fn input_record(r: &crate::load::fs::Recorded) -> Option<FileRecord> {
    match r.read {
        Some((bytes, mtime_ns, hash)) => Some(FileRecord {
            path: r.path.clone(),
            bytes,
            mtime_ns,
            hash: format!("{hash:032x}"),
            sha256: None,
        }),
        None => {
            let before = stamp(&r.path);
            let bytes = std::fs::read(&r.path).ok()?;
            Some(FileRecord {
                path: r.path.clone(),
                bytes: bytes.len() as u64,
                mtime_ns: before.filter(|s| s.0 == bytes.len() as u64).map(|s| s.1),
                hash: content_hash(&bytes),
                sha256: None,
            })
        }
    }
}

/// The record of an output about to be written; its SHA-256 only when `sha256` (a report
/// asks for it; a later report of the project up to date computes it from the file).
pub fn output_record(path: &Path, bytes: &[u8], sha256: bool) -> FileRecord {
    FileRecord {
        path: path.to_path_buf(),
        bytes: bytes.len() as u64,
        mtime_ns: None,
        hash: content_hash(bytes),
        sha256: sha256.then(|| super::sha256_hex(bytes)),
    }
}

/// The SHA-256 of an output of a record: the recorded one, or the file's (which
/// [`up_to_date`] found to have the recorded content).
pub fn output_sha256(f: &FileRecord) -> String {
    match &f.sha256 {
        Some(s) => s.clone(),
        None => std::fs::read(&f.path)
            .map(|b| super::sha256_hex(&b))
            .unwrap_or_default(),
    }
}

/// Size and modification time of a file.
pub fn stamp(path: &Path) -> Option<(u64, u128)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), nanos(m.modified().ok()?)))
}

/// The record at `path` if the project it describes is up to date for `options`.
pub fn up_to_date(path: &Path, options: &str) -> Option<Record> {
    let text = std::fs::read(path).ok()?;
    let record: Record = serde_json::from_slice(&text).ok()?;
    if record.format != FORMAT
        || tool_id() != Some(record.mdlc.as_str())
        || record.options != options
        || record.outputs.is_empty()
    {
        return None;
    }
    let unchanged_input = |f: &FileRecord| {
        let now = stamp(&f.path);
        let trusted = matches!((now, f.mtime_ns), (Some((len, m)), Some(rm))
            if len == f.bytes && m == rm && m < record.started_ns);
        trusted
            || (now.is_some_and(|(len, _)| len == f.bytes)
                && std::fs::read(&f.path).is_ok_and(|b| content_hash(&b) == f.hash))
    };
    let unchanged_output = |f: &FileRecord| {
        stamp(&f.path).is_some_and(|(len, _)| len == f.bytes)
            && std::fs::read(&f.path).is_ok_and(|b| content_hash(&b) == f.hash)
    };
    (record.inputs.iter().all(unchanged_input) && record.outputs.iter().all(unchanged_output))
        .then_some(record)
}

/// Which mdlc wrote a record: its version, and the size and modification time of its
/// executable, so that another build of the same version (a newer commit, another compiler,
/// which may write other outputs) does not take this one's outputs as up to date. `None` when
/// the executable cannot be found: then no record is trusted.
pub fn tool_id() -> Option<&'static str> {
    static ID: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        let m = std::fs::metadata(exe).ok()?;
        Some(format!(
            "{}+{}.{}",
            env!("CARGO_PKG_VERSION"),
            m.len(),
            nanos(m.modified().ok()?)
        ))
    })
    .as_deref()
}

/// A new record.
pub fn new_record(
    options: String,
    started: SystemTime,
    target: &str,
    inputs: Vec<FileRecord>,
    outputs: Vec<FileRecord>,
    warnings: Vec<serde_json::Value>,
) -> Record {
    Record {
        format: FORMAT,
        mdlc: tool_id().map_or_else(
            || format!("{}+unknown", env!("CARGO_PKG_VERSION")),
            str::to_string,
        ),
        options,
        started_ns: nanos(started),
        target: target.to_string(),
        inputs,
        outputs,
        warnings,
    }
}
