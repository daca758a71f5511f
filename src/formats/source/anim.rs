//! The animation side of a Source model, from the IR to what the MDL holds
//! (`source-animation.md` §2.4–§2.5 conversion, §5.1 scales, §3 animdescs, §6 sequences, §6.5
//! pose parameters, §6.10 nodes, §6.11 sequence boxes). The bytes of each animation come from
//! [`animcodec`](super::animcodec); the layout from [`write`](super::write).

use crate::diag::FileSpan;
use crate::diag::{Code, Diagnostic};
use crate::ir::model::{Anim, Model, Seq};
use crate::ir::written::motion_bit;

use super::animcodec::{self, AnimInput, BoneBase, Encoded, LocalPose};
use super::math::{self, Aabb, M34};
use super::model::{
    AnimBlocks, AnimPlan, PAnim, PAutoLayer, PBodyPart, PBone, PEvent, PHitboxSet, PMovement,
    PPoseParam, PSeq, AL_LOCAL, AL_NOBLEND, AL_POSE, AL_SPLINE, AL_XFADE,
};

/// Animation flags shared by animdescs and seqdescs (§3.1).
pub const LOOPING: i32 = 0x1;
pub const SNAP: i32 = 0x2;
pub const DELTA: i32 = 0x4;
pub const AUTOPLAY: i32 = 0x8;
pub const POST: i32 = 0x10;
pub const ALLZEROS: i32 = 0x20;
pub const REALTIME: i32 = 0x100;
pub const LOCAL: i32 = 0x200;
pub const HIDDEN: i32 = 0x400;
/// A `$declaresequence` placeholder (§3.1 STUDIO_OVERRIDE).
pub const OVERRIDE: i32 = 0x800;
pub const WORLD: i32 = 0x4000;

/// Longest event option string (`mstudioevent_t.options` is 64 bytes with its NUL, §6.3).
const MAX_EVENT_OPTIONS: usize = 63;
/// Limits the writer keeps (§9.1, §6.5).
const MAX_POSE_PARAMS: usize = 24;
const MAX_NODES: usize = 127;
const MAX_EVENTS: usize = 255;

/// What the plan already knows that the animation side needs.
pub struct Context<'a> {
    pub bones: &'a [PBone],
    /// IR bone → plan bone.
    pub ir_to_out: &'a [Option<usize>],
    pub static_prop: bool,
    pub body_parts: &'a [PBodyPart],
    pub hitbox_sets: &'a [PHitboxSet],
    /// For `calcblend`.
    pub attachments: &'a [super::model::PAttachment],
    /// For IK rules.
    pub ik_chains: &'a [super::model::PIkChain],
    /// The rest-pose box (model space, after the +90° turn), used for one-frame static props and
    /// for delta sequences.
    pub rest_box: ([f32; 3], [f32; 3]),
    /// Each plan bone's realignment (`srcRealign`; `None` is the identity): an animated bone's
    /// transform is taken through it (`realign.rs`).
    pub realign: &'a [Option<M34>],
}

fn wrap_pi(mut a: f32) -> f32 {
    use std::f32::consts::PI;
    if !a.is_finite() {
        return 0.0;
    }
    while a >= PI {
        a -= 2.0 * PI;
    }
    while a < -PI {
        a += 2.0 * PI;
    }
    a
}

pub(super) fn decompose(m: &M34) -> LocalPose {
    let r = math::to_euler(m);
    LocalPose {
        pos: [m[0][3], m[1][3], m[2][3]],
        rot: [wrap_pi(r[0]), wrap_pi(r[1]), wrap_pi(r[2])],
    }
}

/// The rest pose of every bone as local poses, with the root rotation `rotation` applied to the
/// roots (what a one-frame animation of the reference pose holds, §7).
fn rest_frame(bones: &[PBone], rotation: [f32; 3], static_prop: bool) -> Vec<LocalPose> {
    let m = math::from_euler(rotation, [0.0; 3]);
    bones
        .iter()
        .map(|b| {
            if b.parent.is_none() && !static_prop {
                decompose(&math::mul(&m, &math::from_euler(b.rot, b.pos)))
            } else {
                LocalPose {
                    pos: b.pos,
                    rot: b.rot,
                }
            }
        })
        .collect()
}

/// §2.4: the local pose of every model bone in every frame of `a`.
pub(super) fn convert(a: &Anim, cx: &Context) -> Vec<LocalPose> {
    let nb = cx.bones.len();
    let nf = a.num_frames.max(1);
    if cx.static_prop {
        // `$staticprop`: the turn is baked into the vertices and the single bone never moves.
        return vec![LocalPose::default(); nb];
    }
    let nfile = a.file_bones.len();
    // model bone → the file bone that drives it
    let mut file_of: Vec<Option<usize>> = vec![None; nb];
    for (q, fb) in a.file_bones.iter().enumerate() {
        let Some(ir) = fb.bone else { continue };
        let Some(Some(p)) = cx.ir_to_out.get(ir.index()) else {
            continue;
        };
        if let Some(slot) = file_of.get_mut(*p) {
            if slot.is_none() {
                *slot = Some(q);
            }
        }
    }
    let m = math::from_euler(a.rotation, [0.0; 3]);
    let rest: Vec<M34> = cx
        .bones
        .iter()
        .map(|b| math::from_euler(b.rot, b.pos))
        .collect();
    let mut out = Vec::with_capacity(nf * nb);
    // file bones, parents first whatever the order of `nodes` (once, not per frame); bones in a
    // parent cycle never get a place and are treated as missing from the file
    let file_parent = |q: usize| {
        a.file_bones[q]
            .parent
            .map(|x| x as usize)
            .filter(|&x| x < nfile && x != q)
    };
    let mut order: Vec<usize> = Vec::with_capacity(nfile);
    let mut placed = vec![false; nfile];
    let mut progress = true;
    while progress {
        progress = false;
        for q in 0..nfile {
            if !placed[q] && file_parent(q).is_none_or(|x| placed[x]) {
                placed[q] = true;
                order.push(q);
                progress = true;
            }
        }
    }
    let mut wsrc: Vec<Option<M34>> = vec![None; nfile];
    let mut world: Vec<M34> = vec![math::IDENTITY; nb];
    for f in 0..nf {
        for &q in &order {
            let pose = a.pose(f, q).unwrap_or_default();
            let p = math::scale(pose.pos, a.scale);
            wsrc[q] = Some(match file_parent(q).and_then(|x| wsrc[x]) {
                Some(pw) => math::mul(&pw, &math::from_euler(pose.rot, p)),
                None => math::mul(&m, &math::from_euler(pose.rot, math::sub(p, a.origin))),
            });
        }
        for b in 0..nb {
            let parent = cx.bones[b].parent.filter(|&p| p < b);
            let w = match file_of[b].and_then(|q| wsrc.get(q).copied().flatten()) {
                // 2006 SDK `TranslateAnimations`: source bone-to-world × `srcRealign`
                Some(w) => match cx.realign.get(b) {
                    Some(Some(r)) => math::mul(&w, r),
                    _ => w,
                },
                None => match parent {
                    Some(p) => math::mul(&world[p], &rest[b]),
                    None => rest[b],
                },
            };
            world[b] = w;
            let local = match parent {
                Some(p) => math::mul(&math::invert(&world[p]), &w),
                None => w,
            };
            out.push(decompose(&local));
        }
    }
    out
}

/// Per-bone weights of a `$weightlist` (§6.6): listed bones take their weight, other roots 0,
/// other children their parent's.
fn weight_list(model: &Model, name: &str, cx: &Context) -> Option<(Vec<f32>, Vec<f32>)> {
    let wl = model
        .weight_lists
        .iter()
        .find(|w| w.name.value.eq_ignore_ascii_case(name))?;
    let nb = cx.bones.len();
    let mut w: Vec<Option<(f32, f32)>> = vec![None; nb];
    for (bone, weight, posw) in &wl.weights {
        if let Some(Some(p)) = cx.ir_to_out.get(bone.index()) {
            if let Some(slot) = w.get_mut(*p) {
                *slot = Some((*weight, posw.unwrap_or(*weight)));
            }
        }
    }
    let mut ws = vec![0.0; nb];
    let mut ps = vec![0.0; nb];
    for b in 0..nb {
        let v = match w[b] {
            Some(v) => v,
            None => match cx.bones[b].parent.filter(|&p| p < b) {
                Some(p) => (ws[p], ps[p]),
                None => (0.0, 0.0),
            },
        };
        ws[b] = v.0;
        ps[b] = v.1;
    }
    Some((ws, ps))
}

fn span_of(model: &Model) -> Option<FileSpan> {
    model.sequences.first().map(|s| s.span)
}

