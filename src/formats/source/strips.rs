//! VTX strip groups and strips for one mesh and LOD (`source-geometry.md` §8.3–§8.4): triangle
//! lists cut so no strip needs more bones than the variant's palette holds, no strip group more
//! than 32,767 vertices or indices, each strip's triangles reordered by meshopt's vertex-cache
//! optimiser and its vertices stored in first-use order (vertex-fetch order).

use super::model::{Group, PVertex};
use super::records::{VtxBoneStateChange, VtxStrip, VtxVertex};

/// studiomdl's signed-16-bit limit on strip-group vertices and indices.
pub const MAX_GROUP: usize = 32_767;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Dx90,
    Dx80,
    Sw,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Dx90, Variant::Dx80, Variant::Sw];

    pub fn extension(self) -> &'static str {
        match self {
            Variant::Dx90 => "dx90.vtx",
            Variant::Dx80 => "dx80.vtx",
            Variant::Sw => "sw.vtx",
        }
    }

    pub fn max_bones_per_strip(self) -> usize {
        match self {
            Variant::Dx90 => 53,
            Variant::Dx80 => 16,
            Variant::Sw => 512,
        }
    }

    pub fn vert_cache_size(self) -> i32 {
        match self {
            Variant::Sw => 512,
            _ => 24,
        }
    }
}

/// The distinct bones a triangle's vertices are weighted to, in first-use order, into `out`
/// (cleared first; one buffer serves every triangle, so nothing is allocated per triangle).
fn bones_of(verts: &[PVertex], t: &[u32; 3], out: &mut Vec<u8>) {
    out.clear();
    for &v in t {
        if let Some(v) = verts.get(v as usize) {
            for w in &v.weights {
                if !out.contains(&w.0) {
                    out.push(w.0);
                }
            }
        }
    }
}

/// Splits the triangles into strips whose bone sets fit `limit`: a triangle that needs more new
/// bones than the palette has free slots waits for the next strip (palettes never carry over).
fn partition_by_bones(
    verts: &[PVertex],
    tris: &[[u32; 3]],
    limit: usize,
) -> Vec<(Vec<u8>, Vec<[u32; 3]>)> {
    let mut out = Vec::new();
    let mut todo: Vec<[u32; 3]> = tris.to_vec();
    let mut b = Vec::new();
    while !todo.is_empty() {
        let mut palette: Vec<u8> = Vec::new();
        // membership of `palette`, by bone index
        let mut in_palette = [false; 256];
        let mut taken = Vec::new();
        let mut rest = Vec::new();
        for t in todo {
            bones_of(verts, &t, &mut b);
            let new = b.iter().filter(|&&x| !in_palette[usize::from(x)]).count();
            if palette.len() + new <= limit || taken.is_empty() {
                for &x in &b {
                    if !in_palette[usize::from(x)] {
                        in_palette[usize::from(x)] = true;
                        palette.push(x);
                    }
                }
                taken.push(t);
            } else {
                rest.push(t);
            }
        }
        out.push((palette, taken));
        todo = rest;
    }
    out
}

