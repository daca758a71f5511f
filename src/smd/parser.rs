//! Line-oriented SMD parser: text → [`SmdFile`] plus every diagnostic.
//!
//! The parser never stops at an error. Each line is parsed on its own, so after a bad line it
//! simply goes on with the next one; where one mistake would otherwise cause a string of errors
//! (a missing `end`, a triangle with two vertices, a frame line before `time`), it reports the
//! mistake once and recovers in the way that makes the following lines read as intended.
//!
//! What is accepted follows Valve's readers (`goldsrc.md` §7, `source-animation.md` §2.1) and
//! what real exporters write (`corpus/QUIRKS.md`): CRLF, no final newline, comments before
//! `version`, blank material lines, link count 0, any number of links, `# name` after `time`.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::diag::{Code, Diagnostic, FileId, Span};

use super::ast::*;
use super::lexer::{self, is_blank, lex_line, parse_f32, read_number, Tok, Token};

/// A weight sum further than this from 1 gets [`Code::SmdWeightSum`]. Exporters print six
/// decimals, so ten links can be off by 5e-6 through rounding alone.
pub const WEIGHT_SUM_TOLERANCE: f32 = 1e-3;

const SECTION_KEYWORDS: [&str; 4] = ["nodes", "skeleton", "triangles", "vertexanimation"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Nodes,
    Skeleton,
    Triangles,
    VertexAnimation,
}

impl Section {
    fn from_word(w: &str) -> Option<Section> {
        [
            Section::Nodes,
            Section::Skeleton,
            Section::Triangles,
            Section::VertexAnimation,
        ]
        .into_iter()
        .find(|s| s.name().eq_ignore_ascii_case(w))
    }

    fn name(self) -> &'static str {
        match self {
            Section::Nodes => "nodes",
            Section::Skeleton => "skeleton",
            Section::Triangles => "triangles",
            Section::VertexAnimation => "vertexanimation",
        }
    }
}

/// Where the parser is.
#[derive(Clone, Copy, Debug)]
enum State {
    Top,
    /// Inside a section; `keyword` is where it was opened.
    In(Section, Span),
    /// Skipping an unknown or repeated section up to its `end`.
    Skip(Span),
}

/// Inside `skeleton`/`vertexanimation`: which frame lines go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameState {
    /// No `time` line yet.
    None,
    /// Lines go to the last frame of the section.
    Open,
    /// The `time` line was bad: lines are checked but not kept.
    Poisoned,
    /// Lines came before any `time` and were reported once; later ones are checked silently.
    Reported,
}

/// The triangle being read.
#[derive(Clone, Copy, Debug)]
struct PendingTriangle {
    material: u32,
    material_span: Span,
    count: usize,
    /// Indices into the run's vertices, and where each corner's line starts.
    vertices: [u32; 3],
    lines: [u32; 3],
    /// Empty material or a bad vertex line: checked, then dropped.
    drop: bool,
}

/// The set of declared bone indices, checked on every vertex and frame line.
#[derive(Clone, Debug, Default)]
struct BoneSet {
    /// Indices 0..count, all present (the normal case: a range check is enough).
    dense: Option<usize>,
    sorted: Vec<i32>,
}

impl BoneSet {
    /// The bones of `nodes`, plus the indices of node lines that were reported as broken (so
    /// that references to them are not reported a second time).
    fn from_nodes(nodes: &[Node], broken: &[i32]) -> BoneSet {
        let dense = broken.is_empty()
            && nodes
                .iter()
                .enumerate()
                .all(|(i, n)| n.index as usize == i && n.index >= 0);
        if dense {
            return BoneSet {
                dense: Some(nodes.len()),
                sorted: Vec::new(),
            };
        }
        let mut sorted: Vec<i32> = nodes
            .iter()
            .map(|n| n.index)
            .chain(broken.iter().copied())
            .collect();
        sorted.sort_unstable();
        sorted.dedup();
        BoneSet {
            dense: None,
            sorted,
        }
    }

    fn contains(&self, bone: i32) -> bool {
        match self.dense {
            Some(n) => bone >= 0 && (bone as usize) < n,
            None => self.sorted.binary_search(&bone).is_ok(),
        }
    }

    fn describe(&self) -> String {
        match self.dense {
            Some(0) => "`nodes` declares no bone".to_string(),
            Some(n) => format!("`nodes` declares bones 0 to {}", n - 1),
            None => format!("`nodes` declares {} bones", self.sorted.len()),
        }
    }
}

/// Counts a repeated warning per file: the first occurrence is reported, the total is added to
/// it as a note at the end, so a file with a million slightly-off weights gets one warning.
#[derive(Clone, Copy, Debug, Default)]
struct Repeated {
    first: Option<usize>,
    count: usize,
}

/// The result of parsing: the tree is always built, even for broken input.
#[derive(Debug, PartialEq)]
pub struct Parsed {
    pub smd: SmdFile,
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.is_error())
    }
}

mod stream;

pub use stream::{parse_streamed, ReadBlocks};

/// Parses an SMD or VTA file's text on this thread.
pub fn parse(text: &str, file: FileId) -> Parsed {
    parse_split(text, file, 1)
}

/// A `triangles` section at least this long is read in pieces, four a thread, each kept as a
/// run of the section (below it a piece costs more than it saves).
pub const SPLIT_TRIANGLES_BYTES: usize = 4 << 20;

/// [`parse`] on up to `threads` threads: a long `triangles` section is cut into pieces, each
/// starting on a triangle, read side by side and kept as runs of the section; the tree and
/// the diagnostics are [`parse`]'s in every case but for where the runs begin (see
/// the parser's `split_triangles`, and [`TrianglesSection::joined`]).
pub fn parse_split(text: &str, file: FileId, threads: usize) -> Parsed {
    parse_with(text, file, threads, SPLIT_TRIANGLES_BYTES)
}

fn parse_with(text: &str, file: FileId, threads: usize, split_bytes: usize) -> Parsed {
    let mut p = Parser::new(text, file);
    p.split = Some((threads.max(1), split_bytes));
    p.run();
    p.finish()
}

/// How many line feeds `b` holds: compares 32 bytes at a time into byte counters (which the
/// compiler turns into vector instructions), emptied before they can overflow.
fn count_lines(b: &[u8]) -> usize {
    let mut n = 0usize;
    for block in b.chunks(255 * 32) {
        let mut acc = [0u8; 32];
        for c in block.chunks(32) {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += u8::from(x == b'\n');
            }
        }
        n += acc.iter().map(|&a| usize::from(a)).sum::<usize>();
    }
    n
}

/// The start of the line after the one `at` is in (`b.len()` when there is none).
fn next_line_start(b: &[u8], at: usize) -> usize {
    find_newline(b, at).map_or(b.len(), |e| e + 1)
}

/// What a piece of a `triangles` section read on its own thread gives back.
struct Piece {
    /// Its own materials, triangles (material indices into those) and links.
    tris: TrianglesSection,
    /// Its diagnostics: only repeated-warning reports, or the piece is not taken.
    diags: Vec<Diagnostic>,
    weight_sum: Repeated,
    duplicate_link: Repeated,
    saw_content: bool,
    saw_links: bool,
    /// The start of the `end` line that closed the section inside the piece.
    closed_at: Option<usize>,
}

