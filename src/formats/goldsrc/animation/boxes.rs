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

/// The vertices of [`vertices`] grouped by bone for [`sequence_box`]: per bone, the distinct
/// bone-local positions (structure of arrays), and every distinct (bone, position) in the
/// original order (first occurrence kept).
#[derive(Clone, Debug, Default)]
pub struct BoneVerts {
    /// The positions of each bone with vertices, bones ascending.
    groups: Vec<BoneGroup>,
    /// Distinct (bone, position) pairs in first-occurrence order.
    ordered: Vec<(usize, [f32; 3])>,
}

impl BoneVerts {
    pub fn new(verts: &[(usize, [f32; 3])]) -> BoneVerts {
        let mut seen = crate::formats::goldsrc::hash::FastSet::default();
        let mut ordered = Vec::new();
        for &(b, v) in verts {
            if seen.insert((b, v.map(f32::to_bits))) {
                ordered.push((b, v));
            }
        }
        type Columns = (Vec<f32>, Vec<f32>, Vec<f32>);
        let mut by_bone: std::collections::BTreeMap<usize, Columns> =
            std::collections::BTreeMap::new();
        for &(b, v) in &ordered {
            let g = by_bone.entry(b).or_default();
            g.0.push(v[0]);
            g.1.push(v[1]);
            g.2.push(v[2]);
        }
        BoneVerts {
            groups: by_bone
                .into_iter()
                .map(|(b, (x, y, z))| (b, x, y, z))
                .collect(),
            ordered,
        }
    }
}

/// One bone's distinct positions: the bone and the x, y and z columns.
type BoneGroup = (usize, Vec<f32>, Vec<f32>, Vec<f32>);

/// Lanes of the min/max reductions of [`sequence_box`].
const LANES: usize = 8;

/// Min and max of row `r` of a bone matrix applied to the positions `(xs, ys, zs)`, each value
/// computed as `VectorTransform` does (`x·r0 + y·r1 + z·r2 + r3` in float). `<`/`>` as in C:
/// NaNs never win; among equal values (±0) the winner is unspecified (see the caller).
fn row_min_max(xs: &[f32], ys: &[f32], zs: &[f32], r: &[f32; 4]) -> (f32, f32) {
    let mut lo = [f32::INFINITY; LANES];
    let mut hi = [f32::NEG_INFINITY; LANES];
    let (r0, r1, r2, r3) = (r[0], r[1], r[2], r[3]);
    let mut cx = xs.chunks_exact(LANES);
    let mut cy = ys.chunks_exact(LANES);
    let mut cz = zs.chunks_exact(LANES);
    for ((x, y), z) in (&mut cx).zip(&mut cy).zip(&mut cz) {
        for l in 0..LANES {
            let p = x[l] * r0 + y[l] * r1 + z[l] * r2 + r3;
            // `min`/`max` ignore a NaN, as `<`/`>` do; only the sign of a zero may differ.
            lo[l] = lo[l].min(p);
            hi[l] = hi[l].max(p);
        }
    }
    let mut l = f32::INFINITY;
    let mut h = f32::NEG_INFINITY;
    for ((x, y), z) in cx
        .remainder()
        .iter()
        .zip(cy.remainder())
        .zip(cz.remainder())
    {
        let p = x * r0 + y * r1 + z * r2 + r3;
        if p < l {
            l = p;
        }
        if p > h {
            h = p;
        }
    }
    for k in 0..LANES {
        if lo[k] < l {
            l = lo[k];
        }
        if hi[k] > h {
            h = hi[k];
        }
    }
    (l, h)
}

