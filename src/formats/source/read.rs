//! A reader for MDL v48 + VVD + VTX, used by `mdlc inspect` and the tests: every offset is
//! bounds-checked, so any bytes give a clean error, never a panic.

use super::records::*;

pub struct RMesh {
    pub rec: StudioMesh,
}

pub struct RModel {
    pub rec: StudioModel,
    pub meshes: Vec<RMesh>,
    /// File offset of the record.
    pub at: i64,
}

pub struct RBodyPart {
    pub name: String,
    pub rec: BodyParts,
    pub models: Vec<RModel>,
}

pub struct RBone {
    pub name: String,
    pub rec: Bone,
    /// The procedural record `procindex` points at, by `proctype`.
    pub procedural: Option<RProc>,
}

/// A procedural bone's record (source-sdk-2013 `studio.h`).
pub enum RProc {
    AxisInterp(AxisInterpBone),
    QuatInterp(QuatInterpBone, Vec<QuatInterpInfo>),
    AimAt(AimAtBone),
    Jiggle(JiggleBone),
    /// A `proctype` this reader does not know.
    Other(i32),
}

fn read_proc(b: &[u8], at: i64, rec: &Bone) -> Result<Option<RProc>, String> {
    if rec.proctype == 0 || rec.procindex == 0 {
        return Ok(None);
    }
    let p = at + rec.procindex as i64;
    Ok(Some(match rec.proctype {
        1 => RProc::AxisInterp(read(b, p, "mstudioaxisinterpbone_t")?),
        2 => {
            let q: QuatInterpBone = read(b, p, "mstudioquatinterpbone_t")?;
            let t = read_array(
                b,
                p + q.triggerindex as i64,
                count(q.numtriggers, 1024, "trigger")?,
                "mstudioquatinterpinfo_t",
            )?;
            RProc::QuatInterp(q, t)
        }
        3 | 4 => RProc::AimAt(read(b, p, "mstudioaimatbone_t")?),
        5 => RProc::Jiggle(read(b, p, "mstudiojigglebone_t")?),
        k => RProc::Other(k),
    }))
}

pub struct RAttachment {
    pub name: String,
    pub rec: Attachment,
}

pub struct RHitboxSet {
    pub name: String,
    pub boxes: Vec<(String, BBox)>,
}

pub struct Mdl {
    pub hdr: StudioHdr,
    pub hdr2: StudioHdr2,
    pub file_len: usize,
    pub bones: Vec<RBone>,
    pub attachments: Vec<RAttachment>,
    pub hitbox_sets: Vec<RHitboxSet>,
    pub textures: Vec<String>,
    pub cd_materials: Vec<String>,
    pub skins: Vec<Vec<i16>>,
    pub body_parts: Vec<RBodyPart>,
    pub sequences: Vec<String>,
    /// The texture records, in the order of `textures`.
    pub texture_recs: Vec<Texture>,
    /// Every sequence: label, activity name, record.
    pub seq_recs: Vec<(String, String, SeqDesc)>,
    /// Every local animation: name, record.
    pub anims: Vec<(String, AnimDesc)>,
    pub surfaceprop: String,
    pub keyvalues: String,
    /// The model name stored behind `studiohdr2.sznameindex` (empty when there is none).
    pub hdr2_name: String,
    /// The whole MDL file, for decoding animations ([`super::pose::decode_anim`]).
    pub bytes: Vec<u8>,
    /// Every local animation with everything it points at, in the order of `anims`.
    pub animations: Vec<RAnim>,
    /// Every sequence with everything it points at, in the order of `seq_recs`.
    pub seqs: Vec<RSeq>,
    /// `mstudioposeparamdesc_t` array (`source-animation.md` 6.5).
    pub pose_params: Vec<RPoseParam>,
    /// `mstudiobonecontroller_t` array (8.1).
    pub bone_controllers: Vec<BoneController>,
    /// Transition-graph node names; node number `n` (1-based) is `nodes[n - 1]` (6.10).
    pub nodes: Vec<String>,
    /// `numlocalnodes²` bytes: entry `(from − 1)·n + (to − 1)` is the next node on the way.
    pub node_transitions: Vec<u8>,
    /// `$ikchain`s: name, link type and links (bone, knee direction).
    pub ik_chains: Vec<RIkChain>,
    /// `$ikautoplaylock`s.
    pub ik_autoplay_locks: Vec<IkLock>,
    /// Flexes, controllers, rules, mouths and eyeballs.
    pub face: super::face_read::RFace,
    /// `$animblocksize`: the `mstudioanimblock_t` table (entry 0 is the MDL itself) and the
    /// name the MDL gives its `.ani` file (empty without one).
    pub anim_blocks: Vec<AnimBlock>,
    pub ani_name: String,
    /// Where the `.ani` file's bytes start in [`Mdl::bytes`] (right after the MDL's), when it
    /// was read with the model.
    pub ani_at: Option<usize>,
}

