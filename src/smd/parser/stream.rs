//! A long SMD read window by window instead of whole (issue 17: the text of a 1,000,000-triangle
//! mesh is 146 MB, more than everything else its build holds at once).
//!
//! The file is read twice, in order, each time by the caller's reader handing over blocks:
//! first only up to the `triangles` section's first line (the *head*: `version`, `nodes`,
//! `skeleton`), which this thread parses as [`parse`](super::parse) would; then the whole file
//! again, the head's bytes skipped (and compared), the rest cut into windows of about
//! [`WINDOW`] bytes where a triangle starts, each read by a parser of its own on one of the
//! threads exactly as [`super::Parser::split_triangles`] reads a piece, and kept as a run of the
//! section. Only a few windows are in memory at once.
//!
//! The streamed reading is only taken when it gives what the whole reading gives: anything else
//! (a line that does not read cleanly, a section left open, text after the section's `end`,
//! bytes that are not UTF-8 or a NUL, the file changing between the two readings, a head or a
//! window without a place to cut) gives `None`, and the caller reads the whole file as usual,
//! which finds and reports every problem as always.

use std::sync::mpsc;

use super::*;

/// About how many bytes each window holds.
pub const WINDOW: usize = 4 << 20;

/// The largest head (everything before the `triangles` section's first triangle) read: a file
/// with more is read whole. A reference file's head is its bones and their rest pose, a few
/// lines a bone.
const MAX_HEAD: usize = 8 << 20;

/// The most a window may grow to while waiting for the lines that end it.
const MAX_WINDOW: usize = 64 << 20;

/// A reader of the file: calls `sink` with the file's bytes in order, block by block, until the
/// end or until `sink` returns `false`. Returns whether it handed over the whole file (no read
/// error, not stopped).
pub type ReadBlocks<'r> = dyn Fn(&mut dyn FnMut(&[u8]) -> bool) -> bool + 'r;

/// Parses the SMD that `read` hands over, window by window, on up to `threads` threads (see the
/// module's documentation). `None` when the streamed reading is not certain to give what
/// [`super::parse_split`] gives on the whole text.
pub fn parse_streamed(read: &ReadBlocks<'_>, file: FileId, threads: usize) -> Option<Parsed> {
    parse_streamed_with(read, file, threads, WINDOW)
}

/// [`parse_streamed`] with windows of about `window` bytes.
pub(super) fn parse_streamed_with(
    read: &ReadBlocks<'_>,
    file: FileId,
    threads: usize,
    window: usize,
) -> Option<Parsed> {
    let (head, start) = read_head(read, file)?;
    let mut main = Parser::new(&head, file);
    if main.head_lines() != Some(start) || !main.diags.is_empty() {
        return None;
    }
    let State::In(Section::Triangles, kw) = main.state else {
        return None;
    };
    let bones = main.bones.clone();
    let saw_links = main.saw_links;
    let threads = threads.max(1);
    // (window index, its first byte in the file, its bytes) to the workers; what each made back
    let (job_tx, job_rx) = mpsc::sync_channel::<(usize, usize, Vec<u8>)>(threads);
    let job_rx = std::sync::Mutex::new(job_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Option<Window>)>();
    let failed = std::sync::atomic::AtomicBool::new(false);
    let work = |done_tx: mpsc::Sender<(usize, Option<Window>)>| loop {
        let job = match job_rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => break,
        };
        let Ok((k, base, bytes)) = job else { break };
        let w = read_window(bytes, base, file, kw, bones.clone(), saw_links);
        if w.is_none() {
            failed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if done_tx.send((k, w)).is_err() {
            break;
        }
    };
    let (whole, windows) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let done_tx = done_tx.clone();
                scope.spawn(move || work(done_tx))
            })
            .collect();
        drop(done_tx);
        let mut cutter = Cutter {
            head: head.as_bytes(),
            start,
            seen: 0,
            buf: Vec::new(),
            lines: 0,
            next: 0,
            window,
            jobs: &job_tx,
            failed: &failed,
        };
        let whole = read(&mut |block| cutter.feed(block)) && cutter.flush();
        drop(job_tx);
        let mut windows: Vec<(usize, Option<Window>)> = done_rx.iter().collect();
        for w in workers {
            if let Err(e) = w.join() {
                std::panic::resume_unwind(e);
            }
        }
        windows.sort_unstable_by_key(|w| w.0);
        (whole, windows)
    });
    if !whole || failed.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    // every window, in order: the section's, up to the one with its `end`; then only blanks
    let mut closed = false;
    for (k, (index, w)) in windows.into_iter().enumerate() {
        let w = w?;
        if index != k {
            return None;
        }
        if closed {
            if !w.blank {
                return None;
            }
            continue;
        }
        let tail_blank = w.tail_blank;
        if main.take_piece(w.piece).is_some() {
            if !tail_blank {
                return None;
            }
            main.close_section(Section::Triangles);
            closed = true;
        }
    }
    if !closed {
        return None;
    }
    // the end of the file as the whole reading meets it: a diagnostic there (which would
    // point into the whole text) means the whole reading is needed
    let before = main.diags.len();
    main.end_of_file();
    if main.diags.len() != before {
        return None;
    }
    Some(main.finish())
}

