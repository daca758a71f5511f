//! Reads MDL v10 files (the main file and its `T.mdl` and `NN.mdl` companions) into plain
//! structs, one per on-disk record, and checks their invariants. Used by `mdlc inspect` and by
//! the tests, which name the first differing record and field between two files with
//! [`first_difference`].
//!
//! Every read is bounds-checked: any bytes give either a [`Parsed`] (with the problems found)
//! or a clean [`ReadError`], never a panic. Field names are those of `studio.h`
//! (ValveSoftware/halflife `engine/studio.h`); each record's layout is a [`Field`] table, from
//! which the text dump and the byte comparison are generated.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

/// A file that is not an MDL v10 file at all (too short, wrong magic or version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError(pub String);

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a field's bytes are shown and compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `int`, a count or plain value.
    Int,
    /// `int`, a byte offset into the file (shown with what it points at).
    Index,
    /// `float`.
    Float,
    /// `unsigned short`, an offset relative to its record (`mstudioanim_t.offset[]`).
    UShort,
    /// `char[n]` (count is the length).
    Chars,
}

impl Kind {
    fn size(self) -> usize {
        match self {
            Kind::Int | Kind::Index | Kind::Float => 4,
            Kind::UShort => 2,
            Kind::Chars => 1,
        }
    }
}

/// One field of an on-disk record: name as in `studio.h`, byte offset, element count, kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub offset: usize,
    pub count: usize,
    pub kind: Kind,
}

const fn f(name: &'static str, offset: usize, count: usize, kind: Kind) -> Field {
    Field {
        name,
        offset,
        count,
        kind,
    }
}

use Kind::{Chars, Float, Index, Int, UShort};

/// Byte size of a field table (the end of its last field).
pub fn fields_size(fields: &[Field]) -> usize {
    fields
        .iter()
        .map(|x| x.offset + x.count * x.kind.size())
        .max()
        .unwrap_or(0)
}

/// A little-endian cursor over one record's bytes; a read past the end gives 0 (callers only
/// hand it slices of the record's full size, which the size tests pin).
struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    fn new(b: &'a [u8]) -> Self {
        Rd { b, pos: 0 }
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(s) = self.b.get(self.pos..self.pos + N) {
            out.copy_from_slice(s);
        }
        self.pos += N;
        out
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.bytes::<4>())
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.bytes::<4>())
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes::<2>())
    }
    fn vec3(&mut self) -> [f32; 3] {
        [self.f32(), self.f32(), self.f32()]
    }
    fn ints<const N: usize>(&mut self) -> [i32; N] {
        std::array::from_fn(|_| self.i32())
    }
    fn floats<const N: usize>(&mut self) -> [f32; N] {
        std::array::from_fn(|_| self.f32())
    }
    fn name(&mut self, n: usize) -> String {
        let s = self.b.get(self.pos..self.pos + n).unwrap_or(&[]);
        self.pos += n;
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        String::from_utf8_lossy(&s[..end]).into_owned()
    }
}

/// An on-disk record: its size, its `studio.h` name and its field table.
pub trait Record: Sized {
    const SIZE: usize;
    const NAME: &'static str;
    const FIELDS: &'static [Field];
    /// Parses `SIZE` bytes (shorter input reads as zeros).
    fn parse(b: &[u8]) -> Self;
}

macro_rules! record {
    ($ty:ident, $size:expr, $name:literal, [$($field:expr),* $(,)?], |$rd:ident| $body:expr) => {
        impl Record for $ty {
            const SIZE: usize = $size;
            const NAME: &'static str = $name;
            const FIELDS: &'static [Field] = &[$($field),*];
            fn parse(b: &[u8]) -> Self {
                let mut $rd = Rd::new(b);
                $body
            }
        }
    };
}

/// `studiohdr_t`, the main file's and `T.mdl`'s header (244 bytes, `goldsrc.md` §4.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StudioHdr {
    pub id: String,
    pub version: i32,
    pub name: String,
    pub length: i32,
    pub eyeposition: [f32; 3],
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub bbmin: [f32; 3],
    pub bbmax: [f32; 3],
    pub flags: i32,
    pub numbones: i32,
    pub boneindex: i32,
    pub numbonecontrollers: i32,
    pub bonecontrollerindex: i32,
    pub numhitboxes: i32,
    pub hitboxindex: i32,
    pub numseq: i32,
    pub seqindex: i32,
    pub numseqgroups: i32,
    pub seqgroupindex: i32,
    pub numtextures: i32,
    pub textureindex: i32,
    pub texturedataindex: i32,
    pub numskinref: i32,
    pub numskinfamilies: i32,
    pub skinindex: i32,
    pub numbodyparts: i32,
    pub bodypartindex: i32,
    pub numattachments: i32,
    pub attachmentindex: i32,
    pub soundtable: i32,
    pub soundindex: i32,
    pub soundgroups: i32,
    pub soundgroupindex: i32,
    pub numtransitions: i32,
    pub transitionindex: i32,
}

record!(
    StudioHdr,
    244,
    "studiohdr_t",
    [
        f("id", 0, 4, Chars),
        f("version", 4, 1, Int),
        f("name", 8, 64, Chars),
        f("length", 72, 1, Index),
        f("eyeposition", 76, 3, Float),
        f("min", 88, 3, Float),
        f("max", 100, 3, Float),
        f("bbmin", 112, 3, Float),
        f("bbmax", 124, 3, Float),
        f("flags", 136, 1, Int),
        f("numbones", 140, 1, Int),
        f("boneindex", 144, 1, Index),
        f("numbonecontrollers", 148, 1, Int),
        f("bonecontrollerindex", 152, 1, Index),
        f("numhitboxes", 156, 1, Int),
        f("hitboxindex", 160, 1, Index),
        f("numseq", 164, 1, Int),
        f("seqindex", 168, 1, Index),
        f("numseqgroups", 172, 1, Int),
        f("seqgroupindex", 176, 1, Index),
        f("numtextures", 180, 1, Int),
        f("textureindex", 184, 1, Index),
        f("texturedataindex", 188, 1, Index),
        f("numskinref", 192, 1, Int),
        f("numskinfamilies", 196, 1, Int),
        f("skinindex", 200, 1, Index),
        f("numbodyparts", 204, 1, Int),
        f("bodypartindex", 208, 1, Index),
        f("numattachments", 212, 1, Int),
        f("attachmentindex", 216, 1, Index),
        f("soundtable", 220, 1, Int),
        f("soundindex", 224, 1, Int),
        f("soundgroups", 228, 1, Int),
        f("soundgroupindex", 232, 1, Int),
        f("numtransitions", 236, 1, Int),
        f("transitionindex", 240, 1, Index),
    ],
    |r| StudioHdr {
        id: r.name(4),
        version: r.i32(),
        name: r.name(64),
        length: r.i32(),
        eyeposition: r.vec3(),
        min: r.vec3(),
        max: r.vec3(),
        bbmin: r.vec3(),
        bbmax: r.vec3(),
        flags: r.i32(),
        numbones: r.i32(),
        boneindex: r.i32(),
        numbonecontrollers: r.i32(),
        bonecontrollerindex: r.i32(),
        numhitboxes: r.i32(),
        hitboxindex: r.i32(),
        numseq: r.i32(),
        seqindex: r.i32(),
        numseqgroups: r.i32(),
        seqgroupindex: r.i32(),
        numtextures: r.i32(),
        textureindex: r.i32(),
        texturedataindex: r.i32(),
        numskinref: r.i32(),
        numskinfamilies: r.i32(),
        skinindex: r.i32(),
        numbodyparts: r.i32(),
        bodypartindex: r.i32(),
        numattachments: r.i32(),
        attachmentindex: r.i32(),
        soundtable: r.i32(),
        soundindex: r.i32(),
        soundgroups: r.i32(),
        soundgroupindex: r.i32(),
        numtransitions: r.i32(),
        transitionindex: r.i32(),
    }
);

