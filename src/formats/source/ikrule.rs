//! IK rules of Source animations (`ikrule`; `source-animation.md` §3.4 and §6.8;
//! `qc-source.md` §4.5): what a chain does during an animation, with the error the engine
//! corrects it by, as the 2006 SDK's compiler works them out (alliedmodders/hl2sdk, branch
//! episode1, `utils/studiomdl`: `Option_IKRule` in `studiomdl.cpp`; `ProcessIKRules` and
//! `CompressIKErrors` in `simplify.cpp`; `WriteIkErrors` in `write.cpp`). The engine side is
//! source-sdk-2013 `public/bone_setup.cpp` (`Studio_IKSequenceError`).
//!
//! - Frames: `range start peak tail end` (a `.` word leaves one unset, and the missing ones are
//!   made up from the chain's neighbouring rules), `contact` (default: the peak). Rules that
//!   wrap past the last frame of a looping animation count on into the next loop.
//! - Errors, one per frame from start to end: `touch` the chain's end bone in the named bone's
//!   space; `attachment` the end bone against the pose it had at the contact frame (carried by
//!   the animation's extracted motion); `footstep` the end bone against its footfall (the
//!   chain's `center` at the contact frame, on the `floor`), blended back to the bone's own
//!   place before the peak and after the tail. `release` and `unlatch` have zero errors.
//! - The poses come from the animation's frames (`CalcBoneTransforms`; a frame past the end
//!   of an animation that does not loop is an error), from the file's frames before the
//!   animation's commands with `usesource` (`BuildRawTransforms`, wrapping), or with
//!   `usesequence` from the pose of the first sequence that plays the animation, its bone
//!   weights and layers applied (`CalcSeqTransforms`, wrapping; [`Sequences`]).
//! - Each error channel (x, y, z in inches, then Euler x, y, z in radians) is scaled to its
//!   largest value, at least 128 inches or π/8, and stored as the bone animations are (§4.6).
//! - An animation that is not a delta and has no `noautoik` gets a `release` rule, without error
//!   data, for every chain it moves (end bone weight above 0) and has no rule for.
//! - A sequence's blends must have the same rules (type, chain, slot) in the same order.

use crate::diag::{Code, Diagnostic, FileSpan};
use crate::ir::model::{Anim, Model};
use crate::ir::written::AnimCommand;

use super::anim::{Context, DELTA, LOOPING, POST};
use super::animcodec::{rle_stream, LocalPose};
use super::math::{self, M34};
use super::model::{
    PAnim, PIkRule, PSeq, AL_NOBLEND, AL_POSE, AL_SPLINE, AL_XFADE, IK_ATTACHMENT, IK_GROUND,
    IK_RELEASE, IK_SELF, IK_UNLATCH,
};

/// One frame of an IK rule's error: position (inches) and Euler angles (radians).
pub type IkErrorFrame = ([f32; 3], [f32; 3]);

/// The most frames one rule's error may cover (the SDK's own limit on animation frames,
/// `MAXSTUDIOANIMFRAMES`, is far below; this only keeps a wild `range` from exhausting memory).
const MAX_ERROR_FRAMES: usize = 65_536;

/// `MAXSTUDIOIKRULES` of the 2006 SDK's `studiomdl.h`.
const MAX_RULES: usize = 64;

/// A rule as `Option_IKRule` leaves it, frames still unresolved (`-1` = unset).
struct Rule {
    chain: usize,
    kind: i32,
    slot: i32,
    bone: i32,
    bone_name: Option<crate::diag::Spanned<String>>,
    attachment: String,
    height: f32,
    radius: f32,
    floor: f32,
    pos: [f32; 3],
    q: [f32; 4],
    /// start, peak, tail, end, contact
    frames: [i32; 5],
    use_sequence: bool,
    use_source: bool,
    span: FileSpan,
}

/// Reads the `ikrule` commands of animation `a`; `None` after an error.
fn read_rules(a: &Anim, cx: &Context, diags: &mut Vec<Diagnostic>) -> Option<Vec<Rule>> {
    let mut rules = Vec::new();
    let mut ok = true;
    for c in a
        .commands
        .iter()
        .filter(|c| c.keyword.value.eq_ignore_ascii_case("ikrule"))
    {
        match read_rule(c, cx, diags) {
            Some(r) => rules.push(r),
            None => ok = false,
        }
    }
    ok.then_some(rules)
}

