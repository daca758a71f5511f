//! Lays out a `.phy` collision model (`docs/formats/phy.md`): the 16-byte header
//! (source-sdk-2013 `public/phyfile.h`), one VPHY collide header and IVP compact surface per
//! solid (the layout the open readers REDxEYE/SourceIO and misyltoad/VPhysics-Jolt read), then
//! the keyvalues text. [`physics`](super::physics) decides what goes in; this module only
//! computes the derived values of the surface and writes bytes.
//!
//! What each derived value is was established on Valve's seven `.phy` files of the corpus
//! (tests/phy.rs checks ours against theirs), not from IVP code, which the project may not read:
//! - `mass_center`: the volume centroid of the solid's pieces (equal to 5 digits);
//! - `upper_limit_radius`: the largest distance from that centre to a point (exact);
//! - a leaf node's `center`/`radius`: its points' bounding-box centre and half diagonal, and
//!   `box_sizes` = ceil(half extent / radius × 250) (exact);
//! - points are shared by all ledges of a solid, after the last ledge, and the ledge tree
//!   follows them; a solid of several pieces has an outer-hull ledge on its root node whose
//!   client data is the offset from it to the tree (all as in Valve's files);
//! - triangles wind counter-clockwise seen from outside (in IVP axes), and each names in its
//!   "pierce" field a triangle facing away: mdlc names the most opposite one, which is Valve's
//!   choice for 737 of the corpus's 906 triangles (the rule for the rest is not established and
//!   nothing in the open readers uses the field);
//! - **not matched, safe choices**: `rotation_inertia` is the exact inertia of the solid per unit
//!   mass about its centre (Valve's differs by up to 25 % on one axis; its rule is not known);
//!   `max_factor_surface_deviation` is 250, the largest value seen (Valve's are 207-250);
//!   inner tree nodes bound their subtree's points the way leaves do (Valve's are a little
//!   larger); drag axis areas are the covered fraction of the bounding box's sides, sampled on a
//!   64×64 grid (Valve casts rays, `dragAreaEpsilon`): within 0.07 of Valve's on the corpus.

use super::physics::{PhysPlan, PhysSolid, Piece};

/// IVP metres per inch (vphysics: METERS_PER_INCH).
const METRES_PER_INCH: f64 = 0.0254;

/// The most triangles one convex piece can have: a triangle's index has 12 bits.
pub const MAX_TRIANGLES: usize = 0xfff;
/// The most points a solid can have: an edge's start point has 16 bits.
pub const MAX_POINTS: usize = 0xffff;
/// An edge's link to its opposite is a signed 15-bit count of 4-byte words.
const MAX_LINK: i64 = 0x3fff;

/// Source inches (model or bone space) to IVP metres and axes: `(x, −z, y) × 0.0254`, the
/// inverse of what VPhysics-Jolt reads back (`(p0, p2, −p1)`).
pub fn to_ivp(p: [f64; 3]) -> [f64; 3] {
    [
        p[0] * METRES_PER_INCH,
        -p[2] * METRES_PER_INCH,
        p[1] * METRES_PER_INCH,
    ]
}