/// `studioseqhdr_t`, the header of an `NN.mdl` sequence-group file (76 bytes, §4.2).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StudioSeqHdr {
    pub id: String,
    pub version: i32,
    pub name: String,
    pub length: i32,
}

record!(
    StudioSeqHdr,
    76,
    "studioseqhdr_t",
    [
        f("id", 0, 4, Chars),
        f("version", 4, 1, Int),
        f("name", 8, 64, Chars),
        f("length", 72, 1, Index),
    ],
    |r| StudioSeqHdr {
        id: r.name(4),
        version: r.i32(),
        name: r.name(64),
        length: r.i32()
    }
);

/// `mstudiobone_t` (112 bytes, §4.3).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bone {
    pub name: String,
    pub parent: i32,
    pub flags: i32,
    pub bonecontroller: [i32; 6],
    pub value: [f32; 6],
    pub scale: [f32; 6],
}

record!(
    Bone,
    112,
    "mstudiobone_t",
    [
        f("name", 0, 32, Chars),
        f("parent", 32, 1, Int),
        f("flags", 36, 1, Int),
        f("bonecontroller", 40, 6, Int),
        f("value", 64, 6, Float),
        f("scale", 88, 6, Float),
    ],
    |r| Bone {
        name: r.name(32),
        parent: r.i32(),
        flags: r.i32(),
        bonecontroller: r.ints(),
        value: r.floats(),
        scale: r.floats()
    }
);

/// `mstudiobonecontroller_t` (24 bytes, §4.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BoneController {
    pub bone: i32,
    #[serde(rename = "type")]
    pub kind: i32,
    pub start: f32,
    pub end: f32,
    pub rest: i32,
    pub index: i32,
}

record!(
    BoneController,
    24,
    "mstudiobonecontroller_t",
    [
        f("bone", 0, 1, Int),
        f("type", 4, 1, Int),
        f("start", 8, 1, Float),
        f("end", 12, 1, Float),
        f("rest", 16, 1, Int),
        f("index", 20, 1, Int),
    ],
    |r| BoneController {
        bone: r.i32(),
        kind: r.i32(),
        start: r.f32(),
        end: r.f32(),
        rest: r.i32(),
        index: r.i32()
    }
);

/// `mstudioattachment_t` (88 bytes, §4.5).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Attachment {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: i32,
    pub bone: i32,
    pub org: [f32; 3],
    pub vectors: [[f32; 3]; 3],
}

record!(
    Attachment,
    88,
    "mstudioattachment_t",
    [
        f("name", 0, 32, Chars),
        f("type", 32, 1, Int),
        f("bone", 36, 1, Int),
        f("org", 40, 3, Float),
        f("vectors", 52, 9, Float),
    ],
    |r| Attachment {
        name: r.name(32),
        kind: r.i32(),
        bone: r.i32(),
        org: r.vec3(),
        vectors: [r.vec3(), r.vec3(), r.vec3()]
    }
);

/// `mstudiobbox_t`, a hit box (32 bytes, §4.6).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BBox {
    pub bone: i32,
    pub group: i32,
    pub bbmin: [f32; 3],
    pub bbmax: [f32; 3],
}

record!(
    BBox,
    32,
    "mstudiobbox_t",
    [
        f("bone", 0, 1, Int),
        f("group", 4, 1, Int),
        f("bbmin", 8, 3, Float),
        f("bbmax", 20, 3, Float),
    ],
    |r| BBox {
        bone: r.i32(),
        group: r.i32(),
        bbmin: r.vec3(),
        bbmax: r.vec3()
    }
);

/// `mstudioseqdesc_t` (176 bytes, §4.7).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SeqDesc {
    pub label: String,
    pub fps: f32,
    pub flags: i32,
    pub activity: i32,
    pub actweight: i32,
    pub numevents: i32,
    pub eventindex: i32,
    pub numframes: i32,
    pub numpivots: i32,
    pub pivotindex: i32,
    pub motiontype: i32,
    pub motionbone: i32,
    pub linearmovement: [f32; 3],
    pub automoveposindex: i32,
    pub automoveangleindex: i32,
    pub bbmin: [f32; 3],
    pub bbmax: [f32; 3],
    pub numblends: i32,
    pub animindex: i32,
    pub blendtype: [i32; 2],
    pub blendstart: [f32; 2],
    pub blendend: [f32; 2],
    pub blendparent: i32,
    pub seqgroup: i32,
    pub entrynode: i32,
    pub exitnode: i32,
    pub nodeflags: i32,
    pub nextseq: i32,
}

record!(
    SeqDesc,
    176,
    "mstudioseqdesc_t",
    [
        f("label", 0, 32, Chars),
        f("fps", 32, 1, Float),
        f("flags", 36, 1, Int),
        f("activity", 40, 1, Int),
        f("actweight", 44, 1, Int),
        f("numevents", 48, 1, Int),
        f("eventindex", 52, 1, Index),
        f("numframes", 56, 1, Int),
        f("numpivots", 60, 1, Int),
        f("pivotindex", 64, 1, Index),
        f("motiontype", 68, 1, Int),
        f("motionbone", 72, 1, Int),
        f("linearmovement", 76, 3, Float),
        f("automoveposindex", 88, 1, Int),
        f("automoveangleindex", 92, 1, Int),
        f("bbmin", 96, 3, Float),
        f("bbmax", 108, 3, Float),
        f("numblends", 120, 1, Int),
        f("animindex", 124, 1, Index),
        f("blendtype", 128, 2, Int),
        f("blendstart", 136, 2, Float),
        f("blendend", 144, 2, Float),
        f("blendparent", 152, 1, Int),
        f("seqgroup", 156, 1, Int),
        f("entrynode", 160, 1, Int),
        f("exitnode", 164, 1, Int),
        f("nodeflags", 168, 1, Int),
        f("nextseq", 172, 1, Int),
    ],
    |r| SeqDesc {
        label: r.name(32),
        fps: r.f32(),
        flags: r.i32(),
        activity: r.i32(),
        actweight: r.i32(),
        numevents: r.i32(),
        eventindex: r.i32(),
        numframes: r.i32(),
        numpivots: r.i32(),
        pivotindex: r.i32(),
        motiontype: r.i32(),
        motionbone: r.i32(),
        linearmovement: r.vec3(),
        automoveposindex: r.i32(),
        automoveangleindex: r.i32(),
        bbmin: r.vec3(),
        bbmax: r.vec3(),
        numblends: r.i32(),
        animindex: r.i32(),
        blendtype: r.ints(),
        blendstart: r.floats(),
        blendend: r.floats(),
        blendparent: r.i32(),
        seqgroup: r.i32(),
        entrynode: r.i32(),
        exitnode: r.i32(),
        nodeflags: r.i32(),
        nextseq: r.i32(),
    }
);