/// Plans every animation and sequence of `model`.
pub fn plan(model: &Model, cx: &Context, diags: &mut Vec<Diagnostic>) -> Option<AnimPlan> {
    let nb = cx.bones.len();
    let errors_before = diags.iter().filter(|d| d.is_error()).count();
    let block_size = anim_block_size(model, diags);
    let quarter = [0.0, 0.0, std::f32::consts::FRAC_PI_2];

    // --- animations: convert, then the per-animation options (§2.5) --------------------------
    let mut ignored: Vec<Ignored> = Vec::new();
    let mut anims: Vec<PAnim> = Vec::with_capacity(model.animations.len() + 1);
    for a in &model.animations {
        let frames = convert(a, cx);
        let mut flags = 0;
        if a.looping {
            flags |= LOOPING;
        }
        for f in &a.flags {
            match f.value.as_str() {
                "snap" => flags |= SNAP,
                "post" => flags |= POST,
                _ => {}
            }
        }
        anims.push(PAnim {
            name: a.name.value.clone(),
            fps: a.fps,
            flags,
            num_frames: if cx.static_prop {
                1
            } else {
                a.num_frames.max(1)
            },
            frames,
            weights: vec![1.0; nb],
            pos_weights: vec![1.0; nb],
            movements: Vec::new(),
            encoded: Encoded::default(),
            ikrules: Vec::new(),
        });
    }
    // `$root`, or bone 0: the bone whose travel motion extraction measures
    let root = model
        .root_bone
        .as_ref()
        .and_then(|(b, _)| cx.ir_to_out.get(b.index()).copied().flatten())
        .unwrap_or(0);
    if !cx.static_prop {
        for (i, a) in model.animations.iter().enumerate() {
            process(model, a, i, &mut anims, cx, root, diags, &mut ignored);
        }
    }

    // --- sequences ------------------------------------------------------------------------------
    let mut pose_params: Vec<PPoseParam> = model
        .pose_parameters
        .iter()
        .map(|p| PPoseParam {
            name: p.name.value.clone(),
            flags: if p.wrap || p.loop_range.is_some() {
                LOOPING
            } else {
                0
            },
            start: p.min,
            end: p.max,
            loop_range: if p.wrap {
                p.max - p.min
            } else {
                p.loop_range.unwrap_or(0.0)
            },
        })
        .collect();
    if pose_params.len() > MAX_POSE_PARAMS {
        if let Some(p) = model.pose_parameters.get(MAX_POSE_PARAMS) {
            diags.push(
                Diagnostic::new(
                    Code::SourceAnimLimit,
                    format!(
                        "the model has {} pose parameters; Source allows at most {MAX_POSE_PARAMS}",
                        pose_params.len()
                    ),
                    p.name.span.span(),
                    "one too many",
                )
                .with_note("remove pose parameters no sequence blends over"),
            );
        }
    }
    let mut nodes: Vec<String> = Vec::new();
    let node_of = |n: &str, nodes: &mut Vec<String>| -> i32 {
        match nodes.iter().position(|x| x.eq_ignore_ascii_case(n)) {
            Some(i) => i as i32 + 1,
            None => {
                nodes.push(n.to_string());
                nodes.len() as i32
            }
        }
    };
    let mut seqs: Vec<PSeq> = Vec::with_capacity(model.sequences.len() + 1);
    for (seq_index, s) in model.sequences.iter().enumerate() {
        let ps = sequence(
            model,
            s,
            seq_index,
            &anims,
            &mut pose_params,
            cx,
            diags,
            &mut ignored,
        );
        let Some(mut ps) = ps else { continue };
        if let Some(t) = &s.transition {
            ps.entry_node = node_of(&t.entry.value, &mut nodes);
            ps.exit_node = node_of(&t.exit.value, &mut nodes);
            if t.reversible {
                ps.nodeflags = 1;
            }
        } else if let Some(n) = &s.node {
            let k = node_of(&n.value, &mut nodes);
            ps.entry_node = k;
            ps.exit_node = k;
        }
        seqs.push(ps);
    }
    // autolayers need every sequence's index
    for (s, ps) in model.sequences.iter().zip(seqs.iter_mut()) {
        ps.autolayers = autolayers(s, model, &anims, &pose_params, diags, &mut ps.flags);
    }
    if model.sequences.is_empty() {
        // §7: what `$sequence idle "<reference>"` gives
        let frames = rest_frame(cx.bones, quarter, cx.static_prop);
        anims.push(PAnim {
            name: "@idle".into(),
            fps: 30.0,
            flags: 0,
            num_frames: 1,
            frames: if cx.static_prop {
                vec![LocalPose::default(); nb]
            } else {
                frames
            },
            weights: vec![1.0; nb],
            pos_weights: vec![1.0; nb],
            movements: Vec::new(),
            encoded: Encoded::default(),
            ikrules: Vec::new(),
        });
        seqs.push(PSeq {
            name: "idle".into(),
            activity: String::new(),
            actweight: 0,
            flags: 0,
            anims: vec![(anims.len() - 1) as i16],
            groupsize: [1, 1],
            paramindex: [-1, -1],
            paramstart: [0.0; 2],
            paramend: [0.0; 2],
            posekeys: Vec::new(),
            events: Vec::new(),
            fadein: 0.2,
            fadeout: 0.2,
            entry_node: 0,
            exit_node: 0,
            nodeflags: 0,
            weights: vec![1.0; nb],
            autolayers: Vec::new(),
            bbox: cx.rest_box,
            keyvalues: None,
            iklocks: Vec::new(),
            numikrules: 0,
        });
    }
    if nodes.len() > MAX_NODES {
        if let Some(sp) = span_of(model) {
            diags.push(Diagnostic::new(
                Code::SourceAnimLimit,
                format!(
                    "the model has {} transition nodes; Source allows at most {MAX_NODES}",
                    nodes.len()
                ),
                sp,
                "in these sequences",
            ));
        }
    }
    let n = nodes.len();
    let mut node_table = vec![0u8; n * n];
    for ps in &seqs {
        let (a, b) = (ps.entry_node, ps.exit_node);
        if a > 0 && b > 0 && a != b {
            let (a, b) = (a as usize - 1, b as usize - 1);
            if let Some(c) = node_table.get_mut(a * n + b) {
                *c = (b + 1) as u8;
            }
            if ps.nodeflags & 1 != 0 {
                if let Some(c) = node_table.get_mut(b * n + a) {
                    *c = (a + 1) as u8;
                }
            }
        }
    }

    report_ignored(ignored, diags);
    // sequences name their animations with i16s (§6.4), and tools keep sequences to i16 too (§9.1)
    for (what, n) in [("animations", anims.len()), ("sequences", seqs.len())] {
        if n > i16::MAX as usize {
            if let Some(sp) = span_of(model) {
                diags.push(Diagnostic::new(
                    Code::SourceAnimLimit,
                    format!("the model has {n} {what}; Source allows at most 32767"),
                    sp,
                    "in these sequences",
                ));
            }
        }
    }
    if diags.iter().filter(|d| d.is_error()).count() > errors_before {
        return None;
    }

    if model.lock_bone_lengths && !cx.static_prop {
        lock_bone_lengths(&mut anims, cx);
    }

    // --- `$limitrotation` (after the animations are processed, as `limitBoneRotations`) ---
    let alignments: Vec<(usize, [f32; 4])> = model
        .limit_rotations
        .iter()
        .filter_map(|(b, with_sequences, _)| {
            let k = cx.ir_to_out.get(b.index()).copied().flatten()?;
            let mut q = math::euler_quat(cx.bones.get(k)?.rot);
            if !with_sequences {
                for a in anims
                    .iter()
                    .filter(|a| a.flags & DELTA == 0 && a.num_frames > 3)
                {
                    // `QuaternionAdd`: the sum of q and the animation's middle, aligned to q
                    let m = math::quat_align(q, rotation_middle(a, k, nb));
                    q = [q[0] + m[0], q[1] + m[1], q[2] + m[2], q[3] + m[3]];
                }
                q = normalise_or_keep(q);
            }
            Some((k, q))
        })
        .collect();

    // --- IK rules (§3.4, §6.8) ---------------------------------------------------------------------
    if !cx.static_prop && !cx.ik_chains.is_empty() {
        let seq_anims: Vec<(Vec<usize>, FileSpan)> = model
            .sequences
            .iter()
            .map(|s| {
                (
                    s.animations.iter().map(|a| a.index()).collect(),
                    s.name.span.span(),
                )
            })
            .collect();
        let mut fixed = vec![false; nb];
        for (k, _) in &alignments {
            if let Some(f) = fixed.get_mut(*k) {
                *f = true;
            }
        }
        let sequences = super::ikrule::Sequences {
            seqs: &seqs,
            fixed_alignment: &fixed,
        };
        let counts = super::ikrule::build(model, &mut anims, &seq_anims, &sequences, cx, diags)?;
        if counts.len() == seqs.len() {
            for (ps, n) in seqs.iter_mut().zip(counts) {
                ps.numikrules = n;
            }
        }
    }

    // --- `$animblocksize`, `$bonesaveframe`: which bones keep their first frame in the MDL -----
    let blocks = block_size.map(|size| AnimBlocks {
        size,
        save: save_frames(model, &anims, cx, diags),
    });

    // --- scales and records (§5) ------------------------------------------------------------------
    let rest: Vec<([f32; 3], [f32; 3])> = cx.bones.iter().map(|b| (b.pos, b.rot)).collect();
    let inputs: Vec<AnimInput> = anims
        .iter()
        .map(|a| AnimInput {
            num_frames: a.num_frames,
            frames: &a.frames,
            delta: a.flags & DELTA != 0,
            weights: &a.weights,
            pos_weights: &a.pos_weights,
        })
        .collect();
    let scales = animcodec::compute_scales(&rest, &inputs);
    let bases: Vec<BoneBase> = cx
        .bones
        .iter()
        .zip(&scales)
        .map(|(b, s)| BoneBase {
            pos: b.pos,
            rot: b.rot,
            quat: b.quat,
            posscale: s.0,
            rotscale: s.1,
        })
        .collect();
    // `$sectionframes frames minframes`, default 30 120 (`qc-source.md`): longer animations are
    // cut into sections, as Valve's compiler does (a 151-frame animation in 30-frame sections is
    // observed in its v48 output, `source-animation.md` §5.5a).
    let (section, min_frames) = model.section_frames.as_ref().map_or((30, 120), |s| {
        (s.value.0.max(0) as usize, s.value.1.max(0) as usize)
    });
    let encoded: Vec<Encoded> = inputs
        .iter()
        .map(|i| {
            if section > 0 && i.num_frames > min_frames {
                animcodec::encode_sectioned(&bases, i, section)
            } else {
                animcodec::encode(&bases, i)
            }
        })
        .collect();
    drop(inputs);
    for (a, e) in anims.iter_mut().zip(encoded) {
        a.encoded = e;
    }

    // --- sequence boxes (§6.11) -------------------------------------------------------------------
    // distinct points pay for their hashing only when there are several frames to pose
    let frames: usize = anims.iter().map(|a| a.num_frames).sum();
    let points = box_points(cx, frames > 2);
    let mut anim_boxes: Vec<Option<Aabb>> = vec![None; anims.len()];
    for ps in &mut seqs {
        if ps.flags & OVERRIDE != 0 {
            continue; // a `$declaresequence` placeholder keeps its zero box
        }
        if cx.static_prop {
            ps.bbox = cx.rest_box;
            continue;
        }
        // Valve's compiler poses the model with a delta animation's values as if they were
        // absolute local poses; the box of a delta sequence is that (observed in
        // `mapbase-bunker-gun01`'s `aim`), so mdlc does the same.
        let mut bx = Aabb::EMPTY;
        for &ai in &ps.anims {
            let Some(a) = anims.get(ai as usize) else {
                continue;
            };
            // an animation's box once, however many sequences use it (the union of boxes is
            // the box of all their points)
            let Some(slot) = anim_boxes.get_mut(ai as usize) else {
                continue;
            };
            let ab = slot.get_or_insert_with(|| {
                let mut b = Aabb::EMPTY;
                anim_box(a, cx, &points, &mut b);
                b
            });
            bx.union(ab);
        }
        ps.bbox = if bx.is_empty() {
            cx.rest_box
        } else {
            bx.or_zero()
        };
    }

    Some(AnimPlan {
        anims,
        seqs,
        pose_params,
        nodes,
        node_table,
        scales,
        include_models: model
            .include_models
            .iter()
            .map(|m| format!("models/{}", m.value))
            .collect(),
        alignments,
        blocks,
    })
}

/// `$animblocksize n`: the block size in bytes (`n` KB when `n` < 1024, as the 2006 SDK's
/// `Cmd_AnimBlockSize`), or `None` for no `.ani` file (not given, or 0). A negative size, which
/// the SDK would take as "a block per animation", is refused.
fn anim_block_size(model: &Model, diags: &mut Vec<Diagnostic>) -> Option<usize> {
    let n = model.anim_block_size.as_ref()?;
    match usize::try_from(n.value) {
        Ok(0) => None,
        Ok(k) if k < 1024 => Some(k * 1024),
        Ok(k) => Some(k),
        Err(_) => {
            diags.push(
                Diagnostic::new(
                    Code::SourceAnimLimit,
                    format!("`$animblocksize {}` is negative", n.value),
                    n.span.span(),
                    "a block size in KB (under 1024) or in bytes",
                )
                .with_note("0 keeps every animation in the .mdl"),
            );
            None
        }
    }
}

