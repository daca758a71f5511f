//! The DMX container: the header line, then the elements, in the binary encodings 1–5 or the
//! `keyvalues2` text encoding.
//!
//! Binary (Valve Developer Community, "DMX/Binary"; every integer little-endian):
//! - the header `<!-- dmx encoding binary N format F V -->\n` and a NUL;
//! - from version 2 a string dictionary: a count (16 bits in versions 2 and 3, 32 bits from
//!   version 4), then that many NUL-terminated strings; an index into it is 16 bits wide up to
//!   version 4 and 32 bits in version 5 (checked on files `srctools` writes);
//! - an element count (32 bits), then each element's type, name and 16-byte id; then each
//!   element's attributes: a count (32 bits), and per attribute its name, a type byte and the
//!   value.
//!
//! Strings that are dictionary entries: element types and attribute names from version 2, element
//! names and single string values from version 4. Elsewhere strings are NUL-terminated in place
//! (string arrays always are).
//!
//! Attribute types are `DmAttributeType_t` (source-sdk-2013 `public/datamodel/dmattributetypes.h`):
//! 1 element, 2 int, 3 float, 4 bool, 5 string, 6 binary, 7 object id (16 bytes) up to binary
//! version 2 and time (32-bit ticks of 1/10,000 s) after it, 8 colour (4 bytes), 9–11 vectors of 2,
//! 3 and 4 floats, 12 angle (3 floats), 13 quaternion (4 floats), 14 matrix (16 floats); 15–28
//! arrays of the same, each a 32-bit count and the items. The change of type 7 is not in the
//! public headers (the 2013 SDK has object ids, its binary version is 2); later files use time
//! there, which `srctools` reads the same way, and a model file uses neither.
//!
//! An element value is the element's index, −1 for none, or −2 followed by an id string for an
//! element kept outside the file (read as none).

use std::collections::HashMap;

/// A parsed DMX file: its elements, the first being the root.
#[derive(Clone, Debug, Default)]
pub struct Dmx {
    /// `binary` or `keyvalues2`.
    pub encoding: String,
    pub encoding_version: u32,
    /// The format named in the header (`model`, `sfm_session`, …) and its version.
    pub format: String,
    pub format_version: u32,
    pub elements: Vec<Element>,
}

/// One element: its type (`DmeModel`, …), its name and its attributes in file order.
#[derive(Clone, Debug, Default)]
pub struct Element {
    pub ty: String,
    pub name: String,
    pub attrs: Vec<(String, Value)>,
}

/// An attribute value. Element references are indices into [`Dmx::elements`].
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Element(Option<usize>),
    Int(i32),
    Float(f32),
    Bool(bool),
    Str(String),
    /// Binary data, object ids and colours, which no schema mdlc reads needs.
    Other,
    /// Seconds (stored as ticks of 1/10,000 s in binary files).
    Time(f32),
    Vec2([f32; 2]),
    Vec3([f32; 3]),
    Vec4([f32; 4]),
    Quat([f32; 4]),
    ElementArray(Vec<Option<usize>>),
    IntArray(Vec<i32>),
    FloatArray(Vec<f32>),
    BoolArray(Vec<bool>),
    StrArray(Vec<String>),
    OtherArray,
    TimeArray(Vec<f32>),
    Vec2Array(Vec<[f32; 2]>),
    Vec3Array(Vec<[f32; 3]>),
    Vec4Array(Vec<[f32; 4]>),
    QuatArray(Vec<[f32; 4]>),
}

impl Element {
    /// The attribute called `name` (compared without regard to case, as the schema's names are
    /// written in several cases by different tools).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.attrs
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

/// Why a file could not be read: a message and the byte offset it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadError {
    pub offset: usize,
    pub message: String,
}

fn err<T>(offset: usize, message: impl Into<String>) -> Result<T, ReadError> {
    Err(ReadError {
        offset,
        message: message.into(),
    })
}

