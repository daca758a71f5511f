//! One animation decoded at one frame, as the engine decodes it (`source-animation.md` §11
//! steps 3–6), and `mdlc inspect --pose`: the local position, quaternion and Euler angles of
//! every bone (or one bone) at that frame.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::animcodec::{self, BoneBase, DecodedPose};
use super::read::{Mdl, RBone};

/// `STUDIO_DELTA` on an animdesc (§3.1).
const STUDIO_DELTA: i32 = 0x4;

/// The rest pose and scales of every bone, as the decoder needs them.
pub fn bone_bases(mdl: &Mdl) -> Vec<BoneBase> {
    mdl.bones
        .iter()
        .map(|b| BoneBase {
            pos: b.rec.pos,
            rot: b.rec.rot,
            quat: b.rec.quat,
            posscale: b.rec.posscale,
            rotscale: b.rec.rotscale,
        })
        .collect()
}

/// The file offset of the record chain holding frame `k` of animation `anim`, and the frame's
/// number inside that chain (§3.2).
pub fn chain_for_frame(
    bytes: &[u8],
    mdl: &Mdl,
    anim: usize,
    k: usize,
) -> Result<(usize, usize), String> {
    let a = mdl
        .animations
        .get(anim)
        .ok_or_else(|| format!("there is no animation {anim}"))?;
    let no_data = |animblock: i32| {
        if animblock == -1 {
            "the animation has no data (animblock -1: the model needs to be recompiled)".to_string()
        } else {
            format!("the animation's data is in anim block {animblock} of the .ani file, which was not read")
        }
    };
    let (section, local) = if a.rec.sectionframes == 0 {
        (0, k)
    } else {
        let n = a.rec.numframes.max(0) as usize;
        let s = usize::try_from(a.rec.sectionframes)
            .map_err(|_| format!("sectionframes {} is negative", a.rec.sectionframes))?;
        animcodec::section_of(n, s, k)
    };
    let c = a.chains.get(section).ok_or_else(|| {
        format!(
            "frame {k} falls in section {section}, but the section table has {} entries",
            a.chains.len()
        )
    })?;
    let start = c.start.ok_or_else(|| no_data(c.animblock))?;
    if start >= bytes.len() {
        return Err(format!(
            "the record chain at offset {start} is outside the file ({} bytes)",
            bytes.len()
        ));
    }
    Ok((start, local))
}

/// One bone's zero frame: the saved position and rotation, each when the bone keeps it.
pub type ZeroFrame = (Option<[f32; 3]>, Option<[f32; 4]>);

/// The zero frames of an animation (`source-animation.md` 3.5; source-sdk-2013 `bone_setup.cpp`,
/// `CalcZeroframeData`): what the engine shows while the animation's `.ani` block is loading,
/// `zeroframecount` samples `zeroframespan` frames apart, each per bone. Empty when the
/// animation has none.
pub fn zero_frames(mdl: &Mdl, a: &super::read::RAnim) -> Result<Vec<Vec<ZeroFrame>>, String> {
    const POS: i32 = super::model::BONE_HAS_SAVEFRAME_POS;
    const ROT: i32 = super::model::BONE_HAS_SAVEFRAME_ROT;
    let Some(mut at) = a.zero_frame else {
        return Ok(Vec::new());
    };
    let n = usize::try_from(a.rec.zeroframecount)
        .ok()
        .filter(|&n| n > 0 && (n == 1 || a.rec.zeroframespan > 0))
        .ok_or_else(|| {
            format!(
                "zeroframeindex {} with zeroframecount {} and zeroframespan {}",
                a.rec.zeroframeindex, a.rec.zeroframecount, a.rec.zeroframespan
            )
        })?;
    let take = |at: usize, len: usize| {
        at.checked_add(len)
            .filter(|&end| end <= mdl.file_len)
            .and_then(|end| mdl.bytes.get(at..end))
            .ok_or_else(|| format!("the zero frames at offset {at} run past the end of the MDL"))
    };
    // a bone's `n` samples of `size` bytes at `at`, which moves past them
    let samples = |at: &mut usize, size: usize| -> Result<std::slice::Chunks<'_, u8>, String> {
        let v = take(*at, size * n)?;
        *at += size * n;
        Ok(v.chunks(size))
    };
    let bad = |_| "a zero-frame sample of the wrong size".to_string();
    let mut out = vec![vec![(None, None); mdl.bones.len()]; n];
    for (b, bone) in mdl.bones.iter().enumerate() {
        if bone.rec.flags & POS != 0 {
            for (k, v) in samples(&mut at, 6)?.enumerate() {
                out[k][b].0 = Some(animcodec::vector48_decode(v.try_into().map_err(bad)?));
            }
        }
        if bone.rec.flags & ROT != 0 {
            for (k, v) in samples(&mut at, 8)?.enumerate() {
                out[k][b].1 = Some(animcodec::quat64_decode(v.try_into().map_err(bad)?));
            }
        }
    }
    Ok(out)
}