/// The whole file. Errors name a limit of the format that a piece exceeds.
pub fn write_phy(plan: &PhysPlan, checksum: i32) -> Result<Vec<u8>, String> {
    let mut b = Vec::new();
    put_i32(&mut b, 16);
    put_i32(&mut b, 0);
    put_i32(&mut b, plan.solids.len() as i32);
    put_i32(&mut b, checksum);
    for s in &plan.solids {
        let pieces = ivp_pieces(s);
        let surface = compact_surface(s, &pieces)?;
        put_i32(&mut b, 28 + surface.len() as i32);
        b.extend_from_slice(b"VPHY");
        b.extend_from_slice(&0x100u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        put_i32(&mut b, surface.len() as i32);
        // indexed by Source's axes (x, y, z) = IVP's (x, z, y): Valve's values for the
        // corpus's long bunker gun and ragdoll limbs line up that way and no other
        let d = drag_axis_areas(&pieces);
        for a in [d[0], d[2], d[1]] {
            put_f32(&mut b, a as f32);
        }
        put_i32(&mut b, 0);
        b.extend_from_slice(&surface);
    }
    b.extend_from_slice(plan.text.as_bytes());
    b.push(0);
    Ok(b)
}

fn put_i32(b: &mut Vec<u8>, v: i32) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put_f32(b: &mut Vec<u8>, v: f32) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put_vec(b: &mut Vec<u8>, v: [f64; 3]) {
    for c in v {
        put_f32(b, c as f32);
    }
}

/// Points and triangles (indices into the points) of one closed mesh.
pub type TriMesh<'a> = (&'a [[f64; 3]], &'a [[usize; 3]]);

/// Volume, centroid and the diagonal of the inertia tensor about the centroid, per unit mass,
/// of closed outward-wound triangle meshes (points in any one frame). Zero volume gives the
/// points' mean and zero inertia.
pub fn mass_properties(pieces: &[TriMesh<'_>]) -> (f64, [f64; 3], [f64; 3]) {
    // a reference point near the solid keeps the sums well conditioned
    let (mut o, mut n) = ([0.0; 3], 0.0);
    for (pts, _) in pieces {
        for p in pts.iter() {
            o = add(o, *p);
            n += 1.0;
        }
    }
    if n > 0.0 {
        o = scale(o, 1.0 / n);
    }
    let mut vol = 0.0;
    let mut first = [0.0; 3];
    // second moments ∫ x_i x_j about `o`
    let mut second = [[0.0; 3]; 3];
    for (pts, tris) in pieces {
        for t in tris.iter() {
            let (Some(a), Some(b), Some(c)) = (pts.get(t[0]), pts.get(t[1]), pts.get(t[2])) else {
                continue;
            };
            let (a, b, c) = (sub(*a, o), sub(*b, o), sub(*c, o));
            let v = dot(a, cross(b, c)) / 6.0;
            vol += v;
            for k in 0..3 {
                first[k] += v * (a[k] + b[k] + c[k]) / 4.0;
            }
            for i in 0..3 {
                for j in 0..3 {
                    let s1 = a[i] * a[j] + b[i] * b[j] + c[i] * c[j];
                    let si = a[i] + b[i] + c[i];
                    let sj = a[j] + b[j] + c[j];
                    second[i][j] += v / 20.0 * (s1 + si * sj);
                }
            }
        }
    }
    if vol.abs() < 1e-18 {
        return (0.0, o, [0.0; 3]);
    }
    let c = scale(first, 1.0 / vol);
    let mut sc = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            sc[i][j] = second[i][j] - vol * c[i] * c[j];
        }
    }
    let inertia = [
        (sc[1][1] + sc[2][2]) / vol,
        (sc[0][0] + sc[2][2]) / vol,
        (sc[0][0] + sc[1][1]) / vol,
    ];
    (vol, add(c, o), inertia)
}

/// A piece in IVP units: its points and triangles.
struct IvpPiece {
    points: Vec<[f64; 3]>,
    tris: Vec<[usize; 3]>,
}

fn ivp_pieces(s: &PhysSolid) -> Vec<IvpPiece> {
    s.pieces
        .iter()
        .map(|p: &Piece| IvpPiece {
            points: p.points.iter().map(|q| to_ivp(*q)).collect(),
            tris: p.tris.clone(),
        })
        .collect()
}

/// One node of the ledge tree: a piece, or two subtrees.
enum Node {
    Leaf(usize),
    Inner(Box<Node>, Box<Node>),
}

/// Splits pieces in two at the median of their centres along the widest axis of those
/// centres, until each side holds one.
fn build_tree(ids: &mut [usize], centres: &[[f64; 3]]) -> Node {
    if ids.len() == 1 {
        return Node::Leaf(ids[0]);
    }
    let mine: Vec<[f64; 3]> = ids.iter().map(|&i| centres[i]).collect();
    let (lo, hi) = bounds(&mine);
    let axis = (0..3)
        .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
        .unwrap_or(0);
    ids.sort_by(|&a, &b| {
        centres[a][axis]
            .total_cmp(&centres[b][axis])
            .then(a.cmp(&b))
    });
    let mid = ids.len() / 2;
    let (l, r) = ids.split_at_mut(mid);
    Node::Inner(
        Box::new(build_tree(l, centres)),
        Box::new(build_tree(r, centres)),
    )
}

fn leaves(n: &Node, out: &mut Vec<usize>) {
    match n {
        Node::Leaf(i) => out.push(*i),
        Node::Inner(l, r) => {
            leaves(l, out);
            leaves(r, out);
        }
    }
}