/// The bones whose first frame each animation keeps in the MDL (`BONE_HAS_SAVEFRAME_POS`,
/// `_ROT`), as the 2006 SDK's `WriteAnimations` chooses them: the `$bonesaveframe` list when
/// there is one (a name the model does not have is skipped, with W0624); otherwise every
/// bone's rotation, and the position of a root bone or of a bone whose position ranges over
/// more than 2 units (the length of the per-axis ranges of its rest position and of every
/// frame of the animations that are not deltas).
fn save_frames(
    model: &Model,
    anims: &[PAnim],
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(bool, bool)> {
    let nb = cx.bones.len();
    if !model.bone_save_frames.is_empty() {
        let mut save = vec![(false, false); nb];
        for f in &model.bone_save_frames {
            let found = cx
                .bones
                .iter()
                .position(|x| x.name.eq_ignore_ascii_case(&f.bone.value));
            match found.and_then(|k| save.get_mut(k)) {
                Some(s) => {
                    s.0 |= f.position;
                    s.1 |= f.rotation;
                }
                None => {
                    let mut d = unknown_name(
                        "bone",
                        &f.bone.value,
                        f.bone.span.span(),
                        cx.bones.iter().map(|x| x.name.as_str()),
                    );
                    d.code = Code::SourceSaveFrameUnknownBone;
                    d.severity = crate::diag::Severity::Warning;
                    d.message = format!(
                        "`$bonesaveframe` names bone `{}`, which the model does not have: skipped",
                        f.bone.value
                    );
                    d.notes.insert(
                        0,
                        "Valve's compiler skips such a name without a word; mdlc does the same, with this warning".into(),
                    );
                    diags.push(d);
                }
            }
        }
        return save;
    }
    cx.bones
        .iter()
        .enumerate()
        .map(|(b, bone)| {
            let (mut lo, mut hi) = (bone.pos, bone.pos);
            for a in anims.iter().filter(|a| a.flags & DELTA == 0) {
                for f in 0..a.num_frames {
                    if let Some(p) = a.frames.get(f * nb + b) {
                        for k in 0..3 {
                            lo[k] = lo[k].min(p.pos[k]);
                            hi[k] = hi[k].max(p.pos[k]);
                        }
                    }
                }
            }
            let d = math::sub(hi, lo);
            let range = math::dot(d, d).sqrt();
            (bone.parent.is_none() || range > 2.0, true)
        })
        .collect()
}

/// A vertex as the boxes see it: its rest position and its links (at most three; the rest of
/// the array unused).
type BoxPoint = ([f32; 3], [(u8, f32); 3], usize);

/// A [`BoxPoint`] by the bits of its numbers.
type BoxKey = ([u32; 3], [(u8, u32); 3]);

/// Every vertex of every mesh; with `distinct`, once per distinct position and links (vertices
/// split only by their normal, uv or LOD land on the same point in every frame).
fn box_points(cx: &Context, distinct: bool) -> Vec<BoxPoint> {
    let mut seen: crate::formats::hash::FastSet<BoxKey> = Default::default();
    let mut out = Vec::new();
    for bp in cx.body_parts {
        for m in &bp.models {
            for mesh in &m.meshes {
                for v in &mesh.vertices {
                    let mut links = [(0u8, 0f32); 3];
                    let n = v.weights.len().min(3);
                    links[..n].copy_from_slice(&v.weights[..n]);
                    let key = (
                        v.pos.map(f32::to_bits),
                        links.map(|(b, w)| (b, w.to_bits())),
                    );
                    if !distinct || seen.insert(key) {
                        out.push((v.pos, links, n));
                    }
                }
            }
        }
    }
    out
}

/// Adds every vertex (`points`) and first-set hit box of every frame of `a` to `bx`.
fn anim_box(a: &PAnim, cx: &Context, points: &[BoxPoint], bx: &mut Aabb) {
    let nb = cx.bones.len();
    let mut world = vec![math::IDENTITY; nb];
    let mut skin = vec![math::IDENTITY; nb];
    for f in 0..a.num_frames {
        for b in 0..nb {
            let Some(p) = a.frames.get(f * nb + b) else {
                return;
            };
            let local = math::from_euler(p.rot, p.pos);
            world[b] = match cx.bones[b].parent.filter(|&x| x < b) {
                Some(x) => math::mul(&world[x], &local),
                None => local,
            };
            skin[b] = math::mul(&world[b], &cx.bones[b].pose_to_bone);
        }
        for (pos, links, n) in points {
            let mut p = [0.0f32; 3];
            for &(bone, w) in &links[..*n] {
                if let Some(s) = skin.get(bone as usize) {
                    p = math::add(p, math::scale(math::apply(s, *pos), w));
                }
            }
            bx.add(p);
        }
        for s in cx.hitbox_sets.iter().take(1) {
            for h in &s.boxes {
                let hb = Aabb {
                    min: h.min,
                    max: h.max,
                };
                if let Some(w) = world.get(h.bone) {
                    for c in hb.corners() {
                        bx.add(math::apply(w, c));
                    }
                }
            }
        }
    }
}

/// §2.5: the options and commands of animation `i`, in the order Valve's 2006 compiler applies
/// them (`processAnimations`): pinned motion axes, `fudgeloop`, the commands in QC order, linear
/// motion extraction, `startloop`, then the loop rule.
#[allow(clippy::too_many_arguments)]
fn process(
    model: &Model,
    a: &Anim,
    i: usize,
    anims: &mut [PAnim],
    cx: &Context,
    root: usize,
    diags: &mut Vec<Diagnostic>,
    ignored: &mut Vec<Ignored>,
) {
    let nb = cx.bones.len();
    if nb == 0 || i >= anims.len() {
        return;
    }
    let roots: Vec<usize> = (0..nb).filter(|&b| cx.bones[b].parent.is_none()).collect();
    let mut motion = 0i32;
    for m in &a.motion {
        motion |= motion_bit(&m.value).unwrap_or(0);
    }
    // X, Y, Z, XR, YR, ZR: the roots keep their frame-0 value
    if motion & 0x3f != 0 {
        let pa = &mut anims[i];
        let first: Vec<LocalPose> = pa.frames[..nb].to_vec();
        for frame in pa.frames.chunks_mut(nb) {
            for &r in &roots {
                let cur = &mut frame[r];
                for k in 0..3 {
                    if motion & (1 << k) != 0 {
                        cur.pos[k] = first[r].pos[k];
                    }
                    if motion & (8 << k) != 0 {
                        cur.rot[k] = first[r].rot[k];
                    }
                }
            }
        }
    }
    // `fudgeloop`: a synthesised last frame one step further, with frame 0's rotations
    if a.flags.iter().any(|f| f.value == "fudgeloop") {
        let pa = &mut anims[i];
        let n = pa.num_frames;
        if n > 1 {
            let step = 1.0 / (n - 1) as f32;
            let extra: Vec<LocalPose> = (0..nb)
                .map(|b| {
                    let last = pa.frames[(n - 1) * nb + b];
                    let first = pa.frames[b];
                    LocalPose {
                        pos: math::add(last.pos, math::scale(math::sub(last.pos, first.pos), step)),
                        rot: first.rot,
                    }
                })
                .collect();
            pa.frames.extend(extra);
            pa.num_frames += 1;
        }
    }
    let mut startframe = 0usize;
    let mut warned: Vec<String> = Vec::new();
    for c in &a.commands {
        let kw = c.keyword.value.to_ascii_lowercase();
        let num = |k: usize| -> Option<f32> {
            c.args
                .get(k)
                .and_then(|v| v.value.trim().parse::<f32>().ok())
        };
        match kw.as_str() {
            "subtract" | "presubtract" => {
                let post = kw == "subtract";
                let (Some(name), Some(_)) = (c.args.first(), c.args.get(1)) else {
                    continue;
                };
                let Some(r) = find_anim(model, &name.value, anims.len()) else {
                    diags.push(unknown_anim(model, name));
                    continue;
                };
                let k = num(1).unwrap_or(0.0);
                let ref_frames = anims[r].num_frames;
                if k < 0.0 || k as usize >= ref_frames {
                    if let Some(t) = c.args.get(1) {
                        diags.push(
                            Diagnostic::new(
                                Code::SourceEventFrame,
                                format!(
                                    "`{kw}` takes frame {} of `{}`, which has frames 0 to {}",
                                    t.value,
                                    name.value,
                                    ref_frames.saturating_sub(1)
                                ),
                                t.span.span(),
                                "this frame",
                            )
                            .with_note("frames count from the first frame the animation uses"),
                        );
                    }
                    continue;
                }
                let reference = frame_of(&anims[r], k as usize, nb);
                let pa = &mut anims[i];
                for frame in pa.frames.chunks_mut(nb) {
                    for ((cur, rf), w) in frame.iter_mut().zip(&reference).zip(&pa.weights) {
                        if *w <= 0.0 {
                            continue;
                        }
                        let (r, c) = (math::euler_quat(rf.rot), math::euler_quat(cur.rot));
                        if post {
                            // the frame in the reference's space: ref⁻¹ ⊗ cur, cur − ref
                            cur.rot = quat::euler(quat::sm(-1.0, r, c));
                            cur.pos = math::sub(cur.pos, rf.pos);
                        } else {
                            // `presubtract`: cur ⊗ ref⁻¹ and ref − cur, as Valve's 2006
                            // compiler computes them
                            cur.rot = quat::euler(quat::ma(c, -1.0, r));
                            cur.pos = math::sub(rf.pos, cur.pos);
                        }
                    }
                }
                pa.flags |= DELTA;
            }
            "weightlist" => {
                let Some(name) = c.args.first() else { continue };
                match weight_list(model, &name.value, cx) {
                    Some((w, p)) => {
                        let pa = &mut anims[i];
                        pa.pos_weights = w
                            .iter()
                            .zip(&p)
                            .map(|(w, p)| if *w > 0.0 { p / w } else { 0.0 })
                            .collect();
                        pa.weights = w;
                    }
                    None => diags.push(unknown_name(
                        "weight list",
                        &name.value,
                        name.span.span(),
                        model.weight_lists.iter().map(|x| x.name.value.as_str()),
                    )),
                }
            }
            "alignto" | "align" | "alignboneto" => {
                // (reference, motion flags, reference frame, own frame, bone)
                let parsed = match kw.as_str() {
                    "alignto" => c.args.first().map(|r| (r, 0x3, 0usize, 0usize, None)),
                    "alignboneto" => match (c.args.first(), c.args.get(1)) {
                        (Some(b), Some(r)) => Some((r, 0x3, 0, 0, Some(b))),
                        _ => None,
                    },
                    // `align ref <flags…> refframe frame`
                    _ => c.args.first().map(|r| {
                        let words: Vec<i32> = c.args[1..]
                            .iter()
                            .map_while(|w| motion_bit(&w.value))
                            .collect();
                        let flags = words.iter().fold(0, |a, b| a | b);
                        let f = |k: usize| num(k).map_or(0, |v| v.max(0.0) as usize);
                        (r, flags, f(1 + words.len()), f(2 + words.len()), None)
                    }),
                };
                let Some((reference, flags, src_frame, dest_frame, bone)) = parsed else {
                    continue;
                };
                let Some(r) = find_anim(model, &reference.value, anims.len()) else {
                    diags.push(unknown_anim(model, reference));
                    continue;
                };
                let bone = match bone {
                    None => root,
                    Some(b) => match bone_named(cx, b, diags) {
                        Some(x) => x,
                        None => continue,
                    },
                };
                let src = world_of(&frame_of(&anims[r], src_frame, nb), cx.bones);
                let dst = world_of(&frame_of(&anims[i], dest_frame, nb), cx.bones);
                align_to(&mut anims[i], nb, &roots, flags, &src[bone], &dst[bone]);
            }
            "matchblend" => {
                let Some(reference) = c.args.first() else {
                    continue;
                };
                let Some(r) = find_anim(model, &reference.value, anims.len()) else {
                    diags.push(unknown_anim(model, reference));
                    continue;
                };
                // frames as `atoi` reads them
                let (Some(sf), Some(df), Some(pre), Some(post)) = (num(1), num(2), num(3), num(4))
                else {
                    continue;
                };
                let src_frames = anims[r].num_frames.max(1);
                let sf = (sf as i64).clamp(0, src_frames as i64 - 1) as usize;
                let src = frame_of(&anims[r], sf, nb);
                match_blend(
                    &mut anims[i],
                    &src,
                    nb,
                    &roots,
                    motion,
                    df as i64,
                    pre as i64,
                    post as i64,
                );
            }
            "counterrotate" | "counterrotateto" => {
                // `counterrotate bone`, `counterrotateto pitch yaw roll bone`
                let to = kw == "counterrotateto";
                let Some(b) = c.args.get(if to { 3 } else { 0 }) else {
                    continue;
                };
                // Valve's compiler stops too ("unable to find bone … to counterrotate")
                let Some(bone) = bone_named(cx, b, diags) else {
                    continue;
                };
                let target = if to {
                    let (Some(p), Some(y), Some(r)) = (num(0), num(1), num(2)) else {
                        continue;
                    };
                    let rad = |d: f32| f64::from(d).to_radians() as f32;
                    math::from_euler([rad(r), rad(p), rad(y)], [0.0; 3])
                } else {
                    // the bone's rest frame in the model, with the animation's own turn
                    math::mul(
                        &math::from_euler(a.rotation, [0.0; 3]),
                        &cx.bones[bone].world,
                    )
                };
                counter_rotate(&mut anims[i], nb, bone, &target, cx.bones);
            }
            "fixuploop" => {
                let (Some(s), Some(e)) = (num(0), num(1)) else {
                    continue;
                };
                fixup_loop(&mut anims[i], nb, &roots, motion, s as i64, e as i64);
            }
            "rotateto" => {
                let Some(deg) = num(0) else { continue };
                rotate_to(&mut anims[i], nb, &roots, root, deg);
            }
            "worldspaceblend" | "worldspaceblendloop" => {
                let Some(name) = c.args.first() else { continue };
                let Some(r) = find_anim(model, &name.value, anims.len()) else {
                    diags.push(unknown_anim(model, name));
                    continue;
                };
                let start = if kw == "worldspaceblendloop" {
                    Some(num(1).map_or(0, |v| v as i32))
                } else {
                    None
                };
                let src = {
                    let s = &anims[r];
                    PAnim {
                        name: s.name.clone(),
                        fps: s.fps,
                        flags: s.flags,
                        num_frames: s.num_frames,
                        frames: s.frames.clone(),
                        weights: s.weights.clone(),
                        pos_weights: s.pos_weights.clone(),
                        movements: Vec::new(),
                        encoded: Encoded::default(),
                        ikrules: Vec::new(),
                    }
                };
                let base: Vec<LocalPose> = frame_of(&anims[0], 0, nb);
                if let Err(msg) = worldspace_blend(&mut anims[i], &src, &base, start, cx) {
                    diags.push(
                        Diagnostic::new(
                            Code::SourceEventFrame,
                            format!("`{kw}` of animation `{}`: {msg}", a.name.value),
                            c.keyword.span.span(),
                            "this command",
                        )
                        .with_note("Valve's compiler cannot do it either (it stops, or reads past the animation)"),
                    );
                }
            }
            "match" => {
                // `processMatch` (rotations only, as the command passes no flags): every
                // frame turned by the difference between the reference's frame 0 and its own
                let Some(name) = c.args.first() else { continue };
                let Some(r) = find_anim(model, &name.value, anims.len()) else {
                    diags.push(unknown_anim(model, name));
                    continue;
                };
                let reference = frame_of(&anims[r], 0, nb);
                let pa = &mut anims[i];
                let own: Vec<LocalPose> = pa.frames[..nb.min(pa.frames.len())].to_vec();
                let delta: Vec<[f32; 4]> = own
                    .iter()
                    .zip(&reference)
                    .map(|(d, s)| quat::sm(-1.0, math::euler_quat(d.rot), math::euler_quat(s.rot)))
                    .collect();
                for frame in pa.frames.chunks_mut(nb) {
                    for ((cur, w), dq) in frame.iter_mut().zip(&pa.weights).zip(&delta) {
                        if *w > 0.0 {
                            cur.rot = quat::euler(quat::ma(math::euler_quat(cur.rot), 1.0, *dq));
                        }
                    }
                }
            }
            "lineardelta" | "splinedelta" => {
                // `linearDelta` with STUDIO_AL_POST: each frame in the space of the straight
                // (or eased) way from frame 0 to the last frame
                let pa = &mut anims[i];
                let n = pa.num_frames;
                let first = frame_of(pa, 0, nb);
                let last = frame_of(pa, n.saturating_sub(1), nb);
                for (j, frame) in pa.frames.chunks_mut(nb).enumerate() {
                    let mut s = if n > 1 {
                        j as f32 / (n - 1) as f32
                    } else {
                        1.0
                    };
                    if kw == "splinedelta" {
                        s = 3.0 * s * s - 2.0 * s * s * s;
                    }
                    for (k, (cur, w)) in frame.iter_mut().zip(&pa.weights).enumerate() {
                        if *w <= 0.0 {
                            continue;
                        }
                        let (a, b) = (first[k], last[k]);
                        let pos = math::add(math::scale(a.pos, 1.0 - s), math::scale(b.pos, s));
                        let rot = slerp(math::euler_quat(a.rot), math::euler_quat(b.rot), s);
                        cur.rot = quat::euler(quat::sm(-1.0, rot, math::euler_quat(cur.rot)));
                        cur.pos = math::sub(cur.pos, pos);
                    }
                }
                pa.flags |= DELTA;
            }
            "derivative" => {
                // `createDerivative`: each frame less the one before it (frame 0 less the
                // last, or the one before the last of a looping animation), scaled
                let scale = num(0).unwrap_or(1.0);
                let pa = &mut anims[i];
                let n = pa.num_frames;
                if n == 0 {
                    continue;
                }
                let wrap = if pa.flags & LOOPING != 0 {
                    n.saturating_sub(2)
                } else {
                    n - 1
                };
                let orig = frame_of(pa, wrap, nb);
                for j in (0..n).rev() {
                    let before = if j >= 1 {
                        frame_of(pa, j - 1, nb)
                    } else {
                        orig.clone()
                    };
                    let Some(frame) = pa.frames.get_mut(j * nb..(j + 1) * nb) else {
                        continue;
                    };
                    for (k, (cur, w)) in frame.iter_mut().zip(&pa.weights).enumerate() {
                        if *w <= 0.0 {
                            continue;
                        }
                        let p = before[k];
                        let q = quat::sm(-1.0, math::euler_quat(p.rot), math::euler_quat(cur.rot));
                        cur.rot = quat::euler(quat::scale(q, scale));
                        cur.pos = math::scale(math::sub(cur.pos, p.pos), scale);
                    }
                }
            }
            "noanimation" => {
                let pa = &mut anims[i];
                pa.frames = vec![LocalPose::default(); nb];
                pa.num_frames = 1;
                pa.flags |= DELTA | ALLZEROS;
                pa.weights = vec![0.0; nb];
                pa.pos_weights = vec![0.0; nb];
            }
            "compress" => {
                let n = num(0).map_or(1, |v| v.max(1.0) as usize);
                if n > 1 {
                    let pa = &mut anims[i];
                    let kept: Vec<usize> = (0..pa.num_frames).step_by(n).collect();
                    let mut fr = Vec::with_capacity(kept.len() * nb);
                    for &f in &kept {
                        fr.extend_from_slice(&pa.frames[f * nb..(f + 1) * nb]);
                    }
                    pa.frames = fr;
                    pa.num_frames = kept.len();
                    pa.fps /= n as f32;
                }
            }
            "numframes" => {
                // pad with the last frame, or cut
                let n = num(0).map_or(0, |v| v.max(1.0) as usize);
                let pa = &mut anims[i];
                if n > 0 {
                    let last = frame_of(pa, pa.num_frames.saturating_sub(1), nb);
                    pa.frames.truncate(n.min(pa.num_frames) * nb);
                    while pa.frames.len() < n * nb {
                        pa.frames.extend_from_slice(&last);
                    }
                    pa.num_frames = n;
                }
            }
            // IK rules are worked out once every animation is processed (`ikrule::build`)
            "ikrule" => {}
            "ikfixup" => {
                // a delta is applied to frame 0 of the first animation (`CalcBoneTransforms`)
                let base: Vec<LocalPose> = anims
                    .first()
                    .map(|b| frame_of(b, 0, nb))
                    .unwrap_or_default();
                super::ikrule::fixup(&mut anims[i], &base, c, cx, diags);
            }
            "walkframe" => {
                // motion extracted up to this frame, as its own piece
                let Some(end) = num(0) else { continue };
                let m = c.args[1..]
                    .iter()
                    .filter_map(|w| motion_bit(&w.value))
                    .fold(0, |a, b| a | b);
                let pa = &mut anims[i];
                let end = (end.max(0.0) as usize).min(pa.num_frames.saturating_sub(1));
                if let Some(mv) =
                    extract_motion(pa, nb, &roots, root, m, startframe, end, end, None)
                {
                    pa.movements.push(mv);
                    startframe = end;
                }
            }
            "walkalign" | "walkalignto" => {
                // `walkalign end ref motion… refframe srcframe`, `walkalignto end ref motion…`
                // (2006 SDK `CMD_REFMOTION`): the motion up to `end`, measured from a frame of
                // another animation
                let (Some(end), Some(reference)) = (num(0), c.args.get(1)) else {
                    continue;
                };
                let words: Vec<i32> = c.args[2..]
                    .iter()
                    .map_while(|w| motion_bit(&w.value))
                    .collect();
                let m = words.iter().fold(0, |a, b| a | b);
                let (ref_frame, src) = if kw == "walkalign" {
                    (num(2 + words.len()), num(3 + words.len()))
                } else {
                    (Some(0.0), Some(end))
                };
                let (Some(ref_frame), Some(src)) = (ref_frame, src) else {
                    continue;
                };
                let Some(r) = find_anim(model, &reference.value, anims.len()) else {
                    diags.push(unknown_anim(model, reference));
                    continue;
                };
                let rn = anims[r].num_frames.max(1);
                let rf = (ref_frame.max(0.0) as usize).min(rn - 1);
                let ref_pose = frame_of(&anims[r], rf, nb).get(root).copied();
                let pa = &mut anims[i];
                let end = (end.max(0.0) as usize).min(pa.num_frames.saturating_sub(1));
                let src = src.max(0.0) as usize;
                if let Some(mv) =
                    extract_motion(pa, nb, &roots, root, m, startframe, end, src, ref_pose)
                {
                    pa.movements.push(mv);
                    startframe = end;
                }
            }
            _ => {
                if !warned.contains(&kw) {
                    warned.push(kw.clone());
                    ignored.push(Ignored {
                        what: format!("`{kw}`"),
                        span: c.keyword.span.span(),
                        owner: format!("animation `{}`", a.name.value),
                    });
                }
            }
        }
    }
    let pa = &mut anims[i];
    // motion extraction over what the commands left (LX, LY, LZ, LXR, LYR, LZR)
    if motion & 0xfc0 != 0 {
        let end = pa.num_frames.saturating_sub(1);
        if pa.num_frames <= 1 {
            ignored.push(Ignored {
                what: "motion extraction on a one-frame animation".into(),
                span: a.span,
                owner: format!("animation `{}`", a.name.value),
            });
        } else if let Some(mv) =
            extract_motion(pa, nb, &roots, root, motion, startframe, end, end, None)
        {
            pa.movements.push(mv);
        }
    }
    // `startloop n`: the loop starts at frame n
    if let Some(s) = a.start_loop.filter(|&s| s > 0) {
        let s = s as usize;
        let n = pa.num_frames;
        if n > 1 && s < n {
            let old = pa.frames.clone();
            for j in 0..n {
                let from = if j + 1 < n { (j + s) % (n - 1) } else { s };
                pa.frames[j * nb..(j + 1) * nb].copy_from_slice(&old[from * nb..(from + 1) * nb]);
            }
        } else if s >= n {
            ignored.push(Ignored {
                what: "`startloop` past the last frame".into(),
                span: a.span,
                owner: format!("animation `{}`", a.name.value),
            });
        }
    }
    // `loop`: the last frame is frame 0, except along the extracted axes (§2.5)
    if pa.flags & LOOPING != 0 && pa.num_frames > 1 {
        let n = pa.num_frames;
        let first: Vec<LocalPose> = pa.frames[..nb].to_vec();
        for (last, first) in pa.frames[(n - 1) * nb..n * nb].iter_mut().zip(&first) {
            for k in 0..3 {
                if motion & (0x40 << k) == 0 {
                    last.pos[k] = first.pos[k];
                }
                if motion & (0x200 << k) == 0 {
                    last.rot[k] = first.rot[k];
                }
            }
        }
    }
}

/// `worldspaceblend ref` and `worldspaceblendloop ref start` (2006 SDK `worldspaceBlend`): each
/// bone's model-space rotation turned towards `src`'s by the bone's weight, its length (local
/// position) towards `src`'s by its position weight, then taken back into its parent's space.
/// Without `start`, `src`'s frame 0 throughout; with it, `src` read along as a loop from frame
/// `start`, frames interpolated (`CalcBoneTransformsCycle`). `base` is frame 0 of the model's
/// first animation, for delta animations.
fn worldspace_blend(
    dest: &mut PAnim,
    src: &PAnim,
    base: &[LocalPose],
    start: Option<i32>,
    cx: &Context,
) -> Result<(), String> {
    let nb = cx.bones.len();
    let src_delta = (src.flags & DELTA != 0).then_some((&src.weights[..], base));
    let dest_delta = (dest.flags & DELTA != 0).then_some((&dest.weights[..], base));
    let local_pos = |world: &[M34], k: usize| -> [f32; 3] {
        let m = match cx.bones[k].parent {
            Some(p) => math::mul(&math::invert(&world[p]), &world[k]),
            None => world[k],
        };
        [m[0][3], m[1][3], m[2][3]]
    };
    let src_pose =
        |world: &[M34]| -> Vec<[f32; 4]> { world.iter().map(math::matrix_quat).collect() };
    let (mut src_q, mut src_pos) = (Vec::new(), Vec::new());
    if start.is_none() {
        let f = src.frames.get(..nb).ok_or("the reference has no frame")?;
        let w = super::ikrule::pose_world(f, src_delta, cx);
        src_q = src_pose(&w);
        src_pos = f.iter().map(|p| p.pos).collect();
    } else if src.num_frames < 2 {
        return Err(format!(
            "the reference `{}` has {} frame; a loop needs two or more",
            src.name, src.num_frames
        ));
    }
    let n = dest.num_frames;
    for j in 0..n {
        if let Some(s) = start {
            // the reference read as a loop, interpolated between its frames
            let span = (src.num_frames - 1) as f32;
            let cycle = j as f32 / (n.max(2) - 1) as f32 + s as f32 / span;
            let at = cycle * span;
            // (a negative start is read from frame 0)
            let whole = at.floor().max(0.0);
            let t = (at - whole).clamp(0.0, 1.0);
            let m = src.num_frames - 1;
            let (f1, f2) = (whole as usize % m, (whole as usize + 1) % m);
            let poses: Vec<LocalPose> = (0..nb)
                .map(|k| {
                    let at = |f: usize| src.frames.get(f * nb + k).copied().unwrap_or_default();
                    let (a, b) = (at(f1), at(f2));
                    let q = slerp(math::euler_quat(a.rot), math::euler_quat(b.rot), t);
                    LocalPose {
                        pos: math::add(math::scale(a.pos, 1.0 - t), math::scale(b.pos, t)),
                        rot: quat::euler(q),
                    }
                })
                .collect();
            let w = super::ikrule::pose_world(&poses, None, cx);
            src_q = src_pose(&w);
            src_pos = (0..nb).map(|k| local_pos(&w, k)).collect();
        }
        let Some(frame) = dest.frames.get_mut(j * nb..(j + 1) * nb) else {
            break;
        };
        let mut world = super::ikrule::pose_world(frame, dest_delta, cx);
        for k in 0..nb {
            let w = dest.weights.get(k).copied().unwrap_or(0.0);
            if w > 0.0 {
                let here = [world[k][0][3], world[k][1][3], world[k][2][3]];
                let q = slerp(math::matrix_quat(&world[k]), src_q[k], w);
                world[k] = math::quat_matrix(q, here);
            }
            match cx.bones[k].parent {
                None => frame[k].rot = decompose(&world[k]).rot,
                Some(p) => {
                    let local = math::mul(&math::invert(&world[p]), &world[k]);
                    frame[k].rot = decompose(&local).rot;
                    // position weight: the weight list's own (ours are kept as a share of it)
                    let pw = w * dest.pos_weights.get(k).copied().unwrap_or(1.0);
                    frame[k].pos = math::add(
                        frame[k].pos,
                        math::scale(math::sub(src_pos[k], frame[k].pos), pw),
                    );
                }
            }
        }
    }
    Ok(())
}

/// `$lockbonelengths` (2006 SDK `LockBoneLengths`): in every frame of every animation that is
/// not a delta, each bone but the roots is put back at its rest offset from its parent; then
/// each IK chain the animation moves is solved so its end is where it was, and the chain's
/// bones are written back from the solve.
fn lock_bone_lengths(anims: &mut [PAnim], cx: &Context) {
    let nb = cx.bones.len();
    for a in anims.iter_mut().filter(|a| a.flags & DELTA == 0) {
        for f in 0..a.num_frames {
            let Some(frame) = a.frames.get_mut(f * nb..(f + 1) * nb) else {
                break;
            };
            let before = world_of(frame, cx.bones);
            for (p, b) in frame.iter_mut().zip(cx.bones) {
                if b.parent.is_some() {
                    p.pos = b.pos;
                }
            }
            let mut world = world_of(frame, cx.bones);
            for ch in cx.ik_chains {
                let [Ok(t), Ok(k), Ok(e)] = ch.bones.map(usize::try_from) else {
                    continue;
                };
                if a.weights.get(e).is_none_or(|&w| w <= 0.0) || e >= before.len() {
                    continue;
                }
                let target = [before[e][0][3], before[e][1][3], before[e][2][3]];
                super::iksolve::solve_ik(t, k, e, target, &mut world);
                // `solveBone`: each link's local pose from the solved matrices
                for b in [t, k, e] {
                    let local = match cx.bones[b].parent {
                        Some(p) => math::mul(&math::invert(&world[p]), &world[b]),
                        None => world[b],
                    };
                    frame[b] = decompose(&local);
                }
            }
        }
    }
}

/// The middle of the rotations bone `k` sweeps in animation `a` (2006 SDK
/// `findAnimQuaternionAlignment`): the two rotations farthest from a running middle on either
/// side, the middle re-taken halfway between them after every frame.
fn rotation_middle(a: &PAnim, k: usize, nb: usize) -> [f32; 4] {
    let dot = |p: [f32; 4], q: [f32; 4]| p[0] * q[0] + p[1] * q[1] + p[2] * q[2] + p[3] * q[3];
    let at = |j: usize| math::euler_quat(a.frames.get(j * nb + k).copied().unwrap_or_default().rot);
    let mut base = at(0);
    let (mut q_min, mut q_max) = (base, base);
    let (mut d_min, mut d_max) = (1.0f32, 1.0f32);
    for j in 1..a.num_frames {
        let q = math::quat_align(base, at(j));
        let d0 = dot(q, base);
        if dot(q, q_min) >= d0 {
            if d0 < d_min {
                q_min = q;
                // (the SDK also stores d0 as the new distances; both are re-taken below)
                if d_max == 1.0 {
                    q_max = math::quat_align(base, quat::ma(base, -0.01, q_min));
                }
            }
        } else if dot(q, q_max) >= d0 && d0 < d_max {
            q_max = q;
        }
        base = slerp_no_align(q_min, q_max, 0.5);
        d_min = dot(base, q_min);
        d_max = dot(base, q_max);
    }
    base
}

/// `QuaternionSlerp`: `q` aligned to `p`, then [`slerp_no_align`].
pub(super) fn slerp(p: [f32; 4], q: [f32; 4], t: f32) -> [f32; 4] {
    slerp_no_align(p, math::quat_align(p, q), t)
}

/// `QuaternionSlerpNoAlign` (source-sdk-2013 `mathlib`), its opposite-quaternion case included.
pub(super) fn slerp_no_align(p: [f32; 4], q: [f32; 4], t: f32) -> [f32; 4] {
    let cosom = p[0] * q[0] + p[1] * q[1] + p[2] * q[2] + p[3] * q[3];
    if 1.0 + cosom > 0.000_001 {
        let (sp, sq) = if 1.0 - cosom > 0.000_001 {
            let omega = cosom.acos();
            let s = omega.sin();
            (((1.0 - t) * omega).sin() / s, (t * omega).sin() / s)
        } else {
            (1.0 - t, t)
        };
        [0, 1, 2, 3].map(|i| sp * p[i] + sq * q[i])
    } else {
        let r = [-q[1], q[0], -q[3], q[2]];
        let sp = ((1.0 - t) * std::f32::consts::FRAC_PI_2).sin();
        let sq = (t * std::f32::consts::FRAC_PI_2).sin();
        [
            sp * p[0] + sq * r[0],
            sp * p[1] + sq * r[1],
            sp * p[2] + sq * r[2],
            r[3],
        ]
    }
}

/// `QuaternionNormalize`: a zero quaternion stays as it is.
fn normalise_or_keep(q: [f32; 4]) -> [f32; 4] {
    let l = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    if l > 0.0 {
        q.map(|c| c / l)
    } else {
        q
    }
}

/// Frame `k` (clamped) of an animation, one pose per bone.
fn frame_of(a: &PAnim, k: usize, nb: usize) -> Vec<LocalPose> {
    let k = k.min(a.num_frames.saturating_sub(1));
    a.frames
        .get(k * nb..(k + 1) * nb)
        .map(<[LocalPose]>::to_vec)
        .unwrap_or_else(|| vec![LocalPose::default(); nb])
}

/// An animation by name, or a sequence standing for its first animation.
fn find_anim(model: &Model, name: &str, count: usize) -> Option<usize> {
    model
        .animations
        .iter()
        .position(|x| x.name.value.eq_ignore_ascii_case(name))
        .or_else(|| {
            model
                .sequences
                .iter()
                .find(|x| x.name.value.eq_ignore_ascii_case(name))
                .and_then(|x| x.animations.first())
                .map(|x| x.index())
        })
        .filter(|&r| r < count)
}

fn unknown_anim(model: &Model, name: &crate::diag::Spanned<String>) -> Diagnostic {
    unknown_name(
        "animation",
        &name.value,
        name.span.span(),
        model
            .animations
            .iter()
            .map(|x| x.name.value.as_str())
            .filter(|n| !n.starts_with('@'))
            .chain(model.sequences.iter().map(|x| x.name.value.as_str())),
    )
}

/// Pre-multiplies every root of every frame by `m`.
fn transform_roots(pa: &mut PAnim, nb: usize, roots: &[usize], m: &M34) {
    for frame in pa.frames.chunks_mut(nb) {
        for &r in roots {
            let p = frame[r];
            frame[r] = decompose(&math::mul(m, &math::from_euler(p.rot, p.pos)));
        }
    }
}

/// Model-space matrices of every bone of one frame.
fn world_of(frame: &[LocalPose], bones: &[PBone]) -> Vec<M34> {
    let mut w: Vec<M34> = Vec::with_capacity(frame.len());
    for (b, p) in frame.iter().enumerate() {
        let local = math::from_euler(p.rot, p.pos);
        let m = match bones.get(b).and_then(|x| x.parent).filter(|&x| x < b) {
            Some(x) => math::mul(&w[x], &local),
            None => local,
        };
        w.push(m);
    }
    w
}

/// The plan bone a command names (any case), or `E0620` naming the nearest one.
fn bone_named(
    cx: &Context,
    b: &crate::diag::Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> Option<usize> {
    let found = cx
        .bones
        .iter()
        .position(|x| x.name.eq_ignore_ascii_case(&b.value));
    if found.is_none() {
        diags.push(unknown_name(
            "bone",
            &b.value,
            b.span.span(),
            cx.bones.iter().map(|x| x.name.as_str()),
        ));
    }
    found
}

/// `counterrotate(to)` (2006 SDK `counterRotateBone`): in every frame the bone keeps its place
/// and takes the rotation of `target` in the model; only its own local pose changes
/// (`solveBone`), so its children turn with it.
fn counter_rotate(pa: &mut PAnim, nb: usize, bone: usize, target: &M34, bones: &[PBone]) {
    for f in 0..pa.num_frames {
        let Some(frame) = pa.frames.get_mut(f * nb..(f + 1) * nb) else {
            return;
        };
        let world = world_of(frame, bones);
        let mut want = *target;
        for (r, row) in want.iter_mut().enumerate() {
            row[3] = world[bone][r][3];
        }
        let local = match bones.get(bone).and_then(|b| b.parent).filter(|&p| p < bone) {
            Some(p) => math::mul(&math::invert(&world[p]), &want),
            None => want,
        };
        frame[bone] = decompose(&local);
    }
}

/// `alignto`, `align`, `alignboneto` (`processAutoorigin` of Valve's 2006 compiler): moves
/// (and, with rotation flags, turns) every root so that the bone's pose in this animation's
/// frame matches its pose in the reference's frame, along the flagged axes.
fn align_to(pa: &mut PAnim, nb: usize, roots: &[usize], flags: i32, src: &M34, dst: &M34) {
    let q0 = quat::of_matrix(src);
    let q2 = quat::of_matrix(dst);
    let mut rot = [0.0f32; 3];
    if flags & 0xe38 != 0 {
        let d2 = quat::ma(q2, -1.0, q0);
        if flags & 0x208 != 0 {
            rot[0] = quat::euler(quat::normalise([d2[0], 0.0, 0.0, d2[3]]))[0];
        }
        if flags & 0x410 != 0 {
            rot[1] = quat::euler(quat::normalise([0.0, d2[1], 0.0, d2[3]]))[1];
        }
        if flags & 0x820 != 0 {
            rot[2] = quat::euler(quat::normalise([0.0, 0.0, d2[2], d2[3]]))[2];
        }
        if flags & 0x38 == 0x38 {
            rot = quat::euler(d2);
        }
    }
    let src_pos = [src[0][3], src[1][3], src[2][3]];
    let dst_pos = [dst[0][3], dst[1][3], dst[2][3]];
    let back = math::invert(&math::from_euler(rot, [0.0; 3]));
    let mut adj = math::sub(src_pos, math::rotate(&back, dst_pos));
    for (k, a) in adj.iter_mut().enumerate() {
        if flags & ((1 << k) | (0x40 << k)) == 0 {
            *a = 0.0;
        }
    }
    // the roots are turned back by the measured rotation and moved by the offset
    let mut m = back;
    for (k, a) in adj.iter().enumerate() {
        m[k][3] = *a;
    }
    transform_roots(pa, nb, roots, &m);
}

/// `rotateto deg`: turns the roots about Z so the motion (its movement so far, or the root's
/// travel from the first to the last frame) points at `deg` degrees.
fn rotate_to(pa: &mut PAnim, nb: usize, roots: &[usize], root: usize, deg: f32) {
    let travel = match pa.movements.last() {
        Some(m) => m.position,
        None => {
            let n = pa.num_frames;
            let a = pa.frames.get(root).map_or([0.0; 3], |p| p.pos);
            let b = pa
                .frames
                .get((n - 1) * nb + root)
                .map_or([0.0; 3], |p| p.pos);
            math::sub(b, a)
        }
    };
    let mut da = 0.0f32;
    if travel[0] != 0.0 || travel[1] != 0.0 {
        da = deg - travel[1].atan2(travel[0]).to_degrees();
    }
    let rz = math::from_euler([0.0, 0.0, da.to_radians()], [0.0; 3]);
    for mv in &mut pa.movements {
        mv.position = math::rotate(&rz, mv.position);
        mv.vector = math::rotate(&rz, mv.vector);
    }
    transform_roots(pa, nb, roots, &rz);
}

/// `fixuploop start end`: spreads the difference between the last and the first frame over the
/// frames around the loop point, with a smooth step (`fixupLoopingDiscontinuities`).
fn fixup_loop(pa: &mut PAnim, nb: usize, roots: &[usize], motion: i32, start: i64, end: i64) {
    let m = pa.num_frames as i64 - 1;
    if m <= 0 {
        return;
    }
    let (mut start, mut end) = (start, end);
    let last = m as usize * nb;
    let (dpos, dq) = frame_deltas(&pa.frames[last..last + nb], &pa.frames[..nb], roots, motion);
    if end - start > pa.num_frames as i64 {
        end = pa.num_frames as i64 + start;
        if end < 0 {
            end = 0;
            start = -m;
        }
    }
    let nf = (end - start) as f32;
    if nf <= 0.0 {
        return;
    }
    for j in (start + 1)..=0 {
        add_deltas(pa, nb, m + j, -smooth((j - start) as f32 / nf), &dpos, &dq);
    }
    for j in 0..end {
        add_deltas(pa, nb, j, smooth((end - j) as f32 / nf), &dpos, &dq);
    }
}

/// Per bone, pose `a` less pose `b` (position difference, `QuaternionMA(a, −1, b)`), with the
/// roots' extracted axes (`LX`, `LY`, `LZ` of `motion`) left at 0 (Valve's "skip fixup for
/// motion that'll be matched with linear extraction").
fn frame_deltas(
    a: &[LocalPose],
    b: &[LocalPose],
    roots: &[usize],
    motion: i32,
) -> (Vec<[f32; 3]>, Vec<[f32; 4]>) {
    let mut dpos: Vec<[f32; 3]> = Vec::with_capacity(a.len());
    let mut dq: Vec<[f32; 4]> = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b) {
        dpos.push(math::sub(x.pos, y.pos));
        dq.push(quat::ma(
            math::euler_quat(x.rot),
            -1.0,
            math::euler_quat(y.rot),
        ));
    }
    for &r in roots {
        if let Some(d) = dpos.get_mut(r) {
            for (k, v) in d.iter_mut().enumerate() {
                if motion & (0x40 << k) != 0 {
                    *v = 0.0;
                }
            }
        }
    }
    (dpos, dq)
}

/// `SimpleSpline`: 3s² − 2s³.
fn smooth(s: f32) -> f32 {
    3.0 * s * s - 2.0 * s * s * s
}

/// The 2006 SDK's `addDeltas`: `s` of each weighted bone's delta added to frame `frame`
/// (ignored outside the animation).
fn add_deltas(pa: &mut PAnim, nb: usize, frame: i64, s: f32, dpos: &[[f32; 3]], dq: &[[f32; 4]]) {
    if frame < 0 || frame >= pa.num_frames as i64 {
        return;
    }
    let base = frame as usize * nb;
    for b in 0..nb {
        if pa.weights.get(b).is_none_or(|&w| w <= 0.0) {
            continue;
        }
        let (Some(p), Some(d), Some(q)) = (pa.frames.get_mut(base + b), dpos.get(b), dq.get(b))
        else {
            continue;
        };
        p.rot = quat::euler(quat::sm(s, *q, math::euler_quat(p.rot)));
        p.pos = math::add(p.pos, math::scale(*d, s));
    }
}

/// `matchblend ref srcframe destframe pre post` (2006 SDK `matchBlend`): the difference between
/// frame `src_frame` of the reference and frame `dest_frame` of this animation is added around
/// `dest_frame`, fully there and eased out (`SimpleSpline`) over `pre` frames before and `post`
/// after (wrapping round a looping animation, whose last frame then follows its first). As in
/// `fixuploop`, the extracted axes of the roots are left alone.
#[allow(clippy::too_many_arguments)]
fn match_blend(
    pa: &mut PAnim,
    src: &[LocalPose],
    nb: usize,
    roots: &[usize],
    motion: i32,
    dest_frame: i64,
    pre: i64,
    post: i64,
) {
    let n = pa.num_frames as i64;
    if n <= 1 || !(0..n).contains(&dest_frame) || src.len() < nb {
        return;
    }
    let looping = pa.flags & LOOPING != 0;
    let (pre, post) = if looping {
        (pre.max(-n), post.min(n))
    } else {
        (pre.max(-dest_frame), post.min(n - dest_frame))
    };
    let base = dest_frame as usize * nb;
    let (dpos, dq) = frame_deltas(&src[..nb], &pa.frames[base..base + nb], roots, motion);
    for j in pre..=post {
        let s = if j < 0 {
            j as f32 / (pre - 1) as f32
        } else {
            j as f32 / (post + 1) as f32
        };
        let s = smooth(1.0 - s);
        let k = dest_frame + j;
        let k = if k < 0 { k + (n - 1) } else { k % (n - 1) };
        add_deltas(pa, nb, k, s, &dpos, &dq);
        if looping && k == 0 {
            add_deltas(pa, nb, n - 1, s, &dpos, &dq);
        }
    }
}

/// Linear (and rotational) motion extraction of frames `start..=end` into one movement piece
/// (`extractLinearMotion` of Valve's 2006 compiler): the travel of the root bone `root` from
/// the reference pose to frame `src` becomes a path with a start and end speed (equal when the
/// middle frame says the motion is close to uniform), which is taken out of every root over
/// `start..=end`. The reference is this animation's frame `start` (`walkframe` and the
/// extracted motions), or a frame of another animation (`walkalign`, `walkalignto`).
#[allow(clippy::too_many_arguments)]
fn extract_motion(
    pa: &mut PAnim,
    nb: usize,
    roots: &[usize],
    root: usize,
    motion: i32,
    start: usize,
    end: usize,
    src: usize,
    reference: Option<LocalPose>,
) -> Option<PMovement> {
    let n = pa.num_frames;
    if n <= 1 || start >= end || end >= n {
        return None;
    }
    let src = src.min(n - 1);
    let at = |f: usize| pa.frames[f * nb + root];
    let reference = reference.unwrap_or_else(|| at(start));
    let mid = (start + src) as f32 / 2.0;
    let imid = mid as usize;
    let s = mid - imid as f32;
    let mut rot = [0.0f32; 3];
    if motion & 0xe00 != 0 {
        let q0 = math::euler_quat(reference.rot);
        let q1 = math::euler_quat(at(imid).rot);
        let q2 = math::euler_quat(at(src).rot);
        let d1 = quat::ma(q1, -1.0, q0);
        let d2 = quat::ma(q2, -1.0, q0);
        if motion & 0x200 != 0 {
            rot[0] = quat::euler(quat::normalise([d2[0], 0.0, 0.0, d2[3]]))[0];
        }
        if motion & 0x400 != 0 {
            rot[1] = quat::euler(quat::normalise([0.0, d2[1], 0.0, d2[3]]))[1];
        }
        if motion & 0x800 != 0 {
            use std::f32::consts::{FRAC_PI_4, PI};
            let mut a3 = quat::euler(quat::normalise([0.0, 0.0, d2[2], d2[3]]))[2];
            let mut a5 = quat::euler(quat::normalise([0.0, 0.0, d1[2], d1[3]]))[2];
            if a3 > PI {
                a5 -= 2.0 * PI;
            }
            if a3 < -PI {
                a5 += 2.0 * PI;
            }
            if a5 > PI {
                a5 -= 2.0 * PI;
            }
            if a5 < -PI {
                a5 += 2.0 * PI;
            }
            // more than half a turn: the middle frame tells the direction
            if a5 > FRAC_PI_4 && a3 < 0.0 {
                a3 += 2.0 * PI;
            }
            if a5 < -FRAC_PI_4 && a3 > 0.0 {
                a3 -= 2.0 * PI;
            }
            rot[2] = a3;
        }
    }
    let p0 = math::rotate(&math::from_euler(rot, [0.0; 3]), reference.pos);
    let pm = {
        let a = at(imid).pos;
        let b = at((imid + 1).min(n - 1)).pos;
        math::add(math::scale(a, 1.0 - s), math::scale(b, s))
    };
    let mut p2 = math::sub(at(src).pos, p0);
    let mut p1 = math::sub(pm, p0);
    for k in 0..3 {
        if motion & (0x40 << k) == 0 {
            p2[k] = 0.0;
            p1[k] = 0.0;
        }
    }
    let d1 = math::dot(p1, p1).sqrt();
    let d2 = math::dot(p2, p2).sqrt();
    let (mut v0, mut v1) = (4.0 * d1 - d2, 3.0 * d2 - 4.0 * d1);
    if motion & 0x1000 != 0 {
        (v0, v1) = (d2, d2);
    } else if v0 < 0.0 {
        (v0, v1) = (0.0, 2.0 * d2);
    } else if v1 < 0.0 {
        (v0, v1) = (2.0 * d2, 0.0);
    } else if v0 + v1 > 0.01 && (v0 - v1).abs() / (v0 + v1) < 0.2 {
        (v0, v1) = (d2, d2);
    }
    let dir = if d2 > 0.0 {
        math::scale(p2, 1.0 / d2)
    } else {
        [0.0; 3]
    };
    let span = (end - start) as f32;
    let mut adjpos = [0.0f32; 3];
    let mut adjrot = [0.0f32; 3];
    for j in 0..=(end - start) {
        let t = j as f32 / span;
        adjpos = math::scale(dir, v0 * t + 0.5 * (v1 - v0) * t * t);
        adjrot = math::scale(rot, t);
        let adj = math::invert(&math::from_euler(adjrot, adjpos));
        let frame = &mut pa.frames[(start + j) * nb..(start + j + 1) * nb];
        for &r in roots {
            let p = frame[r];
            frame[r] = decompose(&math::mul(&adj, &math::from_euler(p.rot, p.pos)));
        }
    }
    // frames after the piece keep the whole offset
    let adj = math::invert(&math::from_euler(adjrot, adjpos));
    for f in (end + 1)..n {
        let frame = &mut pa.frames[f * nb..(f + 1) * nb];
        for &r in roots {
            let p = frame[r];
            frame[r] = decompose(&math::mul(&adj, &math::from_euler(p.rot, p.pos)));
        }
    }
    // pieces accumulate: this one's end in the space of the previous ones
    let (position, angle) = match pa.movements.last() {
        Some(prev) => {
            let prev_m = math::from_euler([0.0, 0.0, prev.angle.to_radians()], prev.position);
            let m = math::mul(&prev_m, &math::from_euler(adjrot, adjpos));
            (
                [m[0][3], m[1][3], m[2][3]],
                math::to_euler(&m)[2].to_degrees(),
            )
        }
        None => (adjpos, adjrot[2].to_degrees()),
    };
    let step = match pa.movements.last() {
        Some(prev) => math::sub(position, prev.position),
        None => position,
    };
    let len = math::dot(step, step).sqrt();
    Some(PMovement {
        endframe: end as i32,
        motionflags: motion,
        v0,
        v1,
        angle,
        vector: if len > 0.0 {
            math::scale(step, 1.0 / len)
        } else {
            [0.0; 3]
        },
        position,
    })
}

/// Quaternion helpers with the engine's conventions (`source-animation.md` §1.3).
pub(super) mod quat {
    use super::math;

    pub fn normalise(q: [f32; 4]) -> [f32; 4] {
        let l = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
        if l > 0.0 {
            [q[0] / l, q[1] / l, q[2] / l, q[3] / l]
        } else {
            [0.0, 0.0, 0.0, 1.0]
        }
    }

    /// Hamilton product `p ⊗ q` after aligning `q` to `p`.
    pub fn mult(p: [f32; 4], q: [f32; 4]) -> [f32; 4] {
        let q = math::quat_align(p, q);
        [
            p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0],
            -p[0] * q[2] + p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
            p[0] * q[1] - p[1] * q[0] + p[2] * q[3] + p[3] * q[2],
            -p[0] * q[0] - p[1] * q[1] - p[2] * q[2] + p[3] * q[3],
        ]
    }

    /// The rotation about the same axis by `s` times the angle (sign of w kept).
    pub fn scale(q: [f32; 4], s: f32) -> [f32; 4] {
        let r = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]).sqrt().min(1.0);
        let sr = (r.asin() * s).sin();
        let k = if r > 0.0 { sr / r } else { 0.0 };
        let mut w = (1.0 - sr * sr).max(0.0).sqrt();
        if q[3] < 0.0 {
            w = -w;
        }
        [q[0] * k, q[1] * k, q[2] * k, w]
    }

    /// `normalise(scale(p, s) ⊗ q)`.
    pub fn sm(s: f32, p: [f32; 4], q: [f32; 4]) -> [f32; 4] {
        normalise(mult(scale(p, s), q))
    }

    /// `normalise(p ⊗ scale(q, s))`.
    pub fn ma(p: [f32; 4], s: f32, q: [f32; 4]) -> [f32; 4] {
        normalise(mult(p, scale(q, s)))
    }

    /// The rotation of a matrix as a quaternion.
    pub fn of_matrix(m: &math::M34) -> [f32; 4] {
        math::euler_quat(math::to_euler(m))
    }

    /// Euler angles of a quaternion, through its matrix (§1.2).
    pub fn euler(q: [f32; 4]) -> [f32; 3] {
        let [x, y, z, w] = q;
        let m = [
            [
                1.0 - 2.0 * (y * y + z * z),
                2.0 * (x * y - w * z),
                2.0 * (x * z + w * y),
                0.0,
            ],
            [
                2.0 * (x * y + w * z),
                1.0 - 2.0 * (x * x + z * z),
                2.0 * (y * z - w * x),
                0.0,
            ],
            [
                2.0 * (x * z - w * y),
                2.0 * (y * z + w * x),
                1.0 - 2.0 * (x * x + y * y),
                0.0,
            ],
        ];
        let e = math::to_euler(&m);
        [
            super::wrap_pi(e[0]),
            super::wrap_pi(e[1]),
            super::wrap_pi(e[2]),
        ]
    }
}