/// Resolves where an animation's data is: block 0 is the MDL (offsets relative to the
/// animdesc), a block above 0 is a range of the `.ani` file, appended to the MDL's bytes.
struct Blocks<'a> {
    table: &'a [AnimBlock],
    /// Offset of the `.ani` bytes in the combined image, and their length.
    ani: Option<(usize, usize)>,
}

impl Blocks<'_> {
    /// The offset in the combined image of `index` in `block` (`base`: the animdesc, for block
    /// 0); `Ok(None)` when the block is in an `.ani` file that was not read, or is −1 ("needs
    /// recompiling").
    fn at(&self, base: i64, block: i32, index: i32) -> Result<Option<usize>, String> {
        if block == 0 {
            return usize::try_from(base + i64::from(index))
                .map(Some)
                .map_err(|_| format!("offset {index} from {base} is before the file"));
        }
        let Some((start, len)) = self.ani else {
            return Ok(None);
        };
        let Some(b) = usize::try_from(block).ok().and_then(|k| self.table.get(k)) else {
            return Ok(None);
        };
        let (ds, de) = (i64::from(b.datastart), i64::from(b.dataend));
        if ds < 0 || de < ds || de as u64 > len as u64 {
            return Err(format!(
                "anim block {block} ({ds}..{de}) is outside the .ani file ({len} bytes)"
            ));
        }
        let at = ds + i64::from(index);
        if index < 0 || at >= de {
            return Err(format!(
                "offset {index} in anim block {block} is outside the block ({} bytes)",
                de - ds
            ));
        }
        Ok(Some(start + at as usize))
    }
}

/// One `mstudioikchain_t` with its links.
#[derive(Clone, Debug, PartialEq)]
pub struct RIkChain {
    pub name: String,
    pub linktype: i32,
    pub links: Vec<IkLink>,
}

/// Where one record chain of an animation is (one per section, or one when not sectioned).
#[derive(Clone, Debug, PartialEq)]
pub struct RChain {
    /// The section (0 when the animation is not sectioned).
    pub section: usize,
    /// `animblock` of the data: 0 = in this file, > 0 = an external `.ani` block, −1 = none.
    pub animblock: i32,
    /// File offset of the first `mstudioanim_t` when the data is in this file.
    pub start: Option<usize>,
    /// How many frames the chain's streams must cover (3.2): `numframes` when not sectioned;
    /// per section the frames `min(s·S, N−1) ..= min((s+1)·S, N−1)` (S+1 frames, fewer at the
    /// end; the last entry holds only frame N−1).
    pub frames: usize,
}

/// One `mstudioanimdesc_t` with what it points at.
pub struct RAnim {
    pub name: String,
    pub rec: AnimDesc,
    /// File offset of the animdesc (the base of its relative offsets).
    pub offset: usize,
    pub movements: Vec<Movement>,
    /// The section table (3.2); empty when `sectionframes` is 0.
    pub sections: Vec<AnimSection>,
    /// One entry per section (one in all when not sectioned).
    pub chains: Vec<RChain>,
    /// The IK rules (3.4), from the MDL or from the animation's block of a `.ani` file read
    /// with it.
    pub ikrules: Vec<RIkRule>,
    /// File offset of the zero-frame data (`zeroframeindex`), when there is any.
    pub zero_frame: Option<usize>,
}

/// One `mstudioikrule_t` with its attachment name and its error, decoded: per frame from the
/// rule's start, position and Euler angles.
pub struct RIkRule {
    pub rec: IkRule,
    pub attachment: String,
    pub error: Option<(CompressedIkError, Vec<super::ikrule::IkErrorFrame>)>,
}

/// The IK rules of animdesc `a`, whose table is at `table`.
fn read_ik_rules(b: &[u8], table: i64, name: &str, a: &AnimDesc) -> Result<Vec<RIkRule>, String> {
    let recs: Vec<IkRule> = read_array(b, table, count(a.numikrules, 64, "IK rule")?, "IK rule")
        .map_err(|e| format!("animation `{name}`: {e}"))?;
    let last = (a.numframes - 1).max(0) as f32;
    let mut out = Vec::with_capacity(recs.len());
    for (j, r) in recs.into_iter().enumerate() {
        let rule_at = table + (j * IkRule::SIZE) as i64;
        let attachment = if r.szattachmentindex != 0 {
            read_cstr(b, rule_at + r.szattachmentindex as i64)?
        } else {
            String::new()
        };
        let error = if r.compressedikerrorindex != 0 {
            let err_at = rule_at + r.compressedikerrorindex as i64;
            let c: CompressedIkError = read(b, err_at, "compressed IK error")?;
            // frames from start to end, two more when the rule runs past the last frame
            let (s, e) = (
                (r.start * last).round() as i64,
                (r.end * last).round() as i64,
            );
            // (saturating: a broken file's cycles can be anything, and are refused below)
            let mut n = e.saturating_sub(s).saturating_add(1).max(0) as usize;
            if e > last as i64 {
                n = n.saturating_add(2);
            }
            // a file's cycles can say anything: mdlc writes at most 65,536 error frames a rule
            // (Valve's compilers far fewer), so more is a broken file, not a reason to allocate
            if n > 1 << 17 || !(r.start.is_finite() && r.end.is_finite()) {
                return Err(format!(
                    "animation `{name}`: IK rule {j} covers cycles {} to {} of {} frames",
                    r.start, r.end, a.numframes
                ));
            }
            let mut streams: [&[u8]; 6] = [&[]; 6];
            for (k, st) in streams.iter_mut().enumerate() {
                let p = usize::try_from(err_at + i64::from(c.offset[k])).map_err(|_| {
                    format!("animation `{name}`: IK error stream {k} before the file")
                })?;
                *st = b.get(p..).ok_or_else(|| {
                    format!("animation `{name}`: IK error stream {k} past the end")
                })?;
            }
            let frames = super::ikrule::decode_error(c.scale, &streams, n)
                .map_err(|e| format!("animation `{name}`: IK rule {j}: {e}"))?;
            Some((c, frames))
        } else {
            None
        };
        out.push(RIkRule {
            rec: r,
            attachment,
            error,
        });
    }
    Ok(out)
}