/// Every bone's local pose in animation `anim` at `frame` (0 ..= numframes − 1, fractions
/// allowed: the frame below and the fraction towards the next one; the last frame has no
/// next one). Bones without a record get the rest pose, or identity for a delta animation.
pub fn decode_anim(
    bytes: &[u8],
    mdl: &Mdl,
    anim: usize,
    frame: f32,
) -> Result<Vec<DecodedPose>, String> {
    let a = mdl
        .animations
        .get(anim)
        .ok_or_else(|| format!("there is no animation {anim}"))?;
    let n = a.rec.numframes;
    if n < 1 {
        return Err(format!("animation `{}` has {n} frames", a.name));
    }
    let last = (n - 1) as usize;
    if !frame.is_finite() || frame < 0.0 || frame > last as f32 {
        return Err(format!(
            "frame {frame} is outside animation `{}`'s frames 0 ..= {last}",
            a.name
        ));
    }
    let mut k = frame.floor() as usize;
    let mut t = frame - k as f32;
    if k >= last {
        k = last;
        t = 0.0;
    }
    let (start, local) = chain_for_frame(bytes, mdl, anim, k)?;
    let bases = bone_bases(mdl);
    animcodec::decode_chain(
        bytes,
        start,
        &bases,
        local,
        t,
        a.rec.flags & STUDIO_DELTA != 0,
    )
}

/// Euler angles in degrees (x about X, y about Y, z about Z; `R = Rz·Ry·Rx`) of a quaternion
/// (x, y, z, w), by the matrix → Euler rule of §1.2.
pub fn quat_to_euler_degrees(q: [f32; 4]) -> [f32; 3] {
    crate::ir::anim::quat_euler_f64(q).map(|r| {
        let d = r.to_degrees() as f32;
        if d == 0.0 {
            0.0
        } else {
            d
        }
    })
}

/// What `mdlc inspect --pose` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct PoseQuery {
    /// An animation name, or a sequence name (its first animation, blend cell 0).
    pub name: String,
    pub frame: f32,
    /// Only this bone.
    pub bone: Option<String>,
}

/// Why a pose query cannot be answered: the user's mistake (with the nearest names) or a
/// file that cannot be decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum PoseError {
    /// No animation or sequence has the name; the nearest one, if close, and the sequences.
    UnknownName {
        name: String,
        suggestion: Option<String>,
        sequences: Vec<String>,
    },
    /// The frame is outside the animation's frames.
    FrameOutOfRange {
        frame: f32,
        animation: String,
        numframes: i32,
    },
    /// No bone has the name; the nearest one, if close, and every bone's name.
    UnknownBone {
        name: String,
        suggestion: Option<String>,
        bones: Vec<String>,
    },
    /// The animation cannot be decoded (external data, broken bytes): what (``animation `x` ``
    /// or ``sequence `x` ``) and why.
    Undecodable { what: String, why: String },
}

