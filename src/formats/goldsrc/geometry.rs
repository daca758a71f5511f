//! GoldSrc geometry: body parts, models, meshes, textures and the skin table, exactly as Valve's
//! HL1 studiomdl computes them (`goldsrc.md` §8.1-8.3, §8.8).
//!
//! Floating point follows Valve's tool: single precision with the few double-precision
//! intermediates it has (degree round trip of the Euler angles, sines and cosines, the length
//! of a normal, the 0.01 truncation, the UV packing comparisons); no fused multiply-add.
//!
//! Steps, in Valve's order:
//! 1. every texture is found and read (`$cdtexture` folders in order, without regard to case);
//! 2. per model (body part option), per triangle in file order: its mesh (one per texture, in
//!    order of first use), then per corner the unique normal and the unique vertex in the bone
//!    space of the model's own file skeleton;
//! 3. texture coordinates per mesh (chrome, clamp, packing, texels), used ranges per texture
//!    over all models; unused textures take their texture-group parent's range;
//! 4. each texture cropped / extended to its range, width rounded up to 4, palette gamma;
//! 5. corner texels made relative to the range; normals re-ordered by mesh; triangle
//!    commands ([`super::strips`]).

use crate::diag::{Code, Diagnostic, FileSpan, Sources};
use crate::ir::model::{BodyOption, Image, Material, Model, ModelMesh};

use super::model::{GsBodyPart, GsMesh, GsModelData, GsTexture};
use super::strips::{build_commands, StripCorner};
use super::texture_order::{texture_order, TextureOrder};

/// Body parts, textures and skins of a GoldSrc model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Geometry {
    pub body_parts: Vec<GsBodyPart>,
    pub textures: Vec<GsTexture>,
    pub skins: Vec<Vec<i16>>,
}

/// Unique vertices and unique normals per model (MAXSTUDIOVERTS).
pub const MAX_VERTS: usize = 2048;
/// Meshes (textures) per model (MAXSTUDIOMESHES).
pub const MAX_MESHES: usize = 256;
/// `width × height + 768` of a stored texture may not exceed this (640 × 480).
pub const MAX_TEXTURE_BYTES: i64 = 640 * 480;
/// Texture names are stored in a 64-byte field, NUL included.
pub const TEXTURE_NAME_FIELD: usize = 64;

const PI: f64 = std::f64::consts::PI;

// --- Valve's matrix helpers (`mathlib.c`), in single precision ---------------------------------

type Mat = [[f32; 4]; 3];

/// Sines and cosines of Euler angles given in degrees (float), the way `AngleMatrix` gets them:
/// `float(deg · (2π/360))`, then `float(sin(double))`.
fn sin_cos(deg: [f32; 3]) -> [(f32, f32); 3] {
    deg.map(|d| {
        let a = (f64::from(d) * (PI * 2.0 / 360.0)) as f32;
        let a = f64::from(a);
        (a.sin() as f32, a.cos() as f32)
    })
}

/// `AngleMatrix`: R = Rz(angles[2]) · Ry(angles[1]) · Rx(angles[0]), degrees.
fn angle_matrix(deg: [f32; 3]) -> Mat {
    let [(sr, cr), (sp, cp), (sy, cy)] = sin_cos(deg);
    [
        [
            cp * cy,
            sr * sp * cy + cr * -sy,
            cr * sp * cy + -sr * -sy,
            0.0,
        ],
        [
            cp * sy,
            sr * sp * sy + cr * cy,
            cr * sp * sy + -sr * cy,
            0.0,
        ],
        [-sp, sr * cp, cr * cp, 0.0],
    ]
}

/// `AngleIMatrix`: the transpose of [`angle_matrix`].
fn angle_imatrix(deg: [f32; 3]) -> Mat {
    let [(sr, cr), (sp, cp), (sy, cy)] = sin_cos(deg);
    [
        [cp * cy, cp * sy, -sp, 0.0],
        [
            sr * sp * cy + cr * -sy,
            sr * sp * sy + cr * cy,
            sr * cp,
            0.0,
        ],
        [
            cr * sp * cy + -sr * -sy,
            cr * sp * sy + -sr * cy,
            cr * cp,
            0.0,
        ],
    ]
}

/// `R_ConcatTransforms`: a · b for 3×4 matrices.
fn concat(a: &Mat, b: &Mat) -> Mat {
    let mut o = [[0.0f32; 4]; 3];
    for (i, row) in o.iter_mut().enumerate() {
        for (j, x) in row.iter_mut().take(3).enumerate() {
            *x = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
        }
        row[3] = a[i][0] * b[0][3] + a[i][1] * b[1][3] + a[i][2] * b[2][3] + a[i][3];
    }
    o
}