/// One `mstudioevent_t` (6.3).
pub struct REvent {
    pub rec: Event,
    /// The name behind `szeventindex` (named events); empty for numeric events.
    pub name: String,
    pub options: String,
}

/// One `mstudioseqdesc_t` with what it points at.
pub struct RSeq {
    pub label: String,
    pub activity: String,
    pub rec: SeqDesc,
    /// File offset of the seqdesc (the base of its relative offsets).
    pub offset: usize,
    pub events: Vec<REvent>,
    /// `groupsize[0]·groupsize[1]` animation indices, entry `(x, y)` at `y·groupsize[0] + x`.
    pub anim_indices: Vec<i16>,
    /// `groupsize[0] + groupsize[1]` pose keys; empty when `posekeyindex` is 0.
    pub pose_keys: Vec<f32>,
    /// One weight per bone; empty when `weightlistindex` is 0 (a broken file).
    pub weights: Vec<f32>,
    pub autolayers: Vec<AutoLayer>,
    pub iklocks: Vec<IkLock>,
    /// The key-value text (without its NUL); empty when `keyvaluesize` is 0.
    pub keyvalues: String,
    /// Activity modifier names (v48).
    pub activity_modifiers: Vec<String>,
}

/// One `mstudioposeparamdesc_t` (6.5).
pub struct RPoseParam {
    pub name: String,
    pub rec: PoseParamDesc,
}

/// One record header of a record chain (`mstudioanim_t`, 4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainRecord {
    /// File offset of the record.
    pub offset: usize,
    pub bone: u8,
    pub flags: u8,
}

/// The record headers of the chain at `start`, following `nextoffset` until it is 0 (an empty
/// chain is one record with bone 255). A non-positive step other than the final 0, a record
/// outside the file or more than 256 records is an error.
pub fn walk_chain(b: &[u8], start: usize) -> Result<Vec<ChainRecord>, String> {
    let mut out = Vec::new();
    let mut at = start as i64;
    loop {
        let bone: u8 = read(b, at, "mstudioanim_t")?;
        let flags: u8 = read(b, at + 1, "mstudioanim_t")?;
        let next: i16 = read(b, at + 2, "mstudioanim_t")?;
        out.push(ChainRecord {
            offset: at as usize,
            bone,
            flags,
        });
        if next == 0 {
            return Ok(out);
        }
        if next < 4 {
            return Err(format!(
                "record at offset {at} has nextoffset {next} (must be 0 or at least 4)"
            ));
        }
        if out.len() >= 256 {
            return Err(format!(
                "the chain at offset {start} has more than 256 records"
            ));
        }
        at += next as i64;
    }
}

fn count(n: i32, max: i32, what: &str) -> Result<usize, String> {
    if n < 0 || n > max {
        return Err(format!("{what} count {n} is out of range"));
    }
    Ok(n as usize)
}

fn name_at(b: &[u8], base: usize, rel: i32) -> Result<String, String> {
    read_cstr(b, base as i64 + rel as i64)
}

pub fn read_mdl(b: &[u8]) -> Result<Mdl, String> {
    read_mdl_ani(b, None)
}