/// Cuts a triangle list so each piece has at most `MAX_GROUP` distinct vertices and indices.
fn chunk(tris: Vec<[u32; 3]>) -> Vec<Vec<[u32; 3]>> {
    let mut out = Vec::new();
    let mut cur: Vec<[u32; 3]> = Vec::new();
    let mut seen = crate::formats::hash::FastSet::default();
    for t in tris {
        let new = t.iter().filter(|v| !seen.contains(*v)).count();
        if (cur.len() + 1) * 3 > MAX_GROUP || seen.len() + new > MAX_GROUP {
            out.push(std::mem::take(&mut cur));
            seen.clear();
        }
        for v in t {
            seen.insert(v);
        }
        cur.push(t);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Strip-group flags (`optimize.h`): STRIPGROUP_IS_FLEXED 0x01, IS_HWSKINNED 0x02,
/// IS_DELTA_FLEXED 0x04.
const HW: u8 = 0x02;
const HW_FLEXED: u8 = 0x07;
const SW_FLEXED: u8 = 0x05;
const SW: u8 = 0x00;

/// Builds the strip groups of one mesh at one LOD (`source-geometry.md` §8.3): triangles with a
/// vertex some flex moves (`flexed`, per mesh vertex) go to flexed groups, in the order
/// HW flexed, HW, SW flexed, SW. Hardware flex is a dx90 feature: in dx80 (and the sw file of a
/// static prop) a flexed triangle stays hardware-skinned only on one bone, one bone per strip;
/// the others are software-skinned. The sw file of a skinned model is all software.
pub fn build(
    verts: &[PVertex],
    tris: &[[u32; 3]],
    flexed: &[bool],
    variant: Variant,
    static_prop: bool,
    cache: &mut Orders,
) -> Vec<Group> {
    if tris.is_empty() {
        return Vec::new();
    }
    let moves = |t: &&[u32; 3]| {
        t.iter()
            .any(|&v| flexed.get(v as usize).copied().unwrap_or(false))
    };
    let (ft, nt): (Vec<[u32; 3]>, Vec<[u32; 3]>) = tris.iter().partition(moves);
    let limit = variant.max_bones_per_strip();
    let mut groups = Vec::new();
    if variant == Variant::Sw && !static_prop {
        groups.extend(build_set(
            verts,
            &ft,
            usize::MAX,
            SW_FLEXED,
            true,
            static_prop,
            cache,
        ));
        groups.extend(build_set(
            verts,
            &nt,
            usize::MAX,
            SW,
            true,
            static_prop,
            cache,
        ));
    } else if variant == Variant::Dx90 {
        groups.extend(build_set(
            verts,
            &ft,
            limit,
            HW_FLEXED,
            false,
            static_prop,
            cache,
        ));
        groups.extend(build_set(verts, &nt, limit, HW, false, static_prop, cache));
    } else {
        let mut b = Vec::new();
        let (one, many): (Vec<[u32; 3]>, Vec<[u32; 3]>) = ft.iter().partition(|t| {
            bones_of(verts, t, &mut b);
            b.len() <= 1
        });
        groups.extend(build_set(
            verts,
            &one,
            1,
            HW_FLEXED,
            false,
            static_prop,
            cache,
        ));
        groups.extend(build_set(verts, &nt, limit, HW, false, static_prop, cache));
        groups.extend(build_set(
            verts,
            &many,
            usize::MAX,
            SW_FLEXED,
            true,
            static_prop,
            cache,
        ));
    }
    groups
}

/// Each strip's vertex order and indices, by its triangles: the variants of one mesh often cut
/// it into the same strips (a mesh whose bones fit every palette is one strip list in all
/// three files), and meshopt's order depends on the triangles alone, so it is found once.
#[derive(Default)]
pub struct Orders {
    done: Vec<(Vec<[u32; 3]>, std::rc::Rc<Order>)>,
    /// Triangle sets cut into one strip list whose palette holds `n` bones, and the pieces
    /// they were cut into: the same for any limit of at least `n`.
    whole: Vec<(Vec<[u32; 3]>, usize, std::rc::Rc<Pieces>)>,
}

/// Strips' palettes (bone numbers) and triangles, before their order is found.
type Pieces = Vec<(Vec<u8>, Vec<[u32; 3]>)>;

/// A strip's vertices (mesh vertex numbers, in first-use order) and its indices into them.
type Order = (Vec<u32>, Vec<u32>);

impl Orders {
    /// The strip's vertices (mesh vertex numbers) in first-use order after meshopt's
    /// vertex-cache order, and its indices into them.
    fn of(&mut self, ts: &[[u32; 3]]) -> std::rc::Rc<Order> {
        if let Some((_, o)) = self.done.iter().find(|(t, _)| t == ts) {
            return o.clone();
        }
        // local numbering, meshopt vertex-cache order, then first-use vertex order
        let mut local_of = crate::formats::hash::FastMap::default();
        let mut globals: Vec<u32> = Vec::new();
        let mut local_idx: Vec<u32> = Vec::with_capacity(ts.len() * 3);
        for t in ts {
            for &v in t {
                let l = *local_of.entry(v).or_insert_with(|| {
                    globals.push(v);
                    (globals.len() - 1) as u32
                });
                local_idx.push(l);
            }
        }
        let optimized = meshopt::optimize_vertex_cache(&local_idx, globals.len());
        let mut fetch = vec![u32::MAX; globals.len()];
        let mut order: Vec<u32> = Vec::with_capacity(globals.len());
        let mut idx: Vec<u32> = Vec::with_capacity(optimized.len());
        for &l in &optimized {
            let Some(f) = fetch.get_mut(l as usize) else {
                continue;
            };
            if *f == u32::MAX {
                *f = order.len() as u32;
                order.push(globals.get(l as usize).copied().unwrap_or(0));
            }
            idx.push(*f);
        }
        let o = std::rc::Rc::new((order, idx));
        self.done.push((ts.to_vec(), o.clone()));
        o
    }

    /// `tris` cut into strips of at most `limit` bones, then into pieces within the strip
    /// group limits, each with the palette of the bones its triangles use. Found once for a
    /// set that fits one palette (a mesh on few bones cuts the same in every variant).
    fn pieces(
        &mut self,
        verts: &[PVertex],
        tris: &[[u32; 3]],
        limit: usize,
    ) -> std::rc::Rc<Pieces> {
        if let Some((_, _, p)) = self.whole.iter().find(|(t, n, _)| *n <= limit && t == tris) {
            return p.clone();
        }
        let partition = partition_by_bones(verts, tris, limit);
        let whole = match partition.as_slice() {
            [(palette, _)] => Some(palette.len()),
            _ => None,
        };
        let mut pieces: Pieces = Vec::new();
        let mut b = Vec::new();
        for (palette, ts) in partition {
            for c in chunk(ts) {
                // the palette of a chunk: only the bones its triangles use, in palette order
                let used: Vec<u8> = {
                    let mut u = [false; 256];
                    for t in &c {
                        bones_of(verts, t, &mut b);
                        for &x in &b {
                            u[usize::from(x)] = true;
                        }
                    }
                    palette
                        .iter()
                        .copied()
                        .filter(|&x| u[usize::from(x)])
                        .collect()
                };
                pieces.push((used, c));
            }
        }
        let pieces = std::rc::Rc::new(pieces);
        if let Some(n) = whole {
            self.whole.push((tris.to_vec(), n, pieces.clone()));
        }
        pieces
    }
}

/// The strip groups of one set of triangles, all with `flags`: `software` groups store global
/// bone numbers and no bone-state changes.
fn build_set(
    verts: &[PVertex],
    tris: &[[u32; 3]],
    limit: usize,
    flags: u8,
    software: bool,
    static_prop: bool,
    cache: &mut Orders,
) -> Vec<Group> {
    if tris.is_empty() {
        return Vec::new();
    }
    let pieces = cache.pieces(verts, tris, limit);
    let mut groups: Vec<Group> = Vec::new();
    for (palette, ts) in pieces.iter() {
        let made = cache.of(ts);
        let (order, idx) = (made.0.as_slice(), made.1.as_slice());
        let need_new = match groups.last() {
            Some(g) => {
                g.flags != flags
                    || g.verts.len() + order.len() > MAX_GROUP
                    || g.indices.len() + idx.len() > MAX_GROUP
            }
            None => true,
        };
        if need_new {
            groups.push(Group {
                flags,
                verts: Vec::new(),
                indices: Vec::new(),
                strips: Vec::new(),
            });
        }
        let Some(g) = groups.last_mut() else { continue };
        let vert_offset = g.verts.len();
        let index_offset = g.indices.len();
        let mut max_bones = 0u8;
        for &v in order {
            let Some(pv) = verts.get(v as usize) else {
                continue;
            };
            let mut bone_id = if software { [-1i8; 3] } else { [0i8; 3] };
            let nb = if static_prop {
                0
            } else {
                pv.weights.len().min(3) as u8
            };
            if !static_prop {
                for (k, w) in pv.weights.iter().take(3).enumerate() {
                    bone_id[k] = if software {
                        w.0 as i8
                    } else {
                        palette.iter().position(|&b| b == w.0).unwrap_or(0) as i8
                    };
                }
            }
            max_bones = max_bones.max(nb);
            g.verts.push(VtxVertex {
                bone_weight_index: [0, 1, 2],
                num_bones: nb,
                orig_mesh_vert_id: v as u16,
                bone_id,
            });
        }
        for &i in idx {
            g.indices.push((vert_offset as u32 + i) as u16);
        }
        let changes: Vec<VtxBoneStateChange> = if software {
            Vec::new()
        } else if static_prop {
            vec![VtxBoneStateChange {
                hardware_id: 0,
                new_bone_id: 0,
            }]
        } else {
            palette
                .iter()
                .enumerate()
                .map(|(i, &b)| VtxBoneStateChange {
                    hardware_id: i as i32,
                    new_bone_id: b as i32,
                })
                .collect()
        };
        let strip = VtxStrip {
            num_indices: (g.indices.len() - index_offset) as i32,
            index_offset: index_offset as i32,
            num_verts: order.len() as i32,
            vert_offset: vert_offset as i32,
            num_bones: max_bones as i16,
            flags: 0x01,
            num_bone_state_changes: if static_prop { 0 } else { changes.len() as i32 },
            bone_state_change_offset: 0,
        };
        g.strips.push((strip, changes));
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vert(bones: &[u8]) -> PVertex {
        PVertex {
            pos: [0.0; 3],
            normal: [0.0, 0.0, 1.0],
            uv: [0.0; 2],
            weights: bones
                .iter()
                .map(|&b| (b, 1.0 / bones.len() as f32))
                .collect(),
            tangent: [1.0, 0.0, 0.0, -1.0],
            group: 0,
        }
    }

    #[test]
    fn strips_respect_the_bone_limit_and_keep_every_triangle() {
        // 60 bones, each triangle on 3 of them
        let verts: Vec<PVertex> = (0..180).map(|i| vert(&[(i / 3) as u8 % 60])).collect();
        let tris: Vec<[u32; 3]> = (0..60).map(|t| [t * 3, t * 3 + 1, t * 3 + 2]).collect();
        for v in [Variant::Dx90, Variant::Dx80] {
            let groups = build(&verts, &tris, &[], v, false, &mut Orders::default());
            let mut n = 0;
            for g in &groups {
                for (s, changes) in &g.strips {
                    assert!(changes.len() <= v.max_bones_per_strip());
                    n += s.num_indices / 3;
                    for i in 0..s.num_indices {
                        let idx = g.indices[(s.index_offset + i) as usize] as i32;
                        assert!(idx >= s.vert_offset && idx < s.vert_offset + s.num_verts);
                    }
                }
            }
            assert_eq!(n, 60);
        }
    }

    /// The variants of one mesh built with one shared [`Orders`] (cuts and orders found once)
    /// are the variants built each on its own, where the cuts are the same (20 bones: one
    /// strip list in dx90 and sw) and where they differ (dx80's 16-bone palette), flexed
    /// triangles included.
    #[test]
    fn shared_orders_change_nothing() {
        let verts: Vec<PVertex> = (0..300u32)
            .map(|i| vert(&[(i % 20) as u8, ((i / 7) % 20) as u8]))
            .collect();
        let tris: Vec<[u32; 3]> = (0..290u32)
            .map(|t| [t, (t * 13 + 5) % 300, (t * 31 + 11) % 300])
            .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
            .collect();
        let flexed: Vec<bool> = (0..300).map(|i| i % 17 == 0).collect();
        let key = |gs: &[Group]| {
            gs.iter()
                .map(|g| format!("{:?}", (g.flags, &g.verts, &g.indices, &g.strips)))
                .collect::<Vec<_>>()
        };
        for static_prop in [false, true] {
            let mut shared = Orders::default();
            let mut strips = 0;
            for v in Variant::ALL {
                let alone = build(
                    &verts,
                    &tris,
                    &flexed,
                    v,
                    static_prop,
                    &mut Orders::default(),
                );
                let with = build(&verts, &tris, &flexed, v, static_prop, &mut shared);
                assert!(!alone.is_empty());
                assert_eq!(key(&with), key(&alone), "{v:?}");
                strips += with.iter().map(|g| g.strips.len()).sum::<usize>();
            }
            // dx90 and sw cut the unflexed triangles the same: their order was found once
            assert!(shared.done.len() < strips, "{} {strips}", shared.done.len());
            // and their cuts: the unflexed set fits one palette in dx90, which sw reuses
            assert!(
                shared.whole.iter().any(|w| w.1 <= 20),
                "{}",
                shared.whole.len()
            );
        }
    }
}
