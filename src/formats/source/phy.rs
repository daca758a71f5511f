//! A reader of Source collision models (`.phy`), for `mdlc inspect` and the tests: the layout
//! of `docs/formats/phy.md`, from public sources only (source-sdk-2013 `public/phyfile.h` for
//! the file header, `public/vcollide_parse.h` for the text section, and the open readers
//! REDxEYE/SourceIO `library/models/phy/phy.py` and misyltoad/VPhysics-Jolt for the collide
//! header and the compact surface). Every offset is checked, so any bytes give an error or a
//! problem list, never a panic.
//!
//! Units: the points are IVP's, metres with IVP's axes; [`to_model`] turns them into model
//! inches (`model = (x, z, −y) / 0.0254`, the inverse of VPhysics-Jolt's conversion of a
//! Source position to IVP).

use std::fmt::Write as _;

use serde_json::{json, Value};

/// Inches per IVP metre (vphysics: METERS_PER_INCH = 0.0254).
pub const INCHES_PER_METRE: f32 = 1.0 / 0.0254;

/// An IVP point (metres, IVP axes) in model inches.
pub fn to_model(p: [f32; 3]) -> [f32; 3] {
    [
        p[0] * INCHES_PER_METRE,
        p[2] * INCHES_PER_METRE,
        -p[1] * INCHES_PER_METRE,
    ]
}

/// The file: `phyheader_t`, the solids, the text section.
pub struct Phy {
    pub header_size: i32,
    pub id: i32,
    pub solid_count: i32,
    pub checksum: i32,
    pub solids: Vec<Solid>,
    pub text: String,
}

/// One solid: its size, the "VPHY" collide header and the IVP compact surface.
pub struct Solid {
    /// File offset of the solid's size field.
    pub at: usize,
    pub size: i32,
    pub version: i16,
    pub model_type: i16,
    pub surface_size: i32,
    pub drag_axis_areas: [f32; 3],
    pub axis_map_size: i32,
    pub mass_center: [f32; 3],
    pub rotation_inertia: [f32; 3],
    pub upper_limit_radius: f32,
    pub max_deviation: u8,
    pub byte_size: u32,
    pub ledgetree_root: i32,
    /// The convex pieces: the compact ledges at the leaves of the ledge tree.
    pub ledges: Vec<Ledge>,
    /// Ledge tree nodes (leaves and inner nodes).
    pub nodes: usize,
    /// Problems found while reading (offsets, edge links, sizes).
    pub problems: Vec<String>,
}

/// One compact ledge: a convex piece.
pub struct Ledge {
    /// The points its triangles use, in index order.
    pub points: Vec<[f32; 3]>,
    pub triangles: Vec<[u16; 3]>,
    /// The ledge's size field (in 16-byte units).
    pub size_div_16: u32,
}

impl Solid {
    /// Bounds of every point, in inches, in the space of the solid's bone (Source axes).
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let mut it = self
            .ledges
            .iter()
            .flat_map(|l| &l.points)
            .map(|&p| to_model(p));
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), p| {
            (
                [lo[0].min(p[0]), lo[1].min(p[1]), lo[2].min(p[2])],
                [hi[0].max(p[0]), hi[1].max(p[1]), hi[2].max(p[2])],
            )
        }))
    }
}

fn get<const N: usize>(b: &[u8], at: usize) -> Result<[u8; N], String> {
    at.checked_add(N)
        .and_then(|end| b.get(at..end))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| format!("offset {at} is outside the file ({} bytes)", b.len()))
}

fn i32_at(b: &[u8], at: usize) -> Result<i32, String> {
    get::<4>(b, at).map(i32::from_le_bytes)
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    get::<4>(b, at).map(u32::from_le_bytes)
}

fn f32_at(b: &[u8], at: usize) -> Result<f32, String> {
    get::<4>(b, at).map(f32::from_le_bytes)
}

fn i16_at(b: &[u8], at: usize) -> Result<i16, String> {
    get::<2>(b, at).map(i16::from_le_bytes)
}

fn vec3(b: &[u8], at: usize) -> Result<[f32; 3], String> {
    Ok([f32_at(b, at)?, f32_at(b, at + 4)?, f32_at(b, at + 8)?])
}