/// The header line's fields: encoding, its version, format, its version.
fn header(bytes: &[u8]) -> Result<(String, u32, String, u32, usize), ReadError> {
    let end = memchr::memchr(b'\n', bytes).unwrap_or(bytes.len().min(200));
    let line = String::from_utf8_lossy(&bytes[..end]);
    let words: Vec<&str> = line.split_whitespace().collect();
    let bad = || {
        err(
            0,
            "the first line is not a DMX header (`<!-- dmx encoding ENCODING N format FORMAT N -->`)",
        )
    };
    match words.as_slice() {
        ["<!--", "dmx", "encoding", enc, ev, "format", fmt, fv, "-->"] => {
            let (Ok(ev), Ok(fv)) = (ev.parse::<u32>(), fv.parse::<u32>()) else {
                return bad();
            };
            Ok((
                enc.to_string(),
                ev,
                fmt.to_string(),
                fv,
                (end + 1).min(bytes.len()),
            ))
        }
        _ => bad(),
    }
}

/// The header line of a DMX file (for diagnostics: its length in bytes, without the line end),
/// if the bytes start with one.
pub fn header_len(bytes: &[u8]) -> Option<usize> {
    header(bytes).ok().map(|h| h.4.saturating_sub(1))
}

/// Parses a DMX file, binary or `keyvalues2`.
pub fn parse(bytes: &[u8]) -> Result<Dmx, ReadError> {
    let (encoding, ev, format, fv, body) = header(bytes)?;
    let elements = match encoding.as_str() {
        "binary" if (1..=5).contains(&ev) => {
            // The header line is followed by the NUL that ends it as a string.
            let start = if bytes.get(body) == Some(&0) {
                body + 1
            } else {
                body
            };
            Binary {
                bytes,
                pos: start,
                version: ev,
                dict: Vec::new(),
            }
            .elements()?
        }
        "keyvalues2" => super::read::kv2::elements(bytes, body)?,
        "binary" => {
            return err(
                0,
                format!("binary DMX version {ev} is not one mdlc reads (it reads versions 1 to 5)"),
            )
        }
        _ => {
            return err(
                0,
                format!("the DMX encoding `{encoding}` is not one mdlc reads (it reads `binary` and `keyvalues2`)"),
            )
        }
    };
    if elements.is_empty() {
        return err(body, "the file holds no element");
    }
    Ok(Dmx {
        encoding,
        encoding_version: ev,
        format,
        format_version: fv,
        elements,
    })
}

struct Binary<'a> {
    bytes: &'a [u8],
    pos: usize,
    version: u32,
    dict: Vec<String>,
}

/// More items than the rest of the file could hold (each takes at least `size` bytes).
fn too_many(count: usize, size: usize, left: usize) -> bool {
    count.saturating_mul(size.max(1)) > left
}

