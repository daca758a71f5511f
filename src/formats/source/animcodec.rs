//! Source animation data: per-bone scales, the run-length and raw record chains the engine
//! decodes, and that decoder (`source-animation.md` §4, §5, §11).
//!
//! Pure functions over numbers and bytes: the conversion from SMD frames to local poses
//! (§2.4/§2.5) happens before [`compute_scales`]/[`encode`], and the animdesc/section lookup
//! (§3.2) around [`decode_chain`].
//!
//! Encoding follows studiomdl (§5.1–§5.5) with two choices the v48 decoder accepts and Valve's
//! own v48 builds make (§5.5a, §5.7): a one-frame animation stores its rotation as a
//! Quaternion64 (`RAWROT2`) instead of a Quaternion48, and a record that would not fit the i16
//! offsets splits the animation into sections of [`SECTION_FRAMES`] frames (§3.2).

#![allow(clippy::needless_range_loop)] // per-axis code reads best with indices

use super::math::{euler_quat, quat_align as align};

/// Record flag `STUDIO_ANIM_RAWPOS`: one Vector48 (§4.1).
pub const ANIM_RAWPOS: u8 = 0x01;
/// Record flag `STUDIO_ANIM_RAWROT`: one Quaternion48 (§4.1).
pub const ANIM_RAWROT: u8 = 0x02;
/// Record flag `STUDIO_ANIM_ANIMPOS`: a position value-pointer (§4.1).
pub const ANIM_ANIMPOS: u8 = 0x04;
/// Record flag `STUDIO_ANIM_ANIMROT`: a Euler value-pointer (§4.1).
pub const ANIM_ANIMROT: u8 = 0x08;
/// Record flag `STUDIO_ANIM_DELTA`: values are deltas, base 0 / identity (§4.1).
pub const ANIM_DELTA: u8 = 0x10;
/// Record flag `STUDIO_ANIM_RAWROT2`: one Quaternion64 (§4.1, v48).
pub const ANIM_RAWROT2: u8 = 0x20;
/// Every record flag bit v48 defines (§4.1).
const ANIM_KNOWN: u8 = 0x3f;
const ANIM_RAW: u8 = ANIM_RAWPOS | ANIM_RAWROT | ANIM_RAWROT2;
const ANIM_RLE: u8 = ANIM_ANIMPOS | ANIM_ANIMROT;

/// Frames per section when an animation has to be sectioned (§3.2): the length Valve's v48
/// compiler was seen to use (§5.5a). A section then holds 31 frames, far below the i16 limit.
pub const SECTION_FRAMES: usize = 30;

/// Largest record the i16 `nextoffset` and value-pointer offsets can describe (§4.8).
const MAX_RECORD: usize = 32767;

/// Bones whose animation weight is below this get no record (§5.2).
const MIN_WEIGHT: f32 = 0.001;

/// The engine interpolates between two frames only above this fraction (§4.6).
const MIN_FRACTION: f32 = 0.001;

const IDENTITY: [f32; 4] = [0.0, 0.0, 0.0, 1.0];

/// Rest pose and scales of one model bone: what both the encoder and the decoder need
/// (`mstudiobone_t` `pos`, `rot`, `quat`, `posscale`, `rotscale`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoneBase {
    pub pos: [f32; 3],
    /// Euler radians (§1.1).
    pub rot: [f32; 3],
    /// Quaternion (x, y, z, w) of `rot`.
    pub quat: [f32; 4],
    pub posscale: [f32; 3],
    pub rotscale: [f32; 3],
}

/// One bone's local transform in one frame, after §2.4/§2.5 (Euler radians).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalPose {
    pub pos: [f32; 3],
    pub rot: [f32; 3],
}

/// One animation ready to encode.
pub struct AnimInput<'a> {
    pub num_frames: usize,
    /// `num_frames × bones`, frame-major: `frames[f * bones + b]`.
    pub frames: &'a [LocalPose],
    /// `STUDIO_DELTA`: values are deltas, base 0 (§4.6, §5.1 step 2).
    pub delta: bool,
    /// Per bone: the animation's weight; bones under 0.001 get no record (§5.2).
    pub weights: &'a [f32],
    /// Per bone: position weight ÷ weight of a delta animation's weight list (1 by default).
    pub pos_weights: &'a [f32],
}

/// The encoded data of one animation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Encoded {
    /// 0 when not sectioned (§3.2).
    pub section_frames: i32,
    /// One record chain per section (one when not sectioned), each ending with its 4 trailing
    /// zero bytes (§4.8).
    pub chains: Vec<Vec<u8>>,
}

/// One bone's decoded local pose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecodedPose {
    pub pos: [f32; 3],
    /// Quaternion (x, y, z, w).
    pub quat: [f32; 4],
}

// ---------------------------------------------------------------------------------------------
// Scales and quantisation (§5.1, §5.2)
// ---------------------------------------------------------------------------------------------

/// Wraps a rotation delta into [−π, π) the way studiomdl does (§5.1 step 2): values already
/// inside are returned unchanged (no rounding noise), others are shifted by whole turns.
fn wrap_pi(d: f32) -> f32 {
    use std::f64::consts::{PI, TAU};
    let x = f64::from(d);
    if !x.is_finite() || (-PI..PI).contains(&x) {
        return d;
    }
    ((x + PI).rem_euclid(TAU) - PI) as f32
}

/// The six channel deltas of one pose in stream order (§4.8: Euler x, y, z, then position
/// x, y, z): against the rest pose for a normal animation, the raw values for a delta one;
/// rotations wrapped (§5.1 step 2).
fn channel_deltas(
    pose: &LocalPose,
    rest_pos: [f32; 3],
    rest_rot: [f32; 3],
    delta: bool,
) -> [f32; 6] {
    let mut d = [0.0f32; 6];
    for a in 0..3 {
        let r = if delta {
            pose.rot[a]
        } else {
            pose.rot[a] - rest_rot[a]
        };
        d[a] = wrap_pi(r);
        d[3 + a] = if delta {
            pose.pos[a]
        } else {
            pose.pos[a] - rest_pos[a]
        };
    }
    d
}

/// Frame `f` of bone `b` (of `bones`), or `None` when the slice is too short.
fn pose_at(anim: &AnimInput, bones: usize, f: usize, b: usize) -> Option<LocalPose> {
    f.checked_mul(bones)
        .and_then(|i| i.checked_add(b))
        .and_then(|i| anim.frames.get(i))
        .copied()
}

/// How many frames of `anim` the slice actually holds for `bones` bones.
fn frames_present(anim: &AnimInput, bones: usize) -> usize {
    if bones == 0 {
        return 0;
    }
    anim.num_frames.min(anim.frames.len().div_ceil(bones))
}

/// `trunc(d / scale)` as a C float→short conversion (§5.2), clamped to the i16 range
/// defensively; NaN gives 0.
fn quantise(d: f32, scale: f32) -> i16 {
    let q = (d / scale).trunc();
    if q.is_nan() {
        0
    } else {
        q.clamp(-32768.0, 32767.0) as i16
    }
}

/// Per-bone `(posscale, rotscale)` shared by all animations (§5.1). `rest[b]` is bone `b`'s
/// `(pos, rot)`.
///
/// Seeds ±128 units and ±π/8 rad, widened by every frame of every bone of every animation
/// (delta animations with their raw values), rotations wrapped into [−π, π); the scale is
/// `lo / −32768` when `−lo > hi`, else `hi / 32767`, in f32. Non-finite values are ignored.
pub fn compute_scales(
    rest: &[([f32; 3], [f32; 3])],
    anims: &[AnimInput],
) -> Vec<([f32; 3], [f32; 3])> {
    let bones = rest.len();
    let rot_seed = std::f32::consts::FRAC_PI_8;
    rest.iter()
        .enumerate()
        .map(|(b, &(rest_pos, rest_rot))| {
            let mut lo = [-rot_seed, -rot_seed, -rot_seed, -128.0, -128.0, -128.0];
            let mut hi = [rot_seed, rot_seed, rot_seed, 128.0, 128.0, 128.0];
            for anim in anims {
                for f in 0..frames_present(anim, bones) {
                    let Some(pose) = pose_at(anim, bones, f, b) else {
                        continue;
                    };
                    let d = channel_deltas(&pose, rest_pos, rest_rot, anim.delta);
                    for c in 0..6 {
                        if d[c].is_finite() {
                            lo[c] = lo[c].min(d[c]);
                            hi[c] = hi[c].max(d[c]);
                        }
                    }
                }
            }
            let scale = |c: usize| {
                if -lo[c] > hi[c] {
                    lo[c] / -32768.0
                } else {
                    hi[c] / 32767.0
                }
            };
            (
                [scale(3), scale(4), scale(5)],
                [scale(0), scale(1), scale(2)],
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Compressed numbers (§4.2, §4.3, §4.4)
// ---------------------------------------------------------------------------------------------

/// `q / |q|` when that is defined, else `q`.
fn normalised(q: [f32; 4]) -> [f32; 4] {
    let l = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    if l.is_finite() && l > 0.0 {
        [q[0] / l, q[1] / l, q[2] / l, q[3] / l]
    } else {
        q
    }
}

/// `trunc(c · scale) + offset` clamped to `0..=max` (the Quaternion48/64 encoders, §4.2/§4.3).
fn quat_component(c: f32, scale: f32, offset: i64, max: i64) -> u64 {
    let t = (c * scale).trunc();
    let i = if t.is_nan() { 0 } else { t as i64 };
    (i + offset).clamp(0, max) as u64
}

/// `w` of a compressed quaternion: `sqrt(1 − x² − y² − z²)`, the sign from `wneg`. The
/// radicand is clamped at 0 (truncating encoders never make it negative; the engine would
/// give NaN).
fn rebuild_w(x: f32, y: f32, z: f32, wneg: bool) -> f32 {
    let w = (1.0 - x * x - y * y - z * z).max(0.0).sqrt();
    if wneg {
        -w
    } else {
        w
    }
}

/// Quaternion48 (§4.2): X, Y as 16 bits, Z as 15 bits plus the sign of w, all truncated toward
/// zero. The input is normalised first.
pub fn quat48(q: [f32; 4]) -> [u8; 6] {
    let q = normalised(q);
    let x = quat_component(q[0], 32768.0, 32768, 65535) as u16;
    let y = quat_component(q[1], 32768.0, 32768, 65535) as u16;
    let z = quat_component(q[2], 16384.0, 16384, 32767) as u16;
    let zw = z | if q[3] < 0.0 { 0x8000 } else { 0 };
    let mut out = [0u8; 6];
    out[0..2].copy_from_slice(&x.to_le_bytes());
    out[2..4].copy_from_slice(&y.to_le_bytes());
    out[4..6].copy_from_slice(&zw.to_le_bytes());
    out
}

/// Decodes a Quaternion48 (§4.2).
pub fn quat48_decode(b: [u8; 6]) -> [f32; 4] {
    let x = u16::from_le_bytes([b[0], b[1]]);
    let y = u16::from_le_bytes([b[2], b[3]]);
    let zw = u16::from_le_bytes([b[4], b[5]]);
    let x = (i32::from(x) - 32768) as f32 * (1.0 / 32768.0);
    let y = (i32::from(y) - 32768) as f32 * (1.0 / 32768.0);
    let z = (i32::from(zw & 0x7fff) - 16384) as f32 * (1.0 / 16384.0);
    [x, y, z, rebuild_w(x, y, z, zw & 0x8000 != 0)]
}

/// Quaternion64 (§4.3): 21 bits each for x, y, z (truncated toward zero), bit 63 the sign of w.
/// The input is normalised first.
pub fn quat64(q: [f32; 4]) -> [u8; 8] {
    let q = normalised(q);
    let x = quat_component(q[0], 1048576.0, 1048576, 2097151);
    let y = quat_component(q[1], 1048576.0, 1048576, 2097151);
    let z = quat_component(q[2], 1048576.0, 1048576, 2097151);
    let wneg = u64::from(q[3] < 0.0);
    (x | y << 21 | z << 42 | wneg << 63).to_le_bytes()
}

/// Decodes a Quaternion64 (§4.3): `c = (C − 1048576) / 1048576.5`.
pub fn quat64_decode(b: [u8; 8]) -> [f32; 4] {
    let v = u64::from_le_bytes(b);
    let c = |shift: u32| ((((v >> shift) & 0x1f_ffff) as i32) - 1048576) as f32 * (1.0 / 1048576.5);
    let (x, y, z) = (c(0), c(21), c(42));
    [x, y, z, rebuild_w(x, y, z, v >> 63 != 0)]
}

/// Valve's float16 (§4.4): clamps to ±65504 (infinities included), truncates the mantissa,
/// maps NaN, f32 denormals and values below 2⁻²⁴ to (signed) zero, never writes exponent 31.
pub fn half(f: f32) -> u16 {
    if f.is_nan() {
        return 0;
    }
    let bits = f.clamp(-65504.0, 65504.0).to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let biased = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if biased == 0 {
        return sign; // zero or f32 denormal
    }
    let e = biased - 127;
    if e < -24 {
        sign
    } else if e < -14 {
        // half denormal: the implicit 1 and the top mantissa bits, shifted down
        let shift = (-14 - e) as u32; // 1..=10
        sign | ((1u32 << (10 - shift)) + (mant >> (13 + shift))) as u16
    } else {
        sign | (((e + 15) as u16) << 10) | (mant >> 13) as u16
    }
}

/// Decodes Valve's float16 (§4.4): half denormals included; exponent 31 gives ±65504
/// (infinity) or 0 (NaN).
pub fn half_to_f32(h: u16) -> f32 {
    let negative = h & 0x8000 != 0;
    let exp = (h >> 10) & 0x1f;
    let mant = u32::from(h & 0x3ff);
    let sign = if negative { -1.0f32 } else { 1.0 };
    match exp {
        0 => sign * (mant as f32 / 1024.0) * (1.0 / 16384.0),
        31 if mant == 0 => sign * 65504.0,
        31 => 0.0,
        _ => f32::from_bits(
            u32::from(negative) << 31 | (u32::from(exp) + 127 - 15) << 23 | mant << 13,
        ),
    }
}

/// Vector48 (§4.4): three float16.
pub fn vector48(p: [f32; 3]) -> [u8; 6] {
    let mut out = [0u8; 6];
    for a in 0..3 {
        out[2 * a..2 * a + 2].copy_from_slice(&half(p[a]).to_le_bytes());
    }
    out
}

/// Decodes a Vector48 (§4.4).
pub fn vector48_decode(b: [u8; 6]) -> [f32; 3] {
    let h = |i: usize| half_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]]));
    [h(0), h(1), h(2)]
}

