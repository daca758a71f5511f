//! Writers: the MDL image (laid out in Valve's section order, `source-geometry.md` §4.1, with a
//! string table patched in last), the VVD (§7) and the three VTX variants (§8), and the one
//! checksum they share (§10).

use super::animcodec;
use super::math;
use super::model::{Group, SourceModel, BONE_HAS_SAVEFRAME_POS, BONE_HAS_SAVEFRAME_ROT};
use super::records::*;
use super::strips::Variant;

/// Pending string references: (field position, base the offset is relative to, string).
#[derive(Default)]
struct Strings {
    refs: Vec<(usize, usize, String)>,
}

impl Strings {
    fn add(&mut self, field: usize, base: usize, s: &str) {
        self.refs.push((field, base, s.to_string()));
    }

    /// Writes the table (leading NUL, each distinct string once, 4-padded) and patches refs.
    fn finish(self, out: &mut Out) {
        let start = out.pos();
        out.bytes.push(0);
        let mut placed: std::collections::HashMap<String, usize> = Default::default();
        placed.insert(String::new(), start);
        for (_, _, s) in &self.refs {
            if !placed.contains_key(s) {
                placed.insert(s.clone(), out.pos());
                out.bytes.extend_from_slice(s.as_bytes());
                out.bytes.push(0);
            }
        }
        out.align(4);
        for (field, base, s) in &self.refs {
            let at = placed.get(s).copied().unwrap_or(start);
            out.put_at(*field, &((at as i64 - *base as i64) as i32));
        }
    }
}

/// Byte position of a field inside a record written at `at`.
fn field(at: usize, off: usize) -> usize {
    at + off
}

/// Flex descriptions, controllers, rules with their operations, then the controller UI
/// records, in the order of Valve's later builds (`mapbase-mp-male01`: flexdesc, flexcontroller,
/// flexrule, flexcontrollerui, then the IK chains). With no face every index, the UI records'
/// too, is the position where the IK chains start, as in every Valve v48 file of the corpus
/// (mdlc wrote `flexcontrolleruiindex` after the pose parameters before: one byte unlike Valve's
/// `bunker_gun01.mdl`, which has two pose parameters).
fn write_face(plan: &SourceModel, o: &mut Out, st: &mut Strings, h: &mut StudioHdr) {
    let f = &plan.face;
    h.numflexdesc = f.flex_descs.len() as i32;
    h.flexdescindex = o.pos() as i32;
    for d in &f.flex_descs {
        let at = o.put(&0i32);
        st.add(at, at, d);
    }
    h.numflexcontrollers = f.controllers.len() as i32;
    h.flexcontrollerindex = o.pos() as i32;
    let mut controller_at = Vec::with_capacity(f.controllers.len());
    for c in &f.controllers {
        let at = o.put(&0i32);
        st.add(at, at, &c.group);
        st.add(o.put(&0i32), at, &c.name);
        o.put(&-1i32); // localToGlobal: the engine fills it
        o.put(&c.min);
        o.put(&c.max);
        controller_at.push(at);
    }
    h.numflexrules = f.rules.len() as i32;
    h.flexruleindex = o.pos() as i32;
    let rule_at: Vec<usize> = f
        .rules
        .iter()
        .map(|r| {
            let at = o.put(&r.flex);
            o.put(&(r.ops.len() as i32));
            o.put(&0i32); // opindex, below
            at
        })
        .collect();
    for (r, &at) in f.rules.iter().zip(&rule_at) {
        o.put_at(at + 8, &((o.pos() - at) as i32));
        for &(op, d) in &r.ops {
            o.put(&op);
            o.put(&d);
        }
    }
    o.align(4);
    h.numflexcontrollerui = f.ui.len() as i32;
    h.flexcontrolleruiindex = o.pos() as i32;
    for u in &f.ui {
        let at = o.put(&0i32);
        st.add(at, at, &u.name);
        let rel = |i: Option<usize>| {
            i.and_then(|i| controller_at.get(i))
                .map_or(0, |&c| c as i32 - at as i32)
        };
        o.put(&rel(Some(u.index0)));
        o.put(&rel(u.index1));
        o.put(&0i32); // szindex2: the value controller of an n-way slider
        o.bytes.push(0); // remaptype: pass-through
        o.bytes.push(u8::from(u.stereo));
        o.bytes.extend_from_slice(&[0, 0]);
    }
    o.align(4);
}

/// The procedural bones' records after the bones, as the 2006 SDK's `WriteBoneInfo` lays them
/// out (`source-geometry.md` §9.1 row 4): the axis-interpolation records, then the
/// quaternion-interpolation records followed by each one's triggers, then the aim records, each
/// array aligned to 4; every bone's `proctype` and `procindex` (relative to the bone) point at
/// its record. The jiggle records (which the 2006 SDK does not have) come last.
fn write_procedural(plan: &SourceModel, bone_at: usize, o: &mut Out) {
    use super::model::PProcRule;
    let link = |o: &mut Out, bone: usize, rec: usize, kind: i32| {
        let b = bone_at + bone * Bone::SIZE;
        o.put_at(b + 164, &kind); // proctype
        o.put_at(b + 168, &(rec as i32 - b as i32)); // procindex
    };
    for p in &plan.procedural {
        if let PProcRule::AxisInterp(r) = &p.rule {
            let at = o.put(r);
            link(o, p.bone, at, p.rule.proctype());
        }
    }
    o.align(4);
    let quats: Vec<(usize, i32, &Vec<QuatInterpInfo>)> = plan
        .procedural
        .iter()
        .filter_map(|p| match &p.rule {
            PProcRule::QuatInterp(c, t) => Some((p.bone, *c, t)),
            _ => None,
        })
        .collect();
    let table = o.pos();
    for &(bone, control, triggers) in &quats {
        let at = o.put(&QuatInterpBone {
            control,
            numtriggers: triggers.len() as i32,
            triggerindex: 0,
        });
        link(o, bone, at, 2);
    }
    o.align(4);
    for (k, &(_, _, triggers)) in quats.iter().enumerate() {
        let rec = table + k * QuatInterpBone::SIZE;
        o.put_at(rec + 8, &((o.pos() - rec) as i32)); // triggerindex
        for t in triggers {
            o.put(t);
        }
    }
    for p in &plan.procedural {
        if let PProcRule::AimAt(r, _) = &p.rule {
            let at = o.put(r);
            link(o, p.bone, at, p.rule.proctype());
        }
    }
    o.align(4);
    for p in &plan.procedural {
        if let PProcRule::Jiggle(r) = &p.rule {
            let at = o.put(r);
            link(o, p.bone, at, p.rule.proctype());
        }
    }
}