/// An option read but not applied yet.
struct Ignored {
    what: String,
    span: FileSpan,
    owner: String,
}

/// One W0620 per option, at its first use, naming how many other places use it too.
fn report_ignored(ignored: Vec<Ignored>, diags: &mut Vec<Diagnostic>) {
    let mut order: Vec<&str> = Vec::new();
    for i in &ignored {
        if !order.contains(&i.what.as_str()) {
            order.push(&i.what);
        }
    }
    for what in order {
        let uses: Vec<&Ignored> = ignored.iter().filter(|i| i.what == what).collect();
        let Some(first) = uses.first() else { continue };
        let mut d = Diagnostic::new(
            Code::SourceAnimCommandIgnored,
            format!(
                "{what} is not applied yet; {} is written without it",
                first.owner
            ),
            first.span,
            "ignored",
        );
        if uses.len() > 1 {
            let names: Vec<&str> = uses[1..].iter().take(4).map(|i| i.owner.as_str()).collect();
            let more = uses.len() - 1 - names.len();
            d = d.with_note(format!(
                "also in {} more: {}{}",
                uses.len() - 1,
                names.join(", "),
                if more > 0 {
                    format!(" and {more} other{}", if more == 1 { "" } else { "s" })
                } else {
                    String::new()
                }
            ));
        }
        diags.push(d);
    }
}