/// Reads an MDL v48 with its `.ani` file (`$animblocksize`), when there is one: the animation
/// data in its blocks is read too (the `.ani` bytes are appended to [`Mdl::bytes`]).
pub fn read_mdl_ani(mdl: &[u8], ani: Option<&[u8]>) -> Result<Mdl, String> {
    let hdr: StudioHdr = read(mdl, 0, "studiohdr_t")?;
    let anim_blocks: Vec<AnimBlock> = read_array(
        mdl,
        hdr.animblockindex as i64,
        count(hdr.numanimblocks, 256, "anim block")?,
        "anim block",
    )?;
    let ani_name = if hdr.szanimblocknameindex != 0 {
        read_cstr(mdl, hdr.szanimblocknameindex as i64)?
    } else {
        String::new()
    };
    let combined;
    let (b, ani_at): (&[u8], _) = match ani {
        Some(a) => {
            let h: StudioHdr = read(a, 0, ".ani header")?;
            if h.id != i32::from_le_bytes(*b"IDAG") {
                return Err("the .ani file has no IDAG header".into());
            }
            if h.version != 48 || h.length as u64 != a.len() as u64 {
                return Err(format!(
                    "the .ani header says version {} and {} bytes; the file has {} bytes",
                    h.version,
                    h.length,
                    a.len()
                ));
            }
            combined = [mdl, a].concat();
            (&combined, Some(mdl.len()))
        }
        None => (mdl, None),
    };
    let blocks = Blocks {
        table: &anim_blocks,
        ani: ani_at.map(|at| (at, b.len() - at)),
    };
    if hdr.id != i32::from_le_bytes(*b"IDST") {
        return Err("not an MDL file (no IDST)".into());
    }
    if hdr.version != 48 {
        return Err(format!("MDL version {} (expected 48)", hdr.version));
    }
    let hdr2: StudioHdr2 = if hdr.studiohdr2index != 0 {
        read(b, hdr.studiohdr2index as i64, "studiohdr2_t")?
    } else {
        StudioHdr2::default()
    };
    let mut bones = Vec::new();
    for i in 0..count(hdr.numbones, 256, "bone")? {
        let at = hdr.boneindex as i64 + (i * Bone::SIZE) as i64;
        let rec: Bone = read(b, at, "bone")?;
        bones.push(RBone {
            name: read_cstr(b, at + rec.sznameindex as i64)?,
            procedural: read_proc(b, at, &rec)?,
            rec,
        });
    }
    let mut attachments = Vec::new();
    for i in 0..count(hdr.numlocalattachments, 4096, "attachment")? {
        let at = hdr.localattachmentindex as i64 + (i * Attachment::SIZE) as i64;
        let rec: Attachment = read(b, at, "attachment")?;
        attachments.push(RAttachment {
            name: read_cstr(b, at + rec.sznameindex as i64)?,
            rec,
        });
    }
    let mut ik_chains = Vec::new();
    for i in 0..count(hdr.numikchains, 256, "IK chain")? {
        let at = hdr.ikchainindex as i64 + (i * IkChainRec::SIZE) as i64;
        let rec: IkChainRec = read(b, at, "IK chain")?;
        ik_chains.push(RIkChain {
            name: read_cstr(b, at + rec.sznameindex as i64)?,
            linktype: rec.linktype,
            links: read_array::<IkLink>(
                b,
                at + rec.linkindex as i64,
                count(rec.numlinks, 256, "IK link")?,
                "IK link",
            )?,
        });
    }
    let ik_autoplay_locks = read_array::<IkLock>(
        b,
        hdr.localikautoplaylockindex as i64,
        count(hdr.numlocalikautoplaylocks, 256, "IK autoplay lock")?,
        "IK autoplay lock",
    )?;
    let mut hitbox_sets = Vec::new();
    for i in 0..count(hdr.numhitboxsets, 256, "hitbox set")? {
        let at = hdr.hitboxsetindex as i64 + (i * HitboxSet::SIZE) as i64;
        let s: HitboxSet = read(b, at, "hitbox set")?;
        let mut boxes = Vec::new();
        for k in 0..count(s.numhitboxes, 4096, "hitbox")? {
            let bat = at + s.hitboxindex as i64 + (k * BBox::SIZE) as i64;
            let bb: BBox = read(b, bat, "hitbox")?;
            let name = if bb.szhitboxnameindex == 0 {
                String::new()
            } else {
                read_cstr(b, bat + bb.szhitboxnameindex as i64)?
            };
            boxes.push((name, bb));
        }
        hitbox_sets.push(RHitboxSet {
            name: read_cstr(b, at + s.sznameindex as i64)?,
            boxes,
        });
    }
    let mut textures = Vec::new();
    let mut texture_recs = Vec::new();
    for i in 0..count(hdr.numtextures, 4096, "texture")? {
        let at = hdr.textureindex as i64 + (i * Texture::SIZE) as i64;
        let t: Texture = read(b, at, "texture")?;
        textures.push(read_cstr(b, at + t.sznameindex as i64)?);
        texture_recs.push(t);
    }
    let mut cd_materials = Vec::new();
    for i in 0..count(hdr.numcdtextures, 4096, "cd texture")? {
        let off: i32 = read(
            b,
            hdr.cdtextureindex as i64 + 4 * i as i64,
            "cd texture offset",
        )?;
        cd_materials.push(read_cstr(b, off as i64)?);
    }
    let mut skins = Vec::new();
    let nref = count(hdr.numskinref, 4096, "skin ref")?;
    for f in 0..count(hdr.numskinfamilies, 4096, "skin family")? {
        let mut row = Vec::new();
        for r in 0..nref {
            row.push(read::<i16>(
                b,
                hdr.skinindex as i64 + 2 * (f * nref + r) as i64,
                "skin table",
            )?);
        }
        skins.push(row);
    }
    let mut body_parts = Vec::new();
    for i in 0..count(hdr.numbodyparts, 4096, "body part")? {
        let at = hdr.bodypartindex as i64 + (i * BodyParts::SIZE) as i64;
        let bp: BodyParts = read(b, at, "body part")?;
        let mut models = Vec::new();
        for m in 0..count(bp.nummodels, 4096, "model")? {
            let mat = at + bp.modelindex as i64 + (m * StudioModel::SIZE) as i64;
            let mr: StudioModel = read(b, mat, "model")?;
            let mut meshes = Vec::new();
            for k in 0..count(mr.nummeshes, 65536, "mesh")? {
                let meat = mat + mr.meshindex as i64 + (k * StudioMesh::SIZE) as i64;
                meshes.push(RMesh {
                    rec: read(b, meat, "mesh")?,
                });
            }
            models.push(RModel {
                rec: mr,
                meshes,
                at: mat,
            });
        }
        body_parts.push(RBodyPart {
            name: name_at(b, at as usize, bp.sznameindex)?,
            rec: bp,
            models,
        });
    }
    let model_recs: Vec<(i64, &StudioModel)> = body_parts
        .iter()
        .flat_map(|bp| &bp.models)
        .map(|m| (m.at, &m.rec))
        .collect();
    let face = super::face_read::read_face(b, &hdr, &model_recs)?;
    let mut sequences = Vec::new();
    let mut seq_recs = Vec::new();
    let mut seqs = Vec::new();
    for i in 0..count(hdr.numlocalseq, 65536, "sequence")? {
        let at = hdr.localseqindex as i64 + (i * SeqDesc::SIZE) as i64;
        let s: SeqDesc = read(b, at, "sequence")?;
        let label = read_cstr(b, at + s.szlabelindex as i64)?;
        let activity = if s.szactivitynameindex == 0 {
            String::new()
        } else {
            read_cstr(b, at + s.szactivitynameindex as i64)?
        };
        sequences.push(label.clone());
        seq_recs.push((label, activity, s));
    }
    let mut anims = Vec::new();
    let mut animations = Vec::new();
    for i in 0..count(hdr.numlocalanim, 65536, "animation")? {
        let at = hdr.localanimindex as i64 + (i * AnimDesc::SIZE) as i64;
        let a: AnimDesc = read(b, at, "animdesc")?;
        let name = read_cstr(b, at + a.sznameindex as i64)?;
        animations.push(read_anim(b, &blocks, at, &name, a)?);
        anims.push((name, a));
    }
    for (i, (label, activity, rec)) in seq_recs.iter().enumerate() {
        let at = hdr.localseqindex as i64 + (i * SeqDesc::SIZE) as i64;
        seqs.push(read_seq(b, at, label, activity, rec, bones.len())?);
    }
    let mut pose_params = Vec::new();
    for i in 0..count(hdr.numlocalposeparameters, 1024, "pose parameter")? {
        let at = hdr.localposeparamindex as i64 + (i * PoseParamDesc::SIZE) as i64;
        let rec: PoseParamDesc = read(b, at, "pose parameter")?;
        pose_params.push(RPoseParam {
            name: read_cstr(b, at + rec.sznameindex as i64)?,
            rec,
        });
    }
    let mut bone_controllers = Vec::new();
    for i in 0..count(hdr.numbonecontrollers, 1024, "bone controller")? {
        let at = hdr.bonecontrollerindex as i64 + (i * BoneController::SIZE) as i64;
        bone_controllers.push(read::<BoneController>(b, at, "bone controller")?);
    }
    let n_nodes = count(hdr.numlocalnodes, 4096, "node")?;
    let mut nodes = Vec::new();
    for i in 0..n_nodes {
        let off: i32 = read(
            b,
            hdr.localnodenameindex as i64 + 4 * i as i64,
            "node name offset",
        )?;
        nodes.push(read_cstr(b, off as i64)?);
    }
    let node_transitions = bytes_at(b, hdr.localnodeindex as i64, n_nodes * n_nodes)
        .ok_or_else(|| {
            format!(
                "the {n_nodes}×{n_nodes} node transition table at offset {} runs past the end of the file",
                hdr.localnodeindex
            )
        })?
        .to_vec();
    let opt_str = |at: i32| -> Result<String, String> {
        if at == 0 {
            Ok(String::new())
        } else {
            read_cstr(b, at as i64)
        }
    };
    let surfaceprop = opt_str(hdr.surfacepropindex)?;
    let keyvalues = if hdr.keyvaluesize > 0 {
        opt_str(hdr.keyvalueindex)?
    } else {
        String::new()
    };
    let hdr2_name = if hdr.studiohdr2index != 0 && hdr2.sznameindex != 0 {
        read_cstr(b, hdr.studiohdr2index as i64 + hdr2.sznameindex as i64)?
    } else {
        String::new()
    };
    Ok(Mdl {
        hdr,
        hdr2,
        file_len: mdl.len(),
        bones,
        attachments,
        hitbox_sets,
        textures,
        cd_materials,
        skins,
        body_parts,
        sequences,
        texture_recs,
        seq_recs,
        anims,
        surfaceprop,
        keyvalues,
        hdr2_name,
        bytes: b.to_vec(),
        animations,
        seqs,
        pose_params,
        bone_controllers,
        nodes,
        node_transitions,
        ik_chains,
        ik_autoplay_locks,
        face,
        anim_blocks,
        ani_name,
        ani_at,
    })
}

