//! Triangle commands: Valve's greedy strip/fan builder (`goldsrc.md` §8.8, steps 1-5).
//!
//! A pure function over one mesh's triangles. The result is the `int16` command list of
//! `goldsrc.md` §4.15: a count (`+n` strip, `−n` fan), then `n` corners of four values
//! (vertex, normal, s, t), repeated, and a final 0.

use crate::formats::hash::FastMap;

/// One triangle corner as the strip builder sees it.
///
/// Two corners are the same for adjacency only when *every* field is identical, the float
/// texture coordinates bit for bit (Valve's tool compares the whole record with `memcmp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StripCorner {
    pub vert: i32,
    pub norm: i32,
    pub s: i32,
    pub t: i32,
    /// The texture coordinates after clamping and packing (`goldsrc.md` §8.3).
    pub u: f32,
    pub v: f32,
}

impl StripCorner {
    #[cfg(test)]
    fn same(&self, o: &StripCorner) -> bool {
        self.vert == o.vert
            && self.norm == o.norm
            && self.s == o.s
            && self.t == o.t
            && self.u.to_bits() == o.u.to_bits()
            && self.v.to_bits() == o.v.to_bits()
    }
}

/// A directed edge: its two corners, bit for bit.
type EdgeKey = [u32; 12];

fn edge_key(a: &StripCorner, b: &StripCorner) -> EdgeKey {
    let c = |x: &StripCorner| {
        [
            x.vert as u32,
            x.norm as u32,
            x.s as u32,
            x.t as u32,
            x.u.to_bits(),
            x.v.to_bits(),
        ]
    };
    let (a, b) = (c(a), c(b));
    [
        a[0], a[1], a[2], a[3], a[4], a[5], b[0], b[1], b[2], b[3], b[4], b[5],
    ]
}

/// No neighbour across an edge (`nb` of [`build_commands`]): past any triangle number.
const NO_LINK: usize = usize::MAX;

/// The longest strip or fan Valve's tool emits (longer ones are skipped as candidates).
pub const MAX_RUN: usize = 127;