// ---------------------------------------------------------------------------------------------
// Run-length streams and records (§4.6, §4.8, §5.3–§5.5)
// ---------------------------------------------------------------------------------------------

/// One `{valid, total}` header and its stored values while building a stream.
struct Run {
    total: u8,
    values: Vec<i16>,
}

/// studiomdl's run-length builder (§5.4), byte for byte: `header, values…` per run, headers
/// as `valid, total`, values as little-endian i16. Empty input gives an empty stream.
///
/// A repeat run is only opened when a value equals its predecessor and the current header
/// already repeats, or the next value is equal too, or it is the last frame; runs hold at most
/// 255 frames. The first header of a stream of two or more frames is therefore never (1, 1)
/// (§4.6 quirk).
pub fn rle_stream(values: &[i16]) -> Vec<u8> {
    let Some(&first) = values.first() else {
        return Vec::new();
    };
    let n = values.len();
    let mut runs = vec![Run {
        total: 1,
        values: vec![first],
    }];
    for m in 1..n {
        let v = values[m];
        let prev = values[m - 1];
        let Some(h) = runs.last_mut() else { break };
        if h.total == 255 {
            runs.push(Run {
                total: 0,
                values: vec![v],
            });
        } else {
            let valid = h.values.len();
            let explicit =
                v != prev || (valid == usize::from(h.total) && m + 1 < n && values[m + 1] != v);
            if explicit {
                if usize::from(h.total) != valid {
                    runs.push(Run {
                        total: 0,
                        values: Vec::new(),
                    });
                }
                if let Some(h) = runs.last_mut() {
                    h.values.push(v);
                }
            }
        }
        if let Some(h) = runs.last_mut() {
            h.total += 1;
        }
    }
    let mut out = Vec::with_capacity(2 * (n + runs.len()));
    for r in &runs {
        // valid ≤ total ≤ 255 by construction
        out.push(r.values.len() as u8);
        out.push(r.total);
        for v in &r.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// The quantised channels of one bone over all frames, in stream order (§4.8), or `None` when
/// the bone gets no record at all (weight below 0.001, §5.2; or an index the u8 `bone` field
/// cannot hold).
type BoneChannels = Option<[Vec<i16>; 6]>;

/// §5.2 for every bone and frame of `anim`.
fn quantise_anim(bases: &[BoneBase], anim: &AnimInput) -> Vec<BoneChannels> {
    let bones = bases.len();
    let n = anim.num_frames;
    bases
        .iter()
        .enumerate()
        .map(|(b, base)| {
            let weight = anim.weights.get(b).copied().unwrap_or(1.0);
            if b >= 255 || weight.is_nan() || weight < MIN_WEIGHT {
                return None;
            }
            let pos_weight = anim.pos_weights.get(b).copied().unwrap_or(1.0);
            let scales = [
                base.rotscale[0],
                base.rotscale[1],
                base.rotscale[2],
                base.posscale[0],
                base.posscale[1],
                base.posscale[2],
            ];
            let mut ch: [Vec<i16>; 6] = std::array::from_fn(|_| Vec::with_capacity(n));
            for f in 0..n {
                let pose = pose_at(anim, bones, f, b).unwrap_or(if anim.delta {
                    LocalPose::default()
                } else {
                    LocalPose {
                        pos: base.pos,
                        rot: base.rot,
                    }
                });
                let d = channel_deltas(&pose, base.pos, base.rot, anim.delta);
                for c in 0..6 {
                    let mut v = quantise(d[c], scales[c]);
                    if anim.delta && c >= 3 {
                        v = quantise(f32::from(v) * pos_weight, 1.0);
                    }
                    ch[c].push(v);
                }
            }
            Some(ch)
        })
        .collect()
}

/// Writes a little-endian i16 at `at` of `buf` (which the caller sized).
fn put_i16(buf: &mut [u8], at: usize, v: i16) {
    if let Some(s) = buf.get_mut(at..at + 2) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

/// The multi-frame record of one bone (§4.8, §5.5): header, rot value-pointer, pos
/// value-pointer if some position channel is kept, then the kept streams in Euler x, y, z,
/// position x, y, z order. `streams` are `None` for dropped channels (§5.3). `nextoffset` is
/// left 0 for [`finish_chain`].
fn rle_record(bone: u8, delta: bool, streams: &[Option<Vec<u8>>; 6]) -> Vec<u8> {
    let has_pos = streams[3..].iter().any(Option::is_some);
    let mut flags = ANIM_ANIMROT;
    if has_pos {
        flags |= ANIM_ANIMPOS;
    }
    if delta {
        flags |= ANIM_DELTA;
    }
    let mut rec = vec![bone, flags, 0, 0, 0, 0, 0, 0, 0, 0];
    if has_pos {
        rec.extend_from_slice(&[0; 6]);
    }
    for (c, s) in streams.iter().enumerate() {
        let Some(s) = s else { continue };
        let ptr = if c < 3 { 4 } else { 10 };
        // Offsets fit i16 whenever the record does; oversized records are sectioned.
        let off = i16::try_from(rec.len() - ptr).unwrap_or(i16::MAX);
        put_i16(&mut rec, ptr + 2 * (c % 3), off);
        rec.extend_from_slice(s);
    }
    rec
}

/// The RLE records of frames `first .. first + count` (one chain or one section): bones in
/// ascending order, all-zero channels dropped (§5.3, also when longer than 255 frames), bones
/// with no kept channel left out.
fn rle_records(q: &[BoneChannels], delta: bool, first: usize, count: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (b, ch) in q.iter().enumerate() {
        let Some(ch) = ch else { continue };
        let streams: [Option<Vec<u8>>; 6] = std::array::from_fn(|c| {
            let vals = ch[c].get(first..first + count).unwrap_or(&[]);
            if vals.iter().all(|&v| v == 0) {
                None
            } else {
                Some(rle_stream(vals))
            }
        });
        if streams.iter().all(Option::is_none) {
            continue;
        }
        out.push(rle_record(b as u8, delta, &streams));
    }
    out
}

/// The records of a one-frame animation (§5.5, RAWROT2 per §5.7): a Quaternion64 of the
/// frame's rotation if an Euler channel is kept, a Vector48 of its position if a position
/// channel is kept.
fn raw_records(bases: &[BoneBase], anim: &AnimInput, q: &[BoneChannels]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (b, ch) in q.iter().enumerate() {
        let Some(ch) = ch else { continue };
        let kept = |c: usize| ch[c].first().is_some_and(|&v| v != 0);
        let rot = (0..3).any(kept);
        let pos = (3..6).any(kept);
        if !rot && !pos {
            continue;
        }
        let pose = pose_at(anim, bases.len(), 0, b).unwrap_or_default();
        let q = euler_quat(pose.rot);
        if rot {
            // Near a half turn (|w| → 0) a Quaternion64 loses up to ~4e-3 rad (§4.3, §5.6);
            // the Euler channels then hold the rotation far better (within Σ rotscale), so
            // such a bone gets a one-frame run-length record instead.
            let back = quat64_decode(quat64(q));
            let budget: f32 = bases.get(b).map_or(0.0, |x| x.rotscale.iter().sum());
            if rotation_angle(q, back) > budget {
                let streams: [Option<Vec<u8>>; 6] = std::array::from_fn(|c| {
                    let vals = ch[c].get(..1).unwrap_or(&[]);
                    if vals.iter().all(|&v| v == 0) {
                        None
                    } else {
                        Some(rle_stream(vals))
                    }
                });
                out.push(rle_record(b as u8, anim.delta, &streams));
                continue;
            }
        }
        let mut flags = 0u8;
        if anim.delta {
            flags |= ANIM_DELTA;
        }
        if rot {
            flags |= ANIM_RAWROT2;
        }
        if pos {
            flags |= ANIM_RAWPOS;
        }
        let mut rec = vec![b as u8, flags, 0, 0];
        if rot {
            rec.extend_from_slice(&quat64(q));
        }
        if pos {
            rec.extend_from_slice(&vector48(pose.pos));
        }
        out.push(rec);
    }
    out
}

/// The angle between two rotations, robust near 0 (4·asin(chord/2), the same quantity as
/// 2·acos|p·q| without its rounding noise).
fn rotation_angle(p: [f32; 4], q: [f32; 4]) -> f32 {
    let d: f32 = p.iter().zip(&q).map(|(a, b)| a * b).sum();
    let q = if d < 0.0 { q.map(|c| -c) } else { q };
    let chord = p
        .iter()
        .zip(&q)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f32>()
        .sqrt();
    4.0 * (chord / 2.0).min(1.0).asin()
}

/// Joins records into a chain (§4.8): `nextoffset` = record size, 0 on the last; the empty
/// chain `FF 00 00 00` when there is none; then the 4 trailing zero bytes.
fn finish_chain(records: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    if records.is_empty() {
        out.extend_from_slice(&[0xff, 0, 0, 0]);
    }
    let last = records.len().saturating_sub(1);
    for (i, mut r) in records.into_iter().enumerate() {
        let next = if i == last {
            0
        } else {
            i16::try_from(r.len()).unwrap_or(0)
        };
        put_i16(&mut r, 2, next);
        out.extend_from_slice(&r);
    }
    out.extend_from_slice(&[0; 4]);
    out
}

/// Number of sections of an animation (§3.2): `numframes / S + 2`, or 1 when not sectioned.
pub fn section_count(num_frames: usize, section_frames: usize) -> usize {
    num_frames.checked_div(section_frames).map_or(1, |q| q + 2)
}

/// First frame and frame count of section `s` (§3.2): frames `min(s·S, N−1) ..=
/// min((s+1)·S, N−1)`; the whole animation when not sectioned.
pub fn section_span(num_frames: usize, section_frames: usize, s: usize) -> (usize, usize) {
    if section_frames == 0 {
        return (0, num_frames);
    }
    let last = num_frames.saturating_sub(1);
    let a = s.saturating_mul(section_frames).min(last);
    let b = s.saturating_add(1).saturating_mul(section_frames).min(last);
    (a, b - a + 1)
}

/// Encodes one animation into its record chain(s) (§4, §5.2–§5.5).
///
/// One frame: raw records (`RAWROT2` Quaternion64 of the frame's rotation, `RAWPOS` Vector48 of
/// its position, each only when one of its channels quantises to non-zero). More frames:
/// `ANIMROT` (+ `ANIMPOS`) run-length records. When one record would exceed 32767 bytes the
/// animation is split into sections of [`SECTION_FRAMES`] (§3.2), each an independent chain.
/// Bones 255 and up cannot be named by a record and are left out.
pub fn encode(bases: &[BoneBase], anim: &AnimInput) -> Encoded {
    let n = anim.num_frames;
    if n == 0 {
        return Encoded {
            section_frames: 0,
            chains: vec![finish_chain(Vec::new())],
        };
    }
    let q = quantise_anim(bases, anim);
    if n == 1 {
        return Encoded {
            section_frames: 0,
            chains: vec![finish_chain(raw_records(bases, anim, &q))],
        };
    }
    let whole = rle_records(&q, anim.delta, 0, n);
    if whole.iter().all(|r| r.len() <= MAX_RECORD) {
        return Encoded {
            section_frames: 0,
            chains: vec![finish_chain(whole)],
        };
    }
    encode_sectioned(bases, anim, SECTION_FRAMES)
}

/// Like [`encode`], but always cut into sections of `section_frames` frames (§3.2) when the
/// animation has more than one frame and `section_frames` is not 0 (`$sectionframes`).
pub fn encode_sectioned(bases: &[BoneBase], anim: &AnimInput, section_frames: usize) -> Encoded {
    let n = anim.num_frames;
    if n <= 1 || section_frames == 0 {
        return encode(bases, anim);
    }
    let q = quantise_anim(bases, anim);
    let s = section_frames;
    let chains = (0..section_count(n, s))
        .map(|i| {
            let (first, count) = section_span(n, s, i);
            finish_chain(rle_records(&q, anim.delta, first, count))
        })
        .collect();
    Encoded {
        section_frames: s as i32,
        chains,
    }
}

/// Which section and local frame hold frame `f` of an animation of `num_frames` frames with
/// `section_frames` frames per section (§3.2); `(0, f)` when not sectioned. The last frame of
/// an animation longer than one section lives alone in section `num_frames / S + 1`.
pub fn section_of(num_frames: usize, section_frames: usize, f: usize) -> (usize, usize) {
    if section_frames == 0 {
        return (0, f);
    }
    if num_frames > section_frames && f + 1 == num_frames {
        return (num_frames / section_frames + 1, 0);
    }
    let s = f / section_frames;
    (s, f - s * section_frames)
}

// ---------------------------------------------------------------------------------------------
// Decoding (§4.6, §11)
// ---------------------------------------------------------------------------------------------

fn read<const N: usize>(bytes: &[u8], at: usize) -> Result<[u8; N], String> {
    at.checked_add(N)
        .and_then(|end| bytes.get(at..end))
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or_else(|| {
            format!(
                "read of {N} bytes at {at} is past the end of the data ({} bytes)",
                bytes.len()
            )
        })
}

fn read_i16(bytes: &[u8], at: usize) -> Result<i16, String> {
    read::<2>(bytes, at).map(i16::from_le_bytes)
}

/// Slot `i` (16-bit) of the stream at `p`.
fn slot(bytes: &[u8], p: usize, i: usize) -> Result<i16, String> {
    let at = i
        .checked_mul(2)
        .and_then(|o| p.checked_add(o))
        .ok_or("stream address overflow")?;
    read_i16(bytes, at)
}

/// `(valid, total)` of the header at `p`.
fn header(bytes: &[u8], p: usize) -> Result<(usize, usize), String> {
    let [valid, total] = read::<2>(bytes, p)?;
    Ok((usize::from(valid), usize::from(total)))
}

/// Skips headers while `total ≤ k` (§4.6): the address of the header holding frame `k` and
/// `k` relative to it. A header with total 0 reached this way is "ran off the end" → error.
fn find_run(
    bytes: &[u8],
    mut p: usize,
    mut k: usize,
) -> Result<(usize, usize, usize, usize), String> {
    let (mut valid, mut total) = header(bytes, p)?;
    // Each step advances at least one slot, and every read is bounds-checked, so this ends.
    while total <= k {
        k -= total;
        p = p
            .checked_add(2 * (valid + 1))
            .ok_or("stream address overflow")?;
        (valid, total) = header(bytes, p)?;
        if total == 0 {
            return Err(format!(
                "run-length stream ends (header with total 0 at {p}) before the frame"
            ));
        }
    }
    Ok((p, k, valid, total))
}

/// `ExtractAnimValue` for one frame (§4.6 rule 1).
/// Frame `k` of one run-length value stream (§4.6) that starts at byte 0 of `bytes`.
pub fn stream_value(bytes: &[u8], k: usize) -> Result<i16, String> {
    extract_one(bytes, 0, k)
}

fn extract_one(bytes: &[u8], p: usize, k: usize) -> Result<i16, String> {
    let (p, k, valid, _) = find_run(bytes, p, k)?;
    slot(bytes, p, if k < valid { k + 1 } else { valid })
}

/// `ExtractAnimValue` for frames `k` and `k + 1` (§4.6 rule 2), with the engine's quirk: a
/// stream whose first header is (1, 1) gives its first value for both, whatever `k`.
fn extract_pair(bytes: &[u8], p: usize, k: usize) -> Result<(i16, i16), String> {
    if header(bytes, p)? == (1, 1) {
        let v = slot(bytes, p, 1)?;
        return Ok((v, v));
    }
    let (p, k, valid, total) = find_run(bytes, p, k)?;
    if k < valid {
        let v1 = slot(bytes, p, k + 1)?;
        let v2 = if k + 1 < valid {
            slot(bytes, p, k + 2)?
        } else if k + 1 < total {
            v1
        } else {
            slot(bytes, p, valid + 2)?
        };
        Ok((v1, v2))
    } else {
        let v1 = slot(bytes, p, valid)?;
        let v2 = if k + 1 < total {
            v1
        } else {
            slot(bytes, p, valid + 2)?
        };
        Ok((v1, v2))
    }
}

/// The three channels behind the value-pointer at `vp` (§4.5): per axis `(v1, v2)` scaled,
/// 0 for absent channels (offset ≤ 0). `v2` is only read when `pair`.
fn extract_axes(
    bytes: &[u8],
    vp: usize,
    scale: [f32; 3],
    k: usize,
    pair: bool,
) -> Result<([f32; 3], [f32; 3]), String> {
    let mut v1 = [0.0f32; 3];
    let mut v2 = [0.0f32; 3];
    for a in 0..3 {
        let off = read_i16(bytes, vp + 2 * a)?;
        if off <= 0 {
            continue;
        }
        let p = vp + off as usize;
        let (x, y) = if pair {
            extract_pair(bytes, p, k)?
        } else {
            let x = extract_one(bytes, p, k)?;
            (x, x)
        };
        v1[a] = f32::from(x) * scale[a];
        v2[a] = f32::from(y) * scale[a];
    }
    Ok((v1, v2))
}

/// `blend(p, q, t)` of §1.3: align, component-wise lerp, normalise (nlerp).
pub fn quat_blend(p: [f32; 4], q: [f32; 4], t: f32) -> [f32; 4] {
    let q = align(p, q);
    let s = 1.0 - t;
    normalised([
        s * p[0] + t * q[0],
        s * p[1] + t * q[1],
        s * p[2] + t * q[2],
        s * p[3] + t * q[3],
    ])
}

/// Decodes the record at `rec` for `base` (§11 step 6).
fn decode_record(
    bytes: &[u8],
    rec: usize,
    base: &BoneBase,
    k: usize,
    t: f32,
) -> Result<DecodedPose, String> {
    let [_, flags, _, _] = read::<4>(bytes, rec)?;
    let p = rec + 4;
    let delta = flags & ANIM_DELTA != 0;
    let pair = t > MIN_FRACTION;
    let quat = if flags & ANIM_RAWROT != 0 {
        quat48_decode(read(bytes, p)?)
    } else if flags & ANIM_RAWROT2 != 0 {
        quat64_decode(read(bytes, p)?)
    } else if flags & ANIM_ANIMROT == 0 {
        if delta {
            IDENTITY
        } else {
            base.quat
        }
    } else {
        let (mut a1, mut a2) = extract_axes(bytes, p, base.rotscale, k, pair)?;
        if !delta {
            for a in 0..3 {
                a1[a] += base.rot[a];
                a2[a] += base.rot[a];
            }
        }
        if pair && a1 != a2 {
            quat_blend(euler_quat(a1), euler_quat(a2), t)
        } else {
            euler_quat(a1)
        }
    };
    let pos = if flags & ANIM_RAWPOS != 0 {
        let at = p
            + if flags & ANIM_RAWROT != 0 { 6 } else { 0 }
            + if flags & ANIM_RAWROT2 != 0 { 8 } else { 0 };
        vector48_decode(read(bytes, at)?)
    } else if flags & ANIM_ANIMPOS == 0 {
        if delta {
            [0.0; 3]
        } else {
            base.pos
        }
    } else {
        let vp = p + if flags & ANIM_ANIMROT != 0 { 6 } else { 0 };
        let (v1, v2) = extract_axes(bytes, vp, base.posscale, k, pair)?;
        let mut pos = [0.0f32; 3];
        for a in 0..3 {
            pos[a] = if pair {
                v1[a] * (1.0 - t) + v2[a] * t
            } else {
                v1[a]
            };
            if !delta {
                pos[a] += base.pos[a];
            }
        }
        pos
    };
    Ok(DecodedPose { pos, quat })
}

/// Decodes the record chain starting at `bytes[start..]` at local frame `k` plus fraction `t`
/// (0 ≤ t < 1) for every bone, as the engine does (§11 steps 5–6). `anim_delta`: the animdesc
/// has `STUDIO_DELTA` (bones without a record are identity/zero instead of the rest pose).
/// Every read is bounds-checked: malformed bytes give an error, never a panic.
///
/// Like the engine, bones are walked in order and the current record is consumed only when its
/// bone matches; a record out of order leaves it and every later bone at the rest pose. A
/// `nextoffset` of 0 ends the chain, a negative one is an error; at most one record per bone
/// is read.
pub fn decode_chain(
    bytes: &[u8],
    start: usize,
    bases: &[BoneBase],
    k: usize,
    t: f32,
    anim_delta: bool,
) -> Result<Vec<DecodedPose>, String> {
    let mut out = Vec::with_capacity(bases.len());
    let mut cur = Some(start);
    for (i, base) in bases.iter().enumerate() {
        let here = match cur {
            Some(r) => {
                let [bone, _, _, _] = read::<4>(bytes, r)?;
                (usize::from(bone) == i).then_some(r)
            }
            None => None,
        };
        let Some(r) = here else {
            out.push(if anim_delta {
                DecodedPose {
                    pos: [0.0; 3],
                    quat: IDENTITY,
                }
            } else {
                DecodedPose {
                    pos: base.pos,
                    quat: base.quat,
                }
            });
            continue;
        };
        out.push(
            decode_record(bytes, r, base, k, t)
                .map_err(|e| format!("record of bone {i} at {r}: {e}"))?,
        );
        let next = read_i16(bytes, r + 2)?;
        cur = match next {
            0 => None,
            n if n < 0 => {
                return Err(format!(
                    "record of bone {i} at {r}: negative nextoffset {n}"
                ))
            }
            n => Some(r + n as usize),
        };
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Structural checks (§4, §11)
// ---------------------------------------------------------------------------------------------

/// Walks one run-length stream at `p` that must cover exactly `frames` frames (§4.6); pushes
/// its problems and returns the address just past it (or `None` when it cannot be walked).
fn check_stream(
    bytes: &[u8],
    p: usize,
    frames: usize,
    what: &str,
    problems: &mut Vec<String>,
) -> Option<usize> {
    let mut at = p;
    let mut covered = 0usize;
    let mut first = true;
    while covered < frames {
        let Ok((valid, total)) = header(bytes, at) else {
            problems.push(format!(
                "{what}: stream runs past the end of the data after {covered} of {frames} frames"
            ));
            return None;
        };
        if total == 0 {
            problems.push(format!(
                "{what}: header with total 0 after {covered} of {frames} frames"
            ));
            return None;
        }
        if valid == 0 || valid > total {
            problems.push(format!(
                "{what}: header valid {valid} / total {total} (needs 1 ≤ valid ≤ total)"
            ));
        }
        if first && valid == 1 && total == 1 && frames > 1 {
            problems.push(format!(
                "{what}: first header is (1, 1) in a {frames}-frame chain (the engine then plays the first value for every interpolated frame)"
            ));
        }
        first = false;
        covered += total;
        at = at.checked_add(2 * (valid + 1))?;
        if at > bytes.len() {
            problems.push(format!("{what}: values run past the end of the data"));
            return None;
        }
    }
    if covered != frames {
        problems.push(format!(
            "{what}: headers cover {covered} frames, not {frames}"
        ));
    }
    Some(at)
}

/// The structural rules of §4 and §11 for the record chain at `bytes[start..]` of an
/// animation (or section) of `frames_in_chain` frames in a model of `num_bones` bones: one
/// readable problem per violation, none for a good chain.
///
/// Checked: bones strictly ascending and below `num_bones` (or the single empty record
/// `FF 00 00 00`); no unknown flag bits (outside 0x3f); no raw and run-length data in one
/// record; not `RAWROT` with `RAWROT2`; `nextoffset` not negative; payload, value-pointer
/// targets and streams inside the record and the data; no negative value-pointer offset; every
/// stream's headers `1 ≤ valid ≤ total` covering exactly `frames_in_chain` frames, the first not
/// (1, 1) when there is more than one frame; every record ≤ 32767 bytes. Never panics.
pub fn validate_chain(
    bytes: &[u8],
    start: usize,
    num_bones: usize,
    frames_in_chain: usize,
) -> Vec<String> {
    let mut problems = Vec::new();
    if frames_in_chain == 0 {
        problems.push("the chain covers no frame".to_string());
    }
    let max_records = num_bones.max(1);
    let mut at = start;
    let mut prev: Option<u8> = None;
    let mut n = 0usize;
    loop {
        if n == max_records {
            problems.push(format!(
                "more than {max_records} records for {num_bones} bones"
            ));
            break;
        }
        n += 1;
        let Ok([bone, flags, lo, hi]) = read::<4>(bytes, at) else {
            problems.push(format!(
                "record {n}: header at {at} is past the end of the data"
            ));
            break;
        };
        let next = i16::from_le_bytes([lo, hi]);
        let what = format!("record {n} (bone {bone}, at +{})", at.saturating_sub(start));
        if bone == 255 {
            if n == 1 && flags == 0 && next == 0 {
                break; // the empty chain
            }
            problems.push(format!(
                "{what}: bone 255 is only allowed as the single empty record FF 00 00 00"
            ));
        } else {
            if usize::from(bone) >= num_bones {
                problems.push(format!(
                    "{what}: bone index {bone} is not below numbones {num_bones}"
                ));
            }
            if let Some(p) = prev {
                if bone <= p {
                    problems.push(format!(
                        "{what}: bone {bone} after bone {p}, not strictly ascending"
                    ));
                }
            }
            prev = Some(bone);
        }
        if flags & !ANIM_KNOWN != 0 {
            problems.push(format!(
                "{what}: unknown flag bits 0x{:02x}",
                flags & !ANIM_KNOWN
            ));
        }
        let raw = flags & ANIM_RAW != 0;
        let rle = flags & ANIM_RLE != 0;
        if raw && rle {
            problems.push(format!(
                "{what}: flags 0x{flags:02x} mix raw and run-length data in one record"
            ));
        }
        if flags & ANIM_RAWROT != 0 && flags & ANIM_RAWROT2 != 0 {
            problems.push(format!("{what}: RAWROT together with RAWROT2"));
        }
        if next < 0 {
            problems.push(format!("{what}: negative nextoffset {next}"));
        }
        // The record's end: where the next one starts, or (last record) unknown.
        let end = (next > 0).then(|| at + next as usize);
        let mut extent = 4usize;
        if raw && !rle {
            extent += if flags & ANIM_RAWROT != 0 { 6 } else { 0 }
                + if flags & ANIM_RAWROT2 != 0 { 8 } else { 0 }
                + if flags & ANIM_RAWPOS != 0 { 6 } else { 0 };
            if at + extent > bytes.len() {
                problems.push(format!("{what}: raw payload runs past the end of the data"));
            }
        } else if rle && !raw {
            let mut ptrs = Vec::new();
            if flags & ANIM_ANIMROT != 0 {
                ptrs.push(("rotation", at + 4));
            }
            if flags & ANIM_ANIMPOS != 0 {
                ptrs.push(("position", at + 4 + 6 * ptrs.len()));
            }
            extent += 6 * ptrs.len();
            let streams_from = at + extent;
            for (kind, vp) in ptrs {
                for (a, axis) in ["x", "y", "z"].iter().enumerate() {
                    let sw = format!("{what} {kind} {axis}");
                    let Ok(off) = read_i16(bytes, vp + 2 * a) else {
                        problems.push(format!("{sw}: value-pointer past the end of the data"));
                        continue;
                    };
                    if off < 0 {
                        problems.push(format!(
                            "{sw}: negative value-pointer offset {off} (the engine treats the channel as absent)"
                        ));
                        continue;
                    }
                    if off == 0 {
                        continue;
                    }
                    let sp = vp + off as usize;
                    if sp < streams_from || end.is_some_and(|e| sp >= e) {
                        problems.push(format!(
                            "{sw}: value-pointer offset {off} points outside the record's streams"
                        ));
                        continue;
                    }
                    if let Some(stop) = check_stream(bytes, sp, frames_in_chain, &sw, &mut problems)
                    {
                        if end.is_some_and(|e| stop > e) {
                            problems.push(format!("{sw}: stream runs past the record's end"));
                        }
                        extent = extent.max(stop - at);
                    }
                }
            }
        }
        if let Some(e) = end {
            if at + extent > e {
                problems.push(format!(
                    "{what}: payload of {extent} bytes is longer than nextoffset {next}"
                ));
            }
        } else if extent > MAX_RECORD {
            problems.push(format!(
                "{what}: record of {extent} bytes, more than the 32767 the i16 offsets allow"
            ));
        }
        match end {
            Some(e) => at = e,
            None => break,
        }
    }
    problems
}

#[cfg(test)]
// The spec's worked examples are written with its own decimals (§4.7, §10), not π's constants.
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use super::*;
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    use std::path::{Path, PathBuf};

    /// Deterministic xorshift64* generator.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.0 = x;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        /// Uniform in [0, 1).
        fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / 16_777_216.0
        }
        fn range(&mut self, lo: f32, hi: f32) -> f32 {
            lo + (hi - lo) * self.unit()
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Bytes from spaced hex pairs; `|` separators are ignored.
    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .filter(|t| *t != "|")
            .map(|t| match u8::from_str_radix(t, 16) {
                Ok(v) => v,
                Err(_) => panic!("bad hex `{t}`"),
            })
            .collect()
    }

    fn bases_from(rest: &[([f32; 3], [f32; 3])], scales: &[([f32; 3], [f32; 3])]) -> Vec<BoneBase> {
        rest.iter()
            .zip(scales)
            .map(|(&(pos, rot), &(posscale, rotscale))| BoneBase {
                pos,
                rot,
                quat: euler_quat(rot),
                posscale,
                rotscale,
            })
            .collect()
    }

    /// Angle between two rotations, `2·acos(|q1·q2|)` computed through the chord
    /// (`4·asin(|q1 − ±q2| / 2)`), which stays accurate near 0 where acos does not.
    fn angle(q1: [f32; 4], q2: [f32; 4]) -> f64 {
        let n = |q: [f32; 4]| {
            let q = q.map(f64::from);
            let l = q.iter().map(|c| c * c).sum::<f64>().sqrt();
            q.map(|c| c / l)
        };
        let (a, b) = (n(q1), n(q2));
        let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let s = if dot < 0.0 { -1.0 } else { 1.0 };
        let chord = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - s * y) * (x - s * y))
            .sum::<f64>()
            .sqrt();
        4.0 * (chord / 2.0).min(1.0).asin()
    }

    fn close(a: f32, b: f32, tol: f32) -> bool {
        (a - b).abs() <= tol
    }

    fn one_anim<'a>(
        n: usize,
        frames: &'a [LocalPose],
        delta: bool,
        weights: &'a [f32],
        pos_weights: &'a [f32],
    ) -> AnimInput<'a> {
        AnimInput {
            num_frames: n,
            frames,
            delta,
            weights,
            pos_weights,
        }
    }

    // ---- §5.4 run-length builder -------------------------------------------------------------

    #[test]
    fn rle_spec_examples() {
        // §4.7 mixed example
        assert_eq!(
            rle_stream(&[1, 2, 2, 3, 3, 3, 4]),
            hex("04 06 | 01 00 02 00 02 00 03 00 | 01 01 | 04 00")
        );
        // §4.7 / §10.3 changing channel
        assert_eq!(
            rle_stream(&[0, 8191, 16383, 24575, 32767]),
            hex("05 05 00 00 FF 1F FF 3F FF 5F FF 7F")
        );
        // §4.7 constant channel
        assert_eq!(rle_stream(&[32767; 5]), hex("01 05 FF 7F"));
        assert_eq!(rle_stream(&[]), Vec::<u8>::new());
        assert_eq!(rle_stream(&[-2]), hex("01 01 FE FF"));
    }

    #[test]
    fn rle_builder_rules() {
        // an isolated pair inside a changing run stays explicit
        assert_eq!(
            rle_stream(&[1, 2, 2, 3]),
            hex("04 04 01 00 02 00 02 00 03 00")
        );
        // a repeat of the last frame becomes a repeat run
        assert_eq!(rle_stream(&[1, 2, 2]), hex("02 03 01 00 02 00"));
        // §4.6: 5,9,9,9 must not start with a (1,1) header
        assert_eq!(rle_stream(&[5, 9, 9, 9]), hex("02 04 05 00 09 00"));
        // runs hold at most 255 frames
        assert_eq!(rle_stream(&[7; 300]), hex("01 FF 07 00 01 2D 07 00"));
        let ramp: Vec<i16> = (0..300).collect();
        let s = rle_stream(&ramp);
        assert_eq!(&s[0..2], &[255, 255]);
        assert_eq!(&s[512..514], &[45, 45]);
        assert_eq!(s.len(), 2 * (300 + 2));
        // random streams: headers valid, cover every frame, decode back, never (1,1) first
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..500 {
            let n = 1 + rng.below(700);
            let mut v = Vec::with_capacity(n);
            let mut cur = 0i16;
            for _ in 0..n {
                if rng.below(3) == 0 {
                    cur = rng.below(5) as i16 - 2;
                }
                v.push(cur);
            }
            let s = rle_stream(&v);
            let mut p = 0;
            let mut covered = 0;
            let mut first = true;
            while covered < n {
                let (valid, total) = (usize::from(s[p]), usize::from(s[p + 1]));
                assert!(valid >= 1 && valid <= total, "{valid}/{total}");
                assert!(!(first && n > 1 && valid == 1 && total == 1));
                first = false;
                covered += total;
                p += 2 * (valid + 1);
            }
            assert_eq!(covered, n);
            assert_eq!(p, s.len());
            for (k, &want) in v.iter().enumerate() {
                assert_eq!(extract_one(&s, 0, k), Ok(want), "frame {k}");
            }
        }
    }

    // ---- §5.1 scales ---------------------------------------------------------------------------

    #[test]
    fn scales_seed_widen_wrap_and_delta() {
        let rest = [([0.0, 1000.0, 0.0], [0.0, 0.0, 3.0])];
        let f = [LocalPose {
            pos: [-300.0, 1000.0, 5.0],
            rot: [0.5, 0.0, -2.0],
        }];
        let w = [1.0];
        let anims = [one_anim(1, &f, false, &w, &w)];
        let s = compute_scales(&rest, &anims);
        assert_eq!(s.len(), 1);
        let (ps, rs) = s[0];
        assert_eq!(ps[0], -300.0f32 / -32768.0); // lo side
        assert_eq!(ps[1], 128.0f32 / 32767.0); // seed
        assert_eq!(ps[2], 128.0f32 / 32767.0);
        assert_eq!(rs[0], 0.5f32 / 32767.0);
        assert_eq!(rs[1], std::f32::consts::FRAC_PI_8 / 32767.0);
        // −2 − 3 = −5 wraps to 2π − 5
        assert!(close(rs[2], (2.0 * PI - 5.0) / 32767.0, 1e-11), "{}", rs[2]);
        // a delta animation widens with its raw values, not against the rest pose
        let fd = [LocalPose {
            pos: [0.0, 200.0, 0.0],
            rot: [0.0, 0.0, 0.0],
        }];
        let anims = [one_anim(1, &fd, true, &w, &w)];
        let (ps, _) = compute_scales(&rest, &anims)[0];
        assert_eq!(ps[1], 200.0f32 / 32767.0);
    }

    // ---- §10 worked example --------------------------------------------------------------------

    fn spec10() -> (Vec<BoneBase>, Vec<LocalPose>) {
        let rest = [
            ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
            ([10.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
        ];
        let theta = [0.0, 0.392699, 0.785398, 1.178097, 1.570796];
        let mut frames = Vec::new();
        for th in theta {
            frames.push(LocalPose {
                pos: [0.0; 3],
                rot: [0.0, 0.0, FRAC_PI_2],
            });
            frames.push(LocalPose {
                pos: [10.0, 0.0, 0.0],
                rot: [0.0, 0.0, th],
            });
        }
        let w = [1.0, 1.0];
        let scales = compute_scales(&rest, &[one_anim(5, &frames, false, &w, &w)]);
        (bases_from(&rest, &scales), frames)
    }

    const SPEC10_CHAIN: &str = "00 08 0E 00 | 00 00 00 00 06 00 | 01 05 FF 7F | \
        01 08 00 00 | 00 00 00 00 06 00 | 05 05 00 00 FF 1F FF 3F FF 5F FF 7F | 00 00 00 00";

    #[test]
    fn spec10_scales_and_chain() {
        let (bases, frames) = spec10();
        let rel = |a: f32, b: f32| ((a - b) / b).abs() < 1e-6;
        for b in &bases {
            for a in 0..3 {
                assert!(rel(b.posscale[a], 0.0039063692), "{:?}", b.posscale);
            }
            assert!(rel(b.rotscale[0], 1.1984591e-5));
            assert!(rel(b.rotscale[1], 1.1984591e-5));
        }
        assert!(rel(bases[0].rotscale[2], 4.7938363e-5));
        assert!(rel(bases[1].rotscale[2], 4.7938353e-5));
        let w = [1.0, 1.0];
        let enc = encode(&bases, &one_anim(5, &frames, false, &w, &w));
        assert_eq!(enc.section_frames, 0);
        assert_eq!(enc.chains, vec![hex(SPEC10_CHAIN)]);
    }

    #[test]
    fn spec10_decodes_back() -> Result<(), String> {
        let (bases, _) = spec10();
        let chain = hex(SPEC10_CHAIN);
        let want_z = [0.0, 0.392663, 0.785374, 1.178085, 1.570796];
        for (k, z) in want_z.iter().enumerate() {
            let d = decode_chain(&chain, 0, &bases, k, 0.0, false)?;
            assert_eq!(d.len(), 2);
            let root = [0.0, 0.0, 0.70710677, 0.70710677];
            assert!(angle(d[0].quat, root) < 1e-6, "{:?}", d[0]);
            assert_eq!(d[0].pos, [0.0; 3]);
            assert!(angle(d[1].quat, euler_quat([0.0, 0.0, *z])) < 2e-6);
            assert_eq!(d[1].pos, [10.0, 0.0, 0.0]);
        }
        // §4.7: frame 2 → 16383 · scale = 0.785374
        let s = bases[1].rotscale[2];
        assert!(close(16383.0 * s, 0.785374, 1e-6));
        // §4.7: cycle 0.6 → k = 2, t = 0.4: nlerp of the quaternions of frames 2 and 3
        let d = decode_chain(&chain, 0, &bases, 2, 0.4, false)?;
        let want = quat_blend(
            euler_quat([0.0, 0.0, 16383.0 * s]),
            euler_quat([0.0, 0.0, 24575.0 * s]),
            0.4,
        );
        assert!(angle(d[1].quat, want) < 1e-6);
        let z = 0.785374 + 0.4 * (1.178085 - 0.785374);
        assert!(angle(d[1].quat, euler_quat([0.0, 0.0, z])) < 1e-3);
        Ok(())
    }

    // ---- §7 one-frame animation, raw records ----------------------------------------------

    #[test]
    fn spec7_quaternion48() -> Result<(), String> {
        let q = [0.0, 0.0, FRAC_PI_4.sin(), FRAC_PI_4.cos()];
        assert_eq!(quat48(q).to_vec(), hex("00 80 00 80 41 6D"));
        let chain = hex("00 02 00 00 | 00 80 00 80 41 6D | 00 00 00 00");
        let base = BoneBase {
            pos: [1.0, 2.0, 3.0],
            rot: [0.0; 3],
            quat: IDENTITY,
            posscale: [1.0; 3],
            rotscale: [1.0; 3],
        };
        let d = decode_chain(&chain, 0, &[base], 0, 0.0, false)?;
        let z = (27969.0 - 16384.0) / 16384.0f32;
        assert_eq!(d[0].quat, [0.0, 0.0, z, (1.0 - z * z).sqrt()]);
        assert!(angle(d[0].quat, q) < 1e-4);
        assert_eq!(d[0].pos, [1.0, 2.0, 3.0]);
        Ok(())
    }

    #[test]
    fn quaternion64_encoding() {
        let id = quat64(IDENTITY);
        let c = 1_048_576u64;
        assert_eq!(u64::from_le_bytes(id), c | c << 21 | c << 42);
        assert_eq!(quat64_decode(id), IDENTITY);
        // truncation toward zero: −0.6·2²⁰ = −629145.6 → −629145; w < 0 sets bit 63
        let v = u64::from_le_bytes(quat64([-0.6, 0.0, 0.0, -0.8]));
        assert_eq!(v & 0x1f_ffff, 1_048_576 - 629_145);
        assert_eq!(v >> 63, 1);
        let mut rng = Rng(77);
        for _ in 0..2000 {
            let q = normalised([
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            ]);
            let d = quat64_decode(quat64(q));
            for a in 0..3 {
                assert!(close(d[a], q[a], 1.5e-6), "{q:?} {d:?}");
            }
            assert!(angle(d, q) < 4e-3);
            let d48 = quat48_decode(quat48(q));
            assert!(close(d48[0], q[0], 3.1e-5) && close(d48[2], q[2], 6.2e-5));
        }
    }

    #[test]
    fn float16_like_valve() {
        assert_eq!(half(1.0), 0x3c00);
        assert_eq!(half(-2.0), 0xc000);
        assert_eq!(half(0.1), 0x2e66);
        assert_eq!(half(1.0 + 3.0 / 4096.0), 0x3c00); // truncated, not rounded
        assert_eq!(half(65504.0), 0x7bff);
        assert_eq!(half(1e9), 0x7bff);
        assert_eq!(half(f32::INFINITY), 0x7bff);
        assert_eq!(half(f32::NEG_INFINITY), 0xfbff);
        assert_eq!(half(f32::NAN), 0);
        assert_eq!(half(2f32.powi(-14)), 0x0400);
        assert_eq!(half(2f32.powi(-24)), 0x0001);
        assert_eq!(half(3.0 * 2f32.powi(-20)), 0x0030);
        assert_eq!(half(2f32.powi(-25)), 0);
        assert_eq!(half(1e-40) & 0x7fff, 0); // f32 denormal
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x7c00), 65504.0);
        assert_eq!(half_to_f32(0xfc00), -65504.0);
        assert_eq!(half_to_f32(0x7e00), 0.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(half_to_f32(0x83ff), -1023.0 * 2f32.powi(-24));
        let mut rng = Rng(5);
        for _ in 0..5000 {
            let x = rng.range(-1.0, 1.0) * 2f32.powf(rng.range(-30.0, 16.0));
            let y = half_to_f32(half(x));
            assert!(
                (y - x).abs() <= x.abs() / 1024.0 + 2f32.powi(-24),
                "{x} {y}"
            );
            assert!(y.abs() <= x.abs());
            let v = vector48_decode(vector48([x, -x, 0.5 * x]));
            assert_eq!(v[0], y);
        }
    }

    // ---- §4.6 decoder rules --------------------------------------------------------------------

    /// A one-bone chain whose only channel is position x with `stream`.
    fn pos_x_chain(stream: &str) -> Vec<u8> {
        let mut c = hex("00 04 00 00 | 06 00 00 00 00 00");
        c.extend(hex(stream));
        c.extend([0; 4]);
        c
    }

    fn unit_base() -> BoneBase {
        BoneBase {
            pos: [0.0; 3],
            rot: [0.0; 3],
            quat: IDENTITY,
            posscale: [1.0; 3],
            rotscale: [1.0; 3],
        }
    }

    fn pos_x(chain: &[u8], k: usize, t: f32) -> Result<f32, String> {
        let d = decode_chain(chain, 0, &[unit_base()], k, t, false)?;
        Ok(d[0].pos[0])
    }

    #[test]
    fn decoder_first_header_quirk() -> Result<(), String> {
        // 5, 9, 9, 9 as (1,1)[5] (1,3)[9]: single reads are right ...
        let bad = pos_x_chain("01 01 05 00 01 03 09 00");
        for (k, want) in [5.0, 9.0, 9.0, 9.0].into_iter().enumerate() {
            assert_eq!(pos_x(&bad, k, 0.0)?, want);
        }
        // ... but every interpolated read returns the first value
        assert_eq!(pos_x(&bad, 0, 0.5)?, 5.0);
        assert_eq!(pos_x(&bad, 2, 0.5)?, 5.0);
        // the builder's stream for the same values interpolates properly
        let good = pos_x_chain("02 04 05 00 09 00");
        assert_eq!(pos_x(&good, 0, 0.5)?, 7.0);
        assert_eq!(pos_x(&good, 2, 0.5)?, 9.0);
        // t ≤ 0.001 counts as an integer frame
        assert_eq!(pos_x(&good, 0, 0.001)?, 5.0);
        Ok(())
    }

    #[test]
    fn decoder_value_pairs() -> Result<(), String> {
        // frames 1, 2, 2, 7, 7 as (2,3)[1,2] (1,2)[7]
        let c = pos_x_chain("02 03 01 00 02 00 01 02 07 00");
        let singles: Vec<f32> = (0..5)
            .map(|k| pos_x(&c, k, 0.0))
            .collect::<Result<_, _>>()?;
        assert_eq!(singles, [1.0, 2.0, 2.0, 7.0, 7.0]);
        assert_eq!(pos_x(&c, 0, 0.5)?, 1.5); // both inside the stored values
        assert_eq!(pos_x(&c, 1, 0.5)?, 2.0); // next frame repeats
        assert_eq!(pos_x(&c, 2, 0.5)?, 4.5); // next frame from the next header
        assert_eq!(pos_x(&c, 3, 0.25)?, 7.0);
        // running off the end of a stream is an error
        assert!(pos_x(&c, 5, 0.0).is_err());
        Ok(())
    }

    #[test]
    fn decoder_missing_bones_rest_or_identity() -> Result<(), String> {
        let (bases, _) = spec10();
        let empty = hex("FF 00 00 00 00 00 00 00");
        let d = decode_chain(&empty, 0, &bases, 0, 0.0, false)?;
        assert_eq!(d[1].pos, [10.0, 0.0, 0.0]);
        assert_eq!(d[1].quat, bases[1].quat);
        let d = decode_chain(&empty, 0, &bases, 0, 0.0, true)?;
        assert_eq!(d[1].pos, [0.0; 3]);
        assert_eq!(d[1].quat, IDENTITY);
        // a DELTA record without rotation data decodes to identity, without position to 0
        let c = hex("01 14 00 00 | 06 00 00 00 00 00 | 01 02 03 00 | 00 00 00 00");
        let d = decode_chain(&c, 0, &bases, 1, 0.0, true)?;
        assert_eq!(d[0].quat, IDENTITY);
        assert_eq!(d[1].quat, IDENTITY);
        assert_eq!(d[1].pos, [3.0 * bases[1].posscale[0], 0.0, 0.0]);
        // out of order (bone 1's record, then bone 0's): bone 0 finds no record and keeps its
        // rest pose, bone 1 takes the first record, the second is never reached
        let mut swapped = hex(SPEC10_CHAIN);
        swapped[0] = 1;
        swapped[14] = 0;
        let d = decode_chain(&swapped, 0, &bases, 4, 0.0, false)?;
        assert_eq!(d[0].quat, bases[0].quat);
        let z = 32767.0 * bases[1].rotscale[2];
        assert_eq!(d[1].quat, euler_quat([0.0, 0.0, z]));
        Ok(())
    }

    // ---- sections (§3.2) ---------------------------------------------------------------------

    #[test]
    fn section_table() {
        assert_eq!(section_of(100, 0, 57), (0, 57));
        // 151 frames, S = 30 (Valve's, §5.5a): 7 sections, the last two hold only frame 150
        assert_eq!(section_count(151, 30), 7);
        assert_eq!(section_of(151, 30, 0), (0, 0));
        assert_eq!(section_of(151, 30, 29), (0, 29));
        assert_eq!(section_of(151, 30, 30), (1, 0));
        assert_eq!(section_of(151, 30, 149), (4, 29));
        assert_eq!(section_of(151, 30, 150), (6, 0));
        assert_eq!(section_span(151, 30, 0), (0, 31));
        assert_eq!(section_span(151, 30, 4), (120, 31));
        assert_eq!(section_span(151, 30, 5), (150, 1));
        assert_eq!(section_span(151, 30, 6), (150, 1));
        // 150 frames: frame 149 lives alone in section 6; section 4 reaches it for interpolation
        assert_eq!(section_of(150, 30, 148), (4, 28));
        assert_eq!(section_of(150, 30, 149), (6, 0));
        assert_eq!(section_span(150, 30, 4), (120, 30));
        assert_eq!(section_span(150, 30, 5), (149, 1));
        // no more frames than one section: nothing is moved to a last section
        assert_eq!(section_of(20, 30, 19), (0, 19));
        assert_eq!(section_count(20, 30), 2);
        assert_eq!(section_span(20, 30, 0), (0, 20));
        // every frame is in the section span that section_of names
        for n in 1..200 {
            for s in [1, 2, 7, 30] {
                for f in 0..n {
                    let (sec, local) = section_of(n, s, f);
                    let (first, count) = section_span(n, s, sec);
                    assert!(sec < section_count(n, s));
                    assert_eq!(first + local, f);
                    let reach = if f + 1 < n { local + 1 } else { local };
                    assert!(reach < count, "n {n} s {s} f {f}");
                }
            }
        }
    }

    // ---- encoder choices (§5.3, §5.5) ---------------------------------------------------------

    #[test]
    fn one_frame_half_turn_uses_euler_channels() -> Result<(), String> {
        // (0, 0, 1, 0): a Quaternion64 cannot hold z = 1 and rebuilds w ≈ 0.0017 (3.4e-3 rad);
        // the bone gets a one-frame ANIMROT record instead, within Σ rotscale
        let rest = [([0.0; 3], [0.0; 3]); 1];
        let f = [LocalPose {
            pos: [0.0; 3],
            rot: [0.0, 0.0, std::f32::consts::PI - 1e-7],
        }];
        let w = [1.0; 1];
        let anim = one_anim(1, &f, false, &w, &w);
        let bases = bases_from(
            &rest,
            &compute_scales(&rest, &[one_anim(1, &f, false, &w, &w)]),
        );
        let raw = quat64_decode(quat64(euler_quat(f[0].rot)));
        assert!(angle(raw, euler_quat(f[0].rot)) > 1e-3);
        let enc = encode(&bases, &anim);
        let c = &enc.chains[0];
        assert_eq!(c[1], ANIM_ANIMROT);
        assert!(validate_chain(c, 0, 1, 1).is_empty());
        let d = decode_chain(c, 0, &bases, 0, 0.0, false)?;
        let budget: f32 = bases[0].rotscale.iter().sum();
        assert!(f64::from(budget) >= angle(d[0].quat, euler_quat(f[0].rot)));
        Ok(())
    }

    #[test]
    fn one_frame_records_are_raw() -> Result<(), String> {
        let rest = [([0.0; 3], [0.0; 3]); 4];
        let f = [
            LocalPose {
                pos: [1.5, 0.0, 0.0],
                rot: [0.0, 0.0, 1.0],
            },
            LocalPose {
                pos: [0.0, -2.0, 0.0],
                rot: [0.0; 3],
            },
            LocalPose {
                pos: [0.0; 3],
                rot: [0.3, 0.0, 0.0],
            },
            LocalPose::default(),
        ];
        let w = [1.0; 4];
        let anim = one_anim(1, &f, false, &w, &w);
        let bases = bases_from(
            &rest,
            &compute_scales(&rest, &[one_anim(1, &f, false, &w, &w)]),
        );
        let enc = encode(&bases, &anim);
        let c = &enc.chains[0];
        assert_eq!(&c[0..4], &[0, 0x21, 18, 0]);
        assert_eq!(&c[4..12], &quat64(euler_quat([0.0, 0.0, 1.0])));
        assert_eq!(&c[12..18], &vector48([1.5, 0.0, 0.0]));
        assert_eq!(&c[18..22], &[1, 0x01, 10, 0]);
        assert_eq!(&c[28..32], &[2, 0x20, 0, 0]);
        assert_eq!(c.len(), 28 + 12 + 4);
        assert!(c.ends_with(&[0; 4]));
        let d = decode_chain(c, 0, &bases, 0, 0.0, false)?;
        assert_eq!(d[0].pos, [1.5, 0.0, 0.0]);
        assert!(angle(d[0].quat, euler_quat([0.0, 0.0, 1.0])) < 1e-5);
        assert_eq!(d[1].quat, IDENTITY);
        assert_eq!(d[2].pos, [0.0; 3]);
        assert_eq!(
            d[3],
            DecodedPose {
                pos: [0.0; 3],
                quat: IDENTITY
            }
        );
        // delta: DELTA | RAWROT2 | RAWPOS
        let enc = encode(&bases, &one_anim(1, &f, true, &w, &w));
        assert_eq!(enc.chains[0][1], 0x31);
        // everything at rest → the empty chain
        let still = [LocalPose::default(); 4];
        for n in [1, 5] {
            let frames = vec![LocalPose::default(); 4 * n];
            let enc = encode(&bases, &one_anim(n, &frames, false, &w, &w));
            assert_eq!(enc.chains, vec![hex("FF 00 00 00 00 00 00 00")]);
        }
        let enc = encode(&bases, &one_anim(1, &still, true, &w, &w));
        assert_eq!(enc.chains, vec![hex("FF 00 00 00 00 00 00 00")]);
        Ok(())
    }

    #[test]
    fn multi_frame_records() {
        // position only: ANIMROT with three absent Euler channels plus ANIMPOS
        let rest = [([0.0; 3], [0.0; 3]), ([0.0; 3], [0.0; 3])];
        let mut f = Vec::new();
        for x in [0.0, 1.0, 2.0] {
            f.push(LocalPose {
                pos: [x, 0.0, 0.0],
                rot: [0.0; 3],
            });
            f.push(LocalPose::default());
        }
        let w = [1.0, 0.0];
        let bases = bases_from(&rest, &compute_scales(&rest, &[]));
        let enc = encode(&bases, &one_anim(3, &f, false, &w, &w));
        assert_eq!(
            enc.chains,
            vec![hex(
                "00 0C 00 00 | 00 00 00 00 00 00 | 06 00 00 00 00 00 | 03 03 00 00 FF 00 FF 01 | 00 00 00 00"
            )]
        );
        // the zero-weight bone gets no record even when it moves
        for p in f.iter_mut().skip(1).step_by(2) {
            p.rot = [0.0, 0.0, 0.2];
        }
        let enc2 = encode(&bases, &one_anim(3, &f, false, &w, &w));
        assert_eq!(enc2, enc);
        let enc3 = encode(&bases, &one_anim(3, &f, true, &[1.0, 1.0], &w));
        assert_eq!(enc3.chains[0][1], 0x1C);
        assert_eq!(enc3.chains[0][2], 24);
        assert_eq!(enc3.chains[0][25], 0x18);
        // an all-zero channel longer than 255 frames is dropped too
        let n = 300;
        let mut f = Vec::new();
        for i in 0..n {
            f.push(LocalPose {
                pos: [0.0; 3],
                rot: [0.0, 0.0, if i % 2 == 0 { 0.25 } else { 0.0 }],
            });
            f.push(LocalPose::default());
        }
        let enc = encode(&bases, &one_anim(n, &f, false, &[1.0, 1.0], &w));
        let c = &enc.chains[0];
        assert_eq!(&c[0..10], &[0, 0x08, 0, 0, 0, 0, 0, 0, 6, 0]);
        assert_eq!(c.len(), 10 + 2 * (n + 2) + 4);
    }

    #[test]
    fn delta_position_weights() -> Result<(), String> {
        let rest = [([0.0; 3], [0.0; 3])];
        let f = [
            LocalPose {
                pos: [10.0, 0.0, 0.0],
                rot: [0.0; 3],
            },
            LocalPose {
                pos: [-10.0, 0.0, 0.0],
                rot: [0.0; 3],
            },
        ];
        let bases = bases_from(&rest, &compute_scales(&rest, &[]));
        let s = bases[0].posscale[0];
        let enc = encode(&bases, &one_anim(2, &f, true, &[1.0], &[0.5]));
        let v = (10.0 / s).trunc(); // 2559
        let want = (v * 0.5).trunc(); // 1279
        let d0 = decode_chain(&enc.chains[0], 0, &bases, 0, 0.0, true)?;
        let d1 = decode_chain(&enc.chains[0], 0, &bases, 1, 0.0, true)?;
        assert_eq!(d0[0].pos[0], want * s);
        assert_eq!(d1[0].pos[0], -want * s);
        Ok(())
    }

    // ---- round trip (§5.6) ----------------------------------------------------------------------

    /// Everything one animation's encoding must satisfy: structure (§11), one chain per
    /// section, every frame within the §5.6 budget, and interpolated frames equal to the nlerp
    /// / lerp of the integer frames.
    fn check_round_trip(bases: &[BoneBase], anim: &AnimInput, enc: &Encoded) -> Result<(), String> {
        let n = anim.num_frames;
        let nb = bases.len();
        let sf = usize::try_from(enc.section_frames).map_err(|e| e.to_string())?;
        assert_eq!(enc.chains.len(), section_count(n, sf));
        for (i, c) in enc.chains.iter().enumerate() {
            let (_, count) = section_span(n, sf, i);
            let p = validate_chain(c, 0, nb, count);
            assert!(p.is_empty(), "section {i}: {p:?}");
            assert!(c.ends_with(&[0; 4]));
        }
        let mut decoded = Vec::with_capacity(n);
        for f in 0..n {
            let (s, local) = section_of(n, sf, f);
            let chain = enc.chains.get(s).ok_or("no such section")?;
            let d = decode_chain(chain, 0, bases, local, 0.0, anim.delta)?;
            for (b, base) in bases.iter().enumerate() {
                let got = d[b];
                let len = got.quat.iter().map(|c| c * c).sum::<f32>().sqrt();
                assert!(close(len, 1.0, 1e-3));
                if anim.weights[b] < MIN_WEIGHT {
                    let rest = if anim.delta {
                        DecodedPose {
                            pos: [0.0; 3],
                            quat: IDENTITY,
                        }
                    } else {
                        DecodedPose {
                            pos: base.pos,
                            quat: base.quat,
                        }
                    };
                    assert_eq!(got, rest, "frame {f} bone {b}");
                    continue;
                }
                let input = anim.frames[f * nb + b];
                let d6 = channel_deltas(&input, base.pos, base.rot, anim.delta);
                let kept = |c: usize| {
                    let sc = if c < 3 {
                        base.rotscale[c]
                    } else {
                        base.posscale[c - 3]
                    };
                    quantise(d6[c], sc) != 0
                };
                let err = angle(got.quat, euler_quat(input.rot));
                let rle_rot = f64::from(base.rotscale.iter().sum::<f32>()) + 1e-5;
                let raw_ok = n == 1 && (0..3).any(kept) && err < 4e-3;
                assert!(
                    err <= rle_rot || raw_ok,
                    "frame {f}/{n} bone {b}: rotation off by {err} (budget {rle_rot}), input {input:?} got {got:?}"
                );
                for a in 0..3 {
                    let x = input.pos[a];
                    let e = (got.pos[a] - x).abs();
                    let rle_pos = base.posscale[a] + 1e-4 * x.abs();
                    let raw_ok = n == 1 && (3..6).any(kept) && e <= x.abs() / 1024.0 + 1e-6;
                    assert!(
                        e < rle_pos || raw_ok,
                        "frame {f}/{n} bone {b} axis {a}: position off by {e} (budget {rle_pos})"
                    );
                }
            }
            decoded.push(d);
        }
        for f in 0..n.saturating_sub(1) {
            let (s, local) = section_of(n, sf, f);
            let chain = enc.chains.get(s).ok_or("no such section")?;
            let d = decode_chain(chain, 0, bases, local, 0.5, anim.delta)?;
            for b in 0..nb {
                let (p, q) = (decoded[f][b], decoded[f + 1][b]);
                let want = quat_blend(p.quat, q.quat, 0.5);
                assert!(
                    angle(d[b].quat, want) < 1e-5,
                    "frame {f}.5/{n} bone {b}: {:?} vs {want:?}",
                    d[b].quat
                );
                for a in 0..3 {
                    let m = 0.5 * (p.pos[a] + q.pos[a]);
                    assert!(
                        close(d[b].pos[a], m, 1e-4 * (1.0 + m.abs())),
                        "frame {f}.5 bone {b}"
                    );
                }
            }
        }
        Ok(())
    }

    /// One random channel value at frame `f`: offsets from the rest value (or the raw delta).
    fn channel_track(rng: &mut Rng, n: usize, rot: bool) -> Vec<f32> {
        let big = if rot { 1.2 } else { 40.0 };
        let mode = rng.below(7);
        let mut out = Vec::with_capacity(n);
        let c = rng.range(-big, big);
        let step = if rot {
            rng.range(0.001, 0.08)
        } else {
            rng.range(0.01, 3.0)
        };
        let phase = rng.range(0.0, 6.0);
        let freq = rng.range(0.01, 0.5);
        let mut walk = 0.0f32;
        for i in 0..n {
            let v = match mode {
                0 => 0.0,
                1 => c,
                2 => {
                    walk += rng.range(-step, step);
                    walk
                }
                3 => c * (i as f32 * freq + phase).sin(),
                4 => {
                    if rng.below(4) == 0 {
                        walk = rng.range(-big, big);
                    }
                    walk
                }
                5 => rng.range(-1e-7, 1e-7),
                _ => {
                    if rot {
                        // spins through ±π
                        phase + i as f32 * step * 3.0
                    } else {
                        c + i as f32 * step
                    }
                }
            };
            out.push(v);
        }
        out
    }

    struct Generated {
        n: usize,
        frames: Vec<LocalPose>,
        delta: bool,
        weights: Vec<f32>,
        pos_weights: Vec<f32>,
    }

    fn generate(rng: &mut Rng, rest: &[([f32; 3], [f32; 3])], n: usize, delta: bool) -> Generated {
        let nb = rest.len();
        let mut frames = vec![LocalPose::default(); n * nb];
        for (b, &(rp, rr)) in rest.iter().enumerate() {
            for c in 0..6 {
                let track = channel_track(rng, n, c < 3);
                for (f, v) in track.into_iter().enumerate() {
                    let p = &mut frames[f * nb + b];
                    if c < 3 {
                        p.rot[c] = if delta { v } else { rr[c] + v };
                    } else {
                        p.pos[c - 3] = if delta { v } else { rp[c - 3] + v };
                    }
                }
            }
        }
        let weights = (0..nb)
            .map(|_| if rng.below(10) == 0 { 0.0 } else { 1.0 })
            .collect();
        Generated {
            n,
            frames,
            delta,
            weights,
            pos_weights: vec![1.0; nb],
        }
    }

    fn random_rest(rng: &mut Rng, nb: usize) -> Vec<([f32; 3], [f32; 3])> {
        (0..nb)
            .map(|_| {
                (
                    [
                        rng.range(-50.0, 50.0),
                        rng.range(-50.0, 50.0),
                        rng.range(-50.0, 50.0),
                    ],
                    [
                        rng.range(-PI, PI),
                        rng.range(-FRAC_PI_2, FRAC_PI_2),
                        rng.range(-PI, PI),
                    ],
                )
            })
            .collect()
    }

    fn round_trip_set(
        rest: &[([f32; 3], [f32; 3])],
        set: &[Generated],
    ) -> Result<Vec<Encoded>, String> {
        let anims: Vec<AnimInput> = set
            .iter()
            .map(|g| one_anim(g.n, &g.frames, g.delta, &g.weights, &g.pos_weights))
            .collect();
        let scales = compute_scales(rest, &anims);
        let bases = bases_from(rest, &scales);
        let mut out = Vec::new();
        for a in &anims {
            let enc = encode(&bases, a);
            check_round_trip(&bases, a, &enc)?;
            out.push(enc);
        }
        Ok(out)
    }

    #[test]
    fn round_trip_random_animations() -> Result<(), String> {
        let lengths = [
            1, 1, 1, 2, 3, 5, 17, 30, 31, 64, 255, 256, 257, 300, 511, 600,
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut raw = 0;
        for _ in 0..6 {
            let nb = 1 + rng.below(4);
            let rest = random_rest(&mut rng, nb);
            let set: Vec<Generated> = (0..8)
                .map(|_| {
                    let n = lengths[rng.below(lengths.len())];
                    let delta = rng.below(4) == 0;
                    generate(&mut rng, &rest, n, delta)
                })
                .collect();
            let enc = round_trip_set(&rest, &set)?;
            for (g, e) in set.iter().zip(&enc) {
                assert_eq!(e.section_frames, 0, "{} frames", g.n);
                if g.n == 1 && e.chains[0][0] != 255 {
                    raw += 1;
                }
            }
        }
        assert!(raw > 0, "no one-frame animation with data was generated");
        Ok(())
    }

    #[test]
    fn round_trip_sectioned() -> Result<(), String> {
        let mut rng = Rng(42);
        let rest = random_rest(&mut rng, 3);
        let n = 3000;
        // bone 0: all six channels change every frame → a 36 KB record → sections
        let mut big = generate(&mut rng, &rest, n, false);
        let mut walk = [0.0f32; 6];
        for f in 0..n {
            for (c, w) in walk.iter_mut().enumerate() {
                let step = if c < 3 { 0.02 } else { 0.7 };
                *w += if rng.below(2) == 0 { step } else { -step } * rng.range(0.5, 1.0);
                let p = &mut big.frames[f * 3];
                if c < 3 {
                    p.rot[c] = rest[0].1[c] + *w;
                } else {
                    p.pos[c - 3] = rest[0].0[c - 3] + *w;
                }
            }
        }
        big.weights = vec![1.0; 3];
        let small = generate(&mut rng, &rest, 40, false);
        let enc = round_trip_set(&rest, &[big, small])?;
        assert_eq!(enc[0].section_frames, SECTION_FRAMES as i32);
        assert_eq!(enc[0].chains.len(), n / SECTION_FRAMES + 2);
        assert_eq!(enc[1].section_frames, 0);
        Ok(())
    }

    // ---- structural checks (§11) ---------------------------------------------------------------

    fn expect_problem(bytes: &[u8], bones: usize, frames: usize, key: &str) {
        let p = validate_chain(bytes, 0, bones, frames);
        assert!(
            p.iter().any(|m| m.contains(key)),
            "expected a problem with `{key}`, got {p:?}"
        );
    }

    #[test]
    fn validate_finds_violations() {
        let good = hex(SPEC10_CHAIN);
        assert_eq!(validate_chain(&good, 0, 2, 5), Vec::<String>::new());
        assert!(validate_chain(&hex("FF 00 00 00 00 00 00 00"), 0, 2, 1).is_empty());
        // the chain may sit anywhere in a file
        let mut shifted = vec![0xAA; 7];
        shifted.extend(&good);
        assert!(validate_chain(&shifted, 7, 2, 5).is_empty());
        let edit = |at: usize, bytes: &[u8]| {
            let mut c = good.clone();
            c[at..at + bytes.len()].copy_from_slice(bytes);
            c
        };
        let mut swapped = edit(0, &[1]);
        swapped[14] = 0;
        expect_problem(&swapped, 2, 5, "not strictly ascending");
        expect_problem(&edit(14, &[5]), 2, 5, "not below numbones");
        expect_problem(&good, 1, 5, "more than 1 records");
        expect_problem(&edit(14, &[255]), 2, 5, "bone 255");
        expect_problem(&edit(1, &[0x09]), 2, 5, "mix raw and run-length");
        expect_problem(&edit(1, &[0x48]), 2, 5, "unknown flag bits 0x40");
        expect_problem(&edit(2, &[0xFE, 0xFF]), 2, 5, "negative nextoffset");
        expect_problem(&edit(8, &[100, 0]), 2, 5, "points outside");
        expect_problem(
            &edit(8, &[0xFF, 0xFF]),
            2,
            5,
            "negative value-pointer offset",
        );
        expect_problem(&edit(10, &[1, 6]), 2, 5, "headers cover 6 frames, not 5");
        expect_problem(&good, 2, 6, "frames, not 6");
        expect_problem(&edit(10, &[0, 5]), 2, 5, "valid 0");
        expect_problem(&edit(24, &[6, 5]), 2, 5, "valid 6 / total 5");
        expect_problem(&edit(24, &[5, 0]), 2, 5, "total 0");
        expect_problem(&good[..30], 2, 5, "past the end of the data");
        expect_problem(&good[..16], 2, 5, "past the end of the data");
        expect_problem(&good, 2, 0, "covers no frame");
        // (1,1) first header in a multi-frame chain; allowed in a one-frame chain
        let quirk = hex("00 08 00 00 | 00 00 00 00 06 00 | 01 01 00 00 01 04 FF 7F | 00 00 00 00");
        expect_problem(&quirk, 1, 5, "(1, 1)");
        let single = hex("00 08 00 00 | 00 00 00 00 06 00 | 01 01 FF 7F | 00 00 00 00");
        assert!(validate_chain(&single, 0, 1, 1).is_empty());
        // RAWROT with RAWROT2
        let both = hex("00 22 00 00 | 00 00 00 00 00 00 00 00 00 00 00 00 00 00 | 00 00 00 00");
        expect_problem(&both, 1, 1, "RAWROT together with RAWROT2");
        // raw payload longer than nextoffset
        let short = hex("00 20 08 00 | 00 00 00 00 00 00 00 00 | 01 01 00 00 00 00 00 00 00 00");
        expect_problem(&short, 2, 1, "longer than nextoffset");
        // a record over 32767 bytes (the last one, so nextoffset cannot tell)
        let frames = 6000;
        let vals: Vec<i16> = (0..frames).map(|i| i as i16).collect();
        let s = rle_stream(&vals);
        let mut rec = vec![0, 0x08, 0, 0];
        let off = |i: usize| ((6 + i * s.len()) as i16).to_le_bytes();
        for i in 0..3 {
            rec.extend(off(i));
        }
        for _ in 0..3 {
            rec.extend(&s);
        }
        rec.extend([0; 4]);
        expect_problem(&rec, 1, frames, "more than the 32767");
    }

    #[test]
    fn malformed_bytes_never_panic() {
        let (bases, frames) = spec10();
        let w = [1.0, 1.0];
        let mut chains = vec![
            hex(SPEC10_CHAIN),
            hex("00 02 00 00 | 00 80 00 80 41 6D | 00 00 00 00"),
            hex("00 21 12 00 | 00 00 00 00 00 00 00 00 | 00 3C 00 3C 00 3C | 01 20 00 00 | 00 00 00 00 00 00 00 00"),
        ];
        chains.extend(encode(&bases, &one_anim(5, &frames, true, &w, &w)).chains);
        let mut rng = Rng(3);
        let mut errors = 0;
        for i in 0..20000 {
            let mut c = chains[i % chains.len()].clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(c.len());
                c[at] = rng.next() as u8;
            }
            if rng.below(4) == 0 {
                c.truncate(rng.below(c.len() + 1));
            }
            let k = [0, 1, 4, 300, usize::MAX][rng.below(5)];
            let t = [0.0, 0.5, 0.999, f32::NAN][rng.below(4)];
            if decode_chain(&c, 0, &bases, k, t, rng.below(2) == 0).is_err() {
                errors += 1;
            }
            let _ = validate_chain(&c, rng.below(3), 2, [0, 1, 5, 70000][rng.below(4)]);
        }
        assert!(errors > 0);
        assert!(decode_chain(&[], 0, &bases, 0, 0.0, false).is_err());
        assert!(decode_chain(&hex(SPEC10_CHAIN), usize::MAX - 2, &bases, 0, 0.0, false).is_err());
        assert!(!validate_chain(&[], usize::MAX - 1, 2, 5).is_empty());
        let mut neg = hex(SPEC10_CHAIN);
        neg[2] = 0xF0;
        neg[3] = 0xFF;
        assert!(decode_chain(&neg, 0, &bases, 0, 0.0, false).is_err());
    }

    // ---- Valve's own files -------------------------------------------------------------------

    fn corpus_dir() -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
        if dir.is_dir() {
            return Some(dir);
        }
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "{} is missing; CI must have ../shared beside the checkout",
            dir.display()
        );
        eprintln!("skipping: {} not found (not under CI)", dir.display());
        None
    }

    fn mdl_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                mdl_files(&p, out);
            } else if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("mdl")) {
                out.push(p);
            }
        }
    }

    fn i32_at(b: &[u8], at: usize) -> Result<i32, String> {
        read::<4>(b, at).map(i32::from_le_bytes)
    }

    fn f32s_at<const N: usize>(b: &[u8], at: usize) -> Result<[f32; N], String> {
        let mut out = [0.0; N];
        for (i, v) in out.iter_mut().enumerate() {
            *v = f32::from_le_bytes(read::<4>(b, at + 4 * i)?);
        }
        Ok(out)
    }

    fn offset(base: usize, rel: i32) -> Result<usize, String> {
        base.checked_add_signed(rel as isize)
            .ok_or_else(|| format!("offset {rel} from {base} is negative"))
    }

    /// What one Valve file showed: record flags seen, section lengths, frames decoded.
    #[derive(Default)]
    struct Seen {
        flags: std::collections::BTreeMap<u8, usize>,
        sections: Vec<(usize, usize)>,
        frames: usize,
    }

    fn check_valve_mdl(b: &[u8], seen: &mut Seen) -> Result<(), String> {
        let nb = usize::try_from(i32_at(b, 156)?).map_err(|e| e.to_string())?;
        let bi = usize::try_from(i32_at(b, 160)?).map_err(|e| e.to_string())?;
        let mut bases = Vec::with_capacity(nb);
        for i in 0..nb {
            let o = bi + 216 * i;
            bases.push(BoneBase {
                pos: f32s_at(b, o + 32)?,
                quat: f32s_at(b, o + 44)?,
                rot: f32s_at(b, o + 60)?,
                posscale: f32s_at(b, o + 72)?,
                rotscale: f32s_at(b, o + 84)?,
            });
        }
        let na = usize::try_from(i32_at(b, 180)?).map_err(|e| e.to_string())?;
        let ai = usize::try_from(i32_at(b, 184)?).map_err(|e| e.to_string())?;
        for a in 0..na {
            let d = ai + 100 * a;
            let flags = i32_at(b, d + 12)?;
            let nf = usize::try_from(i32_at(b, d + 16)?).map_err(|e| e.to_string())?;
            let animblock = i32_at(b, d + 52)?;
            let animindex = i32_at(b, d + 56)?;
            let sectionindex = i32_at(b, d + 80)?;
            let sf = usize::try_from(i32_at(b, d + 84)?).map_err(|e| e.to_string())?;
            assert_eq!(animblock, 0, "animation {a} is in an external .ani");
            let delta = flags & 4 != 0;
            let mut starts = Vec::new();
            if sf == 0 {
                starts.push(offset(d, animindex)?);
            } else {
                seen.sections.push((nf, sf));
                let table = offset(d, sectionindex)?;
                for s in 0..section_count(nf, sf) {
                    assert_eq!(i32_at(b, table + 8 * s)?, 0, "section {s} in an .ani");
                    starts.push(offset(d, i32_at(b, table + 8 * s + 4)?)?);
                }
            }
            for (s, &start) in starts.iter().enumerate() {
                let (_, count) = section_span(nf, sf, s);
                let p = validate_chain(b, start, nb, count);
                assert!(p.is_empty(), "animation {a} section {s}: {p:?}");
                // record flags, for the report
                let mut at = start;
                loop {
                    let [bone, fl, lo, hi] = read::<4>(b, at)?;
                    if bone != 255 {
                        *seen.flags.entry(fl).or_default() += 1;
                    }
                    let next = i16::from_le_bytes([lo, hi]);
                    if next <= 0 {
                        break;
                    }
                    at += next as usize;
                }
            }
            for f in 0..nf {
                let (s, local) = section_of(nf, sf, f);
                let start = *starts.get(s).ok_or("section out of range")?;
                for t in [0.0, 0.5] {
                    if t > 0.0 && f + 1 == nf {
                        continue;
                    }
                    let poses = decode_chain(b, start, &bases, local, t, delta)
                        .map_err(|e| format!("animation {a} frame {f}+{t}: {e}"))?;
                    assert_eq!(poses.len(), nb);
                    for (i, p) in poses.iter().enumerate() {
                        let len = p.quat.iter().map(|c| c * c).sum::<f32>().sqrt();
                        assert!(
                            close(len, 1.0, 1e-3),
                            "animation {a} frame {f} bone {i}: |q| = {len}"
                        );
                        assert!(p.pos.iter().all(|c| c.is_finite()));
                    }
                }
                seen.frames += 1;
            }
        }
        Ok(())
    }

    #[test]
    fn valve_corpus_chains_validate_and_decode() -> Result<(), String> {
        let Some(dir) = corpus_dir() else {
            return Ok(());
        };
        let mut files = Vec::new();
        mdl_files(&dir, &mut files);
        let mut checked = 0;
        let mut seen = Seen::default();
        for f in files {
            let b = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            if b.get(0..4) != Some(b"IDST") || i32_at(&b, 4)? != 48 {
                continue;
            }
            check_valve_mdl(&b, &mut seen).map_err(|e| format!("{}: {e}", f.display()))?;
            checked += 1;
        }
        eprintln!(
            "{checked} Valve v48 files, {} frames decoded; record flags {:02x?}; sections {:?}",
            seen.frames, seen.flags, seen.sections
        );
        assert!(checked >= 5, "only {checked} v48 files found");
        Ok(())
    }
}