fn read_rule(c: &AnimCommand, cx: &Context, diags: &mut Vec<Diagnostic>) -> Option<Rule> {
    let span = c.keyword.span.span();
    let Some(chain_name) = c.args.first() else {
        diags.push(bad(span, "`ikrule` needs an IK chain name".into()));
        return None;
    };
    let Some(chain) = cx
        .ik_chains
        .iter()
        .position(|k| k.name.eq_ignore_ascii_case(&chain_name.value))
    else {
        diags.push(super::anim::unknown_name(
            "IK chain",
            &chain_name.value,
            chain_name.span.span(),
            cx.ik_chains.iter().map(|k| k.name.as_str()),
        ));
        return None;
    };
    let ch = &cx.ik_chains[chain];
    let mut r = Rule {
        chain,
        kind: 0,
        slot: chain as i32,
        bone: 0,
        bone_name: None,
        attachment: String::new(),
        height: 0.0,
        radius: 0.0,
        floor: 0.0,
        pos: [0.0; 3],
        q: [0.0; 4],
        frames: [0, 0, 0, 0, -1],
        use_sequence: false,
        use_source: false,
        span,
    };
    let mut i = 1;
    if let Some(ty) = c.args.get(1) {
        i = 2;
        match ty.value.to_ascii_lowercase().as_str() {
            "touch" => {
                r.kind = IK_SELF;
                r.bone_name = c.args.get(2).cloned();
                i = 3;
            }
            "footstep" => {
                r.kind = IK_GROUND;
                r.height = ch.height;
                r.floor = ch.floor;
                r.radius = ch.radius;
            }
            "attachment" => {
                r.kind = IK_ATTACHMENT;
                r.attachment = c.args.get(2).map(|a| a.value.clone()).unwrap_or_default();
                i = 3;
            }
            "release" => r.kind = IK_RELEASE,
            "unlatch" => r.kind = IK_UNLATCH,
            _ => {
                diags.push(
                    Diagnostic::new(
                        Code::SourceIkRuleNoType,
                        format!("unknown IK rule type `{}`; the rule is written with type 0", ty.value),
                        ty.span.span(),
                        "not touch, footstep, attachment, release or unlatch",
                    )
                    .with_note("Valve's compiler takes this word as the type and writes a rule of no type, which the engine ignores; mdlc does the same"),
                );
            }
        }
    }
    let args = &c.args;
    let mut ok = true;
    let mut f = |k: usize, diags: &mut Vec<Diagnostic>| -> f32 {
        match args.get(k).map(|v| (v, v.value.trim().parse::<f32>())) {
            Some((_, Ok(x))) if x.is_finite() => x,
            Some((v, _)) => {
                diags.push(bad(v.span.span(), format!("`{}` is not a number", v.value)));
                ok = false;
                0.0
            }
            None => {
                diags.push(bad(
                    span,
                    "the IK rule ends before its option's value".into(),
                ));
                ok = false;
                0.0
            }
        }
    };
    while let Some(w) = args.get(i) {
        let word = w.value.to_ascii_lowercase();
        i += 1;
        match word.as_str() {
            "height" => r.height = f(i, diags),
            "floor" => r.floor = f(i, diags),
            "pad" => r.radius = f(i, diags) / 2.0,
            "radius" => r.radius = f(i, diags),
            "target" => r.slot = f(i, diags) as i32,
            "contact" => r.frames[4] = frame(f(i, diags)),
            "range" => {
                for k in 0..4 {
                    r.frames[k] = match args.get(i + k) {
                        Some(v) if v.value.starts_with('.') => -1,
                        _ => frame(f(i + k, diags)),
                    };
                }
            }
            "fakeorigin" => {
                r.pos = [f(i, diags), f(i + 1, diags), f(i + 2, diags)];
                r.bone = -1;
            }
            "fakerotate" => {
                // a QAngle (pitch, yaw, roll in degrees) as `AngleQuaternion` takes it
                let (p, y, ro) = (f(i, diags), f(i + 1, diags), f(i + 2, diags));
                r.q = math::euler_quat([ro.to_radians(), p.to_radians(), y.to_radians()]);
                r.bone = -1;
            }
            "usesequence" => (r.use_sequence, r.use_source) = (true, false),
            "usesource" => (r.use_sequence, r.use_source) = (false, true),
            "bone" => {
                // Valve's compiler stores the word itself as the bone's name (`qc-source.md`
                // §4.5); mdlc reads the name that follows, which is what the option means
                r.bone_name = args.get(i).cloned();
            }
            _ => {}
        }
        i += match word.as_str() {
            "height" | "floor" | "pad" | "radius" | "target" | "contact" | "bone" => 1,
            "range" => 4,
            "fakeorigin" | "fakerotate" => 3,
            _ => 0,
        };
    }
    ok.then_some(r)
}

