//! Exact 3D convex hulls for collision models.
//!
//! Points are snapped to a grid of 1/[`SNAP`] inch and held as integers, so every predicate
//! (which side of a plane a point lies on, whether four points are coplanar, whether three are
//! collinear) is computed exactly in `i128`: no tolerance decides anything, and the same points
//! always give the same hull. The hull is built by the quickhull method (each face keeps the
//! points outside it; the farthest is added, the faces it sees are replaced by a cone from
//! their horizon). Then every flat face, which the method may have cut into triangles in any
//! way, is made one polygon again (without points on its edges) and cut as a fan from its
//! smallest corner; points and triangles are returned in sorted order.
//!
//! Coordinates must stay within ±2^40 grid steps (2^28 inches), where the `i128` products
//! cannot overflow; a point beyond gives no hull.

use std::collections::HashMap;

/// Grid steps per inch.
pub const SNAP: f64 = 4096.0;

/// The largest coordinate, in grid steps, the predicates hold exactly.
const LIMIT: i64 = 1 << 40;

type P = [i64; 3];

fn sub(a: P, b: P) -> [i128; 3] {
    [
        (a[0] - b[0]) as i128,
        (a[1] - b[1]) as i128,
        (a[2] - b[2]) as i128,
    ]
}

fn cross(a: [i128; 3], b: [i128; 3]) -> [i128; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [i128; 3], b: [i128; 3]) -> i128 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Six times the signed volume of (a, b, c, d): positive when d lies on the side of the plane
/// (a, b, c) that its counter-clockwise normal points to.
fn orient(a: P, b: P, c: P, d: P) -> i128 {
    dot(cross(sub(b, a), sub(c, a)), sub(d, a))
}

/// A hull: its corners (inches) and outward, counter-clockwise triangles.
pub struct Hull {
    pub points: Vec<[f64; 3]>,
    pub tris: Vec<[usize; 3]>,
}

/// The convex hull of `points` (inches), or `None` when they are fewer than 4, flat, not
/// finite or too far out.
pub fn convex_hull(points: &[[f64; 3]]) -> Option<Hull> {
    let mut pts: Vec<P> = Vec::with_capacity(points.len());
    for p in points {
        let mut q = [0i64; 3];
        for k in 0..3 {
            let v = (p[k] * SNAP).round();
            if !v.is_finite() || v.abs() >= LIMIT as f64 {
                return None;
            }
            q[k] = v as i64;
        }
        pts.push(q);
    }
    pts.sort_unstable();
    pts.dedup();
    let tris = quickhull(&pts)?;
    Some(canonical(&pts, &tris))
}

struct Face {
    v: [usize; 3],
    outside: Vec<usize>,
    alive: bool,
}

/// Quickhull over distinct points: outward triangles (indices into `pts`).
fn quickhull(pts: &[P]) -> Option<Vec<[usize; 3]>> {
    if pts.len() < 4 {
        return None;
    }
    // a first tetrahedron: the two ends along x (sorted order), the point farthest from their
    // line, the point farthest from their plane
    let a = 0;
    let b = pts.len() - 1;
    let ab = sub(pts[b], pts[a]);
    let line = |p: &P| {
        let c = cross(ab, sub(*p, pts[a]));
        dot(c, c)
    };
    let c = (0..pts.len()).max_by_key(|&i| (line(&pts[i]), std::cmp::Reverse(i)))?;
    if line(&pts[c]) == 0 {
        return None;
    }
    let d = (0..pts.len()).max_by_key(|&i| {
        (
            orient(pts[a], pts[b], pts[c], pts[i]).abs(),
            std::cmp::Reverse(i),
        )
    })?;
    let o = orient(pts[a], pts[b], pts[c], pts[d]);
    if o == 0 {
        return None;
    }
    let (b, c) = if o > 0 { (c, b) } else { (b, c) };
    // faces of (a, b, c, d) with d behind (a, b, c)
    let mut faces: Vec<Face> = [[a, b, c], [a, d, b], [b, d, c], [c, d, a]]
        .into_iter()
        .map(|v| Face {
            v,
            outside: Vec::new(),
            alive: true,
        })
        .collect();
    let mut edges: HashMap<(usize, usize), usize> = HashMap::new();
    for (f, face) in faces.iter().enumerate() {
        for j in 0..3 {
            edges.insert((face.v[j], face.v[(j + 1) % 3]), f);
        }
    }
    let above = |f: &Face, p: usize| orient(pts[f.v[0]], pts[f.v[1]], pts[f.v[2]], pts[p]);
    for p in 0..pts.len() {
        if [a, b, c, d].contains(&p) {
            continue;
        }
        if let Some(f) = faces.iter_mut().find(|f| above(f, p) > 0) {
            f.outside.push(p);
        }
    }

    let mut queue: Vec<usize> = (0..4).collect();
    while let Some(f) = queue.pop() {
        if !faces[f].alive || faces[f].outside.is_empty() {
            continue;
        }
        // the farthest point (by the unnormalised distance, which is enough to be a corner)
        let face = &faces[f];
        let p = *face
            .outside
            .iter()
            .max_by_key(|&&q| (above(face, q), std::cmp::Reverse(q)))?;
        // the faces p sees, from f across their edges
        let mut visible = vec![f];
        let mut seen: HashMap<usize, bool> = HashMap::new();
        seen.insert(f, true);
        let mut horizon: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < visible.len() {
            let g = visible[i];
            i += 1;
            for j in 0..3 {
                let (u, w) = (faces[g].v[j], faces[g].v[(j + 1) % 3]);
                let h = *edges.get(&(w, u))?;
                let vis = match seen.get(&h) {
                    Some(&v) => v,
                    None => {
                        let v = above(&faces[h], p) > 0;
                        seen.insert(h, v);
                        if v {
                            visible.push(h);
                        }
                        v
                    }
                };
                if !vis {
                    horizon.push((u, w));
                }
            }
        }
        // replace them by a cone from the horizon to p
        let mut orphans: Vec<usize> = Vec::new();
        for &g in &visible {
            faces[g].alive = false;
            orphans.append(&mut faces[g].outside);
            for j in 0..3 {
                edges.remove(&(faces[g].v[j], faces[g].v[(j + 1) % 3]));
            }
        }
        let first = faces.len();
        for &(u, w) in &horizon {
            let n = faces.len();
            faces.push(Face {
                v: [u, w, p],
                outside: Vec::new(),
                alive: true,
            });
            for (x, y) in [(u, w), (w, p), (p, u)] {
                edges.insert((x, y), n);
            }
            queue.push(n);
        }
        for q in orphans {
            if q == p {
                continue;
            }
            if let Some(n) = (first..faces.len()).find(|&n| above(&faces[n], q) > 0) {
                faces[n].outside.push(q);
            }
        }
    }
    Some(faces.iter().filter(|f| f.alive).map(|f| f.v).collect())
}