/// `mstudioevent_t` (76 bytes, §4.8).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Event {
    pub frame: i32,
    pub event: i32,
    #[serde(rename = "type")]
    pub kind: i32,
    pub options: String,
}

record!(
    Event,
    76,
    "mstudioevent_t",
    [
        f("frame", 0, 1, Int),
        f("event", 4, 1, Int),
        f("type", 8, 1, Int),
        f("options", 12, 64, Chars),
    ],
    |r| Event {
        frame: r.i32(),
        event: r.i32(),
        kind: r.i32(),
        options: r.name(64)
    }
);

/// `mstudiopivot_t` (20 bytes, §4.9).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pivot {
    pub org: [f32; 3],
    pub start: i32,
    pub end: i32,
}

record!(
    Pivot,
    20,
    "mstudiopivot_t",
    [
        f("org", 0, 3, Float),
        f("start", 12, 1, Int),
        f("end", 16, 1, Int),
    ],
    |r| Pivot {
        org: r.vec3(),
        start: r.i32(),
        end: r.i32()
    }
);

/// `mstudioseqgroup_t` (104 bytes, §4.10).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SeqGroup {
    pub label: String,
    pub name: String,
    pub unused1: i32,
    pub unused2: i32,
}

record!(
    SeqGroup,
    104,
    "mstudioseqgroup_t",
    [
        f("label", 0, 32, Chars),
        f("name", 32, 64, Chars),
        f("unused1", 96, 1, Int),
        f("unused2", 100, 1, Int),
    ],
    |r| SeqGroup {
        label: r.name(32),
        name: r.name(64),
        unused1: r.i32(),
        unused2: r.i32()
    }
);

/// `mstudioanim_t`: per bone and blend, the offsets of the six channel streams relative to
/// this record, 0 for an omitted channel (12 bytes, §4.11).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Anim {
    pub offset: [u16; 6],
}

record!(
    Anim,
    12,
    "mstudioanim_t",
    [f("offset", 0, 6, UShort)],
    |r| Anim {
        offset: std::array::from_fn(|_| r.u16())
    }
);

/// `mstudiobodyparts_t` (76 bytes, §4.12).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BodyPart {
    pub name: String,
    pub nummodels: i32,
    pub base: i32,
    pub modelindex: i32,
}

record!(
    BodyPart,
    76,
    "mstudiobodyparts_t",
    [
        f("name", 0, 64, Chars),
        f("nummodels", 64, 1, Int),
        f("base", 68, 1, Int),
        f("modelindex", 72, 1, Index),
    ],
    |r| BodyPart {
        name: r.name(64),
        nummodels: r.i32(),
        base: r.i32(),
        modelindex: r.i32()
    }
);

/// `mstudiomodel_t` (112 bytes, §4.13).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Model {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: i32,
    pub boundingradius: f32,
    pub nummesh: i32,
    pub meshindex: i32,
    pub numverts: i32,
    pub vertinfoindex: i32,
    pub vertindex: i32,
    pub numnorms: i32,
    pub norminfoindex: i32,
    pub normindex: i32,
    pub numgroups: i32,
    pub groupindex: i32,
}

record!(
    Model,
    112,
    "mstudiomodel_t",
    [
        f("name", 0, 64, Chars),
        f("type", 64, 1, Int),
        f("boundingradius", 68, 1, Float),
        f("nummesh", 72, 1, Int),
        f("meshindex", 76, 1, Index),
        f("numverts", 80, 1, Int),
        f("vertinfoindex", 84, 1, Index),
        f("vertindex", 88, 1, Index),
        f("numnorms", 92, 1, Int),
        f("norminfoindex", 96, 1, Index),
        f("normindex", 100, 1, Index),
        f("numgroups", 104, 1, Int),
        f("groupindex", 108, 1, Int),
    ],
    |r| Model {
        name: r.name(64),
        kind: r.i32(),
        boundingradius: r.f32(),
        nummesh: r.i32(),
        meshindex: r.i32(),
        numverts: r.i32(),
        vertinfoindex: r.i32(),
        vertindex: r.i32(),
        numnorms: r.i32(),
        norminfoindex: r.i32(),
        normindex: r.i32(),
        numgroups: r.i32(),
        groupindex: r.i32(),
    }
);

/// `mstudiomesh_t` (20 bytes, §4.14).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Mesh {
    pub numtris: i32,
    pub triindex: i32,
    pub skinref: i32,
    pub numnorms: i32,
    pub normindex: i32,
}

record!(
    Mesh,
    20,
    "mstudiomesh_t",
    [
        f("numtris", 0, 1, Int),
        f("triindex", 4, 1, Index),
        f("skinref", 8, 1, Int),
        f("numnorms", 12, 1, Int),
        f("normindex", 16, 1, Int),
    ],
    |r| Mesh {
        numtris: r.i32(),
        triindex: r.i32(),
        skinref: r.i32(),
        numnorms: r.i32(),
        normindex: r.i32()
    }
);

/// `mstudiotexture_t` (80 bytes, §4.16).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Texture {
    pub name: String,
    pub flags: i32,
    pub width: i32,
    pub height: i32,
    pub index: i32,
}

record!(
    Texture,
    80,
    "mstudiotexture_t",
    [
        f("name", 0, 64, Chars),
        f("flags", 64, 1, Int),
        f("width", 68, 1, Int),
        f("height", 72, 1, Int),
        f("index", 76, 1, Index),
    ],
    |r| Texture {
        name: r.name(64),
        flags: r.i32(),
        width: r.i32(),
        height: r.i32(),
        index: r.i32()
    }
);

/// Which file of a model a region lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum FileRole {
    /// `<name>.mdl`.
    Main,
    /// `<name>T.mdl`.
    Textures,
    /// `<name>NN.mdl`, sequence group `NN`.
    Group(usize),
}

/// What a region of a file holds: a record (with its field table) or an array of plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Record(&'static str, &'static [Field]),
    /// Elements of `size` bytes, named `what` (e.g. `vec3`, `short`).
    Array {
        what: &'static str,
        size: usize,
    },
}

/// One named region of a file: a record or an array.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    pub file: FileRole,
    /// `bones[3]`, `bodyparts[1].models[0].verts`, …
    pub label: String,
    pub offset: usize,
    pub size: usize,
    pub layout: Layout,
}

/// A sequence with its events, pivots and (for each blend) the per-bone animation records.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sequence {
    pub desc: SeqDesc,
    pub events: Vec<Event>,
    pub pivots: Vec<Pivot>,
    /// `anims[blend][bone]`.
    pub anims: Vec<Vec<Anim>>,
}