/// The animation a query names: (animation index, sequence it came through).
fn find_animation(mdl: &Mdl, name: &str) -> Result<(usize, Option<usize>), PoseError> {
    let anim_named = |eq: &dyn Fn(&str) -> bool| mdl.anims.iter().position(|(n, _)| eq(n));
    let seq_named = |eq: &dyn Fn(&str) -> bool| mdl.seqs.iter().position(|s| eq(&s.label));
    let exact = |n: &str| n == name;
    let caseless = |n: &str| n.eq_ignore_ascii_case(name);
    let from_seq = |si: usize| -> Result<(usize, Option<usize>), PoseError> {
        let Some(seq) = mdl.seqs.get(si) else {
            return Err(PoseError::Undecodable {
                what: format!("sequence {si}"),
                why: "no such sequence".into(),
            });
        };
        match seq.anim_indices.first() {
            Some(&a) if a >= 0 && (a as usize) < mdl.animations.len() => Ok((a as usize, Some(si))),
            other => Err(PoseError::Undecodable {
                what: format!("sequence `{}`", seq.label),
                why: match other {
                    Some(a) => {
                        format!("its first animation index {a} is not an animation of the model")
                    }
                    None => "it has no animation".into(),
                },
            }),
        }
    };
    if let Some(a) = anim_named(&exact) {
        return Ok((a, None));
    }
    if let Some(s) = seq_named(&exact) {
        return from_seq(s);
    }
    if let Some(a) = anim_named(&caseless) {
        return Ok((a, None));
    }
    if let Some(s) = seq_named(&caseless) {
        return from_seq(s);
    }
    let candidates = mdl
        .anims
        .iter()
        .map(|(n, _)| n.as_str())
        .chain(mdl.seqs.iter().map(|s| s.label.as_str()));
    Err(PoseError::UnknownName {
        name: name.to_string(),
        suggestion: crate::suggest::nearest(name, candidates).map(str::to_string),
        sequences: mdl.seqs.iter().map(|s| s.label.clone()).collect(),
    })
}

/// The bones a query shows: all, or the one it names.
fn find_bones(mdl: &Mdl, bone: Option<&str>) -> Result<Vec<usize>, PoseError> {
    let Some(name) = bone else {
        return Ok((0..mdl.bones.len()).collect());
    };
    if let Some(i) = mdl.bones.iter().position(|b| b.name == name) {
        return Ok(vec![i]);
    }
    if let Some(i) = mdl
        .bones
        .iter()
        .position(|b| b.name.eq_ignore_ascii_case(name))
    {
        return Ok(vec![i]);
    }
    Err(PoseError::UnknownBone {
        name: name.to_string(),
        suggestion: crate::suggest::nearest(name, mdl.bones.iter().map(|b| b.name.as_str()))
            .or_else(|| unique_suffix_match(mdl, name))
            .map(str::to_string),
        bones: mdl.bones.iter().map(|b| b.name.clone()).collect(),
    })
}

/// The one bone whose name ends with `.name` (`Gun_Yaw` → `Bunker_Gun.Gun_Yaw`), if only one.
fn unique_suffix_match<'m>(mdl: &'m Mdl, name: &str) -> Option<&'m str> {
    let suffix = format!(".{}", name.to_ascii_lowercase());
    let mut hits = mdl
        .bones
        .iter()
        .filter(|b| b.name.to_ascii_lowercase().ends_with(&suffix));
    match (hits.next(), hits.next()) {
        (Some(b), None) => Some(b.name.as_str()),
        _ => None,
    }
}

/// A float as the shortest text that reads back to the same value (−0 shown as 0).
fn f(x: f32) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x}")
    }
}

/// A float rounded to `decimals` places, without trailing zeros (−0 shown as 0): the text
/// dump's values (the JSON keeps every bit).
fn short(x: f32, decimals: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let t = format!("{x:.decimals$}");
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    if t == "-0" {
        "0".into()
    } else {
        t
    }
}

fn fv(v: &[f32], decimals: usize) -> String {
    let parts: Vec<String> = v.iter().map(|&x| short(x, decimals)).collect();
    format!("({})", parts.join(", "))
}

fn jv(v: &[f32]) -> Value {
    Value::Array(
        v.iter()
            .map(|&x| {
                if x.is_finite() {
                    json!(x)
                } else {
                    json!(format!("{x}"))
                }
            })
            .collect(),
    )
}

