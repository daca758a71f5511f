//! GoldSrc skeleton values and everything animated (`goldsrc.md` §4.3, §4.7-4.11, §8.4-8.11):
//! bone defaults, controllers on bones, per-sequence frames (root transform, looping, motion
//! extraction, mapping onto the final skeleton), quantisation scales, run-length streams,
//! sequence descriptors with events and pivots, sequence groups, transitions, hit boxes and
//! sequence bounding boxes — with the floating-point steps of Valve's HL1 studiomdl.

pub(crate) mod boxes;
mod frames;
mod groups;
mod math;
mod tables;

use std::f64::consts::PI;

use crate::diag::{Code, Diagnostic, FileSpan};
use crate::ir::model::{Anim, Model, Seq};

use super::geometry::Geometry;
use super::model::{GsBone, GsEvent, GsHitbox, GsPivot, GsSeqGroup, GsSequence};
use super::rle;

pub use groups::group_file_name;
pub use tables::{activity_number, motion_flag};

use frames::{Blend, Frames};

/// Bones, sequences and what depends on them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Animation {
    pub bones: Vec<GsBone>,
    pub sequences: Vec<GsSequence>,
    pub seq_groups: Vec<GsSeqGroup>,
    pub transitions: Vec<Vec<u8>>,
    pub hitboxes: Vec<GsHitbox>,
}

/// Bone names are stored in 32 bytes with their terminating NUL.
const NAME_FIELD: usize = 32;
/// The last SMD frame Valve's tool keeps (`MAXSTUDIOANIMATIONS - 1`).
const LAST_FRAME: i64 = 2047;
/// At most 1023 events and 255 pivots per sequence (`MAXSTUDIOEVENTS`, `MAXSTUDIOPIVOTS`).
const MAX_EVENTS: usize = 1023;
const MAX_PIVOTS: usize = 255;
/// Largest transition node number (`xnode[100][100]`).
const MAX_NODE: i32 = 100;

/// A sequence on its way: frames on the final skeleton and the descriptor values.
struct Prepared {
    desc: GsSequence,
    /// Per blend, frames on the final skeleton.
    blends: Vec<Frames>,
    activity: i32,
    entry: i32,
    exit: i32,
    reversible: bool,
    span: FileSpan,
}

