//! Hit groups, hit boxes and sequence bounding boxes (`goldsrc.md` §8.9).

use crate::formats::goldsrc::geometry::Geometry;
use crate::formats::goldsrc::model::GsHitbox;
use crate::ir::model::Model;

use super::frames::Frames;
use super::math::{angle_sin_cos, concat, lanes, sin_cos_matrix, to_degrees, transform, Matrix};

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

/// One bone's distinct positions.
#[derive(Clone, Debug, Default)]
struct BoneGroup {
    bone: usize,
    /// The x, y and z columns, padded to a multiple of [`LANES`] with copies of the first
    /// position (a copy changes no minimum or maximum).
    xs: Vec<f32>,
    ys: Vec<f32>,
    zs: Vec<f32>,
    /// Where the positions lie, when every coordinate is finite (see [`Reach`]).
    reach: Option<Reach>,
}

/// A box around a bone's positions for [`strictly_inside`]: per axis a centre `c` and a width
/// `w` that is the half extent `h` (every position is within `c ± h`, however `c` and `h`
/// rounded) plus `1e-5·(|c| + h)`, room for the rounding of the transformed values.
#[derive(Clone, Copy, Debug, Default)]
struct Reach {
    centre: [f32; 3],
    width: [f32; 3],
}

impl Reach {
    fn new((lo, hi): ([f32; 3], [f32; 3])) -> Reach {
        let mut r = Reach::default();
        for a in 0..3 {
            let c = lo[a] * 0.5 + hi[a] * 0.5;
            // `h` rounds by at most an ulp of |c| + h: far less than the 1e-5 added
            let h = (hi[a] - c).max(c - lo[a]);
            r.centre[a] = c;
            r.width[a] = h + 1e-5 * (c.abs() + h);
        }
        r
    }
}

impl BoneVerts {
    pub fn new(verts: &[(usize, [f32; 3])]) -> BoneVerts {
        let mut seen = crate::formats::hash::FastSet::default();
        let mut ordered = Vec::new();
        for &(b, v) in verts {
            if seen.insert((b, v.map(f32::to_bits))) {
                ordered.push((b, v));
            }
        }
        let mut by_bone: std::collections::BTreeMap<usize, BoneGroup> =
            std::collections::BTreeMap::new();
        for &(b, v) in &ordered {
            let g = by_bone.entry(b).or_default();
            g.xs.push(v[0]);
            g.ys.push(v[1]);
            g.zs.push(v[2]);
        }
        let groups = by_bone
            .into_iter()
            .map(|(bone, mut g)| {
                g.bone = bone;
                g.reach = bounds(&[&g.xs, &g.ys, &g.zs]).map(Reach::new);
                for c in [&mut g.xs, &mut g.ys, &mut g.zs] {
                    let first = c.first().copied().unwrap_or(0.0);
                    c.resize(c.len().next_multiple_of(LANES), first);
                }
                g
            })
            .collect();
        BoneVerts { groups, ordered }
    }
}

/// Per axis the smallest and largest value of the columns, or `None` if one is not finite.
fn bounds(columns: &[&Vec<f32>; 3]) -> Option<([f32; 3], [f32; 3])> {
    let mut lo = [0.0f32; 3];
    let mut hi = [0.0f32; 3];
    for (a, c) in columns.iter().enumerate() {
        if !c.iter().all(|v| v.is_finite()) {
            return None;
        }
        lo[a] = c.iter().copied().fold(f32::INFINITY, f32::min);
        hi[a] = c.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    }
    Some((lo, hi))
}

/// The local matrix inputs [`sequence_box`] keeps per bone.
#[derive(Clone, Copy, Debug, Default)]
struct Local {
    /// The bits of the rotation and position last seen.
    rot: [u32; 3],
    pos: [u32; 3],
    /// The sine and cosine of each angle of `rot`.
    sin_cos: [(f32, f32); 3],
}

/// Lanes of the min/max reductions of [`sequence_box`] (one SIMD register of floats).
const LANES: usize = 4;