/// An animation's IK rules, each followed by its compressed error and attachment name, as the
/// 2006 SDK's `WriteIkErrors` lays them out (`source-animation.md` 3.4): the rule records, then
/// per rule with error data a `mstudiocompressedikerror_t`, its six streams, the attachment
/// name (not in the string table: an included model reads it from here), aligned to 4. A rule
/// without error data (an automatic `release`) has neither.
fn write_ik_rules(a: &super::model::PAnim, o: &mut Out) {
    let table = o.pos();
    for r in &a.ikrules {
        let [start, peak, tail, end, contact] = super::ikrule::cycles(r, a.num_frames);
        o.put(&IkRule {
            index: r.index,
            r#type: r.kind,
            chain: r.chain,
            bone: r.bone,
            slot: r.slot,
            height: r.height,
            radius: r.radius,
            floor: r.floor,
            pos: r.pos,
            q: r.q,
            i_start: r.frames[0],
            start,
            peak,
            tail,
            end,
            contact,
            ..Default::default()
        });
    }
    for (j, r) in a.ikrules.iter().enumerate() {
        let Some((scales, streams)) = &r.error else {
            continue;
        };
        let rule_at = table + j * IkRule::SIZE;
        let err_at = o.pos();
        o.put_at(rule_at + 60, &((err_at - rule_at) as i32)); // compressedikerrorindex
        let mut offsets = [0i16; 6];
        let mut at = CompressedIkError::SIZE;
        for (k, s) in streams.iter().enumerate() {
            offsets[k] = i16::try_from(at).unwrap_or(i16::MAX);
            at += s.len();
        }
        o.put(&CompressedIkError {
            scale: *scales,
            offset: offsets,
        });
        for s in streams {
            o.bytes.extend_from_slice(s);
        }
        if !r.attachment.is_empty() {
            o.put_at(rule_at + 120, &((o.pos() - rule_at) as i32)); // szattachmentindex
            o.bytes.extend_from_slice(r.attachment.as_bytes());
            o.bytes.push(0);
        }
        o.align(4);
    }
}

/// The record chains of one animation and its IK rules, into the MDL right after the
/// animdescs (`at`: the animdesc; its offsets are relative to it).
fn write_anim_data(a: &super::model::PAnim, at: usize, o: &mut Out) {
    let rel = |o: &Out| (o.pos() - at) as i32;
    if a.encoded.section_frames != 0 {
        o.align(4);
        o.put_at(at + 80, &rel(o)); // sectionindex
        let table = o.pos();
        for _ in &a.encoded.chains {
            o.put(&AnimSection::default());
        }
        for (k, chain) in a.encoded.chains.iter().enumerate() {
            o.align(if k == 0 { 16 } else { 4 });
            if k == 0 {
                o.put_at(at + 56, &rel(o)); // animindex
            }
            o.put_at(table + k * AnimSection::SIZE + 4, &rel(o));
            o.bytes.extend_from_slice(chain);
        }
    } else {
        o.align(16);
        o.put_at(at + 56, &rel(o)); // animindex
        if let Some(chain) = a.encoded.chains.first() {
            o.bytes.extend_from_slice(chain);
        }
    }
    o.align(4);
    if !a.ikrules.is_empty() {
        o.put_at(at + 60, &(a.ikrules.len() as i32)); // numikrules
        o.put_at(at + 64, &rel(o)); // ikruleindex
        write_ik_rules(a, o);
    }
}

/// Where one animation's data went: the block the animdesc names (the IK rules' block, or the
/// last section's), each chain's block and offset from its block's start, the IK rules' offset
/// in the animdesc's block, and `animindex` (the first chain's place, from the start of the
/// animdesc's block; negative when the chain is in an earlier block).
struct Placed {
    block: i32,
    chains: Vec<(i32, i32)>,
    ik: i32,
    index: i32,
}

/// The `.ani` file being written (`$animblocksize`): a `studiohdr_t`-sized header (`IDAG`; only
/// the id, version and length set, the rest, checksum included, 0), then the animations in
/// order. Block 0 is the MDL itself and its table entry stays zero. A piece that would take its
/// block past the block size starts a new block instead (the 2006 SDK's `WriteAnimations`).
///
/// What a piece is follows Valve's own v48 builds (Half-Life 2's `male_shared` and
/// `combine_soldier_anims` with their `.ani`: every block boundary of both, 32 and 10, fits
/// this rule): an animation without sections is one piece, 16-aligned, its chain with its IK
/// rules after it (the 2006 SDK's rule); an animation cut into sections is one piece per
/// section (the first 16-aligned, the others 4-aligned), then its IK rules as a piece of their
/// own, so its sections and rules may lie in several blocks. The animdesc names the block of the
/// IK rules (or of the last section), and its `animindex` is the first section's place from
/// that block's start. Those builds start the first block at 416, the header rounded up to 16,
/// do not pad blocks to 512 bytes as the 2006 SDK's Xbox-minded code does, and end the last
/// block where its data ends; mdlc does the same.
pub struct AniFile {
    /// Where the next piece goes.
    packing: Packing,
    pub bytes: Vec<u8>,
    /// `(datastart, dataend)` per block, entry 0 unused.
    pub blocks: Vec<(usize, usize)>,
    /// Each piece's length and alignment, in order, to work out other block sizes.
    pieces: Vec<(usize, usize)>,
}

/// The rule that places the pieces of an `.ani` (see [`AniFile`]): each at the next multiple of
/// its alignment after the one before, the first of a new block when it is the first piece or
/// would take its block past `size` bytes.
#[derive(Clone, Copy)]
struct Packing {
    size: usize,
    /// Where the last piece ends (the header's end before any).
    end: usize,
    /// Where the current block starts (none before the first piece).
    block_start: Option<usize>,
}

impl Packing {
    fn new(size: usize) -> Packing {
        Packing {
            size,
            end: StudioHdr::SIZE,
            block_start: None,
        }
    }

    /// Places a piece of `len` bytes: its start, and whether it starts a new block.
    fn next(&mut self, len: usize, align: usize) -> (usize, bool) {
        let start = self.end.next_multiple_of(align);
        let new_block = self.block_start.is_none_or(|b| start + len - b > self.size);
        if new_block {
            self.block_start = Some(start);
        }
        self.end = start + len;
        (start, new_block)
    }
}

impl AniFile {
    fn new(size: usize) -> AniFile {
        AniFile {
            packing: Packing::new(size),
            bytes: vec![0; StudioHdr::SIZE],
            blocks: vec![(0, 0)],
            pieces: Vec::new(),
        }
    }

    /// How many blocks the same pieces would take with blocks of `size` bytes.
    pub fn blocks_with(&self, size: usize) -> usize {
        let mut p = Packing::new(size);
        self.pieces
            .iter()
            .filter(|&&(len, align)| p.next(len, align).1)
            .count()
    }

