//! Lays a [`GsModel`] out as Valve's HL1 studiomdl does (`goldsrc.md` §3) and returns the bytes
//! of every file: the `NN.mdl` sequence-group files first, then `T.mdl` (external textures),
//! then the main file, the order Valve's tool writes them in.
//!
//! The layout is computed in one pass over a zero-filled buffer: every byte not written
//! explicitly is 0 (unused fields, string tails, padding). Sections with no entries still
//! record the current offset (§3). The writer never fails: limits (16-bit animation offsets,
//! counts, name lengths) are checked by the stages and [`compile`](super::compile) before it runs; a name
//! longer than its field is cut to the field (the compile stage has reported it).

use super::model::GsModel;

/// `studiohdr_t` size (§4.1).
pub const HEADER_SIZE: usize = 244;
/// `studioseqhdr_t` size (§4.2).
pub const SEQHEADER_SIZE: usize = 76;
pub const BONE_SIZE: usize = 112;
pub const CONTROLLER_SIZE: usize = 24;
pub const ATTACHMENT_SIZE: usize = 88;
pub const HITBOX_SIZE: usize = 32;
pub const ANIM_SIZE: usize = 12;
pub const SEQDESC_SIZE: usize = 176;
pub const EVENT_SIZE: usize = 76;
pub const PIVOT_SIZE: usize = 20;
pub const SEQGROUP_SIZE: usize = 104;
pub const BODYPART_SIZE: usize = 76;
pub const MODEL_SIZE: usize = 112;
pub const MESH_SIZE: usize = 20;
pub const TEXTURE_SIZE: usize = 80;

/// A zero-filled output buffer with a write position.
struct Out {
    bytes: Vec<u8>,
}

impl Out {
    fn new() -> Out {
        Out { bytes: Vec::new() }
    }

    fn pos(&self) -> usize {
        self.bytes.len()
    }

    /// Reserves `n` zero bytes at the end and returns their offset.
    fn reserve(&mut self, n: usize) -> usize {
        let at = self.bytes.len();
        self.bytes.resize(at + n, 0);
        at
    }

    /// `ALIGN`: pads with zeros to the next multiple of 4.
    fn align(&mut self) {
        let n = (4 - self.bytes.len() % 4) % 4;
        self.reserve(n);
    }

    fn put(&mut self, at: usize, data: &[u8]) {
        if let Some(dst) = self.bytes.get_mut(at..at + data.len()) {
            dst.copy_from_slice(data);
        }
    }

    fn i32(&mut self, at: usize, v: i32) {
        self.put(at, &v.to_le_bytes());
    }

    /// An offset or count as stored (`int`): values beyond `i32::MAX` cannot occur in a file
    /// whose size fits the limits compile enforces; they are clamped, never wrapped.
    fn idx(&mut self, at: usize, v: usize) {
        self.i32(at, i32::try_from(v).unwrap_or(i32::MAX));
    }

    fn u16(&mut self, at: usize, v: u16) {
        self.put(at, &v.to_le_bytes());
    }

    fn f32(&mut self, at: usize, v: f32) {
        self.put(at, &v.to_le_bytes());
    }

    fn vec3(&mut self, at: usize, v: [f32; 3]) {
        for (i, x) in v.iter().enumerate() {
            self.f32(at + 4 * i, *x);
        }
    }

    /// A fixed-size char field: the name's bytes, cut to the field; the rest stays 0 (a name
    /// that fills the field has no NUL, as Valve's tool writes it).
    fn name(&mut self, at: usize, name: &str, field: usize) {
        let b = name.as_bytes();
        let n = b.len().min(field);
        self.put(at, &b[..n]);
    }

    /// Appends bytes at the end.
    fn append(&mut self, data: &[u8]) -> usize {
        let at = self.reserve(data.len());
        self.put(at, data);
        at
    }
}

/// The file name of sequence group `g` (1-based) for output base `base`: `<base>01.mdl`, …
pub fn group_file_name(base: &str, g: usize) -> String {
    format!("{base}{g:02}.mdl")
}