/// `VectorTransform`.
fn transform(v: [f32; 3], m: &Mat) -> [f32; 3] {
    [0, 1, 2].map(|i| v[0] * m[i][0] + v[1] * m[i][1] + v[2] * m[i][2] + m[i][3])
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `VectorNormalize`: squares in float, their sum and the root in double.
fn normalize(v: [f32; 3]) -> [f32; 3] {
    let mut len = 0.0f64;
    for c in v {
        len += f64::from(c * c);
    }
    let len = len.sqrt();
    if len == 0.0 {
        return v;
    }
    v.map(|c| (f64::from(c) / len) as f32)
}

/// `clip_rotations`: into [−π, π), each step in double, stored as float.
fn clip_rotation(mut r: f32) -> f32 {
    let mut guard = 0;
    while f64::from(r) >= PI && guard < 100_000 {
        r = (f64::from(r) - PI * 2.0) as f32;
        guard += 1;
    }
    while f64::from(r) < -PI && guard < 200_000 {
        r = (f64::from(r) + PI * 2.0) as f32;
        guard += 1;
    }
    r
}

/// Radians to the degrees `Build_Reference` passes to `AngleMatrix`.
fn to_degrees(rot: [f32; 3]) -> [f32; 3] {
    rot.map(|r| (f64::from(r) * (180.0 / PI)) as f32)
}

/// The 0.01 truncation of `lookup_vertex`: `int(v·100) / 100.0`.
fn truncate_cm(v: f32) -> f32 {
    let i = (v * 100.0) as i32;
    (f64::from(i) / 100.0) as f32
}

/// `VectorCompare` with `EQUAL_EPSILON` 0.001.
fn same_position(a: [f32; 3], b: [f32; 3]) -> bool {
    (0..3).all(|i| f64::from(a[i] - b[i]).abs() <= 0.001)
}

/// Bone matrices of one file's reference skeleton (`Build_Reference`).
struct Fixup {
    /// World rotation (3×4, translation column 0).
    m: Mat,
    /// Inverse world rotation.
    im: Mat,
    world: [f32; 3],
}

fn build_fixups(mesh: &ModelMesh, model: &Model) -> Vec<Fixup> {
    let mut out: Vec<Fixup> = Vec::with_capacity(mesh.file_bones.len());
    let mut mirrored: Vec<bool> = Vec::with_capacity(mesh.file_bones.len());
    for b in &mesh.file_bones {
        let parent = b.parent.map(|p| p as usize).filter(|&p| p < out.len());
        let mirror = b
            .bone
            .is_some_and(|id| model.mirror_bones.iter().any(|(m, _)| *m == id))
            || parent
                .and_then(|p| mirrored.get(p).copied())
                .unwrap_or(false);
        mirrored.push(mirror);
        let mut pos = b.rest.pos;
        if mirror {
            pos = pos.map(|c| -c);
        }
        let deg = to_degrees(b.rest.rot.map(clip_rotation));
        let f = match parent.and_then(|p| out.get(p)) {
            None => Fixup {
                m: angle_matrix(deg),
                im: angle_imatrix(deg),
                world: pos,
            },
            Some(pf) => {
                let m = concat(&pf.m, &angle_matrix(deg));
                let im = concat(&angle_imatrix(deg), &pf.im);
                let p = transform(pos, &pf.m);
                Fixup {
                    m,
                    im,
                    world: [0, 1, 2].map(|i| p[i] + pf.world[i]),
                }
            }
        };
        out.push(f);
    }
    out
}

// --- per-model work data -------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct TriVert {
    vert: usize,
    norm: usize,
    s: i32,
    t: i32,
    u: f32,
    v: f32,
}

struct WorkMesh {
    skinref: usize,
    tris: Vec<[TriVert; 3]>,
}

struct WorkModel {
    name: String,
    verts: Vec<([f32; 3], u32)>,
    /// Position, bone, texture.
    norms: Vec<([f32; 3], u32, usize)>,
    meshes: Vec<WorkMesh>,
}

/// A loaded texture and its used texel range (floats, as in Valve's tool).
struct Tex<'m> {
    bmp: Option<&'m Image>,
    chrome: bool,
    min_s: f32,
    max_s: f32,
    min_t: f32,
    max_t: f32,
}