impl Binary<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], ReadError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => err(self.pos, "the file ends in the middle of a value"),
        }
    }

    fn u8(&mut self) -> Result<u8, ReadError> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> Result<i16, ReadError> {
        let b = self.take(2)?;
        Ok(i16::from_le_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, ReadError> {
        let b = self.take(4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f32(&mut self) -> Result<f32, ReadError> {
        let b = self.take(4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn floats<const N: usize>(&mut self) -> Result<[f32; N], ReadError> {
        let mut out = [0.0; N];
        for v in &mut out {
            *v = self.f32()?;
        }
        Ok(out)
    }

    fn count(&mut self, size: usize) -> Result<usize, ReadError> {
        let at = self.pos;
        let n = self.i32()?;
        let left = self.bytes.len() - self.pos;
        match usize::try_from(n) {
            Ok(n) if !too_many(n, size, left) => Ok(n),
            _ => err(
                at,
                format!("a count of {n} does not fit in the rest of the file"),
            ),
        }
    }

    fn cstr(&mut self) -> Result<String, ReadError> {
        let at = self.pos;
        match memchr::memchr(0, &self.bytes[self.pos..]) {
            Some(n) => {
                let s = String::from_utf8_lossy(&self.bytes[at..at + n]).into_owned();
                self.pos = at + n + 1;
                Ok(s)
            }
            None => err(at, "a string is not ended before the end of the file"),
        }
    }

    /// Dictionary indices are 16 bits wide before version 5.
    fn dict_index(&mut self) -> Result<String, ReadError> {
        let at = self.pos;
        let i = if self.version >= 5 {
            self.i32()?
        } else {
            i32::from(self.i16()?)
        };
        match usize::try_from(i).ok().and_then(|i| self.dict.get(i)) {
            Some(s) => Ok(s.clone()),
            None => err(
                at,
                format!(
                    "string {i} is not in the file's dictionary of {} strings",
                    self.dict.len()
                ),
            ),
        }
    }

    /// Element types and attribute names.
    fn key(&mut self) -> Result<String, ReadError> {
        if self.version >= 2 {
            self.dict_index()
        } else {
            self.cstr()
        }
    }

    /// Element names and single string values.
    fn name(&mut self) -> Result<String, ReadError> {
        if self.version >= 4 {
            self.dict_index()
        } else {
            self.cstr()
        }
    }

    fn elements(mut self) -> Result<Vec<Element>, ReadError> {
        if self.version >= 2 {
            let n = if self.version >= 4 {
                self.count(1)?
            } else {
                let at = self.pos;
                usize::try_from(self.i16()?)
                    .or_else(|_| err(at, "the string dictionary has a negative count"))?
            };
            self.dict.reserve(n);
            for _ in 0..n {
                let s = self.cstr()?;
                self.dict.push(s);
            }
        }
        let n = self.count(17)?;
        let mut elements = Vec::with_capacity(n);
        for _ in 0..n {
            let ty = self.key()?;
            let name = self.name()?;
            self.take(16)?;
            elements.push(Element {
                ty,
                name,
                attrs: Vec::new(),
            });
        }
        for element in &mut elements {
            let count = self.count(2)?;
            let mut attrs = Vec::with_capacity(count);
            for _ in 0..count {
                let name = self.key()?;
                let at = self.pos;
                let ty = self.u8()?;
                let value = self.value(ty, at, n)?;
                attrs.push((name, value));
            }
            element.attrs = attrs;
        }
        Ok(elements)
    }

    /// An array: a 32-bit count of items of at least `size` bytes each, then the items.
    fn array<T>(
        &mut self,
        size: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, ReadError>,
    ) -> Result<Vec<T>, ReadError> {
        let c = self.count(size)?;
        (0..c).map(|_| item(self)).collect()
    }

    fn element_ref(&mut self, n: usize) -> Result<Option<usize>, ReadError> {
        let at = self.pos;
        match self.i32()? {
            -1 => Ok(None),
            -2 => {
                self.cstr()?;
                Ok(None)
            }
            i => match usize::try_from(i) {
                Ok(i) if i < n => Ok(Some(i)),
                _ => err(
                    at,
                    format!("element {i} is not one of the file's {n} elements"),
                ),
            },
        }
    }

    fn value(&mut self, ty: u8, at: usize, n: usize) -> Result<Value, ReadError> {
        let time_type = self.version >= 3;
        Ok(match ty {
            1 => Value::Element(self.element_ref(n)?),
            2 => Value::Int(self.i32()?),
            3 => Value::Float(self.f32()?),
            4 => Value::Bool(self.u8()? != 0),
            5 => Value::Str(self.name()?),
            6 => {
                let len = self.count(1)?;
                self.take(len)?;
                Value::Other
            }
            7 if time_type => Value::Time(self.i32()? as f32 / 10_000.0),
            7 => {
                self.take(16)?;
                Value::Other
            }
            8 => {
                self.take(4)?;
                Value::Other
            }
            9 => Value::Vec2(self.floats()?),
            10 | 12 => Value::Vec3(self.floats()?),
            11 => Value::Vec4(self.floats()?),
            13 => Value::Quat(self.floats()?),
            14 => {
                self.take(64)?;
                Value::Other
            }
            15 => Value::ElementArray(self.array(4, |r| r.element_ref(n))?),
            16 => Value::IntArray(self.array(4, Self::i32)?),
            17 => Value::FloatArray(self.array(4, Self::f32)?),
            18 => Value::BoolArray(self.array(1, |r| r.u8().map(|b| b != 0))?),
            19 => Value::StrArray(self.array(1, Self::cstr)?),
            20 => {
                self.array(4, |r| {
                    let len = r.count(1)?;
                    r.take(len).map(|_| ())
                })?;
                Value::OtherArray
            }
            21 if time_type => {
                Value::TimeArray(self.array(4, |r| r.i32().map(|t| t as f32 / 10_000.0))?)
            }
            21 | 22 | 28 => {
                let size = match ty {
                    21 => 16,
                    22 => 4,
                    _ => 64,
                };
                let c = self.count(size)?;
                self.take(c * size)?;
                Value::OtherArray
            }
            23 => Value::Vec2Array(self.array(8, Self::floats)?),
            24 | 26 => Value::Vec3Array(self.array(12, Self::floats)?),
            25 => Value::Vec4Array(self.array(16, Self::floats)?),
            27 => Value::QuatArray(self.array(16, Self::floats)?),
            t => return err(at, format!("attribute type {t} is not a DMX type")),
        })
    }
}

mod kv2 {
    //! The `keyvalues2` text encoding: elements written as
    //! `"Type" { "attr" "type" "value" … }`, arrays as `"attr" "type_array" [ … ]`, an element
    //! value either written in place (`"attr" "Type" { … }`) or as `"element" "id"`; `"id"
    //! "elementid" "…"` names an element for references. The first element at the top level is
    //! the root.

    use super::*;

    struct Lexer<'a> {
        text: &'a [u8],
        pos: usize,
    }

    #[derive(Debug, PartialEq)]
    enum Tok {
        Str(String),
        Open(u8),
        Close(u8),
        Comma,
    }

    impl Lexer<'_> {
        fn next(&mut self) -> Result<Option<(usize, Tok)>, ReadError> {
            loop {
                while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
                    self.pos += 1;
                }
                if self
                    .text
                    .get(self.pos..)
                    .is_some_and(|r| r.starts_with(b"//"))
                {
                    while self.pos < self.text.len() && self.text[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                    continue;
                }
                break;
            }
            let at = self.pos;
            let Some(&c) = self.text.get(at) else {
                return Ok(None);
            };
            self.pos += 1;
            let tok = match c {
                b'{' | b'[' => Tok::Open(c),
                b'}' | b']' => Tok::Close(c),
                b',' => Tok::Comma,
                b'"' => {
                    let mut s = Vec::new();
                    loop {
                        match self.text.get(self.pos) {
                            None => return err(at, "a quoted string is not closed"),
                            Some(b'"') => {
                                self.pos += 1;
                                break;
                            }
                            Some(b'\\') => {
                                let e = self.text.get(self.pos + 1).copied().unwrap_or(b'\\');
                                s.push(match e {
                                    b'n' => b'\n',
                                    b't' => b'\t',
                                    other => other,
                                });
                                self.pos += 2;
                            }
                            Some(&b) => {
                                s.push(b);
                                self.pos += 1;
                            }
                        }
                    }
                    Tok::Str(String::from_utf8_lossy(&s).into_owned())
                }
                _ => {
                    let start = at;
                    while self.pos < self.text.len()
                        && !self.text[self.pos].is_ascii_whitespace()
                        && !b"{}[],\"".contains(&self.text[self.pos])
                    {
                        self.pos += 1;
                    }
                    Tok::Str(String::from_utf8_lossy(&self.text[start..self.pos]).into_owned())
                }
            };
            Ok(Some((at, tok)))
        }

        fn expect_str(&mut self, what: &str) -> Result<(usize, String), ReadError> {
            match self.next()? {
                Some((at, Tok::Str(s))) => Ok((at, s)),
                Some((at, t)) => err(at, format!("expected {what}, found {t:?}")),
                None => err(
                    self.text.len(),
                    format!("expected {what}, found the end of the file"),
                ),
            }
        }
    }

    /// An element reference before ids are resolved.
    enum Ref {
        Index(usize),
        Id(String, usize),
    }

    /// How deep elements written in place may nest (a model needs a few dozen levels; the
    /// limit keeps a hostile file from exhausting the stack).
    const MAX_DEPTH: usize = 1000;

    struct Reader<'a> {
        lex: Lexer<'a>,
        depth: usize,
        elements: Vec<Element>,
        /// Per element: references to resolve, as (attribute, position in array or None).
        pending: Vec<(usize, usize, Option<usize>, Ref)>,
        ids: HashMap<String, usize>,
    }

    pub(super) fn elements(bytes: &[u8], start: usize) -> Result<Vec<Element>, ReadError> {
        let mut r = Reader {
            lex: Lexer {
                text: bytes,
                pos: start,
            },
            depth: 0,
            elements: Vec::new(),
            pending: Vec::new(),
            ids: HashMap::new(),
        };
        while let Some((at, t)) = r.lex.next()? {
            match t {
                Tok::Str(ty) => {
                    r.element(ty)?;
                }
                other => return err(at, format!("expected an element type, found {other:?}")),
            }
        }
        let Reader {
            mut elements,
            pending,
            ids,
            ..
        } = r;
        for (el, attr, slot, rf) in pending {
            let target = match rf {
                Ref::Index(i) => Some(i),
                Ref::Id(id, at) => match ids.get(&id) {
                    Some(&i) => Some(i),
                    None if id.is_empty() => None,
                    None => return err(at, format!("no element has the id `{id}`")),
                },
            };
            if let Some((_, v)) = elements.get_mut(el).and_then(|e| e.attrs.get_mut(attr)) {
                match (v, slot) {
                    (Value::Element(x), None) => *x = target,
                    (Value::ElementArray(xs), Some(k)) => {
                        if let Some(x) = xs.get_mut(k) {
                            *x = target;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(elements)
    }

    fn floats<const N: usize>(s: &str, at: usize) -> Result<[f32; N], ReadError> {
        let mut out = [0.0; N];
        let mut it = s.split_whitespace();
        for v in &mut out {
            *v = match it.next().map(str::parse::<f32>) {
                Some(Ok(f)) => f,
                _ => return err(at, format!("`{s}` is not {N} numbers")),
            };
        }
        Ok(out)
    }

    fn scalar(ty: &str, s: &str, at: usize) -> Result<Value, ReadError> {
        let num = |s: &str| -> Result<f32, ReadError> {
            s.trim()
                .parse::<f32>()
                .or_else(|_| err(at, format!("`{s}` is not a number")))
        };
        Ok(match ty {
            "int" => Value::Int(
                s.trim()
                    .parse::<i32>()
                    .or_else(|_| err(at, format!("`{s}` is not an integer")))?,
            ),
            "float" => Value::Float(num(s)?),
            "bool" => Value::Bool(matches!(s.trim(), "1" | "true")),
            "string" => Value::Str(s.to_string()),
            "time" => Value::Time(num(s)?),
            "vector2" => Value::Vec2(floats(s, at)?),
            "vector3" | "qangle" => Value::Vec3(floats(s, at)?),
            "vector4" => Value::Vec4(floats(s, at)?),
            "quaternion" => Value::Quat(floats(s, at)?),
            "binary" | "elementid" | "color" | "matrix" => Value::Other,
            _ => return err(at, format!("`{ty}` is not a DMX attribute type")),
        })
    }

    impl Reader<'_> {
        /// Reads `{ … }` after an element type; returns the element's index.
        fn element(&mut self, ty: String) -> Result<usize, ReadError> {
            if self.depth >= MAX_DEPTH {
                return err(
                    self.lex.pos,
                    format!("elements nest more than {MAX_DEPTH} deep"),
                );
            }
            self.depth += 1;
            let r = self.element_body(ty);
            self.depth -= 1;
            r
        }

        fn element_body(&mut self, ty: String) -> Result<usize, ReadError> {
            match self.lex.next()? {
                Some((_, Tok::Open(b'{'))) => {}
                Some((at, t)) => {
                    return err(at, format!("expected `{{` after `{ty}`, found {t:?}"))
                }
                None => return err(self.lex.text.len(), "the file ends after an element type"),
            }
            let me = self.elements.len();
            self.elements.push(Element {
                ty,
                ..Element::default()
            });
            loop {
                let name = match self.lex.next()? {
                    Some((_, Tok::Close(b'}'))) => return Ok(me),
                    Some((_, Tok::Str(s))) => s,
                    Some((at, t)) => {
                        return err(at, format!("expected an attribute name, found {t:?}"))
                    }
                    None => return err(at_end(self), "an element is not closed by `}`"),
                };
                let (tat, ty) = self.lex.expect_str("an attribute type")?;
                let slot = self.elements[me].attrs.len();
                if ty == "element" {
                    let (vat, id) = self.lex.expect_str("an element id")?;
                    self.pending.push((me, slot, None, Ref::Id(id, vat)));
                    self.elements[me].attrs.push((name, Value::Element(None)));
                } else if let Some(base) = ty.strip_suffix("_array") {
                    let value = self.array(me, slot, base, tat)?;
                    self.elements[me].attrs.push((name, value));
                } else if is_value_type(&ty) {
                    let (vat, s) = self.lex.expect_str("a value")?;
                    let value = scalar(&ty, &s, vat)?;
                    if name == "id" && ty == "elementid" {
                        self.ids.insert(s, me);
                        continue;
                    }
                    if name == "name" && ty == "string" {
                        self.elements[me].name = s.clone();
                    }
                    self.elements[me].attrs.push((name, value));
                } else {
                    // An element written in place: `"attr" "Type" { … }`.
                    self.elements[me].attrs.push((name, Value::Element(None)));
                    let child = self.element(ty)?;
                    self.pending.push((me, slot, None, Ref::Index(child)));
                }
            }
        }

        fn array(
            &mut self,
            me: usize,
            slot: usize,
            base: &str,
            at: usize,
        ) -> Result<Value, ReadError> {
            match self.lex.next()? {
                Some((_, Tok::Open(b'['))) => {}
                Some((a, t)) => return err(a, format!("expected `[`, found {t:?}")),
                None => return err(at_end(self), "the file ends before an array"),
            }
            let mut items: Vec<(usize, String)> = Vec::new();
            let mut refs = 0usize;
            loop {
                match self.lex.next()? {
                    Some((_, Tok::Close(b']'))) => break,
                    Some((_, Tok::Comma)) => continue,
                    Some((a, Tok::Str(s))) => {
                        if base == "element" {
                            if s == "element" {
                                let (vat, id) = self.lex.expect_str("an element id")?;
                                self.pending.push((me, slot, Some(refs), Ref::Id(id, vat)));
                            } else {
                                let child = self.element(s)?;
                                self.pending.push((me, slot, Some(refs), Ref::Index(child)));
                            }
                            refs += 1;
                        } else {
                            items.push((a, s));
                        }
                    }
                    Some((a, t)) => return err(a, format!("unexpected {t:?} in an array")),
                    None => return err(at_end(self), "an array is not closed by `]`"),
                }
            }
            let conv = |f: &dyn Fn(&str, usize) -> Result<Value, ReadError>| -> Result<Vec<Value>, ReadError> {
                items.iter().map(|(a, s)| f(s, *a)).collect()
            };
            let vals = || conv(&|s, a| scalar(base, s, a));
            Ok(match base {
                "element" => Value::ElementArray(vec![None; refs]),
                "int" => Value::IntArray(
                    vals()?
                        .into_iter()
                        .map(|v| if let Value::Int(i) = v { i } else { 0 })
                        .collect(),
                ),
                "float" => Value::FloatArray(
                    vals()?
                        .into_iter()
                        .map(|v| if let Value::Float(f) = v { f } else { 0.0 })
                        .collect(),
                ),
                "time" => Value::TimeArray(
                    vals()?
                        .into_iter()
                        .map(|v| if let Value::Time(f) = v { f } else { 0.0 })
                        .collect(),
                ),
                "bool" => Value::BoolArray(
                    vals()?
                        .into_iter()
                        .map(|v| v == Value::Bool(true))
                        .collect(),
                ),
                "string" => Value::StrArray(items.into_iter().map(|(_, s)| s).collect()),
                "vector2" => Value::Vec2Array(
                    items
                        .iter()
                        .map(|(a, s)| floats(s, *a))
                        .collect::<Result<_, _>>()?,
                ),
                "vector3" | "qangle" => Value::Vec3Array(
                    items
                        .iter()
                        .map(|(a, s)| floats(s, *a))
                        .collect::<Result<_, _>>()?,
                ),
                "vector4" => Value::Vec4Array(
                    items
                        .iter()
                        .map(|(a, s)| floats(s, *a))
                        .collect::<Result<_, _>>()?,
                ),
                "quaternion" => Value::QuatArray(
                    items
                        .iter()
                        .map(|(a, s)| floats(s, *a))
                        .collect::<Result<_, _>>()?,
                ),
                "binary" | "elementid" | "color" | "matrix" => Value::OtherArray,
                _ => return err(at, format!("`{base}_array` is not a DMX attribute type")),
            })
        }
    }

    fn at_end(r: &Reader<'_>) -> usize {
        r.lex.text.len()
    }

    fn is_value_type(ty: &str) -> bool {
        matches!(
            ty,
            "int"
                | "float"
                | "bool"
                | "string"
                | "binary"
                | "elementid"
                | "time"
                | "color"
                | "vector2"
                | "vector3"
                | "vector4"
                | "qangle"
                | "quaternion"
                | "matrix"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KV2: &str = "<!-- dmx encoding keyvalues2 1 format model 1 -->\n";

    #[test]
    fn headers_mdlc_does_not_read_are_errors() {
        for text in [
            "version 1\nnodes\n",
            "<!-- dmx encoding binary 9 format model 1 -->\n\0",
            "<!-- dmx encoding xml 1 format model 1 -->\n",
            "<!-- dmx encoding binary x format model 1 -->\n\0",
            // a header with nothing after it, not even its line end (found by fuzzing: the
            // text began past the end of the file)
            "<!-- dmx encoding keyvalues2 1 format model 1 -->",
            "<!-- dmx encoding binary 2 format model 1 -->",
        ] {
            assert!(parse(text.as_bytes()).is_err(), "{text}");
        }
    }

    /// Elements written in place nest by recursion: a file nesting them without end is an
    /// error, not a stack overflow.
    #[test]
    fn deep_nesting_is_an_error() {
        let mut text = String::from(KV2);
        for _ in 0..100_000 {
            text.push_str("\"DmElement\" { \"c\" ");
        }
        let e = parse(text.as_bytes()).unwrap_err();
        assert!(e.message.contains("nest"), "{}", e.message);
    }

    /// An element referred to by id before it is written, an element array mixing references
    /// and elements in place, and arrays of numbers.
    #[test]
    fn keyvalues2_references_resolve() {
        let text = format!(
            "{KV2}\"DmElement\" {{\n \"id\" \"elementid\" \"a\"\n \"name\" \"string\" \"root\"\n \"m\" \"element\" \"b\"\n \"list\" \"element_array\" [ \"element\" \"b\", \"DmeThing\" {{ \"name\" \"string\" \"inner\" }} ]\n \"v\" \"vector3_array\" [ \"1 2 3\", \"4 5 6\" ]\n}}\n\"DmeModel\" {{ \"id\" \"elementid\" \"b\" \"name\" \"string\" \"model\" }}\n"
        );
        let d = parse(text.as_bytes()).unwrap();
        let root = &d.elements[0];
        assert_eq!(root.name, "root");
        let Some(Value::Element(Some(m))) = root.get("m") else {
            panic!("{:?}", root.get("m"))
        };
        assert_eq!(d.elements[*m].name, "model");
        let Some(Value::ElementArray(l)) = root.get("list") else {
            panic!()
        };
        assert_eq!(l.len(), 2);
        assert_eq!(l[0], Some(*m));
        assert_eq!(l[1].map(|i| d.elements[i].name.as_str()), Some("inner"));
        assert_eq!(
            root.get("V"),
            Some(&Value::Vec3Array(vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        );
    }
}