/// Writes every file of the model. `base` is the output path without `.mdl` (`goldsrc.md` §2).
/// Returns `(path, bytes)`: group files (`<base>01.mdl`, …) first, then `<base>T.mdl` when the
/// textures are external, then `<base>.mdl`.
pub fn write_files(gs: &GsModel, base: &str) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let groups = gs.seq_groups.len().max(1);
    // animindex of each sequence, in the file of its group.
    let mut animindex = vec![0usize; gs.sequences.len()];
    for g in 1..groups {
        let mut out = Out::new();
        out.reserve(SEQHEADER_SIZE);
        out.put(0, b"IDSQ");
        out.i32(4, 10);
        let name = gs.seq_groups.get(g).map_or("", |s| s.name.as_str());
        out.name(8, name, 64);
        write_group_animations(&mut out, gs, g as i32, &mut animindex);
        let len = out.pos();
        out.idx(72, len);
        files.push((group_file_name(base, g), out.bytes));
    }
    if gs.external_textures {
        let mut out = Out::new();
        out.reserve(HEADER_SIZE);
        out.put(0, b"IDST");
        out.i32(4, 10);
        write_textures(&mut out, gs);
        let len = out.pos();
        out.idx(72, len);
        files.push((format!("{base}T.mdl"), out.bytes));
    }
    files.push((format!("{base}.mdl"), write_main(gs, &mut animindex)));
    files
}