/// Six decimal digits then a byte that is not one, at the start of `w` (eight bytes of text,
/// the first in the low byte): their value. How `printf("%f")` writes a fraction, so nearly
/// every value of an SMD ends so. Bytes XORed with `'0'` are digits when neither they nor they
/// plus 6 reach 16 (no carry leaves a digit's byte); the six are then combined in pairs, quads
/// and halves, three multiplications in all.
#[inline(always)]
fn six_digits(w: u64) -> Option<u64> {
    let t = w ^ 0x3030_3030_3030_3030;
    let not_digit = (t | t.wrapping_add(0x0606_0606_0606_0606)) & 0xF0F0_F0F0_F0F0_F0F0;
    if not_digit & 0x0000_F0F0_F0F0_F0F0 != 0 || not_digit & 0x00F0_0000_0000_0000 == 0 {
        return None;
    }
    // the six digits in the top bytes, zeros below: an eight-digit number
    let t = (t & 0x0000_FFFF_FFFF_FFFF) << 16;
    let t = (t.wrapping_mul(10) + (t >> 8)) & 0x00FF_00FF_00FF_00FF;
    let t = (t.wrapping_mul(100) + (t >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((t.wrapping_mul(10_000) + (t >> 32)) & 0xFFFF_FFFF)
}

/// A line of exactly `1 + N` plain numbers, split and read as the lexer and the parser would:
/// the first an `Int` that fits an `i32` (with its span), then `N` numbers (`Int` or `Float`)
/// that [`parse_f32`] accepts. `None` for any other line (a word, a comment, a quote, another
/// count, a value out of range), which the general path then reads. The line is
/// `text[start..end]` (spans are offsets in `text`), and `end` is the end of `text` or a line
/// break (`\r`, `\n`): a fraction read a word at a time past `end` stops there.
///
/// Each token is read in the same pass that finds its end: `[-+]?digits[.digits]` up to a
/// blank, as [`read_number`]'s first case reads it; a fraction of exactly six digits in one
/// step ([`six_digits`]: the position then moves on by six whatever the bytes, so the next
/// token's reading does not wait for this one's value). A token with any other byte (an
/// exponent, a letter) is handed to [`read_number`] whole.
fn plain_numbers<const N: usize>(
    text: &str,
    start: usize,
    end: usize,
) -> Option<(i32, Span, [f32; N])> {
    let b = text.as_bytes();
    let mut i = start;
    let mut first = None;
    let mut vals = [0f32; N];
    let mut count = 0usize;
    loop {
        // (most tokens are followed by one space: a byte above it ends the run at once)
        while i < end && b.get(i).is_some_and(|&c| c <= b' ' && is_blank(c)) {
            i += 1;
        }
        if i >= end {
            break;
        }
        let t = number_token(text, i, end)?;
        i = t.end;
        let tok = || text.get(t.start..t.end);
        if count == 0 {
            if t.kind != Token::Int {
                return None;
            }
            // Up to nine digits always fit an `i32`; `str::parse` decides the rest.
            let v = if t.plain && t.digits <= 9 {
                let v = t.mantissa as i32;
                if t.neg {
                    -v
                } else {
                    v
                }
            } else {
                tok()?.parse::<i32>().ok()?
            };
            first = Some((v, Span::new(t.start as u32, t.end as u32)));
        } else {
            let v = match t.value {
                Some(v) => v,
                None if t.plain => parse_f32(tok()?)?,
                None => return None,
            };
            *vals.get_mut(count - 1)? = v;
        }
        count += 1;
        // a plain token ends at a blank (or the line's end): step over it
        if t.plain && i < end {
            i += 1;
        }
    }
    let (v, span) = first?;
    (count == N + 1).then_some((v, span, vals))
}

/// A number token read by [`number_token`].
struct NumberToken {
    start: usize,
    end: usize,
    kind: Token,
    /// `None` for a plain token [`lexer::decimal`] cannot round exactly (the caller then uses
    /// [`parse_f32`]), or for a token [`read_number`] reads without a value.
    value: Option<f32>,
    /// `[-+]?digits[.digits]` up to a blank or the line's end.
    plain: bool,
    /// A plain token's digits as one integer, how many, and its sign.
    mantissa: u64,
    digits: usize,
    neg: bool,
}

/// The number token at `i` (not a blank) of a line ending at `end` (the end of `text` or a line
/// break), read in the same pass that finds its end: `[-+]?digits[.digits]` up to a blank, as
/// [`read_number`]'s first case reads it; a fraction of exactly six digits in one step
/// ([`six_digits`]: the position then moves on by six whatever the bytes, so the next token's
/// reading does not wait for this one's value). A token with any other byte (an exponent, a
/// letter) is handed to [`read_number`] whole; `None` when that is not a number.
#[inline(always)]
fn number_token(text: &str, mut i: usize, end: usize) -> Option<NumberToken> {
    let b = text.as_bytes();
    let tok_start = i;
    let neg = b.get(i) == Some(&b'-');
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut m: u64 = 0;
    let int_start = i;
    // The usual value, one digit before the point (`-1.570796`), in one step.
    let one_digit = match (b.get(i), b.get(i + 1)) {
        (Some(&c), Some(b'.')) if c.is_ascii_digit() => b
            .get(i + 2..i + 10)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .and_then(|w| six_digits(u64::from_le_bytes(w)))
            .map(|v| u64::from(c - b'0') * 1_000_000 + v),
        _ => None,
    };
    let (mut digits, mut frac, point);
    if let Some(v) = one_digit {
        m = v;
        i += 8;
        (digits, frac, point) = (7, 6, true);
    } else {
        (i, m) = lexer::take_digits(b, i, m);
        digits = i - int_start;
        frac = 0;
        point = b.get(i) == Some(&b'.');
    }
    if point && one_digit.is_none() {
        i += 1;
        let six = b
            .get(i..i + 8)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .and_then(|w| six_digits(u64::from_le_bytes(w)));
        if let Some(v) = six {
            m = m.wrapping_mul(1_000_000).wrapping_add(v);
            i += 6;
            frac = 6;
        } else {
            let frac_start = i;
            (i, m) = lexer::take_digits(b, i, m);
            frac = i - frac_start;
        }
        digits += frac;
    }
    let plain = digits > 0 && (i >= end || b.get(i).is_none_or(|&c| is_blank(c)));
    let (kind, value) = if plain {
        let kind = if point { Token::Float } else { Token::Int };
        (kind, lexer::decimal(neg, m, digits, frac))
    } else {
        // Anything else: the whole token (up to the next blank), read the general way.
        while i < end && b.get(i).is_some_and(|&c| !is_blank(c)) {
            i += 1;
        }
        read_number(text.get(tok_start..i)?)?
    };
    Some(NumberToken {
        start: tok_start,
        end: i,
        kind,
        value,
        plain,
        mantissa: m,
        digits,
        neg,
    })
}

/// The index of the first `\n` at or after `from` (the `memchr` crate: SIMD, with a set-up
/// cheap enough for lines of about 60 bytes).
fn find_newline(b: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(b'\n', b.get(from..)?).map(|i| from + i)
}

/// One number of a line read by [`plain_line`]: byte range in the file, kind, value.
#[derive(Clone, Copy, Debug)]
struct Num {
    start: u32,
    end: u32,
    kind: Token,
    value: f32,
    /// An `Int` of up to nine digits (which always fits an `i32`): its value; `None` for
    /// another token, which `str::parse` then reads.
    int: Option<i32>,
}

/// Splits the line `text[start..end]` into plain numbers as the lexer and the parser would read
/// them, into `out` (spans are offsets in `text`; `end` is the end of `text` or a line break).
/// `false` (and `out` unusable) for any other line: a word, a comment, a quote, a value out of
/// range. The general path then reads the line.
fn plain_line(text: &str, start: usize, end: usize, out: &mut Vec<Num>) -> bool {
    out.clear();
    let b = text.as_bytes();
    let mut i = start;
    loop {
        while i < end && b.get(i).is_some_and(|&c| is_blank(c)) {
            i += 1;
        }
        if i >= end {
            return true;
        }
        let Some(t) = number_token(text, i, end) else {
            return false;
        };
        let value = match t.value {
            Some(v) => v,
            None if t.plain => match text.get(t.start..t.end).and_then(parse_f32) {
                Some(v) => v,
                None => return false,
            },
            None => return false,
        };
        let int = (t.plain && t.kind == Token::Int && t.digits <= 9).then(|| {
            let v = t.mantissa as i32;
            if t.neg {
                -v
            } else {
                v
            }
        });
        out.push(Num {
            start: t.start as u32,
            end: t.end as u32,
            kind: t.kind,
            value,
            int,
        });
        i = t.end;
    }
}

/// Reads the lines `from..to` of a `triangles` section opened at `kw` as a parser of its own
/// would with no triangle pending (see [`Parser::split_triangles`]); `None` when they do not all
/// read cleanly.
fn read_piece(
    src: &str,
    file: FileId,
    kw: Span,
    bones: Option<BoneSet>,
    saw_links: bool,
    from: usize,
    to: usize,
) -> Option<Piece> {
    let mut p = Parser::new(src, file);
    p.state = State::In(Section::Triangles, kw);
    p.bones = bones;
    p.saw_links = saw_links;
    p.out.triangles = Some(TrianglesSection {
        keyword: kw,
        ..TrianglesSection::default()
    });
    let stop = p.lines_until(from, to);
    let closed = !matches!(p.state, State::In(Section::Triangles, _));
    if p.pending.is_some() || !Parser::only_repeats(&p.diags) || (stop < to && !closed) {
        return None;
    }
    // the `end` line's start: the line before `stop`
    let closed_at = closed.then(|| {
        let b = src.as_bytes();
        let mut at = stop.min(b.len());
        if at > 0 && b.get(at - 1) == Some(&b'\n') {
            at -= 1;
        }
        b[..at]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1)
    });
    Some(Piece {
        tris: p.out.triangles.take().unwrap_or_default(),
        diags: p.diags,
        weight_sum: p.weight_sum,
        duplicate_link: p.duplicate_link,
        saw_content: p.saw_content,
        saw_links: p.saw_links,
        closed_at,
    })
}

/// A vertex from its bone and the eight values after it (position, normal, uv), no links yet.
fn rigid_vertex(line: Span, bone: i32, v: [f32; 8]) -> Vertex {
    Vertex {
        bone,
        pos: [v[0], v[1], v[2]],
        normal: [v[3], v[4], v[5]],
        uv: [v[6], v[7]],
        line,
        ..Vertex::default()
    }
}

struct Parser<'a> {
    src: &'a str,
    /// Scratch space of the fast vertex path.
    nums: Vec<Num>,
    file: FileId,
    diags: Vec<Diagnostic>,
    toks: Vec<Tok>,
    /// The comment at the end of the line in `toks`, if any.
    comment: Option<Tok>,
    out: SmdFile,
    state: State,
    frame: FrameState,
    pending: Option<PendingTriangle>,
    bones: Option<BoneSet>,
    /// Bone indices of `nodes` lines that had an error (the index as written, or the expected
    /// one if it was unreadable): references to them are not reported again.
    broken_bones: Vec<i32>,
    /// Index ranges reported as skipped: a later line filling the gap is not reported again.
    skipped_indices: Vec<(i32, i32)>,
    /// First `nodes`/`skeleton`/… keyword seen, for "duplicate section" notes.
    first_keyword: [Option<Span>; 4],
    weight_sum: Repeated,
    duplicate_link: Repeated,
    /// Whether the file had anything besides blank lines and comments.
    saw_content: bool,
    /// Whether a vertex line with links was read by the fast path (see
    /// [`Parser::fast_vertex_line`]).
    saw_links: bool,
    /// Whether a `version` line was seen, even a broken one (reported on its own).
    saw_version: bool,
    /// Threads and the least length of a `triangles` section read in pieces (see
    /// [`parse_split`]); `None`: one thread.
    split: Option<(usize, usize)>,
    /// The vertex lines of the current run read cleanly, by (hash of the text, material): the
    /// index of the vertex read from the first (see [`Parser::shared_vertex_line`]).
    seen: HashMap<(u64, u32), u32, BuildHasherDefault<KeyHasher>>,
    /// The bone lines the fast path read, by the hash of their text (see
    /// [`Parser::fast_bone_line`]): where the pose read from the first is (frame, place in it).
    seen_poses: HashMap<u64, (u32, u32), BuildHasherDefault<KeyHasher>>,
    /// Whether [`Parser::seen`] is still kept, and how well it does.
    sharing: Sharing,
    /// The same for [`Parser::seen_poses`].
    pose_sharing: Sharing,
}

/// How often a table of lines read before ([`Parser::seen`], [`Parser::seen_poses`]) found
/// one: a file whose lines seldom repeat (a mesh without shared vertices, an animation whose
/// every bone moves in every frame) is read without it once its first 4,096 distinct lines
/// found fewer than 1,024 repeats, so that it costs neither the hashing nor the memory.
#[derive(Clone, Copy, Debug, Default)]
struct Sharing {
    misses: usize,
    hits: usize,
    off: bool,
}

impl Sharing {
    const TRIAL: usize = 4096;

    fn on(&self) -> bool {
        !self.off
    }

    /// Counts a line not found; whether the table is still worth keeping.
    fn missed(&mut self) -> bool {
        self.misses += 1;
        if self.misses == Self::TRIAL && self.hits < Self::TRIAL / 4 {
            self.off = true;
        }
        !self.off
    }
}