/// Builds the body parts, textures and skin table (`goldsrc.md` §8.1-8.3, §8.8).
pub fn build_geometry(
    model: &Model,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<Geometry> {
    let before = diags.len();

    // 1. textures, in the order Valve's tool lists them (`texture_order`)
    let tex_order = texture_order(model, sources);
    let ordered: Vec<&Material> = tex_order
        .order
        .iter()
        .filter_map(|&i| model.materials.get(i))
        .collect();
    let mut texs: Vec<Tex> = ordered
        .iter()
        .map(|m| Tex {
            bmp: take_texture(m, diags),
            chrome: is_chrome(&m.name),
            min_s: 9_999_999.0,
            max_s: -9_999_999.0,
            min_t: 9_999_999.0,
            max_t: -9_999_999.0,
        })
        .collect();
    for m in &model.materials {
        if m.name.len() >= TEXTURE_NAME_FIELD {
            diags.push(
                Diagnostic::new(
                    Code::GsTextureNameTooLong,
                    format!(
                        "texture name `{}` is {} bytes, longer than GoldSrc's 63",
                        m.name,
                        m.name.len()
                    ),
                    m.span,
                    "this texture name",
                )
                .with_note("a GoldSrc texture name is stored in 64 bytes, the last one a NUL; Valve's tool cuts it and then cannot find the file")
                .with_note("help: rename the BMP file (and the material) to a shorter name"),
            );
        }
    }

    // 2. models
    let mut models: Vec<Vec<Option<WorkModel>>> = Vec::new();
    for bp in &model.body_parts {
        let mut opts = Vec::new();
        for opt in &bp.options {
            opts.push(match opt {
                BodyOption::Blank(_) => None,
                BodyOption::Mesh(id) => match model.mesh(*id) {
                    Some(mesh) => {
                        let mut wm = build_model(mesh, model, diags)?;
                        for m in &mut wm.meshes {
                            m.skinref = tex_order.new_index(m.skinref);
                        }
                        for n in &mut wm.norms {
                            n.2 = tex_order.new_index(n.2);
                        }
                        Some(wm)
                    }
                    None => None,
                },
            });
        }
        models.push(opts);
    }

    // 3. texture coordinates and used ranges
    for wm in models.iter_mut().flatten().flatten() {
        for mesh in &mut wm.meshes {
            if let Some(tex) = texs.get_mut(mesh.skinref) {
                texture_coord_ranges(mesh, tex);
            }
        }
    }

    // 4. textures cropped, palettes
    let parents = texture_parents(model, &tex_order);
    let gamma = model.gamma.as_ref().map_or(1.8f32, |g| g.value);
    let mut textures = Vec::with_capacity(texs.len());
    for i in 0..texs.len() {
        let unused = texs.get(i).is_some_and(|t| t.max_s < t.min_s);
        if unused {
            let chrome = texs.get(i).is_some_and(|t| t.chrome);
            let range = if chrome {
                Some((0.0, 63.0, 0.0, 63.0))
            } else {
                let p = parents.get(i).copied().unwrap_or(0);
                texs.get(p).map(|t| (t.min_s, t.max_s, t.min_t, t.max_t))
            };
            if let (Some(t), Some((a, b, c, d))) = (texs.get_mut(i), range) {
                (t.min_s, t.max_s, t.min_t, t.max_t) = (a, b, c, d);
            }
        }
        let (Some(tex), Some(mat)) = (texs.get(i), ordered.get(i)) else {
            continue;
        };
        if let Some(t) = resize_texture(tex, mat, gamma, diags) {
            textures.push(t);
        }
    }

    // 5. relative texels, normals by mesh, commands
    let mut body_parts = Vec::with_capacity(model.body_parts.len());
    for (bp, opts) in model.body_parts.iter().zip(models) {
        let mut out = Vec::with_capacity(opts.len());
        for wm in opts {
            out.push(match wm {
                None => GsModelData {
                    name: "blank".to_string(),
                    ..GsModelData::default()
                },
                Some(mut wm) => {
                    for mesh in &mut wm.meshes {
                        if let Some(tex) = texs.get(mesh.skinref) {
                            reset_texture_coords(mesh, tex);
                        }
                    }
                    write_model(wm)
                }
            });
        }
        body_parts.push(GsBodyPart {
            name: bp.name.value.clone(),
            models: out,
        });
    }

    let skins = tex_order.skins(model);

    let failed = diags
        .get(before..)
        .unwrap_or(&[])
        .iter()
        .any(|d| d.is_error());
    (!failed).then_some(Geometry {
        body_parts,
        textures,
        skins,
    })
}

fn is_chrome(name: &str) -> bool {
    name.to_ascii_lowercase().contains("chrome")
}

/// Each texture's `$texturegroup` parent, as Valve's `Cmd_TextureGroup` sets it: for every
/// group in QC order, each texture of a row after the first gets the texture at the same
/// position of that group's first row (a later assignment replaces an earlier one; a position
/// the first row does not have gives texture 0, the zeroed slot Valve's tool reads). Texture 0
/// when nothing names it so. Indexed and valued in the texture order `order`.
fn texture_parents(model: &Model, order: &TextureOrder) -> Vec<usize> {
    let mut parents = vec![0usize; model.materials.len()];
    for g in &model.skins.groups {
        let Some(first) = g.rows.first() else {
            continue;
        };
        for row in g.rows.iter().skip(1) {
            for (j, m) in row.iter().enumerate() {
                let parent = first.get(j).map_or(0, |p| order.new_index(p.index()));
                if let Some(slot) = parents.get_mut(order.new_index(m.index())) {
                    *slot = parent;
                }
            }
        }
    }
    parents
}

/// A material's texture as the model builder read it (`crate::build`): what finding and
/// reading it reported is reported now, in Valve's texture order.
/// A model built for Source has no textures: an internal error, as the driver builds a
/// GoldSrc model's materials with their textures.
fn take_texture<'m>(m: &'m Material, diags: &mut Vec<Diagnostic>) -> Option<&'m Image> {
    let Some(t) = m.texture.as_ref() else {
        diags.push(
            Diagnostic::new(
                Code::InternalError,
                format!("internal error: the texture of `{}` was not loaded", m.name),
                m.span,
                "this material",
            )
            .with_note("this is a bug in mdlc: a GoldSrc model's textures are read when its model is built"),
        );
        return None;
    };
    diags.extend(t.diagnostics.iter().cloned());
    t.image.as_ref()
}