/// `ikfixup chain type [options]` (2006 SDK `fixupIKErrors`): in animation `pa` the chain's end is
/// moved, frame by frame over the rule's range, toward where it is at the rule's contact frame
/// (carried along by the extracted motion), the chain solved (`Studio_SolveIK`) and its three
/// links written back (`solveBone`). Only `footstep` rules move anything; the SDK's code for
/// `touch` is compiled out, and the other types have none.
///
/// Done as the SDK does it, quirks included: with no `range` the rule covers the whole
/// animation; each frame's weight comes from `IKRuleWeight` with the cycle taken as
/// `frame / (frames − 1)` in integer arithmetic (0, or 1 on the last frame and past it) and
/// the range's frames compared with it as if they were cycles. So without `range` the end is
/// held fully on every frame; a `range` starting at frame 0 or later than 1 leaves the frames
/// as they are (weight 0) except where a cycle of 1 falls inside it. The delta of a delta
/// animation is applied to frame 0 of the first animation, as `CalcBoneTransforms` does; a
/// frame the rule reaches past the end of an animation that does not loop is an error there
/// ("requested out of range frame") and E0625 here.
pub(super) fn fixup(
    pa: &mut PAnim,
    base: &[LocalPose],
    c: &AnimCommand,
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(r) = read_rule(c, cx, diags) else {
        return;
    };
    let n = pa.num_frames as i32;
    let last = n - 1;
    let [start, mut peak, mut tail, mut end, mut contact] = r.frames;
    if start == 0 && peak == 0 && tail == 0 && end == 0 {
        tail = last;
        end = last;
    }
    if peak < start {
        peak += last;
    }
    if tail < peak {
        tail += last;
    }
    if end < tail {
        end += last;
    }
    if contact == -1 {
        contact = peak;
    }
    let mut count = end - start + 1;
    if end >= n {
        count += 2;
    }
    if r.kind != IK_GROUND || n < 1 {
        return;
    }
    if count > MAX_ERROR_FRAMES as i32 {
        diags.push(
            Diagnostic::new(
                Code::SourceAnimLimit,
                format!(
                    "an `ikfixup` of animation `{}` covers {count} frames; mdlc allows at most {MAX_ERROR_FRAMES}",
                    pa.name
                ),
                r.span,
                "this command",
            )
            .with_note("its `range` reaches far past the animation's frames"),
        );
        return;
    }
    let Some(ch) = cx.ik_chains.get(r.chain) else {
        return;
    };
    let [Ok(thigh), Ok(knee), Ok(foot)] = ch.bones.map(usize::try_from) else {
        return;
    };
    let nb = cx.bones.len();
    // `CalcBoneTransforms`: a looping animation wraps, another must hold the frame
    let world_at = |pa: &PAnim, f: i32| frame_world(pa, base, f, cx);
    let out_of_range = |f: i32| {
        bad(
            r.span,
            format!(
                "`ikfixup` reaches frame {f} of animation with {n} frames, which does not loop"
            ),
        )
    };
    let Some(at_contact) = world_at(pa, contact) else {
        diags.push(out_of_range(contact));
        return;
    };
    let Some(footfall) = at_contact.get(foot).map(|m| [m[0][3], m[1][3], m[2][3]]) else {
        return;
    };
    let weight = |cycle: f32| {
        let (s, p, t, e) = (start as f32, peak as f32, tail as f32, end as f32);
        let cycle = if e > 1.0 && cycle < s {
            cycle + 1.0
        } else {
            cycle
        };
        let v = if cycle < s {
            return 0.0;
        } else if cycle < p {
            (cycle - s) / (p - s)
        } else if cycle < t {
            return 1.0;
        } else if cycle < e {
            1.0 - (cycle - t) / (e - t)
        } else {
            0.0
        };
        smooth(v)
    };
    for k in 0..count.max(0) {
        let f = k + start;
        let Some(mut world) = world_at(pa, f) else {
            diags.push(out_of_range(f));
            return;
        };
        // integer division, as the SDK's `(k + pRule->start) / (panim->numframes - 1)`
        let cycle = if n <= 1 { 0.0 } else { (f / last) as f32 };
        let s = weight(cycle);
        let Some(orig) = world.get(foot).map(|m| [m[0][3], m[1][3], m[2][3]]) else {
            return;
        };
        let held = math::add(footfall, movement(pa, f, contact));
        let pos = math::add(math::scale(held, s), math::scale(orig, 1.0 - s));
        super::iksolve::solve_ik(thigh, knee, foot, pos, &mut world);
        // `solveBone` writes frame `f % frames`
        let Ok(g) = usize::try_from(f.rem_euclid(n)) else {
            return;
        };
        for b in [thigh, knee, foot] {
            let local = match cx.bones.get(b).and_then(|x| x.parent) {
                Some(p) => math::mul(&math::invert(&world[p]), &world[b]),
                None => world[b],
            };
            if let Some(slot) = pa.frames.get_mut(g * nb + b) {
                *slot = super::anim::decompose(&local);
            }
        }
    }
}

/// A frame number as Valve's compiler reads it (`atoi`), kept within ±1,000,000 so that frame
/// arithmetic cannot overflow (no animation has that many frames).
fn frame(x: f32) -> i32 {
    (x as i32).clamp(-1_000_000, 1_000_000)
}

fn bad(span: FileSpan, message: String) -> Diagnostic {
    Diagnostic::new(Code::SourceIkRuleInvalid, message, span, "in this IK rule")
}

/// The other rule of the same chain before (`step` = -1) or after (+1) rule `j`, cyclically
/// (`FindPrevIKRule`, `FindNextIKRule`); `j` itself when there is none.
fn neighbour(rules: &[Rule], j: usize, step: isize) -> usize {
    let n = rules.len() as isize;
    for i in 1..n {
        let k = (j as isize + step * i).rem_euclid(n) as usize;
        if rules[k].chain == rules[j].chain {
            return k;
        }
    }
    j
}

/// Where a rule of a target slot starts when the one before it (cyclically) on the same
/// target ends at `tail` and it peaks at `peak`: half way round from the middle of the gap, as
/// `ProcessIKRules` makes it up (`m` is `numframes - 1`, at least 1).
fn handover(peak: i32, tail: i32, last: i32, m: i32) -> i32 {
    let mid = if peak < tail {
        peak + (tail - peak) / 2
    } else {
        peak + (tail - peak + last) / 2
    };
    (mid + (last + 1) / 2) % m
}

/// `ProcessIKRules`' frame rules, in place; `last` is `numframes - 1`.
fn resolve_frames(rules: &mut [Rule], j: usize, last: i32) {
    let m = last.max(1); // the SDK divides by numframes - 1; a one-frame animation has none
    let [s, p, t, e, _] = &mut rules[j].frames;
    if *s == 0 && *p == 0 && *t == 0 && *e == 0 {
        *t = last;
        *e = last;
    }
    if *s != -1 && *p == -1 && *t == -1 && *e != -1 {
        *p = (*s + *e) / 2;
        *t = (*s + *e) / 2;
    }
    if *s != -1 && *p == -1 && *t != -1 {
        *p = (*s + *t) / 2;
    }
    if *p != -1 && *t == -1 && *e != -1 {
        *t = (*p + *e) / 2;
    }
    if *p == -1 {
        *s = 0;
        *p = 0;
    }
    if *t == -1 {
        *t = last;
        *e = last;
    }
    if rules[j].frames[4] == -1 {
        rules[j].frames[4] = rules[j].frames[1];
    }
    if rules[j].frames[0] == -1 {
        let pi = neighbour(rules, j, -1);
        let (peak, prev_tail) = (rules[j].frames[1], rules[pi].frames[2]);
        if rules[pi].slot == rules[j].slot {
            let start = handover(peak, prev_tail, last, m);
            rules[j].frames[0] = start;
            rules[pi].frames[3] = (start + last) % m;
        } else {
            rules[j].frames[0] = prev_tail;
            rules[pi].frames[3] = peak;
        }
    }
    if rules[j].frames[3] == -1 {
        let ni = neighbour(rules, j, 1);
        let (tail, next_peak) = (rules[j].frames[2], rules[ni].frames[1]);
        if rules[ni].slot == rules[j].slot {
            let start = handover(next_peak, tail, last, m);
            rules[ni].frames[0] = start;
            rules[j].frames[3] = (start + last) % m;
        } else {
            rules[ni].frames[0] = tail;
            rules[j].frames[3] = next_peak;
        }
    }
    let [s, p, t, e, c] = &mut rules[j].frames;
    if *p < *s {
        *p += last;
    }
    if *t < *p {
        *t += last;
    }
    if *e < *t {
        *e += last;
    }
    if *c < *s {
        *c += last;
    }
}