/// Min and max of row `r` of a bone matrix applied to the positions `(xs, ys, zs)` (whose
/// length is a multiple of [`LANES`]), each value computed as `VectorTransform` does
/// (`x·r0 + y·r1 + z·r2 + r3` in float). `<`/`>` as in C: NaNs never win; among equal values
/// (±0) the winner is unspecified (see the caller).
fn row_min_max(xs: &[f32], ys: &[f32], zs: &[f32], r: &[f32; 4]) -> (f32, f32) {
    let mut lo = [f32::INFINITY; LANES];
    let mut hi = [f32::NEG_INFINITY; LANES];
    let (r0, r1, r2, r3) = (r[0], r[1], r[2], r[3]);
    for ((x, y), z) in xs
        .chunks_exact(LANES)
        .zip(ys.chunks_exact(LANES))
        .zip(zs.chunks_exact(LANES))
    {
        let p = lanes(|l| x[l] * r0 + y[l] * r1 + z[l] * r2 + r3);
        // C's `if (p < lo) lo = p`: a NaN never wins, a tie keeps the value held (only the
        // sign of a zero could tell); a compare and a select, one `minps`/`maxps`.
        lo = lanes(|l| if p[l] < lo[l] { p[l] } else { lo[l] });
        hi = lanes(|l| if p[l] > hi[l] { p[l] } else { hi[l] });
    }
    // The lanes are reduced apart from the loop: the compiler, seeing both together, turns
    // the loop's selects into lane shuffles and masks (`black_box` changes no value).
    let (lo, hi) = std::hint::black_box((lo, hi));
    let mut l = f32::INFINITY;
    let mut h = f32::NEG_INFINITY;
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

/// Per axis `a`, whether every value row `a` of `m` gives a position of the group lies strictly
/// between `lo[a]` and `hi[a]` however the float sums round: then no vertex of the group can
/// move the box on that axis. Interval arithmetic over the group's [`Reach`]: the row's value
/// at the centre (`x·r0 + y·r1 + z·r2 + r3`) plus or minus `|r0|·w0 + |r1|·w1 + |r2|·w2 +
/// |r3|·1e-5`. With `E = Σ|ri|·(|ci| + hi) + |r3|`, a vertex's value as `VectorTransform`
/// rounds it is within `4·2⁻²⁴·E` of the exact one, the centre's likewise, and the bound's and
/// the test's own roundings cost a few `2⁻²⁴·E` more; the `1e-5·E` of the widths covers all of
/// it many times over (and `1e-30` the roundings of tiny products). Any NaN or infinity
/// answers `false`. The three axes are computed side by side (one SIMD lane each).
fn strictly_inside(reach: &Reach, m: &Matrix, lo: &[f32; 3], hi: &[f32; 3]) -> [bool; 3] {
    let Reach {
        centre: c,
        width: w,
    } = reach;
    let column = |i: usize| [m[0][i], m[1][i], m[2][i], 0.0];
    let (r0, r1, r2, r3) = (column(0), column(1), column(2), column(3));
    let mid = lanes(|a| r0[a] * c[0] + r1[a] * c[1] + r2[a] * c[2] + r3[a]);
    let half = lanes(|a| {
        r0[a].abs() * w[0] + r1[a].abs() * w[1] + r2[a].abs() * w[2] + (r3[a].abs() * 1e-5 + 1e-30)
    });
    [0, 1, 2].map(|a| mid[a] - half[a] > lo[a] && mid[a] + half[a] < hi[a])
}

/// The bounding box of a sequence: every vertex under every frame of every blend (initialised
/// to ±9999), exactly as the vertex-by-vertex loop of Valve's tool (`if (p < lo) lo = p`)
/// computes it. Vertices are visited per bone, in any order: the min and max values do not
/// depend on it; only a ±0 result does (the loop keeps the first zero it meets), and there the
/// frame's vertices are visited again in their original order to find that first zero.
///
/// Work that cannot change the box is skipped: a bone whose world matrix is bit for bit the one
/// of the previous frame gives the same values, already folded into the box; a bone whose
/// vertices all land strictly inside the box (by interval arithmetic) cannot move it. A skipped
/// bone's values are all above the minimum and below the maximum of the box as the frame
/// starts, so they are never the frame's new extreme, nor a zero the ±0 rule looks for.
pub fn sequence_box(blends: &[Frames], parents: &[i32], verts: &BoneVerts) -> ([f32; 3], [f32; 3]) {
    let mut lo = [9999.0f32; 3];
    let mut hi = [-9999.0f32; 3];
    let nb = parents.len();
    let parent_of: Vec<Option<usize>> = (0..nb)
        .map(|j| {
            parents
                .get(j)
                .and_then(|&p| usize::try_from(p).ok())
                .filter(|&p| p < j)
        })
        .collect();
    // The bones whose world matrix a vertex depends on: those with vertices and their
    // ancestors. The others' matrices are never computed.
    let mut needed = vec![false; nb];
    for g in &verts.groups {
        if let Some(n) = needed.get_mut(g.bone) {
            *n = true;
        }
    }
    for j in (0..nb).rev() {
        if needed.get(j) == Some(&true) {
            if let Some(n) = parent_of
                .get(j)
                .copied()
                .flatten()
                .and_then(|p| needed.get_mut(p))
            {
                *n = true;
            }
        }
    }
    let mut world: Vec<Matrix> = vec![[[0.0; 4]; 3]; nb];
    // The needed bones in order, each with its parent.
    let order: Vec<(usize, Option<usize>)> = (0..nb)
        .filter(|&j| needed.get(j) == Some(&true))
        .map(|j| (j, parent_of.get(j).copied().flatten()))
        .collect();
    // Per bone: the rotation and position (bits) of its current local matrix, the sine and
    // cosine of each of those angles, and whether its world matrix changed this frame. The
    // same bits give the same values, so unchanged inputs are not computed again.
    let mut state = vec![Local::default(); nb];
    let mut changed = vec![true; nb];
    let mut first = true;
    for fr in blends {
        for f in 0..fr.frames {
            // this frame's values; a bone past them reads 0, as `Frames::rot` gives it
            let at = f * fr.bones;
            let rots = fr.rot.get(at..at + fr.bones).unwrap_or(&[]);
            let poss = fr.pos.get(at..at + fr.bones).unwrap_or(&[]);
            for &(j, parent) in &order {
                let parent_changed = parent.is_some_and(|p| changed.get(p) != Some(&false));
                let (Some(st), Some(c)) = (state.get_mut(j), changed.get_mut(j)) else {
                    continue;
                };
                let rot = rots.get(j).copied().unwrap_or_default();
                let pos = poss.get(j).copied().unwrap_or_default();
                let rk = rot.map(f32::to_bits);
                let pk = pos.map(f32::to_bits);
                let unchanged = !first && rk == st.rot && pk == st.pos && !parent_changed;
                if unchanged {
                    *c = false;
                    continue;
                }
                for k in 0..3 {
                    if first || rk[k] != st.rot[k] {
                        st.sin_cos[k] = angle_sin_cos(to_degrees(rot[k]));
                    }
                }
                st.rot = rk;
                st.pos = pk;
                *c = true;
                let mut m = sin_cos_matrix(st.sin_cos);
                m[0][3] = pos[0];
                m[1][3] = pos[1];
                m[2][3] = pos[2];
                let w = match parent.and_then(|p| world.get(p)) {
                    Some(pm) => concat(pm, &m),
                    None => m,
                };
                if let Some(slot) = world.get_mut(j) {
                    *slot = w;
                }
            }
            first = false;
            // This frame's min and max per axis.
            let mut flo = [f32::INFINITY; 3];
            let mut fhi = [f32::NEG_INFINITY; 3];
            for g in &verts.groups {
                if changed.get(g.bone) != Some(&true) {
                    continue;
                }
                let Some(m) = world.get(g.bone) else { continue };
                let inside = g
                    .reach
                    .as_ref()
                    .map_or([false; 3], |r| strictly_inside(r, m, &lo, &hi));
                for a in 0..3 {
                    if inside[a] {
                        continue;
                    }
                    let (l, h) = row_min_max(&g.xs, &g.ys, &g.zs, &m[a]);
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
pub(crate) mod tests {
    use super::super::math::angle_matrix;
    use super::*;

    use std::cell::RefCell;

    thread_local! {
        /// Sequence boxes checked by [`check`] on this thread, and the labels of the differing.
        static CHECKED: RefCell<(usize, Vec<String>)> = const { RefCell::new((0, Vec::new())) };
    }

    /// Called by `build_animation` (in tests) for every sequence: compares the box
    /// [`sequence_box`] gave with [`previous`] and [`reference`], bit for bit.
    pub(in crate::formats::goldsrc::animation) fn check(
        blends: &[Frames],
        parents: &[i32],
        verts: &[(usize, [f32; 3])],
        got: ([f32; 3], [f32; 3]),
        label: &str,
    ) {
        let bits = |b: ([f32; 3], [f32; 3])| (b.0.map(f32::to_bits), b.1.map(f32::to_bits));
        let before = previous(blends, parents, &BoneVerts::new(verts));
        let want = reference(blends, parents, verts);
        CHECKED.with(|c| {
            let mut c = c.borrow_mut();
            c.0 += 1;
            if bits(got) != bits(want) || bits(before) != bits(want) {
                c.1.push(format!(
                    "{label}: {got:?}, previous {before:?}, loop {want:?}"
                ));
            }
        });
    }

    /// [`row_min_max`] before the padding: a scalar loop for the last `len % LANES` positions.
    fn previous_row_min_max(xs: &[f32], ys: &[f32], zs: &[f32], r: &[f32; 4]) -> (f32, f32) {
        let mut lo = [f32::INFINITY; LANES];
        let mut hi = [f32::NEG_INFINITY; LANES];
        let (r0, r1, r2, r3) = (r[0], r[1], r[2], r[3]);
        let mut cx = xs.chunks_exact(LANES);
        let mut cy = ys.chunks_exact(LANES);
        let mut cz = zs.chunks_exact(LANES);
        for ((x, y), z) in (&mut cx).zip(&mut cy).zip(&mut cz) {
            for l in 0..LANES {
                let p = x[l] * r0 + y[l] * r1 + z[l] * r2 + r3;
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

    /// [`sequence_box`] before it skipped unchanged bones and bones inside the box: every
    /// bone's world matrix every frame (rotation matrices reused while a bone's angles stay),
    /// every vertex of every frame, per bone.
    fn previous(blends: &[Frames], parents: &[i32], verts: &BoneVerts) -> ([f32; 3], [f32; 3]) {
        // The unpadded columns of each bone.
        type Columns = (Vec<f32>, Vec<f32>, Vec<f32>);
        let mut by_bone: std::collections::BTreeMap<usize, Columns> =
            std::collections::BTreeMap::new();
        for &(b, v) in &verts.ordered {
            let g = by_bone.entry(b).or_default();
            g.0.push(v[0]);
            g.1.push(v[1]);
            g.2.push(v[2]);
        }
        let mut lo = [9999.0f32; 3];
        let mut hi = [-9999.0f32; 3];
        let nb = parents.len();
        let mut world: Vec<Matrix> = vec![[[0.0; 4]; 3]; nb];
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
                let mut flo = [f32::INFINITY; 3];
                let mut fhi = [f32::NEG_INFINITY; 3];
                for (b, (xs, ys, zs)) in &by_bone {
                    let Some(m) = world.get(*b) else { continue };
                    for a in 0..3 {
                        let (l, h) = previous_row_min_max(xs, ys, zs, &m[a]);
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
            let before = previous(&blends, &parents, &BoneVerts::new(&verts));
            let bits = |b: ([f32; 3], [f32; 3])| (b.0.map(f32::to_bits), b.1.map(f32::to_bits));
            assert_eq!(bits(got), bits(want), "round {round}");
            assert_eq!(bits(before), bits(want), "round {round}");
        }
    }

    /// Starts counting the sequence boxes [`check`] compares on this thread (for the corpus
    /// test in `crate::pipeline_tests`).
    pub(crate) fn reset_checked() {
        CHECKED.with(|c| *c.borrow_mut() = (0, Vec::new()));
    }

    /// How many sequence boxes [`check`] compared on this thread since [`reset_checked`], and
    /// the labels of those that differ.
    pub(crate) fn checked() -> (usize, Vec<String>) {
        CHECKED.with(|c| c.borrow().clone())
    }
}