// --- first-match search (`goldsrc.md` §8.1) ---------------------------------------------------

/// Earlier items (vertices or normals) of one model filed by a key (bone, texture) and a cubic
/// cell of their coordinates, so that "the first earlier item within a tolerance" looks at a
/// few cells instead of every item. Exact: callers guarantee that two matching items lie in the
/// same or adjacent cells along each axis, no further apart than `margin` across a cell
/// boundary; items that do not fit the grid (non-finite or huge coordinates, or flagged by the
/// caller) are "wild" and always looked at. Lists are in insertion order, so the first match of
/// each list is its earliest, and the smallest of those is the first match overall.
///
/// A cell's list is a chain through [`FirstMatch::chain`] (most cells hold one item: no vector
/// of its own); the map keeps its first and last link.
struct FirstMatch {
    size: f32,
    margin: f32,
    cells: crate::formats::hash::FastMap<(u32, usize, [i32; 3]), (usize, usize)>,
    /// Per link: the item and the next link of its cell ([`NO_LINK`] at the end).
    chain: Vec<(usize, usize)>,
    wild: crate::formats::hash::FastMap<(u32, usize), Vec<usize>>,
    all: crate::formats::hash::FastMap<(u32, usize), Vec<usize>>,
}

/// The end of a cell's chain in [`FirstMatch`].
const NO_LINK: usize = usize::MAX;

impl FirstMatch {
    fn new(size: f32, margin: f32) -> Self {
        FirstMatch {
            size,
            margin,
            cells: crate::formats::hash::FastMap::default(),
            chain: Vec::new(),
            wild: crate::formats::hash::FastMap::default(),
            all: crate::formats::hash::FastMap::default(),
        }
    }

    /// The cell of `p` and, per axis, the neighbouring cell to look at too (−1, 0 or +1).
    fn cell(&self, p: [f32; 3]) -> Option<([i32; 3], [i32; 3])> {
        let mut cell = [0i32; 3];
        let mut near = [0i32; 3];
        for a in 0..3 {
            let x = p[a] / self.size;
            if !x.is_finite() || x.abs() > 1.0e8 {
                return None;
            }
            let f = x.floor();
            cell[a] = f as i32;
            if (x - f) * self.size < self.margin {
                near[a] = -1;
            } else if (f + 1.0 - x) * self.size < self.margin {
                near[a] = 1;
            }
        }
        Some((cell, near))
    }

