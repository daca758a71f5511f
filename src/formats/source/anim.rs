//! The animation side of a Source model, from the IR to what the MDL holds
//! (`source-animation.md` §2.4–§2.5 conversion, §5.1 scales, §3 animdescs, §6 sequences, §6.5
//! pose parameters, §6.10 nodes, §6.11 sequence boxes). The bytes of each animation come from
//! [`animcodec`](super::animcodec); the layout from [`write`](super::write).

use crate::diag::FileSpan;
use crate::diag::{Code, Diagnostic};
use crate::ir::model::{Anim, Model, Seq};

use super::animcodec::{self, AnimInput, BoneBase, Encoded, LocalPose};
use super::math::{self, Aabb, M34};
use super::prepare::{PBodyPart, PBone, PHitboxSet};

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
pub const WORLD: i32 = 0x4000;

/// Longest event option string (`mstudioevent_t.options` is 64 bytes with its NUL, §6.3).
const MAX_EVENT_OPTIONS: usize = 63;
/// Limits the writer keeps (§9.1, §6.5).
const MAX_POSE_PARAMS: usize = 24;
const MAX_NODES: usize = 127;
const MAX_EVENTS: usize = 255;

/// `mstudiomovement_t` (§3.3).
#[derive(Clone, Debug, PartialEq)]
pub struct PMovement {
    pub endframe: i32,
    pub motionflags: i32,
    pub v0: f32,
    pub v1: f32,
    pub angle: f32,
    pub vector: [f32; 3],
    pub position: [f32; 3],
}

/// One animation (`mstudioanimdesc_t`, §3) with its local poses and encoded records.
pub struct PAnim {
    pub name: String,
    pub fps: f32,
    pub flags: i32,
    pub num_frames: usize,
    /// `num_frames × bones`, frame-major, after §2.4 and §2.5.
    pub frames: Vec<LocalPose>,
    /// Per bone (§6.6), and position weights for delta animations.
    pub weights: Vec<f32>,
    pub pos_weights: Vec<f32>,
    pub movements: Vec<PMovement>,
    pub encoded: Encoded,
}

/// `mstudioevent_t` (§6.3).
#[derive(Clone, Debug, PartialEq)]
pub struct PEvent {
    pub cycle: f32,
    pub event: i32,
    pub kind: i32,
    pub options: String,
    /// Named events only; empty for numbered ones.
    pub name: String,
}

/// `mstudioautolayer_t` (§6.7).
#[derive(Clone, Debug, PartialEq)]
pub struct PAutoLayer {
    pub sequence: i16,
    pub pose: i16,
    pub flags: i32,
    pub start: f32,
    pub peak: f32,
    pub tail: f32,
    pub end: f32,
}

/// `mstudioseqdesc_t` (§6).
pub struct PSeq {
    pub name: String,
    pub activity: String,
    pub actweight: i32,
    pub flags: i32,
    /// Animation indices, `groupsize[0] × groupsize[1]`, x fastest (§6.4).
    pub anims: Vec<i16>,
    pub groupsize: [i32; 2],
    pub paramindex: [i32; 2],
    pub paramstart: [f32; 2],
    pub paramend: [f32; 2],
    /// Pose keys when a grid axis has more than one entry (§6.4); empty otherwise.
    pub posekeys: Vec<f32>,
    pub events: Vec<PEvent>,
    pub fadein: f32,
    pub fadeout: f32,
    pub entry_node: i32,
    pub exit_node: i32,
    pub nodeflags: i32,
    /// One weight per bone (§6.6).
    pub weights: Vec<f32>,
    pub autolayers: Vec<PAutoLayer>,
    pub bbox: ([f32; 3], [f32; 3]),
    pub keyvalues: Option<String>,
}

/// `mstudioposeparamdesc_t` (§6.5).
#[derive(Clone, Debug, PartialEq)]
pub struct PPoseParam {
    pub name: String,
    pub flags: i32,
    pub start: f32,
    pub end: f32,
    pub loop_range: f32,
}

/// Everything the animation side adds to the plan.
pub struct AnimPlan {
    pub anims: Vec<PAnim>,
    pub seqs: Vec<PSeq>,
    pub pose_params: Vec<PPoseParam>,
    /// Node names, numbered from 1 in this order (§6.10).
    pub nodes: Vec<String>,
    /// `nodes² ` transition bytes (§6.10).
    pub node_table: Vec<u8>,
    /// Per bone: `(posscale, rotscale)` (§5.1).
    pub scales: Vec<([f32; 3], [f32; 3])>,
}