/// Builds bones, sequences, groups, transitions and hit boxes (`goldsrc.md` §8.4-8.7, §8.9-8.11).
/// Returns `None` when an error was reported.
///
/// Each animation's values ([`Anim::frames`], [`Anim::given`]) are let go once the last
/// sequence using it is prepared, so that a large model does not hold its animations twice
/// (the source values and the values on the final skeleton).
pub fn build_animation(
    model: &mut Model,
    geometry: &Geometry,
    diags: &mut Vec<Diagnostic>,
) -> Option<Animation> {
    let before = diags.iter().filter(|d| d.is_error()).count();

    // --- bones ------------------------------------------------------------------------------
    let nb = model.bones.len();
    let parents: Vec<i32> = model
        .bones
        .iter()
        .map(|b| b.parent.map_or(-1, |p| p.0 as i32))
        .collect();
    let mirror_ids: Vec<usize> = model.mirror_bones.iter().map(|(b, _)| b.index()).collect();
    let mut mirrored = vec![false; nb];
    for (i, b) in model.bones.iter().enumerate() {
        let inherited = b
            .parent
            .filter(|p| p.index() < i)
            .and_then(|p| mirrored.get(p.index()).copied())
            .unwrap_or(false);
        if let Some(m) = mirrored.get_mut(i) {
            *m = mirror_ids.contains(&i) || inherited;
        }
    }
    let mut bones: Vec<GsBone> = Vec::with_capacity(nb);
    for (i, b) in model.bones.iter().enumerate() {
        if b.name.len() >= NAME_FIELD {
            diags.push(
                Diagnostic::new(
                    Code::GsBoneNameTooLong,
                    format!(
                        "bone name \"{}\" is {} bytes long, GoldSrc stores at most 31",
                        b.name,
                        b.name.len()
                    ),
                    b.span,
                    "this bone",
                )
                .with_note("a GoldSrc bone name is stored in 32 bytes ending with a NUL; Valve's tool would run it into the next field")
                .with_note("help: rename the bone in the SMD files, or with `$renamebone`"),
            );
        }
        let sign = if mirrored.get(i).copied().unwrap_or(false) {
            -1.0
        } else {
            1.0
        };
        let p = b.rest.pos.map(|v| v * sign);
        let r = b.rest.rot.map(math::clip_angle);
        bones.push(GsBone {
            name: b.name.clone(),
            parent: parents.get(i).copied().unwrap_or(-1),
            bonecontroller: [-1; 6],
            value: [p[0], p[1], p[2], r[0], r[1], r[2]],
            scale: [0.0; 6],
        });
    }

    // --- controllers ------------------------------------------------------------------------
    for (i, c) in model.controllers.iter().enumerate() {
        match tables::controller_channel(&c.axis.value) {
            Some(ch) => {
                if let Some(slot) = bones
                    .get_mut(c.bone.index())
                    .and_then(|b| b.bonecontroller.get_mut(ch))
                {
                    *slot = i as i32;
                }
            }
            None => diags.push(
                Diagnostic::new(
                    Code::GsControllerType,
                    format!("a bone controller cannot drive `{}` in GoldSrc", c.axis.value),
                    c.axis.span.span(),
                    "not X, Y, Z, XR, YR or ZR",
                )
                .with_note("GoldSrc bone controllers move or turn one bone along one axis: X, Y, Z, XR, YR or ZR")
                .with_note("Valve's HL1 compiler accepts this type, then stops while writing and leaves an empty file"),
            ),
        }
    }

    // --- sequences --------------------------------------------------------------------------
    let defaults: Vec<([f32; 3], [f32; 3])> = bones
        .iter()
        .map(|b| {
            (
                [b.value[0], b.value[1], b.value[2]],
                [b.value[3], b.value[4], b.value[5]],
            )
        })
        .collect();
    let mut prepared: Vec<Prepared> = Vec::with_capacity(model.sequences.len());
    let mut uses = crate::ir::anim::UsesLeft::count(
        model.animations.len(),
        model
            .sequences
            .iter()
            .flat_map(|s| &s.animations)
            .map(|a| a.index()),
    );
    for s in 0..model.sequences.len() {
        let Some(seq) = model.sequences.get(s) else {
            break;
        };
        if let Some(p) = prepare_sequence(model, seq, &defaults, diags) {
            prepared.push(p);
        }
        let used: Vec<usize> = seq.animations.iter().map(|a| a.index()).collect();
        for a in used {
            if let (true, Some(anim)) = (uses.used(a), model.animations.get_mut(a)) {
                anim.frames = Vec::new();
                anim.given = Vec::new();
            }
        }
    }

    // --- scales (§8.7) ----------------------------------------------------------------------
    // Each channel's range over every frame of every blend of every sequence, in one pass over
    // the frames (each channel still sees its values in the same order).
    let start = |k: usize| {
        if k < 3 {
            (-128.0f32, 128.0f32)
        } else {
            ((-PI / 8.0) as f32, (PI / 8.0) as f32)
        }
    };
    let mut ranges: Vec<[(f32, f32); 6]> = vec![std::array::from_fn(start); nb];
    for p in &prepared {
        for fr in &p.blends {
            // frame-major, bones within a frame (every blend is on the final skeleton of `nb`
            // bones, `frames::relink`): every channel sees its frames in order
            let per_frame = fr
                .pos
                .chunks_exact(nb.max(1))
                .zip(fr.rot.chunks_exact(nb.max(1)));
            for (pos, rot) in per_frame.take(fr.frames) {
                for (((bone, range), p), r) in bones.iter().zip(ranges.iter_mut()).zip(pos).zip(rot)
                {
                    let d = &bone.value;
                    let values = [
                        p[0] - d[0],
                        p[1] - d[1],
                        p[2] - d[2],
                        math::wrap_once(r[0] - d[3]),
                        math::wrap_once(r[1] - d[4]),
                        math::wrap_once(r[2] - d[5]),
                    ];
                    for ((minv, maxv), v) in range.iter_mut().zip(values) {
                        if v < *minv {
                            *minv = v;
                        }
                        if v > *maxv {
                            *maxv = v;
                        }
                    }
                }
            }
        }
    }
    for (bone, range) in bones.iter_mut().zip(&ranges) {
        for (k, &(minv, maxv)) in range.iter().enumerate() {
            bone.scale[k] = if minv < maxv {
                if -minv > maxv {
                    (f64::from(minv) / -32768.0) as f32
                } else {
                    maxv / 32767.0
                }
            } else {
                1.0 / 32.0
            };
        }
    }

    // --- sequence boxes, streams (§8.9, §8.7) -----------------------------------------------
    let verts = boxes::vertices(geometry);
    let bone_verts = boxes::BoneVerts::new(&verts);
    let encode = |p: &mut Prepared, scratch: &mut Scratch| {
        encode_sequence(p, &bones, &parents, &verts, &bone_verts, scratch)
    };
    // Sequences are independent here: a large model shares them among the spare cores (each
    // thread takes the next sequence; the diagnostics are put back in sequence order).
    // per frame: the box moves every vertex, the streams take every bone's six values
    let work: usize = prepared
        .iter()
        .flat_map(|p| &p.blends)
        .map(|f| f.frames)
        .sum::<usize>()
        * (verts.len() + 6 * nb);
    let threads = if work < PARALLEL_ENCODE_WORK {
        1
    } else {
        crate::threads::spare_threads(prepared.len())
    };
    let mut found: Vec<(usize, Diagnostic)> = Vec::new();
    if threads <= 1 {
        let mut scratch = Scratch::default();
        for (i, p) in prepared.iter_mut().enumerate() {
            if let Some(d) = encode(p, &mut scratch) {
                found.push((i, d));
            }
        }
    } else {
        let next = std::sync::Mutex::new(prepared.iter_mut().enumerate());
        let work = || {
            let mut scratch = Scratch::default();
            let mut out = Vec::new();
            loop {
                // a poisoned lock means another thread panicked: stop taking work
                let item = match next.lock() {
                    Ok(mut it) => it.next(),
                    Err(_) => None,
                };
                let Some((i, p)) = item else { break };
                if let Some(d) = encode(p, &mut scratch) {
                    out.push((i, d));
                }
            }
            out
        };
        std::thread::scope(|scope| {
            let others: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            found.extend(work());
            for t in others {
                found.extend(t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
        });
        found.sort_by_key(|(i, _)| *i);
    }
    diags.extend(found.into_iter().map(|(_, d)| d));

    // --- groups (§8.11) ---------------------------------------------------------------------
    let model_name = model
        .name
        .as_ref()
        .map_or_else(|| "model".to_string(), |n| n.value.clone());
    let explicit: Vec<String> = model
        .sequence_groups
        .iter()
        .map(|g| g.value.clone())
        .collect();
    let auto_limit = model
        .sequence_group_size
        .as_ref()
        .map(|s| i64::from(s.value) * 1024)
        .filter(|&l| l < 1024 * 1024);
    let seq_groups = if explicit.is_empty() {
        match auto_limit {
            Some(limit) => {
                let acts: Vec<i32> = prepared.iter().map(|p| p.activity).collect();
                let sizes: Vec<i64> = prepared
                    .iter()
                    .map(|p| {
                        let words: usize = p
                            .desc
                            .blends
                            .iter()
                            .flatten()
                            .flatten()
                            .map(|c| c.as_ref().map_or(0, Vec::len))
                            .sum();
                        2 * words as i64 + 12 * (p.desc.blends.len() * nb) as i64
                    })
                    .collect();
                let (gs, count) = groups::auto_groups(&acts, &sizes, limit);
                for (p, g) in prepared.iter_mut().zip(gs) {
                    p.desc.seqgroup = g;
                }
                let labels = vec![String::new(); count.saturating_sub(1)];
                groups::group_records(&labels, &model_name)
            }
            None => {
                for p in &mut prepared {
                    p.desc.seqgroup = 0;
                }
                groups::group_records(&[], &model_name)
            }
        }
    } else {
        groups::group_records(&explicit, &model_name)
    };

    // --- transitions (§8.10) ----------------------------------------------------------------
    let nodes: Vec<(i32, i32, bool)> = prepared
        .iter()
        .map(|p| (p.entry, p.exit, p.reversible))
        .collect();
    let transitions = groups::transitions(&nodes);

    // --- hit boxes (§8.9) -------------------------------------------------------------------
    let groups_of = boxes::hit_groups(model, &parents);
    let explicit_boxes: Vec<GsHitbox> = model
        .hitbox_sets
        .iter()
        .flat_map(|s| &s.boxes)
        .map(|h| GsHitbox {
            bone: h.bone.0 as i32,
            group: h.group,
            bbmin: h.min,
            bbmax: h.max,
        })
        .collect();
    let hitboxes = if explicit_boxes.is_empty() {
        let positions: Vec<[f32; 3]> = defaults.iter().map(|d| d.0).collect();
        boxes::auto_hitboxes(&verts, &parents, &positions, &groups_of)
    } else {
        explicit_boxes
    };

    let after = diags.iter().filter(|d| d.is_error()).count();
    if after > before {
        return None;
    }
    Some(Animation {
        bones,
        sequences: prepared.into_iter().map(|p| p.desc).collect(),
        seq_groups,
        transitions,
        hitboxes,
    })
}

/// Work (vertices moved and values encoded, over every frame) above which [`build_animation`]
/// encodes sequences on several threads: about a millisecond, ten times a thread's start.
const PARALLEL_ENCODE_WORK: usize = 1 << 19;

/// Buffers [`encode_sequence`] reuses from channel to channel.
#[derive(Default)]
struct Scratch {
    /// A bone's six channels' frame values, a channel's quantised values, and its words being
    /// encoded.
    columns: [Vec<f32>; 6],
    values: Vec<i16>,
    words: Vec<u16>,
}

/// The bounding box (§8.9) and the run-length streams (§8.7) of one prepared sequence, whose
/// values on the final skeleton are then let go; the error when the streams are too large.
fn encode_sequence(
    p: &mut Prepared,
    bones: &[GsBone],
    parents: &[i32],
    verts: &[(usize, [f32; 3])],
    bone_verts: &boxes::BoneVerts,
    scratch: &mut Scratch,
) -> Option<Diagnostic> {
    let Scratch {
        columns,
        values,
        words,
    } = scratch;
    let nb = bones.len();
    let (lo, hi) = boxes::sequence_box(&p.blends, parents, bone_verts);
    #[cfg(test)]
    boxes::tests::check(&p.blends, parents, verts, (lo, hi), &p.desc.label);
    #[cfg(not(test))]
    let _ = verts;
    p.desc.bbmin = lo;
    p.desc.bbmax = hi;
    let nblends = p.blends.len();
    let mut words_total: usize = 0;
    let mut too_large = false;
    for (q, fr) in p.blends.iter().enumerate() {
        let mut per_bone = Vec::with_capacity(nb);
        for (j, bone) in bones.iter().enumerate() {
            let mut channels: [Option<Vec<u16>>; 6] = Default::default();
            bone_channels(fr, j, columns);
            for ((k, ch), column) in channels.iter_mut().enumerate().zip(columns.iter()) {
                let scale = bone.scale[k];
                values.clear();
                let quantise = |x: f32| {
                    let v = channel_delta(x, k, bone.value[k]);
                    ((v / scale) as i32) as i16
                };
                match column.split_first() {
                    // the same value (bit for bit) in every frame: quantised once
                    Some((&x, rest)) if rest.iter().all(|y| y.to_bits() == x.to_bits()) => {
                        values.resize(column.len(), quantise(x));
                    }
                    _ => values.extend(column.iter().map(|&x| quantise(x))),
                }
                *ch = rle::encode_with(values, words);
                words_total += ch.as_ref().map_or(0, Vec::len);
            }
            // The distance from this bone's `mstudioanim_t` to the end of its values.
            let header = (nblends * nb) as i64 * 12;
            let here = (q * nb + j) as i64 * 12;
            if header + 2 * words_total as i64 - here > 65535 {
                too_large = true;
            }
            per_bone.push(channels);
        }
        p.desc.blends.push(per_bone);
    }
    // encoded: the values on the final skeleton are not needed again
    p.blends = Vec::new();
    too_large.then(|| {
        Diagnostic::new(
            Code::GsAnimationTooLarge,
            format!(
                "the animation data of sequence `{}` is too large for GoldSrc",
                p.desc.label
            ),
            p.span,
            "this sequence",
        )
        .with_note("GoldSrc finds each bone's values through 16-bit offsets, so the data of one sequence cannot reach more than 64 KiB past a bone's entry")
        .with_note("help: split the sequence, use fewer frames (`frame start end`) or fewer blends")
    })
}

/// The six channels of bone `j` (0..3 position, 3..6 rotation) in every frame into `out`:
/// `Frames::pos` and `Frames::rot` frame by frame, read down the columns (one pass over the
/// positions and one over the rotations, each frame's three values together).
fn bone_channels(fr: &Frames, j: usize, out: &mut [Vec<f32>; 6]) {
    // a bone or frame outside the values reads 0, as `Frames::pos` gives it
    for c in out.iter_mut() {
        c.clear();
        c.resize(fr.frames, 0.0);
    }
    if j >= fr.bones {
        return;
    }
    let [px, py, pz, rx, ry, rz] = out;
    for (values, [x, y, z]) in [(&fr.pos, [px, py, pz]), (&fr.rot, [rx, ry, rz])] {
        let rows = values.chunks_exact(fr.bones).map(|row| row.get(j));
        for (((v, x), y), z) in rows.zip(x.iter_mut()).zip(y.iter_mut()).zip(z.iter_mut()) {
            if let Some(v) = v {
                (*x, *y, *z) = (v[0], v[1], v[2]);
            }
        }
    }
}

/// Frame value `x` minus the bone default for channel `k` (0..3 position, 3..6 rotation, the
/// rotation difference wrapped once into [−π, π)), in float.
fn channel_delta(x: f32, k: usize, def: f32) -> f32 {
    if k < 3 {
        x - def
    } else {
        math::wrap_once(x - def)
    }
}

/// Which file bones of an animation are mirrored (`$mirrorbone` names them or their parent).
fn anim_mirrored(model: &Model, anim: &Anim) -> Vec<bool> {
    let mut out = vec![false; anim.file_bones.len()];
    if model.mirror_bones.is_empty() {
        return out;
    }
    for (i, b) in anim.file_bones.iter().enumerate() {
        let named = model.mirror_bones.iter().any(|(m, _)| {
            Some(*m) == b.bone
                || model
                    .bones
                    .get(m.index())
                    .is_some_and(|mb| mb.name == b.name)
        });
        let inherited = b
            .parent
            .and_then(|p| out.get(p as usize).copied())
            .unwrap_or(false);
        if let Some(o) = out.get_mut(i) {
            *o = named || inherited;
        }
    }
    out
}

/// The frames of `anim` that Valve's tool keeps: SMD times up to 2047, trimmed to the first
/// and last time that gives a value. `None` when no frame is left.
fn kept_frames(anim: &Anim) -> Option<(usize, usize)> {
    let nb = anim.file_bones.len();
    let last_ok = usize::try_from(LAST_FRAME - i64::from(anim.first_time) + 1).unwrap_or(0);
    let mut count = anim.num_frames.min(last_ok);
    let has_data = |f: usize| {
        (0..nb).any(|b| {
            anim.given
                .get(f * nb + b)
                .copied()
                .unwrap_or(nb == 0 || anim.given.is_empty())
        })
    };
    while count > 0 && !has_data(count - 1) {
        count -= 1;
    }
    (count > 0).then_some((0, count))
}

fn prepare_sequence(
    model: &Model,
    seq: &Seq,
    defaults: &[([f32; 3], [f32; 3])],
    diags: &mut Vec<Diagnostic>,
) -> Option<Prepared> {
    let name = &seq.name.value;
    let name_span = seq.name.span.span();
    if name.len() >= NAME_FIELD {
        diags.push(
            Diagnostic::new(
                Code::GsSequenceNameTooLong,
                format!(
                    "sequence name `{name}` is {} bytes long, GoldSrc stores at most 31",
                    name.len()
                ),
                name_span,
                "this name",
            )
            .with_note("the game looks sequences up by name, and GoldSrc keeps a sequence name in 32 bytes ending with a NUL")
            .with_note("help: use a shorter name"),
        );
    }
    let anims: Vec<&Anim> = seq
        .animations
        .iter()
        .filter_map(|&a| model.animation(a))
        .collect();
    let first = *anims.first()?;

    // Frames of every blend.
    let mut blends: Vec<Blend> = Vec::with_capacity(anims.len());
    let mut first_times: Vec<i32> = Vec::new();
    for a in &anims {
        let Some((start, count)) = kept_frames(a) else {
            diags.push(
                Diagnostic::new(
                    Code::GsNoFrames,
                    format!(
                        "animation file `{}` of sequence `{name}` has no frame GoldSrc can use",
                        a.path
                            .file_name()
                            .map_or_else(|| a.name.value.clone(), |f| f.to_string_lossy().into_owned())
                    ),
                    a.span,
                    "no frame between 0 and 2047",
                )
                .with_note(format!(
                    "its frames start at time {}; Valve's HL1 compiler reads times 0 to 2047 only (and crashes on an animation without frames)",
                    a.first_time
                )),
            );
            return None;
        };
        blends.push(frames::grab(a, &anim_mirrored(model, a), start, count));
        first_times.push(a.first_time);
    }
    let numframes = blends.first().map_or(0, |b| b.frames.frames);
    if blends.iter().any(|b| b.frames.frames != numframes) {
        let counts: Vec<String> = blends.iter().map(|b| b.frames.frames.to_string()).collect();
        diags.push(
            Diagnostic::new(
                Code::GsBlendFrames,
                format!(
                    "the blends of sequence `{name}` have different numbers of frames ({})",
                    counts.join(", ")
                ),
                name_span,
                "this sequence",
            )
            .with_note(format!(
                "the sequence has {numframes} frames, from its first animation; frames a blend lacks are zero"
            )),
        );
    }

    let mut motion = 0i32;
    for m in &first.motion {
        if let Some(f) = tables::motion_flag(&m.value) {
            motion |= f;
        }
    }
    let looping = seq
        .flags
        .iter()
        .any(|f| f.value.eq_ignore_ascii_case("loop"))
        || first.looping;
    if looping {
        frames::force_loop(&mut blends, numframes, motion);
    }

    // Events (§8.5).
    let start_time = first_times.first().copied().unwrap_or(0);
    let end_time = start_time + numframes as i32 - 1;
    let mut events = Vec::with_capacity(seq.events.len());
    if seq.events.len() > MAX_EVENTS {
        let at = seq
            .events
            .get(MAX_EVENTS)
            .map_or(name_span, |e| e.id.span.span());
        diags.push(
            Diagnostic::new(
                Code::GsTooManyEvents,
                format!(
                    "sequence `{name}` has {} events, GoldSrc allows at most {MAX_EVENTS}",
                    seq.events.len()
                ),
                at,
                "one event too many",
            )
            .with_note("Valve's HL1 compiler stops here without writing anything"),
        );
    }
    for e in &seq.events {
        let id = match tables::atoi(&e.id.value) {
            Some(v) => v,
            None => {
                diags.push(
                    Diagnostic::new(
                        Code::GsEventId,
                        format!("event id `{}` is not a number", e.id.value),
                        e.id.span.span(),
                        "expected a number",
                    )
                    .with_note("GoldSrc events are numbers (for example 1004 plays a sound); Valve's HL1 compiler would store 0"),
                );
                0
            }
        };
        let mut frame = e.frame;
        if frame < start_time || frame > end_time {
            let (edge, word, bound) = if frame < start_time {
                (start_time, "before the first", start_time)
            } else {
                (end_time, "after the last", end_time)
            };
            diags.push(
                Diagnostic::new(
                    Code::GsEventClamped,
                    format!("sequence `{name}` has an event at frame {frame}, {word} frame ({bound})"),
                    e.id.span.span(),
                    format!("moved to frame {edge}"),
                )
                .with_note(format!(
                    "the animation has frames {start_time} to {end_time}; Valve's HL1 compiler moves the event to the nearest one"
                )),
            );
            frame = edge;
        }
        events.push(GsEvent {
            frame: frame - start_time,
            event: id,
            options: e.options.clone().unwrap_or_default(),
        });
    }
    if seq.pivots.len() > MAX_PIVOTS {
        diags.push(
            Diagnostic::new(
                Code::GsTooManyPivots,
                format!(
                    "sequence `{name}` has {} pivots, GoldSrc allows at most {MAX_PIVOTS}",
                    seq.pivots.len()
                ),
                name_span,
                "this sequence",
            )
            .with_note("Valve's HL1 compiler stops at the next one without writing anything"),
        );
    }
    let pivots: Vec<GsPivot> = seq
        .pivots
        .iter()
        .map(|p| GsPivot {
            start: p[1].wrapping_sub(start_time),
            end: p[2].wrapping_sub(start_time),
        })
        .collect();

    // Motion extraction (§8.6).
    let linear = frames::extract_motion(&mut blends, numframes, motion);

    // Mapping onto the final skeleton: the first blend's node list for every blend.
    let mut map: Vec<Option<usize>> = vec![None; defaults.len()];
    for (k, b) in first.file_bones.iter().enumerate() {
        if let Some(slot) = b.bone.and_then(|id| map.get_mut(id.index())) {
            *slot = Some(k);
        }
    }
    let relinked = frames::relink(&blends, &map, defaults, numframes);

    // Descriptor values.
    let activity = seq
        .activity
        .as_ref()
        .map_or(0, |a| activity_number(&a.name.value));
    let actweight = if activity != 0 {
        seq.activity.as_ref().map_or(0, |a| a.weight)
    } else {
        0
    };
    let (mut blendtype, mut blendstart, mut blendend) = ([0i32; 2], [0.0f32; 2], [0.0f32; 2]);
    blendend[0] = 1.0;
    if let Some(b) = seq.blends.first() {
        blendtype[0] = motion_flag(&b.param.value).unwrap_or(-1);
        blendstart[0] = b.min;
        blendend[0] = b.max;
    }
    let (entry, exit, reversible) = node_numbers(seq, diags);
    let desc = GsSequence {
        label: name.clone(),
        fps: first.fps,
        flags: i32::from(looping),
        activity,
        actweight,
        events,
        numframes: numframes as i32,
        pivots,
        motiontype: motion,
        linearmovement: linear,
        bbmin: [0.0; 3],
        bbmax: [0.0; 3],
        blendtype,
        blendstart,
        blendend,
        seqgroup: seq.group,
        entrynode: entry,
        exitnode: exit,
        nodeflags: i32::from(reversible),
        blends: Vec::new(),
    };
    Some(Prepared {
        desc,
        blends: relinked,
        activity,
        entry,
        exit,
        reversible,
        span: seq.span,
    })
}

/// `node n` (entry = exit = n) or `transition`/`rtransition entry exit`, checked against the
/// transition table's range.
fn node_numbers(seq: &Seq, diags: &mut Vec<Diagnostic>) -> (i32, i32, bool) {
    let mut check = |s: &crate::diag::Spanned<String>, needs_node: bool| -> i32 {
        let v = tables::atoi(&s.value);
        let ok = v.is_some_and(|v| (0..=MAX_NODE).contains(&v) && (!needs_node || v > 0));
        if !ok {
            diags.push(
                Diagnostic::new(
                    Code::GsTransitionNode,
                    format!("node `{}` is not a transition node number", s.value),
                    s.span.span(),
                    if needs_node {
                        "expected a number from 1 to 100"
                    } else {
                        "expected a number from 0 to 100"
                    },
                )
                .with_note("GoldSrc numbers transition nodes 1 to 100 (0: no node); Valve's HL1 compiler writes outside its table for other numbers"),
            );
            return 0;
        }
        v.unwrap_or(0)
    };
    match (&seq.transition, &seq.node) {
        (Some(t), _) => {
            let differ = t.entry.value.trim() != t.exit.value.trim();
            let e = check(&t.entry, differ);
            let x = check(&t.exit, differ);
            (e, x, t.reversible)
        }
        (None, Some(n)) => {
            let v = check(n, false);
            (v, v, false)
        }
        (None, None) => (0, 0, false),
    }
}