/// Model-space bone matrices of frame `frame` of `anim` (`CalcBoneTransforms`): looping
/// animations wrap, a delta is applied on `base` (frame 0 of the first animation) with its
/// weights; `None` when the frame is outside a non-looping animation.
pub(super) fn frame_world(
    anim: &PAnim,
    base: &[LocalPose],
    frame: i32,
    cx: &Context,
) -> Option<Vec<M34>> {
    let n = anim.num_frames as i32;
    let mut f = frame;
    if anim.flags & LOOPING != 0 && n > 1 {
        while f >= n - 1 {
            f -= n - 1;
        }
    }
    if f < 0 || f >= n {
        return None;
    }
    let nb = cx.bones.len();
    let poses = anim.frames.get(f as usize * nb..(f as usize + 1) * nb)?;
    Some(pose_world(
        poses,
        (anim.flags & DELTA != 0).then_some((&anim.weights[..], base)),
        cx,
    ))
}

/// Model-space bone matrices of one frame's local poses; with `delta` (the animation's bone
/// weights and the base animation's frames), the poses are added to the base's frame 0.
pub(super) fn pose_world(
    poses: &[LocalPose],
    delta: Option<(&[f32], &[LocalPose])>,
    cx: &Context,
) -> Vec<M34> {
    use super::anim::quat;
    chain_world(cx, |k| {
        let own = poses.get(k).copied().unwrap_or_default();
        match delta {
            None => math::from_euler(own.rot, own.pos),
            Some((weights, base)) => {
                let b = base.get(k).copied().unwrap_or_default();
                let w = weights.get(k).copied().unwrap_or(1.0);
                let q = quat::ma(math::euler_quat(b.rot), w, math::euler_quat(own.rot));
                math::from_euler(quat::euler(q), math::add(b.pos, math::scale(own.pos, w)))
            }
        }
    })
}

/// Model-space matrices of the plan's bones from each bone's local matrix, parents first.
fn chain_world(cx: &Context, local: impl Fn(usize) -> M34) -> Vec<M34> {
    let mut world: Vec<M34> = Vec::with_capacity(cx.bones.len());
    for (k, bone) in cx.bones.iter().enumerate() {
        let local = local(k);
        let w = match bone.parent.and_then(|p| world.get(p)) {
            Some(pw) => math::mul(pw, &local),
            None => local,
        };
        world.push(w);
    }
    world
}

/// Where the extracted motion has carried the root by frame `f` (`calcPosition`).
fn position(a: &PAnim, f: i32) -> [f32; 3] {
    let n = a.num_frames as i32;
    if a.movements.is_empty() || n == 1 {
        return [0.0; 3];
    }
    let mut f = f;
    let mut loops = 0;
    while f >= n - 1 {
        loops += 1;
        f -= n - 1;
    }
    let mut prev_frame = 0.0f32;
    let mut prev_pos = [0.0f32; 3];
    for m in &a.movements {
        if m.endframe >= f {
            let t = (f as f32 - prev_frame) / (m.endframe as f32 - prev_frame);
            let d = m.v0 * t + 0.5 * (m.v1 - m.v0) * t * t;
            let mut p = math::add(prev_pos, math::scale(m.vector, d));
            if loops != 0 {
                if let Some(last) = a.movements.last() {
                    p = math::add(p, math::scale(last.position, loops as f32));
                }
            }
            return p;
        }
        prev_frame = m.endframe as f32;
        prev_pos = m.position;
    }
    prev_pos
}

/// How far the extracted motion moves between frames `from` and `to` (`calcMovement`).
fn movement(a: &PAnim, from: i32, to: i32) -> [f32; 3] {
    math::sub(position(a, to), position(a, from))
}

/// `3s² − 2s³`.
fn smooth(s: f32) -> f32 {
    3.0 * s * s - 2.0 * s * s * s
}