/// `n` bytes at `at`, if they are inside `b`.
fn bytes_at(b: &[u8], at: i64, n: usize) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    b.get(start..start.checked_add(n)?)
}

/// `n` consecutive records `T` at `at`.
fn read_array<T: Le>(b: &[u8], at: i64, n: usize, what: &str) -> Result<Vec<T>, String> {
    let mut out = Vec::with_capacity(n.min(4096));
    for i in 0..n {
        out.push(read::<T>(b, at + (i * T::SIZE) as i64, what)?);
    }
    Ok(out)
}

/// The animation side of one animdesc at file offset `at` (3, 3.2, 3.3).
fn read_anim(b: &[u8], blocks: &Blocks, at: i64, name: &str, a: AnimDesc) -> Result<RAnim, String> {
    let movements = if a.nummovements == 0 {
        Vec::new()
    } else {
        read_array(
            b,
            at + a.movementindex as i64,
            count(a.nummovements, 4096, "movement")?,
            "movement",
        )?
    };
    let n = a.numframes.max(0) as usize;
    let mut sections = Vec::new();
    let mut chains = Vec::new();
    let chain = |section: usize, animblock: i32, animindex: i32, frames: usize| {
        let start = if animblock == -1 {
            None
        } else {
            blocks
                .at(at, animblock, animindex)
                .map_err(|e| format!("animation `{name}`: {e}"))?
        };
        if let Some(s) = start {
            read::<i32>(b, s as i64, "first mstudioanim_t")
                .map_err(|e| format!("animation `{name}`: {e}"))?;
        }
        Ok::<_, String>(RChain {
            section,
            animblock,
            start,
            frames,
        })
    };
    if a.sectionframes == 0 {
        chains.push(chain(0, a.animblock, a.animindex, n)?);
    } else {
        if a.sectionframes < 0 || a.numframes < 1 {
            return Err(format!(
                "animation `{name}` has sectionframes {} and numframes {}",
                a.sectionframes, a.numframes
            ));
        }
        let s = a.sectionframes as usize;
        let entries = super::animcodec::section_count(n, s);
        sections =
            read_array::<AnimSection>(b, at + a.sectionindex as i64, entries, "animation section")
                .map_err(|e| format!("animation `{name}`: {e}"))?;
        for (k, sec) in sections.iter().enumerate() {
            chains.push(chain(
                k,
                sec.animblock,
                sec.animindex,
                super::animcodec::section_span(n, s, k).1,
            )?);
        }
    }
    // IK rules in the MDL (`ikruleindex`) or in the animation's block (`animblockikruleindex`)
    let ik_table = if a.numikrules == 0 {
        None
    } else if a.ikruleindex != 0 {
        Some(at + a.ikruleindex as i64)
    } else if a.animblockikruleindex != 0 {
        blocks
            .at(at, a.animblock, a.animblockikruleindex)
            .map_err(|e| format!("animation `{name}`: {e}"))?
            .map(|t| t as i64)
    } else {
        None
    };
    let ikrules = match ik_table {
        Some(t) => read_ik_rules(b, t, name, &a)?,
        None => Vec::new(),
    };
    let zero_frame = if a.zeroframeindex == 0 {
        None
    } else {
        Some(
            usize::try_from(at + i64::from(a.zeroframeindex)).map_err(|_| {
                format!(
                    "animation `{name}`: zeroframeindex {} points before the file",
                    a.zeroframeindex
                )
            })?,
        )
    };
    Ok(RAnim {
        name: name.to_string(),
        rec: a,
        offset: at as usize,
        movements,
        sections,
        chains,
        ikrules,
        zero_frame,
    })
}