    /// The smallest `$animblocksize` in KB (under 1024, as the QC reads it) whose blocks are at
    /// most `max`, if there is one.
    pub fn smallest_kb_within(&self, max: usize) -> Option<usize> {
        let from = self.packing.size / 1024 + 1;
        (from..1024).find(|&kb| self.blocks_with(kb * 1024) <= max)
    }

    /// Puts one piece where [`Packing`] places it; returns its block and its absolute offset.
    fn put(&mut self, piece: &[u8], align: usize) -> (usize, usize) {
        self.pieces.push((piece.len(), align));
        let (start, new_block) = self.packing.next(piece.len(), align);
        if new_block {
            let first = self.blocks.len() == 1;
            if let Some(last) = self.blocks.last_mut().filter(|_| !first) {
                last.1 = start;
            }
            self.blocks.push((start, start));
        }
        self.bytes.resize(start, 0);
        self.bytes.extend_from_slice(piece);
        if let Some(last) = self.blocks.last_mut() {
            last.1 = self.bytes.len();
        }
        (self.blocks.len() - 1, start)
    }

    /// Places one animation's chains and IK rules.
    fn place(&mut self, a: &super::model::PAnim) -> Placed {
        // (block, absolute offset) of each chain, and of the IK rules
        let mut chains: Vec<(usize, usize)> = Vec::with_capacity(a.encoded.chains.len());
        let mut ik = None;
        if a.encoded.section_frames == 0 {
            let mut d = Out::default();
            if let Some(chain) = a.encoded.chains.first() {
                d.bytes.extend_from_slice(chain);
            }
            d.align(4);
            let ik_at = d.pos();
            write_ik_rules(a, &mut d);
            let (block, at) = self.put(&d.bytes, 16);
            chains.push((block, at));
            ik = Some((block, at + ik_at));
        } else {
            for (k, chain) in a.encoded.chains.iter().enumerate() {
                chains.push(self.put(chain, if k == 0 { 16 } else { 4 }));
            }
            if !a.ikrules.is_empty() {
                let mut d = Out::default();
                write_ik_rules(a, &mut d);
                ik = Some(self.put(&d.bytes, 4));
            }
        }
        let (block, ik_at) = ik
            .or_else(|| chains.last().copied())
            .unwrap_or((self.blocks.len() - 1, self.bytes.len()));
        let start = |b: usize| self.blocks.get(b).map_or(0, |x| x.0);
        let base = start(block);
        Placed {
            block: block as i32,
            chains: chains
                .iter()
                .map(|&(b, at)| (b as i32, (at - start(b)) as i32))
                .collect(),
            ik: (ik_at - base) as i32,
            index: chains.first().map_or(0, |&(_, at)| at as i64 - base as i64) as i32,
        }
    }
}

/// How many zero-frame samples an animation of `num_frames` frames keeps, and how many frames
/// apart: `(zeroframespan, zeroframecount)`. The 2006 SDK keeps one; this is the rule Valve's
/// v48 builds follow, established from Half-Life 2's `male_shared` (663 animations, all but one
/// fit the rule below, and the samples decode equal to frames 0, span, 2·span): up to 9 frames
/// apart (half the animation when it loops, whose last frame repeats its first) and at most 3,
/// all inside the animation. The one animation the plain rule does not fit, a 4-frame looping
/// one, keeps one sample 1 frame apart; mdlc keeps one whenever the span is under 2, which is
/// that case and the 3-frame looping one (not seen).
pub(crate) fn zero_frame_sampling(num_frames: usize, looping: bool) -> (usize, usize) {
    if num_frames <= 2 {
        return (0, 1);
    }
    let last = num_frames - 1;
    let span = if looping { last / 2 } else { last }.min(9);
    if span < 2 {
        return (span, 1);
    }
    (span, (last / span).min(3))
}

/// The zero frames of each animation for the bones with `BONE_HAS_SAVEFRAME_*`, kept in the MDL
/// for the engine to show while the animation's block loads (`CalcZeroframeData`,
/// source-sdk-2013 `public/bone_setup.cpp`, which splines between the samples): per bone in
/// order, its Vector48 positions, then its Quaternion64 rotations, one per sample
/// ([`zero_frame_sampling`]; sample k is frame k·span). The values are the frame's local pose,
/// or its delta for a delta animation, as the SDK takes them.
fn write_zero_frames(
    plan: &SourceModel,
    blocks: &super::model::AnimBlocks,
    anim_at: &[usize],
    o: &mut Out,
) {
    let nb = plan.bones.len();
    for (a, &at) in plan.anim.anims.iter().zip(anim_at) {
        let (span, count) = zero_frame_sampling(a.num_frames, a.flags & super::anim::LOOPING != 0);
        o.align(4);
        o.put_at(at + 88, &(span as i16)); // zeroframespan
        o.put_at(at + 90, &(count as i16)); // zeroframecount
        o.put_at(at + 92, &((o.pos() - at) as i32)); // zeroframeindex
        let pose =
            |k: usize, b: usize| a.frames.get(k * span * nb + b).copied().unwrap_or_default();
        for (b, &(pos, rot)) in blocks.save.iter().enumerate().take(nb) {
            if pos {
                for k in 0..count {
                    o.bytes
                        .extend_from_slice(&animcodec::vector48(pose(k, b).pos));
                }
            }
            if rot {
                for k in 0..count {
                    o.bytes
                        .extend_from_slice(&animcodec::quat64(math::euler_quat(pose(k, b).rot)));
                }
            }
        }
    }
    o.align(4);
}