/// The IK rules of every animation, and each sequence's rule count (§6.8). `seq_anims` lists
/// each sequence's blend animations; `seq_spans` where each sequence is.
pub fn build(
    model: &Model,
    anims: &mut [PAnim],
    seq_anims: &[(Vec<usize>, FileSpan)],
    sequences: &Sequences,
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<i32>> {
    let errors_before = diags.iter().filter(|d| d.is_error()).count();
    let base_index = 0usize;
    for (ai, a) in model.animations.iter().enumerate() {
        if ai >= anims.len() {
            break;
        }
        let Some(mut rules) = read_rules(a, cx, diags) else {
            continue;
        };
        if rules.len() > MAX_RULES {
            diags.push(Diagnostic::new(
                Code::SourceAnimLimit,
                format!(
                    "animation `{}` has {} IK rules; Source allows at most {MAX_RULES}",
                    a.name.value,
                    rules.len()
                ),
                rules[MAX_RULES].span,
                "one too many",
            ));
            continue;
        }
        let last = anims[ai].num_frames as i32 - 1;
        for j in 0..rules.len() {
            resolve_frames(&mut rules, j, last);
        }
        let mut out = Vec::with_capacity(rules.len() + cx.ik_chains.len());
        for r in &mut rules {
            if let Some(rule) = errors_of(a, ai, base_index, r, anims, sequences, cx, diags) {
                out.push(rule);
            }
        }
        // auto release: chains the animation moves and has no rule for
        let no_auto = a
            .flags
            .iter()
            .rev()
            .find(|f| f.value == "noautoik" || f.value == "autoik")
            .is_some_and(|f| f.value == "noautoik");
        let pa = &anims[ai];
        if pa.flags & DELTA == 0 && !no_auto {
            for (ci, ch) in cx.ik_chains.iter().enumerate() {
                let moved = usize::try_from(ch.bones[2])
                    .ok()
                    .and_then(|b| pa.weights.get(b))
                    .is_some_and(|&w| w > 0.0);
                if moved && !rules.iter().any(|r| r.chain == ci) {
                    out.push(PIkRule {
                        index: 0,
                        kind: IK_RELEASE,
                        chain: ci as i32,
                        bone: 0,
                        slot: ci as i32,
                        height: 0.0,
                        radius: 0.0,
                        floor: 0.0,
                        pos: [0.0; 3],
                        q: [0.0; 4],
                        frames: [0, 0, last, last, 0],
                        attachment: String::new(),
                        error: None,
                    });
                }
            }
        }
        anims[ai].ikrules = out;
    }
    if diags.iter().filter(|d| d.is_error()).count() > errors_before {
        return None;
    }
    // sequences: the largest count; blends must agree; rules are numbered
    let mut counts = Vec::with_capacity(seq_anims.len());
    for (ids, span) in seq_anims {
        let count = ids
            .iter()
            .filter_map(|&i| anims.get(i))
            .map(|a| a.ikrules.len())
            .max()
            .unwrap_or(0);
        counts.push(count as i32);
        let Some(first) = ids.first().and_then(|&i| anims.get(i)) else {
            continue;
        };
        for &i in ids {
            let Some(other) = anims.get(i) else { continue };
            let same = first.ikrules.len() == other.ikrules.len()
                && first
                    .ikrules
                    .iter()
                    .zip(&other.ikrules)
                    .all(|(x, y)| (x.kind, x.chain, x.slot) == (y.kind, y.chain, y.slot));
            if !same {
                diags.push(
                    Diagnostic::new(
                        Code::SourceIkRuleMismatch,
                        format!(
                            "the blends `{}` and `{}` of a sequence have different IK rules",
                            first.name, other.name
                        ),
                        *span,
                        "in this sequence",
                    )
                    .with_note(format!(
                        "`{}` has {} ({}), `{}` has {} ({}); the engine blends rule n of each, so they must match in number, type, chain and target, as Valve's compiler requires",
                        first.name,
                        first.ikrules.len(),
                        describe(&first.ikrules),
                        other.name,
                        other.ikrules.len(),
                        describe(&other.ikrules)
                    )),
                );
                break;
            }
        }
        for &i in ids {
            if let Some(a) = anims.get_mut(i) {
                for (n, r) in a.ikrules.iter_mut().enumerate() {
                    r.index = n as i32;
                }
            }
        }
    }
    if diags.iter().filter(|d| d.is_error()).count() > errors_before {
        return None;
    }
    Some(counts)
}

/// The QC word of an `mstudioikrule_t.type` (`IK_SELF` is `touch`, `IK_GROUND` `footstep`).
pub fn type_name(kind: i32) -> &'static str {
    const NAMES: [&str; 7] = [
        "none",
        "touch",
        "world",
        "footstep",
        "release",
        "attachment",
        "unlatch",
    ];
    usize::try_from(kind)
        .ok()
        .and_then(|k| NAMES.get(k))
        .copied()
        .unwrap_or("unknown")
}

fn describe(rules: &[PIkRule]) -> String {
    let v: Vec<String> = rules
        .iter()
        .map(|r| format!("{} chain {} target {}", type_name(r.kind), r.chain, r.slot))
        .collect();
    if v.is_empty() {
        "no rules".into()
    } else {
        v.join(", ")
    }
}

