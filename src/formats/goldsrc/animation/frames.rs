//! One sequence's frames as Valve's HL1 studiomdl prepares them (`goldsrc.md` §7 "skeleton in
//! an animation SMD", §8.5, §8.6): root transform, mirror, scale and wrap per blend; looping;
//! motion extraction; then the mapping onto the final skeleton.

use crate::ir::model::Anim;

use super::math::clip_angle;
use super::tables::{STUDIO_LX, STUDIO_LY, STUDIO_LZ, STUDIO_XR, STUDIO_YR, STUDIO_ZR};

/// Positions and rotations of `bones` bones over `frames` frames, frame-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frames {
    pub bones: usize,
    pub frames: usize,
    pub pos: Vec<[f32; 3]>,
    pub rot: Vec<[f32; 3]>,
}

impl Frames {
    pub fn zeroed(bones: usize, frames: usize) -> Frames {
        Frames {
            bones,
            frames,
            pos: vec![[0.0; 3]; bones * frames],
            rot: vec![[0.0; 3]; bones * frames],
        }
    }

    fn idx(&self, frame: usize, bone: usize) -> Option<usize> {
        (frame < self.frames && bone < self.bones).then_some(frame * self.bones + bone)
    }

    pub fn pos(&self, frame: usize, bone: usize) -> [f32; 3] {
        self.idx(frame, bone)
            .and_then(|i| self.pos.get(i))
            .copied()
            .unwrap_or_default()
    }

    pub fn rot(&self, frame: usize, bone: usize) -> [f32; 3] {
        self.idx(frame, bone)
            .and_then(|i| self.rot.get(i))
            .copied()
            .unwrap_or_default()
    }

    pub fn pos_mut(&mut self, frame: usize, bone: usize) -> Option<&mut [f32; 3]> {
        let i = self.idx(frame, bone)?;
        self.pos.get_mut(i)
    }

    pub fn rot_mut(&mut self, frame: usize, bone: usize) -> Option<&mut [f32; 3]> {
        let i = self.idx(frame, bone)?;
        self.rot.get_mut(i)
    }
}

/// One blend: its file's bones (root flags) and processed frames.
#[derive(Clone, Debug, PartialEq)]
pub struct Blend {
    pub roots: Vec<bool>,
    pub frames: Frames,
}

/// `Grab_Animation`: frames `first .. first + count` of `anim`, each value the SMD gives
/// transformed (roots: minus the origin, turned about Z by the float cos/sin of the rotation,
/// the rotation added to zr; then mirrored, scaled, wrapped). Values the SMD leaves out stay 0.
pub fn grab(anim: &Anim, mirrored: &[bool], first: usize, count: usize) -> Blend {
    let nb = anim.file_bones.len();
    let roots: Vec<bool> = anim.file_bones.iter().map(|b| b.parent.is_none()).collect();
    let mut out = Frames::zeroed(nb, count);
    let zrot = anim.rotation[2];
    let cz = f64::from(zrot).cos() as f32;
    let sz = f64::from(zrot).sin() as f32;
    let [ox, oy, oz] = anim.origin;
    // frame by frame, the output's values of that frame side by side
    let out_frames = out
        .pos
        .chunks_exact_mut(nb.max(1))
        .zip(out.rot.chunks_exact_mut(nb.max(1)))
        .take(count);
    for (f, (out_pos, out_rot)) in out_frames.enumerate() {
        for (b, (d_pos, d_rot)) in out_pos.iter_mut().zip(out_rot.iter_mut()).enumerate() {
            let src = (first + f) * nb + b;
            if !anim.given.get(src).copied().unwrap_or(false) {
                continue;
            }
            let Some(p) = anim.frames.get(src) else {
                continue;
            };
            let mut pos = p.pos;
            let mut rot = p.rot;
            if roots.get(b).copied().unwrap_or(false) {
                let (x, y, z) = (pos[0] - ox, pos[1] - oy, pos[2] - oz);
                pos = [cz * x - sz * y, sz * x + cz * y, z];
                rot[2] += zrot;
            }
            if mirrored.get(b).copied().unwrap_or(false) {
                pos = pos.map(|v| -v);
            }
            pos = pos.map(|v| v * anim.scale);
            *d_pos = pos;
            // each angle in its own call: as `rot.map(clip_angle)` the calls were not inlined
            let rot = [clip_angle(rot[0]), clip_angle(rot[1]), clip_angle(rot[2])];
            *d_rot = rot;
        }
    }
    Blend { roots, frames: out }
}