/// Animation descriptions, their record chains and movements, sequences with their events,
/// layers, weights and animation indices, and the transition nodes (`source-animation.md` §9.1
/// rows 3–10).
fn write_animation_side(
    plan: &SourceModel,
    o: &mut Out,
    st: &mut Strings,
    h: &mut StudioHdr,
    ani: &mut Option<AniFile>,
) {
    let ap = &plan.anim;
    h.numlocalanim = ap.anims.len() as i32;
    h.localanimindex = o.pos() as i32;
    let mut anim_at = Vec::with_capacity(ap.anims.len());
    for a in &ap.anims {
        let at = o.pos();
        o.put(&AnimDesc {
            baseptr: -(at as i32),
            fps: a.fps,
            flags: a.flags,
            numframes: a.num_frames as i32,
            nummovements: a.movements.len() as i32,
            sectionframes: a.encoded.section_frames,
            ..Default::default()
        });
        st.add(at + 4, at, &a.name);
        anim_at.push(at);
    }
    for (a, &at) in ap.anims.iter().zip(&anim_at) {
        match ani.as_mut() {
            Some(ani) => {
                let data = ani.place(a);
                o.put_at(at + 52, &data.block); // animblock
                o.put_at(at + 56, &data.index); // animindex
                if !a.ikrules.is_empty() {
                    // 0 without rules, as in Valve's builds (the 2006 SDK sets it anyway)
                    o.put_at(at + 60, &(a.ikrules.len() as i32)); // numikrules
                    o.put_at(at + 68, &data.ik); // animblockikruleindex
                }
                if a.encoded.section_frames != 0 {
                    o.align(4);
                    o.put_at(at + 80, &((o.pos() - at) as i32)); // sectionindex
                    for &(animblock, animindex) in &data.chains {
                        o.put(&AnimSection {
                            animblock,
                            animindex,
                        });
                    }
                }
            }
            None => write_anim_data(a, at, o),
        }
    }
    for (a, &at) in ap.anims.iter().zip(&anim_at) {
        if a.movements.is_empty() {
            continue;
        }
        o.put_at(at + 24, &((o.pos() - at) as i32)); // movementindex
        for m in &a.movements {
            o.put(&Movement {
                endframe: m.endframe,
                motionflags: m.motionflags,
                v0: m.v0,
                v1: m.v1,
                angle: m.angle,
                vector: m.vector,
                position: m.position,
            });
        }
        o.align(4);
    }
    if let Some(blocks) = &ap.blocks {
        write_zero_frames(plan, blocks, &anim_at, o);
    }

    // sequences
    h.numlocalseq = ap.seqs.len() as i32;
    h.localseqindex = o.pos() as i32;
    let mut seq_at = Vec::with_capacity(ap.seqs.len());
    for s in &ap.seqs {
        let at = o.pos();
        o.put(&SeqDesc {
            baseptr: -(at as i32),
            flags: s.flags,
            activity: -1,
            actweight: s.actweight,
            numevents: s.events.len() as i32,
            bbmin: s.bbox.0,
            bbmax: s.bbox.1,
            numblends: s.anims.len() as i32,
            groupsize: s.groupsize,
            paramindex: s.paramindex,
            paramstart: s.paramstart,
            paramend: s.paramend,
            fadeintime: s.fadein,
            fadeouttime: s.fadeout,
            localentrynode: s.entry_node,
            localexitnode: s.exit_node,
            numikrules: s.numikrules,
            nodeflags: s.nodeflags,
            numautolayers: s.autolayers.len() as i32,
            keyvaluesize: s.keyvalues.as_ref().map_or(0, |k| k.len() as i32 + 1),
            ..Default::default()
        });
        st.add(at + 4, at, &s.name);
        st.add(at + 8, at, &s.activity);
        seq_at.push(at);
    }
    let mut lists: Vec<(usize, &[f32])> = Vec::new();
    for (s, &at) in ap.seqs.iter().zip(&seq_at) {
        let rel = |o: &Out| (o.pos() - at) as i32;
        if !s.posekeys.is_empty() {
            o.put_at(at + 160, &rel(o)); // posekeyindex
            for k in &s.posekeys {
                o.put(k);
            }
        }
        o.align(4);
        o.put_at(at + 28, &rel(o)); // eventindex
        for e in &s.events {
            let eat = o.put(&e.cycle);
            o.put(&e.event);
            o.put(&e.kind);
            let mut options = [0u8; 64];
            for (d, b) in options.iter_mut().zip(e.options.bytes().take(63)) {
                *d = b;
            }
            o.bytes.extend_from_slice(&options);
            let name_at = o.put(&0i32);
            if !e.name.is_empty() {
                st.add(name_at, eat, &e.name);
            }
        }
        o.put_at(at + 152, &rel(o)); // autolayerindex
        for l in &s.autolayers {
            o.put(&l.sequence);
            o.put(&l.pose);
            o.put(&l.flags);
            o.put(&l.start);
            o.put(&l.peak);
            o.put(&l.tail);
            o.put(&l.end);
        }
        let w = match lists.iter().find(|(_, l)| *l == s.weights.as_slice()) {
            Some((w, _)) => *w,
            None => {
                let w = o.pos();
                for v in &s.weights {
                    o.put(v);
                }
                lists.push((w, &s.weights));
                w
            }
        };
        o.put_at(at + 156, &((w as i64 - at as i64) as i32)); // weightlistindex
        o.put_at(at + 164, &(s.iklocks.len() as i32)); // numiklocks
        o.put_at(at + 168, &rel(o)); // iklockindex
        for &(chain, pos_weight, local_q_weight) in &s.iklocks {
            o.put(&chain);
            o.put(&pos_weight);
            o.put(&local_q_weight);
            for _ in 0..5 {
                o.put(&0i32); // flags, unused[4]
            }
        }
        o.put_at(at + 60, &rel(o)); // animindexindex
        for &a in &s.anims {
            o.put(&a);
        }
        o.align(4);
        o.put_at(at + 172, &rel(o)); // keyvalueindex
        if let Some(kv) = &s.keyvalues {
            o.bytes.extend_from_slice(kv.as_bytes());
            o.bytes.push(0);
            o.align(4);
        }
    }
    // transition nodes (§6.10)
    h.numlocalnodes = ap.nodes.len() as i32;
    h.localnodenameindex = o.pos() as i32;
    for n in &ap.nodes {
        let at = o.put(&0i32);
        st.add(at, 0, n);
    }
    o.align(4);
    h.localnodeindex = o.pos() as i32;
    o.bytes.extend_from_slice(&ap.node_table);
    o.align(4);
}

