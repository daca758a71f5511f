//! `GsModel`: a GoldSrc model with every value decided, ready to be laid out and written.
//!
//! This is the contract between the GoldSrc stages:
//! * `geometry` (vertices, normals, meshes, textures, skins, triangle commands) fills
//!   [`GsModel::body_parts`], [`GsModel::textures`], [`GsModel::skins`];
//! * `animation` (bone defaults and scales, animation streams, sequences, events, pivots,
//!   sequence groups, transitions, hit boxes, sequence boxes) fills [`GsModel::bones`],
//!   [`GsModel::sequences`], [`GsModel::seq_groups`], [`GsModel::transitions`],
//!   [`GsModel::hitboxes`];
//! * `compile` fills the rest (header values, controllers, attachments) and calls the two;
//! * `write` lays the whole thing out as `goldsrc.md` §3 says and returns the files' bytes.
//!
//! Values are final: integers as stored, floats as stored (already truncated, wrapped,
//! scaled the way Valve's HL1 studiomdl does, `goldsrc.md` §8). Names are the strings to store;
//! the writer cuts a name that does not fit its field (the compile stage has already reported
//! it). Field names follow `studio.h` (ValveSoftware/halflife `engine/studio.h`).

/// Everything the main file, the `T.mdl` and the `NN.mdl` files hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsModel {
    /// `studiohdr_t.name`: `<modelname>.mdl` as given (goldsrc.md §2, §4.1).
    pub name: String,
    /// `$eyeposition a b c` stored as (−b, a, c).
    pub eyeposition: [f32; 3],
    /// `$bbox` (ideal movement hull).
    pub min: [f32; 3],
    pub max: [f32; 3],
    /// `$cbox` (clipping box).
    pub bbmin: [f32; 3],
    pub bbmax: [f32; 3],
    /// `$flags`.
    pub flags: i32,
    pub bones: Vec<GsBone>,
    pub controllers: Vec<GsController>,
    pub attachments: Vec<GsAttachment>,
    pub hitboxes: Vec<GsHitbox>,
    pub sequences: Vec<GsSequence>,
    /// At least one (group 0, label `default`).
    pub seq_groups: Vec<GsSeqGroup>,
    /// `numtransitions` = `transitions.len()`; row-major N×N node numbers (goldsrc.md §4.17).
    pub transitions: Vec<Vec<u8>>,
    pub body_parts: Vec<GsBodyPart>,
    pub textures: Vec<GsTexture>,
    /// `short[numskinfamilies][numskinref]`: every row has `numskinref` entries.
    pub skins: Vec<Vec<i16>>,
    /// Textures and skins go to `<name>T.mdl` (`$externaltextures`).
    pub external_textures: bool,
}

/// `mstudiobone_t` (112 bytes, goldsrc.md §4.3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsBone {
    pub name: String,
    pub parent: i32,
    /// Controller index driving X, Y, Z, XR, YR, ZR, or −1.
    pub bonecontroller: [i32; 6],
    /// Default position x, y, z then rotation x, y, z (radians).
    pub value: [f32; 6],
    /// Quantisation step per channel (goldsrc.md §8.7).
    pub scale: [f32; 6],
}

/// `mstudiobonecontroller_t` (24 bytes, §4.4).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsController {
    pub bone: i32,
    /// Motion type bits, possibly with RLOOP 0x8000.
    pub kind: i32,
    pub start: f32,
    pub end: f32,
    /// 0–3 user controller, 4 mouth.
    pub index: i32,
}

/// `mstudioattachment_t` (88 bytes, §4.5): only bone and origin are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsAttachment {
    pub bone: i32,
    pub org: [f32; 3],
}

/// `mstudiobbox_t` (32 bytes, §4.6).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsHitbox {
    pub bone: i32,
    pub group: i32,
    pub bbmin: [f32; 3],
    pub bbmax: [f32; 3],
}

/// `mstudioseqdesc_t` (176 bytes, §4.7) with its events, pivots and animation streams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsSequence {
    pub label: String,
    pub fps: f32,
    pub flags: i32,
    pub activity: i32,
    pub actweight: i32,
    pub events: Vec<GsEvent>,
    pub numframes: i32,
    pub pivots: Vec<GsPivot>,
    pub motiontype: i32,
    pub linearmovement: [f32; 3],
    pub bbmin: [f32; 3],
    pub bbmax: [f32; 3],
    pub blendtype: [i32; 2],
    pub blendstart: [f32; 2],
    pub blendend: [f32; 2],
    pub seqgroup: i32,
    pub entrynode: i32,
    pub exitnode: i32,
    pub nodeflags: i32,
    /// One entry per blend: per bone, per channel (X, Y, Z, XR, YR, ZR), the encoded stream
    /// as 16-bit words (span headers `valid | total << 8` and values), or `None` when the
    /// channel is omitted (offset 0, §4.11, §8.7).
    pub blends: Vec<Vec<[Option<Vec<u16>>; 6]>>,
}

/// `mstudioevent_t` (76 bytes, §4.8).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsEvent {
    pub frame: i32,
    pub event: i32,
    pub options: String,
}

/// `mstudiopivot_t` (20 bytes, §4.9): `org` is always 0.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsPivot {
    pub start: i32,
    pub end: i32,
}

/// `mstudioseqgroup_t` (104 bytes, §4.10).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsSeqGroup {
    pub label: String,
    /// Empty for group 0; `models\<base>NN.mdl` for the others.
    pub name: String,
}

/// `mstudiobodyparts_t` (76 bytes, §4.12); `base` is computed by the writer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsBodyPart {
    pub name: String,
    pub models: Vec<GsModelData>,
}

/// `mstudiomodel_t` (112 bytes, §4.13) and its arrays (§3 item 13).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsModelData {
    /// SMD name as written in the QC (no `.smd`), or `blank`.
    pub name: String,
    /// `type`: 0, except for the 64-character-name quirk (§11 item 10) where Valve's tool
    /// leaves the SMD's node count there.
    pub kind: i32,
    /// Bone of each vertex (numverts bytes).
    pub vert_bones: Vec<u8>,
    /// Bone of each normal, in mesh order (§8.8).
    pub norm_bones: Vec<u8>,
    /// Bone-local vertex positions.
    pub verts: Vec<[f32; 3]>,
    /// Bone-local unit normals, in mesh order.
    pub norms: Vec<[f32; 3]>,
    pub meshes: Vec<GsMesh>,
}

/// `mstudiomesh_t` (20 bytes, §4.14) with its triangle commands (§4.15).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GsMesh {
    pub numtris: i32,
    pub skinref: i32,
    pub numnorms: i32,
    /// The int16 command list, ending with its 0.
    pub commands: Vec<i16>,
}

/// `mstudiotexture_t` (80 bytes, §4.16) with its pixels and palette.
#[derive(Clone, Debug, PartialEq)]
pub struct GsTexture {
    pub name: String,
    pub flags: i32,
    pub width: i32,
    pub height: i32,
    /// `width × height` palette indices, top row first.
    pub pixels: Vec<u8>,
    /// 256 RGB triples.
    pub palette: Vec<u8>,
}