/// A model with its meshes; vertex and normal arrays are counted, not copied.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelData {
    pub model: Model,
    pub meshes: Vec<Mesh>,
    /// Triangles decoded from each mesh's command list.
    pub decoded_tris: Vec<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BodyPartData {
    pub part: BodyPart,
    pub models: Vec<ModelData>,
}

/// A model's files, parsed: every record, and every invariant that does not hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Parsed {
    pub header: StudioHdr,
    /// The `T.mdl` header, when the textures are external.
    pub texture_header: Option<StudioHdr>,
    /// The `NN.mdl` headers, group 1 first.
    pub group_headers: Vec<StudioSeqHdr>,
    pub bones: Vec<Bone>,
    pub bonecontrollers: Vec<BoneController>,
    pub attachments: Vec<Attachment>,
    pub hitboxes: Vec<BBox>,
    pub sequences: Vec<Sequence>,
    pub seqgroups: Vec<SeqGroup>,
    pub transitions: Vec<Vec<u8>>,
    pub bodyparts: Vec<BodyPartData>,
    pub textures: Vec<Texture>,
    pub skins: Vec<Vec<i16>>,
    /// Invariants that do not hold (empty for a well-formed model).
    pub problems: Vec<String>,
    #[serde(skip)]
    pub regions: Vec<Region>,
}

/// One file's bytes and role, for the parser.
struct Src<'a> {
    role: FileRole,
    bytes: &'a [u8],
}

impl Src<'_> {
    fn name(&self) -> String {
        match self.role {
            FileRole::Main => "main file".into(),
            FileRole::Textures => "T file".into(),
            FileRole::Group(g) => format!("group file {g:02}"),
        }
    }
}

/// Reads the header of a main (or `T`) file: enough to know which companions to load.
pub fn header(bytes: &[u8]) -> Result<StudioHdr, ReadError> {
    if bytes.len() < StudioHdr::SIZE {
        return Err(ReadError(format!(
            "{} bytes is too short for an MDL header ({} bytes)",
            bytes.len(),
            StudioHdr::SIZE
        )));
    }
    let h = StudioHdr::parse(&bytes[..StudioHdr::SIZE]);
    if bytes.get(0..4) != Some(b"IDST") {
        let magic = bytes.get(0..4).unwrap_or(&[]);
        return Err(ReadError(format!(
            "not a GoldSrc or Source model: the file starts with {magic:02x?}, not `IDST`"
        )));
    }
    if h.version != 10 {
        return Err(ReadError(format!(
            "MDL version {} is not GoldSrc's (10){}",
            h.version,
            if h.version >= 44 {
                "; this is a Source model"
            } else {
                ""
            }
        )));
    }
    Ok(h)
}

struct Parser<'a> {
    files: Vec<Src<'a>>,
    out: Parsed,
}

impl<'a> Parser<'a> {
    fn src(&self, role: FileRole) -> Option<&Src<'a>> {
        self.files.iter().find(|s| s.role == role)
    }

    fn problem(&mut self, p: String) {
        self.out.problems.push(p);
    }

    /// Checks that `count` records of `size` bytes at `index` lie in `role`'s file; records the
    /// problem and returns `None` when not.
    fn range(
        &mut self,
        role: FileRole,
        what: &str,
        index: i64,
        count: i64,
        size: usize,
    ) -> Option<(usize, usize)> {
        let len = self.src(role).map_or(0, |s| s.bytes.len());
        let name = self.src(role).map_or_else(|| "file".into(), Src::name);
        if count < 0 {
            self.problem(format!("{what}: negative count {count}"));
            return None;
        }
        if index < 0 {
            self.problem(format!("{what}: negative offset {index}"));
            return None;
        }
        let end = (count as i128) * (size as i128) + index as i128;
        if end > len as i128 {
            self.problem(format!(
                "{what}: {count} × {size} bytes at offset {index} run past the end of the {name} ({len} bytes)"
            ));
            return None;
        }
        Some((index as usize, count as usize))
    }

    fn records<R: Record>(
        &mut self,
        role: FileRole,
        label: &str,
        index: i32,
        count: i32,
    ) -> Vec<R> {
        let Some((at, n)) = self.range(role, label, index.into(), count.into(), R::SIZE) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(n.min(1 << 16));
        for i in 0..n {
            let o = at + i * R::SIZE;
            let bytes = self
                .src(role)
                .and_then(|s| s.bytes.get(o..o + R::SIZE))
                .unwrap_or(&[]);
            out.push(R::parse(bytes));
            self.out.regions.push(Region {
                file: role,
                label: format!("{label}[{i}]"),
                offset: o,
                size: R::SIZE,
                layout: Layout::Record(R::NAME, R::FIELDS),
            });
        }
        out
    }

    fn array(
        &mut self,
        role: FileRole,
        label: String,
        at: usize,
        n: usize,
        what: &'static str,
        size: usize,
    ) {
        self.out.regions.push(Region {
            file: role,
            label,
            offset: at,
            size: n * size,
            layout: Layout::Array { what, size },
        });
    }

    fn bytes(&self, role: FileRole, at: usize, n: usize) -> &'a [u8] {
        self.src(role)
            .and_then(|s| s.bytes.get(at..at.saturating_add(n)))
            .unwrap_or(&[])
    }

    fn i16_at(&self, role: FileRole, at: usize) -> Option<i16> {
        let b = self.src(role)?.bytes.get(at..at + 2)?;
        Some(i16::from_le_bytes([b[0], b[1]]))
    }
}