/// The animation side of one seqdesc at file offset `at` (6).
fn read_seq(
    b: &[u8],
    at: i64,
    label: &str,
    activity: &str,
    s: &SeqDesc,
    num_bones: usize,
) -> Result<RSeq, String> {
    let ctx = |e: String| format!("sequence `{label}`: {e}");
    let mut events = Vec::new();
    for k in 0..count(s.numevents, 65536, "event").map_err(ctx)? {
        let eat = at + s.eventindex as i64 + (k * Event::SIZE) as i64;
        let rec: Event = read(b, eat, "event").map_err(ctx)?;
        let name = if rec.szeventindex == 0 {
            String::new()
        } else {
            read_cstr(b, eat + rec.szeventindex as i64).map_err(ctx)?
        };
        events.push(REvent {
            options: rec.options.as_str(),
            rec,
            name,
        });
    }
    let g0 = count(s.groupsize[0], 4096, "blend grid").map_err(ctx)?;
    let g1 = count(s.groupsize[1], 4096, "blend grid").map_err(ctx)?;
    let anim_indices =
        read_array::<i16>(b, at + s.animindexindex as i64, g0 * g1, "animation index")
            .map_err(ctx)?;
    let pose_keys = if s.posekeyindex == 0 {
        Vec::new()
    } else {
        read_array::<f32>(b, at + s.posekeyindex as i64, g0 + g1, "pose key").map_err(ctx)?
    };
    let weights = if s.weightlistindex == 0 {
        Vec::new()
    } else {
        read_array::<f32>(b, at + s.weightlistindex as i64, num_bones, "bone weight")
            .map_err(ctx)?
    };
    let autolayers = read_array::<AutoLayer>(
        b,
        at + s.autolayerindex as i64,
        count(s.numautolayers, 4096, "autolayer").map_err(ctx)?,
        "autolayer",
    )
    .map_err(ctx)?;
    let iklocks = read_array::<IkLock>(
        b,
        at + s.iklockindex as i64,
        count(s.numiklocks, 4096, "IK lock").map_err(ctx)?,
        "IK lock",
    )
    .map_err(ctx)?;
    let keyvalues = if s.keyvaluesize > 0 {
        let n = count(s.keyvaluesize, 1 << 24, "key value byte").map_err(ctx)?;
        let raw = bytes_at(b, at + s.keyvalueindex as i64, n).ok_or_else(|| {
            ctx(format!(
                "key values ({n} bytes at offset {}) run past the end of the file",
                at + s.keyvalueindex as i64
            ))
        })?;
        let text = raw.split(|&c| c == 0).next().unwrap_or(raw);
        String::from_utf8_lossy(text).into_owned()
    } else {
        String::new()
    };
    let mut activity_modifiers = Vec::new();
    for k in 0..count(s.numactivitymodifiers, 4096, "activity modifier").map_err(ctx)? {
        let mat = at + s.activitymodifierindex as i64 + 4 * k as i64;
        let rel: i32 = read(b, mat, "activity modifier").map_err(ctx)?;
        activity_modifiers.push(read_cstr(b, mat + rel as i64).map_err(ctx)?);
    }
    Ok(RSeq {
        label: label.to_string(),
        activity: activity.to_string(),
        rec: *s,
        offset: at as usize,
        events,
        anim_indices,
        pose_keys,
        weights,
        autolayers,
        iklocks,
        keyvalues,
        activity_modifiers,
    })
}