/// The main file (§3).
fn write_main(gs: &GsModel, animindex: &mut [usize]) -> Vec<u8> {
    let mut out = Out::new();
    // 1. header
    out.reserve(HEADER_SIZE);
    out.put(0, b"IDST");
    out.i32(4, 10);
    out.name(8, &gs.name, 64);
    out.vec3(76, gs.eyeposition);
    out.vec3(88, gs.min);
    out.vec3(100, gs.max);
    out.vec3(112, gs.bbmin);
    out.vec3(124, gs.bbmax);
    out.i32(136, gs.flags);

    // 2. bones
    out.idx(140, gs.bones.len());
    let at = out.reserve(BONE_SIZE * gs.bones.len());
    out.idx(144, at);
    for (i, b) in gs.bones.iter().enumerate() {
        let p = at + BONE_SIZE * i;
        out.name(p, &b.name, 32);
        out.i32(p + 32, b.parent);
        for k in 0..6 {
            out.i32(p + 40 + 4 * k, b.bonecontroller[k]);
            out.f32(p + 64 + 4 * k, b.value[k]);
            out.f32(p + 88 + 4 * k, b.scale[k]);
        }
    }
    out.align();

    // 3. bone controllers
    out.idx(148, gs.controllers.len());
    let at = out.reserve(CONTROLLER_SIZE * gs.controllers.len());
    out.idx(152, at);
    for (i, c) in gs.controllers.iter().enumerate() {
        let p = at + CONTROLLER_SIZE * i;
        out.i32(p, c.bone);
        out.i32(p + 4, c.kind);
        out.f32(p + 8, c.start);
        out.f32(p + 12, c.end);
        out.i32(p + 20, c.index);
    }
    out.align();

    // 4. attachments
    out.idx(212, gs.attachments.len());
    let at = out.reserve(ATTACHMENT_SIZE * gs.attachments.len());
    out.idx(216, at);
    for (i, a) in gs.attachments.iter().enumerate() {
        let p = at + ATTACHMENT_SIZE * i;
        out.i32(p + 36, a.bone);
        out.vec3(p + 40, a.org);
    }
    out.align();

    // 5. hit boxes
    out.idx(156, gs.hitboxes.len());
    let at = out.reserve(HITBOX_SIZE * gs.hitboxes.len());
    out.idx(160, at);
    for (i, h) in gs.hitboxes.iter().enumerate() {
        let p = at + HITBOX_SIZE * i;
        out.i32(p, h.bone);
        out.i32(p + 4, h.group);
        out.vec3(p + 8, h.bbmin);
        out.vec3(p + 20, h.bbmax);
    }
    out.align();

    // 6. animations of group 0
    write_group_animations(&mut out, gs, 0, animindex);

    // 7. sequence descriptors
    out.idx(164, gs.sequences.len());
    let seqs = out.reserve(SEQDESC_SIZE * gs.sequences.len());
    out.idx(168, seqs);
    for (i, s) in gs.sequences.iter().enumerate() {
        let p = seqs + SEQDESC_SIZE * i;
        out.name(p, &s.label, 32);
        out.f32(p + 32, s.fps);
        out.i32(p + 36, s.flags);
        out.i32(p + 40, s.activity);
        out.i32(p + 44, s.actweight);
        out.idx(p + 48, s.events.len());
        out.i32(p + 56, s.numframes);
        out.idx(p + 60, s.pivots.len());
        out.i32(p + 68, s.motiontype);
        out.vec3(p + 76, s.linearmovement);
        out.vec3(p + 96, s.bbmin);
        out.vec3(p + 108, s.bbmax);
        out.idx(p + 120, s.blends.len());
        out.idx(p + 124, animindex.get(i).copied().unwrap_or(0));
        for k in 0..2 {
            out.i32(p + 128 + 4 * k, s.blendtype[k]);
            out.f32(p + 136 + 4 * k, s.blendstart[k]);
            out.f32(p + 144 + 4 * k, s.blendend[k]);
        }
        out.i32(p + 156, s.seqgroup);
        out.i32(p + 160, s.entrynode);
        out.i32(p + 164, s.exitnode);
        out.i32(p + 168, s.nodeflags);
    }

    // 8. events and pivots, per sequence
    for (i, s) in gs.sequences.iter().enumerate() {
        let p = seqs + SEQDESC_SIZE * i;
        let at = out.reserve(EVENT_SIZE * s.events.len());
        out.idx(p + 52, at);
        for (j, e) in s.events.iter().enumerate() {
            let q = at + EVENT_SIZE * j;
            out.i32(q, e.frame);
            out.i32(q + 4, e.event);
            out.name(q + 12, &e.options, 64);
        }
        out.align();
        let at = out.reserve(PIVOT_SIZE * s.pivots.len());
        out.idx(p + 64, at);
        for (j, v) in s.pivots.iter().enumerate() {
            let q = at + PIVOT_SIZE * j;
            out.i32(q + 12, v.start);
            out.i32(q + 16, v.end);
        }
        out.align();
    }

    // 9. sequence groups (at least one)
    let default_group = [super::model::GsSeqGroup {
        label: "default".into(),
        name: String::new(),
    }];
    let groups: &[super::model::GsSeqGroup] = if gs.seq_groups.is_empty() {
        &default_group
    } else {
        &gs.seq_groups
    };
    out.idx(172, groups.len());
    let at = out.reserve(SEQGROUP_SIZE * groups.len());
    out.idx(176, at);
    for (i, g) in groups.iter().enumerate() {
        let p = at + SEQGROUP_SIZE * i;
        out.name(p, &g.label, 32);
        out.name(p + 32, &g.name, 64);
    }
    out.align();

    // 10. transitions
    let n = gs.transitions.len();
    out.idx(236, n);
    let at = out.reserve(n * n);
    out.idx(240, at);
    for (i, row) in gs.transitions.iter().enumerate() {
        let r: Vec<u8> = (0..n).map(|j| row.get(j).copied().unwrap_or(0)).collect();
        out.put(at + n * i, &r);
    }
    out.align();

    // 11, 12. body parts, then every model of every part
    out.idx(204, gs.body_parts.len());
    let parts = out.reserve(BODYPART_SIZE * gs.body_parts.len());
    out.idx(208, parts);
    let total_models: usize = gs.body_parts.iter().map(|b| b.models.len()).sum();
    let models = out.reserve(MODEL_SIZE * total_models);
    out.align();
    let mut base: i64 = 1;
    let mut first = 0usize;
    for (i, bp) in gs.body_parts.iter().enumerate() {
        let p = parts + BODYPART_SIZE * i;
        out.name(p, &bp.name, 64);
        out.idx(p + 64, bp.models.len());
        if i > 0 {
            let prev = gs.body_parts.get(i - 1).map_or(0, |b| b.models.len()) as i64;
            base = base.saturating_mul(prev);
        }
        out.i32(p + 68, i32::try_from(base).unwrap_or(i32::MAX));
        out.idx(p + 72, models + MODEL_SIZE * first);
        first += bp.models.len();
    }

    // 13. model data
    let all = gs.body_parts.iter().flat_map(|b| b.models.iter());
    for (i, m) in all.enumerate() {
        let p = models + MODEL_SIZE * i;
        out.name(p, &m.name, 64);
        // A 64-byte name has no NUL; Valve's tool leaves `type` as it found it (§11.10).
        out.i32(p + 64, m.kind);
        out.idx(p + 72, m.meshes.len());
        out.idx(p + 80, m.verts.len());
        out.idx(p + 92, m.norms.len());
        let at = out.append(&m.vert_bones);
        out.idx(p + 84, at);
        out.align();
        let at = out.append(&m.norm_bones);
        out.idx(p + 96, at);
        out.align();
        let at = out.reserve(12 * m.verts.len());
        out.idx(p + 88, at);
        for (j, v) in m.verts.iter().enumerate() {
            out.vec3(at + 12 * j, *v);
        }
        out.align();
        let at = out.reserve(12 * m.norms.len());
        out.idx(p + 100, at);
        for (j, v) in m.norms.iter().enumerate() {
            out.vec3(at + 12 * j, *v);
        }
        out.align();
        let meshes = out.reserve(MESH_SIZE * m.meshes.len());
        out.idx(p + 76, meshes);
        out.align();
        for (j, mesh) in m.meshes.iter().enumerate() {
            let q = meshes + MESH_SIZE * j;
            out.i32(q, mesh.numtris);
            out.i32(q + 8, mesh.skinref);
            out.i32(q + 12, mesh.numnorms);
            let at = out.reserve(2 * mesh.commands.len());
            out.idx(q + 4, at);
            for (k, c) in mesh.commands.iter().enumerate() {
                out.put(at + 2 * k, &c.to_le_bytes());
            }
            out.align();
        }
    }

    // 14-16. textures, unless they go to the T file
    if !gs.external_textures {
        write_textures(&mut out, gs);
    }
    let len = out.pos();
    out.idx(72, len);
    out.bytes
}