/// Parses a main file with its companions (`textures`: the `T.mdl`, when the main file has no
/// textures; `groups`: `01.mdl`, `02.mdl`, … in order) and checks every invariant.
pub fn parse(main: &[u8], textures: Option<&[u8]>, groups: &[&[u8]]) -> Result<Parsed, ReadError> {
    let h = header(main)?;
    let mut files = vec![Src {
        role: FileRole::Main,
        bytes: main,
    }];
    let mut p = Parser {
        files: Vec::new(),
        out: Parsed::default(),
    };
    p.out.regions.push(Region {
        file: FileRole::Main,
        label: "header".into(),
        offset: 0,
        size: StudioHdr::SIZE,
        layout: Layout::Record(StudioHdr::NAME, StudioHdr::FIELDS),
    });
    if h.length as i64 != main.len() as i64 {
        p.out.problems.push(format!(
            "header.length is {} but the main file has {} bytes",
            h.length,
            main.len()
        ));
    }
    let mut tex_role = FileRole::Main;
    if let Some(t) = textures {
        match header(t) {
            Ok(th) => {
                if th.length as i64 != t.len() as i64 {
                    p.out.problems.push(format!(
                        "T file: header.length is {} but the file has {} bytes",
                        th.length,
                        t.len()
                    ));
                }
                p.out.regions.push(Region {
                    file: FileRole::Textures,
                    label: "T.header".into(),
                    offset: 0,
                    size: StudioHdr::SIZE,
                    layout: Layout::Record(StudioHdr::NAME, StudioHdr::FIELDS),
                });
                p.out.texture_header = Some(th);
                files.push(Src {
                    role: FileRole::Textures,
                    bytes: t,
                });
                tex_role = FileRole::Textures;
            }
            Err(e) => p.out.problems.push(format!("T file: {e}")),
        }
    }
    for (i, g) in groups.iter().enumerate() {
        let n = i + 1;
        if g.len() < StudioSeqHdr::SIZE {
            p.out.problems.push(format!(
                "group file {n:02}: {} bytes is too short for its header",
                g.len()
            ));
            p.out.group_headers.push(StudioSeqHdr::default());
            continue;
        }
        let gh = StudioSeqHdr::parse(&g[..StudioSeqHdr::SIZE]);
        if gh.id != "IDSQ" || gh.version != 10 {
            p.out.problems.push(format!(
                "group file {n:02}: starts with `{}` version {}, not `IDSQ` version 10",
                gh.id, gh.version
            ));
        }
        if gh.length as i64 != g.len() as i64 {
            p.out.problems.push(format!(
                "group file {n:02}: length is {} but the file has {} bytes",
                gh.length,
                g.len()
            ));
        }
        p.out.regions.push(Region {
            file: FileRole::Group(n),
            label: format!("group{n:02}.header"),
            offset: 0,
            size: StudioSeqHdr::SIZE,
            layout: Layout::Record(StudioSeqHdr::NAME, StudioSeqHdr::FIELDS),
        });
        p.out.group_headers.push(gh);
        files.push(Src {
            role: FileRole::Group(n),
            bytes: g,
        });
    }
    p.files = files;
    p.out.header = h.clone();
    let m = FileRole::Main;

    p.out.bones = p.records(m, "bones", h.boneindex, h.numbones);
    p.out.bonecontrollers = p.records(
        m,
        "bonecontrollers",
        h.bonecontrollerindex,
        h.numbonecontrollers,
    );
    p.out.attachments = p.records(m, "attachments", h.attachmentindex, h.numattachments);
    p.out.hitboxes = p.records(m, "hitboxes", h.hitboxindex, h.numhitboxes);
    let descs: Vec<SeqDesc> = p.records(m, "sequences", h.seqindex, h.numseq);
    p.out.seqgroups = p.records(m, "seqgroups", h.seqgroupindex, h.numseqgroups);
    if h.numseqgroups < 1 {
        p.problem(format!(
            "numseqgroups is {}; there is always at least one",
            h.numseqgroups
        ));
    }
    let numbones = p.out.bones.len();
    for (s, d) in descs.into_iter().enumerate() {
        let events = p.records(
            m,
            &format!("sequences[{s}].events"),
            d.eventindex,
            d.numevents,
        );
        let pivots = p.records(
            m,
            &format!("sequences[{s}].pivots"),
            d.pivotindex,
            d.numpivots,
        );
        let role = if d.seqgroup <= 0 {
            if d.seqgroup < 0 {
                p.problem(format!("sequences[{s}].seqgroup is {}", d.seqgroup));
            }
            FileRole::Main
        } else {
            let g = d.seqgroup as usize;
            if g > groups.len() {
                p.problem(format!(
                    "sequences[{s}].seqgroup is {g} but group file {g:02} was not given"
                ));
            }
            FileRole::Group(g)
        };
        let mut anims = Vec::new();
        if p.src(role).is_some() {
            let n = i64::from(d.numblends) * numbones as i64;
            if let Some((at, _)) = p.range(
                role,
                &format!("sequences[{s}].anims"),
                d.animindex.into(),
                n,
                Anim::SIZE,
            ) {
                if d.numframes < 1 {
                    p.problem(format!("sequences[{s}].numframes is {}", d.numframes));
                }
                for b in 0..d.numblends.max(0) as usize {
                    let mut row = Vec::new();
                    for j in 0..numbones {
                        let o = at + Anim::SIZE * (b * numbones + j);
                        let a = Anim::parse(p.bytes(role, o, Anim::SIZE));
                        p.out.regions.push(Region {
                            file: role,
                            label: format!("sequences[{s}].anims[{b}][{j}]"),
                            offset: o,
                            size: Anim::SIZE,
                            layout: Layout::Record(Anim::NAME, Anim::FIELDS),
                        });
                        for (k, &off) in a.offset.iter().enumerate() {
                            if off == 0 {
                                continue;
                            }
                            check_stream(&mut p, role, s, b, j, k, o + off as usize, d.numframes);
                        }
                        row.push(a);
                    }
                    anims.push(row);
                }
            }
        }
        p.out.sequences.push(Sequence {
            desc: d,
            events,
            pivots,
            anims,
        });
    }

    // transitions
    let n = h.numtransitions;
    if let Some((at, n)) = p.range(
        m,
        "transitions",
        h.transitionindex.into(),
        i64::from(n) * i64::from(n),
        1,
    ) {
        let side = (n as f64).sqrt() as usize;
        let bytes = p.bytes(m, at, n);
        p.out.transitions = bytes.chunks(side.max(1)).map(<[u8]>::to_vec).collect();
        p.array(m, "transitions".into(), at, n, "byte", 1);
        let nodes = h.numtransitions;
        if bytes.iter().any(|&x| i32::from(x) > nodes) {
            p.problem(format!(
                "transitions: an entry is larger than numtransitions ({nodes})"
            ));
        }
    }

    // body parts and models
    let parts: Vec<BodyPart> = p.records(m, "bodyparts", h.bodypartindex, h.numbodyparts);
    for (bi, part) in parts.into_iter().enumerate() {
        let models: Vec<Model> = p.records(
            m,
            &format!("bodyparts[{bi}].models"),
            part.modelindex,
            part.nummodels,
        );
        let mut datas = Vec::new();
        for (mi, model) in models.into_iter().enumerate() {
            let l = format!("bodyparts[{bi}].models[{mi}]");
            let nv = i64::from(model.numverts);
            let nn = i64::from(model.numnorms);
            if let Some((at, n)) = p.range(
                m,
                &format!("{l}.vertinfo"),
                model.vertinfoindex.into(),
                nv,
                1,
            ) {
                p.array(m, format!("{l}.vertinfo"), at, n, "bone byte", 1);
                if p.bytes(m, at, n).iter().any(|&b| b as usize >= numbones) {
                    p.problem(format!(
                        "{l}.vertinfo: a vertex's bone is not below numbones ({numbones})"
                    ));
                }
            }
            if let Some((at, n)) = p.range(
                m,
                &format!("{l}.norminfo"),
                model.norminfoindex.into(),
                nn,
                1,
            ) {
                p.array(m, format!("{l}.norminfo"), at, n, "bone byte", 1);
                if p.bytes(m, at, n).iter().any(|&b| b as usize >= numbones) {
                    p.problem(format!(
                        "{l}.norminfo: a normal's bone is not below numbones ({numbones})"
                    ));
                }
            }
            if let Some((at, n)) = p.range(m, &format!("{l}.verts"), model.vertindex.into(), nv, 12)
            {
                p.array(m, format!("{l}.verts"), at, n, "vec3", 12);
            }
            if let Some((at, n)) = p.range(m, &format!("{l}.norms"), model.normindex.into(), nn, 12)
            {
                p.array(m, format!("{l}.norms"), at, n, "vec3", 12);
            }
            let meshes: Vec<Mesh> =
                p.records(m, &format!("{l}.meshes"), model.meshindex, model.nummesh);
            let mut tris = Vec::new();
            let mut norm_sum = 0i64;
            for (k, mesh) in meshes.iter().enumerate() {
                norm_sum += i64::from(mesh.numnorms);
                let t = check_commands(&mut p, &format!("{l}.meshes[{k}]"), mesh, &model);
                tris.push(t);
            }
            if norm_sum != nn && !meshes.is_empty() {
                p.problem(format!(
                    "{l}: its meshes' numnorms add up to {norm_sum}, not numnorms ({nn})"
                ));
            }
            datas.push(ModelData {
                model,
                meshes,
                decoded_tris: tris,
            });
        }
        p.out.bodyparts.push(BodyPartData {
            part,
            models: datas,
        });
    }

    // textures
    let th = p.out.texture_header.clone().unwrap_or_else(|| h.clone());
    let textures: Vec<Texture> = p.records(tex_role, "textures", th.textureindex, th.numtextures);
    for (i, t) in textures.iter().enumerate() {
        let size = i64::from(t.width) * i64::from(t.height);
        if t.width <= 0 || t.height <= 0 {
            p.problem(format!("textures[{i}]: size {}×{}", t.width, t.height));
            continue;
        }
        if let Some((at, n)) = p.range(
            tex_role,
            &format!("textures[{i}].pixels"),
            t.index.into(),
            size + 768,
            1,
        ) {
            p.array(
                tex_role,
                format!("textures[{i}].pixels"),
                at,
                n - 768,
                "byte",
                1,
            );
            p.array(
                tex_role,
                format!("textures[{i}].palette"),
                at + n - 768,
                768,
                "byte",
                1,
            );
        }
    }
    let (nf, nr) = (th.numskinfamilies, th.numskinref);
    if let Some((at, n)) = p.range(
        tex_role,
        "skins",
        th.skinindex.into(),
        i64::from(nf) * i64::from(nr),
        2,
    ) {
        let bytes = p.bytes(tex_role, at, 2 * n);
        let all: Vec<i16> = bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        p.out.skins = all
            .chunks(nr.max(1) as usize)
            .map(<[i16]>::to_vec)
            .collect();
        p.array(tex_role, "skins".into(), at, n, "short", 2);
        if all.iter().any(|&x| x < 0 || x as usize >= textures.len()) && !textures.is_empty() {
            p.problem(format!(
                "skins: an entry is not a texture index (numtextures {})",
                textures.len()
            ));
        }
    }
    for bp in &p.out.bodyparts.clone() {
        for md in &bp.models {
            for mesh in &md.meshes {
                if mesh.skinref < 0 || (nr > 0 && mesh.skinref >= nr) {
                    p.problem(format!(
                        "model `{}`: a mesh's skinref {} is not below numskinref ({nr})",
                        md.model.name, mesh.skinref
                    ));
                }
            }
        }
    }
    p.out.textures = textures;
    if h.numtextures == 0 && textures_missing(&p.out) {
        p.problem("the main file has no textures and no T file was given".into());
    }
    check_indices(&mut p, &h);
    p.out.regions.sort_by_key(|r| (r.file, r.offset));
    Ok(p.out)
}

