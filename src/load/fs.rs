//! File access for the project stages: a small trait so that front ends and lowering can be
//! tested on in-memory trees, and the case-insensitive lookup QC projects need (they were
//! written on Windows: `Male_06_reference` names `male_06_reference.smd`; QUIRKS.md §3).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::diag::FileStamp;
use crate::suggest::edit_distance;

/// What the project stages need from a file system.
pub trait Fs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Names of the entries of a directory (files and folders).
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    fn is_file(&self, path: &Path) -> bool;
    fn is_dir(&self, path: &Path) -> bool;
    /// The file's size in bytes, if known without reading it.
    fn size(&self, _path: &Path) -> Option<u64> {
        None
    }
    /// The stamp of a file on the disk, so that a text let go after parsing can be read again
    /// for a diagnostic ([`crate::diag::Sources::evict`]); `None` for a file system whose
    /// files are not on the disk.
    fn stamp(&self, _path: &Path) -> Option<FileStamp> {
        None
    }
    /// Says that the file at `path` is an input of the project although it was not read here
    /// (an SMD another project of the batch parsed: [`super::shared`]); see [`RecordingFs`].
    fn used(&self, _path: &Path) {}
    /// Reads the file at `path` from its start to its end, handing its bytes to `sink` block by
    /// block until `sink` returns `false`; whether the whole file was handed over. A large SMD
    /// is parsed as it is read ([`crate::smd::parse_streamed`]) instead of being held whole.
    /// By default the file is read whole first.
    fn read_blocks(&self, path: &Path, sink: &mut dyn FnMut(&[u8]) -> bool) -> io::Result<bool> {
        let bytes = self.read(path)?;
        Ok(bytes.chunks(BLOCK).all(sink))
    }
}

/// The size of the blocks [`Fs::read_blocks`] hands over.
const BLOCK: usize = 1 << 20;

/// A file system that notes every file the project reads or [uses](Fs::used), in first-use
/// order and once each: the inputs of `mdlc build --depfile`, `--report` and the up-to-date
/// records. Directory listings (the case-insensitive lookup) are not inputs: a build from
/// only the noted files finds the same files.
pub struct RecordingFs<'a> {
    inner: &'a dyn Fs,
    /// Each path noted, in first-use order, with what its read noted (a project of many
    /// sequences notes its files again at every use: looked up, not searched for).
    seen: std::sync::Mutex<indexmap::IndexMap<PathBuf, Option<ReadStamp>>>,
}

/// One input noted by [`RecordingFs`].
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: PathBuf,
    /// For a file read here: its size, its modification time (nanoseconds since the Unix
    /// epoch) as it was just before the read, and the XXH3-128 hash of the bytes read.
    pub read: Option<ReadStamp>,
}

/// What [`RecordingFs`] notes of a file read: its size, its modification time and its hash
/// (see [`Recorded::read`]).
pub type ReadStamp = (u64, Option<u128>, u128);

impl<'a> RecordingFs<'a> {
    pub fn new(inner: &'a dyn Fs) -> Self {
        RecordingFs {
            inner,
            seen: Default::default(),
        }
    }

    fn note(&self, path: &Path, read: Option<ReadStamp>) {
        if let Ok(mut seen) = self.seen.lock() {
            match seen.get_mut(path) {
                Some(r) => {
                    if r.is_none() {
                        *r = read;
                    }
                }
                None => {
                    seen.insert(path.to_path_buf(), read);
                }
            }
        }
    }