/// The hasher of [`Parser::seen`]: its keys' first word is already an xxh3 hash, which is
/// only mixed with the material.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }

    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0 ^ u64::from(v)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, file: FileId) -> Self {
        Parser {
            src,
            nums: Vec::with_capacity(32),
            file,
            diags: Vec::new(),
            toks: Vec::with_capacity(32),
            comment: None,
            out: SmdFile::default(),
            state: State::Top,
            frame: FrameState::None,
            pending: None,
            bones: None,
            broken_bones: Vec::new(),
            skipped_indices: Vec::new(),
            first_keyword: [None; 4],
            weight_sum: Repeated::default(),
            duplicate_link: Repeated::default(),
            saw_content: false,
            saw_links: false,
            saw_version: false,
            split: None,
            seen: HashMap::default(),
            seen_poses: HashMap::default(),
            sharing: Sharing::default(),
            pose_sharing: Sharing::default(),
        }
    }

    // --- helpers -------------------------------------------------------------------------------

    fn text(&self, start: u32, end: u32) -> &'a str {
        self.src.get(start as usize..end as usize).unwrap_or("")
    }

    fn tok_text(&self, t: Tok) -> &'a str {
        self.text(t.start, t.end)
    }

    fn span(t: Tok) -> Span {
        Span::new(t.start, t.end)
    }

    fn error(
        &mut self,
        code: Code,
        message: impl Into<String>,
        at: Span,
        label: impl Into<String>,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::new(code, message, at.in_file(self.file), label));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    /// Parses an integer token into an `i32`, reporting malformed and overflowing values.
    #[inline]
    fn int(&mut self, t: Tok, what: &str) -> Option<i32> {
        if t.kind == Token::Int {
            if let Ok(v) = self.tok_text(t).parse::<i32>() {
                return Some(v);
            }
        }
        self.int_error(t, what)
    }

    /// Reports why a token is not a usable whole number.
    #[cold]
    fn int_error(&mut self, t: Tok, what: &str) -> Option<i32> {
        let s = self.tok_text(t);
        match t.kind {
            Token::Int => match s.parse::<i32>() {
                Ok(v) => Some(v),
                Err(_) => {
                    self.error(
                        Code::SmdNumberOutOfRange,
                        format!("{what} `{s}` is out of range"),
                        Self::span(t),
                        if s.starts_with('-') {
                            "too small"
                        } else {
                            "too large"
                        },
                    )
                    .notes
                    .push(format!(
                        "expected {what} between {} and {}",
                        i32::MIN,
                        i32::MAX
                    ));
                    None
                }
            },
            Token::Float => {
                self.error(
                    Code::SmdMalformedNumber,
                    format!("expected {what}, found `{s}`"),
                    Self::span(t),
                    "not a whole number",
                )
                .notes
                .push(format!("{what} is a whole number such as `0` or `12`"));
                None
            }
            _ => {
                self.malformed_number(t, what, true);
                None
            }
        }
    }

    /// Parses a number token into a finite `f32` (as C's `strtof`/`sscanf("%f")` rounds it).
    #[inline]
    fn float(&mut self, t: Tok, what: &str) -> Option<f32> {
        if matches!(t.kind, Token::Int | Token::Float) {
            if let Some(v) = parse_f32(self.tok_text(t)) {
                return Some(v);
            }
        }
        self.float_error(t, what)
    }

    /// Reports why a token is not a usable number.
    #[cold]
    fn float_error(&mut self, t: Tok, what: &str) -> Option<f32> {
        match t.kind {
            Token::Int | Token::Float => {
                let s = self.tok_text(t);
                match parse_f32(s) {
                    Some(v) => Some(v),
                    None => {
                        self.error(
                            Code::SmdNumberOutOfRange,
                            format!("{what} `{s}` is out of range"),
                            Self::span(t),
                            "does not fit a 32-bit float",
                        )
                        .notes
                        .push(format!(
                            "expected a finite number with a magnitude below {:e}",
                            f32::MAX
                        ));
                        None
                    }
                }
            }
            _ => {
                self.malformed_number(t, what, false);
                None
            }
        }
    }

    fn malformed_number(&mut self, t: Tok, what: &str, whole: bool) {
        let s = self.tok_text(t);
        let lower = s.to_ascii_lowercase();
        let (code, label, note) = if matches!(
            lower.trim_start_matches(['-', '+']),
            "nan" | "inf" | "infinity" | "1.#qnan" | "1.#inf" | "1.#ind"
        ) {
            (
                Code::SmdNumberOutOfRange,
                "not a finite number",
                format!("{what} must be a finite number"),
            )
        } else if s.contains(',') && s.bytes().any(|b| b.is_ascii_digit()) {
            (
                Code::SmdMalformedNumber,
                "not a number",
                "SMD uses `.` as the decimal separator, as in `1.5`".to_string(),
            )
        } else if whole {
            (
                Code::SmdMalformedNumber,
                "not a number",
                format!("{what} is a whole number such as `0` or `12`"),
            )
        } else {
            (
                Code::SmdMalformedNumber,
                "not a number",
                format!("expected {what}, written like `-1.5`, `0.25` or `3`"),
            )
        };
        self.error(
            code,
            format!("expected {what}, found `{s}`"),
            Self::span(t),
            label,
        )
        .notes
        .push(note);
    }

    /// Reports the wrong number of values on a line. `found` values; `expected` describes;
    /// `extra` is the token index of the first value too many, if there are too many.
    fn value_count(&mut self, line: Span, found: usize, expected: &str, extra: Option<usize>) {
        // Point at the first extra value, or at the end of the line when values are missing.
        let (at, label) = if let Some(&t) = extra.and_then(|i| self.toks.get(i)) {
            (Self::span(t), "unexpected value".to_string())
        } else {
            (
                Span::new(line.end, line.end),
                format!(
                    "{found} value{} on this line",
                    if found == 1 { "" } else { "s" }
                ),
            )
        };
        let message = format!(
            "expected {expected}, found {found} value{}",
            if found == 1 { "" } else { "s" }
        );
        self.error(Code::SmdValueCount, message, at, label);
    }

    /// Whether `bone` may be referenced: it is declared in `nodes`, or no `nodes` section has
    /// been read (a missing section is reported once, at the end, not on every line).
    fn bone_known(&self, bone: i32) -> bool {
        self.bones.as_ref().is_none_or(|s| s.contains(bone))
    }

    /// Reports a bone number that `nodes` does not declare.
    #[cold]
    fn unknown_bone(&mut self, code: Code, what: &str, bone: i32, at: Tok) {
        let describe = self.bones().describe();
        self.error(
            code,
            format!("{what} {bone} is not declared in `nodes`"),
            Self::span(at),
            "unknown bone",
        )
        .notes
        .push(describe);
    }

    fn bones(&self) -> &BoneSet {
        static EMPTY: BoneSet = BoneSet {
            dense: Some(0),
            sorted: Vec::new(),
        };
        self.bones.as_ref().unwrap_or(&EMPTY)
    }

    fn section_slot(s: Section) -> usize {
        s as usize
    }

    // --- driver --------------------------------------------------------------------------------

    fn run(&mut self) {
        let len = self.src.len();
        let mut pos = 0usize;
        loop {
            if pos == len && len > 0 {
                // The text ends with a line break: there is no further line.
                break;
            }
            if let Some((threads, least)) = self.split {
                if self.pending.is_none()
                    && matches!(self.state, State::In(Section::Triangles, _))
                    && len - pos >= least
                {
                    // once per file: a second long section is read at once
                    self.split = None;
                    pos = self.split_triangles(pos, threads, least);
                    continue;
                }
            }
            let end = find_newline(self.src.as_bytes(), pos).unwrap_or(len);
            // The line without its `\r` (spans of a CRLF line stop before the CR).
            let mut line_end = end;
            if line_end > pos && self.src.as_bytes().get(line_end - 1) == Some(&b'\r') {
                line_end -= 1;
            }
            self.line(Span::new(pos as u32, line_end as u32));
            if end >= len {
                break;
            }
            pos = end + 1;
        }
        self.end_of_file();
    }

    /// Reads the lines from `pos` up to `to` (a line start, or the end of the text), stopping
    /// after a line that closes the `triangles` section. Returns where it stopped.
    fn lines_until(&mut self, mut pos: usize, to: usize) -> usize {
        let bytes = self.src.as_bytes();
        let len = bytes.len();
        while pos < to {
            let end = find_newline(bytes, pos).unwrap_or(len);
            let mut line_end = end;
            if line_end > pos && bytes.get(line_end - 1) == Some(&b'\r') {
                line_end -= 1;
            }
            self.line(Span::new(pos as u32, line_end as u32));
            pos = (end + 1).min(len);
            if !matches!(self.state, State::In(Section::Triangles, _)) {
                break;
            }
        }
        pos
    }

    /// Whether every diagnostic from `from` on is a repeated-warning report (which pieces
    /// merge); anything else means a line did not read as a clean triangle line.
    fn only_repeats(diags: &[Diagnostic]) -> bool {
        diags
            .iter()
            .all(|d| matches!(d.code, Code::SmdWeightSum | Code::SmdDuplicateLink))
    }

    /// Reads the `triangles` section that starts at `start` (no triangle pending) in pieces,
    /// on up to `threads` threads: returns where this thread goes on reading line by line.
    ///
    /// In a section read without a word, every triangle takes four lines: the pieces are cut
    /// where the number of lines since `start` is a multiple of four, so each starts with a
    /// material line exactly as the one-thread reading would reach it. This thread reads the
    /// first piece itself, then takes pieces as the other threads do; each of those is read by
    /// a parser of its own (same bones, no triangle pending) and becomes a run of the section
    /// ([`TrianglesSection`]). A piece is taken only when everything before it read cleanly (no
    /// diagnostic but the repeated-warning reports, which are merged as one reading makes
    /// them, no triangle left open at its end); at the first piece that did not, or after the
    /// `end` of the section, this thread goes on line by line from there, so any problem is
    /// found and reported exactly as without pieces.
    fn split_triangles(&mut self, start: usize, threads: usize, least: usize) -> usize {
        let bytes = self.src.as_bytes();
        let len = bytes.len();
        let State::In(Section::Triangles, kw) = self.state else {
            return start;
        };
        // Four pieces a thread (of a quarter of `least` at least): the threads take the next
        // piece when done with one; each piece becomes a run of the section as it was read
        // (nothing is copied), which lowering lets go once it is lowered.
        let count = (4 * threads)
            .min((len - start) / (least / 4).max(1))
            .max(threads);
        // the cuts: equal lengths, moved to a line start, then on to a triangle's first line
        let mut cuts = vec![start];
        let mut lines = 0usize;
        // the lines of the first piece
        let mut first_lines = 0usize;
        for j in 1..count {
            let prev = cuts[cuts.len() - 1];
            let raw = start + (len - start) / count * j;
            if raw <= prev {
                continue;
            }
            let mut at = next_line_start(bytes, raw);
            lines += count_lines(&bytes[prev..at]);
            for _ in 0..(4 - lines % 4) % 4 {
                at = next_line_start(bytes, at);
                lines += 1;
            }
            if at >= len {
                break;
            }
            cuts.push(at);
            if cuts.len() == 2 {
                first_lines = lines;
            }
        }
        cuts.push(len);
        if cuts.len() <= 2 {
            return start;
        }
        // room for the first piece's triangles
        if let Some(t) = self.out.triangles.as_mut() {
            t.triangles.reserve(first_lines / 4 + 1);
        }
        let before = self.diags.len();
        let bones = self.bones.clone();
        let saw_links = self.saw_links;
        let (src, file) = (self.src, self.file);
        // the pieces after the first, which this thread reads itself before joining the others
        let ranges: Vec<(usize, usize)> = cuts.windows(2).skip(1).map(|w| (w[0], w[1])).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        // the first piece that did not read cleanly (the ones after it are not needed), or
        // `usize::MAX`; 0 also when this thread's own piece did not
        let failed = std::sync::atomic::AtomicUsize::new(usize::MAX);
        let work = || {
            use std::sync::atomic::Ordering::Relaxed;
            let mut done = Vec::new();
            loop {
                let k = next.fetch_add(1, Relaxed);
                let Some(&(from, to)) = ranges.get(k).filter(|_| k < failed.load(Relaxed)) else {
                    break;
                };
                let piece = read_piece(src, file, kw, bones.clone(), saw_links, from, to);
                if piece.is_none() {
                    failed.fetch_min(k, Relaxed);
                }
                done.push((k, piece));
            }
            done
        };
        let (pos, clean, mut pieces) = std::thread::scope(|scope| {
            let others: Vec<_> = (1..threads.min(ranges.len() + 1))
                .map(|_| scope.spawn(work))
                .collect();
            let pos = self.lines_until(start, cuts[1]);
            let clean = pos == cuts[1]
                && self.pending.is_none()
                && matches!(self.state, State::In(Section::Triangles, _))
                && Self::only_repeats(&self.diags[before..]);
            let mut pieces = if clean {
                work()
            } else {
                failed.store(0, std::sync::atomic::Ordering::Relaxed);
                Vec::new()
            };
            for t in others {
                pieces.extend(t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            (pos, clean, pieces)
        });
        if !clean {
            return pos;
        }
        pieces.sort_unstable_by_key(|p| p.0);
        // (the pieces after a failed one may be missing: the joining stops at it)
        for (k, &from) in cuts[1..cuts.len() - 1].iter().enumerate() {
            let Some(piece) = pieces
                .get_mut(k)
                .filter(|p| p.0 == k)
                .and_then(|p| p.1.take())
            else {
                return from;
            };
            if let Some(at) = self.take_piece(piece) {
                return at;
            }
        }
        len
    }

    /// Joins a piece read on another thread to what this thread read (see
    /// [`Parser::split_triangles`]): returns where the section's `end` is when the piece has it.
    fn take_piece(&mut self, p: Piece) -> Option<usize> {
        #[cfg(test)]
        tests::PIECES_TAKEN.with(|c| c.set(c.get() + 1));
        for d in p.diags {
            let counter = match d.code {
                Code::SmdWeightSum => &mut self.weight_sum,
                _ => &mut self.duplicate_link,
            };
            if counter.first.is_none() {
                counter.first = Some(self.diags.len());
                self.diags.push(d);
            }
        }
        self.weight_sum.count += p.weight_sum.count;
        self.duplicate_link.count += p.duplicate_link.count;
        self.saw_content |= p.saw_content;
        self.saw_links |= p.saw_links;
        if let Some(t) = self.out.triangles.as_mut() {
            let materials: Vec<u32> = p
                .tris
                .materials
                .into_iter()
                .map(|m| match t.materials.get_index_of(&m) {
                    Some(i) => i as u32,
                    None => t.materials.insert_full(m).0 as u32,
                })
                .collect();
            let mut run = TriangleRun {
                triangles: p.tris.triangles,
                vertices: p.tris.vertices,
                links: p.tris.links,
            };
            for tri in &mut run.triangles {
                tri.material = materials.get(tri.material as usize).copied().unwrap_or(0);
            }
            // the piece becomes the last run (this thread reads on into it, in file order);
            // the run before it joins the earlier ones, unless it is empty
            let before = TriangleRun {
                triangles: std::mem::replace(&mut t.triangles, run.triangles),
                vertices: std::mem::replace(&mut t.vertices, run.vertices),
                links: std::mem::replace(&mut t.links, run.links),
            };
            if !before.triangles.is_empty() || !before.links.is_empty() {
                t.runs.push(before);
            }
            // the lines seen index the run before: the piece's vertices are not there
            self.seen.clear();
        }
        p.closed_at
    }

    fn line(&mut self, line: Span) {
        // Fast paths for the lines that make up nearly all of a file: a vertex line of nine
        // numbers inside a triangle, a bone line of seven numbers inside an open frame. Each is
        // taken only when the general path would accept the line without a word (same tokens,
        // same values, known bone); anything else goes the general way.
        #[cfg(test)]
        let fast = !tests::GENERAL_ONLY.with(std::cell::Cell::get);
        #[cfg(not(test))]
        let fast = true;
        let done = fast
            && match (self.state, self.frame) {
                (State::In(Section::Triangles, _), _) if self.pending.is_some() => {
                    self.shared_vertex_line(line)
                }
                (State::In(Section::Skeleton, _), FrameState::Open) => self.fast_bone_line(line),
                _ => false,
            };
        if done {
            return;
        }
        match self.state {
            State::In(Section::Triangles, kw) => self.triangle_line(line, kw),
            state => {
                let comment = lex_line(self.text(line.start, line.end), line.start, &mut self.toks);
                if self.toks.is_empty() {
                    return;
                }
                self.comment = comment;
                self.saw_content = true;
                match state {
                    State::Top => self.top_line(line),
                    State::Skip(_) => {
                        if self.is_word(0, "end") {
                            self.state = State::Top;
                        }
                    }
                    State::In(Section::Nodes, kw) => self.node_line(line, kw),
                    State::In(Section::Skeleton, kw) => self.frame_line(line, kw, false),
                    State::In(Section::VertexAnimation, kw) => self.frame_line(line, kw, true),
                    State::In(Section::Triangles, _) => {}
                }
            }
        }
    }

    /// See [`Parser::line`]: `bone x y z rx ry rz` in an open frame. A line whose text this
    /// path read before (a bone that holds still over several frames: 58% of the bone lines of
    /// the Half-Life corpus) is not read again: its pose is the earlier line's, at its own line.
    fn fast_bone_line(&mut self, line: Span) -> bool {
        let text = self
            .src
            .as_bytes()
            .get(line.start as usize..line.end as usize)
            .unwrap_or(&[]);
        let sharing = self.pose_sharing.on();
        let key = if sharing {
            xxhash_rust::xxh3::xxh3_64(text)
        } else {
            0
        };
        let earlier = match self.seen_poses.get(&key) {
            Some(&(f, k)) if sharing => self
                .out
                .skeleton
                .as_ref()
                .and_then(|s| s.frames.get(f as usize))
                .and_then(|f| f.bones.get(k as usize))
                .copied()
                .filter(|p| {
                    self.src
                        .as_bytes()
                        .get(p.line.start as usize..p.line.end as usize)
                        == Some(text)
                }),
            _ => None,
        };
        let (pose, new) = match earlier {
            Some(p) => {
                self.pose_sharing.hits += 1;
                (BonePose { line, ..p }, false)
            }
            None => {
                let Some((bone, _, v)) =
                    plain_numbers::<6>(self.src, line.start as usize, line.end as usize)
                else {
                    return false;
                };
                if !self.bone_known(bone) {
                    return false;
                }
                let pose = BonePose {
                    bone,
                    pos: [v[0], v[1], v[2]],
                    rot: [v[3], v[4], v[5]],
                    line,
                };
                (pose, true)
            }
        };
        let Some(frames) = self.out.skeleton.as_mut().map(|s| &mut s.frames) else {
            return false;
        };
        let f = frames.len().saturating_sub(1);
        let Some(frame) = frames.last_mut() else {
            return false;
        };
        frame.bones.push(pose);
        let k = frame.bones.len() - 1;
        self.saw_content = true;
        if sharing && new {
            if self.pose_sharing.missed() {
                if self.seen_poses.is_empty() {
                    // about one distinct line in two of the rest of the file (~40 bytes a
                    // line), within reason: growing the table step by step costs more
                    let rest = self.src.len().saturating_sub(line.start as usize);
                    self.seen_poses.reserve((rest / 80).min(1 << 16));
                }
                self.seen_poses.insert(key, (f as u32, k as u32));
            } else {
                self.seen_poses = HashMap::default();
            }
        }
        true
    }

    /// [`Parser::fast_vertex_line`], but a line whose text was read before in this run for a
    /// triangle of the same material, cleanly (no diagnostic, not even a repeated warning), is
    /// not read again: the corner takes the vertex read then (see [`TrianglesSection`]).
    fn shared_vertex_line(&mut self, line: Span) -> bool {
        let Some(material) = self
            .pending
            .map(|p| p.material)
            .filter(|_| self.sharing.on())
        else {
            return self.fast_vertex_line(line);
        };
        let text = self
            .src
            .as_bytes()
            .get(line.start as usize..line.end as usize)
            .unwrap_or(&[]);
        let key = (xxhash_rust::xxh3::xxh3_64(text), material);
        if let Some(&i) = self.seen.get(&key) {
            let earlier = self
                .out
                .triangles
                .as_ref()
                .and_then(|t| t.vertices.get(i as usize))
                .map(|v| v.line);
            let same = earlier.is_some_and(|l| {
                self.src.as_bytes().get(l.start as usize..l.end as usize) == Some(text)
            });
            if same {
                self.sharing.hits += 1;
                self.corner(i, line.start, true);
                return true;
            }
            // another text with the same hash: read as it is, not shared
            return self.fast_vertex_line(line);
        }
        let before = (
            self.diags.len(),
            self.weight_sum.count,
            self.duplicate_link.count,
        );
        if !self.fast_vertex_line(line) {
            return false;
        }
        let clean = before
            == (
                self.diags.len(),
                self.weight_sum.count,
                self.duplicate_link.count,
            );
        if clean {
            if self.sharing.missed() {
                if let Some(n) = self.out.triangles.as_ref().map(|t| t.vertices.len()) {
                    if n > 0 {
                        self.seen.insert(key, n as u32 - 1);
                    }
                }
            } else {
                self.seen = HashMap::default();
            }
        }
        true
    }

    /// See [`Parser::line`]: `bone x y z nx ny nz u v [count bone weight …]` in a triangle,
    /// when every value is valid; any problem (the general path reports it) returns `false`.
    fn fast_vertex_line(&mut self, line: Span) -> bool {
        // The rigid line (nine numbers, no links: every GoldSrc vertex) in one pass, as bone
        // lines are read; a line with links is split into numbers first. Once a line had
        // links, the file is taken to have them (Source exporters write them on every line)
        // and the one-pass attempt is no longer made.
        if !self.saw_links {
            if let Some((bone, _, v)) =
                plain_numbers::<8>(self.src, line.start as usize, line.end as usize)
            {
                if !self.bone_known(bone) {
                    return false;
                }
                self.saw_content = true;
                self.add_vertex(rigid_vertex(line, bone, v), true);
                return true;
            }
        }
        self.split_vertex_line(line)
    }

    /// [`Parser::fast_vertex_line`] for a line with links: split into numbers, then read.
    #[inline(never)]
    fn split_vertex_line(&mut self, line: Span) -> bool {
        let mut nums = std::mem::take(&mut self.nums);
        let done = plain_line(self.src, line.start as usize, line.end as usize, &mut nums)
            && self.fast_vertex(line, &nums);
        self.saw_links |= nums.len() > 9;
        self.nums = nums;
        done
    }

    fn fast_vertex(&mut self, line: Span, n: &[Num]) -> bool {
        let whole = |x: &Num| -> Option<i32> {
            if x.kind != Token::Int {
                return None;
            }
            x.int
                .or_else(|| self.text(x.start, x.end).parse::<i32>().ok())
        };
        let (Some(first), Some(vals)) = (n.first(), n.get(1..9)) else {
            return false;
        };
        let Some(bone) = whole(first) else {
            return false;
        };
        if !self.bone_known(bone) {
            return false;
        }
        let mut v = rigid_vertex(
            line,
            bone,
            std::array::from_fn(|k| vals.get(k).map_or(0.0, |x| x.value)),
        );
        if let Some(tc) = n.get(9) {
            // Links: every pair valid, or the general path reports what is wrong.
            let pairs = n.get(10..).unwrap_or(&[]);
            let Some(count) = whole(tc) else { return false };
            if count < 0 || pairs.len() != 2 * count as usize {
                return false;
            }
            let mut sum = 0f32;
            for p in pairs.chunks(2) {
                let [b, w] = p else { return false };
                let Some(bone) = whole(b) else { return false };
                if !self.bone_known(bone) || !(0.0..=1.0).contains(&w.value) {
                    return false;
                }
                sum += w.value;
            }
            let Some(t) = self.out.triangles.as_mut() else {
                return false;
            };
            let first_link = t.links.len();
            let mut dup = false;
            for p in pairs.chunks(2) {
                if let [b, w] = p {
                    let bone = b
                        .int
                        .or_else(|| {
                            self.src
                                .get(b.start as usize..b.end as usize)
                                .and_then(|s| s.parse::<i32>().ok())
                        })
                        .unwrap_or(0);
                    dup |= t
                        .links
                        .get(first_link..)
                        .is_some_and(|ls| ls.iter().any(|l| l.bone == bone));
                    t.links.push(Link {
                        bone,
                        weight: w.value,
                    });
                }
            }
            if count > 0 && (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
                self.repeat_warning(RepeatKind::WeightSum, line, sum);
            }
            if dup {
                self.repeat_warning(RepeatKind::DuplicateLink, line, sum);
            }
            v.has_link_count = true;
            v.links = (first_link as u32, count as u32);
        }
        self.saw_content = true;
        self.add_vertex(v, true);
        true
    }

    fn is_word(&self, i: usize, word: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| t.kind == Token::Word && self.tok_text(*t).eq_ignore_ascii_case(word))
    }

    /// If the line is a lone section keyword (a new section while one is open), reports the
    /// open section as unclosed and handles the line at the top level.
    fn reopens_section(&mut self, line: Span, open: Section, open_kw: Span) -> bool {
        if self.toks.len() != 1 || self.toks[0].kind != Token::Word {
            return false;
        }
        if Section::from_word(self.tok_text(self.toks[0])).is_none() {
            return false;
        }
        self.unclosed(
            open,
            open_kw,
            Self::span(self.toks[0]),
            "next section starts here",
        );
        self.close_section(open);
        self.state = State::Top;
        self.top_line(line);
        true
    }

    fn unclosed(&mut self, section: Section, kw: Span, at: Span, label: &str) {
        let d = Diagnostic::new(
            Code::SmdUnclosedSection,
            format!("`{}` section is not closed by `end`", section.name()),
            at.in_file(self.file),
            label,
        )
        .with_secondary(kw.in_file(self.file), "section opened here")
        .with_note("expected a line `end` after the last line of the section");
        self.diags.push(d);
    }

    // --- top level -----------------------------------------------------------------------------

    fn top_line(&mut self, line: Span) {
        let first = self.toks[0];
        let word = self.tok_text(first);
        if first.kind == Token::Word && word.eq_ignore_ascii_case("version") {
            self.version_line(line);
            return;
        }
        if first.kind == Token::Word {
            if let Some(section) = Section::from_word(word) {
                if self.toks.len() > 1 {
                    self.value_count(
                        line,
                        self.toks.len() - 1,
                        &format!("no value after `{}`", section.name()),
                        Some(1),
                    );
                }
                self.open_section(section, Self::span(first));
                return;
            }
            if word.eq_ignore_ascii_case("end") {
                self.error(
                    Code::SmdStrayEnd,
                    "`end` outside a section",
                    Self::span(first),
                    "no section is open here",
                )
                .notes
                .push(
                    "`end` closes a `nodes`, `skeleton`, `triangles` or `vertexanimation` section"
                        .into(),
                );
                return;
            }
            let d = self.error(
                Code::SmdUnknownSection,
                format!("unknown section `{word}`"),
                Self::span(first),
                "not an SMD section",
            );
            d.notes.push(
                "expected `version`, `nodes`, `skeleton`, `triangles` or `vertexanimation`".into(),
            );
            if let Some(s) = suggest(word, &SECTION_KEYWORDS) {
                d.notes.push(format!("help: did you mean `{s}`?"));
            }
            d.notes
                .push("the lines up to the next `end` are skipped".into());
            self.state = State::Skip(Self::span(first));
            return;
        }
        self.error(Code::SmdUnexpectedLine, "unexpected line outside a section", line, "not in any section")
            .notes
            .push("expected `version 1` or a section keyword (`nodes`, `skeleton`, `triangles`, `vertexanimation`); is a section keyword or an `end` misplaced?".into());
    }

    fn version_line(&mut self, line: Span) {
        self.saw_version = true;
        if self.toks.len() != 2 {
            let extra = (self.toks.len() > 2).then_some(2);
            self.value_count(
                line,
                self.toks.len() - 1,
                "one value after `version`",
                extra,
            );
            return;
        }
        let t = self.toks[1];
        if let Some(v) = self.int(t, "the version") {
            if self.out.version.is_none() {
                self.out.version = Some((v, Self::span(t)));
            }
            if v != 1 {
                self.error(
                    Code::SmdBadVersion,
                    format!("unsupported SMD version {v}"),
                    Self::span(t),
                    "expected 1",
                )
                .notes
                .push("1 is the only SMD version; Valve's compilers stop on any other".into());
            }
        }
    }

    fn open_section(&mut self, section: Section, kw: Span) {
        let slot = Self::section_slot(section);
        if let Some(first) = self.first_keyword[slot] {
            let d = Diagnostic::new(
                Code::SmdDuplicateSection,
                format!("second `{}` section", section.name()),
                kw.in_file(self.file),
                "section repeated here",
            )
            .with_secondary(first.in_file(self.file), "first one here")
            .with_note("each section may appear once; this one is skipped up to its `end`");
            self.diags.push(d);
            self.state = State::Skip(kw);
            return;
        }
        self.first_keyword[slot] = Some(kw);
        self.state = State::In(section, kw);
        self.frame = FrameState::None;
        match section {
            Section::Nodes => {
                self.out.nodes = Some(NodesSection {
                    keyword: kw,
                    nodes: Vec::new(),
                })
            }
            Section::Skeleton => {
                self.out.skeleton = Some(SkeletonSection {
                    keyword: kw,
                    frames: Vec::new(),
                })
            }
            Section::Triangles => {
                self.out.triangles = Some(TrianglesSection {
                    keyword: kw,
                    ..TrianglesSection::default()
                });
                self.pending = None;
            }
            Section::VertexAnimation => {
                self.out.vertex_animation = Some(VertexAnimationSection {
                    keyword: kw,
                    frames: Vec::new(),
                })
            }
        }
    }

    fn close_section(&mut self, section: Section) {
        if section == Section::Nodes {
            self.check_nodes();
        }
        self.state = State::Top;
    }

    // --- nodes ---------------------------------------------------------------------------------

    fn node_line(&mut self, line: Span, kw: Span) {
        if self.is_word(0, "end") && self.toks.len() == 1 {
            self.close_section(Section::Nodes);
            return;
        }
        if self.reopens_section(line, Section::Nodes, kw) {
            return;
        }
        // An unclosed quote swallows the rest of the line: that is the mistake to report, not
        // the number of values it leaves.
        if let Some(&tn) = self.toks.iter().find(|t| t.kind == Token::UnclosedQuote) {
            self.error(
                Code::SmdBadName,
                "bone name has no closing quote",
                Self::span(tn),
                "quote opened here",
            )
            .notes
            .push("bone names are written in double quotes: `0 \"Bip01 Pelvis\" -1`".into());
            self.broken_node_line();
            return;
        }
        // `0 Bip01 L Leg -1`: an unquoted name with spaces. Say so, rather than counting values.
        let n = self.toks.len();
        if n > 3
            && self.toks[0].kind == Token::Int
            && self.toks[n - 1].kind == Token::Int
            && self.toks[1..n - 1].iter().all(|t| t.kind == Token::Word)
        {
            let at = Self::span(self.toks[1]).to(Self::span(self.toks[n - 2]));
            let name = self.text(at.start, at.end);
            self.error(
                Code::SmdBadName,
                format!("bone name `{name}` is not in double quotes"),
                at,
                "expected a quoted name",
            )
            .notes
            .push(format!(
                "write it as `\"{name}\"`; a name with spaces must be quoted"
            ));
            self.broken_node_line();
            return;
        }
        if self.toks.len() != 3 {
            let found = self.toks.len();
            self.value_count(
                line,
                found,
                "`index \"name\" parent`",
                (found > 3).then_some(3),
            );
            self.broken_node_line();
            return;
        }
        let (ti, tn, tp) = (self.toks[0], self.toks[1], self.toks[2]);
        let index = self.int(ti, "a bone index");
        let name = match tn.kind {
            Token::Quoted => Some(self.text(tn.start + 1, tn.end - 1).to_string()),
            Token::UnclosedQuote => {
                self.error(
                    Code::SmdBadName,
                    "bone name has no closing quote",
                    Self::span(tn),
                    "quote opened here",
                )
                .notes
                .push("bone names are written in double quotes: `0 \"Bip01 Pelvis\" -1`".into());
                None
            }
            _ => {
                let s = self.tok_text(tn);
                self.error(Code::SmdBadName, format!("bone name `{s}` is not in double quotes"), Self::span(tn), "expected a quoted name")
                    .notes
                    .push(format!("write it as `\"{s}\"`; Valve's compilers end the `nodes` section at a line without quotes"));
                None
            }
        };
        let parent = self.int(tp, "a parent index");
        let (Some(index), Some(name), Some(parent)) = (index, name, parent) else {
            self.broken_node_line();
            return;
        };
        let expected = self.next_bone_index();
        let nodes = match self.out.nodes.as_mut() {
            Some(n) => n,
            None => return,
        };
        let fills_gap = self
            .skipped_indices
            .iter()
            .any(|&(a, b)| (a..=b).contains(&index));
        if index != expected {
            let dup = nodes
                .nodes
                .iter()
                .find(|n| n.index == index)
                .map(|n| n.index_span);
            let file = self.file;
            if index > expected && dup.is_none() {
                self.skipped_indices.push((expected, index - 1));
            }
            let mut d = match dup {
                Some(first) => Diagnostic::new(
                    Code::SmdBoneIndexOrder,
                    format!("bone index {index} is used twice"),
                    Self::span(ti).in_file(file),
                    "duplicate index",
                )
                .with_secondary(first.in_file(file), "first used here"),
                None if index > expected => Diagnostic::new(
                    Code::SmdBoneIndexOrder,
                    format!(
                        "bone index {index} skips {}",
                        if index - 1 == expected {
                            format!("index {expected}")
                        } else {
                            format!("indices {expected} to {}", index - 1)
                        }
                    ),
                    Self::span(ti).in_file(file),
                    format!("expected {expected}"),
                ),
                None => Diagnostic::new(
                    Code::SmdBoneIndexOrder,
                    format!("bone index {index} is out of order"),
                    Self::span(ti).in_file(file),
                    format!("expected {expected}"),
                ),
            };
            d.notes
                .push("bones are numbered from 0 in the order they are listed".into());
            // A line filling a gap already reported (`0 2 1`) is the same mistake.
            if dup.is_some() || !fills_gap {
                self.diags.push(d);
            }
        }
        if let Some(nodes) = self.out.nodes.as_mut() {
            nodes.nodes.push(Node {
                index,
                name,
                parent,
                line,
                index_span: Self::span(ti),
                name_span: Self::span(tn),
                parent_span: Self::span(tp),
            });
        }
    }

    /// The index the next `nodes` line should have: one more than the largest so far.
    fn next_bone_index(&self) -> i32 {
        self.out
            .nodes
            .iter()
            .flat_map(|s| s.nodes.iter().map(|n| n.index))
            .chain(self.broken_bones.iter().copied())
            .max()
            .map_or(0, |m| m.saturating_add(1))
    }

    /// Records a `nodes` line that was reported as broken, so that its index is neither
    /// reported as missing by the next line nor as undeclared where it is used.
    fn broken_node_line(&mut self) {
        let written = self
            .toks
            .first()
            .filter(|t| t.kind == Token::Int)
            .and_then(|t| self.tok_text(*t).parse::<i32>().ok());
        let index = written.unwrap_or_else(|| self.next_bone_index());
        self.broken_bones.push(index);
    }

    /// Checks names and parents once the whole `nodes` list is known.
    fn check_nodes(&mut self) {
        let Some(section) = self.out.nodes.take() else {
            return;
        };
        let nodes = &section.nodes;
        let file = self.file;
        // Duplicate names, compared without regard to case (Source matches names that way).
        let mut by_name: std::collections::HashMap<String, usize> =
            std::collections::HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            match by_name.entry(n.name.to_lowercase()) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    let first = &nodes[*e.get()];
                    let same_case = first.name == n.name;
                    let mut d = Diagnostic::new(
                        Code::SmdDuplicateBoneName,
                        format!("bone name \"{}\" is used twice", n.name),
                        n.name_span.in_file(file),
                        "second bone with this name",
                    )
                    .with_secondary(first.name_span.in_file(file), "first bone with this name");
                    if !same_case {
                        d.notes
                            .push("bone names are matched without regard to case".into());
                    }
                    self.diags.push(d);
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
            }
        }
        // Parents: in range, not the bone itself, no cycles.
        let pos_of = |index: i32| nodes.iter().position(|n| n.index == index);
        let dense = nodes.iter().enumerate().all(|(i, n)| n.index as usize == i);
        let find = |index: i32| -> Option<usize> {
            if dense {
                (index >= 0 && (index as usize) < nodes.len()).then_some(index as usize)
            } else {
                pos_of(index)
            }
        };
        let mut parent_pos: Vec<Option<usize>> = vec![None; nodes.len()];
        let mut bad = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            if n.parent == -1 {
                continue;
            }
            if n.parent == n.index {
                self.diags.push(
                    Diagnostic::new(
                        Code::SmdParentIsSelf,
                        format!("bone \"{}\" is its own parent", n.name),
                        n.parent_span.in_file(file),
                        "the bone's own index",
                    )
                    .with_note("a root bone has parent -1"),
                );
                bad[i] = true;
                continue;
            }
            match find(n.parent) {
                Some(p) => parent_pos[i] = Some(p),
                // The parent's own line was broken and has been reported.
                None if self.broken_bones.contains(&n.parent) => {}
                None => {
                    let set = BoneSet::from_nodes(nodes, &self.broken_bones);
                    self.diags.push(
                        Diagnostic::new(
                            Code::SmdParentOutOfRange,
                            format!("parent {} of bone \"{}\" is not a bone", n.parent, n.name),
                            n.parent_span.in_file(file),
                            "no bone has this index",
                        )
                        .with_note(format!("{}; a root bone has parent -1", set.describe())),
                    );
                    bad[i] = true;
                }
            }
        }
        // Cycle detection: walk up from each bone; colour 0 = new, 1 = on the current path, 2 = done.
        let mut colour = vec![0u8; nodes.len()];
        for start in 0..nodes.len() {
            let mut path = Vec::new();
            let mut cur = Some(start);
            while let Some(c) = cur {
                if colour[c] == 2 {
                    break;
                }
                if colour[c] == 1 {
                    // `c` is on the path: the cycle is path[from..].
                    let from = path.iter().position(|&x| x == c).unwrap_or(0);
                    let cycle = &path[from..];
                    let names: Vec<String> = cycle
                        .iter()
                        .map(|&k: &usize| format!("\"{}\"", nodes[k].name))
                        .collect();
                    let first = cycle.iter().copied().min().unwrap_or(c);
                    self.diags.push(
                        Diagnostic::new(
                            Code::SmdParentCycle,
                            format!(
                                "bone parents form a cycle: {} -> {}",
                                names.join(" -> "),
                                names.first().cloned().unwrap_or_default()
                            ),
                            nodes[first].parent_span.in_file(file),
                            "this parent closes the cycle",
                        )
                        .with_note(
                            "following parents from any bone must end at a root (parent -1)",
                        ),
                    );
                    for &k in cycle {
                        bad[k] = true;
                    }
                    break;
                }
                colour[c] = 1;
                path.push(c);
                cur = parent_pos[c];
            }
            for &k in &path {
                colour[k] = 2;
            }
        }
        for (i, n) in nodes.iter().enumerate() {
            if let Some(p) = parent_pos[i] {
                if p > i && !bad[i] {
                    self.diags.push(
                        Diagnostic::new(
                            Code::SmdParentAfterChild,
                            format!("bone \"{}\" is listed before its parent \"{}\"", n.name, nodes[p].name),
                            n.parent_span.in_file(file),
                            "parent listed later",
                        )
                        .with_secondary(nodes[p].line.in_file(file), "parent listed here")
                        .with_note("Valve's compilers expect parents before children; the Source compiler makes such a bone a root"),
                    );
                }
            }
        }
        self.bones = Some(BoneSet::from_nodes(nodes, &self.broken_bones));
        self.out.nodes = Some(section);
    }

    // --- skeleton and vertexanimation ----------------------------------------------------------

    fn frame_line(&mut self, line: Span, kw: Span, vta: bool) {
        let section = if vta {
            Section::VertexAnimation
        } else {
            Section::Skeleton
        };
        if self.is_word(0, "end") && self.toks.len() == 1 {
            self.close_section(section);
            return;
        }
        if self.reopens_section(line, section, kw) {
            return;
        }
        if self.is_word(0, "time") {
            self.time_line(line, vta);
            return;
        }
        // A data line.
        let keep = match self.frame {
            FrameState::Open => true,
            FrameState::Poisoned | FrameState::Reported => false,
            FrameState::None => {
                self.error(
                    Code::SmdFrameLineBeforeTime,
                    "frame line before any `time` line",
                    line,
                    "no frame is open",
                )
                .notes
                .push(format!(
                    "expected `time 0` before the first {} line",
                    if vta { "vertex" } else { "bone" }
                ));
                self.frame = FrameState::Reported;
                false
            }
        };
        if self.toks.len() != 7 {
            let found = self.toks.len();
            self.value_count(
                line,
                found,
                if vta {
                    "7 values: `index x y z nx ny nz`"
                } else {
                    "7 values: `bone x y z rx ry rz`"
                },
                (found > 7).then_some(7),
            );
            return;
        }
        let t0 = self.toks[0];
        let what = if vta {
            "a vertex index"
        } else {
            "a bone index"
        };
        let first = self.int(t0, what);
        let mut vals = [0f32; 6];
        let mut ok = first.is_some();
        for (k, v) in vals.iter_mut().enumerate() {
            let t = self.toks[k + 1];
            let what = if k < 3 {
                "a position"
            } else if vta {
                "a normal"
            } else {
                "a rotation"
            };
            match self.float(t, what) {
                Some(x) => *v = x,
                None => ok = false,
            }
        }
        let Some(first) = first else { return };
        if vta {
            if first < 0 {
                self.error(
                    Code::SmdNegativeVertexIndex,
                    format!("negative vertex index {first}"),
                    Self::span(t0),
                    "negative",
                )
                .notes
                .push("vertex indices count triangle corners of the reference mesh from 0".into());
                return;
            }
            if ok && keep {
                let d = VertexDelta {
                    index: first as u32,
                    pos: [vals[0], vals[1], vals[2]],
                    normal: [vals[3], vals[4], vals[5]],
                    line,
                };
                if let Some(f) = self
                    .out
                    .vertex_animation
                    .as_mut()
                    .and_then(|s| s.frames.last_mut())
                {
                    f.vertices.push(d);
                }
            }
        } else {
            if !self.bone_known(first) {
                self.unknown_bone(Code::SmdUnknownBone, "bone", first, t0);
                return;
            }
            if ok && keep {
                let pose = BonePose {
                    bone: first,
                    pos: [vals[0], vals[1], vals[2]],
                    rot: [vals[3], vals[4], vals[5]],
                    line,
                };
                if let Some(f) = self.out.skeleton.as_mut().and_then(|s| s.frames.last_mut()) {
                    f.bones.push(pose);
                }
            }
        }
    }

    fn time_line(&mut self, line: Span, vta: bool) {
        // `time N`, optionally followed by a comment (already dropped by the lexer).
        let comment = self.comment.map(|c| {
            self.text(c.start, c.end)
                .trim_start_matches(['#', ';', '/'])
                .trim()
                .to_string()
        });
        if self.toks.len() != 2 {
            let found = self.toks.len() - 1;
            self.value_count(
                line,
                found + 1,
                "`time` and a frame number",
                (found > 1).then_some(2),
            );
            self.frame = FrameState::Poisoned;
            return;
        }
        let t = self.toks[1];
        let Some(time) = self.int(t, "a frame number") else {
            self.frame = FrameState::Poisoned;
            return;
        };
        // A negative `time` in a `skeleton` section is kept: Valve's HL1 compiler reads past it
        // (the frame is outside the 0..2047 it stores), Valve's Source compiler refuses it; the
        // build decides (`ir::build`). A vertex animation frame is an index: never negative.
        if time < 0 && vta {
            self.error(
                Code::SmdNegativeFrame,
                format!("negative frame number {time}"),
                Self::span(t),
                "negative",
            )
            .notes
            .push("vertex animation frames are numbered from 0".into());
            self.frame = FrameState::Poisoned;
            return;
        }
        self.frame = FrameState::Open;
        let time_span = Self::span(t);
        if vta {
            if let Some(s) = self.out.vertex_animation.as_mut() {
                s.frames.push(VertexFrame {
                    time,
                    time_span,
                    vertices: Vec::new(),
                });
            }
        } else if let Some(s) = self.out.skeleton.as_mut() {
            // A frame usually lists as many bones as the one before it (or as `nodes`).
            let expected = s.frames.last().map_or_else(
                || self.out.nodes.as_ref().map_or(0, |n| n.nodes.len()),
                |f| f.bones.len(),
            );
            s.frames.push(FrameBlock {
                time,
                time_span,
                comment,
                bones: Vec::with_capacity(expected),
            });
        }
    }

    // --- triangles -----------------------------------------------------------------------------

    fn triangle_line(&mut self, line: Span, kw: Span) {
        let raw = self.text(line.start, line.end);
        match self.pending {
            None => self.material_line(line, raw, kw),
            Some(_) => {
                let _ = lex_line(raw, line.start, &mut self.toks);
                self.saw_content |= !self.toks.is_empty();
                let is_end = self.toks.len() == 1 && self.is_word(0, "end");
                let looks_like_vertex = !is_end
                    && (self.toks.len() >= 7
                        || (self.toks.len() > 1 && self.toks[0].kind == Token::Int));
                if !looks_like_vertex && !self.toks.is_empty() {
                    // The triangle ended early: report it once, then read this line as what it is.
                    self.incomplete_triangle(Some(line));
                    self.material_line(line, raw, kw);
                    return;
                }
                self.vertex_line(line);
            }
        }
    }

    fn incomplete_triangle(&mut self, next: Option<Span>) {
        let Some(p) = self.pending.take() else { return };
        let mut d = Diagnostic::new(
            Code::SmdIncompleteTriangle,
            format!(
                "triangle has {} vertex line{}",
                p.count,
                if p.count == 1 { "" } else { "s" }
            ),
            p.material_span.in_file(self.file),
            "triangle starts here",
        )
        .with_note("a triangle is a material line followed by exactly three vertex lines");
        if let Some(n) = next {
            d = d.with_secondary(n.in_file(self.file), "this line is not a vertex");
        }
        self.diags.push(d);
    }

    fn material_line(&mut self, line: Span, raw: &str, kw: Span) {
        let trimmed = raw.trim();
        if trimmed.eq_ignore_ascii_case("end") {
            self.close_section(Section::Triangles);
            return;
        }
        // Exact spans of the trimmed name.
        let lead = (raw.len() - raw.trim_start().len()) as u32;
        let span = Span::new(line.start + lead, line.start + lead + trimmed.len() as u32);
        if !trimmed.is_empty() {
            self.saw_content = true;
            // A lone section keyword where a material is due: the `end` was forgotten.
            if Section::from_word(trimmed).is_some_and(|s| s != Section::Triangles) {
                self.toks.clear();
                let _ = lex_line(raw, line.start, &mut self.toks);
                if self.reopens_section(line, Section::Triangles, kw) {
                    return;
                }
            }
            // A vertex line where a material is due: the previous triangle had a fourth vertex.
            // (Only a line starting like a number can be one; most material lines are not lexed.)
            let numeric_start = trimmed
                .as_bytes()
                .first()
                .is_some_and(|c| c.is_ascii_digit() || *c == b'-' || *c == b'+');
            if numeric_start {
                let _ = lex_line(raw, line.start, &mut self.toks);
            } else {
                self.toks.clear();
            }
            if self.toks.len() >= 9
                && self.toks[0].kind == Token::Int
                && self.toks[1..9]
                    .iter()
                    .all(|t| matches!(t.kind, Token::Int | Token::Float))
            {
                self.error(Code::SmdExtraVertex, "vertex line where a material name is expected", line, "a fourth vertex line")
                    .notes
                    .push("a triangle is a material line followed by exactly three vertex lines; this line is skipped".into());
                return;
            }
        }
        let (material, drop) = if trimmed.is_empty() {
            self.error(Code::SmdEmptyMaterial, "triangle with an empty material name", Span::new(line.start, line.end), "blank material line")
                .notes
                .push("the triangle is dropped, as Valve's compilers do; its three vertex lines are still read".into());
            (0, true)
        } else {
            let tris = match self.out.triangles.as_mut() {
                Some(t) => t,
                None => return,
            };
            let i = match tris.materials.get_index_of(trimmed) {
                Some(i) => i,
                None => tris.materials.insert_full(trimmed.to_string()).0,
            };
            (i as u32, false)
        };
        self.pending = Some(PendingTriangle {
            material,
            material_span: span,
            count: 0,
            vertices: [0; 3],
            lines: [0; 3],
            drop,
        });
    }

    fn vertex_line(&mut self, line: Span) {
        let n = self.toks.len();
        let mut ok = true;
        if n < 9 {
            self.value_count(
                line,
                n,
                "at least 9 values: `bone x y z nx ny nz u v`",
                None,
            );
            ok = false;
        }
        let mut v = Vertex {
            line,
            ..Vertex::default()
        };
        if ok {
            let t0 = self.toks[0];
            match self.int(t0, "a bone index") {
                Some(b) if self.bone_known(b) => v.bone = b,
                Some(b) => {
                    self.unknown_bone(Code::SmdVertexBoneOutOfRange, "vertex bone", b, t0);
                    ok = false;
                }
                None => ok = false,
            }
            let mut vals = [0f32; 8];
            for (k, val) in vals.iter_mut().enumerate() {
                let what = match k {
                    0..=2 => "a position",
                    3..=5 => "a normal",
                    _ => "a texture coordinate",
                };
                match self.float(self.toks[k + 1], what) {
                    Some(x) => *val = x,
                    None => ok = false,
                }
            }
            v.pos = [vals[0], vals[1], vals[2]];
            v.normal = [vals[3], vals[4], vals[5]];
            v.uv = [vals[6], vals[7]];
            if n > 9 {
                v.has_link_count = true;
                ok &= self.links(&mut v);
            }
        }
        self.add_vertex(v, ok);
    }

    /// A vertex line read (`ok`: without error): the pending triangle's next vertex; the
    /// triangle is kept after its third one unless it is to be dropped.
    fn add_vertex(&mut self, v: Vertex, ok: bool) {
        let line = v.line.start;
        let index = match self.out.triangles.as_mut() {
            Some(t) if ok && self.pending.is_some() => {
                t.vertices.push(v);
                t.vertices.len() as u32 - 1
            }
            _ => 0,
        };
        self.corner(index, line, ok);
    }

    /// The pending triangle's next corner: vertex `index` of the run, its line starting at
    /// `line`.
    fn corner(&mut self, index: u32, line: u32, ok: bool) {
        if let Some(p) = self.pending.as_mut() {
            if p.count < 3 {
                p.vertices[p.count] = index;
                p.lines[p.count] = line;
            }
            p.count += 1;
            p.drop |= !ok;
            if p.count == 3 {
                let p = *p;
                self.pending = None;
                if !p.drop {
                    if let Some(t) = self.out.triangles.as_mut() {
                        t.triangles.push(Triangle {
                            material: p.material,
                            material_span: p.material_span,
                            vertices: p.vertices,
                            lines: p.lines,
                        });
                    }
                }
            }
        }
    }

    /// Reads `count bone weight …` after the nine vertex values. Returns false on an error.
    fn links(&mut self, v: &mut Vertex) -> bool {
        let tc = self.toks[9];
        let Some(count) = self.int(tc, "a link count") else {
            return false;
        };
        let pairs = self.toks.len() - 10;
        if count < 0 || pairs != 2 * count as usize {
            let (label, note) = if count < 0 {
                (
                    "negative link count".to_string(),
                    "the link count is how many `bone weight` pairs follow".to_string(),
                )
            } else {
                (
                    format!("says {count} link{}", if count == 1 { "" } else { "s" }),
                    format!(
                        "{count} link{} need {} values after the count; the line has {pairs}",
                        if count == 1 { "" } else { "s" },
                        2 * count as i64
                    ),
                )
            };
            self.error(
                Code::SmdLinkCountMismatch,
                "link count does not match the bone/weight pairs that follow",
                Self::span(tc),
                label,
            )
            .notes
            .push(note);
            return false;
        }
        let mut ok = true;
        let first = self.out.triangles.as_ref().map_or(0, |t| t.links.len());
        let mut sum = 0f32;
        let mut dup = false;
        for k in 0..count as usize {
            let tb = self.toks[10 + 2 * k];
            let tw = self.toks[11 + 2 * k];
            let bone = self.int(tb, "a link bone index");
            let weight = self.float(tw, "a weight");
            if let Some(b) = bone {
                if !self.bone_known(b) {
                    self.unknown_bone(Code::SmdLinkBoneOutOfRange, "link bone", b, tb);
                    ok = false;
                }
            }
            if let Some(w) = weight {
                if !(0.0..=1.0).contains(&w) {
                    self.error(
                        Code::SmdWeightOutOfRange,
                        format!("weight {} is outside 0..1", self.tok_text(tw)),
                        Self::span(tw),
                        "out of range",
                    )
                    .notes
                    .push("a weight is the bone's share of the vertex, from 0 to 1".into());
                    ok = false;
                }
                sum += w;
            }
            match (bone, weight, self.out.triangles.as_mut()) {
                (Some(b), Some(w), Some(t)) => {
                    dup |= t
                        .links
                        .get(first..)
                        .is_some_and(|ls| ls.iter().any(|l| l.bone == b));
                    t.links.push(Link { bone: b, weight: w });
                }
                _ => ok = false,
            }
        }
        if !ok {
            if let Some(t) = self.out.triangles.as_mut() {
                t.links.truncate(first);
            }
            return false;
        }
        if count > 0 && (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
            self.repeat_warning(RepeatKind::WeightSum, v.line, sum);
        }
        if dup {
            self.repeat_warning(RepeatKind::DuplicateLink, v.line, sum);
        }
        v.links = (first as u32, count as u32);
        true
    }

    fn repeat_warning(&mut self, kind: RepeatKind, line: Span, sum: f32) {
        let at = self.diags.len();
        let counter = match kind {
            RepeatKind::WeightSum => &mut self.weight_sum,
            RepeatKind::DuplicateLink => &mut self.duplicate_link,
        };
        counter.count += 1;
        if counter.first.is_some() {
            return;
        }
        counter.first = Some(at);
        let d = match kind {
            RepeatKind::WeightSum => Diagnostic::new(
                Code::SmdWeightSum,
                format!("vertex weights add up to {sum}, not 1"),
                line.in_file(self.file),
                "weights of this vertex",
            )
            .with_note("the weights are scaled to add up to 1"),
            RepeatKind::DuplicateLink => Diagnostic::new(
                Code::SmdDuplicateLink,
                "vertex lists the same bone in two links",
                line.in_file(self.file),
                "bone repeated in this vertex",
            )
            .with_note("the weights of the repeated bone are added together"),
        };
        self.diags.push(d);
    }

    // --- end of file ---------------------------------------------------------------------------

    fn end_of_file(&mut self) {
        // The end of the last non-blank text, so that the line shown is one the file has (not
        // the empty "line" after a final newline).
        let end = self.src.trim_end().len() as u32;
        let eof = Span::new(end, end);
        match self.state {
            State::In(section, kw) => {
                let mut note = None;
                if let Some(p) = self.pending.take() {
                    note = Some(format!(
                        "the last triangle has only {} vertex line{}",
                        p.count,
                        if p.count == 1 { "" } else { "s" }
                    ));
                }
                self.unclosed(section, kw, eof, "file ends here");
                if let (Some(n), Some(d)) = (note, self.diags.last_mut()) {
                    d.notes.push(n);
                }
                self.close_section(section);
            }
            State::Skip(kw) => {
                self.error(
                    Code::SmdUnclosedSection,
                    "skipped section is not closed by `end`",
                    eof,
                    "file ends here",
                )
                .notes
                .push("expected a line `end`".into());
                let _ = kw;
            }
            State::Top => {}
        }
        if !self.saw_content {
            let d = Diagnostic::new(Code::EmptyFile, "file has no content", eof.in_file(self.file), "file ends here")
                .with_note("an SMD file starts with `version 1` followed by `nodes`, `skeleton` and, for a mesh, `triangles`");
            self.diags.push(d);
            return;
        }
        if !self.saw_version && self.first_keyword.iter().any(Option::is_some) {
            let at = self
                .first_keyword
                .iter()
                .flatten()
                .map(|s| s.start)
                .min()
                .unwrap_or(0);
            self.diags.push(
                Diagnostic::new(
                    Code::SmdMissingVersion,
                    "no `version` line",
                    Span::new(at, at).in_file(self.file),
                    "expected `version 1` before this",
                )
                .with_note("SMD files start with `version 1`"),
            );
        }
        for (section, what) in [
            (Section::Nodes, "the bones"),
            (Section::Skeleton, "the bone poses"),
        ] {
            if self.first_keyword[Self::section_slot(section)].is_none() {
                self.diags.push(
                    Diagnostic::new(
                        Code::SmdMissingSection,
                        format!("no `{}` section", section.name()),
                        eof.in_file(self.file),
                        "file ends here",
                    )
                    .with_note(format!(
                        "every SMD file has a `{}` section listing {what}",
                        section.name()
                    )),
                );
            }
        }
        if let Some(s) = &self.out.skeleton {
            if s.frames.is_empty() && !self.diags.iter().any(|d| d.is_error()) {
                let kw = s.keyword;
                self.error(
                    Code::SmdNoFrames,
                    "`skeleton` has no frame",
                    kw,
                    "empty section",
                )
                .notes
                .push("expected `time 0` followed by one line per bone".into());
            }
        }
        for counter in [&self.weight_sum, &self.duplicate_link] {
            if let Some(i) = counter.first {
                if counter.count > 1 {
                    let more = counter.count - 1;
                    if let Some(d) = self.diags.get_mut(i) {
                        d.notes.push(format!(
                            "{more} more vertex line{} in this file {} the same",
                            if more == 1 { "" } else { "s" },
                            if more == 1 { "does" } else { "do" }
                        ));
                    }
                }
            }
        }
    }

    fn finish(self) -> Parsed {
        Parsed {
            smd: self.out,
            diagnostics: self.diags,
        }
    }
}