/// `OptimizeAnimations`' looping rule: for every bone of the first blend's list and every
/// blend, the last frame's rotation becomes the first frame's, and each position component too
/// unless that axis is extracted (LX/LY/LZ).
pub fn force_loop(blends: &mut [Blend], numframes: usize, motion: i32) {
    let Some(nb0) = blends.first().map(|b| b.frames.bones) else {
        return;
    };
    let Some(m) = numframes.checked_sub(1) else {
        return;
    };
    for j in 0..nb0 {
        for b in blends.iter_mut() {
            let p0 = b.frames.pos(0, j);
            let r0 = b.frames.rot(0, j);
            if let Some(p) = b.frames.pos_mut(m, j) {
                for (axis, flag) in [STUDIO_LX, STUDIO_LY, STUDIO_LZ].into_iter().enumerate() {
                    if motion & flag == 0 {
                        p[axis] = p0[axis];
                    }
                }
            }
            if let Some(r) = b.frames.rot_mut(m, j) {
                *r = r0;
            }
        }
    }
}

/// `ExtractMotion`: LX/LY/LZ take the first blend's bone 0 travel out of every root bone (of the
/// first blend's list) of every blend, proportionally to the frame; XR/YR/ZR pin root rotations
/// to frame 0. Returns `linearmovement`.
pub fn extract_motion(blends: &mut [Blend], numframes: usize, motion: i32) -> [f32; 3] {
    let Some(first) = blends.first() else {
        return [0.0; 3];
    };
    let roots0 = first.roots.clone();
    let mut linear = [0.0f32; 3];
    if numframes > 1 {
        let k = numframes - 1;
        let a = first.frames.pos(0, 0);
        let b = first.frames.pos(k, 0);
        let mut motion_v = [0.0f32; 3];
        for (axis, flag) in [STUDIO_LX, STUDIO_LY, STUDIO_LZ].into_iter().enumerate() {
            if motion & flag != 0 {
                motion_v[axis] = b[axis] - a[axis];
            }
        }
        for j in 0..numframes {
            // `VectorScale(motion, j * 1.0 / (n - 1), adj)`: a double factor, a float result.
            let t = j as f64 / k as f64;
            let adj = motion_v.map(|m| (t * f64::from(m)) as f32);
            for (bone, &root) in roots0.iter().enumerate() {
                if !root {
                    continue;
                }
                for bl in blends.iter_mut() {
                    if let Some(p) = bl.frames.pos_mut(j, bone) {
                        for axis in 0..3 {
                            p[axis] -= adj[axis];
                        }
                    }
                }
            }
        }
        linear = motion_v;
    }
    for (bone, &root) in roots0.iter().enumerate() {
        if !root {
            continue;
        }
        for bl in blends.iter_mut() {
            let r0 = bl.frames.rot(0, bone);
            for j in 0..numframes {
                if let Some(r) = bl.frames.rot_mut(j, bone) {
                    for (axis, flag) in [STUDIO_XR, STUDIO_YR, STUDIO_ZR].into_iter().enumerate() {
                        if motion & flag != 0 {
                            r[axis] = r0[axis];
                        }
                    }
                }
            }
        }
    }
    linear
}

/// The relinked frames of every blend on the final skeleton: final bone `j` takes file bone
/// `map[j]` (an index into the *first* blend's list, used for every blend), or the bone's
/// default value in every frame.
pub fn relink(
    blends: &[Blend],
    map: &[Option<usize>],
    defaults: &[([f32; 3], [f32; 3])],
    numframes: usize,
) -> Vec<Frames> {
    let nb = map.len();
    blends
        .iter()
        .map(|bl| {
            // every value is written, frame by frame, in the order they are stored
            let mut pos = Vec::with_capacity(nb * numframes);
            let mut rot = Vec::with_capacity(nb * numframes);
            for f in 0..numframes {
                let fr = &bl.frames;
                let (row_pos, row_rot) = (frame_row(fr, &fr.pos, f), frame_row(fr, &fr.rot, f));
                for (j, m) in map.iter().enumerate() {
                    let (p, r) = match m {
                        Some(k) => (
                            row_pos.get(*k).copied().unwrap_or_default(),
                            row_rot.get(*k).copied().unwrap_or_default(),
                        ),
                        None => defaults.get(j).copied().unwrap_or_default(),
                    };
                    pos.push(p);
                    rot.push(r);
                }
            }
            Frames {
                bones: nb,
                frames: numframes,
                pos,
                rot,
            }
        })
        .collect()
}

/// Frame `f` of `values` (`fr.pos` or `fr.rot`): value `k` of the result is what
/// `Frames::pos(f, k)` or `Frames::rot(f, k)` reads, none when it reads the default.
fn frame_row<'a>(fr: &Frames, values: &'a [[f32; 3]], f: usize) -> &'a [[f32; 3]] {
    if f >= fr.frames {
        return &[];
    }
    let row = f
        .checked_mul(fr.bones)
        .and_then(|at| values.get(at..))
        .unwrap_or(&[]);
    row.get(..fr.bones).unwrap_or(row)
}