fn textures_missing(out: &Parsed) -> bool {
    out.texture_header.is_none()
        && out
            .bodyparts
            .iter()
            .any(|b| b.models.iter().any(|m| !m.meshes.is_empty()))
}

/// Bone, controller, attachment and hit box references.
fn check_indices(p: &mut Parser, h: &StudioHdr) {
    let nb = p.out.bones.len() as i32;
    let nc = p.out.bonecontrollers.len() as i32;
    let mut problems = Vec::new();
    for (i, b) in p.out.bones.iter().enumerate() {
        if b.parent < -1 || b.parent >= i as i32 {
            problems.push(format!(
                "bones[{i}].parent is {} (must be −1 or an earlier bone)",
                b.parent
            ));
        }
        for (k, &c) in b.bonecontroller.iter().enumerate() {
            if c < -1 || c >= nc {
                problems.push(format!(
                    "bones[{i}].bonecontroller[{k}] is {c} (numbonecontrollers {nc})"
                ));
            }
        }
    }
    for (i, c) in p.out.bonecontrollers.iter().enumerate() {
        if c.bone < 0 || c.bone >= nb {
            problems.push(format!(
                "bonecontrollers[{i}].bone is {} (numbones {nb})",
                c.bone
            ));
        }
    }
    for (i, a) in p.out.attachments.iter().enumerate() {
        if a.bone < 0 || a.bone >= nb {
            problems.push(format!(
                "attachments[{i}].bone is {} (numbones {nb})",
                a.bone
            ));
        }
    }
    for (i, x) in p.out.hitboxes.iter().enumerate() {
        if x.bone < 0 || x.bone >= nb {
            problems.push(format!("hitboxes[{i}].bone is {} (numbones {nb})", x.bone));
        }
    }
    let ng = h.numseqgroups;
    for (i, s) in p.out.sequences.iter().enumerate() {
        if s.desc.seqgroup >= ng.max(1) {
            problems.push(format!(
                "sequences[{i}].seqgroup is {} (numseqgroups {ng})",
                s.desc.seqgroup
            ));
        }
        for (k, e) in s.events.iter().enumerate() {
            if e.frame < 0 || e.frame >= s.desc.numframes.max(1) {
                problems.push(format!(
                    "sequences[{i}].events[{k}].frame is {} (numframes {})",
                    e.frame, s.desc.numframes
                ));
            }
        }
    }
    p.out.problems.extend(problems);
}

/// Walks one channel's run-length stream: spans must cover `numframes` frames.
#[allow(clippy::too_many_arguments)]
fn check_stream(
    p: &mut Parser,
    role: FileRole,
    s: usize,
    b: usize,
    j: usize,
    k: usize,
    start: usize,
    numframes: i32,
) {
    const CH: [&str; 6] = ["X", "Y", "Z", "XR", "YR", "ZR"];
    let label = format!("sequences[{s}].anims[{b}][{j}].{}", CH[k]);
    let mut at = start;
    let mut covered = 0i64;
    while covered < i64::from(numframes) {
        let Some(hdr) = p.i16_at(role, at) else {
            p.problem(format!("{label}: the stream runs past the end of the file"));
            return;
        };
        let [valid, total] = hdr.to_le_bytes();
        if valid == 0 || total == 0 || valid > total {
            p.problem(format!(
                "{label}: a span at offset {at} has valid {valid}, total {total}"
            ));
            return;
        }
        at += 2 + 2 * valid as usize;
        covered += i64::from(total);
    }
    let len = p.src(role).map_or(0, |x| x.bytes.len());
    if at > len {
        p.problem(format!("{label}: the stream runs past the end of the file"));
        return;
    }
    if covered != i64::from(numframes) {
        p.problem(format!(
            "{label}: spans cover {covered} frames, the sequence has {numframes}"
        ));
    }
    p.array(role, label, start, (at - start) / 2, "short", 2);
}