/// The command list of one mesh, ending with its 0, and the number of strips and fans in it.
pub fn build_commands(tris: &[[StripCorner; 3]]) -> (Vec<i16>, usize) {
    let n = tris.len();
    let corner = |t: usize, c: usize| -> Option<&StripCorner> { tris.get(t)?.get(c % 3) };

    // Step 1-2: adjacency. `nb[t][e]` = (neighbour triangle, its edge) across edge e of t,
    // packed as `4·j + e` ([`NO_LINK`]: none).
    // Valve's loop: for each triangle i and each edge k of it not yet linked, the first
    // triangle j > i that is not linked on all three edges, and its first edge e (linked or
    // not) running the other way (corner e = corner k+1, corner e+1 = corner k). `edges` lists,
    // per directed edge (its two corners), the (j, e) having it in that order, so the search
    // is a walk of one short list from the first j > i.
    let mut nb: Vec<[usize; 3]> = vec![[NO_LINK; 3]; n];
    let mut linked: Vec<u8> = vec![0; n];
    // The lists are one flat array, grouped by edge (`at[id]..at[id + 1]` for the edge numbered
    // `id` in first-seen order), each in ascending (j, e) order: no allocation per edge.
    let mut ids: FastMap<EdgeKey, usize> =
        FastMap::with_capacity_and_hasher(n * 3, Default::default());
    let mut edge_of: Vec<usize> = Vec::with_capacity(n * 3);
    let mut at: Vec<usize> = Vec::with_capacity(n * 3 + 1);
    for tri in tris {
        for e in 0..3 {
            if let (Some(a), Some(b)) = (tri.get(e), tri.get((e + 1) % 3)) {
                let fresh = ids.len();
                let id = *ids.entry(edge_key(a, b)).or_insert(fresh);
                if id == fresh {
                    at.push(0);
                }
                if let Some(c) = at.get_mut(id) {
                    *c += 1;
                }
                edge_of.push(id);
            }
        }
    }
    // counts → starts
    let mut sum = 0;
    for c in at.iter_mut() {
        let k = *c;
        *c = sum;
        sum += k;
    }
    at.push(sum);
    let mut next: Vec<usize> = at.clone();
    let mut flat: Vec<(usize, usize)> = vec![(0, 0); sum];
    for (k, &id) in edge_of.iter().enumerate() {
        if let Some(slot) = next.get_mut(id) {
            if let Some(x) = flat.get_mut(*slot) {
                *x = (k / 3, k % 3);
            }
            *slot += 1;
        }
    }
    let list_of = |key: &EdgeKey| -> Option<&[(usize, usize)]> {
        let &id = ids.get(key)?;
        flat.get(*at.get(id)?..*at.get(id + 1)?)
    };
    for i in 0..n {
        for k in 0..3 {
            if linked.get(i).is_some_and(|&m| m & (1 << k) != 0) {
                continue;
            }
            let (Some(m1), Some(m2)) = (corner(i, k + 1), corner(i, k)) else {
                continue;
            };
            let Some(list) = list_of(&edge_key(m1, m2)) else {
                continue;
            };
            let from = list.partition_point(|&(j, _)| j <= i);
            let hit = list
                .get(from..)
                .unwrap_or(&[])
                .iter()
                .find(|&&(j, _)| linked.get(j).copied() != Some(7))
                .copied();
            if let Some((j, e)) = hit {
                if let Some(x) = nb.get_mut(i).and_then(|x| x.get_mut(k)) {
                    *x = 4 * j + e;
                }
                if let Some(x) = nb.get_mut(j).and_then(|x| x.get_mut(e)) {
                    *x = 4 * i + k;
                }
                if let Some(x) = linked.get_mut(i) {
                    *x |= 1 << k;
                }
                if let Some(x) = linked.get_mut(j) {
                    *x |= 1 << e;
                }
            }
        }
    }

    // Steps 3-4: the run from (start triangle, start corner), strip or fan.
    // `stamp`: per triangle [`EMITTED`], or the number of the last run that took it (runs are
    // numbered from 1 up, so a triangle whose stamp is below the current run's number is free
    // for it: nothing to clear after a run).
    let mut stamp: Vec<u32> = vec![0; n];
    let mut run_id: u32 = 0;
    // (c + 1) % 3 and (c + 2) % 3 for a corner or edge c < 3
    const NEXT: [usize; 3] = [1, 2, 0];
    const PREV: [usize; 3] = [2, 0, 1];
    const TURN: [[usize; 3]; 2] = [NEXT, PREV];
    // Walks the run and returns its length in corners; with `out`, also its (triangle, corner)
    // list. Candidates are measured without a list: only a new best is walked again for it
    // (the same walk, as the free triangles are the same).
    let mut run = |stamp: &mut Vec<u32>,
                   mut out: Option<&mut Vec<(usize, usize)>>,
                   start: usize,
                   c0: usize,
                   fan: bool|
     -> usize {
        if run_id >= EMITTED - 1 {
            // out of numbers (after billions of runs): start again from 1
            for s in stamp.iter_mut().filter(|s| **s != EMITTED) {
                *s = 0;
            }
            run_id = 0;
        }
        run_id += 1;
        let id = run_id;
        let c0 = c0 % 3;
        if let Some(out) = out.as_deref_mut() {
            out.clear();
            out.extend_from_slice(&[
                (start, c0),
                (start, NEXT.get(c0).copied().unwrap_or(0)),
                (start, PREV.get(c0).copied().unwrap_or(0)),
            ]);
        }
        if let Some(s) = stamp.get_mut(start) {
            *s = id;
        }
        let mut len = 3;
        let (mut t, mut c) = (start, c0);
        loop {
            // strips turn left and right in turn, fans always the same way
            let turn = usize::from(fan | (len % 2 == 0));
            let Some(&link) = nb.get(t).and_then(|x| x.get(*TURN.get(turn)?.get(c)?)) else {
                break;
            };
            let (j, e) = (link >> 2, link & 3);
            match stamp.get_mut(j) {
                Some(s) if *s < id => *s = id,
                // emitted, already in this run, or no triangle ([`NO_LINK`] is past every one)
                _ => break,
            }
            if let Some(out) = out.as_deref_mut() {
                out.push((j, PREV.get(e).copied().unwrap_or(0)));
            }
            len += 1;
            t = j;
            c = e;
        }
        len
    };

    // Step 5: greedy selection.
    // every triangle is emitted once: a count and three corners of four values at most
    let mut commands: Vec<i16> = Vec::with_capacity(n * 13 + 1);
    let mut runs = 0usize;
    // Per triangle, the longest run measured from it (runs only shrink as triangles are
    // emitted, so one no longer than the best so far is skipped), 0 once emitted. Runs of more
    // than `MAX_RUN` (127) corners are never taken, so 255 stands for any length above; a
    // triangle not measured yet holds the mesh's triangle count.
    let mut peak: Vec<u8> = vec![n.min(255) as u8; n];
    let mut best: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < n {
        if peak.get(i).is_some_and(|&p| p == 0) {
            i += 1;
            continue;
        }
        best.clear();
        let mut best_fan = false;
        let mut k = i;
        while best.len() < MAX_RUN {
            k = next_above(&peak, k, best.len() as u8);
            if k >= n {
                break;
            }
            let mut local_peak = 0;
            for fan in [false, true] {
                for c in 0..3 {
                    let len = run(&mut stamp, None, k, c, fan);
                    if len <= MAX_RUN && len > best.len() {
                        run(&mut stamp, Some(&mut best), k, c, fan);
                        best_fan = fan;
                    }
                    local_peak = local_peak.max(len);
                }
            }
            if let Some(p) = peak.get_mut(k) {
                *p = local_peak.min(255) as u8;
            }
            k += 1;
        }
        for &(t, _) in &best {
            if let (Some(s), Some(p)) = (stamp.get_mut(t), peak.get_mut(t)) {
                *s = EMITTED;
                *p = 0;
            }
        }
        let len = best.len() as i16;
        commands.push(if best_fan { -len } else { len });
        for &(t, c) in &best {
            if let Some(sc) = corner(t, c) {
                commands.extend_from_slice(&[
                    sc.vert as i16,
                    sc.norm as i16,
                    sc.s as i16,
                    sc.t as i16,
                ]);
            }
        }
        runs += 1;
        if best.is_empty() {
            // Every candidate was longer than 127 (Valve's tool would emit a 0 here and loop
            // forever); emit the triangle on its own so the list stays complete.
            commands.pop();
            if let Some(tri) = tris.get(i) {
                commands.push(3);
                for sc in tri {
                    commands.extend_from_slice(&[
                        sc.vert as i16,
                        sc.norm as i16,
                        sc.s as i16,
                        sc.t as i16,
                    ]);
                }
            }
            if let (Some(s), Some(p)) = (stamp.get_mut(i), peak.get_mut(i)) {
                *s = EMITTED;
                *p = 0;
            }
        }
    }
    commands.push(0);
    (commands, runs)
}