#[derive(Clone, Copy)]
enum RepeatKind {
    WeightSum,
    DuplicateLink,
}

pub use crate::suggest::{edit_distance, suggest};

#[cfg(test)]
mod newline_tests {
    use super::find_newline;

    #[test]
    fn find_newline_is_the_first_line_feed() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 40) as usize;
            // Bytes around `\n` (0x0A), including 0x0B and 0x8A, and high bytes.
            let text: Vec<u8> = (0..len)
                .map(|k| {
                    [b'\n', 0x0B, 0x09, 0x8A, b'1', 0xFF, b' ', 0x00]
                        [(state >> (k % 21 * 3)) as usize % 8]
                })
                .collect();
            for from in 0..=len + 1 {
                let want = text
                    .get(from..)
                    .and_then(|r| r.iter().position(|&c| c == b'\n'))
                    .map(|i| from + i);
                assert_eq!(find_newline(&text, from), want, "{text:?} from {from}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Turns the fast paths of [`Parser::line`] off (on this thread).
        pub(super) static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Pieces of a `triangles` section read on other threads and taken (on this thread).
        pub(super) static PIECES_TAKEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// `parse` and the reading in pieces on `threads` threads (every `triangles` section long
    /// enough), and how many pieces were taken.
    fn split_ways(text: &str, threads: usize) -> (Parsed, Parsed, usize) {
        let one = joined(parse_with(text, FileId(0), 1, usize::MAX));
        PIECES_TAKEN.with(|c| c.set(0));
        let mut split = parse_with(text, FileId(0), threads, 0);
        let taken = PIECES_TAKEN.with(std::cell::Cell::get);
        // the same triangles, in runs or not
        if let Some(t) = split.smd.triangles.as_mut() {
            assert!(
                t.runs.len() <= taken,
                "{} runs from {taken} pieces",
                t.runs.len()
            );
            *t = t.joined();
        }
        (one, split, taken)
    }

    /// A mesh of `n` triangles: three materials met in a changing order, vertices with 0 to 3
    /// links, a weight sum off at every `off`th triangle from the 3rd and a bone twice at
    /// every `dup`th from the 1st (repeated warnings met in several pieces).
    fn mesh_text(n: usize, off: usize, dup: usize) -> String {
        let mut s = String::from(
            "version 1\nnodes\n0 \"a\" -1\n1 \"b\" 0\n2 \"c\" 1\nend\nskeleton\ntime 0\n\
             0 0 0 0 0 0 0\n1 0 0 1 0 0 0\n2 0 0 2 0 0 0\nend\ntriangles\n",
        );
        for t in 0..n {
            let m = ["skin", "eyes", "metal"][(t * t / 7) % 3];
            s.push_str(m);
            s.push('\n');
            for k in 0..3 {
                let x = (t * 3 + k) as f32 * 0.25;
                let links = match (t, k) {
                    _ if t % off == 3 && k == 1 => "2 0 0.5 1 0.6".to_string(),
                    _ if t % dup == 1 && k == 2 => "2 1 0.5 1 0.5".to_string(),
                    _ => match (t + k) % 4 {
                        0 => String::new(),
                        1 => " 0".to_string(),
                        2 => " 1 2 1.000000".to_string(),
                        _ => " 3 0 0.2 1 0.3 2 0.5".to_string(),
                    },
                };
                let links = if links.starts_with(' ') || links.is_empty() {
                    links
                } else {
                    format!(" {links}")
                };
                s.push_str(&format!(
                    "{} {x:.6} {:.6} 1.000000 0.000000 0.000000 1.000000 0.500000 0.250000{links}\n",
                    k,
                    -x
                ));
            }
        }
        s.push_str("end\n");
        s
    }

    /// [`stream::parse_streamed_with`] fed `text` in blocks of `block` bytes.
    fn streamed(text: &[u8], block: usize, window: usize, threads: usize) -> Option<Parsed> {
        let read = |sink: &mut dyn FnMut(&[u8]) -> bool| -> bool {
            text.chunks(block.max(1)).all(&mut *sink)
        };
        stream::parse_streamed_with(&read, FileId(0), threads, window)
    }

    /// A strip of `n` triangles over a row of vertices, each vertex line written again for
    /// every triangle that uses it (as exporters write shared vertices).
    fn strip_text(n: usize) -> String {
        let mut s = String::from(
            "version 1\nnodes\n0 \"a\" -1\n1 \"b\" 0\nend\nskeleton\ntime 0\n\
             0 0 0 0 0 0 0\n1 0 0 1 0 0 0\nend\ntriangles\n",
        );
        let v = |i: usize| format!("0 {i} {} 0 0 0 1 0.5 0.5 2 0 0.5 1 0.5\n", i % 2);
        for t in 0..n {
            s.push_str(if t % 5 == 0 { "metal\n" } else { "skin\n" });
            for k in 0..3 {
                s.push_str(&v(t + k));
            }
        }
        s.push_str("end\n");
        s
    }

    #[test]
    fn streamed_reading_is_the_whole_reading_or_none() {
        let mesh = mesh_text(300, 17, 23);
        let strip = strip_text(400);
        let mut must: Vec<(&str, Vec<u8>)> = vec![
            ("mesh", mesh.clone().into_bytes()),
            ("strip", strip.clone().into_bytes()),
            ("crlf", mesh.replace('\n', "\r\n").into_bytes()),
            (
                "blank lines after end",
                format!("{strip}\n  \n\t\n").into_bytes(),
            ),
        ];
        let mut never: Vec<(&str, Vec<u8>)> = vec![
            ("no end", mesh.trim_end_matches("end\n").as_bytes().to_vec()),
            (
                "a section after the triangles",
                format!("{mesh}skeleton\ntime 0\n0 0 0 0 0 0 0\nend\n").into_bytes(),
            ),
            ("a broken line", mutate(&mesh, 150, "0 1 2").into_bytes()),
            (
                "an extra line",
                mutate(&strip, 301, "skin\nskin").into_bytes(),
            ),
            (
                "a comment after end",
                format!("{strip}// done\n").into_bytes(),
            ),
            (
                "no triangles",
                mesh.as_bytes()[..mesh.find("triangles").unwrap()].to_vec(),
            ),
            // (far more than the first head read: a second frame ends the try)
            (
                "an animation",
                format!(
                    "version 1\nnodes\n0 \"a\" -1\nend\nskeleton\n{}end\n",
                    (0..100_000)
                        .map(|f| format!("time {f}\n0 {f} 0 0 0 0 0\n"))
                        .collect::<String>()
                )
                .into_bytes(),
            ),
        ];
        let mut nul = mesh.clone().into_bytes();
        let at = nul.len() / 2;
        nul[at] = 0;
        never.push(("a NUL", nul));
        let mut latin = strip.clone().into_bytes();
        let at = latin.len() / 3;
        latin[at] = 0xE9;
        never.push(("not UTF-8", latin));
        // the same text whole and streamed, or no streamed reading at all
        for (name, text) in must.iter_mut().chain(never.iter_mut()) {
            let whole = std::str::from_utf8(text)
                .ok()
                .filter(|t| !t.contains('\0'))
                .map(|t| joined(parse(t, FileId(0))));
            for (block, window, threads) in
                [(1, 300, 1), (7, 1000, 2), (4096, 5000, 3), (1 << 20, 64, 2)]
            {
                if let Some(s) = streamed(text, block, window, threads) {
                    assert_eq!(
                        Some(joined(s)),
                        whole,
                        "{name}: block {block}, window {window}"
                    );
                }
            }
        }
        for (name, text) in &must {
            for (block, window, threads) in
                [(1, 300, 1), (7, 1000, 2), (4096, 5000, 3), (1 << 20, 64, 2)]
            {
                assert!(
                    streamed(text, block, window, threads).is_some(),
                    "{name}: block {block}, window {window}"
                );
            }
        }
        for (name, text) in &never {
            for (block, window, threads) in [(1, 300, 1), (4096, 5000, 3)] {
                assert!(
                    streamed(text, block, window, threads).is_none(),
                    "{name}: block {block}, window {window}"
                );
            }
        }
        // an animation is given up on after the first head read (1 MB), not read on
        let anim = &never.iter().find(|c| c.0 == "an animation").unwrap().1;
        let read_bytes = std::cell::Cell::new(0usize);
        let read = |sink: &mut dyn FnMut(&[u8]) -> bool| -> bool {
            anim.chunks(4096).all(|b| {
                read_bytes.set(read_bytes.get() + b.len());
                sink(b)
            })
        };
        assert!(anim.len() > 2 << 20);
        assert!(stream::parse_streamed_with(&read, FileId(0), 2, 5000).is_none());
        assert!(read_bytes.get() <= (1 << 20) + 4096, "{}", read_bytes.get());
        // many windows, each a run
        let s = streamed(mesh.as_bytes(), 4096, 300, 2).unwrap();
        let runs = s.smd.triangles.unwrap().runs.len();
        assert!(runs > 50, "{runs} runs");
        // a file that changes between the two readings (the head read first, then another)
        let calls = std::cell::Cell::new(0);
        let other = strip.replace("time 0", "time 1");
        let read = |sink: &mut dyn FnMut(&[u8]) -> bool| -> bool {
            calls.set(calls.get() + 1);
            let t = if calls.get() == 1 { &strip } else { &other };
            t.as_bytes().chunks(100).all(&mut *sink)
        };
        assert!(stream::parse_streamed_with(&read, FileId(0), 2, 500).is_none());
    }

    /// Replaces line `at` of the `triangles` section (0: the first material line) by `with`
    /// (several lines, or none).
    fn mutate(text: &str, at: usize, with: &str) -> String {
        let start = text
            .find("triangles\n")
            .map_or(0, |i| i + "triangles\n".len());
        let mut lines: Vec<&str> = text[start..].split_inclusive('\n').collect();
        if at < lines.len() {
            lines[at] = with;
        }
        format!("{}{}", &text[..start], lines.concat())
    }

    #[test]
    fn reading_in_pieces_is_reading_in_one() {
        let n = 60;
        let base = mesh_text(n, 23, 5);
        // clean: pieces are taken, on any number of threads
        for threads in [1, 2, 3, 4, 7, 16] {
            let (one, split, taken) = split_ways(&base, threads);
            assert!(one == split, "{threads} threads");
            assert!(taken > 0, "{threads} threads: no piece taken");
            assert_eq!(
                one.smd.triangles.as_ref().map(|t| t.triangles.len()),
                Some(n)
            );
        }
        // every kind of problem, at the start, in the middle and at the end of the section:
        // what one reading reports, and the same tree
        let m = 4 * n;
        let mut cases: Vec<String> = Vec::new();
        for at in [0, 1, 2, 3, 4, 5, m / 3, m / 2 + 1, m / 2 + 2, m - 4, m - 1] {
            for with in [
                "\n",
                "0 1 2 3 4 5 6 7 8\n0 1 2 3 4 5 6 7 8\n",
                "",
                "0 1 2 x 4 5 6 7 8\n",
                "9 1 2 3 4 5 6 7 8\n",
                "0 1 2 3 4 5 6 7 8 2 0 0.5\n",
                "skin\n",
                "nodes\n",
                "end\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\n",
                "end\n",
                "// a comment\n",
                "0 1 2 3 4 5 6 7 8 // a comment\n",
                "   \t\n",
            ] {
                cases.push(mutate(&base, at, with));
            }
        }
        cases.push(base.trim_end_matches("end\n").to_string()); // no `end`
        cases.push(base.trim_end_matches('\n').to_string()); // no last line feed
        cases.push(base.replace('\n', "\r\n")); // CRLF
        cases.push(base.replace("end\n", "end\ntriangles\nskin\nend\n")); // a second section
        cases.push(mutate(&base, m - 1, "")); // the last triangle open at the end of the file
        for (i, text) in cases.iter().enumerate() {
            for threads in [1, 2, 3, 5] {
                let (one, split, _) = split_ways(text, threads);
                assert!(
                    one == split,
                    "case {i}, {threads} threads:\n{one:#?}\n{split:#?}"
                );
            }
        }
        // the corpus (under CI it must be there)
        let mut files = Vec::new();
        smd_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
            &mut files,
        );
        assert!(
            !files.is_empty() || std::env::var("CI").is_err(),
            "../shared/corpus is missing"
        );
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let (one, split, _) = split_ways(&text, 3);
            assert!(one == split, "{} reads differently in pieces", f.display());
        }
    }

    /// Lowering a section read in runs, each let go as it is lowered, gives what lowering it
    /// read at once gives.
    #[test]
    fn runs_lower_as_one_section() {
        let base = mesh_text(60, 23, 5);
        let mut one_diags = Vec::new();
        let one = crate::smd::lower_smd(
            &parse_with(&base, FileId(0), 1, usize::MAX).smd,
            FileId(0),
            &mut one_diags,
        );
        for threads in [1, 2, 5] {
            let split = parse_with(&base, FileId(0), threads, 0);
            assert!(split
                .smd
                .triangles
                .as_ref()
                .is_some_and(|t| t.runs.len() > 1));
            let mut diags = Vec::new();
            let lowered = crate::smd::lower_smd_owned(split.smd, FileId(0), &mut diags);
            assert!(lowered == one, "{threads} threads");
            assert_eq!(diags, one_diags);
        }
    }

    #[test]
    fn line_feeds_are_counted() {
        for text in [
            "",
            "\n",
            "a",
            "a\nb\n\n",
            &"x\n".repeat(5000),
            &"ab\r\n".repeat(3333),
        ] {
            let want = text.bytes().filter(|&b| b == b'\n').count();
            assert_eq!(count_lines(text.as_bytes()), want);
        }
    }

    /// The fast paths and the general path, each tree joined (the fast path shares repeated
    /// vertex lines, the general path does not: joined, every corner has its own vertex and
    /// line, so the two compare corner by corner).
    fn both_ways(text: &str) -> (Parsed, Parsed) {
        let fast = joined(parse(text, FileId(0)));
        GENERAL_ONLY.with(|g| g.set(true));
        let general = joined(parse(text, FileId(0)));
        GENERAL_ONLY.with(|g| g.set(false));
        (fast, general)
    }

    /// `p` with its triangles joined ([`TrianglesSection::joined`]).
    fn joined(mut p: Parsed) -> Parsed {
        if let Some(t) = p.smd.triangles.as_mut() {
            *t = t.joined();
        }
        p
    }

    #[test]
    fn repeated_bone_lines_are_read_once_until_they_stop_repeating() {
        // a bone that holds still: its line comes again in every frame
        let mut text = String::from("version 1\nnodes\n0 \"a\" -1\n1 \"b\" 0\nend\nskeleton\n");
        for f in 0..3 {
            text.push_str(&format!("time {f}\n0 0 0 0 0 0 0\n1 {f} 2 3 0.5 0 0\n"));
        }
        text.push_str("end\n");
        let mut p = Parser::new(&text, FileId(0));
        p.run();
        assert_eq!(p.pose_sharing.hits, 2);
        let (fast, general) = both_ways(&text);
        assert_eq!(fast, general);
        // 5,000 frames whose lines never repeat, then repeats: the table is given up after
        // 4,096 lines, and every pose is still read as the general path reads it
        let mut text = String::from("version 1\nnodes\n0 \"a\" -1\nend\nskeleton\n");
        for f in 0..6000 {
            let x = if f < 5000 { f } else { f % 7 };
            text.push_str(&format!("time {f}\n0 {x} 0 0 0 0 0\n"));
        }
        text.push_str("end\n");
        let mut p = Parser::new(&text, FileId(0));
        p.run();
        assert!(!p.pose_sharing.on());
        assert!(p.seen_poses.is_empty());
        let (fast, general) = both_ways(&text);
        assert_eq!(fast, general);
    }

    #[test]
    fn repeated_vertex_lines_are_read_once_per_run_and_material() {
        // `a` twice in `m`, once in `n`; `b` with a weight sum off, twice (read both times, so
        // the warning counts both); every corner keeps its own line
        let a = "0 1 2 3 4 5 6 7 8 1 0 1";
        let b = "0 1 2 3 4 5 6 7 8 1 0 0.5";
        let text = format!(
            "version 1\nnodes\n0 \"a\" -1\nend\ntriangles\nm\n{a}\n{a}\n{b}\nm\n{b}\n{a}\n{a}\nn\n{a}\n{a}\n{a}\nend\n"
        );
        let p = parse(&text, FileId(0));
        let t = p.smd.triangles.as_ref().unwrap();
        assert_eq!(t.triangles.len(), 3);
        // `a` in m, `b`, `b` again, `a` in n
        assert_eq!(t.vertices.len(), 4);
        assert_eq!(t.triangles[0].vertices, [0, 0, 1]);
        assert_eq!(t.triangles[1].vertices, [2, 0, 0]);
        assert_eq!(t.triangles[2].vertices, [3, 3, 3]);
        let weight_sum: Vec<_> = p
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::SmdWeightSum)
            .collect();
        assert_eq!(weight_sum.len(), 1);
        assert!(
            weight_sum[0]
                .notes
                .iter()
                .any(|n| n == "1 more vertex line in this file does the same"),
            "{:?}",
            weight_sum[0].notes
        );
        // each corner's own line, as the general path reads it
        let (fast, general) = both_ways(&text);
        assert_eq!(fast, general);
        let j = fast.smd.triangles.unwrap();
        let line_of =
            |k: usize| &text[j.vertices[k].line.start as usize..j.vertices[k].line.end as usize];
        assert_eq!(line_of(4), a);
        assert_eq!(
            j.vertices[4].line.start as usize,
            text.find(&format!("m\n{b}\n{a}")).unwrap() + 2 + b.len() + 1
        );
    }

    fn smd_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                smd_files(&p, out);
            } else if p
                .extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("smd") || x.eq_ignore_ascii_case("vta"))
            {
                out.push(p);
            }
        }
    }

    /// The line reader of [`plain_numbers`] as first written (split, then `read_number`).
    /// A line of exactly `1 + N` plain numbers, split and read as the lexer and the parser would:
    /// the first an `Int` that fits an `i32` (with its span), then `N` numbers (`Int` or `Float`)
    /// that [`parse_f32`] accepts. `None` for any other line (a word, a comment, a quote, another
    /// count, a value out of range), which the general path then reads.
    fn plain_numbers_reference<const N: usize>(
        text: &str,
        base: u32,
    ) -> Option<(i32, Span, [f32; N])> {
        let b = text.as_bytes();
        let mut i = 0usize;
        let mut first = None;
        let mut vals = [0f32; N];
        let mut count = 0usize;
        loop {
            while b.get(i).is_some_and(|&c| is_blank(c)) {
                i += 1;
            }
            if i >= b.len() {
                break;
            }
            let start = i;
            while b.get(i).is_some_and(|&c| !is_blank(c)) {
                i += 1;
            }
            let tok = text.get(start..i)?;
            let (kind, value) = read_number(tok)?;
            if count == 0 {
                if kind != Token::Int {
                    return None;
                }
                let v = tok.parse::<i32>().ok()?;
                first = Some((v, Span::new(base + start as u32, base + i as u32)));
            } else {
                *vals.get_mut(count - 1)? = value?;
            }
            count += 1;
        }
        let (v, span) = first?;
        (count == N + 1).then_some((v, span, vals))
    }

    #[test]
    fn six_digits_takes_exactly_six_then_any_other_byte() {
        let word = |s: &[u8]| {
            let mut w = [b'x'; 8];
            w[..s.len()].copy_from_slice(s);
            u64::from_le_bytes(w)
        };
        for end in [b' ', b'\t', b'\r', b'\n', b'.', b'e', b'/', b':', 0, 0xFF] {
            assert_eq!(
                six_digits(word(&[b'1', b'2', b'3', b'4', b'5', b'6', end])),
                Some(123456)
            );
            assert_eq!(
                six_digits(word(&[b'0', b'0', b'0', b'0', b'0', b'9', end])),
                Some(9)
            );
            assert_eq!(
                six_digits(word(&[b'9', b'9', b'9', b'9', b'9', b'9', end])),
                Some(999999)
            );
        }
        assert_eq!(six_digits(word(b"1234567")), None);
        assert_eq!(six_digits(word(b"12345 6")), None);
        assert_eq!(six_digits(word(b"12/456 ")), None);
        assert_eq!(six_digits(word(b"12:456 ")), None);
    }

    #[test]
    fn plain_numbers_reads_as_the_reference() {
        const BYTES: &[u8] = b"0123456789-+.eE \t x#\"";
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let mut lines: Vec<String> = [
            "0 1 2 3 4 5 6",
            " 12 -0.5 +.5 1. 2e3 3 4",
            "-0 1 2 3 4 5 6",
            "+7 1 2 3 4 5 6",
            "999999999 1 2 3 4 5 6",
            "1000000000 1 2 3 4 5 6",
            "2147483647 1 2 3 4 5 6",
            "2147483648 1 2 3 4 5 6",
            "-2147483648 1 2 3 4 5 6",
            "0000000000012 1 2 3 4 5 6",
            "1 1 2 3 4 5 1e99",
            "1 1 2 3 4 5 99999999999999999999999999999999999999999",
            "1 1 2 3 4 5 1.000000059604644775390625",
            "1 . 2 3 4 5 6",
            "1 - 2 3 4 5 6",
            "1.5 1 2 3 4 5 6",
            "1 1 2 3 4 5 6 7",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..200_000 {
            let toks = 6 + next(3) as usize;
            let mut l = String::new();
            for t in 0..toks {
                if t > 0 {
                    l.push(if next(5) == 0 { '\t' } else { ' ' });
                }
                if next(6) == 0 {
                    let len = 1 + next(8) as usize;
                    for _ in 0..len {
                        l.push(char::from(BYTES[next(BYTES.len() as u64) as usize]));
                    }
                } else if next(6) == 0 {
                    // digit runs of other lengths, around six, and bytes right after them
                    for part in 0..=next(2) {
                        if part > 0 {
                            l.push('.');
                        }
                        for _ in 0..next(9) {
                            l.push(char::from(b'0' + next(10) as u8));
                        }
                        if next(3) == 0 {
                            l.push(char::from(BYTES[next(BYTES.len() as u64) as usize]));
                        }
                    }
                } else {
                    if next(2) == 0 {
                        l.push('-');
                    }
                    // (one digit before the point half the time: the one-step case)
                    let int = if next(2) == 0 {
                        next(10)
                    } else {
                        next(100_000)
                    };
                    l.push_str(&int.to_string());
                    if t > 0 && next(4) != 0 {
                        l.push('.');
                        l.push_str(&format!("{:06}", next(1_000_000)));
                    }
                }
            }
            lines.push(l);
        }
        // Each line alone (the end of the text: fractions are read a byte at a time near it),
        // and inside a file, after a line and before a line break and bytes that are not part
        // of it (fractions read a word at a time, past the line's end).
        let tails = [
            "",
            "\n",
            "\n12345678901234567890",
            "\r\n9.999999 1 2",
            "\r",
            "\n1",
        ];
        for (k, l) in lines.iter().enumerate() {
            let want =
                plain_numbers_reference::<6>(l, 7).map(|(v, s, a)| (v, s, a.map(f32::to_bits)));
            let tail = tails[k % tails.len()];
            let text = format!("0 1 2 3 4 5 6\n{l}{tail}");
            let got = plain_numbers::<6>(&text, 14, 14 + l.len())
                .map(|(v, s, a)| (v, Span::new(s.start - 7, s.end - 7), a.map(f32::to_bits)));
            assert_eq!(got, want, "{text:?}");
            let alone = plain_numbers::<6>(l, 0, l.len())
                .map(|(v, s, a)| (v, Span::new(s.start + 7, s.end + 7), a.map(f32::to_bits)));
            assert_eq!(alone, want, "{l:?}");
        }
    }

    #[test]
    fn fast_paths_read_lines_as_the_general_path_does() {
        let texts = [
            "version 1\nnodes\n0 \"a\" -1\nend\nskeleton\ntime 0\n0 1 2 3 4 5 6\n1 1 2 3 4 5 6\n0 1 2 3 4 5\n0 1 2 3 4 5 6 7\n0 1e 2 3 4 5 6\n0 1 2 3 4 5 1e99\n99999999999 1 2 3 4 5 6\n-0 -.5 +.5 1. 2e3 3 4 // c\nend\n",
            "version 1\nnodes\n0 \"a\" -1\nend\ntriangles\nm\n0 1 2 3 4 5 6 7 8\n0 1 2 3 4 5 6 7 8 1 0 1\n1 1 2 3 4 5 6 7 8\nm\n0 1 2 3 4 5 6 7\n0 1 2 3 4 5 6 7 8\n0 1 2 3 4 5 6 7 8\n0 1 2 3 4 5 6 7 8\nend\n",
            "version 1\nskeleton\n0 1 2 3 4 5 6\ntime x\n0 1 2 3 4 5 6\nend\n",
            // Links: valid, zero count, duplicate bones, sums off, and every kind of broken pair.
            "version 1\nnodes\n0 \"a\" -1\n1 \"b\" 0\nend\ntriangles\nm\n\
             0 1 2 3 4 5 6 7 8 2 0 0.25 1 0.75\n0 1 2 3 4 5 6 7 8 0\n1 1 2 3 4 5 6 7 8 2 1 0.5 1 0.5\n\
             m\n0 1 2 3 4 5 6 7 8 2 0 0.2 1 0.3\n0 1 2 3 4 5 6 7 8 1 5 1\n0 1 2 3 4 5 6 7 8 1 0 1.5\n\
             m\n0 1 2 3 4 5 6 7 8 2 0 1\n0 1 2 3 4 5 6 7 8 1.0 0 1\n0 1 2 3 4 5 6 7 8 -1\n\
             m\n0 1 2 3 4 5 6 7 8 1 0.5 1\n0 1 2 3 4 5 6 7 8 1 0 x\n0 1 2 3 4 5 6 7 8 3 0 0.1 1 0.2 0 0.3 // c\n\
             m\n0 1 2 3 4 5 6 7 8 2 0 0.5 1 0.49\n0 1 2 3 4 5 6 7 8 2 1 0.5 1 0.5\n0 1 2 3 4 5 6 7 8 99999999999 0 1\nend\n",
        ];
        for t in texts {
            let (a, b) = both_ways(t);
            assert_eq!(a, b, "{t}");
        }
        // Every SMD and VTA file of the corpus, when it is there.
        let mut files = Vec::new();
        smd_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
            &mut files,
        );
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let (a, b) = both_ways(&text);
            assert!(a == b, "{} reads differently", f.display());
        }
    }
}