fn offset(base: usize, rel: i32) -> Result<usize, String> {
    let v = base as i64 + i64::from(rel);
    usize::try_from(v).map_err(|_| format!("offset {base} {rel:+} is before the file"))
}

/// Reads a `.phy` file.
pub fn read_phy(b: &[u8]) -> Result<Phy, String> {
    let header_size = i32_at(b, 0)?;
    let id = i32_at(b, 4)?;
    let solid_count = i32_at(b, 8)?;
    let checksum = i32_at(b, 12)?;
    if !(0..=1024).contains(&solid_count) {
        return Err(format!("solid count {solid_count} is out of range"));
    }
    let mut at = usize::try_from(header_size).map_err(|_| "negative header size".to_string())?;
    let mut solids = Vec::new();
    for _ in 0..solid_count {
        let s = read_solid(b, at)?;
        at = offset(at + 4, s.size)?;
        solids.push(s);
    }
    let rest = b.get(at..).unwrap_or(&[]);
    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
    let text = String::from_utf8_lossy(&rest[..end]).into_owned();
    Ok(Phy {
        header_size,
        id,
        solid_count,
        checksum,
        solids,
        text,
    })
}

fn read_solid(b: &[u8], at: usize) -> Result<Solid, String> {
    let size = i32_at(b, at)?;
    let magic = get::<4>(b, at + 4)?;
    if &magic != b"VPHY" {
        return Err(format!("the solid at {at} has no VPHY header"));
    }
    let cs = at + 4 + 28;
    let word = u32_at(b, cs + 28)?;
    let mut s = Solid {
        at,
        size,
        version: i16_at(b, at + 8)?,
        model_type: i16_at(b, at + 10)?,
        surface_size: i32_at(b, at + 12)?,
        drag_axis_areas: vec3(b, at + 16)?,
        axis_map_size: i32_at(b, at + 28)?,
        mass_center: vec3(b, cs)?,
        rotation_inertia: vec3(b, cs + 12)?,
        upper_limit_radius: f32_at(b, cs + 24)?,
        max_deviation: (word & 0xff) as u8,
        byte_size: word >> 8,
        ledgetree_root: i32_at(b, cs + 32)?,
        ledges: Vec::new(),
        nodes: 0,
        problems: Vec::new(),
    };
    if &get::<4>(b, cs + 44)? != b"IVPS" {
        s.problems.push(format!(
            "solid at {at}: the compact surface has no IVPS mark"
        ));
    }
    let end = offset(at + 4, size)?;
    let root = offset(cs, s.ledgetree_root)?;
    walk(b, root, cs, end, 0, &mut s)?;
    Ok(s)
}

/// Walks the ledge tree: a node is `offset_right_node`, `offset_compact_ledge`, centre, radius,
/// box sizes (28 bytes); a leaf (no right node) holds a ledge; an inner node's left child
/// follows it and may hold the hull ledge of its subtree (not a piece).
fn walk(
    b: &[u8],
    node: usize,
    lo: usize,
    hi: usize,
    depth: usize,
    s: &mut Solid,
) -> Result<(), String> {
    if depth > 64 {
        return Err("the ledge tree is deeper than 64".into());
    }
    if node < lo || node + 28 > hi {
        return Err(format!("ledge tree node at {node} is outside its solid"));
    }
    s.nodes += 1;
    let right = i32_at(b, node)?;
    let ledge = i32_at(b, node + 4)?;
    if right == 0 {
        if ledge == 0 {
            return Err(format!("leaf node at {node} has no ledge"));
        }
        let l = read_ledge(b, offset(node, ledge)?, lo, hi, s)?;
        s.ledges.push(l);
        return Ok(());
    }
    walk(b, node + 28, lo, hi, depth + 1, s)?;
    walk(b, offset(node, right)?, lo, hi, depth + 1, s)
}

