//! Hit groups, hit boxes and sequence bounding boxes (`goldsrc.md` §8.9).

use crate::formats::goldsrc::geometry::Geometry;
use crate::formats::goldsrc::model::GsHitbox;
use crate::ir::model::Model;

use super::frames::Frames;
use super::math::{angle_matrix, concat, to_degrees, transform, Matrix};

/// Every vertex of every model (body part order): its bone and bone-local position.
pub fn vertices(geometry: &Geometry) -> Vec<(usize, [f32; 3])> {
    geometry
        .body_parts
        .iter()
        .flat_map(|bp| &bp.models)
        .flat_map(|m| {
            m.verts
                .iter()
                .zip(&m.vert_bones)
                .map(|(v, &b)| (usize::from(b), *v))
        })
        .collect()
}

/// The hit group of every bone: `$hgroup` entries in order, then unset bones inherit their
/// parent's group, roots 0.
pub fn hit_groups(model: &Model, parents: &[i32]) -> Vec<i32> {
    const UNSET: i32 = -9999;
    let mut group = vec![UNSET; parents.len()];
    for &(g, bone, _) in &model.hit_groups {
        if let Some(x) = group.get_mut(bone.index()) {
            *x = g;
        }
    }
    for k in 0..group.len() {
        if group.get(k) == Some(&UNSET) {
            let inherited = parents
                .get(k)
                .and_then(|&p| usize::try_from(p).ok())
                .and_then(|p| group.get(p).copied())
                .unwrap_or(0);
            if let Some(x) = group.get_mut(k) {
                *x = inherited;
            }
        }
    }
    group
}

/// Automatic hit boxes: per bone the box of its vertices starting from (0,0,0), grown by each
/// child's default position; a box for each bone more than 1 unit thick on every axis.
pub fn auto_hitboxes(
    verts: &[(usize, [f32; 3])],
    parents: &[i32],
    positions: &[[f32; 3]],
    groups: &[i32],
) -> Vec<GsHitbox> {
    let n = parents.len();
    let mut min = vec![[0.0f32; 3]; n];
    let mut max = vec![[0.0f32; 3]; n];
    let grow = |min: &mut Vec<[f32; 3]>, max: &mut Vec<[f32; 3]>, k: usize, p: [f32; 3]| {
        if let (Some(lo), Some(hi)) = (min.get_mut(k), max.get_mut(k)) {
            for a in 0..3 {
                if p[a] < lo[a] {
                    lo[a] = p[a];
                }
                if p[a] > hi[a] {
                    hi[a] = p[a];
                }
            }
        }
    };
    for &(b, p) in verts {
        grow(&mut min, &mut max, b, p);
    }
    for k in 0..n {
        let parent = parents.get(k).and_then(|&p| usize::try_from(p).ok());
        if let (Some(j), Some(&pos)) = (parent, positions.get(k)) {
            grow(&mut min, &mut max, j, pos);
        }
    }
    let mut out = Vec::new();
    for k in 0..n {
        let (Some(lo), Some(hi)) = (min.get(k), max.get(k)) else {
            continue;
        };
        if (0..3).all(|a| lo[a] < hi[a] - 1.0) {
            out.push(GsHitbox {
                bone: k as i32,
                group: groups.get(k).copied().unwrap_or(0),
                bbmin: *lo,
                bbmax: *hi,
            });
        }
    }
    out
}

/// The bounding box of a sequence: every vertex under every frame of every blend (initialised
/// to ±9999).
pub fn sequence_box(
    blends: &[Frames],
    parents: &[i32],
    verts: &[(usize, [f32; 3])],
) -> ([f32; 3], [f32; 3]) {
    let mut lo = [9999.0f32; 3];
    let mut hi = [-9999.0f32; 3];
    let nb = parents.len();
    let mut world: Vec<Matrix> = vec![[[0.0; 4]; 3]; nb];
    for fr in blends {
        for f in 0..fr.frames {
            for j in 0..nb {
                let mut m = angle_matrix(fr.rot(f, j).map(to_degrees));
                let p = fr.pos(f, j);
                m[0][3] = p[0];
                m[1][3] = p[1];
                m[2][3] = p[2];
                let parent = parents
                    .get(j)
                    .and_then(|&p| usize::try_from(p).ok())
                    .filter(|&p| p < j);
                let w = match parent.and_then(|p| world.get(p)) {
                    Some(pm) => concat(pm, &m),
                    None => m,
                };
                if let Some(slot) = world.get_mut(j) {
                    *slot = w;
                }
            }
            for &(b, v) in verts {
                let Some(m) = world.get(b) else { continue };
                let p = transform(v, m);
                for a in 0..3 {
                    if p[a] < lo[a] {
                        lo[a] = p[a];
                    }
                    if p[a] > hi[a] {
                        hi[a] = p[a];
                    }
                }
            }
        }
    }
    (lo, hi)
}