/// The frames of one rule, its error per frame, and the compressed error (`ProcessIKRules`'
/// per-type cases and `CompressIKErrors`).
#[allow(clippy::too_many_arguments)]
fn errors_of(
    a: &Anim,
    ai: usize,
    base_index: usize,
    r: &mut Rule,
    anims: &[PAnim],
    sequences: &Sequences,
    cx: &Context,
    diags: &mut Vec<Diagnostic>,
) -> Option<PIkRule> {
    let pa = &anims[ai];
    let base = anims.get(base_index).unwrap_or(pa);
    let [start, peak, tail, end, contact] = r.frames;
    let mut count = end - start + 1;
    if end >= pa.num_frames as i32 {
        count += 2;
    }
    let count = count.max(0) as usize;
    if count > MAX_ERROR_FRAMES {
        diags.push(
            Diagnostic::new(
                Code::SourceAnimLimit,
                format!(
                    "an IK rule of animation `{}` covers {count} frames; mdlc allows at most {MAX_ERROR_FRAMES}",
                    pa.name
                ),
                r.span,
                "this IK rule",
            )
            .with_note("give the rule a shorter `range`"),
        );
        return None;
    }
    let chain = &cx.ik_chains[r.chain];
    let end_bone = usize::try_from(chain.bones[2]).ok()?;
    // `usesource`: the animation's frames before its options were applied
    let nb = cx.bones.len();
    let raw: Option<Vec<LocalPose>> = r.use_source.then(|| super::anim::convert(a, cx));
    let out_of_range = |t: i32, diags: &mut Vec<Diagnostic>| {
        diags.push(
            Diagnostic::new(
                Code::SourceEventFrame,
                format!(
                    "an IK rule of animation `{}` reaches frame {t}; the animation has frames 0 to {}",
                    pa.name,
                    pa.num_frames.saturating_sub(1)
                ),
                r.span,
                "this IK rule",
            )
            .with_note("only a looping animation's rules, and `usesequence` or `usesource` rules, may run past its last frame; Valve's compiler stops the same way"),
        );
    };
    // `usesequence`: the first sequence whose first animation this is (`CalcSeqTransforms`;
    // with none, the SDK reads past its sequence list, so mdlc takes the animation's own frames
    // as a sequence of its own would give them)
    let use_sequence = r.use_sequence.then(|| {
        sequences
            .seqs
            .iter()
            .position(|s| s.anims.first().is_some_and(|&x| x as usize == ai))
    });
    // the animation's own frames (`CalcBoneTransforms`)
    let plain = |t: i32, diags: &mut Vec<Diagnostic>| -> Option<Vec<M34>> {
        let w = frame_world(pa, &base.frames, t, cx);
        if w.is_none() {
            out_of_range(t, diags);
        }
        w
    };
    let world = |t: i32, diags: &mut Vec<Diagnostic>| -> Option<Vec<M34>> {
        if let Some(seq) = use_sequence {
            return Some(sequences.world(seq, ai, t, anims, cx));
        }
        match &raw {
            // `BuildRawTransforms` wraps the frame over the source's frames (unverified when
            // a `frame` range crops the animation: the SDK wraps over the whole file, mdlc
            // over the frames it kept)
            Some(raw) => {
                let n = (raw.len() / nb.max(1)) as i32;
                let t = if n > 0 { t.rem_euclid(n) as usize } else { 0 };
                raw.get(t * nb..(t + 1) * nb)
                    .map(|p| pose_world(p, None, cx))
            }
            None => plain(t, diags),
        }
    };
    let resolve_bone = |name: &crate::diag::Spanned<String>, diags: &mut Vec<Diagnostic>| match cx
        .bones
        .iter()
        .position(|b| b.name.eq_ignore_ascii_case(&name.value))
    {
        Some(b) => Some(b as i32),
        None => {
            diags.push(super::anim::unknown_name(
                "bone",
                &name.value,
                name.span.span(),
                cx.bones.iter().map(|b| b.name.as_str()),
            ));
            None
        }
    };
    let mut errors: Vec<IkErrorFrame> = vec![([0.0; 3], [0.0; 3]); count];
    let split = |m: &M34| ([m[0][3], m[1][3], m[2][3]], math::to_euler(m));
    match r.kind {
        IK_SELF => {
            r.bone = match &r.bone_name {
                None => -1,
                Some(n) if n.value.is_empty() => -1,
                Some(n) => resolve_bone(n, diags)?,
            };
            for (k, e) in errors.iter_mut().enumerate() {
                let w = world(start + k as i32, diags)?;
                let local = match usize::try_from(r.bone).ok() {
                    Some(b) => math::mul(&math::invert(&w[b]), &w[end_bone]),
                    None => w[end_bone],
                };
                *e = split(&local);
            }
        }
        IK_ATTACHMENT => {
            match &r.bone_name {
                Some(n) if !n.value.is_empty() => r.bone = resolve_bone(n, diags)?,
                _ => {
                    if r.bone != -1 {
                        r.bone = end_bone as i32;
                    }
                }
            }
            if let Ok(b) = usize::try_from(r.bone) {
                // the contact pose is always the animation's own (`CalcBoneTransforms`)
                let w = plain(contact, diags)?;
                r.pos = [w[b][0][3], w[b][1][3], w[b][2][3]];
                r.q = math::matrix_quat(&w[b]);
            }
            let target_rot = math::quat_matrix(r.q, [0.0; 3]);
            for (k, e) in errors.iter_mut().enumerate() {
                let t = start + k as i32;
                let w = world(t, diags)?;
                let pos = math::add(r.pos, movement(pa, t, contact));
                let target = with_pos(target_rot, pos);
                *e = split(&math::mul(&math::invert(&target), &w[end_bone]));
            }
        }
        IK_GROUND => {
            let w = world(contact, diags)?;
            let mut footfall = math::apply(&w[end_bone], chain.center);
            footfall[2] = r.floor;
            r.pos = footfall;
            r.q = [0.0, 0.0, 0.0, 1.0];
            for (k, e) in errors.iter_mut().enumerate() {
                let t = start + k as i32;
                // `usesource` reads the contact frame for every frame here, as the SDK does
                let w = if r.use_source {
                    world(contact, diags)?
                } else {
                    world(t, diags)?
                };
                let mut pos = math::add(r.pos, movement(pa, t, contact));
                let mut cur = math::apply(&w[end_bone], chain.center);
                cur[2] = pos[2];
                if t < start || t >= end {
                    pos = cur;
                } else if t < peak {
                    let s = smooth((peak - t) as f32 / (peak - start) as f32);
                    pos = math::add(math::scale(pos, 1.0 - s), math::scale(cur, s));
                } else if t > tail {
                    let s = smooth((t - tail) as f32 / (end - tail) as f32);
                    pos = math::add(math::scale(pos, 1.0 - s), math::scale(cur, s));
                }
                let target = with_pos(math::from_euler([0.0; 3], [0.0; 3]), pos);
                *e = split(&math::mul(&math::invert(&target), &w[end_bone]));
            }
        }
        _ => {} // release, unlatch, no type: zero errors
    }
    let error = (count > 0).then(|| compress(&errors));
    if let Some((_, streams)) = &error {
        // the streams are found by i16 offsets from the error record
        let last_offset = 36 + streams[..5].iter().map(Vec::len).sum::<usize>();
        if last_offset > i16::MAX as usize {
            diags.push(Diagnostic::new(
                Code::SourceAnimLimit,
                format!(
                    "an IK rule of animation `{}` covers {count} frames, too many for its error data ({last_offset} bytes before the last channel; the format's offsets reach 32767)",
                    pa.name
                ),
                r.span,
                "this IK rule",
            ).with_note("give the rule a shorter `range`, or split the animation"));
            return None;
        }
    }
    Some(PIkRule {
        index: 0,
        kind: r.kind,
        chain: r.chain as i32,
        bone: r.bone,
        slot: r.slot,
        height: r.height,
        radius: r.radius,
        floor: r.floor,
        pos: r.pos,
        q: r.q,
        frames: r.frames,
        attachment: r.attachment.clone(),
        error,
    })
}