/// Decodes a mesh's triangle commands: returns the number of triangles, and records problems
/// (indices out of range, a list that runs off the file, a count that is not `numtris`).
fn check_commands(p: &mut Parser, label: &str, mesh: &Mesh, model: &Model) -> usize {
    let m = FileRole::Main;
    if mesh.triindex < 0 {
        p.problem(format!("{label}.triindex is negative"));
        return 0;
    }
    let start = mesh.triindex as usize;
    let mut at = start;
    let mut tris = 0usize;
    let mut bad_vert = false;
    let mut bad_norm = false;
    loop {
        let Some(c) = p.i16_at(m, at) else {
            p.problem(format!(
                "{label}: the triangle commands run past the end of the file"
            ));
            return tris;
        };
        at += 2;
        if c == 0 {
            break;
        }
        let n = c.unsigned_abs() as usize;
        if n < 3 {
            p.problem(format!(
                "{label}: a strip or fan of {n} vertices at offset {}",
                at - 2
            ));
        }
        tris += n.saturating_sub(2);
        for _ in 0..n {
            let (Some(v), Some(nm)) = (p.i16_at(m, at), p.i16_at(m, at + 2)) else {
                p.problem(format!(
                    "{label}: the triangle commands run past the end of the file"
                ));
                return tris;
            };
            bad_vert |= v < 0 || i32::from(v) >= model.numverts;
            bad_norm |= nm < 0 || i32::from(nm) >= model.numnorms;
            at += 8;
        }
    }
    if bad_vert {
        p.problem(format!(
            "{label}: a vertex index is not below numverts ({})",
            model.numverts
        ));
    }
    if bad_norm {
        p.problem(format!(
            "{label}: a normal index is not below numnorms ({})",
            model.numnorms
        ));
    }
    if tris as i64 != i64::from(mesh.numtris) {
        p.problem(format!(
            "{label}: the commands give {tris} triangles, numtris is {}",
            mesh.numtris
        ));
    }
    p.array(
        m,
        format!("{label}.commands"),
        start,
        (at - start) / 2,
        "short",
        2,
    );
    tris
}

// ---- showing values -----------------------------------------------------------------------

fn field_value(bytes: &[u8], fl: &Field, i: usize) -> String {
    let sz = fl.kind.size();
    let o = fl.offset + i * sz;
    let get = |n: usize| bytes.get(o..o + n).unwrap_or(&[]);
    match fl.kind {
        Kind::Int | Kind::Index => {
            let b = get(4);
            b.try_into()
                .map_or_else(|_| "?".into(), |a| i32::from_le_bytes(a).to_string())
        }
        Kind::Float => {
            let b = get(4);
            b.try_into()
                .map_or_else(|_| "?".into(), |a| show_f32(f32::from_le_bytes(a)))
        }
        Kind::UShort => {
            let b = get(2);
            b.try_into()
                .map_or_else(|_| "?".into(), |a| u16::from_le_bytes(a).to_string())
        }
        Kind::Chars => String::new(),
    }
}

/// A float as Rust prints it (shortest round-trip), with `-0` kept.
fn show_f32(v: f32) -> String {
    format!("{v:?}")
}

fn chars_value(bytes: &[u8], fl: &Field) -> String {
    let s = bytes.get(fl.offset..fl.offset + fl.count).unwrap_or(&[]);
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    let text: String = String::from_utf8_lossy(&s[..end])
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    let mut out = format!("\"{text}\"");
    if end == s.len() && s.len() > 4 {
        out.push_str(" (fills the field, no NUL)");
    } else if s[end..].iter().any(|&c| c != 0) {
        out.push_str(" (bytes after the NUL are not 0)");
    }
    out
}

fn field_text(bytes: &[u8], fl: &Field) -> String {
    if fl.kind == Kind::Chars {
        return chars_value(bytes, fl);
    }
    if fl.count == 1 {
        return field_value(bytes, fl, 0);
    }
    let vals: Vec<String> = (0..fl.count).map(|i| field_value(bytes, fl, i)).collect();
    format!("[{}]", vals.join(", "))
}

impl Parsed {
    fn region_at(&self, file: FileRole, offset: usize) -> Option<&Region> {
        self.regions
            .iter()
            .find(|r| r.file == file && r.offset == offset && r.size > 0)
            .or_else(|| {
                self.regions
                    .iter()
                    .find(|r| r.file == file && r.offset == offset)
            })
    }
}

/// The bytes of each file, by role, for the dump and the comparison.
pub struct FileSet<'a> {
    pub main: &'a [u8],
    pub textures: Option<&'a [u8]>,
    pub groups: Vec<&'a [u8]>,
}

impl<'a> FileSet<'a> {
    fn get(&self, role: FileRole) -> &'a [u8] {
        match role {
            FileRole::Main => self.main,
            FileRole::Textures => self.textures.unwrap_or(&[]),
            FileRole::Group(g) => self.groups.get(g.wrapping_sub(1)).copied().unwrap_or(&[]),
        }
    }
}

/// The text dump: every record with its fields, offsets shown with what they point at, arrays
/// summarised, then the problems.
pub fn dump(parsed: &Parsed, files: &FileSet) -> String {
    let mut s = String::new();
    let mut current = None;
    for r in &parsed.regions {
        if current != Some(r.file) {
            current = Some(r.file);
            let (name, len) = match r.file {
                FileRole::Main => ("main file".to_string(), files.main.len()),
                FileRole::Textures => ("T file".to_string(), files.get(r.file).len()),
                FileRole::Group(g) => (format!("group file {g:02}"), files.get(r.file).len()),
            };
            let _ = writeln!(s, "=== {name} ({len} bytes)");
        }
        let bytes = files.get(r.file);
        let rb = bytes.get(r.offset..r.offset + r.size).unwrap_or(&[]);
        match r.layout {
            Layout::Record(name, fields) => {
                let _ = writeln!(s, "{} @ {} ({name}, {} bytes)", r.label, r.offset, r.size);
                for (fi, fl) in fields.iter().enumerate() {
                    let mut v = field_text(rb, fl);
                    let empty = fields[..fi]
                        .iter()
                        .rev()
                        .find(|x| x.name.starts_with("num"))
                        .is_some_and(|x| field_value(rb, x, 0) == "0");
                    if fl.kind == Kind::Index && empty {
                        v.push_str(" (no entries)");
                    } else if fl.kind == Kind::Index {
                        let off = rb
                            .get(fl.offset..fl.offset + 4)
                            .and_then(|b| b.try_into().ok())
                            .map_or(0, i32::from_le_bytes);
                        if fl.name == "length" {
                            let _ = write!(v, " (file size {})", bytes.len());
                        } else if let Ok(o) = usize::try_from(off) {
                            let role = if r.label.starts_with("T.") {
                                FileRole::Textures
                            } else {
                                r.file
                            };
                            match parsed.region_at(role, o) {
                                Some(t) => {
                                    let _ = write!(v, " → {}", t.label);
                                }
                                None if o == files.get(role).len() => v.push_str(" → end of file"),
                                None => {}
                            }
                        }
                    }
                    let _ = writeln!(s, "  {}: {v}", fl.name);
                }
            }
            Layout::Array { what, size } => {
                let n = r.size / size.max(1);
                let _ = writeln!(s, "{} @ {}: {n} × {what}", r.label, r.offset);
            }
        }
    }
    if parsed.problems.is_empty() {
        s.push_str("invariants: all hold\n");
    } else {
        let _ = writeln!(s, "invariants: {} problem(s)", parsed.problems.len());
        for p in &parsed.problems {
            let _ = writeln!(s, "  problem: {p}");
        }
    }
    s
}