    /// The first earlier item under `key` for which `matches` holds; `wild_query` makes the
    /// search look at every item under `key`.
    fn first(
        &self,
        key: (u32, usize),
        p: [f32; 3],
        wild_query: bool,
        matches: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let first_in = |list: Option<&Vec<usize>>| -> Option<usize> {
            list.and_then(|l| l.iter().copied().find(|&i| matches(i)))
        };
        let located = if wild_query { None } else { self.cell(p) };
        let Some((cell, near)) = located else {
            return first_in(self.all.get(&key));
        };
        let mut best = first_in(self.wild.get(&key));
        let offsets = |a: usize| -> &'static [i32] {
            match near[a] {
                -1 => &[0, -1],
                1 => &[0, 1],
                _ => &[0],
            }
        };
        for &dx in offsets(0) {
            for &dy in offsets(1) {
                for &dz in offsets(2) {
                    let c = [
                        cell[0].saturating_add(dx),
                        cell[1].saturating_add(dy),
                        cell[2].saturating_add(dz),
                    ];
                    let head = self.cells.get(&(key.0, key.1, c)).map(|&(h, _)| h);
                    let chained =
                        std::iter::successors(head, |&l| self.chain.get(l).map(|&(_, next)| next));
                    let mut items = chained.map_while(|l| self.chain.get(l).map(|&(i, _)| i));
                    if let Some(i) = items.find(|&i| matches(i)) {
                        if best.is_none_or(|b| i < b) {
                            best = Some(i);
                        }
                    }
                }
            }
        }
        best
    }

    fn insert(&mut self, key: (u32, usize), p: [f32; 3], wild: bool, index: usize) {
        self.all.entry(key).or_default().push(index);
        match (wild, self.cell(p)) {
            (false, Some((cell, _))) => {
                let link = self.chain.len();
                self.chain.push((index, NO_LINK));
                match self.cells.entry((key.0, key.1, cell)) {
                    std::collections::hash_map::Entry::Occupied(mut e) => {
                        let (_, last) = e.get_mut();
                        if let Some(l) = self.chain.get_mut(*last) {
                            l.1 = link;
                        }
                        *last = link;
                    }
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert((link, link));
                    }
                }
            }
            _ => self.wild.entry(key).or_default().push(index),
        }
    }
}

/// Whether a normal is of unit length closely enough for [`FirstMatch`]'s grid: two such
/// normals with a dot product above cos 2° are less than 0.06 apart.
fn unit_enough(n: [f32; 3]) -> bool {
    let l = f64::from(n[0]) * f64::from(n[0])
        + f64::from(n[1]) * f64::from(n[1])
        + f64::from(n[2]) * f64::from(n[2]);
    (l - 1.0).abs() < 0.001
}

// --- 2. one model ----------------------------------------------------------------------------

fn build_model(mesh: &ModelMesh, model: &Model, diags: &mut Vec<Diagnostic>) -> Option<WorkModel> {
    let fixups = build_fixups(mesh, model);
    // Merged bone → the file bone that maps to it (the corner's first column).
    let mut file_of: crate::formats::hash::FastMap<u32, usize> =
        crate::formats::hash::FastMap::default();
    for (i, b) in mesh.file_bones.iter().enumerate() {
        if let Some(id) = b.bone {
            file_of.entry(id.0).or_insert(i);
        }
    }
    let normal_blend = (2.0f64 * (PI / 180.0)).cos() as f32;
    let mut wm = WorkModel {
        name: mesh.written.clone(),
        verts: Vec::new(),
        norms: Vec::new(),
        meshes: Vec::new(),
    };
    // Positions are truncated to 0.01 and match within 0.001 per axis; unit normals match
    // above cos 2°, so within 0.08 of each other per axis (see `FirstMatch`).
    let mut vert_index = FirstMatch::new(1.0, 0.01);
    let mut norm_index = FirstMatch::new(0.25, 0.1);
    for (ti, tri) in mesh.mesh.triangles.iter().enumerate() {
        let Some(skinref) = mesh.material_of(tri).map(|m| m.index()) else {
            continue;
        };
        let mi = match wm.meshes.iter().position(|m| m.skinref == skinref) {
            Some(i) => i,
            None => {
                if wm.meshes.len() >= MAX_MESHES {
                    diags.push(
                        Diagnostic::new(
                            Code::GsTooManyMeshes,
                            format!(
                                "model `{}` uses more than {MAX_MESHES} textures",
                                mesh.written
                            ),
                            tri.span,
                            format!("texture {} of this model", MAX_MESHES + 1),
                        )
                        .with_secondary(mesh.span, "model loaded here")
                        .with_note("a GoldSrc model has one mesh per texture, at most 256")
                        .with_note(
                            "help: split the mesh into several body parts or merge textures",
                        ),
                    );
                    return None;
                }
                wm.meshes.push(WorkMesh {
                    skinref,
                    tris: Vec::new(),
                });
                wm.meshes.len() - 1
            }
        };
        let raw = mesh.source_positions.get(ti);
        let mut out = [TriVert {
            vert: 0,
            norm: 0,
            s: 0,
            t: 0,
            u: 0.0,
            v: 0.0,
        }; 3];
        for (j, c) in mesh.mesh.corners_of(tri).iter().enumerate() {
            let slot = if mesh.reverse { j } else { 2 - j };
            let fb = file_of.get(&c.bone.0).copied();
            let Some(fx) = fb.and_then(|b| fixups.get(b)) else {
                continue;
            };
            // Position: (p − origin offset) · scale, bone space, truncated to 0.01.
            let p = match raw.and_then(|r| r.get(j)) {
                Some(r) => [0, 1, 2].map(|i| (r[i] - mesh.origin_offset[i]) * mesh.scale),
                None => c.pos,
            };
            let tmp = [0, 1, 2].map(|i| p[i] - fx.world[i]);
            let local = transform(tmp, &fx.im).map(truncate_cm);
            let n = normalize(transform(c.normal, &fx.im));
            let bone = c.bone.0;

            let n_wild = !unit_enough(n);
            let norm = match norm_index.first((bone, skinref), n, n_wild, |k| {
                wm.norms
                    .get(k)
                    .is_some_and(|(o, _, _)| dot(*o, n) > normal_blend)
            }) {
                Some(k) => k,
                None => {
                    if wm.norms.len() >= MAX_VERTS {
                        diags.push(too_many(Code::GsTooManyNormals, "normals", mesh, c.span));
                        return None;
                    }
                    norm_index.insert((bone, skinref), n, n_wild, wm.norms.len());
                    wm.norms.push((n, bone, skinref));
                    wm.norms.len() - 1
                }
            };
            let vert = match vert_index.first((bone, 0), local, false, |k| {
                wm.verts
                    .get(k)
                    .is_some_and(|(o, _)| same_position(*o, local))
            }) {
                Some(k) => k,
                None => {
                    if wm.verts.len() >= MAX_VERTS {
                        diags.push(too_many(Code::GsTooManyVertices, "vertices", mesh, c.span));
                        return None;
                    }
                    vert_index.insert((bone, 0), local, false, wm.verts.len());
                    wm.verts.push((local, bone));
                    wm.verts.len() - 1
                }
            };
            if let Some(o) = out.get_mut(slot) {
                *o = TriVert {
                    vert,
                    norm,
                    s: 0,
                    t: 0,
                    u: c.uv[0],
                    v: c.uv[1],
                };
            }
        }
        if let Some(m) = wm.meshes.get_mut(mi) {
            m.tris.push(out);
        }
    }
    Some(wm)
}