/// The head: the file's first bytes up to the first line of its `triangles` section's first
/// triangle, as text, and that line's start. Read in growing amounts, parsed each time.
fn read_head(read: &ReadBlocks<'_>, file: FileId) -> Option<(String, usize)> {
    let mut want = 1usize << 20;
    loop {
        let mut bytes: Vec<u8> = Vec::with_capacity(want);
        let whole = read(&mut |block| {
            let room = want - bytes.len();
            bytes.extend_from_slice(&block[..block.len().min(room)]);
            bytes.len() < want
        });
        // complete lines only (a whole file too short to need streaming is read as usual)
        let end = memchr::memrchr(b'\n', &bytes)? + 1;
        bytes.truncate(end);
        let text = clean_text(bytes)?;
        let mut p = Parser::new(&text, file);
        if let Some(start) = p.head_lines() {
            if !p.diags.is_empty() {
                return None;
            }
            let mut text = text;
            text.truncate(start);
            return Some((text, start));
        }
        // an animation (a second frame) has no triangles to stream: read whole at once
        let frames = p.out.skeleton.as_ref().map_or(0, |s| s.frames.len());
        if whole || want >= MAX_HEAD || frames > 1 || !p.diags.is_empty() {
            return None;
        }
        want *= 2;
    }
}