/// What `usesequence` rules read: the model's sequences, and the bones `$limitrotation` gave a
/// fixed alignment (`BONE_FIXED_ALIGNMENT`, blended without aligning their quaternions).
pub struct Sequences<'a> {
    pub seqs: &'a [PSeq],
    pub fixed_alignment: &'a [bool],
}

/// How deep layers of layers are followed; a sequence that layers itself would never end in the
/// SDK (it recurses until its stack is gone), and mdlc stops here.
const MAX_LAYER_DEPTH: usize = 16;

impl Sequences<'_> {
    /// Model-space bone matrices of frame `frame` of sequence `seq` (2006 SDK
    /// `CalcSeqTransforms`): the rest pose, the sequence's first animation blended in by its
    /// bone weights, then its layers. `own` is the rule's animation, used when there is no
    /// sequence.
    fn world(
        &self,
        seq: Option<usize>,
        own: usize,
        frame: i32,
        anims: &[PAnim],
        cx: &Context,
    ) -> Vec<M34> {
        let mut q: Vec<[f32; 4]> = cx.bones.iter().map(|b| math::euler_quat(b.rot)).collect();
        let mut pos: Vec<[f32; 3]> = cx.bones.iter().map(|b| b.pos).collect();
        match seq {
            Some(s) => self.accumulate(&mut pos, &mut q, s, frame as f32, 1.0, anims, 0),
            None => {
                if let Some(a) = anims.get(own) {
                    let single = self.single(a, frame as f32, cx.bones.len());
                    for ((p, r), (p2, q2)) in pos.iter_mut().zip(q.iter_mut()).zip(single) {
                        (*p, *r) = (p2, q2);
                    }
                }
            }
        }
        chain_world(cx, |k| {
            let (q, p) = (q.get(k).copied(), pos.get(k).copied());
            math::quat_matrix(q.unwrap_or([0.0, 0.0, 0.0, 1.0]), p.unwrap_or_default())
        })
    }

    /// `CalcPoseSingle`: frame `(int) frame % numframes` of an animation, no interpolation.
    fn single(&self, a: &PAnim, frame: f32, nb: usize) -> Vec<([f32; 3], [f32; 4])> {
        let n = a.num_frames.max(1) as i32;
        let f = (frame as i32).rem_euclid(n) as usize;
        (0..nb)
            .map(|k| {
                let p = a.frames.get(f * nb + k).copied().unwrap_or_default();
                (p.pos, math::euler_quat(p.rot))
            })
            .collect()
    }

    /// `AccumulatePose`: sequence `seq` at `frame` blended into `pos`/`q` with `weight`, then
    /// its layers (`AccumulateSeqLayers`).
    #[allow(clippy::too_many_arguments)]
    fn accumulate(
        &self,
        pos: &mut [[f32; 3]],
        q: &mut [[f32; 4]],
        seq: usize,
        frame: f32,
        weight: f32,
        anims: &[PAnim],
        depth: usize,
    ) {
        let Some(s) = self.seqs.get(seq) else { return };
        let Some(a) = s.anims.first().and_then(|&i| anims.get(i as usize)) else {
            return;
        };
        let single = self.single(a, frame, pos.len());
        self.slerp_bones(pos, q, s, &single, weight);
        if depth >= MAX_LAYER_DEPTH {
            return;
        }
        let own_frames = a.num_frames as f32;
        for layer in &s.autolayers {
            let Some(ls) = self.seqs.get(layer.sequence as usize) else {
                continue;
            };
            let layer_frames = ls
                .anims
                .first()
                .and_then(|&i| anims.get(i as usize))
                .map_or(1.0, |x| x.num_frames as f32);
            let [start, peak, tail, end] = layer.frames;
            let mut layer_frame = frame;
            let mut layer_weight = weight;
            if start != end {
                let pose = layer.flags & AL_POSE != 0;
                // a pose-driven layer is tested at index 0 ("undefined?" in the SDK)
                let index = if pose { 0.0 } else { frame };
                if index < start || index >= end {
                    continue;
                }
                let mut s = 1.0f32;
                if index < peak && start != peak {
                    s = (index - start) / (peak - start);
                } else if index > tail && end != tail {
                    s = (end - index) / (end - tail);
                }
                if layer.flags & AL_SPLINE != 0 {
                    s = 3.0 * s * s - 2.0 * s * s * s;
                }
                layer_weight = if layer.flags & AL_XFADE != 0 && frame > tail {
                    (s * weight) / (1.0 - weight + s * weight)
                } else if layer.flags & AL_NOBLEND != 0 {
                    s
                } else {
                    weight * s
                };
                layer_frame = if pose {
                    // as written in the SDK: `frame / numframes - 1`, not `frame / (numframes - 1)`
                    (frame / own_frames - 1.0) * (layer_frames - 1.0)
                } else {
                    ((frame - start) / (end - start)) * (layer_frames - 1.0)
                };
            }
            self.accumulate(
                pos,
                q,
                layer.sequence as usize,
                layer_frame,
                layer_weight,
                anims,
                depth + 1,
            );
        }
    }

    /// `SlerpBones`: each bone moves toward the sequence's pose by `weight` times its bone
    /// weight; a delta sequence is added instead (after the pose with `post`, before without).
    fn slerp_bones(
        &self,
        pos: &mut [[f32; 3]],
        q: &mut [[f32; 4]],
        s: &PSeq,
        other: &[([f32; 3], [f32; 4])],
        weight: f32,
    ) {
        use super::anim::quat;
        if weight <= 0.0 {
            return;
        }
        let weight = weight.min(1.0);
        let delta = s.flags & DELTA != 0;
        for (k, (p2, q2)) in other.iter().enumerate() {
            let s2 = weight * s.weights.get(k).copied().unwrap_or(0.0);
            if s2 <= 0.0 {
                continue;
            }
            let (Some(p1), Some(q1)) = (pos.get_mut(k), q.get_mut(k)) else {
                continue;
            };
            if delta {
                *q1 = if s.flags & POST != 0 {
                    quat::ma(*q1, s2, *q2)
                } else {
                    quat::sm(s2, *q2, *q1)
                };
                *p1 = math::add(*p1, math::scale(*p2, s2));
            } else {
                let s1 = 1.0 - s2;
                *q1 = if self.fixed_alignment.get(k).copied().unwrap_or(false) {
                    super::anim::slerp_no_align(*q2, *q1, s1)
                } else {
                    super::anim::slerp(*q2, *q1, s1)
                };
                *p1 = math::add(math::scale(*p1, s1), math::scale(*p2, s2));
            }
        }
    }
}