pub struct Vvd {
    pub hdr: VertexFileHeader,
    pub fixups: Vec<VertexFileFixup>,
    /// In final (mesh) order, after replaying the fix-ups for root LOD 0.
    pub vertices: Vec<StudioVertex>,
    pub tangents: Vec<[f32; 4]>,
}

pub fn read_vvd(b: &[u8]) -> Result<Vvd, String> {
    let hdr: VertexFileHeader = read(b, 0, "vertexFileHeader_t")?;
    if hdr.id != i32::from_le_bytes(*b"IDSV") || hdr.version != 4 {
        return Err("not a VVD v4 file".into());
    }
    let n = count(hdr.num_lod_vertexes[0], 1 << 24, "vertex")?;
    let mut raw = Vec::with_capacity(n);
    let mut tan = Vec::with_capacity(n);
    for i in 0..n {
        raw.push(read::<StudioVertex>(
            b,
            hdr.vertex_data_start as i64 + 48 * i as i64,
            "vertex",
        )?);
        tan.push(read::<[f32; 4]>(
            b,
            hdr.tangent_data_start as i64 + 16 * i as i64,
            "tangent",
        )?);
    }
    let mut fixups = Vec::new();
    for i in 0..count(hdr.num_fixups, 1 << 20, "fixup")? {
        fixups.push(read::<VertexFileFixup>(
            b,
            hdr.fixup_table_start as i64 + 12 * i as i64,
            "fixup",
        )?);
    }
    let (vertices, tangents) = if fixups.is_empty() {
        (raw, tan)
    } else {
        let mut v = Vec::with_capacity(n);
        let mut t = Vec::with_capacity(n);
        for f in &fixups {
            let s = f.source_vertex_id;
            let e = s as i64 + f.num_vertexes as i64;
            if s < 0
                || f.num_vertexes < 0
                || e > n as i64
                || v.len() as i64 + f.num_vertexes as i64 > n as i64
            {
                return Err(format!("fix-up {:?} runs outside the {n} vertices", f));
            }
            v.extend_from_slice(&raw[s as usize..e as usize]);
            t.extend_from_slice(&tan[s as usize..e as usize]);
        }
        (v, t)
    };
    Ok(Vvd {
        hdr,
        fixups,
        vertices,
        tangents,
    })
}

pub struct RStrip {
    pub rec: VtxStrip,
    pub changes: Vec<VtxBoneStateChange>,
}