/// A node's sphere and box: the bounding box's centre, half diagonal, and each half extent as
/// a fraction of that radius in 250ths, rounded up.
fn node_bounds(points: &[[f64; 3]]) -> ([f64; 3], f64, [u8; 3]) {
    let (lo, hi) = bounds(points);
    if points.is_empty() {
        return ([0.0; 3], 0.0, [0; 3]);
    }
    let centre = scale(add(lo, hi), 0.5);
    let half = scale(sub(hi, lo), 0.5);
    // as f32, as the file stores it, so that the box sizes bound what is stored
    let radius = (dot(half, half).sqrt() as f32) as f64;
    let mut sizes = [0u8; 3];
    for k in 0..3 {
        sizes[k] = if radius > 0.0 {
            (half[k] / radius * 250.0).ceil().clamp(0.0, 250.0) as u8
        } else {
            0
        };
    }
    (centre, radius, sizes)
}

/// The IVP compact surface of one solid: header, ledges, the shared points, the ledge tree.
fn compact_surface(s: &PhysSolid, pieces: &[IvpPiece]) -> Result<Vec<u8>, String> {
    if pieces.is_empty() {
        return Err(format!("the solid `{}` has no convex piece", s.name));
    }
    // the outer hull of a solid of several pieces hangs on the root node
    let outer = if pieces.len() > 1 {
        let all: Vec<[f64; 3]> = s.pieces.iter().flat_map(|p| p.points.clone()).collect();
        let h = super::physics::convex_hull(&all)
            .ok_or_else(|| format!("the pieces of `{}` have no outer hull", s.name))?;
        Some(IvpPiece {
            points: h.points.iter().map(|q| to_ivp(*q)).collect(),
            tris: h.tris,
        })
    } else {
        None
    };

    // shared points, in first-use order over the pieces, then the outer hull
    let mut pool: Vec<[f64; 3]> = Vec::new();
    let mut index: std::collections::HashMap<[u32; 3], usize> = std::collections::HashMap::new();
    let mut pool_id = |p: [f64; 3], pool: &mut Vec<[f64; 3]>| {
        let key = p.map(|c| (c as f32).to_bits());
        *index.entry(key).or_insert_with(|| {
            pool.push(p);
            pool.len() - 1
        })
    };
    let mut remapped: Vec<Vec<[usize; 3]>> = Vec::new();
    for p in pieces.iter().chain(outer.iter()) {
        let ids: Vec<usize> = p.points.iter().map(|q| pool_id(*q, &mut pool)).collect();
        remapped.push(
            p.tris
                .iter()
                .map(|t| [ids[t[0]], ids[t[1]], ids[t[2]]])
                .collect(),
        );
    }
    if pool.len() > MAX_POINTS {
        return Err(format!(
            "the solid `{}` has {} points; the format holds at most {MAX_POINTS}",
            s.name,
            pool.len()
        ));
    }

    // sizes: header 48, ledges, points, tree
    let ledge_size = |tris: usize| 16 + 16 * tris;
    let mut ledge_at = Vec::new();
    let mut at = 48;
    for t in &remapped {
        ledge_at.push(at);
        at += ledge_size(t.len());
    }
    let points_at = at;
    let tree_at = points_at + 16 * pool.len();
    let centres: Vec<[f64; 3]> = pieces.iter().map(|p| node_bounds(&p.points).0).collect();
    let mut ids: Vec<usize> = (0..pieces.len()).collect();
    let tree = build_tree(&mut ids, &centres);
    let n_nodes = 2 * pieces.len() - 1;
    let total = tree_at + 28 * n_nodes;

    // mass properties over all pieces
    let parts: Vec<TriMesh<'_>> = pieces
        .iter()
        .map(|p| (p.points.as_slice(), p.tris.as_slice()))
        .collect();
    let (_, centroid, inertia) = mass_properties(&parts);
    let mass_center = s.mass_center.map(to_ivp).unwrap_or(centroid);
    let radius = pool
        .iter()
        .map(|p| {
            let d = sub(*p, mass_center);
            dot(d, d).sqrt()
        })
        .fold(0.0, f64::max);

    let mut b = Vec::with_capacity(total);
    put_vec(&mut b, mass_center);
    put_vec(&mut b, inertia);
    put_f32(&mut b, radius as f32);
    let total_u32 = u32::try_from(total)
        .ok()
        .filter(|t| *t < 1 << 24)
        .ok_or_else(|| format!("the solid `{}` is too large for the format", s.name))?;
    b.extend_from_slice(&(250u32 | (total_u32 << 8)).to_le_bytes());
    put_i32(&mut b, tree_at as i32);
    put_i32(&mut b, 0);
    put_i32(&mut b, 0);
    b.extend_from_slice(b"IVPS");

    for (k, tris) in remapped.iter().enumerate() {
        let is_outer = k == pieces.len();
        let here = ledge_at[k];
        let used = {
            let mut u: Vec<usize> = tris.iter().flatten().copied().collect();
            u.sort_unstable();
            u.dedup();
            u.len()
        };
        let client = if is_outer {
            (tree_at - here) as i32
        } else {
            s.client_data
        };
        ledge(
            &mut b,
            &pool,
            tris,
            LedgeHead {
                point_offset: (points_at - here) as i32,
                client,
                children: is_outer,
                size: ledge_size(tris.len()) + 16 * used,
            },
        )
        .map_err(|e| format!("the solid `{}`: {e}", s.name))?;
    }
    for p in &pool {
        put_vec(&mut b, *p);
        put_i32(&mut b, 0);
    }

    // the tree, root first, each left child right after its parent
    let mut nodes = Vec::new();
    tree_nodes(&tree, &mut nodes);
    for (i, n) in nodes.iter().enumerate() {
        let here = tree_at + 28 * i;
        let mut ids = Vec::new();
        leaves(n.node, &mut ids);
        let pts: Vec<[f64; 3]> = ids
            .iter()
            .flat_map(|&k| pieces[k].points.iter().copied())
            .collect();
        let (c, r, sizes) = node_bounds(&pts);
        let ledge_offset = match n.node {
            Node::Leaf(k) => ledge_at[*k] as i32 - here as i32,
            Node::Inner(..) if i == 0 => ledge_at[pieces.len()] as i32 - here as i32,
            Node::Inner(..) => 0,
        };
        put_i32(&mut b, n.right.map(|r| 28 * (r - i) as i32).unwrap_or(0));
        put_i32(&mut b, ledge_offset);
        put_vec(&mut b, c);
        put_f32(&mut b, r as f32);
        b.extend_from_slice(&[sizes[0], sizes[1], sizes[2], 0]);
    }
    debug_assert_eq!(b.len(), total);
    Ok(b)
}