/// The hull's flat faces made whole and fanned from their smallest corner; sorted.
fn canonical(pts: &[P], tris: &[[usize; 3]]) -> Hull {
    // join triangles that share an edge and a plane
    let mut up: Vec<usize> = (0..tris.len()).collect();
    fn root(up: &mut [usize], mut x: usize) -> usize {
        while up[x] != x {
            up[x] = up[up[x]];
            x = up[x];
        }
        x
    }
    let mut by_edge: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, t) in tris.iter().enumerate() {
        for j in 0..3 {
            by_edge.insert((t[j], t[(j + 1) % 3]), i);
        }
    }
    for (i, t) in tris.iter().enumerate() {
        for j in 0..3 {
            let Some(&o) = by_edge.get(&(t[(j + 1) % 3], t[j])) else {
                continue;
            };
            // the other triangle's far corner lies in this one's plane
            let far = tris[o]
                .iter()
                .copied()
                .find(|v| !t.contains(v))
                .unwrap_or(tris[o][0]);
            if orient(pts[t[0]], pts[t[1]], pts[t[2]], pts[far]) == 0 {
                let (a, b) = (root(&mut up, i), root(&mut up, o));
                up[a.max(b)] = a.min(b);
            }
        }
    }
    let mut faces: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in 0..tris.len() {
        let r = root(&mut up, i);
        faces.entry(r).or_default().push(i);
    }
    let mut out: Vec<[P; 3]> = Vec::new();
    for members in faces.values() {
        let Some(&m0) = members.first() else { continue };
        let t = tris[m0];
        let n = cross(sub(pts[t[1]], pts[t[0]]), sub(pts[t[2]], pts[t[0]]));
        let mut corners: Vec<P> = members
            .iter()
            .flat_map(|&m| tris[m].iter().map(|&v| pts[v]))
            .collect();
        corners.sort_unstable();
        corners.dedup();
        let ring = ring(&corners, n);
        if ring.len() < 3 {
            continue;
        }
        let start = (0..ring.len()).min_by_key(|&i| ring[i]).unwrap_or(0);
        for k in 1..ring.len() - 1 {
            out.push([
                ring[start],
                ring[(start + k) % ring.len()],
                ring[(start + k + 1) % ring.len()],
            ]);
        }
    }
    let mut corners: Vec<P> = out.iter().flatten().copied().collect();
    corners.sort_unstable();
    corners.dedup();
    let index = |p: &P| corners.binary_search(p).unwrap_or(0);
    let mut tris: Vec<[usize; 3]> = out
        .iter()
        .map(|t| {
            let mut t = [index(&t[0]), index(&t[1]), index(&t[2])];
            let m = (0..3).min_by_key(|&k| t[k]).unwrap_or(0);
            t.rotate_left(m);
            t
        })
        .collect();
    tris.sort_unstable();
    Hull {
        points: corners.iter().map(|p| p.map(|c| c as f64 / SNAP)).collect(),
        tris,
    }
}

/// The corners of a flat face (all in one plane with normal `n`) as its convex outline,
/// counter-clockwise seen from where `n` points, without points on its edges: a monotone
/// chain in the two axes other than `n`'s largest, with exact turns.
fn ring(corners: &[P], n: [i128; 3]) -> Vec<P> {
    let drop = (0..3).max_by_key(|&k| n[k].abs()).unwrap_or(2);
    let (u, v) = ((drop + 1) % 3, (drop + 2) % 3);
    let mut p: Vec<P> = corners.to_vec();
    p.sort_unstable_by_key(|q| (q[u], q[v]));
    let turn = |o: P, a: P, b: P| {
        (a[u] - o[u]) as i128 * (b[v] - o[v]) as i128
            - (a[v] - o[v]) as i128 * (b[u] - o[u]) as i128
    };
    let mut h: Vec<P> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = h.len();
        let items: Vec<P> = if pass == 0 {
            p.clone()
        } else {
            p.iter().rev().copied().collect()
        };
        for q in items {
            while h.len() >= start + 2 && turn(h[h.len() - 2], h[h.len() - 1], q) <= 0 {
                h.pop();
            }
            h.push(q);
        }
        h.pop();
    }
    // (u, v, drop) is a right-handed cycle, so the chain is counter-clockwise seen from +drop
    if n[drop] < 0 {
        h.reverse();
    }
    h
}