/// Sections 14-16 (textures, skin table, pixels) and their header fields.
fn write_textures(out: &mut Out, gs: &GsModel) {
    out.idx(180, gs.textures.len());
    let at = out.reserve(TEXTURE_SIZE * gs.textures.len());
    out.idx(184, at);
    out.align();
    let numskinref = gs.skins.first().map_or(0, Vec::len);
    out.idx(192, numskinref);
    out.idx(196, gs.skins.len());
    let skins = out.reserve(2 * numskinref * gs.skins.len());
    out.idx(200, skins);
    for (f, row) in gs.skins.iter().enumerate() {
        for r in 0..numskinref {
            let v = row.get(r).copied().unwrap_or(0);
            out.put(skins + 2 * (f * numskinref + r), &v.to_le_bytes());
        }
    }
    out.align();
    out.idx(188, out.pos());
    for (i, t) in gs.textures.iter().enumerate() {
        let p = at + TEXTURE_SIZE * i;
        out.name(p, &t.name, 64);
        out.i32(p + 64, t.flags);
        out.i32(p + 68, t.width);
        out.i32(p + 72, t.height);
        let data = out.append(&t.pixels);
        out.idx(p + 76, data);
        let mut palette = t.palette.clone();
        palette.resize(768, 0);
        out.append(&palette);
    }
    out.align();
}

/// Section 6 for group `group`: per sequence of the group, its `mstudioanim_t` table, ALIGN,
/// its streams, ALIGN (§4.11). Records each sequence's `animindex`.
fn write_group_animations(out: &mut Out, gs: &GsModel, group: i32, animindex: &mut [usize]) {
    let numbones = gs.bones.len();
    for (i, s) in gs.sequences.iter().enumerate() {
        if s.seqgroup != group {
            continue;
        }
        let table = out.reserve(ANIM_SIZE * numbones * s.blends.len());
        if let Some(slot) = animindex.get_mut(i) {
            *slot = table;
        }
        out.align();
        for (b, blend) in s.blends.iter().enumerate() {
            for j in 0..numbones {
                let anim = table + ANIM_SIZE * (b * numbones + j);
                let Some(channels) = blend.get(j) else {
                    continue;
                };
                for (k, stream) in channels.iter().enumerate() {
                    let Some(words) = stream else { continue };
                    let at = out.pos();
                    out.u16(anim + 2 * k, u16::try_from(at - anim).unwrap_or(u16::MAX));
                    let at = out.reserve(2 * words.len());
                    for (w, v) in words.iter().enumerate() {
                        out.u16(at + 2 * w, *v);
                    }
                }
            }
        }
        out.align();
    }
}
