//! SMD files parsed once for all the projects of one `mdlc build` run (several projects built on
//! several threads).
//!
//! Models built side by side often read the same files: the high- and low-detail versions of
//! a model, or a weapon's view models for each hand, share their animations (in the Half-Life
//! corpus, 17 % of the SMD bytes the 35 QCs read are files another QC of the batch reads too).
//! A project that parses a file publishes it here; another project that needs the same file
//! (the same path as found) while the first still holds it takes that parse instead of
//! parsing again: the lowered file and its diagnostics (a project shows the file's lines by
//! reading it again, as it does for any text let go after parsing).
//!
//! - **No memory is held for later:** the table keeps a weak reference to each lowered file,
//!   so a file lives only as long as some project uses it. A project that comes after every
//!   user of a file let go of it parses the file again.
//! - **Both projects see the same file ids:** the parse's spans carry a *shared* id
//!   ([`FileId::is_shared`]) that each project binds to its own place for the file
//!   ([`crate::diag::Sources::share`]); a finished project's diagnostics are given places
//!   before they join the run's report.
//! - **No file is parsed twice at once:** a file being parsed is marked busy; another project
//!   parses its other files first and then waits for it ([`SharedSmds::claim`]).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use crate::diag::{Diagnostic, FileId, FileStamp};

use crate::smd::SmdModel;

/// A file one project parsed, as another project takes it.
#[derive(Clone, Debug)]
pub struct SharedParse {
    /// The shared id the parse's spans and diagnostics carry.
    pub id: FileId,
    /// The text, when it has no stamp to be read again by (a file not on the disk) and the
    /// parse kept it; a file on the disk is read again where its lines are shown.
    pub text: Option<String>,
    pub stamp: Option<FileStamp>,
    /// What parsing and lowering reported.
    pub diags: Vec<Diagnostic>,
    /// The lowered file (`None` when it had errors).
    pub smd: Option<Arc<SmdModel>>,
}

/// A published parse: [`SharedParse`] with a weak hold on the lowered file.
#[derive(Debug)]
struct Published {
    id: FileId,
    text: Option<String>,
    stamp: Option<FileStamp>,
    diags: Vec<Diagnostic>,
    smd: Option<Weak<SmdModel>>,
}

#[derive(Debug)]
enum Slot {
    /// A project is parsing the file.
    Busy,
    Ready(Published),
}

/// The run's table of parsed files, by path as found.
#[derive(Debug)]
pub struct SharedSmds {
    next_id: AtomicU32,
    slots: Mutex<HashMap<PathBuf, Slot>>,
    changed: Condvar,
    recent: Mutex<Recent>,
}

/// The lowered files published last, held for projects that start after their first users
/// let go of them (the next model of a family in the batch's list, built after the first):
/// the newest, up to [`RECENT_BYTES`] of SMD text. The bound keeps the memory this costs small
/// (a lowered file takes about half its text's size) whatever the batch.
#[derive(Debug, Default)]
struct Recent {
    files: VecDeque<(Arc<SmdModel>, usize)>,
    bytes: usize,
}

/// See [`Recent`]. Over the Half-Life corpus's 35 QCs, 2 MiB held 0.9 MB more at the peak and
/// spared a further 6 % of the instructions; 8 MiB held 4.5 MB for 1 % more.
const RECENT_BYTES: usize = 2 << 20;

impl Recent {
    fn keep(&mut self, smd: &Arc<SmdModel>, text_bytes: usize) {
        self.files.push_back((smd.clone(), text_bytes));
        self.bytes += text_bytes;
        while self.bytes > RECENT_BYTES {
            let Some((_, b)) = self.files.pop_front() else {
                break;
            };
            self.bytes -= b;
        }
    }
}

impl Default for SharedSmds {
    fn default() -> Self {
        SharedSmds {
            next_id: AtomicU32::new(FileId::FIRST_SHARED),
            slots: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
            recent: Mutex::new(Recent::default()),
        }
    }
}

/// What [`SharedSmds::claim`] found.
pub enum Claim<'a> {
    /// Another project's parse, still in use.
    Ready(SharedParse),
    /// Another project is parsing the file (only when not asked to wait).
    Busy,
    /// The caller parses the file, with this id for its spans, and publishes it.
    Mine(Publisher<'a>),
}

/// The right and duty to publish one file (see [`Claim::Mine`]). Dropped without publishing
/// (the file could not be read, or the thread is unwinding), it frees the file for others.
pub struct Publisher<'a> {
    table: &'a SharedSmds,
    path: PathBuf,
    pub id: FileId,
    done: bool,
}

impl SharedSmds {
    /// The parse of `path` another project published and still uses; else, if another project
    /// is parsing it, [`Claim::Busy`] or (with `wait`) the outcome once it is done; else the
    /// file is the caller's to parse.
    pub fn claim(&self, path: &Path, wait: bool) -> Claim<'_> {
        // A poisoned lock means a project panicked: the run is failing; parse alone.
        let Ok(mut slots) = self.slots.lock() else {
            return Claim::Mine(self.publisher(path));
        };
        loop {
            match slots.get(path) {
                Some(Slot::Busy) if !wait => return Claim::Busy,
                Some(Slot::Busy) => match self.changed.wait(slots) {
                    Ok(s) => slots = s,
                    Err(_) => return Claim::Mine(self.publisher(path)),
                },
                Some(Slot::Ready(p)) => {
                    let smd = match &p.smd {
                        None => None,
                        Some(weak) => match weak.upgrade() {
                            Some(arc) => Some(arc),
                            // every user let go of it: parse again
                            None => break,
                        },
                    };
                    return Claim::Ready(SharedParse {
                        id: p.id,
                        text: p.text.clone(),
                        stamp: p.stamp,
                        diags: p.diags.clone(),
                        smd,
                    });
                }
                None => break,
            }
        }
        slots.insert(path.to_path_buf(), Slot::Busy);
        Claim::Mine(self.publisher(path))
    }

    fn publisher(&self, path: &Path) -> Publisher<'_> {
        Publisher {
            table: self,
            path: path.to_path_buf(),
            id: FileId(self.next_id.fetch_add(1, Ordering::Relaxed)),
            done: false,
        }
    }

    /// Whether no file is published or being parsed (for tests).
    pub fn is_empty(&self) -> bool {
        self.slots.lock().map_or(true, |s| s.is_empty())
    }
}