    /// The files read or used, in first-use order.
    pub fn inputs(&self) -> Vec<Recorded> {
        self.seen
            .lock()
            .map(|s| {
                s.iter()
                    .map(|(path, &read)| Recorded {
                        path: path.clone(),
                        read,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Fs for RecordingFs<'_> {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let before = self.inner.stamp(path);
        let r = self.inner.read(path);
        if let Ok(bytes) = &r {
            let mtime = before
                .filter(|s| s.len == bytes.len() as u64)
                .and_then(|s| s.modified.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos());
            let hash = xxhash_rust::xxh3::xxh3_128(bytes);
            self.note(path, Some((bytes.len() as u64, mtime, hash)));
        }
        r
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn is_file(&self, path: &Path) -> bool {
        self.inner.is_file(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn size(&self, path: &Path) -> Option<u64> {
        self.inner.size(path)
    }
    fn stamp(&self, path: &Path) -> Option<FileStamp> {
        self.inner.stamp(path)
    }
    fn used(&self, path: &Path) {
        self.note(path, None);
    }
    fn read_blocks(&self, path: &Path, sink: &mut dyn FnMut(&[u8]) -> bool) -> io::Result<bool> {
        let before = self.inner.stamp(path);
        let mut hash = xxhash_rust::xxh3::Xxh3::new();
        let mut len = 0u64;
        let whole = self.inner.read_blocks(path, &mut |block| {
            hash.update(block);
            len += block.len() as u64;
            sink(block)
        })?;
        // noted only when every byte went by: the hash is the whole file's, as `read` notes it
        if whole {
            let mtime = before
                .filter(|s| s.len == len)
                .and_then(|s| s.modified.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos());
            self.note(path, Some((len, mtime, hash.digest128())));
        }
        Ok(whole)
    }
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

/// Files at least this large are read by several threads at once when there are cores to spare.
const PARALLEL_READ_BYTES: u64 = 16 << 20;

/// A whole file. A large one is read in pieces side by side: copying from the page cache and
/// the first touch of the fresh buffer's pages are the kernel's work, on the core that asks,
/// so two threads read a 150 MB SMD in about half the time one does.
fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        let threads = crate::threads::spare_threads(usize::MAX);
        if threads > 1 {
            let file = std::fs::File::open(path)?;
            let len = file.metadata()?.len();
            if len >= PARALLEL_READ_BYTES {
                if let Some(bytes) = read_in_pieces(&file, len, threads)? {
                    return Ok(bytes);
                }
            }
        }
    }
    std::fs::read(path)
}

/// [`read_file`]'s pieces: `None` when the file turns out shorter or longer than `len` (it
/// changed while it was read), which [`read_file`] then reads again as a whole.
#[cfg(unix)]
fn read_in_pieces(file: &std::fs::File, len: u64, threads: usize) -> io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    let Ok(n) = usize::try_from(len) else {
        return Ok(None);
    };
    let mut bytes = vec![0u8; n];
    let piece = n.div_ceil(threads).max(1);
    let whole = std::thread::scope(|scope| -> io::Result<bool> {
        let jobs: Vec<_> = bytes
            .chunks_mut(piece)
            .enumerate()
            .map(|(i, chunk)| {
                scope.spawn(move || -> io::Result<bool> {
                    let mut at = (i * piece) as u64;
                    let mut rest = chunk;
                    while !rest.is_empty() {
                        match file.read_at(rest, at) {
                            Ok(0) => return Ok(false),
                            Ok(k) => {
                                at += k as u64;
                                rest = rest.get_mut(k..).unwrap_or_default();
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(e),
                        }
                    }
                    Ok(true)
                })
            })
            .collect();
        let mut whole = true;
        for j in jobs {
            whole &= j.join().unwrap_or_else(|e| std::panic::resume_unwind(e))?;
        }
        Ok(whole)
    })?;
    // nothing past the end: the file did not grow meanwhile
    let mut probe = [0u8; 1];
    let grew = loop {
        match file.read_at(&mut probe, len) {
            Ok(k) => break k > 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    };
    Ok((whole && !grew).then_some(bytes))
}

impl Fs for RealFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        read_file(path)
    }

    fn size(&self, path: &Path) -> Option<u64> {
        std::fs::metadata(path).ok().map(|m| m.len())
    }

    fn stamp(&self, path: &Path) -> Option<FileStamp> {
        FileStamp::of(path)
    }

    fn read_blocks(&self, path: &Path, sink: &mut dyn FnMut(&[u8]) -> bool) -> io::Result<bool> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let mut buf = vec![0u8; BLOCK];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => {
                    if !sink(buf.get(..n).unwrap_or_default()) {
                        return Ok(false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            out.push(e?.file_name().to_string_lossy().into_owned());
        }
        out.sort();
        Ok(out)
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn is_dir(&self, path: &Path) -> bool {
        let p = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        p.is_dir()
    }
}

/// An in-memory file tree for tests: paths are used exactly as given (no normalisation), with
/// `/` separators.
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemFs {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, path: impl Into<PathBuf>, text: impl Into<Vec<u8>>) -> &mut Self {
        self.files.insert(path.into(), text.into());
        self
    }
}

impl Fs for MemFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn size(&self, path: &Path) -> Option<u64> {
        self.files.get(path).map(|b| b.len() as u64)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut out: Vec<String> = self
            .files
            .keys()
            .filter_map(|p| {
                let rel = p.strip_prefix(dir).ok()?;
                rel.components()
                    .next()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
            })
            .collect();
        out.dedup();
        if out.is_empty() && !self.is_dir(dir) {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"));
        }
        Ok(out)
    }

    fn is_file(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.as_os_str().is_empty() || self.files.keys().any(|p| p.starts_with(path) && p != path)
    }
}

/// The outcome of looking a file up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The path exists as written.
    Exact(PathBuf),
    /// The path exists only in another case (some folders or the file name differ); the
    /// caller warns, as the project only works on a case-insensitive file system.
    OtherCase(PathBuf),
    /// Not found; the nearest existing name in the nearest existing folder, if one is close.
    Missing { nearest: Option<PathBuf> },
}

/// Looks `path` up exactly, then component by component without regard to ASCII case.
pub fn find(fs: &dyn Fs, path: &Path) -> Lookup {
    if fs.is_file(path) {
        return Lookup::Exact(path.to_path_buf());
    }
    let mut cur = PathBuf::new();
    let comps: Vec<_> = path.components().collect();
    for (i, c) in comps.iter().enumerate() {
        let name = c.as_os_str().to_string_lossy();
        let last = i + 1 == comps.len();
        let direct = cur.join(c.as_os_str());
        let exists = if last {
            fs.is_file(&direct)
        } else {
            fs.is_dir(&direct)
        };
        if exists
            || matches!(
                c,
                std::path::Component::RootDir
                    | std::path::Component::Prefix(_)
                    | std::path::Component::ParentDir
                    | std::path::Component::CurDir
            )
        {
            cur = direct;
            continue;
        }
        let entries = fs.list(&cur).unwrap_or_default();
        match entries.iter().find(|e| e.eq_ignore_ascii_case(&name)) {
            Some(e) if (last && fs.is_file(&cur.join(e))) || (!last && fs.is_dir(&cur.join(e))) => {
                cur.push(e)
            }
            _ => {
                let nearest = entries
                    .iter()
                    .map(|e| {
                        (
                            edit_distance(&e.to_ascii_lowercase(), &name.to_ascii_lowercase()),
                            e,
                        )
                    })
                    .filter(|(d, e)| *d <= (e.len() / 3).max(2))
                    .min_by_key(|(d, _)| *d)
                    .map(|(_, e)| cur.join(e));
                return Lookup::Missing { nearest };
            }
        }
    }
    if fs.is_file(&cur) {
        Lookup::OtherCase(cur)
    } else {
        Lookup::Missing { nearest: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large file read in pieces is the file, however many threads and wherever the cuts
    /// fall; a file whose length changed meanwhile is not taken.
    #[cfg(unix)]
    #[test]
    fn reading_in_pieces_is_reading_whole() {
        let dir = std::env::temp_dir().join(format!("mdlc-pieces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.smd");
        let bytes: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 % 253) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let len = bytes.len() as u64;
        for threads in [1, 2, 3, 4, 7] {
            let got = read_in_pieces(&file, len, threads).unwrap();
            assert!(got.as_deref() == Some(&bytes[..]), "{threads} threads");
        }
        // the file is longer, or shorter, than the length asked for
        assert!(read_in_pieces(&file, len - 1, 2).unwrap().is_none());
        assert!(read_in_pieces(&file, len + 1, 2).unwrap().is_none());
        assert_eq!(read_file(&path).unwrap(), bytes);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn finds_exact_other_case_and_nearest() {
        let mut fs = MemFs::new();
        fs.add("q/models/male_06_reference.smd", "x")
            .add("q/anims/Idle.smd", "y");
        assert_eq!(
            find(&fs, Path::new("q/anims/Idle.smd")),
            Lookup::Exact("q/anims/Idle.smd".into())
        );
        assert_eq!(
            find(&fs, Path::new("q/Models/Male_06_reference.smd")),
            Lookup::OtherCase("q/models/male_06_reference.smd".into())
        );
        assert_eq!(
            find(&fs, Path::new("q/anims/idel.smd")),
            Lookup::Missing {
                nearest: Some("q/anims/Idle.smd".into())
            }
        );
        assert_eq!(
            find(&fs, Path::new("q/anims/walk_forward.smd")),
            Lookup::Missing { nearest: None }
        );
    }
}
