//! Bone realignment, as the 2006 SDK's compiler does it before it converts any animation
//! (alliedmodders/hl2sdk, branch episode1, `utils/studiomdl/simplify.cpp`: `RealignBones`, run
//! by `SimplifyModel` after `LinkIKChains`; `TranslateAnimations` and `RemapProceduralBones`
//! apply the result; `studiomdl.cpp`: `Cmd_DefineBone`, `Cmd_ForceRealign`).
//!
//! A bone is turned so that its X axis points at one chosen child, keeping its origin:
//! - the first two links of every `$ikchain` (hip → knee, knee → foot), always: the engine's IK
//!   solver bends a chain in that frame;
//! - with `$realignbones`, also every bone whose only child is that child.
//!
//! Nothing is turned when the child already lies on +X (its rest position's length exceeds its
//! `x` by at most 0.01), or when the bone comes from `$definebone` (Valve's "pre-aligned"
//! bones). The new Y and Z axes keep to the old frame: Z is the cross product of X with the old
//! axis most perpendicular to it. `$forcerealign` then turns a bone's frame by its angles.
//!
//! The turn of bone `k` is `R_k = B_k⁻¹ · B'_k` (`srcRealign`: old and new rest frames in model
//! space). Every animated bone-to-world transform `W_k` becomes `W_k · R_k`; a `$definebone`
//! with a fixup (`$definebone … px py pz pitch yaw roll`) has that fixup as its `R_k` instead.
//! The rest pose of every turned bone and of its children is recomputed from the new frames,
//! as `RealignBones` does; the other bones keep theirs bit for bit.

use crate::diag::{Code, Diagnostic};
use crate::ir::model::Model;

use super::math::{self, M34};
use super::model::PBone;

/// A `$definebone` fixup (position, QAngle degrees) as a matrix:
/// `AngleMatrix(QAngle(pitch, yaw, roll), pos)`.
pub(super) fn fixup_matrix(pos: [f32; 3], ang: [f32; 3]) -> M34 {
    let rad = |d: f32| f64::from(d).to_radians() as f32;
    math::from_euler([rad(ang[2]), rad(ang[0]), rad(ang[1])], pos)
}

/// `srcRealign` of every output bone (`None`: the identity), after turning `bones` in place.
/// `None` when two IK chains ask one bone to point at two different children (Valve's compiler
/// stops there too: "Trying to realign bone … with two children").
pub(super) fn realign(
    model: &Model,
    bones: &mut [PBone],
    ir_to_out: &[Option<usize>],
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<Option<M34>>> {
    let n = bones.len();
    let mut out_ir: Vec<Option<usize>> = vec![None; n];
    for (i, o) in ir_to_out.iter().enumerate() {
        if let Some(slot) = o.and_then(|o| out_ir.get_mut(o)) {
            *slot = Some(i);
        }
    }
    let ir_bone = |k: usize| out_ir[k].and_then(|i| model.bones.get(i));
    let pre_aligned = |k: usize| ir_bone(k).is_some_and(|b| b.defined);
    let out = |b: crate::ir::BoneId| ir_to_out.get(b.index()).copied().flatten();

    // the child each bone is to point at
    let mut child: Vec<Option<usize>> = vec![None; n];
    let mut ok = true;
    for c in &model.ik_chains {
        let [a, b, e] = c.bones.map(out);
        for (k, want) in [(a, b), (b, e)] {
            let (Some(k), Some(want)) = (k, want) else {
                continue;
            };
            match child[k] {
                None => child[k] = Some(want),
                Some(x) if x == want => {}
                Some(x) => {
                    diags.push(
                        Diagnostic::new(
                            Code::SourceRealignTwoChildren,
                            format!(
                                "IK chain `{}` needs bone `{}` to point at `{}`, and an earlier chain at `{}`",
                                c.name, bones[k].name, bones[want].name, bones[x].name
                            ),
                            c.span,
                            "this chain",
                        )
                        .with_note("the first two bones of an IK chain are turned to point their X axis at the next one, and a bone can point at one child only; Valve's compiler stops here too (\"Trying to realign bone … with two children\")"),
                    );
                    ok = false;
                }
            }
        }
    }
    if !ok {
        return None;
    }
    if model.realign_bones {
        let mut children = vec![0usize; n];
        for b in bones.iter() {
            if let Some(p) = b.parent.filter(|&p| p < n) {
                children[p] += 1;
            }
        }
        for (k, b) in bones.iter().enumerate() {
            if let Some(p) = b.parent.filter(|&p| p < n && children[p] == 1) {
                child[p] = Some(k);
            }
        }
    }

    // the new frames
    let old: Vec<M34> = bones.iter().map(|b| b.world).collect();
    let mut new = old.clone();
    for k in 0..n {
        let Some(c) = child[k] else { continue };
        if pre_aligned(k) {
            continue;
        }
        let cp = bones[c].pos;
        let d = math::dot(cp, cp).sqrt();
        if d - cp[0] <= 0.01 {
            continue;
        }
        let col = |m: &M34, j: usize| [m[0][j], m[1][j], m[2][j]];
        let origin = col(&old[k], 3);
        let forward = math::normalize(math::sub(col(&old[c], 3), origin));
        let axes = [col(&old[k], 0), col(&old[k], 1), col(&old[k], 2)];
        let d: Vec<f32> = axes.iter().map(|a| math::dot(forward, *a).abs()).collect();
        let pick = if d[0] <= d[1] && d[0] <= d[2] {
            0
        } else if d[1] <= d[0] && d[1] <= d[2] {
            1
        } else {
            2
        };
        let up = math::normalize(math::cross(forward, axes[pick]));
        let left = math::cross(up, forward);
        for r in 0..3 {
            new[k][r] = [forward[r], left[r], up[r], origin[r]];
        }
    }
    for (b, rot, _) in &model.force_realign {
        if let Some(k) = out(*b) {
            new[k] = math::mul(&new[k], &math::from_euler(*rot, [0.0; 3]));
        }
    }

    // srcRealign, and the rest pose rebuilt where a frame turned
    let mut src: Vec<Option<M34>> = vec![None; n];
    let mut turned = vec![false; n];
    for k in 0..n {
        if pre_aligned(k) {
            if let Some((pos, ang)) = ir_bone(k).and_then(|b| b.fixup) {
                src[k] = Some(fixup_matrix(pos, ang));
            }
        } else if new[k] != old[k] {
            src[k] = Some(math::mul(&math::invert(&old[k]), &new[k]));
            turned[k] = true;
        }
    }
    if !turned.iter().any(|&t| t) {
        return Some(src);
    }
    let mut moved = vec![false; n];
    for k in 0..n {
        let parent = bones[k].parent.filter(|&p| p < k);
        let parent_moved = parent.is_some_and(|p| moved[p]);
        let parent_turned = parent.is_some_and(|p| turned[p]);
        if !pre_aligned(k) && (turned[k] || parent_turned) {
            let local = match parent {
                Some(p) => math::mul(&math::invert(&new[p]), &new[k]),
                None => new[k],
            };
            let rot = math::to_euler(&local);
            bones[k].pos = [local[0][3], local[1][3], local[2][3]];
            bones[k].rot = rot;
            bones[k].quat = math::euler_quat(rot);
        }
        if turned[k] || parent_moved || parent_turned {
            let local = math::from_euler(bones[k].rot, bones[k].pos);
            let world = match parent {
                Some(p) => math::mul(&bones[p].world, &local),
                None => local,
            };
            bones[k].world = world;
            bones[k].pose_to_bone = math::invert(&world);
            moved[k] = true;
        }
    }
    Some(src)
}