fn read_ledge(b: &[u8], at: usize, lo: usize, hi: usize, s: &mut Solid) -> Result<Ledge, String> {
    if at < lo || at + 16 > hi {
        return Err(format!("ledge at {at} is outside its solid"));
    }
    let point_off = i32_at(b, at)?;
    let flags = u32_at(b, at + 8)?;
    let n = i16_at(b, at + 12)?;
    let n = usize::try_from(n).map_err(|_| format!("ledge at {at}: negative triangle count"))?;
    let mut triangles = Vec::with_capacity(n);
    // (start point, opposite offset) of every edge, numbered by 4-byte word from the first
    // triangle (word 0 of a triangle is its index word)
    let mut edges: Vec<(u16, i32)> = Vec::with_capacity(n * 3);
    for t in 0..n {
        let ta = at + 16 + 16 * t;
        if ta + 16 > hi {
            return Err(format!("ledge at {at}: triangle {t} is outside its solid"));
        }
        let mut tri = [0u16; 3];
        for (k, v) in tri.iter_mut().enumerate() {
            let e = u32_at(b, ta + 4 + 4 * k)?;
            *v = (e & 0xffff) as u16;
            // 15-bit signed opposite offset, then the virtual bit
            let raw = ((e >> 16) & 0x7fff) as i32;
            let opp = if raw & 0x4000 != 0 { raw - 0x8000 } else { raw };
            edges.push((*v, opp));
        }
        triangles.push(tri);
    }
    // the points the triangles use (ledges of one surface may share one point array)
    let mut used: Vec<u16> = triangles.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let pa = offset(at, point_off)?;
    let mut points = Vec::with_capacity(used.len());
    for &i in &used {
        let p = pa + 16 * usize::from(i);
        if p < lo || p + 16 > hi {
            return Err(format!("ledge at {at}: point {i} is outside its solid"));
        }
        points.push(vec3(b, p)?);
    }
    // edge links: the edge `opp` words away runs the other way and links back
    for (i, &(start, opp)) in edges.iter().enumerate() {
        let t = i / 3;
        let k = i % 3;
        let word = (4 * t + 1 + k) as i64;
        let other = word + i64::from(opp);
        let (ot, ok) = (other.div_euclid(4), other.rem_euclid(4));
        if opp == 0 || ok == 0 || ot < 0 || ot as usize >= n {
            s.problems.push(format!(
                "ledge at {at}: edge {k} of triangle {t} links to word {other}, not an edge of the ledge"
            ));
            continue;
        }
        let j = ot as usize * 3 + (ok as usize - 1);
        let next = |e: usize| edges[(e / 3) * 3 + (e % 3 + 1) % 3].0;
        let (o_start, o_opp) = edges[j];
        if o_opp != -opp || o_start != next(i) || next(j) != start {
            s.problems.push(format!(
                "ledge at {at}: edge {k} of triangle {t} and its opposite do not run between the same points the other way"
            ));
        }
    }
    Ok(Ledge {
        points,
        triangles,
        size_div_16: flags >> 8,
    })
}

/// The invariants of a read file: header fields, solid sizes, the checksum against the model's
/// (when `mdl_checksum` is given), the problems each solid found, the text section's blocks.
pub fn problems(p: &Phy, mdl_checksum: Option<i32>) -> Vec<String> {
    let mut out = Vec::new();
    if p.header_size != 16 {
        out.push(format!("header size {} (expected 16)", p.header_size));
    }
    if p.id != 0 {
        out.push(format!("header id {} (expected 0)", p.id));
    }
    if let Some(c) = mdl_checksum.filter(|&c| c != p.checksum) {
        out.push(format!("checksum {} but the .mdl's is {c}", p.checksum));
    }
    for (i, s) in p.solids.iter().enumerate() {
        if s.size != 28 + s.surface_size || s.byte_size as i32 != s.surface_size {
            out.push(format!(
                "solid {i}: size {}, surface size {}, compact surface byte size {} disagree",
                s.size, s.surface_size, s.byte_size
            ));
        }
        if s.version != 0x100 || s.model_type != 0 {
            out.push(format!(
                "solid {i}: collide version {:#x} type {} (expected 0x100, 0: an IVP compact surface)",
                s.version, s.model_type
            ));
        }
        if s.ledges.is_empty() {
            out.push(format!("solid {i} has no convex piece"));
        }
        out.extend(s.problems.iter().map(|m| format!("solid {i}: {m}")));
    }
    let solids = p.text.matches("solid {").count();
    if solids != p.solids.len() {
        out.push(format!(
            "the text has {solids} `solid` blocks for {} solids",
            p.solids.len()
        ));
    }
    out
}