fn too_many(code: Code, what: &str, mesh: &ModelMesh, at: FileSpan) -> Diagnostic {
    Diagnostic::new(
        code,
        format!(
            "model `{}` has more than {MAX_VERTS} unique {what}",
            mesh.written
        ),
        at,
        format!("{what} number {} of this model", MAX_VERTS + 1),
    )
    .with_secondary(mesh.span, "model loaded here")
    .with_note(format!(
        "a GoldSrc model holds at most {MAX_VERTS} {what} (after merging equal ones)"
    ))
    .with_note("help: split the mesh into several body parts, or simplify it")
}

// --- 3. texture coordinates ------------------------------------------------------------------

/// `TextureCoordRanges`: chrome, clamp, whole-unit packing, texels, used range.
fn texture_coord_ranges(mesh: &mut WorkMesh, tex: &mut Tex<'_>) {
    if tex.chrome {
        for tri in &mut mesh.tris {
            for c in tri.iter_mut() {
                c.s = 0;
                c.t = 0;
            }
            (tex.min_s, tex.max_s, tex.min_t, tex.max_t) = (0.0, 63.0, 0.0, 63.0);
        }
        return;
    }
    let Some((w, h)) = tex.bmp.as_ref().map(|b| (b.width, b.height)) else {
        return;
    };
    for tri in &mut mesh.tris {
        for c in tri.iter_mut() {
            c.u = c.u.clamp(-1.0, 2.0);
            c.v = c.v.clamp(-1.0, 2.0);
        }
    }
    pack(&mut mesh.tris, |c| &mut c.u);
    pack(&mut mesh.tris, |c| &mut c.v);
    let (wm1, hm1) = ((w as i64 - 1) as f32, (h as i64 - 1) as f32);
    for tri in &mut mesh.tris {
        for c in tri.iter_mut() {
            c.s = (c.u * wm1) as i32;
            c.t = (c.v * hm1) as i32;
            tex.max_s = tex.max_s.max(c.s as f32);
            tex.min_s = tex.min_s.min(c.s as f32);
            tex.max_t = tex.max_t.max(c.t as f32);
            tex.min_t = tex.min_t.min(c.t as f32);
        }
    }
}