/// Answers a pose query: text (one line per bone) or one JSON object.
pub fn pose_report(mdl: &Mdl, q: &PoseQuery, as_json: bool) -> Result<String, PoseError> {
    let (anim, seq) = find_animation(mdl, &q.name)?;
    let bones = find_bones(mdl, q.bone.as_deref())?;
    let Some(a) = mdl.animations.get(anim) else {
        return Err(PoseError::Undecodable {
            what: format!("`{}`", q.name),
            why: "no such animation".into(),
        });
    };
    let n = a.rec.numframes;
    if n < 1 || !q.frame.is_finite() || q.frame < 0.0 || q.frame > (n - 1) as f32 {
        return Err(PoseError::FrameOutOfRange {
            frame: q.frame,
            animation: a.name.clone(),
            numframes: n,
        });
    }
    let poses =
        decode_anim(&mdl.bytes, mdl, anim, q.frame).map_err(|why| PoseError::Undecodable {
            what: format!("animation `{}`", a.name),
            why,
        })?;
    let seq_label = seq.and_then(|s| mdl.seqs.get(s)).map(|s| s.label.clone());
    let rows: Vec<(usize, &RBone, DecodedPose, [f32; 3])> = bones
        .iter()
        .filter_map(|&b| {
            let p = poses.get(b)?;
            Some((b, mdl.bones.get(b)?, *p, quat_to_euler_degrees(p.quat)))
        })
        .collect();
    if as_json {
        let v = json!({
            "animation": a.name,
            "animation_index": anim,
            "sequence": seq_label,
            "frame": q.frame,
            "numframes": n,
            "fps": a.rec.fps,
            "delta": a.rec.flags & STUDIO_DELTA != 0,
            "bones": rows.iter().map(|(b, bone, p, e)| {
                json!({
                    "index": b, "name": bone.name, "parent": bone.rec.parent,
                    "pos": jv(&p.pos), "quat": jv(&p.quat), "euler_degrees": jv(e),
                })
            }).collect::<Vec<_>>(),
        });
        let mut t = v.to_string();
        t.push('\n');
        return Ok(t);
    }
    let mut s = String::new();
    let via = match &seq_label {
        Some(l) => format!(" (first animation of sequence `{l}`)"),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "animation [{anim}] `{}`{via}: frame {} of 0..={}  fps {}{}",
        a.name,
        f(q.frame),
        n - 1,
        f(a.rec.fps),
        if a.rec.flags & STUDIO_DELTA != 0 {
            "  DELTA (offsets added to the pose below, identity where no data)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "bones ({}): local position, quaternion (x, y, z, w), Euler angles in degrees (x, y, z); --json for every digit",
        rows.len()
    );
    for (b, bone, p, e) in &rows {
        let _ = writeln!(
            s,
            "  [{b}] `{}`  pos {}  quat {}  euler {}",
            bone.name,
            fv(&p.pos, 5),
            fv(&p.quat, 6),
            fv(e, 4)
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::source::math::euler_quat;

    #[test]
    fn euler_degrees_of_known_rotations() {
        let close = |a: [f32; 3], b: [f32; 3]| a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-3);
        assert_eq!(quat_to_euler_degrees([0.0, 0.0, 0.0, 1.0]), [0.0; 3]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!(close(
            quat_to_euler_degrees([0.0, 0.0, h, h]),
            [0.0, 0.0, 90.0]
        ));
        for r in [[0.3f32, -0.2, 1.1], [-1.0, 0.5, -2.5], [2.0, 1.2, 0.1]] {
            let d = quat_to_euler_degrees(euler_quat(r));
            assert!(close(d, r.map(f32::to_degrees)), "{r:?} → {d:?}");
        }
        // Pitch at 90°: gimbal lock puts the whole turn into z (x = 0).
        let d = quat_to_euler_degrees(euler_quat([0.0, std::f32::consts::FRAC_PI_2, 0.4]));
        assert!((d[1] - 90.0).abs() < 1e-2 && d[0] == 0.0, "{d:?}");
    }
}