/// What the plan already knows that the animation side needs.
pub struct Context<'a> {
    pub bones: &'a [PBone],
    /// IR bone → plan bone.
    pub ir_to_out: &'a [Option<usize>],
    pub static_prop: bool,
    pub body_parts: &'a [PBodyPart],
    pub hitbox_sets: &'a [PHitboxSet],
    /// The rest-pose box (model space, after the +90° turn), used for one-frame static props and
    /// for delta sequences.
    pub rest_box: ([f32; 3], [f32; 3]),
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

fn decompose(m: &M34) -> LocalPose {
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
fn convert(a: &Anim, cx: &Context) -> Vec<LocalPose> {
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
    let mut wsrc: Vec<Option<M34>> = vec![None; nfile];
    let mut world: Vec<M34> = vec![math::IDENTITY; nb];
    for f in 0..nf {
        wsrc.iter_mut().for_each(|w| *w = None);
        // file bones, parents first whatever the order of `nodes`
        let mut progress = true;
        while progress {
            progress = false;
            for q in 0..nfile {
                if wsrc[q].is_some() {
                    continue;
                }
                let pose = a.pose(f, q).unwrap_or_default();
                let p = math::scale(pose.pos, a.scale);
                let parent = a.file_bones[q].parent.map(|x| x as usize);
                let w = match parent.filter(|&x| x < nfile && x != q) {
                    Some(pq) => match wsrc[pq] {
                        Some(pw) => math::mul(&pw, &math::from_euler(pose.rot, p)),
                        None => continue,
                    },
                    None => math::mul(&m, &math::from_euler(pose.rot, math::sub(p, a.origin))),
                };
                wsrc[q] = Some(w);
                progress = true;
            }
        }
        for b in 0..nb {
            let parent = cx.bones[b].parent.filter(|&p| p < b);
            let w = match file_of[b].and_then(|q| wsrc.get(q).copied().flatten()) {
                Some(w) => w,
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

fn motion_bit(word: &str) -> Option<i32> {
    Some(match word.to_ascii_uppercase().as_str() {
        "X" => 0x1,
        "Y" => 0x2,
        "Z" => 0x4,
        "XR" => 0x8,
        "YR" => 0x10,
        "ZR" => 0x20,
        "LX" => 0x40,
        "LY" => 0x80,
        "LZ" => 0x100,
        "LXR" => 0x200,
        "LYR" => 0x400,
        "LZR" => 0x800,
        "LM" => 0x1000,
        "LQ" => 0x2000,
        _ => return None,
    })
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
        });
    }
    if !cx.static_prop {
        for (i, a) in model.animations.iter().enumerate() {
            process(model, a, i, &mut anims, cx, diags, &mut ignored);
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
    for s in &model.sequences {
        let ps = sequence(model, s, &anims, &mut pose_params, cx, diags, &mut ignored);
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
    if diags.iter().filter(|d| d.is_error()).count() > errors_before {
        return None;
    }

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
    for ps in &mut seqs {
        if cx.static_prop {
            ps.bbox = cx.rest_box;
            continue;
        }
        // Valve's compiler poses the model with a delta animation's values as if they were
        // absolute local poses; the box of a delta sequence is that (observed in
        // `mapbase-bunker-gun01`'s `aim`), so mdlc does the same.
        let mut bx = Aabb::EMPTY;
        for &ai in &ps.anims {
            if let Some(a) = anims.get(ai as usize) {
                anim_box(a, cx, &mut bx);
            }
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
    })
}

/// Adds every vertex and first-set hit box of every frame of `a` to `bx`.
fn anim_box(a: &PAnim, cx: &Context, bx: &mut Aabb) {
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
        for bp in cx.body_parts {
            for m in &bp.models {
                for mesh in &m.meshes {
                    for v in &mesh.vertices {
                        let mut p = [0.0f32; 3];
                        for &(bone, w) in &v.weights {
                            if let Some(s) = skin.get(bone as usize) {
                                p = math::add(p, math::scale(math::apply(s, v.pos), w));
                            }
                        }
                        bx.add(p);
                    }
                }
            }
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

/// §2.5: the options and commands of animation `i`, in Valve's order.
fn process(
    model: &Model,
    a: &Anim,
    i: usize,
    anims: &mut [PAnim],
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
    ignored: &mut Vec<Ignored>,
) {
    let nb = cx.bones.len();
    let roots: Vec<usize> = (0..nb).filter(|&b| cx.bones[b].parent.is_none()).collect();
    let mut motion = 0i32;
    for m in &a.motion {
        motion |= motion_bit(&m.value).unwrap_or(0);
    }
    // pin X, Y, Z, XR, YR, ZR of the roots to frame 0
    if motion & 0x3f != 0 {
        let pa = &mut anims[i];
        for f in 1..pa.num_frames {
            for &r in &roots {
                let first = pa.frames[r];
                let cur = &mut pa.frames[f * nb + r];
                for k in 0..3 {
                    if motion & (1 << k) != 0 {
                        cur.pos[k] = first.pos[k];
                    }
                    if motion & (8 << k) != 0 {
                        cur.rot[k] = first.rot[k];
                    }
                }
            }
        }
    }
    if a.flags.iter().any(|f| f.value == "fudgeloop") {
        let pa = &mut anims[i];
        let first: Vec<LocalPose> = pa.frames.iter().take(nb).copied().collect();
        pa.frames.extend(first);
        pa.num_frames += 1;
        pa.flags |= LOOPING;
    }
    let mut warned: Vec<String> = Vec::new();
    for c in &a.commands {
        let kw = c.keyword.value.to_ascii_lowercase();
        match kw.as_str() {
            "subtract" => {
                let (Some(name), Some(frame)) = (c.args.first(), c.args.get(1)) else {
                    continue;
                };
                // an animation, or a sequence standing for its first animation
                let r = model
                    .animations
                    .iter()
                    .position(|x| x.name.value.eq_ignore_ascii_case(&name.value))
                    .or_else(|| {
                        model
                            .sequences
                            .iter()
                            .find(|x| x.name.value.eq_ignore_ascii_case(&name.value))
                            .and_then(|x| x.animations.first())
                            .map(|x| x.index())
                    })
                    .filter(|&r| r < anims.len());
                let Some(r) = r else {
                    diags.push(unknown_name(
                        "animation",
                        &name.value,
                        name.span.span(),
                        model
                            .animations
                            .iter()
                            .map(|x| x.name.value.as_str())
                            .filter(|n| !n.starts_with('@'))
                            .chain(model.sequences.iter().map(|x| x.name.value.as_str())),
                    ));
                    continue;
                };
                let k: usize = frame
                    .value
                    .trim()
                    .parse::<f32>()
                    .map_or(0, |v| v.max(0.0) as usize);
                let reference: Vec<LocalPose> = {
                    let ra = &anims[r];
                    let k = k.min(ra.num_frames.saturating_sub(1));
                    ra.frames
                        .get(k * nb..(k + 1) * nb)
                        .map(<[LocalPose]>::to_vec)
                        .unwrap_or_else(|| vec![LocalPose::default(); nb])
                };
                let pa = &mut anims[i];
                for frame in pa.frames.chunks_mut(nb.max(1)) {
                    for ((cur, rf), w) in frame.iter_mut().zip(&reference).zip(&pa.weights) {
                        if *w <= 0.0 {
                            continue;
                        }
                        let d = math::mul(
                            &math::invert(&math::from_euler(rf.rot, [0.0; 3])),
                            &math::from_euler(cur.rot, [0.0; 3]),
                        );
                        let e = math::to_euler(&d);
                        cur.rot = [wrap_pi(e[0]), wrap_pi(e[1]), wrap_pi(e[2])];
                        cur.pos = math::sub(cur.pos, rf.pos);
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
            "noanimation" => {
                let pa = &mut anims[i];
                pa.frames = vec![LocalPose::default(); nb];
                pa.num_frames = 1;
                pa.flags |= DELTA | ALLZEROS;
                pa.weights = vec![0.0; nb];
            }
            "compress" => {
                let n = c
                    .args
                    .first()
                    .and_then(|v| v.value.trim().parse::<f32>().ok())
                    .map_or(1, |v| v.max(1.0) as usize);
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
                let n = c
                    .args
                    .first()
                    .and_then(|v| v.value.trim().parse::<f32>().ok())
                    .map_or(0, |v| v.max(1.0) as usize);
                let pa = &mut anims[i];
                if n > pa.num_frames {
                    let last: Vec<LocalPose> =
                        pa.frames[(pa.num_frames - 1) * nb..pa.num_frames * nb].to_vec();
                    for _ in pa.num_frames..n {
                        pa.frames.extend_from_slice(&last);
                    }
                    pa.num_frames = n;
                }
            }
            _ => {
                if !warned.contains(&kw) {
                    warned.push(kw.clone());
                    ignored.push(Ignored {
                        what: format!("`{}`", c.keyword.value.to_ascii_lowercase()),
                        span: c.keyword.span.span(),
                        owner: format!("animation `{}`", a.name.value),
                    });
                }
            }
        }
    }
    // linear motion extraction of the roots (LX, LY, LZ)
    let linear = motion & 0x1c0;
    if motion & 0xe00 != 0 {
        if let Some(m) = a
            .motion
            .iter()
            .find(|m| matches!(m.value.to_ascii_uppercase().as_str(), "LXR" | "LYR" | "LZR"))
        {
            ignored.push(Ignored {
                what: format!("motion extraction `{}`", m.value.to_ascii_uppercase()),
                span: m.span.span(),
                owner: format!("animation `{}`", a.name.value),
            });
        }
    }
    let pa = &mut anims[i];
    if linear != 0 && pa.num_frames > 1 {
        let n = pa.num_frames;
        let mut total = [0.0f32; 3];
        for &r in &roots {
            let first = pa.frames[r].pos;
            let last = pa.frames[(n - 1) * nb + r].pos;
            let mut d = [0.0f32; 3];
            for k in 0..3 {
                if linear & (0x40 << k) != 0 {
                    d[k] = last[k] - first[k];
                }
            }
            for f in 0..n {
                let t = f as f32 / (n - 1) as f32;
                let p = &mut pa.frames[f * nb + r].pos;
                for k in 0..3 {
                    p[k] -= d[k] * t;
                }
            }
            if r == roots[0] {
                total = d;
            }
        }
        let len = math::dot(total, total).sqrt();
        pa.movements.push(PMovement {
            endframe: (n - 1) as i32,
            motionflags: motion,
            v0: len,
            v1: len,
            angle: 0.0,
            vector: if len > 0.0 {
                math::scale(total, 1.0 / len)
            } else {
                [0.0; 3]
            },
            position: total,
        });
    }
    if a.start_loop.is_some_and(|s| s != 0) {
        ignored.push(Ignored {
            what: "`startloop` with a frame other than 0".into(),
            span: a.span,
            owner: format!("animation `{}`", a.name.value),
        });
    }
    // `loop`: the last frame is frame 0 (§2.5)
    if pa.flags & LOOPING != 0 && pa.num_frames > 1 {
        let n = pa.num_frames;
        let first: Vec<LocalPose> = pa.frames[..nb].to_vec();
        pa.frames[(n - 1) * nb..n * nb].copy_from_slice(&first);
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

fn unknown_name<'a>(
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
fn sequence(
    model: &Model,
    s: &Seq,
    anims: &[PAnim],
    pose_params: &mut [PPoseParam],
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
    ignored: &mut Vec<Ignored>,
) -> Option<PSeq> {
    let nb = cx.bones.len();
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
                let pp = &mut pose_params[p];
                pp.start = pp.start.min(b.min).min(b.max);
                pp.end = pp.end.max(b.min).max(b.max);
            }
            None => diags.push(unknown_name(
                "pose parameter",
                &b.param.value,
                b.param.span.span(),
                pose_params.iter().map(|p| p.name.as_str()),
            )),
        }
    }
    let mut posekeys = Vec::new();
    if groupsize[0] > 1 || groupsize[1] > 1 {
        for axis in 0..2 {
            let n = groupsize[axis];
            for k in 0..n {
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
    let first_time = first_ir.map_or(0, |a| a.first_time);
    for e in &s.events {
        let frame = e.frame - first_time;
        if frame < 0 || frame as usize >= nframes.max(1) {
            diags.push(
                Diagnostic::new(
                    Code::SourceEventFrame,
                    format!(
                        "event `{}` is at frame {}, outside sequence `{}`",
                        e.id.value, e.frame, s.name.value
                    ),
                    e.id.span.span(),
                    "this event",
                )
                .with_note(format!(
                    "the sequence's first animation has frames {} to {}",
                    first_time,
                    first_time + nframes as i32 - 1
                )),
            );
            continue;
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
        events.push(PEvent {
            cycle,
            event: if numeric { leading_int(&e.id.value) } else { 0 },
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
    for c in &s.extras {
        let k = c.keyword.value.to_ascii_lowercase();
        if !matches!(k.as_str(), "addlayer" | "blendlayer" | "keyvalues") {
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
    })
}

fn leading_int(s: &str) -> i32 {
    let d: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    d.parse().unwrap_or(i32::MAX)
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
                    "xfade" => layer.flags |= 0x80,
                    "spline" => layer.flags |= 0x40,
                    "noblend" => layer.flags |= 0x200,
                    "local" => {
                        layer.flags |= 0x1000;
                        *seq_flags |= LOCAL;
                    }
                    "poseparameter" => {
                        layer.flags |= 0x4000;
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
            layer.start = to_unit(vals[0]);
            layer.peak = to_unit(vals[1]);
            layer.tail = to_unit(vals[2]);
            layer.end = to_unit(vals[3]);
        }
        out.push(layer);
    }
    out
}