/// The packing loop of one coordinate: move whole triangles by ±1 towards the others while
/// that shrinks the overall range (comparisons in double, additions stored as float).
fn pack(tris: &mut [[TriVert; 3]], coord: impl Fn(&mut TriVert) -> &mut f32) {
    let n = tris.len();
    let limit = n.saturating_mul(64).max(1024);
    for _ in 0..limit {
        let mut min_u = 10.0f32;
        let mut max_u = -10.0f32;
        let (mut k, mut nn) = (None, None);
        let (mut k_max, mut n_min) = (0.0f32, 0.0f32);
        for (i, tri) in tris.iter_mut().enumerate() {
            let [a, b, c] = tri;
            let (a, b, c) = (*coord(a), *coord(b), *coord(c));
            let lo = q_min(a, q_min(b, c));
            let hi = q_max(a, q_max(b, c));
            if lo < min_u {
                min_u = lo;
                k = Some(i);
                k_max = hi;
            }
            if hi > max_u {
                max_u = hi;
                nn = Some(i);
                n_min = lo;
            }
        }
        let (Some(k), Some(nn)) = (k, nn) else {
            return;
        };
        let (target, delta) = if f64::from(k_max) + 1.0 < f64::from(max_u) {
            (k, 1.0f64)
        } else if f64::from(n_min) - 1.0 > f64::from(min_u) {
            (nn, -1.0f64)
        } else {
            return;
        };
        if let Some(tri) = tris.get_mut(target) {
            for c in tri.iter_mut() {
                let x = coord(c);
                *x = (f64::from(*x) + delta) as f32;
            }
        }
    }
}