struct TreeNode<'a> {
    node: &'a Node,
    /// Index of the right child in pre-order.
    right: Option<usize>,
}

fn tree_nodes<'a>(n: &'a Node, out: &mut Vec<TreeNode<'a>>) {
    let me = out.len();
    out.push(TreeNode {
        node: n,
        right: None,
    });
    if let Node::Inner(l, r) = n {
        tree_nodes(l, out);
        let right = out.len();
        out[me].right = Some(right);
        tree_nodes(r, out);
    }
}

struct LedgeHead {
    point_offset: i32,
    client: i32,
    children: bool,
    size: usize,
}

/// One compact ledge: its 16-byte header and its triangles. Every edge must have exactly one
/// opposite edge running back.
fn ledge(
    b: &mut Vec<u8>,
    pool: &[[f64; 3]],
    tris: &[[usize; 3]],
    head: LedgeHead,
) -> Result<(), String> {
    if tris.len() > MAX_TRIANGLES {
        return Err(format!(
            "a convex piece has {} triangles; the format holds at most {MAX_TRIANGLES}",
            tris.len()
        ));
    }
    // edge slot of (triangle t, edge j), counted in 4-byte words from the first triangle
    let slot = |t: usize, j: usize| (4 * t + 1 + j) as i64;
    let mut by_ends = std::collections::HashMap::new();
    for (t, tri) in tris.iter().enumerate() {
        for j in 0..3 {
            if by_ends
                .insert((tri[j], tri[(j + 1) % 3]), slot(t, j))
                .is_some()
            {
                return Err("a convex piece uses an edge twice in one direction".into());
            }
        }
    }
    let normals: Vec<[f64; 3]> = tris
        .iter()
        .map(|t| {
            normalize(cross(
                sub(pool[t[1]], pool[t[0]]),
                sub(pool[t[2]], pool[t[0]]),
            ))
        })
        .collect();
    let size16 = u32::try_from(head.size / 16)
        .ok()
        .filter(|s| *s < 1 << 24)
        .ok_or("a convex piece is too large for the format")?;
    put_i32(b, head.point_offset);
    put_i32(b, head.client);
    let flags: u32 = if head.children { 5 } else { 4 };
    b.extend_from_slice(&(flags | (size16 << 8)).to_le_bytes());
    b.extend_from_slice(&(tris.len() as u16).to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    for (t, tri) in tris.iter().enumerate() {
        // the most opposite triangle (the first of equals): one pass, one product each
        let n = normals[t];
        let mut pierce = 0;
        let mut best = f64::INFINITY;
        for (o, m) in normals.iter().enumerate() {
            let d = n[0] * m[0] + n[1] * m[1] + n[2] * m[2];
            if o != t && d < best {
                best = d;
                pierce = o;
            }
        }
        let word = (t as u32 & 0xfff) | ((pierce as u32 & 0xfff) << 12);
        b.extend_from_slice(&word.to_le_bytes());
        for j in 0..3 {
            let (a, z) = (tri[j], tri[(j + 1) % 3]);
            let Some(&other) = by_ends.get(&(z, a)) else {
                return Err("a convex piece is not closed".into());
            };
            let link = other - slot(t, j);
            if link.abs() > MAX_LINK {
                return Err(format!(
                    "an edge links {link} words away; the format holds at most {MAX_LINK}"
                ));
            }
            let word = a as u32 | ((link as u32 & 0x7fff) << 16);
            b.extend_from_slice(&word.to_le_bytes());
        }
    }
    Ok(())
}

/// The fraction of each side of the solid's bounding box (in IVP axes) that its pieces cover
/// seen along that axis, sampled at the centres of a 64×64 grid.
fn drag_axis_areas(pieces: &[IvpPiece]) -> [f64; 3] {
    const N: usize = 64;
    let all: Vec<[f64; 3]> = pieces.iter().flat_map(|p| p.points.clone()).collect();
    let (lo, hi) = bounds(&all);
    let mut out = [1.0; 3];
    for (axis, o) in out.iter_mut().enumerate() {
        let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
        if !(hi[u] > lo[u] && hi[v] > lo[v]) {
            continue;
        }
        let outlines: Vec<Vec<[f64; 2]>> = pieces
            .iter()
            .map(|p| hull_2d(p.points.iter().map(|q| [q[u], q[v]]).collect()))
            .collect();
        let mut hit = 0usize;
        for i in 0..N {
            for j in 0..N {
                let x = lo[u] + (hi[u] - lo[u]) * (i as f64 + 0.5) / N as f64;
                let y = lo[v] + (hi[v] - lo[v]) * (j as f64 + 0.5) / N as f64;
                if outlines.iter().any(|h| inside_2d(h, [x, y])) {
                    hit += 1;
                }
            }
        }
        *o = hit as f64 / (N * N) as f64;
    }
    out
}

/// Counter-clockwise 2D convex hull (monotone chain).
fn hull_2d(mut p: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    p.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    p.dedup();
    if p.len() < 3 {
        return p;
    }
    let turn = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let mut h: Vec<[f64; 2]> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = h.len();
        let iter: Box<dyn Iterator<Item = &[f64; 2]>> = if pass == 0 {
            Box::new(p.iter())
        } else {
            Box::new(p.iter().rev())
        };
        for &q in iter {
            while h.len() >= start + 2 && turn(h[h.len() - 2], h[h.len() - 1], q) <= 0.0 {
                h.pop();
            }
            h.push(q);
        }
        h.pop();
    }
    h
}

fn inside_2d(h: &[[f64; 2]], q: [f64; 2]) -> bool {
    if h.len() < 3 {
        return false;
    }
    (0..h.len()).all(|i| {
        let (a, b) = (h[i], h[(i + 1) % h.len()]);
        (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0]) >= 0.0
    })
}

/// The smallest and largest coordinates of `points` (infinite when there are none).
pub(crate) fn bounds(points: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in points {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    (lo, hi)
}

pub(crate) fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub(crate) fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn scale(a: [f64; 3], s: f64) -> [f64; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

pub(crate) fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(crate) fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub(crate) fn normalize(a: [f64; 3]) -> [f64; 3] {
    let l = dot(a, a).sqrt();
    if l > 0.0 {
        scale(a, 1.0 / l)
    } else {
        a
    }
}