/// Writes the MDL image with checksum and length still zero, and the `.ani` file with `$animblocksize`
/// (its header's length filled).
pub fn write_mdl(plan: &SourceModel) -> (Vec<u8>, Option<AniFile>) {
    let mut ani = plan.anim.blocks.as_ref().map(|b| AniFile::new(b.size));
    let mut o = Out::default();
    let mut st = Strings::default();
    let mut h = StudioHdr {
        id: i32::from_le_bytes(*b"IDST"),
        version: 48,
        name: Name64::new(&plan.name),
        eyeposition: plan.eye_position,
        illumposition: plan.illum_position,
        hull_min: plan.hull.0,
        hull_max: plan.hull.1,
        view_bbmin: plan.view_bb.0,
        view_bbmax: plan.view_bb.1,
        flags: plan.flags,
        // `write.cpp`: the collision model's total mass, 1 without one
        mass: plan.physics.as_ref().map_or(1.0, |p| p.total_mass),
        contents: plan.contents,
        studiohdr2index: 408,
        ..Default::default()
    };
    o.zeros(StudioHdr::SIZE);
    o.zeros(StudioHdr2::SIZE);
    st.add(408 + 20, 408, &plan.name);
    st.add(308, 0, &plan.surface_prop);

    // bones
    h.numbones = plan.bones.len() as i32;
    h.boneindex = o.pos() as i32;
    for (i, b) in plan.bones.iter().enumerate() {
        let scales = plan.anim.scales.get(i).copied().unwrap_or((
            [128.0 / 32767.0; 3],
            [std::f32::consts::FRAC_PI_8 / 32767.0; 3],
        ));
        let alignment = plan.anim.alignments.iter().find(|a| a.0 == i);
        let at = o.put(&Bone {
            parent: b.parent.map(|p| p as i32).unwrap_or(-1),
            bonecontroller: [-1; 6],
            pos: b.pos,
            quat: b.quat,
            rot: b.rot,
            posscale: scales.0,
            rotscale: scales.1,
            pose_to_bone: b.pose_to_bone,
            // `$limitrotation`: the engine aligns this bone's rotations to `qAlignment`
            q_alignment: alignment.map_or([0.0; 4], |a| a.1),
            flags: b.flags
                | if alignment.is_some() { 0x0010_0000 } else { 0 }
                | save_flags(plan, i),
            contents: plan.contents,
            physicsbone: plan
                .physics
                .as_ref()
                .and_then(|p| p.bone_physics.get(i).copied())
                .unwrap_or(0),
            ..Default::default()
        });
        st.add(field(at, 0), at, &b.name);
        let prop = plan.bone_surface_props.get(i).unwrap_or(&plan.surface_prop);
        st.add(field(at, 176), at, prop);
    }
    o.align(4);
    write_procedural(plan, h.boneindex as usize, &mut o);
    h.bonecontrollerindex = o.pos() as i32;
    h.numlocalattachments = plan.attachments.len() as i32;
    h.localattachmentindex = o.pos() as i32;
    for a in &plan.attachments {
        let at = o.put(&Attachment {
            localbone: a.bone as i32,
            local: a.local,
            ..Default::default()
        });
        st.add(at, at, &a.name);
    }
    o.align(4);
    h.numhitboxsets = plan.hitbox_sets.len() as i32;
    h.hitboxsetindex = o.pos() as i32;
    let mut set_at = Vec::new();
    for s in &plan.hitbox_sets {
        let at = o.put(&HitboxSet {
            numhitboxes: s.boxes.len() as i32,
            ..Default::default()
        });
        st.add(at, at, &s.name);
        set_at.push(at);
    }
    for (s, &sat) in plan.hitbox_sets.iter().zip(&set_at) {
        o.put_at(sat + 8, &((o.pos() - sat) as i32));
        for b in &s.boxes {
            let at = o.put(&BBox {
                bone: b.bone as i32,
                group: b.group,
                bbmin: b.min,
                bbmax: b.max,
                ..Default::default()
            });
            st.add(at + 32, at, &b.name);
        }
        o.align(4);
    }
    // bone table by name, lower-case folding
    h.bonetablebynameindex = o.pos() as i32;
    let mut by_name: Vec<usize> = (0..plan.bones.len()).collect();
    by_name.sort_by(|&a, &b| {
        plan.bones[a]
            .name
            .to_ascii_lowercase()
            .as_bytes()
            .cmp(plan.bones[b].name.to_ascii_lowercase().as_bytes())
    });
    for i in by_name {
        o.bytes.push(i as u8);
    }
    o.align(4);

    write_animation_side(plan, &mut o, &mut st, &mut h, &mut ani);

    // body parts and models
    h.numbodyparts = plan.body_parts.len() as i32;
    h.bodypartindex = o.pos() as i32;
    let mut bp_at = Vec::new();
    for bp in &plan.body_parts {
        let at = o.put(&BodyParts::default());
        st.add(at, at, &bp.name);
        bp_at.push(at);
    }
    let mut base = 1i32;
    let mut model_at = Vec::new();
    let mut vert_total = 0i32;
    for (bp, &bat) in plan.body_parts.iter().zip(&bp_at) {
        o.put_at(bat + 4, &(bp.models.len() as i32));
        o.put_at(bat + 8, &base);
        o.put_at(bat + 12, &((o.pos() - bat) as i32));
        base *= bp.models.len().max(1) as i32;
        for m in &bp.models {
            let nv: usize = m.meshes.iter().map(|x| x.vertices.len()).sum();
            let at = o.put(&StudioModel {
                name: Name64::new(&m.name),
                nummeshes: m.meshes.len() as i32,
                numvertices: nv as i32,
                vertexindex: vert_total * 48,
                tangentsindex: vert_total * 16,
                ..Default::default()
            });
            vert_total += nv as i32;
            model_at.push(at);
        }
    }
    o.align(4);
    write_face(plan, &mut o, &mut st, &mut h);
    let here = o.pos() as i32;
    // IK chains, their links, then the autoplay locks (2006 SDK `write.cpp` order)
    h.ikchainindex = here;
    h.numikchains = plan.ik_chains.len() as i32;
    let chains: Vec<usize> = plan
        .ik_chains
        .iter()
        .map(|c| {
            let at = o.put(&0i32);
            st.add(at, at, &c.name);
            o.put(&0i32); // linktype
            o.put(&3i32); // numlinks
            o.put(&0i32); // linkindex, below
            at
        })
        .collect();
    o.align(4);
    for (c, &at) in plan.ik_chains.iter().zip(&chains) {
        o.put_at(at + 12, &((o.pos() - at) as i32));
        for (k, &bone) in c.bones.iter().enumerate() {
            o.put(&bone);
            let knee = if k == 0 { c.knee } else { [0.0; 3] };
            for v in knee {
                o.put(&v);
            }
            for _ in 0..3 {
                o.put(&0f32); // unused0
            }
        }
    }
    h.localikautoplaylockindex = o.pos() as i32;
    h.numlocalikautoplaylocks = plan.ik_autoplay_locks.len() as i32;
    for &(chain, pos_weight, local_q_weight) in &plan.ik_autoplay_locks {
        o.put(&chain);
        o.put(&pos_weight);
        o.put(&local_q_weight);
        for _ in 0..5 {
            o.put(&0i32); // flags, unused[4]
        }
    }
    o.align(4);
    h.nummouths = plan.face.mouths.len() as i32;
    h.mouthindex = o.pos() as i32;
    for m in &plan.face.mouths {
        o.put(&m.bone);
        o.put(&m.forward);
        o.put(&m.flexdesc);
    }
    o.align(4);
    let here = o.pos() as i32;
    h.localposeparamindex = here;
    h.numlocalposeparameters = plan.anim.pose_params.len() as i32;
    for p in &plan.anim.pose_params {
        let at = o.put(&0i32);
        st.add(at, at, &p.name);
        o.put(&p.flags);
        o.put(&p.start);
        o.put(&p.end);
        o.put(&p.loop_range);
    }
    o.align(4);
    // meshes
    let mut meshid = 0;
    let mut k = 0;
    for bp in &plan.body_parts {
        for m in &bp.models {
            let mat = model_at[k];
            k += 1;
            o.put_at(mat + 76, &((o.pos() - mat) as i32));
            let mut voff = 0;
            let mut mesh_at = Vec::with_capacity(m.meshes.len());
            for mesh in &m.meshes {
                let at = o.pos();
                mesh_at.push(at);
                o.put(&StudioMesh {
                    material: mesh.material as i32,
                    modelindex: mat as i32 - at as i32,
                    numvertices: mesh.vertices.len() as i32,
                    vertexoffset: voff,
                    materialtype: mesh.material_type,
                    materialparam: mesh.material_param,
                    meshid,
                    num_lod_vertexes: mesh.num_lod_vertexes,
                    ..Default::default()
                });
                voff += mesh.vertices.len() as i32;
                meshid += 1;
            }
            o.align(4);
            o.put_at(mat + 100, &(m.eyeballs.len() as i32));
            o.put_at(mat + 104, &((o.pos() - mat) as i32));
            for e in &m.eyeballs {
                o.put(&StudioEyeball {
                    bone: e.bone,
                    org: e.org,
                    zoffset: e.zoffset,
                    radius: e.radius,
                    up: e.up,
                    forward: e.forward,
                    iris_scale: e.iris_scale,
                    upperflexdesc: e.upper_flexdesc,
                    lowerflexdesc: e.lower_flexdesc,
                    uppertarget: e.upper_target,
                    lowertarget: e.lower_target,
                    upperlidflexdesc: e.upper_lid_flexdesc,
                    lowerlidflexdesc: e.lower_lid_flexdesc,
                    ..Default::default()
                });
            }
            // each mesh's flexes, then their vertex animations (2006 SDK `write.cpp` order)
            for (mesh, &at) in m.meshes.iter().zip(&mesh_at) {
                if mesh.flexes.is_empty() {
                    continue;
                }
                o.align(4);
                o.put_at(at + 16, &(mesh.flexes.len() as i32));
                o.put_at(at + 20, &((o.pos() - at) as i32));
                let flex_at: Vec<usize> = mesh
                    .flexes
                    .iter()
                    .map(|f| {
                        let fa = o.put(&f.flexdesc);
                        for t in f.targets {
                            o.put(&t);
                        }
                        o.put(&(f.anims.len() as i32));
                        o.put(&0i32); // vertindex, below
                        o.put(&f.flexpair);
                        o.put(&0i32); // vertanimtype 0 (normal), unusedchar
                        for _ in 0..6 {
                            o.put(&0i32);
                        }
                        fa
                    })
                    .collect();
                o.align(4);
                for (f, &fa) in mesh.flexes.iter().zip(&flex_at) {
                    o.put_at(fa + 24, &((o.pos() - fa) as i32));
                    for a in &f.anims {
                        o.put(&a.index);
                        o.bytes.push(a.speed);
                        o.bytes.push(a.side);
                        for d in a.delta.iter().chain(&a.ndelta) {
                            o.put(d);
                        }
                    }
                    o.align(4);
                }
            }
        }
    }
    // `$includemodel` (`source-animation.md` §8.2): no label, the file under `models/`
    h.includemodelindex = o.pos() as i32;
    h.numincludemodels = plan.anim.include_models.len() as i32;
    for m in &plan.anim.include_models {
        let at = o.put(&0i32);
        let name_at = o.put(&0i32);
        st.add(name_at, at, m);
    }
    // `$animblocksize`: the block table (entry 0, the MDL, zero), as the SDK writes it here
    h.animblockindex = o.pos() as i32;
    if let Some(ani) = &ani {
        h.numanimblocks = ani.blocks.len() as i32;
        for &(start, end) in &ani.blocks {
            o.put(&AnimBlock {
                datastart: start as i32,
                dataend: end as i32,
            });
        }
    }
    // textures
    h.numtextures = plan.textures.len() as i32;
    h.textureindex = o.pos() as i32;
    for t in &plan.textures {
        let at = o.put(&Texture::default());
        st.add(at, at, t);
    }
    h.numcdtextures = plan.cd_materials.len() as i32;
    h.cdtextureindex = o.pos() as i32;
    for c in &plan.cd_materials {
        let at = o.put(&0i32);
        st.add(at, 0, c);
    }
    o.align(4);
    h.numskinref = plan.textures.len() as i32;
    h.numskinfamilies = plan.skins.len() as i32;
    h.skinindex = o.pos() as i32;
    for row in &plan.skins {
        for &c in row {
            o.put(&c);
        }
    }
    o.align(4);
    h.keyvalueindex = o.pos() as i32;
    if let Some(kv) = &plan.keyvalues {
        o.bytes.extend_from_slice(kv.as_bytes());
        o.bytes.push(0);
        h.keyvaluesize = kv.len() as i32 + 1;
        o.align(4);
    }
    let src_bone = o.pos() as i32;
    o.put_at(408 + 4, &src_bone);
    o.put_at(408 + 12, &plan.max_eye_deflection);
    // the `.ani` file's name, relative to the game folder (the SDK's `models/<name>.ani`); the
    // empty string without one
    let ani_name = ani.as_ref().map_or(String::new(), |_| ani_path(&plan.name));
    st.add(348, 0, &ani_name);
    o.put_at(0, &h);
    st.finish(&mut o);
    if let Some(ani) = &mut ani {
        let len = ani.bytes.len() as i32;
        let hdr = StudioHdr {
            id: i32::from_le_bytes(*b"IDAG"),
            version: 48,
            length: len,
            ..Default::default()
        };
        let mut head = Vec::with_capacity(StudioHdr::SIZE);
        hdr.put(&mut head);
        if let Some(dst) = ani.bytes.get_mut(..StudioHdr::SIZE) {
            dst.copy_from_slice(&head);
        }
    }
    (o.bytes, ani)
}