/// C's `((a) < (b) ? (a) : (b))`.
fn q_min(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// C's `((a) > (b) ? (a) : (b))`.
fn q_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// `ResetTextureCoordRanges`: texels relative to the stored (cropped) texture, t flipped.
fn reset_texture_coords(mesh: &mut WorkMesh, tex: &Tex<'_>) {
    for tri in &mut mesh.tris {
        for c in tri.iter_mut() {
            c.s = (c.s as f32 - tex.min_s) as i32;
            c.t = ((tex.max_t - tex.min_t) - (c.t as f32 - tex.min_t)) as i32;
        }
    }
}

// --- 4. textures ---------------------------------------------------------------------------

/// `ResizeTexture`: crop / extend (with wrap-around) to the used range, width rounded up to 4,
/// palette through `$gamma`.
fn resize_texture(
    tex: &Tex<'_>,
    mat: &Material,
    gamma: f32,
    diags: &mut Vec<Diagnostic>,
) -> Option<GsTexture> {
    let bmp = tex.bmp.as_ref()?;
    let left = tex.min_s as i64;
    let top = tex.min_t as i64;
    let width = (((tex.max_s - tex.min_s + 1.0) as i64) + 3) & !3;
    let height = (tex.max_t - tex.min_t + 1.0) as i64;
    if width <= 0 || height <= 0 {
        diags.push(
            Diagnostic::new(
                Code::GsTextureNoRange,
                format!("texture `{}` is used by no mesh and has no used texture to take its size from", mat.name),
                mat.span,
                "this texture",
            )
            .with_note("a texture no triangle uses is stored at the size of the texture it replaces in the first skin family (`$texturegroup`), else of texture 0")
            .with_note("help: list it in a `$texturegroup` row under a texture that a mesh uses"),
        );
        return None;
    }
    let size = width * height + 768;
    if size > MAX_TEXTURE_BYTES {
        diags.push(
            Diagnostic::new(
                Code::GsTextureTooLarge,
                format!(
                    "texture `{}` is too large: {width}×{height} texels are used",
                    mat.name
                ),
                mat.span,
                "this texture",
            )
            .with_note(format!(
                "GoldSrc stores the texels a model uses (here s {} to {}, t {} to {}); width × height + 768 may be at most {MAX_TEXTURE_BYTES} bytes, this one needs {size}",
                tex.min_s, tex.max_s, tex.min_t, tex.max_t
            ))
            .with_note("help: use a smaller image, or keep the texture coordinates within 0 to 1"),
        );
        return None;
    }
    let (sw, sh) = (bmp.width as i64, bmp.height as i64);
    let mut pixels = Vec::with_capacity((width * height) as usize);
    let first_s = left.rem_euclid(sw);
    let stride = bmp.stride();
    for i in 0..height {
        let t = (sh - height - top + i).rem_euclid(sh);
        // Row t's texels as `Bmp::at` reads them (0 past the end of a short file).
        let row = (t as usize)
            .checked_mul(stride)
            .and_then(|at| bmp.pixels.get(at..))
            .unwrap_or(&[]);
        let row = row.get(..sw as usize).unwrap_or(row);
        // s = (left + j) mod sw: the stretch from s to the row's end, then from 0 again
        let mut s = first_s as usize;
        let mut left_in_row = width as usize;
        while left_in_row > 0 {
            let n = left_in_row.min(sw as usize - s);
            let stretch = row.get(s..).unwrap_or(&[]);
            let stretch = stretch.get(..n).unwrap_or(stretch);
            pixels.extend_from_slice(stretch);
            pixels.resize(pixels.len() + (n - stretch.len()), 0);
            left_in_row -= n;
            s = 0;
        }
    }
    let g = (f64::from(gamma) / 1.8) as f32;
    // each of the 256 byte values once, not each of the 768 palette bytes
    let curve: Vec<u8> = (0..=255u8)
        .map(|c| {
            let x = f64::from(f32::from(c) / 255.0f32).powf(f64::from(g)) * 255.0;
            x as u8
        })
        .collect();
    let palette = bmp
        .palette
        .iter()
        .map(|&c| curve.get(usize::from(c)).copied().unwrap_or(c))
        .collect();
    let mut flags = if tex.chrome { 0x03 } else { 0 };
    for rm in &mat.render_modes {
        match rm.value.as_str() {
            "additive" => flags |= 0x20,
            "masked" => flags |= 0x40,
            _ => {}
        }
    }
    Some(GsTexture {
        name: mat.name.clone(),
        flags,
        width: width as i32,
        height: height as i32,
        pixels,
        palette,
    })
}

// --- 5. writing a model ----------------------------------------------------------------------

fn write_model(wm: WorkModel) -> GsModelData {
    // Normals re-ordered by mesh.
    let mut normmap = vec![0usize; wm.norms.len()];
    let mut order: Vec<usize> = Vec::with_capacity(wm.norms.len());
    let mut mesh_norms = Vec::with_capacity(wm.meshes.len());
    for m in &wm.meshes {
        let mut count = 0;
        for (k, (_, _, s)) in wm.norms.iter().enumerate() {
            if *s == m.skinref {
                if let Some(x) = normmap.get_mut(k) {
                    *x = order.len();
                }
                order.push(k);
                count += 1;
            }
        }
        mesh_norms.push(count);
    }
    let bone_byte = |b: u32| u8::try_from(b).unwrap_or(u8::MAX);
    let meshes = wm
        .meshes
        .iter()
        .zip(&mesh_norms)
        .map(|(m, &numnorms)| {
            let tris: Vec<[StripCorner; 3]> = m
                .tris
                .iter()
                .map(|t| {
                    t.map(|c| StripCorner {
                        vert: c.vert as i32,
                        norm: normmap.get(c.norm).copied().unwrap_or(0) as i32,
                        s: c.s,
                        t: c.t,
                        u: c.u,
                        v: c.v,
                    })
                })
                .collect();
            let (commands, _) = build_commands(&tris);
            GsMesh {
                numtris: m.tris.len() as i32,
                skinref: m.skinref as i32,
                numnorms,
                commands,
            }
        })
        .collect();
    GsModelData {
        name: wm.name,
        kind: 0,
        vert_bones: wm.verts.iter().map(|(_, b)| bone_byte(*b)).collect(),
        norm_bones: order
            .iter()
            .filter_map(|&k| wm.norms.get(k))
            .map(|(_, b, _)| bone_byte(*b))
            .collect(),
        verts: wm.verts.iter().map(|(p, _)| *p).collect(),
        norms: order
            .iter()
            .filter_map(|&k| wm.norms.get(k))
            .map(|(n, _, _)| *n)
            .collect(),
        meshes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_matrices_are_transposes() {
        let m = angle_matrix([10.0, 20.0, 30.0]);
        let im = angle_imatrix([10.0, 20.0, 30.0]);
        for i in 0..3 {
            for j in 0..3 {
                assert_eq!(m[i][j], im[j][i]);
            }
        }
    }

    #[test]
    fn truncation_is_toward_zero() {
        assert_eq!(truncate_cm(1.239), 1.23);
        assert_eq!(truncate_cm(-1.239), -1.23);
        assert_eq!(truncate_cm(-0.004), 0.0);
        assert!(truncate_cm(-0.004).is_sign_positive());
    }

    #[test]
    fn rotations_wrap_into_minus_pi_pi() {
        assert_eq!(clip_rotation(0.5), 0.5);
        let r = clip_rotation(4.0);
        assert!((f64::from(r) - (4.0 - 2.0 * PI)).abs() < 1e-6);
        assert!(clip_rotation(std::f32::consts::PI) < 0.0);
    }
}