pub(super) fn unknown_name<'a>(
    what: &str,
    name: &str,
    span: FileSpan,
    known: impl Iterator<Item = &'a str>,
) -> Diagnostic {
    let known: Vec<&str> = known.collect();
    let mut d = Diagnostic::new(
        Code::SourceAnimUnknownName,
        format!("unknown {what} `{name}`"),
        span,
        format!("no {what} of this name"),
    );
    if let Some(s) = crate::suggest::nearest(name, known.iter().copied()) {
        d = d.with_note(format!("help: did you mean `{s}`?"));
    }
    d
}

/// One `$sequence` (§6): flags, activity, blend grid and pose parameters, events, weights.
#[allow(clippy::too_many_arguments)]
fn sequence(
    model: &Model,
    s: &Seq,
    seq_index: usize,
    anims: &[PAnim],
    pose_params: &mut [PPoseParam],
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
    ignored: &mut Vec<Ignored>,
) -> Option<PSeq> {
    let nb = cx.bones.len();
    if s.animations.is_empty()
        && s.flags
            .iter()
            .any(|f| f.value == crate::ir::written::DECLARED)
    {
        // `$declaresequence`: Valve's compiler writes the name and STUDIO_OVERRIDE of a
        // sequence otherwise all zero (2006 SDK `Cmd_DeclareSequence` clears it with memset):
        // no blends, no animation, fades 0, weights 0. Its `paramindex` is 0 there; mdlc
        // writes -1 ("no pose parameter"), the safe choice, as no reader should look at it.
        return Some(PSeq {
            name: s.name.value.clone(),
            activity: String::new(),
            actweight: 0,
            flags: OVERRIDE,
            anims: Vec::new(),
            groupsize: [0, 0],
            paramindex: [-1, -1],
            paramstart: [0.0; 2],
            paramend: [0.0; 2],
            posekeys: Vec::new(),
            events: Vec::new(),
            fadein: 0.0,
            fadeout: 0.0,
            entry_node: 0,
            exit_node: 0,
            nodeflags: 0,
            weights: vec![0.0; nb],
            autolayers: Vec::new(),
            bbox: ([0.0; 3], [0.0; 3]),
            keyvalues: None,
            iklocks: Vec::new(),
            numikrules: 0,
        });
    }
    let ids: Vec<usize> = s.animations.iter().map(|a| a.index()).collect();
    let first = ids.first().and_then(|&i| anims.get(i));
    let first_ir = s.animations.first().and_then(|a| model.animation(*a));
    let mut flags = 0;
    for &i in &ids {
        if let Some(a) = anims.get(i) {
            flags |= a.flags & (LOOPING | SNAP | POST);
        }
    }
    for f in &s.flags {
        flags |= match f.value.as_str() {
            "loop" => LOOPING,
            "snap" => SNAP,
            "delta" => DELTA | POST,
            "predelta" => DELTA,
            "post" => POST,
            "worldspace" => WORLD | POST,
            "autoplay" => AUTOPLAY,
            "realtime" => REALTIME,
            "hidden" => HIDDEN,
            _ => 0,
        };
    }
    let width = s.blend_width.max(1);
    let rows = ids.len().div_ceil(width).max(1);
    let groupsize = [width as i32, rows as i32];
    let mut paramindex = [-1i32; 2];
    let mut paramstart = [0.0f32; 2];
    let mut paramend = [0.0f32; 2];
    for (axis, b) in s.blends.iter().take(2).enumerate() {
        match pose_params
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(&b.param.value))
        {
            Some(p) => {
                paramindex[axis] = p as i32;
                paramstart[axis] = b.min;
                paramend[axis] = b.max;
                // (a `$poseparameter` read after this sequence set the range anew)
                let widens = model
                    .pose_parameters
                    .get(p)
                    .is_none_or(|d| seq_index >= d.widened_from);
                let pp = &mut pose_params[p];
                if widens {
                    pp.start = pp.start.min(b.min).min(b.max);
                    pp.end = pp.end.max(b.min).max(b.max);
                }
            }
            None => diags.push(unknown_name(
                "pose parameter",
                &b.param.value,
                b.param.span.span(),
                pose_params.iter().map(|p| p.name.as_str()),
            )),
        }
    }
    // `calcblend param attachment motion`: the blend's values measured from the attachment
    // (2006 SDK `CalcPoseParameters`)
    let mut measured: [Option<Vec<f32>>; 2] = [None, None];
    for c in s
        .extras
        .iter()
        .filter(|c| c.keyword.value.eq_ignore_ascii_case("calcblend"))
    {
        let axis = usize::from(paramindex[0] != -1);
        if axis >= 2 || paramindex[axis] != -1 {
            continue;
        }
        let Some(values) = calc_blend(model, s, c, &ids, groupsize, axis, anims, cx, diags) else {
            continue;
        };
        let (Some(&first_v), Some(&last_v)) = (values.first(), values.last()) else {
            continue;
        };
        let Some(param) = c.args.first() else {
            continue;
        };
        match pose_params
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(&param.value))
        {
            Some(p) => {
                paramindex[axis] = p as i32;
                paramstart[axis] = first_v;
                paramend[axis] = last_v;
                let pp = &mut pose_params[p];
                pp.start = pp.start.min(first_v).min(last_v);
                pp.end = pp.end.max(first_v).max(last_v);
                measured[axis] = Some(values);
            }
            None => diags.push(unknown_name(
                "pose parameter",
                &param.value,
                param.span.span(),
                pose_params.iter().map(|p| p.name.as_str()),
            )),
        }
    }
    let mut posekeys = Vec::new();
    if groupsize[0] > 1 || groupsize[1] > 1 {
        for axis in 0..2 {
            let n = groupsize[axis];
            for k in 0..n {
                if let Some(v) = measured[axis].as_ref().and_then(|m| m.get(k as usize)) {
                    posekeys.push(*v);
                    continue;
                }
                let t = if n > 1 {
                    k as f32 / (n - 1) as f32
                } else {
                    0.0
                };
                posekeys.push(paramstart[axis] + (paramend[axis] - paramstart[axis]) * t);
            }
        }
    }
    // events: frame numbers of the first animation → cycles
    let mut events = Vec::new();
    let nframes = first.map_or(1, |a| a.num_frames);
    // An event's frame counts from the first frame the sequence's first animation uses (with
    // `frame 82 180`, event frame 0 is the SMD's frame 82), as Valve's compiler reads it:
    // cycle = frame / (numframes − 1), a frame past the end an error, a negative one kept as
    // a negative cycle (2006 SDK `write.cpp`, the events of `WriteSequenceInfo`).
    let first_time = first_ir.map_or(0, |a| a.first_time);
    for e in &s.events {
        let frame = e.frame;
        if frame >= 0 && frame as usize >= nframes.max(1) {
            diags.push(
                Diagnostic::new(
                    Code::SourceEventFrame,
                    format!(
                        "event `{}` is at frame {}, past the end of sequence `{}`",
                        e.id.value, e.frame, s.name.value
                    ),
                    e.id.span.span(),
                    "this event",
                )
                .with_note(format!(
                    "the sequence's first animation has frames 0 to {} (the SMD's frames {} to {}); event frames count from its first frame",
                    nframes.max(1) - 1,
                    first_time,
                    first_time.saturating_add(nframes.max(1) as i32 - 1)
                )),
            );
            continue;
        }
        if frame < 0 {
            diags.push(
                Diagnostic::new(
                    Code::SourceEventNegativeFrame,
                    format!(
                        "event `{}` is at frame {}, before the start of sequence `{}`",
                        e.id.value, e.frame, s.name.value
                    ),
                    e.id.span.span(),
                    "this event never fires",
                )
                .with_note("it is written with a negative cycle, as Valve's compiler writes it"),
            );
        }
        let options = e.options.clone().unwrap_or_default();
        if options.len() > MAX_EVENT_OPTIONS {
            diags.push(
                Diagnostic::new(
                    Code::SourceAnimLimit,
                    format!(
                        "the options of event `{}` are {} bytes long; Source stores at most {MAX_EVENT_OPTIONS}",
                        e.id.value,
                        options.len()
                    ),
                    e.id.span.span(),
                    "this event",
                )
                .with_note("the engine reads the options from a 64-byte field"),
            );
            continue;
        }
        let cycle = if nframes > 1 {
            frame as f32 / (nframes - 1) as f32
        } else {
            0.0
        };
        let numeric = e.id.value.starts_with(|c: char| c.is_ascii_digit());
        let number = if numeric {
            match leading_int(&e.id.value) {
                Some(n) => n,
                None => {
                    diags.push(Diagnostic::new(
                        Code::SourceAnimLimit,
                        format!("event number `{}` does not fit in 32 bits", e.id.value),
                        e.id.span.span(),
                        "this event",
                    ));
                    continue;
                }
            }
        } else {
            0
        };
        events.push(PEvent {
            cycle,
            event: number,
            kind: if numeric { 0 } else { 0x400 },
            options,
            name: if numeric {
                String::new()
            } else {
                e.id.value.clone()
            },
        });
    }
    if events.len() > MAX_EVENTS {
        diags.push(Diagnostic::new(
            Code::SourceAnimLimit,
            format!(
                "sequence `{}` has {} events; Source allows at most {MAX_EVENTS}",
                s.name.value,
                events.len()
            ),
            s.name.span.span(),
            "this sequence",
        ));
    }
    // weights: per bone the largest of the blend animations'
    let mut weights = vec![0.0f32; nb];
    let mut any = false;
    for &i in &ids {
        if let Some(a) = anims.get(i) {
            any = true;
            for (w, aw) in weights.iter_mut().zip(&a.weights) {
                *w = w.max(*aw);
            }
        }
    }
    if !any {
        weights = vec![1.0; nb];
    }
    let keyvalues = s
        .extras
        .iter()
        .find(|c| c.keyword.value.eq_ignore_ascii_case("keyvalues"))
        .and_then(|c| c.args.first())
        .map(|t| {
            let t = t.value.trim();
            let inner = t
                .strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .unwrap_or(t);
            format!("{}\n", inner.trim())
        });
    // `iklock chain posweight localqweight` (2006 SDK: `mstudioiklock_t` per sequence, the chain
    // looked up by name in `$ikchain`s, an unknown one an error)
    let mut iklocks = Vec::new();
    for c in s
        .extras
        .iter()
        .filter(|c| c.keyword.value.eq_ignore_ascii_case("iklock"))
    {
        let Some(name) = c.args.first() else { continue };
        let num = |i: usize| -> f32 {
            c.args
                .get(i)
                .and_then(|v| v.value.trim().parse::<f32>().ok())
                .unwrap_or(0.0)
        };
        match model
            .ik_chains
            .iter()
            .position(|k| k.name.eq_ignore_ascii_case(&name.value))
        {
            Some(chain) => iklocks.push((chain as i32, num(1), num(2))),
            None => diags.push(unknown_name(
                "IK chain",
                &name.value,
                name.span.span(),
                model.ik_chains.iter().map(|k| k.name.as_str()),
            )),
        }
    }
    for c in &s.extras {
        let k = c.keyword.value.to_ascii_lowercase();
        if !matches!(
            k.as_str(),
            "addlayer"
                | "blendlayer"
                | "keyvalues"
                | "iklock"
                | "calcblend"
                | "blendref"
                | "blendcomp"
                | "blendcenter"
        ) {
            let owner = format!("sequence `{}`", s.name.value);
            let what = format!("`{k}`");
            if !ignored.iter().any(|i| i.what == what && i.owner == owner) {
                ignored.push(Ignored {
                    what,
                    span: c.keyword.span.span(),
                    owner,
                });
            }
        }
    }
    Some(PSeq {
        name: s.name.value.clone(),
        activity: s
            .activity
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_default(),
        actweight: s.activity.as_ref().map_or(0, |a| a.weight),
        flags,
        anims: if ids.is_empty() {
            vec![0]
        } else {
            ids.iter().map(|&i| i as i16).collect()
        },
        groupsize,
        paramindex,
        paramstart,
        paramend,
        posekeys,
        events,
        fadein: s.fade_in.unwrap_or(0.2),
        fadeout: s.fade_out.unwrap_or(0.2),
        entry_node: 0,
        exit_node: 0,
        nodeflags: 0,
        weights,
        autolayers: Vec::new(),
        bbox: cx.rest_box,
        keyvalues,
        iklocks,
        numikrules: 0,
    })
}