/// The bytes as text, when they are UTF-8 without a NUL (anything else the whole reading
/// reports).
fn clean_text(bytes: Vec<u8>) -> Option<String> {
    if memchr::memchr(0, &bytes).is_some() {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// What a worker made of one window.
struct Window {
    piece: Piece,
    /// The window holds only blanks (spaces, tabs, line breaks).
    blank: bool,
    /// Everything after the line with the section's `end` is blank (when the window has it).
    tail_blank: bool,
}

/// Reads one window (`bytes`, the file's from `base` on) as a piece of the `triangles` section
/// opened at `kw`, its spans moved to the file's offsets.
fn read_window(
    bytes: Vec<u8>,
    base: usize,
    file: FileId,
    kw: Span,
    bones: Option<BoneSet>,
    saw_links: bool,
) -> Option<Window> {
    let text = clean_text(bytes)?;
    let blank = text.bytes().all(|b| b.is_ascii_whitespace());
    let mut piece = read_piece(&text, file, kw, bones, saw_links, 0, text.len())?;
    let tail_blank = match piece.closed_at {
        Some(at) => {
            let after = find_newline(text.as_bytes(), at).map_or(text.len(), |n| n + 1);
            text.as_bytes()
                .get(after..)
                .is_some_and(|rest| rest.iter().all(u8::is_ascii_whitespace))
        }
        None => true,
    };
    // (every span moved stays within what a span can hold, as in the whole reading)
    if base + text.len() > crate::diag::MAX_FILE_LEN {
        return None;
    }
    let shift = u32::try_from(base).ok()?;
    piece.shift(shift);
    Some(Window {
        piece,
        blank,
        tail_blank,
    })
}

impl Piece {
    /// Moves every span and offset of a piece read from a window starting at `by` to the
    /// file's offsets.
    fn shift(&mut self, by: u32) {
        let sp = |s: &mut Span| {
            s.start += by;
            s.end += by;
        };
        for t in &mut self.tris.triangles {
            sp(&mut t.material_span);
            for l in &mut t.lines {
                *l += by;
            }
        }
        for v in &mut self.tris.vertices {
            sp(&mut v.line);
        }
        for d in &mut self.diags {
            for l in &mut d.labels {
                sp(&mut l.at.span);
            }
        }
        if let Some(at) = self.closed_at.as_mut() {
            *at += by as usize;
        }
    }
}

/// Cuts the file's bytes after the head into windows (see [`parse_streamed`]) and hands them to
/// the workers.
struct Cutter<'a> {
    head: &'a [u8],
    /// Where the section's triangles start (the head's length).
    start: usize,
    /// How many of the file's bytes came so far.
    seen: usize,
    /// The bytes after the last window.
    buf: Vec<u8>,
    /// Lines since `start` handed over in windows.
    lines: usize,
    /// The next window's index.
    next: usize,
    window: usize,
    jobs: &'a mpsc::SyncSender<(usize, usize, Vec<u8>)>,
    failed: &'a std::sync::atomic::AtomicBool,
}

impl Cutter<'_> {
    /// Takes the next block of the file; `false` to stop reading.
    fn feed(&mut self, block: &[u8]) -> bool {
        if self.failed.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        // the head again: it must not have changed since it was read
        let mut block = block;
        if self.seen < self.start {
            let n = block.len().min(self.start - self.seen);
            if self.head.get(self.seen..self.seen + n) != block.get(..n) {
                return false;
            }
            self.seen += n;
            block = block.get(n..).unwrap_or(&[]);
        }
        self.seen += block.len();
        self.buf.extend_from_slice(block);
        while self.buf.len() >= self.window {
            match self.cut() {
                Some(at) => {
                    if !self.send(at) {
                        return false;
                    }
                }
                // the lines that end the window are not all here yet
                None if self.buf.len() < MAX_WINDOW => break,
                None => return false,
            }
        }
        true
    }

    /// The last window, at the end of the file.
    fn flush(&mut self) -> bool {
        let n = self.buf.len();
        n == 0 || self.send(n)
    }

    /// Where the buffer's first `window` bytes or so end on a triangle's first line: the end
    /// of the line holding the window's last byte, moved on until the lines since the
    /// section's start are a multiple of four; `None` until the buffer reaches that far.
    fn cut(&self) -> Option<usize> {
        let b = &self.buf;
        let from = self.window.min(b.len()).saturating_sub(1);
        let mut at = find_newline(b, from)? + 1;
        let lines = self.lines + count_lines(&b[..at]);
        for _ in 0..(4 - lines % 4) % 4 {
            at = find_newline(b, at)? + 1;
        }
        Some(at)
    }

    /// Hands the buffer's first `at` bytes over as the next window.
    fn send(&mut self, at: usize) -> bool {
        let rest = self.buf.split_off(at);
        let bytes = std::mem::replace(&mut self.buf, rest);
        self.lines += count_lines(&bytes);
        let base = self.seen - self.buf.len() - bytes.len();
        let k = self.next;
        self.next += 1;
        self.jobs.send((k, base, bytes)).is_ok()
    }
}

impl Parser<'_> {
    /// Reads lines from the start of the text until the first triangle of a `triangles`
    /// section is due (the place [`Parser::run`] would cut the section into pieces): that
    /// line's start, or `None` when the text ends first (a last line without its line feed is
    /// not read: more text is needed).
    fn head_lines(&mut self) -> Option<usize> {
        let bytes = self.src.as_bytes();
        let mut pos = 0usize;
        loop {
            if self.pending.is_none() && matches!(self.state, State::In(Section::Triangles, _)) {
                return Some(pos);
            }
            let end = find_newline(bytes, pos)?;
            let mut line_end = end;
            if line_end > pos && bytes.get(line_end - 1) == Some(&b'\r') {
                line_end -= 1;
            }
            self.line(Span::new(pos as u32, line_end as u32));
            pos = end + 1;
        }
    }
}