/// The bounding box of a sequence: every vertex under every frame of every blend (initialised
/// to ±9999), exactly as the vertex-by-vertex loop of Valve's tool (`if (p < lo) lo = p`)
/// computes it. Vertices are visited per bone, in any order: the min and max values do not
/// depend on it; only a ±0 result does (the loop keeps the first zero it meets), and there the
/// frame's vertices are visited again in their original order to find that first zero.
pub fn sequence_box(blends: &[Frames], parents: &[i32], verts: &BoneVerts) -> ([f32; 3], [f32; 3]) {
    let mut lo = [9999.0f32; 3];
    let mut hi = [-9999.0f32; 3];
    let nb = parents.len();
    let mut world: Vec<Matrix> = vec![[[0.0; 4]; 3]; nb];
    // Per bone, the last rotation and its matrix: bones often keep their rotation from frame
    // to frame, and the same angles give the same matrix.
    let mut rotations: Vec<Option<([u32; 3], Matrix)>> = vec![None; nb];
    for fr in blends {
        for f in 0..fr.frames {
            for j in 0..nb {
                let rot = fr.rot(f, j);
                let key = rot.map(f32::to_bits);
                let mut m = match rotations.get(j).copied().flatten() {
                    Some((k, m)) if k == key => m,
                    _ => {
                        let m = angle_matrix(rot.map(to_degrees));
                        if let Some(slot) = rotations.get_mut(j) {
                            *slot = Some((key, m));
                        }
                        m
                    }
                };
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
            // This frame's min and max per axis.
            let mut flo = [f32::INFINITY; 3];
            let mut fhi = [f32::NEG_INFINITY; 3];
            for (b, xs, ys, zs) in &verts.groups {
                let Some(m) = world.get(*b) else { continue };
                for a in 0..3 {
                    let (l, h) = row_min_max(xs, ys, zs, &m[a]);
                    if l < flo[a] {
                        flo[a] = l;
                    }
                    if h > fhi[a] {
                        fhi[a] = h;
                    }
                }
            }
            for a in 0..3 {
                if flo[a] < lo[a] {
                    lo[a] = if flo[a] == 0.0 {
                        first_zero(verts, &world, a)
                    } else {
                        flo[a]
                    };
                }
                if fhi[a] > hi[a] {
                    hi[a] = if fhi[a] == 0.0 {
                        first_zero(verts, &world, a)
                    } else {
                        fhi[a]
                    };
                }
            }
        }
    }
    (lo, hi)
}

/// The first zero (+0 or −0) that axis `a` of the transformed vertices takes, in the vertices'
/// original order (there is one: the caller found a zero extreme).
#[cold]
fn first_zero(verts: &BoneVerts, world: &[Matrix], a: usize) -> f32 {
    for &(b, v) in &verts.ordered {
        let Some(m) = world.get(b) else { continue };
        let p = transform(v, m);
        if p[a] == 0.0 {
            return p[a];
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vertex-by-vertex loop as first written (Valve's order).
    fn reference(
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

    #[test]
    fn grouped_box_equals_the_vertex_loop_bit_for_bit() {
        let mut state = 0x2545F4914F6CDD1Du64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        // Small halves and signed zeros: many ±0 results and ties.
        let val = |next: &mut dyn FnMut(u64) -> u64| -> f32 {
            match next(6) {
                0 => 0.0,
                1 => -0.0,
                _ => (next(9) as f32 - 2.0) * 0.5,
            }
        };
        for round in 0..5000 {
            let nb = 1 + next(6) as usize;
            let parents: Vec<i32> = (0..nb).map(|j| next(j as u64 + 1) as i32 - 1).collect();
            let frames = 1 + next(4) as usize;
            let mut fr = Frames::zeroed(nb, frames);
            for k in 0..nb * frames {
                let rot = [0, 1, 2].map(|_| if next(4) != 0 { 0.0 } else { 1.5707964 });
                let pos = [val(&mut next), val(&mut next), val(&mut next)];
                if let (Some(r), Some(p)) = (fr.rot.get_mut(k), fr.pos.get_mut(k)) {
                    *r = rot;
                    *p = pos;
                }
            }
            let nv = next(if round % 2 == 0 { 6 } else { 40 }) as usize;
            let verts: Vec<(usize, [f32; 3])> = (0..nv)
                .map(|_| {
                    let b = next(nb as u64 + 1) as usize;
                    (b, [val(&mut next), val(&mut next), val(&mut next)])
                })
                .collect();
            let blends = vec![fr];
            let got = sequence_box(&blends, &parents, &BoneVerts::new(&verts));
            let want = reference(&blends, &parents, &verts);
            let bits = |b: ([f32; 3], [f32; 3])| (b.0.map(f32::to_bits), b.1.map(f32::to_bits));
            assert_eq!(bits(got), bits(want), "round {round}");
        }
    }
}