pub struct RGroup {
    pub rec: VtxStripGroup,
    pub verts: Vec<VtxVertex>,
    pub indices: Vec<u16>,
    pub strips: Vec<RStrip>,
}

pub struct RVtxMesh {
    pub groups: Vec<RGroup>,
}

pub struct RVtxLod {
    pub switch_point: f32,
    pub meshes: Vec<RVtxMesh>,
}

pub struct Vtx {
    pub hdr: VtxFileHeader,
    /// [body part][model][lod]
    pub body_parts: Vec<Vec<Vec<RVtxLod>>>,
}

pub fn read_vtx(b: &[u8]) -> Result<Vtx, String> {
    let hdr: VtxFileHeader = read(b, 0, "FileHeader_t")?;
    if hdr.version != 7 {
        return Err(format!("VTX version {} (expected 7)", hdr.version));
    }
    let mut bps = Vec::new();
    for i in 0..count(hdr.num_body_parts, 4096, "body part")? {
        let at = hdr.body_part_offset as i64 + 8 * i as i64;
        let bp: VtxBodyPart = read(b, at, "BodyPartHeader_t")?;
        let mut models = Vec::new();
        for m in 0..count(bp.num_models, 4096, "model")? {
            let mat = at + bp.model_offset as i64 + 8 * m as i64;
            let mr: VtxModel = read(b, mat, "ModelHeader_t")?;
            let mut lods = Vec::new();
            for l in 0..count(mr.num_lods, 8, "LOD")? {
                let lat = mat + mr.lod_offset as i64 + 12 * l as i64;
                let lr: VtxModelLod = read(b, lat, "ModelLODHeader_t")?;
                let mut meshes = Vec::new();
                for k in 0..count(lr.num_meshes, 65536, "mesh")? {
                    let meat = lat + lr.mesh_offset as i64 + 9 * k as i64;
                    let me: VtxMesh = read(b, meat, "MeshHeader_t")?;
                    let mut groups = Vec::new();
                    for g in 0..count(me.num_strip_groups, 64, "strip group")? {
                        let gat = meat + me.strip_group_header_offset as i64 + 25 * g as i64;
                        let gr: VtxStripGroup = read(b, gat, "StripGroupHeader_t")?;
                        let nv = count(gr.num_verts, 1 << 20, "vertex")?;
                        let ni = count(gr.num_indices, 1 << 22, "index")?;
                        let mut verts = Vec::with_capacity(nv);
                        for v in 0..nv {
                            verts.push(read::<VtxVertex>(
                                b,
                                gat + gr.vert_offset as i64 + 9 * v as i64,
                                "Vertex_t",
                            )?);
                        }
                        let mut indices = Vec::with_capacity(ni);
                        for v in 0..ni {
                            indices.push(read::<u16>(
                                b,
                                gat + gr.index_offset as i64 + 2 * v as i64,
                                "index",
                            )?);
                        }
                        let mut strips = Vec::new();
                        for s in 0..count(gr.num_strips, 1 << 16, "strip")? {
                            let sat = gat + gr.strip_offset as i64 + 27 * s as i64;
                            let sr: VtxStrip = read(b, sat, "StripHeader_t")?;
                            let mut changes = Vec::new();
                            for c in 0..count(sr.num_bone_state_changes, 512, "bone state change")?
                            {
                                changes.push(read::<VtxBoneStateChange>(
                                    b,
                                    sat + sr.bone_state_change_offset as i64 + 8 * c as i64,
                                    "BoneStateChangeHeader_t",
                                )?);
                            }
                            strips.push(RStrip { rec: sr, changes });
                        }
                        groups.push(RGroup {
                            rec: gr,
                            verts,
                            indices,
                            strips,
                        });
                    }
                    meshes.push(RVtxMesh { groups });
                }
                lods.push(RVtxLod {
                    switch_point: lr.switch_point,
                    meshes,
                });
            }
            models.push(lods);
        }
        bps.push(models);
    }
    Ok(Vtx {
        hdr,
        body_parts: bps,
    })
}

/// The triangles of one mesh at one LOD, as model-relative VVD vertex numbers.
pub fn mesh_triangles(lod: &RVtxMesh, vertexoffset: i32) -> Result<Vec<[usize; 3]>, String> {
    let mut out = Vec::new();
    for g in &lod.groups {
        for s in &g.strips {
            let start = s.rec.index_offset.max(0) as usize;
            let n = s.rec.num_indices.max(0) as usize;
            let idx = g
                .indices
                .get(start..start + n)
                .ok_or_else(|| "strip indices run past the strip group".to_string())?;
            for t in idx.chunks_exact(3) {
                let mut tri = [0usize; 3];
                for k in 0..3 {
                    let v = g.verts.get(t[k] as usize).ok_or_else(|| {
                        format!(
                            "index {} is past the strip group's {} vertices",
                            t[k],
                            g.verts.len()
                        )
                    })?;
                    tri[k] = (vertexoffset.max(0) as usize) + v.orig_mesh_vert_id as usize;
                }
                out.push(tri);
            }
        }
    }
    Ok(out)
}