fn with_pos(mut m: M34, p: [f32; 3]) -> M34 {
    for k in 0..3 {
        m[k][3] = p[k];
    }
    m
}

/// `CompressIKErrors` for one rule: per channel the scale (the largest magnitude over
/// 32767, or the smallest over −32768, never under 128 inches or π/8 radians) and the
/// run-length stream of `value / scale` truncated toward zero.
fn compress(errors: &[IkErrorFrame]) -> ([f32; 6], [Vec<u8>; 6]) {
    use std::f32::consts::PI;
    let mut scales = [0.0f32; 6];
    let mut streams: [Vec<u8>; 6] = Default::default();
    for k in 0..6 {
        let value = |e: &IkErrorFrame| -> f32 {
            if k < 3 {
                e.0[k]
            } else {
                let mut v = e.1[k - 3];
                while v >= PI {
                    v -= 2.0 * PI;
                }
                while v < -PI {
                    v += 2.0 * PI;
                }
                v
            }
        };
        let (mut lo, mut hi) = if k < 3 {
            (-128.0f32, 128.0f32)
        } else {
            (-PI / 8.0, PI / 8.0)
        };
        for e in errors {
            let v = value(e);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        let scale = if -lo > hi {
            lo / -32768.0
        } else {
            hi / 32767.0
        };
        scales[k] = scale;
        let q: Vec<i16> = errors.iter().map(|e| (value(e) / scale) as i16).collect();
        streams[k] = rle_stream(&q);
    }
    (scales, streams)
}

/// The cycle of a rule frame (`WriteIkErrors`: frame ÷ (numframes − 1); a one-frame animation
/// gets 0, 0, 1, 1 and contact 0).
pub fn cycles(r: &PIkRule, num_frames: usize) -> [f32; 5] {
    if num_frames > 1 {
        let d = num_frames as f32 - 1.0;
        r.frames.map(|f| f as f32 / d)
    } else {
        [0.0, 0.0, 1.0, 1.0, 0.0]
    }
}

/// What an animation's IK rules mean to the engine, read back (for tests and `inspect`): per
/// frame from the rule's start, the error position and Euler angles.
pub fn decode_error(
    scales: [f32; 6],
    streams: &[&[u8]; 6],
    count: usize,
) -> Result<Vec<IkErrorFrame>, String> {
    let mut out = vec![([0.0f32; 3], [0.0f32; 3]); count];
    for k in 0..6 {
        for (f, e) in out.iter_mut().enumerate() {
            let v = f32::from(super::animcodec::stream_value(streams[k], f)?) * scales[k];
            if k < 3 {
                e.0[k] = v;
            } else {
                e.1[k - 3] = v;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_errors_compress_as_valve_writes_them() {
        // Valve's male01 release rules: 101 zero frames, scales 128/32767 and (π/8)/32767,
        // each stream `01 65 00 00`
        let (scales, streams) = compress(&vec![([0.0; 3], [0.0; 3]); 101]);
        assert_eq!(scales[0].to_bits(), 0x3b80_0100);
        assert_eq!(scales[3].to_bits(), 0x3749_116d);
        for s in &streams {
            assert_eq!(s, &[1, 101, 0, 0]);
        }
    }

    #[test]
    fn scales_follow_the_largest_error() {
        let mut e = vec![([0.0; 3], [0.0; 3]); 4];
        e[1].0[0] = 200.0;
        e[2].0[1] = -300.0;
        e[3].1[2] = 1.0;
        let (scales, streams) = compress(&e);
        assert_eq!(scales[0], 200.0 / 32767.0);
        assert_eq!(scales[1], -300.0 / -32768.0);
        assert_eq!(scales[2], 128.0 / 32767.0);
        assert_eq!(scales[5], 1.0 / 32767.0);
        let refs = [
            &streams[0][..],
            &streams[1][..],
            &streams[2][..],
            &streams[3][..],
            &streams[4][..],
            &streams[5][..],
        ];
        let d = decode_error(scales, &refs, 4).unwrap();
        assert!((d[1].0[0] - 200.0).abs() < 0.01);
        assert!((d[2].0[1] + 300.0).abs() < 0.01);
        assert!((d[3].1[2] - 1.0).abs() < 1e-4);
        assert_eq!(d[0], ([0.0; 3], [0.0; 3]));
    }
}