impl Publisher<'_> {
    /// Publishes the parse (its id is [`Publisher::id`]) of a file of `text_bytes` bytes.
    pub fn publish(
        mut self,
        text: Option<String>,
        stamp: Option<FileStamp>,
        diags: Vec<Diagnostic>,
        smd: Option<&Arc<SmdModel>>,
        text_bytes: usize,
    ) {
        self.done = true;
        let published = Published {
            id: self.id,
            text,
            stamp,
            diags,
            smd: smd.map(Arc::downgrade),
        };
        if let Ok(mut slots) = self.table.slots.lock() {
            slots.insert(self.path.clone(), Slot::Ready(published));
        }
        if let (Some(smd), Ok(mut recent)) = (smd, self.table.recent.lock()) {
            recent.keep(smd, text_bytes);
        }
        self.table.changed.notify_all();
    }
}

impl Drop for Publisher<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Ok(mut slots) = self.table.slots.lock() {
            if matches!(slots.get(&self.path), Some(Slot::Busy)) {
                slots.remove(&self.path);
            }
        }
        self.table.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Arc<SmdModel> {
        Arc::new(SmdModel {
            file: FileId(FileId::FIRST_SHARED),
            skeleton: Default::default(),
            mesh: None,
            animation: Default::default(),
            flex: None,
            shapes: None,
            negative_time: None,
        })
    }

    fn mine(c: Claim<'_>) -> Publisher<'_> {
        match c {
            Claim::Mine(p) => p,
            Claim::Ready(_) => panic!("expected Mine, got Ready"),
            Claim::Busy => panic!("expected Mine, got Busy"),
        }
    }

    fn ready(c: Claim<'_>) -> SharedParse {
        match c {
            Claim::Ready(p) => p,
            Claim::Mine(_) => panic!("expected Ready, got Mine"),
            Claim::Busy => panic!("expected Ready, got Busy"),
        }
    }

    #[test]
    fn a_published_file_is_taken_with_its_id_diagnostics_and_model() {
        let t = SharedSmds::default();
        let p = mine(t.claim(Path::new("a.smd"), false));
        let id = p.id;
        assert!(id.is_shared());
        let m = model();
        let d = Diagnostic::about_file(crate::diag::Code::FileUnreadable, "x", "a.smd");
        p.publish(Some("text".into()), None, vec![d.clone()], Some(&m), 4);
        let got = ready(t.claim(Path::new("a.smd"), false));
        assert_eq!(got.id, id);
        assert_eq!(got.text.as_deref(), Some("text"));
        assert_eq!(got.diags, vec![d]);
        assert!(got.smd.is_some_and(|s| Arc::ptr_eq(&s, &m)));
        // another file gets another id
        let q = mine(t.claim(Path::new("b.smd"), false));
        assert_ne!(q.id, id);
    }

    #[test]
    fn a_file_being_parsed_is_busy_and_freed_when_its_parser_gives_up() {
        let t = SharedSmds::default();
        let p = mine(t.claim(Path::new("a.smd"), false));
        assert!(matches!(t.claim(Path::new("a.smd"), false), Claim::Busy));
        drop(p); // unreadable: not published
        let _again = mine(t.claim(Path::new("a.smd"), false));
    }

    #[test]
    fn a_waiting_claim_gets_the_parse_once_published() {
        let t = SharedSmds::default();
        let m = model();
        std::thread::scope(|s| {
            let p = mine(t.claim(Path::new("a.smd"), false));
            let id = p.id;
            let waiter = s.spawn(|| ready(t.claim(Path::new("a.smd"), true)).id);
            std::thread::sleep(std::time::Duration::from_millis(20));
            p.publish(None, None, Vec::new(), Some(&m), 4);
            assert_eq!(waiter.join().ok(), Some(id));
        });
    }

    #[test]
    fn a_file_no_project_holds_any_more_is_parsed_again() {
        let t = SharedSmds::default();
        let p = mine(t.claim(Path::new("big.smd"), false));
        let m = model();
        // larger than what the table holds itself: only the weak reference is left
        p.publish(None, None, Vec::new(), Some(&m), RECENT_BYTES + 1);
        let taken = ready(t.claim(Path::new("big.smd"), false));
        drop(taken);
        drop(m);
        let _again = mine(t.claim(Path::new("big.smd"), false));
        // a small file is held for a while after its users let go of it
        let p = mine(t.claim(Path::new("small.smd"), false));
        let m = model();
        p.publish(None, None, Vec::new(), Some(&m), 1000);
        drop(m);
        let _kept = ready(t.claim(Path::new("small.smd"), false));
    }
}