/// The first difference between two models' files: the region (record or array) and field
/// where they first differ, with both values. Content is compared before offsets, so a longer
/// stream is reported where it differs, not as every offset after it. `None` when every region
/// is byte-identical and the region lists match.
pub fn first_difference(a: &Parsed, fa: &FileSet, b: &Parsed, fb: &FileSet) -> Option<String> {
    let bmap: BTreeMap<(FileRole, &str), &Region> = b
        .regions
        .iter()
        .map(|r| ((r.file, r.label.as_str()), r))
        .collect();
    for pass_offsets in [false, true] {
        for ra in &a.regions {
            let Some(rb) = bmap.get(&(ra.file, ra.label.as_str())) else {
                return Some(format!("{}: only in the first file", ra.label));
            };
            let xa = fa
                .get(ra.file)
                .get(ra.offset..ra.offset + ra.size)
                .unwrap_or(&[]);
            let xb = fb
                .get(rb.file)
                .get(rb.offset..rb.offset + rb.size)
                .unwrap_or(&[]);
            match ra.layout {
                Layout::Record(name, fields) => {
                    for fl in fields {
                        // `mstudioanim_t.offset[]` are offsets too (16-bit, relative).
                        let is_offset = matches!(fl.kind, Kind::Index | Kind::UShort);
                        if is_offset != pass_offsets {
                            continue;
                        }
                        let n = fl.count * fl.kind.size();
                        let pa = xa.get(fl.offset..fl.offset + n);
                        let pb = xb.get(fl.offset..fl.offset + n);
                        if pa != pb {
                            return Some(format!(
                                "{} ({name}).{}: {} vs {}",
                                ra.label,
                                fl.name,
                                field_text(xa, fl),
                                field_text(xb, fl)
                            ));
                        }
                    }
                }
                Layout::Array { what, size } => {
                    if pass_offsets {
                        continue;
                    }
                    if xa != xb {
                        let size = size.max(1);
                        let i = xa
                            .chunks(size)
                            .zip(xb.chunks(size))
                            .position(|(x, y)| x != y)
                            .unwrap_or(xa.len().min(xb.len()) / size);
                        let show = |x: &[u8]| -> String {
                            match (what, x.len()) {
                                ("vec3", 12) => {
                                    let v: Vec<String> = x
                                        .chunks_exact(4)
                                        .map(|c| {
                                            show_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                                        })
                                        .collect();
                                    format!("({})", v.join(", "))
                                }
                                ("short", 2) => i16::from_le_bytes([x[0], x[1]]).to_string(),
                                (_, 1) => x[0].to_string(),
                                _ => "(missing)".into(),
                            }
                        };
                        let ea = xa.get(i * size..(i + 1) * size).unwrap_or(&[]);
                        let eb = xb.get(i * size..(i + 1) * size).unwrap_or(&[]);
                        return Some(format!(
                            "{}[{i}] ({what}): {} vs {} ({} vs {} elements)",
                            ra.label,
                            show(ea),
                            show(eb),
                            xa.len() / size,
                            xb.len() / size
                        ));
                    }
                }
            }
        }
    }
    let amap: BTreeMap<(FileRole, &str), ()> = a
        .regions
        .iter()
        .map(|r| ((r.file, r.label.as_str()), ()))
        .collect();
    if let Some(r) = b
        .regions
        .iter()
        .find(|r| !amap.contains_key(&(r.file, r.label.as_str())))
    {
        return Some(format!("{}: only in the second file", r.label));
    }
    for role in [FileRole::Main, FileRole::Textures] {
        if fa.get(role) != fb.get(role) {
            return Some(format!(
                "{role:?}: the files differ outside every known record (padding?); sizes {} and {}",
                fa.get(role).len(),
                fb.get(role).len()
            ));
        }
    }
    if fa.groups != fb.groups {
        return Some("group files differ outside every known record".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<R: Record>(size: usize) {
        assert_eq!(R::SIZE, size, "{}", R::NAME);
        assert_eq!(fields_size(R::FIELDS), size, "{} fields", R::NAME);
        // Fields are contiguous and in order.
        let mut end = 0;
        for fl in R::FIELDS {
            assert_eq!(fl.offset, end, "{}.{}", R::NAME, fl.name);
            end = fl.offset + fl.count * fl.kind.size();
        }
        // Parsing a short slice reads zeros, never panics.
        let _ = R::parse(&vec![0u8; size]);
        let _ = R::parse(&[1, 2, 3]);
    }

    #[test]
    fn record_sizes_match_goldsrc_md_section_4() {
        check::<StudioHdr>(244); // §4.1
        check::<StudioSeqHdr>(76); // §4.2
        check::<Bone>(112); // §4.3
        check::<BoneController>(24); // §4.4
        check::<Attachment>(88); // §4.5
        check::<BBox>(32); // §4.6
        check::<SeqDesc>(176); // §4.7
        check::<Event>(76); // §4.8
        check::<Pivot>(20); // §4.9
        check::<SeqGroup>(104); // §4.10
        check::<Anim>(12); // §4.11
        check::<BodyPart>(76); // §4.12
        check::<Model>(112); // §4.13
        check::<Mesh>(20); // §4.14
        check::<Texture>(80); // §4.16
    }

    #[test]
    fn field_offsets_match_the_spec_tables() {
        let off =
            |fields: &[Field], name: &str| fields.iter().find(|x| x.name == name).unwrap().offset;
        assert_eq!(off(StudioHdr::FIELDS, "numtransitions"), 236);
        assert_eq!(off(StudioHdr::FIELDS, "numattachments"), 212);
        assert_eq!(off(SeqDesc::FIELDS, "numblends"), 120);
        assert_eq!(off(SeqDesc::FIELDS, "nextseq"), 172);
        assert_eq!(off(Model::FIELDS, "normindex"), 100);
        assert_eq!(off(Attachment::FIELDS, "org"), 40);
    }

    #[test]
    fn garbage_is_a_clean_error_or_a_list_of_problems() {
        assert!(parse(&[], None, &[]).is_err());
        assert!(parse(b"IDSQ", None, &[]).is_err());
        let mut bytes = vec![0u8; 300];
        bytes[..4].copy_from_slice(b"IDST");
        bytes[4] = 10;
        // every count and offset huge or negative
        for o in (140..244).step_by(4) {
            bytes[o..o + 4].copy_from_slice(&(-7i32 + o as i32 * 1_000_000).to_le_bytes());
        }
        let p = parse(&bytes, Some(&bytes), &[&bytes, &[1, 2]]).unwrap();
        assert!(!p.problems.is_empty());
        // pseudo-random bytes after a valid header
        let mut x = 12345u32;
        for _ in 0..200 {
            let mut b = bytes.clone();
            for v in b.iter_mut().skip(8) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                *v = (x >> 16) as u8 % 8;
            }
            let _ = parse(&b, None, &[&b]);
        }
    }
}