/// The number a numeric event id starts with (`atoi`), if it fits an i32.
fn leading_int(s: &str) -> Option<i32> {
    let d: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    d.parse().ok()
}

/// The values of one `calcblend` along blend axis `axis`, as the 2006 SDK's
/// `CalcPoseParameters` measures them: the attachment's place in frame 0 of the reference
/// animation (`blendref`, else the model's first) is "zero"; each animation along the axis
/// (the other axis at `blendcenter`'s place, else its middle), applied on the comparison
/// animation (`blendcomp`, else the reference) when it is a delta, moves the attachment, and
/// the motion's component (`X`/`Y`/`Z` in inches, `XR`/`YR`/`ZR` in degrees) is the value.
#[allow(clippy::too_many_arguments)]
fn calc_blend(
    model: &Model,
    s: &Seq,
    c: &crate::ir::written::AnimCommand,
    ids: &[usize],
    groupsize: [i32; 2],
    axis: usize,
    anims: &[PAnim],
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<f32>> {
    let (Some(_), Some(att_name), Some(control)) = (c.args.first(), c.args.get(1), c.args.get(2))
    else {
        return None;
    };
    let Some(att) = cx
        .attachments
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(&att_name.value))
    else {
        diags.push(unknown_name(
            "attachment",
            &att_name.value,
            att_name.span.span(),
            cx.attachments.iter().map(|a| a.name.as_str()),
        ));
        return None;
    };
    let named = |kw: &str, diags: &mut Vec<Diagnostic>| -> Option<Option<usize>> {
        let Some(c) = s
            .extras
            .iter()
            .find(|c| c.keyword.value.eq_ignore_ascii_case(kw))
        else {
            return Some(None);
        };
        let name = c.args.first()?;
        match find_anim(model, &name.value, anims.len()) {
            Some(i) => Some(Some(i)),
            None => {
                diags.push(unknown_anim(model, name));
                None
            }
        }
    };
    let reference = named("blendref", diags)?.unwrap_or(0);
    let compare = named("blendcomp", diags)?.unwrap_or(reference);
    let center = named("blendcenter", diags)?;
    let (Some(ref_anim), Some(cmp_anim), Some(first)) =
        (anims.get(reference), anims.get(compare), anims.first())
    else {
        return None;
    };
    let attach =
        |world: &[M34]| -> Option<M34> { Some(math::mul(world.get(att.bone)?, &att.local)) };
    let mid = attach(&frame0_world(ref_anim, first, cx))?;
    let to_mid = math::invert(&mid);
    // the other axis's place: where `blendcenter` stands in the grid, else its middle
    let width = groupsize[0].max(1) as usize;
    let mut at = [0usize; 2];
    match center.and_then(|a| ids.iter().position(|&i| i == a)) {
        Some(k) => at = [k % width, k / width],
        None => at[1 - axis] = groupsize[1 - axis].max(1) as usize / 2,
    }
    let n = groupsize[axis].max(1) as usize;
    let mut values = Vec::with_capacity(n);
    for m in 0..n {
        at[axis] = m;
        let anim = anims.get(*ids.get(at[1] * width + at[0])?)?;
        let rel = math::mul(&to_mid, &attach(&frame0_world(anim, cmp_anim, cx))?);
        let angles = math::to_euler(&rel);
        let pos = [rel[0][3], rel[1][3], rel[2][3]];
        values.push(match control.value.to_ascii_uppercase().as_str() {
            "X" => pos[0],
            "Y" => pos[1],
            "Z" => pos[2],
            "XR" => angles[0].to_degrees(),
            "YR" => angles[1].to_degrees(),
            "ZR" => angles[2].to_degrees(),
            _ => 0.0,
        });
    }
    let (start, end) = (*values.first()?, *values.last()?);
    if (start - end).abs() < 0.01 {
        diags.push(
            Diagnostic::new(
                Code::SourceCalcBlendFailed,
                format!(
                    "`calcblend` of sequence `{}` measures no change: `{}` moves by {:.4} in `{}` across the blend",
                    s.name.value, att_name.value, end - start, control.value
                ),
                c.keyword.span.span(),
                "nothing to blend over",
            )
            .with_note("Valve's compiler stops the same way (\"calcblend failed\"): the attachment must move along the chosen motion between the first and last animation"),
        );
        return None;
    }
    Some(values)
}