/// `$modelname` without `.mdl` (either case), with forward slashes: the stem of every file of
/// the model.
pub fn model_stem(name: &str) -> String {
    let n = name.replace('\\', "/");
    n.strip_suffix(".mdl")
        .or_else(|| n.strip_suffix(".MDL"))
        .unwrap_or(&n)
        .to_string()
}

/// The name the MDL gives its `.ani` file: `models/<stem>.ani`, as the 2006 SDK's
/// `WriteModelFiles` makes it.
pub fn ani_path(name: &str) -> String {
    format!("models/{}.ani", model_stem(name))
}

/// A bone's `BONE_HAS_SAVEFRAME_*` flags when the animations are in an `.ani` file.
fn save_flags(plan: &SourceModel, bone: usize) -> i32 {
    match plan.anim.blocks.as_ref().and_then(|b| b.save.get(bone)) {
        Some(&(pos, rot)) => {
            (if pos { BONE_HAS_SAVEFRAME_POS } else { 0 })
                | (if rot { BONE_HAS_SAVEFRAME_ROT } else { 0 })
        }
        None => 0,
    }
}

/// Folds the MDL image (checksum and length zero) into the checksum (`source-geometry.md` §10).
pub fn checksum(mdl: &[u8]) -> i32 {
    let mut c: i32 = 0;
    for w in mdl.chunks(4) {
        let mut a = [0u8; 4];
        a[..w.len()].copy_from_slice(w);
        let v = i32::from_le_bytes(a);
        let carry = i32::from(c & 0x0800_0000 != 0);
        c = c.wrapping_shl(1).wrapping_add(carry).wrapping_add(v);
    }
    c
}