/// The stamp of an emitted triangle (see `stamp` in [`build_commands`]).
const EMITTED: u32 = u32::MAX;

/// The first `k >= from` whose `peak` is above `floor` (`peak.len()` if none): sixteen at a
/// time while none is, as most triangles are skipped (emitted, or measured shorter than the
/// best run so far).
fn next_above(peak: &[u8], from: usize, floor: u8) -> usize {
    let mut k = from;
    while let Some(chunk) = peak.get(k..k + 16) {
        // the largest of sixteen: a few vector instructions, no branch per triangle
        if chunk.iter().fold(0u8, |m, &p| m.max(p)) > floor {
            break;
        }
        k += 16;
    }
    while let Some(&p) = peak.get(k) {
        if p > floor {
            return k;
        }
        k += 1;
    }
    peak.len().max(from)
}

/// Decodes a command list back into triangles of corners `(vert, norm, s, t)`, in the winding
/// the renderer uses (strips alternate; fans pivot on their first corner). `None` when the list
/// is malformed (a count running past the end, or no final 0).
pub fn decode_commands(cmds: &[i16]) -> Option<Vec<[[i16; 4]; 3]>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let c = *cmds.get(at)?;
        at += 1;
        if c == 0 {
            return (at == cmds.len()).then_some(out);
        }
        let fan = c < 0;
        let len = c.unsigned_abs() as usize;
        let mut corners = Vec::with_capacity(len);
        for _ in 0..len {
            let v = cmds.get(at..at + 4)?;
            corners.push([*v.first()?, *v.get(1)?, *v.get(2)?, *v.get(3)?]);
            at += 4;
        }
        for j in 2..len {
            let (a, b, c) = if fan {
                (corners.first()?, corners.get(j - 1)?, corners.get(j)?)
            } else if j % 2 == 0 {
                (corners.get(j - 2)?, corners.get(j - 1)?, corners.get(j)?)
            } else {
                (corners.get(j - 1)?, corners.get(j - 2)?, corners.get(j)?)
            };
            out.push([*a, *b, *c]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builder as first written: Valve's loops verbatim (quadratic adjacency scan).
    fn reference(tris: &[[StripCorner; 3]]) -> (Vec<i16>, usize) {
        let n = tris.len();
        let corner = |t: usize, c: usize| -> Option<&StripCorner> { tris.get(t)?.get(c % 3) };

        // Step 1-2: adjacency. `nb[t][e]` = (neighbour triangle, its edge) across edge e of t.
        let mut nb: Vec<[Option<(usize, usize)>; 3]> = vec![[None; 3]; n];
        let mut linked: Vec<u8> = vec![0; n];
        for i in 0..n {
            for k in 0..3 {
                if linked.get(i).is_some_and(|&m| m & (1 << k) != 0) {
                    continue;
                }
                let (Some(m1), Some(m2)) = (corner(i, k + 1), corner(i, k)) else {
                    continue;
                };
                'scan: for j in i + 1..n {
                    if linked.get(j).copied() == Some(7) {
                        continue;
                    }
                    for e in 0..3 {
                        let (Some(a), Some(b)) = (corner(j, e), corner(j, e + 1)) else {
                            continue;
                        };
                        if a.same(m1) && b.same(m2) {
                            if let Some(x) = nb.get_mut(i).and_then(|x| x.get_mut(k)) {
                                *x = Some((j, e));
                            }
                            if let Some(x) = nb.get_mut(j).and_then(|x| x.get_mut(e)) {
                                *x = Some((i, k));
                            }
                            if let Some(x) = linked.get_mut(i) {
                                *x |= 1 << k;
                            }
                            if let Some(x) = linked.get_mut(j) {
                                *x |= 1 << e;
                            }
                            break 'scan;
                        }
                    }
                }
            }
        }

        // Steps 3-4: the run from (start triangle, start corner), strip or fan.
        // `used`: 0 free, 1 emitted, 2 in the run being measured.
        let mut used: Vec<u8> = vec![0; n];
        let run = |used: &mut Vec<u8>, start: usize, c0: usize, fan: bool| -> Vec<(usize, usize)> {
            let mut out = vec![
                (start, c0 % 3),
                (start, (c0 + 1) % 3),
                (start, (c0 + 2) % 3),
            ];
            if let Some(u) = used.get_mut(start) {
                *u = 2;
            }
            let (mut t, mut c) = (start, c0);
            loop {
                let edge = if !fan && out.len() % 2 == 1 {
                    (c + 1) % 3
                } else {
                    (c + 2) % 3
                };
                let Some((j, e)) = nb.get(t).and_then(|x| x.get(edge)).copied().flatten() else {
                    break;
                };
                if used.get(j).is_none_or(|&u| u != 0) {
                    break;
                }
                out.push((j, (e + 2) % 3));
                if let Some(u) = used.get_mut(j) {
                    *u = 2;
                }
                t = j;
                c = e;
            }
            for u in used.iter_mut() {
                if *u == 2 {
                    *u = 0;
                }
            }
            out
        };

        // Step 5: greedy selection.
        let mut commands: Vec<i16> = Vec::new();
        let mut runs = 0usize;
        let mut peak: Vec<usize> = vec![n; n];
        let mut i = 0;
        while i < n {
            if used.get(i).is_some_and(|&u| u != 0) {
                i += 1;
                continue;
            }
            let mut best: Vec<(usize, usize)> = Vec::new();
            let mut best_fan = false;
            let mut k = i;
            while k < n && best.len() < MAX_RUN {
                if used.get(k).is_some_and(|&u| u != 0)
                    || peak.get(k).is_some_and(|&p| p <= best.len())
                {
                    k += 1;
                    continue;
                }
                let mut local_peak = 0;
                for fan in [false, true] {
                    for c in 0..3 {
                        let r = run(&mut used, k, c, fan);
                        if r.len() <= MAX_RUN && r.len() > best.len() {
                            best = r.clone();
                            best_fan = fan;
                        }
                        local_peak = local_peak.max(r.len());
                    }
                }
                if let Some(p) = peak.get_mut(k) {
                    *p = local_peak;
                }
                k += 1;
            }
            for &(t, _) in &best {
                if let Some(u) = used.get_mut(t) {
                    *u = 1;
                }
            }
            let len = best.len() as i16;
            commands.push(if best_fan { -len } else { len });
            for &(t, c) in &best {
                if let Some(sc) = corner(t, c) {
                    commands.extend_from_slice(&[
                        sc.vert as i16,
                        sc.norm as i16,
                        sc.s as i16,
                        sc.t as i16,
                    ]);
                }
            }
            runs += 1;
            if best.is_empty() {
                // Every candidate was longer than 127 (Valve's tool would emit a 0 here and loop
                // forever); emit the triangle on its own so the list stays complete.
                commands.pop();
                if let Some(tri) = tris.get(i) {
                    commands.push(3);
                    for sc in tri {
                        commands.extend_from_slice(&[
                            sc.vert as i16,
                            sc.norm as i16,
                            sc.s as i16,
                            sc.t as i16,
                        ]);
                    }
                }
                if let Some(u) = used.get_mut(i) {
                    *u = 1;
                }
            }
        }
        commands.push(0);
        (commands, runs)
    }

    /// Meshes with runs past `MAX_RUN` and more than 255 triangles (the byte-sized peaks of
    /// [`build_commands`]): a long band of quads, a wide fan, both shuffled in blocks.
    #[test]
    fn long_runs_give_the_same_commands_as_the_quadratic_scan() {
        let corner = |k: i32| StripCorner {
            vert: k,
            norm: 0,
            s: k % 7,
            t: 0,
            u: 0.0,
            v: 0.0,
        };
        let mut tris: Vec<[StripCorner; 3]> = Vec::new();
        // a band: vertices 2q (bottom) and 2q + 1 (top), two triangles per quad
        for q in 0..200 {
            let (a, b, c, d) = (2 * q, 2 * q + 1, 2 * q + 2, 2 * q + 3);
            tris.push([corner(a), corner(c), corner(b)]);
            tris.push([corner(b), corner(c), corner(d)]);
        }
        // a fan around vertex 10000
        for q in 0..180 {
            tris.push([corner(10000), corner(10001 + q), corner(10002 + q)]);
        }
        assert_eq!(build_commands(&tris), reference(&tris));
        // the same triangles in another order
        let mut mixed: Vec<[StripCorner; 3]> = Vec::new();
        for block in tris.chunks(37).rev() {
            mixed.extend(block.iter().rev());
        }
        assert_eq!(build_commands(&mixed), reference(&mixed));
    }

    #[test]
    fn edge_map_gives_the_same_commands_as_the_quadratic_scan() {
        let mut state = 0x9E3779B97F4A7C15u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for round in 0..400 {
            // Few distinct corners, so that edges are shared (often by more than two
            // triangles), with degenerate triangles and repeated triangles.
            let pool = 3 + next(12 + round % 40) as i32;
            let n = 1 + next(1 + 2 * pool as u64 * (1 + round % 5)) as usize;
            let corner = |k: i32| StripCorner {
                vert: k,
                norm: k % 3,
                s: 0,
                t: 0,
                u: (k % 2) as f32,
                v: 0.0,
            };
            let tris: Vec<[StripCorner; 3]> = (0..n)
                .map(|_| {
                    let a = next(pool as u64) as i32;
                    let b = next(pool as u64) as i32;
                    let c = next(pool as u64) as i32;
                    [corner(a), corner(b), corner(c)]
                })
                .collect();
            assert_eq!(build_commands(&tris), reference(&tris), "round {round}");
        }
    }
}