/// Each bone's model-space matrix in frame 0 of `anim`; a delta animation is applied on frame 0
/// of `base` with its bone weights (2006 SDK `CalcBoneTransforms`).
fn frame0_world(anim: &PAnim, base: &PAnim, cx: &Context) -> Vec<M34> {
    let delta = (anim.flags & DELTA != 0).then_some((&anim.weights[..], &base.frames[..]));
    super::ikrule::pose_world(&anim.frames, delta, cx)
}

/// `addlayer` / `blendlayer` of one sequence (§6.7).
fn autolayers(
    s: &Seq,
    model: &Model,
    anims: &[PAnim],
    pose_params: &[PPoseParam],
    diags: &mut Vec<Diagnostic>,
    seq_flags: &mut i32,
) -> Vec<PAutoLayer> {
    let mut out = Vec::new();
    // start/peak/tail/end are frames of this sequence's first animation (§6.7)
    let own_frames = s
        .animations
        .first()
        .and_then(|a| anims.get(a.index()))
        .map_or(1, |a| a.num_frames);
    for c in &s.extras {
        let k = c.keyword.value.to_ascii_lowercase();
        if k != "addlayer" && k != "blendlayer" {
            continue;
        }
        let Some(name) = c.args.first() else { continue };
        let Some(q) = model
            .sequences
            .iter()
            .position(|x| x.name.value.eq_ignore_ascii_case(&name.value))
        else {
            diags.push(unknown_name(
                "sequence",
                &name.value,
                name.span.span(),
                model.sequences.iter().map(|x| x.name.value.as_str()),
            ));
            continue;
        };
        let mut layer = PAutoLayer {
            sequence: q as i16,
            pose: 0,
            flags: 0,
            start: 0.0,
            peak: 0.0,
            tail: 0.0,
            end: 0.0,
            frames: [0.0; 4],
        };
        if k == "blendlayer" {
            let num = |i: usize| -> f32 {
                c.args
                    .get(i)
                    .and_then(|v| v.value.trim().parse::<f32>().ok())
                    .unwrap_or(0.0)
            };
            let vals = [num(1), num(2), num(3), num(4)];
            let mut pose = false;
            let mut i = 5;
            while let Some(w) = c.args.get(i) {
                match w.value.to_ascii_lowercase().as_str() {
                    "xfade" => layer.flags |= AL_XFADE,
                    "spline" => layer.flags |= AL_SPLINE,
                    "noblend" => layer.flags |= AL_NOBLEND,
                    "local" => {
                        layer.flags |= AL_LOCAL;
                        *seq_flags |= LOCAL;
                    }
                    "poseparameter" => {
                        layer.flags |= AL_POSE;
                        pose = true;
                        i += 1;
                        if let Some(p) = c.args.get(i) {
                            match pose_params
                                .iter()
                                .position(|x| x.name.eq_ignore_ascii_case(&p.value))
                            {
                                Some(ix) => layer.pose = ix as i16,
                                None => diags.push(unknown_name(
                                    "pose parameter",
                                    &p.value,
                                    p.span.span(),
                                    pose_params.iter().map(|x| x.name.as_str()),
                                )),
                            }
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            // frames of the layer's sequence → cycles, unless in pose units
            let to_unit = |v: f32| -> f32 {
                if pose {
                    v
                } else {
                    let n = own_frames;
                    if n > 1 {
                        v / (n - 1) as f32
                    } else {
                        0.0
                    }
                }
            };
            layer.frames = vals;
            layer.start = to_unit(vals[0]);
            layer.peak = to_unit(vals[1]);
            layer.tail = to_unit(vals[2]);
            layer.end = to_unit(vals[3]);
        }
        out.push(layer);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anim(frames: Vec<LocalPose>, nb: usize) -> PAnim {
        let n = frames.len() / nb;
        PAnim {
            name: "a".into(),
            fps: 30.0,
            flags: 0,
            num_frames: n,
            frames,
            weights: vec![1.0; nb],
            pos_weights: vec![1.0; nb],
            movements: Vec::new(),
            encoded: Encoded::default(),
            ikrules: Vec::new(),
        }
    }

    fn pose(x: f32, y: f32, rz: f32) -> LocalPose {
        LocalPose {
            pos: [x, y, 0.0],
            rot: [0.0, 0.0, rz],
        }
    }

    fn close(a: f32, b: f32, eps: f32) -> bool {
        (a - b).abs() <= eps
    }

    fn mat_close(a: &M34, b: &M34) -> bool {
        a.iter()
            .flatten()
            .zip(b.iter().flatten())
            .all(|(x, y)| close(*x, *y, 1e-5))
    }

    #[test]
    fn quaternion_helpers_match_matrices() {
        let p = [0.3f32, -0.2, 1.1];
        let q = [-0.7f32, 0.4, 0.25];
        let (mp, mq) = (math::from_euler(p, [0.0; 3]), math::from_euler(q, [0.0; 3]));
        let (qp, qq) = (math::euler_quat(p), math::euler_quat(q));
        // sm(-1, p, q) = p⁻¹ ⊗ q
        let a = math::from_euler(quat::euler(quat::sm(-1.0, qp, qq)), [0.0; 3]);
        assert!(mat_close(&a, &math::mul(&math::invert(&mp), &mq)));
        // ma(p, -1, q) = p ⊗ q⁻¹
        let b = math::from_euler(quat::euler(quat::ma(qp, -1.0, qq)), [0.0; 3]);
        assert!(mat_close(&b, &math::mul(&mp, &math::invert(&mq))));
        // scale by 0.5 halves the angle about the same axis
        let half = quat::scale(math::euler_quat([0.0, 0.0, 1.2]), 0.5);
        assert!(close(quat::euler(half)[2], 0.6, 1e-6));
    }

    #[test]
    fn uniform_motion_becomes_one_linear_piece() {
        // root walks 30 units along X over 4 frames; the child (bone 1) is left alone
        let mut frames = Vec::new();
        for f in 0..4 {
            frames.push(pose(10.0 * f as f32, 0.0, 0.0));
            frames.push(pose(5.0, 1.0, 0.2));
        }
        let mut a = anim(frames, 2);
        let mv = extract_motion(&mut a, 2, &[0], 0, 0x40, 0, 3, 3, None);
        let Some(mv) = mv else { panic!("no movement") };
        assert_eq!(mv.endframe, 3);
        assert_eq!(mv.motionflags, 0x40);
        assert!(close(mv.v0, 30.0, 1e-4) && close(mv.v1, 30.0, 1e-4));
        assert!(close(mv.position[0], 30.0, 1e-4) && close(mv.vector[0], 1.0, 1e-6));
        for f in 0..4 {
            assert!(close(a.frames[f * 2].pos[0], 0.0, 1e-4), "frame {f}");
            assert_eq!(a.frames[f * 2 + 1], pose(5.0, 1.0, 0.2));
        }
    }

    #[test]
    fn accelerating_motion_keeps_start_and_end_speed() {
        // x = 16·t²: from the middle frame, v0 = 4·d1 − d2 = 0 and v1 = 3·d2 − 4·d1 = 32, whose
        // path v0·t + ½(v1 − v0)·t² is exactly the motion, so nothing is left on the root
        let frames: Vec<LocalPose> = (0..5)
            .map(|f| {
                let t = f as f32 / 4.0;
                pose(16.0 * t * t, 0.0, 0.0)
            })
            .collect();
        let mut a = anim(frames, 1);
        let Some(mv) = extract_motion(&mut a, 1, &[0], 0, 0x40, 0, 4, 4, None) else {
            panic!("no movement")
        };
        assert!(
            close(mv.v0, 0.0, 1e-4) && close(mv.v1, 32.0, 1e-4),
            "{mv:?}"
        );
        for p in &a.frames {
            assert!(close(p.pos[0], 0.0, 1e-4), "{p:?}");
        }
    }

    #[test]
    fn rotateto_turns_the_travel_direction() {
        let frames: Vec<LocalPose> = (0..3).map(|f| pose(10.0 * f as f32, 0.0, 0.0)).collect();
        let mut a = anim(frames, 1);
        rotate_to(&mut a, 1, &[0], 0, 90.0);
        let last = a.frames[2];
        assert!(close(last.pos[0], 0.0, 1e-4) && close(last.pos[1], 20.0, 1e-4));
        assert!(close(last.rot[2], std::f32::consts::FRAC_PI_2, 1e-5));
    }

    #[test]
    fn fixuploop_spreads_the_loop_gap_over_the_last_frames() {
        // x: 0 0 0 0 4; `fixuploop -2 0`: frame 3 takes half the gap back, frame 4 all of it
        let frames: Vec<LocalPose> = [0.0, 0.0, 0.0, 0.0, 4.0]
            .iter()
            .map(|&x| pose(x, 0.0, 0.0))
            .collect();
        let mut a = anim(frames, 1);
        fixup_loop(&mut a, 1, &[], 0, -2, 0);
        let xs: Vec<f32> = a.frames.iter().map(|p| p.pos[0]).collect();
        assert!(
            close(xs[3], -2.0, 1e-5) && close(xs[4], 0.0, 1e-5),
            "{xs:?}"
        );
        assert!(xs[..3].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn alignto_moves_the_roots_onto_the_reference() {
        let bones = [PBone {
            name: "root".into(),
            parent: None,
            pos: [0.0; 3],
            quat: [0.0, 0.0, 0.0, 1.0],
            rot: [0.0; 3],
            pose_to_bone: math::IDENTITY,
            world: math::IDENTITY,
            flags: 0,
        }];
        let reference = [pose(5.0, 7.0, 0.0)];
        let mut a = anim(vec![pose(1.0, 2.0, 0.0), pose(3.0, 2.0, 0.0)], 1);
        let src = world_of(&reference, &bones);
        let dst = world_of(&frame_of(&a, 0, 1), &bones);
        align_to(&mut a, 1, &[0], 0x3, &src[0], &dst[0]);
        assert!(close(a.frames[0].pos[0], 5.0, 1e-5) && close(a.frames[0].pos[1], 7.0, 1e-5));
        assert!(close(a.frames[1].pos[0], 7.0, 1e-5) && close(a.frames[1].pos[1], 7.0, 1e-5));
    }
}