/// The VVD: header, fix-ups, vertices and tangents in LOD-group file order.
pub fn write_vvd(plan: &SourceModel, check: i32) -> Vec<u8> {
    struct MeshRef<'a> {
        mesh: &'a super::model::PMesh,
    }
    let meshes: Vec<MeshRef> = plan
        .body_parts
        .iter()
        .flat_map(|bp| bp.models.iter())
        .flat_map(|m| m.meshes.iter())
        .map(|mesh| MeshRef { mesh })
        .collect();
    let nl = plan.num_lods;
    // file order: group descending, then mesh, then final index
    let mut file: Vec<(usize, usize)> = Vec::new();
    let mut fixups: Vec<VertexFileFixup> = Vec::new();
    let mut first_in_file = vec![vec![0usize; nl]; meshes.len()];
    for g in (0..nl).rev() {
        for (mi, m) in meshes.iter().enumerate() {
            first_in_file[mi][g] = file.len();
            for (vi, v) in m.mesh.vertices.iter().enumerate() {
                if v.group == g {
                    file.push((mi, vi));
                }
            }
        }
    }
    for (mi, m) in meshes.iter().enumerate() {
        for g in (0..nl).rev() {
            let n = m.mesh.vertices.iter().filter(|v| v.group == g).count();
            if n > 0 {
                fixups.push(VertexFileFixup {
                    lod: g as i32,
                    source_vertex_id: first_in_file[mi][g] as i32,
                    num_vertexes: n as i32,
                });
            }
        }
    }
    let with_verts = meshes
        .iter()
        .filter(|m| !m.mesh.vertices.is_empty())
        .count();
    if fixups.len() <= 1 || nl == 1 || with_verts <= 1 {
        fixups.clear();
        file.clear();
        for (mi, m) in meshes.iter().enumerate() {
            for vi in 0..m.mesh.vertices.len() {
                file.push((mi, vi));
            }
        }
    }
    let mut counts = [0i32; 8];
    for (l, c) in counts.iter_mut().enumerate() {
        let l = l.min(nl - 1);
        *c = meshes
            .iter()
            .flat_map(|m| m.mesh.vertices.iter())
            .filter(|v| v.group >= l)
            .count() as i32;
    }
    let vstart = (64 + 12 * fixups.len()).next_multiple_of(16);
    // the header and fixups, then 48 bytes a vertex and 16 of its tangent
    let mut o = Out::with_capacity(vstart + 64 * file.len());
    o.put(&VertexFileHeader {
        id: i32::from_le_bytes(*b"IDSV"),
        version: 4,
        checksum: check,
        num_lods: nl as i32,
        num_lod_vertexes: counts,
        num_fixups: fixups.len() as i32,
        fixup_table_start: 64,
        vertex_data_start: vstart as i32,
        tangent_data_start: (vstart + 48 * file.len()) as i32,
    });
    for f in &fixups {
        o.put(f);
    }
    o.align(16);
    for &(mi, vi) in &file {
        let v = &meshes[mi].mesh.vertices[vi];
        let mut weight = [0.0f32; 3];
        let mut bone = [0i8; 3];
        for (k, w) in v.weights.iter().take(3).enumerate() {
            weight[k] = w.1;
            bone[k] = w.0 as i8;
        }
        o.put(&StudioVertex {
            weight,
            bone,
            numbones: v.weights.len().min(3) as u8,
            vec_position: v.pos,
            vec_normal: v.normal,
            vec_tex_coord: v.uv,
        });
    }
    for &(mi, vi) in &file {
        o.put(&meshes[mi].mesh.vertices[vi].tangent);
    }
    o.bytes
}