/// The text section's blocks: (block name, its key/value pairs), in order.
pub fn text_blocks(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, Vec<(String, String)>)> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(name) = line.strip_suffix('{').map(str::trim) {
            cur = Some((name.to_string(), Vec::new()));
        } else if line == "}" {
            if let Some(c) = cur.take() {
                out.push(c);
            }
        } else if let Some((_, kv)) = cur.as_mut() {
            let parts: Vec<&str> = line.split('"').collect();
            if parts.len() >= 4 {
                kv.push((parts[1].to_string(), parts[3].to_string()));
            }
        }
    }
    out
}

/// `mdlc inspect x.phy`: the header, each solid (pieces, point and triangle counts, bounds and
/// mass centre in model inches), the text.
pub fn to_text(p: &Phy, problems: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "PHY: header {}  id {}  solids {}  checksum {}",
        p.header_size, p.id, p.solid_count, p.checksum
    );
    let blocks = text_blocks(&p.text);
    let names: Vec<String> = blocks
        .iter()
        .filter(|b| b.0 == "solid")
        .map(|b| {
            b.1.iter()
                .find(|kv| kv.0 == "name")
                .map_or(String::new(), |kv| kv.1.clone())
        })
        .collect();
    for (i, sol) in p.solids.iter().enumerate() {
        let pts: usize = sol.ledges.iter().map(|l| l.points.len()).sum();
        let tris: usize = sol.ledges.iter().map(|l| l.triangles.len()).sum();
        let _ = writeln!(
            s,
            "  solid [{i}] {:?}: {} piece(s), {pts} points, {tris} triangles, {} tree nodes",
            names.get(i).map_or("", String::as_str),
            sol.ledges.len(),
            sol.nodes
        );
        if let Some((lo, hi)) = sol.bounds() {
            let _ = writeln!(
                s,
                "    bounds {} .. {} (inches, bone space)  mass centre {}  radius {}",
                super::dump::fv(&lo),
                super::dump::fv(&hi),
                super::dump::fv(&to_model(sol.mass_center)),
                super::dump::f(sol.upper_limit_radius * INCHES_PER_METRE)
            );
        }
        for (k, l) in sol.ledges.iter().enumerate() {
            let _ = writeln!(
                s,
                "    piece [{k}]: {} points, {} triangles",
                l.points.len(),
                l.triangles.len()
            );
        }
    }
    let _ = writeln!(s, "text ({} bytes):", p.text.len());
    for line in p.text.lines() {
        let _ = writeln!(s, "  {line}");
    }
    if problems.is_empty() {
        let _ = writeln!(s, "invariants: all hold");
    } else {
        for m in problems {
            let _ = writeln!(s, "problem: {m}");
        }
    }
    s
}

pub fn to_json(p: &Phy, problems: &[String]) -> Value {
    json!({
        "phy": {
            "header_size": p.header_size, "id": p.id, "solid_count": p.solid_count,
            "checksum": p.checksum,
            "solids": p.solids.iter().map(|s| {
                let b = s.bounds();
                json!({
                    "size": s.size, "version": s.version, "model_type": s.model_type,
                    "surface_size": s.surface_size, "drag_axis_areas": s.drag_axis_areas,
                    "mass_center_inches": to_model(s.mass_center),
                    "rotation_inertia": s.rotation_inertia,
                    "upper_limit_radius": s.upper_limit_radius,
                    "bounds_inches": b.map(|(lo, hi)| json!([lo, hi])),
                    "nodes": s.nodes,
                    "pieces": s.ledges.iter().map(|l| json!({
                        "points": l.points.len(), "triangles": l.triangles.len(),
                    })).collect::<Vec<_>>(),
                })
            }).collect::<Vec<_>>(),
            "text": p.text,
            "blocks": text_blocks(&p.text).iter().map(|(n, kv)| json!({
                "block": n,
                "values": kv.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        },
        "problems": problems,
    })
}