/// One VTX variant.
pub fn write_vtx(
    plan: &SourceModel,
    strips: Option<&super::model::VtxStrips>,
    variant: Variant,
    check: i32,
) -> Vec<u8> {
    let nl = plan.num_lods;
    let models: Vec<&super::model::PModel> = plan
        .body_parts
        .iter()
        .flat_map(|b| b.models.iter())
        .collect();
    let no_groups = Vec::new();
    let built: &Vec<Vec<Vec<Vec<Group>>>> = strips
        .filter(|s| s.variant == variant)
        .map_or(&no_groups, |s| &s.groups);
    let nbp = plan.body_parts.len();
    let nmodels = models.len();
    let nlods = nmodels * nl;
    let nmeshes: usize = models.iter().map(|m| m.meshes.len()).sum::<usize>() * nl;
    let ngroups: usize = built.iter().flatten().flatten().map(|g| g.len()).sum();
    let nstrips: usize = built
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .map(|g| g.strips.len())
        .sum();
    let nverts: usize = built
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .map(|g| g.verts.len())
        .sum();
    let nidx: usize = built
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .map(|g| g.indices.len())
        .sum();
    let nchanges: usize = built
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .flat_map(|g| g.strips.iter())
        .map(|s| s.1.len())
        .sum();
    let bp_start = 36;
    let model_start = bp_start + 8 * nbp;
    let lod_start = model_start + 8 * nmodels;
    let mesh_start = lod_start + 12 * nlods;
    let group_start = mesh_start + 9 * nmeshes;
    let strip_start = group_start + 25 * ngroups;
    let vert_start = strip_start + 27 * nstrips;
    let idx_start = vert_start + 9 * nverts;
    let change_start = idx_start + 2 * nidx;
    let list_start = change_start + 8 * nchanges;

    // (the material replacement lists after `list_start`: 8 bytes a LOD)
    let mut o = Out::with_capacity(list_start + 8 * nl);
    o.put(&VtxFileHeader {
        version: 7,
        vert_cache_size: variant.vert_cache_size(),
        max_bones_per_strip: variant.max_bones_per_strip() as u16,
        max_bones_per_tri: 9,
        max_bones_per_vert: 3,
        check_sum: check,
        num_lods: nl as i32,
        material_replacement_list_offset: list_start as i32,
        num_body_parts: nbp as i32,
        body_part_offset: bp_start as i32,
    });
    let mut mi = 0;
    for (i, bp) in plan.body_parts.iter().enumerate() {
        let at = bp_start + 8 * i;
        o.put(&VtxBodyPart {
            num_models: bp.models.len() as i32,
            model_offset: (model_start + 8 * mi - at) as i32,
        });
        mi += bp.models.len();
    }
    for i in 0..nmodels {
        let at = model_start + 8 * i;
        o.put(&VtxModel {
            num_lods: nl as i32,
            lod_offset: (lod_start + 12 * nl * i - at) as i32,
        });
    }
    let mut mesh_i = 0;
    for (m, model) in models.iter().enumerate() {
        for l in 0..nl {
            let at = lod_start + 12 * (m * nl + l);
            o.put(&VtxModelLod {
                num_meshes: model.meshes.len() as i32,
                mesh_offset: (mesh_start + 9 * mesh_i - at) as i32,
                switch_point: plan.lod_switch.get(l).copied().unwrap_or(0.0),
            });
            mesh_i += model.meshes.len();
        }
    }
    let mut group_i = 0;
    for (lods, model) in built.iter().zip(&models) {
        for meshes in lods {
            for (groups, mesh) in meshes.iter().zip(&model.meshes) {
                let at = o.pos();
                o.put(&VtxMesh {
                    num_strip_groups: groups.len() as i32,
                    strip_group_header_offset: (group_start + 25 * group_i - at) as i32,
                    // MESH_IS_EYES for an eyeball's mesh (`source-geometry.md` §8.2)
                    flags: if mesh.material_type != 0 { 0x02 } else { 0 },
                });
                group_i += groups.len();
            }
        }
    }
    let (mut strip_i, mut vert_i, mut idx_i) = (0usize, 0usize, 0usize);
    for g in built.iter().flatten().flatten().flatten() {
        let at = o.pos();
        let mut hd = g.header();
        hd.vert_offset = (vert_start + 9 * vert_i - at) as i32;
        hd.index_offset = (idx_start + 2 * idx_i - at) as i32;
        hd.strip_offset = (strip_start + 27 * strip_i - at) as i32;
        o.put(&hd);
        strip_i += g.strips.len();
        vert_i += g.verts.len();
        idx_i += g.indices.len();
    }
    let mut change_i = 0usize;
    for g in built.iter().flatten().flatten().flatten() {
        for (s, changes) in &g.strips {
            let at = o.pos();
            let mut s = *s;
            s.bone_state_change_offset = (change_start + 8 * change_i - at) as i32;
            o.put(&s);
            change_i += changes.len();
        }
    }
    for g in built.iter().flatten().flatten().flatten() {
        for v in &g.verts {
            o.put(v);
        }
    }
    for g in built.iter().flatten().flatten().flatten() {
        for i in &g.indices {
            o.put(i);
        }
    }
    for g in built.iter().flatten().flatten().flatten() {
        for (_, changes) in &g.strips {
            for c in changes {
                o.put(c);
            }
        }
    }
    for l in 0..nl {
        o.put(&VtxMaterialReplacementList {
            num_replacements: 0,
            replacement_offset: -8 * l as i32,
        });
    }
    o.bytes
}

#[cfg(test)]
mod tests {
    /// Every (frames, looping) pair of Half-Life 2's `male_shared.mdl` (Valve's v48 build, read
    /// with mdlc's reader; the samples decode equal to frames 0, span, 2·span) with the
    /// `zeroframespan` and `zeroframecount` Valve wrote for it.
    #[test]
    fn zero_frame_sampling_is_valves() {
        let valve: &[(usize, bool, usize, usize)] = &[
            (1, false, 0, 1),
            (3, false, 2, 1),
            (6, false, 5, 1),
            (7, false, 6, 1),
            (8, false, 7, 1),
            (11, false, 9, 1),
            (14, false, 9, 1),
            (15, false, 9, 1),
            (16, false, 9, 1),
            (18, false, 9, 1),
            (19, false, 9, 2),
            (20, false, 9, 2),
            (21, false, 9, 2),
            (22, false, 9, 2),
            (25, false, 9, 2),
            (26, false, 9, 2),
            (29, false, 9, 3),
            (30, false, 9, 3),
            (31, false, 9, 3),
            (32, false, 9, 3),
            (36, false, 9, 3),
            (38, false, 9, 3),
            (39, false, 9, 3),
            (40, false, 9, 3),
            (41, false, 9, 3),
            (42, false, 9, 3),
            (44, false, 9, 3),
            (46, false, 9, 3),
            (49, false, 9, 3),
            (50, false, 9, 3),
            (51, false, 9, 3),
            (53, false, 9, 3),
            (56, false, 9, 3),
            (57, false, 9, 3),
            (61, false, 9, 3),
            (63, false, 9, 3),
            (65, false, 9, 3),
            (67, false, 9, 3),
            (71, false, 9, 3),
            (76, false, 9, 3),
            (77, false, 9, 3),
            (79, false, 9, 3),
            (92, false, 9, 3),
            (101, false, 9, 3),
            (105, false, 9, 3),
            (106, false, 9, 3),
            (116, false, 9, 3),
            (121, false, 9, 3),
            (139, false, 9, 3),
            (151, false, 9, 3),
            (161, false, 9, 3),
            (247, false, 9, 3),
            (2343, false, 9, 3),
            (1, true, 0, 1),
            (2, true, 0, 1),
            (4, true, 1, 1),
            (8, true, 3, 2),
            (11, true, 5, 2),
            (13, true, 6, 2),
            (17, true, 8, 2),
            (18, true, 8, 2),
            (19, true, 9, 2),
            (21, true, 9, 2),
            (27, true, 9, 2),
            (29, true, 9, 3),
            (31, true, 9, 3),
            (35, true, 9, 3),
            (36, true, 9, 3),
            (41, true, 9, 3),
            (42, true, 9, 3),
            (51, true, 9, 3),
            (60, true, 9, 3),
            (61, true, 9, 3),
            (81, true, 9, 3),
            (121, true, 9, 3),
            (150, true, 9, 3),
            (151, true, 9, 3),
            (181, true, 9, 3),
            (226, true, 9, 3),
            (280, true, 9, 3),
        ];
        for &(frames, looping, span, count) in valve {
            assert_eq!(
                super::zero_frame_sampling(frames, looping),
                (span, count),
                "{frames} frames, looping {looping}"
            );
        }
    }
}
