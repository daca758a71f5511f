//! The collision model (`$collisionmodel`, `$collisionjoints`, `$collisiontext`): which solids a
//! model has, their convex pieces in inches, and the keyvalues text, as the 2006 SDK's
//! `utils/studiomdl/collisionmodel.cpp` (branch episode1) decides them. That file hands the
//! hulls to Valve's closed vphysics; mdlc builds them itself ([`convex_hull`], exact integer
//! predicates in [`super::hull`]) and [`phy_write`](super::phy_write) lays out the `.phy`.
//!
//! What follows the SDK:
//! - `$collisionmodel`: one solid named after the mesh file, its points in model space (turned
//!   as the model is, `ConvertToWorldSpace`); with `$concave`, one piece per connected part of
//!   the mesh (vertices welded by position and normal within 2°, `BuildVertWeldTable`,
//!   `MarkConnectedMeshes`); a flat part makes it fall back to the whole mesh's hull with a
//!   warning, as do more than 20 parts when no `$maxconvexpieces` is given;
//! - `$collisionjoints`: one solid per bone of the mesh's skeleton, from every triangle with a
//!   vertex weighted to it (`CopyFaceVertsByBone`; the links as the model keeps them: at most
//!   3, none under 0.05), in that bone's space; `$jointskip`,
//!   `$jointmerge` and `$rootbone` change which bone a vertex counts for (`MergeBones`), and
//!   bones the model does not keep are skipped; solids are ordered parents first by Valve's
//!   own swap sort of the reversed bone order (`SortCollisionList`);
//! - masses: `$mass` shared by volume × `$jointmassbias`, at least 1 each; `$automass` from
//!   density (and thickness) of the surface property (`ComputeMass`); a solid whose bounds are
//!   more than 9 times longer than wide gets rotdamping 1 (`CreateCollide`);
//! - the text: `solid`, `ragdollconstraint` (friction ÷ 5, `free` = ±360, `fixed` = 0),
//!   `collisionrules`, `animatedfriction`, `editparams`, then `$collisiontext`, each line as
//!   `CollisionModel_Write` prints it;
//! - each bone's `physicsbone` is its solid, or its nearest ancestor's (`FixCollisionHierarchy`).

use crate::diag::{Code, Diagnostic, FileSpan, Spanned};
use crate::ir::model::{Collision, Model};

use super::math;
use super::model::PBone;
use super::phy_write::{cross, dot, sub};

/// Cubic metres per cubic inch (vphysics' CUBIC_METERS_PER_CUBIC_INCH).
const CUBIC_METRES_PER_CUBIC_INCH: f64 = 0.0254 * 0.0254 * 0.0254;

/// A convex piece: its hull's points (inches, in the solid's space) and outward-wound
/// triangles.
#[derive(Clone, Debug)]
pub struct Piece {
    pub points: Vec<[f64; 3]>,
    pub tris: Vec<[usize; 3]>,
}

impl Piece {
    pub fn volume(&self) -> f64 {
        self.tris
            .iter()
            .map(|t| {
                dot(
                    self.points[t[0]],
                    cross(self.points[t[1]], self.points[t[2]]),
                ) / 6.0
            })
            .sum()
    }

    pub fn area(&self) -> f64 {
        self.tris
            .iter()
            .map(|t| {
                let c = cross(
                    sub(self.points[t[1]], self.points[t[0]]),
                    sub(self.points[t[2]], self.points[t[0]]),
                );
                dot(c, c).sqrt() / 2.0
            })
            .sum()
    }
}

/// One solid of the `.phy`.
#[derive(Clone, Debug)]
pub struct PhysSolid {
    pub name: String,
    pub parent: Option<String>,
    pub pieces: Vec<Piece>,
    /// The ledges' client data: the bone index + 1 for a ragdoll's solid, 0 for a prop's.
    pub client_data: i32,
    /// `$masscenter`, in the solid's inches.
    pub mass_center: Option<[f64; 3]>,
    pub volume: f64,
    pub area: f64,
    pub mass: f32,
    pub damping: f32,
    pub rotdamping: f32,
    pub inertia: f32,
    pub drag: f32,
    pub mass_bias: f32,
    pub surface_prop: String,
}

/// Everything the `.phy` and the MDL need of the collision model.
#[derive(Clone, Debug)]
pub struct PhysPlan {
    pub solids: Vec<PhysSolid>,
    /// A prop's (`$collisionmodel`) bounds in model inches, for the MDL's hull; `None` for a
    /// ragdoll.
    pub prop_bounds: Option<([f64; 3], [f64; 3])>,
    pub text: String,
    /// The MDL header's `mass`.
    pub total_mass: f32,
    /// Each bone's `physicsbone`.
    pub bone_physics: Vec<i32>,
}

/// The convex hull of `points` (inches), or `None` when they are fewer than 4 or flat: exact
/// and the same every time ([`super::hull`]).
pub fn convex_hull(points: &[[f64; 3]]) -> Option<Piece> {
    let h = super::hull::convex_hull(points)?;
    let piece = Piece {
        points: h.points,
        tris: h.tris,
    };
    (piece.volume() > 0.0).then_some(piece)
}

/// A collision command's settings (`ParseCollisionCommands`), defaults as the SDK's.
struct Settings<'a> {
    total_mass: f32,
    automass: bool,
    inertia: f32,
    damping: f32,
    rotdamping: f32,
    drag: f32,
    concave: bool,
    mass_center: Option<[f64; 3]>,
    max_pieces: Option<(usize, FileSpan)>,
    skip: Vec<&'a Spanned<String>>,
    merge: Vec<(&'a Spanned<String>, &'a Spanned<String>)>,
    root: String,
    constraints: Vec<Constraint<'a>>,
    /// `$jointinertia`/`$jointdamping`/`$jointrotdamping`/`$jointmassbias`: (which, bone, value)
    joint_values: Vec<(&'static str, &'a Spanned<String>, f32)>,
    no_self: bool,
    pairs: Vec<(&'a Spanned<String>, &'a Spanned<String>)>,
    animated_friction: Option<[f32; 5]>,
    /// `$remove2d`: flat parts of a concave mesh are left out instead of making it one hull.
    remove_2d: bool,
    /// `$weldposition` (inches) and `$weldnormal` (degrees): how close two vertices must be to
    /// join parts of a concave mesh (exactly the same position and 2° by default).
    weld_position: f32,
    weld_normal: f32,
    /// `$assumeworldspace`: a prop's mesh is taken as written, without the model's rotation.
    world_space: bool,
}

struct Constraint<'a> {
    bone: &'a Spanned<String>,
    axis: usize,
    /// (min, max, friction) as written to the text
    limits: (f32, f32, f32),
}

fn number(s: &Spanned<String>, diags: &mut Vec<Diagnostic>) -> Option<f32> {
    // (Rust reads "NaN" and "inf" as numbers; a collision value must be finite)
    match s.value.trim().parse::<f32>().ok().filter(|v| v.is_finite()) {
        Some(v) => Some(v),
        None => {
            diags.push(Diagnostic::new(
                Code::PhysicsArgument,
                format!("`{}` is not a number", s.value),
                s.span.span(),
                "expected a number",
            ));
            None
        }
    }
}

fn parse<'a>(c: &'a Collision, diags: &mut Vec<Diagnostic>) -> Option<Settings<'a>> {
    let mut s = Settings {
        total_mass: 1.0,
        automass: false,
        inertia: 1.0,
        damping: 0.0,
        rotdamping: 0.0,
        drag: -1.0,
        concave: false,
        mass_center: None,
        max_pieces: None,
        skip: Vec::new(),
        merge: Vec::new(),
        root: String::new(),
        constraints: Vec::new(),
        joint_values: Vec::new(),
        no_self: false,
        pairs: Vec::new(),
        animated_friction: None,
        remove_2d: false,
        weld_position: 0.0,
        weld_normal: 2.0,
        world_space: false,
    };
    let before = diags.len();
    for cmd in &c.commands {
        let kw = cmd.keyword.value.as_str();
        let need = match kw {
            "$mass" | "$inertia" | "$damping" | "$rotdamping" | "$drag" | "$jointskip"
            | "$rootbone" | "$maxconvexpieces" | "$rollingdrag" | "$weldposition"
            | "$weldnormal" => 1,
            "$jointmerge" | "$jointinertia" | "$jointdamping" | "$jointrotdamping"
            | "$jointmassbias" | "$jointcollide" => 2,
            "$masscenter" => 3,
            "$jointconstrain" => 3,
            "$animatedfriction" => 5,
            _ => 0,
        };
        if cmd.args.len() < need {
            diags.push(
                Diagnostic::new(
                    Code::PhysicsArgument,
                    format!("`{kw}` takes {need} argument(s); {} given", cmd.args.len()),
                    cmd.keyword.span.span(),
                    "too few arguments",
                )
                .with_note("the collision model is not built"),
            );
            continue;
        }
        let a = &cmd.args;
        match kw {
            "$mass" => s.total_mass = number(&a[0], diags).unwrap_or(1.0),
            "$automass" => s.automass = true,
            "$inertia" => s.inertia = number(&a[0], diags).unwrap_or(1.0),
            "$damping" => s.damping = number(&a[0], diags).unwrap_or(0.0),
            "$rotdamping" => s.rotdamping = number(&a[0], diags).unwrap_or(0.0),
            "$drag" => s.drag = number(&a[0], diags).unwrap_or(-1.0),
            "$concave" => s.concave = true,
            "$masscenter" => {
                let v: Vec<f32> = a[..3].iter().filter_map(|x| number(x, diags)).collect();
                if let [x, y, z] = v[..] {
                    s.mass_center = Some([x as f64, y as f64, z as f64]);
                }
            }
            "$maxconvexpieces" => {
                if let Some(n) = number(&a[0], diags) {
                    s.max_pieces = Some((n.max(1.0) as usize, a[0].span.span()));
                }
            }
            "$jointskip" => s.skip.push(&a[0]),
            "$jointmerge" => s.merge.push((&a[0], &a[1])),
            "$rootbone" => s.root = a[0].value.clone(),
            "$jointconstrain" => {
                let axis = match a[1].value.to_ascii_lowercase().as_str() {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    // the QC reader has reported it (E0237)
                    _ => continue,
                };
                let kind = a[2].value.to_ascii_lowercase();
                // `free` and `fixed` need no range; the SDK reads what is there
                let range = match (a.get(3), a.get(4)) {
                    (Some(x), Some(y)) => (number(x, diags), number(y, diags)),
                    _ if kind != "limit" => (Some(0.0), Some(0.0)),
                    _ => {
                        diags.push(Diagnostic::new(
                            Code::PhysicsArgument,
                            "`$jointconstrain … limit` needs a minimum and a maximum",
                            a[2].span.span(),
                            "no range after this",
                        ));
                        continue;
                    }
                };
                let (Some(min), Some(max)) = range else {
                    continue;
                };
                let friction = match a.get(5) {
                    Some(f) => number(f, diags).unwrap_or(1.0),
                    None => 1.0,
                } / 5.0;
                let limits = match kind.as_str() {
                    "free" => (-360.0, 360.0, friction),
                    "fixed" => (0.0, 0.0, 0.0),
                    "limit" => (min, max, friction),
                    _ => continue,
                };
                s.constraints.push(Constraint {
                    bone: &a[0],
                    axis,
                    limits,
                });
            }
            "$jointinertia" | "$jointdamping" | "$jointrotdamping" | "$jointmassbias" => {
                let which = match kw {
                    "$jointinertia" => "inertia",
                    "$jointdamping" => "damping",
                    "$jointrotdamping" => "rotdamping",
                    _ => "massbias",
                };
                if let Some(v) = number(&a[1], diags) {
                    s.joint_values.push((which, &a[0], v));
                }
            }
            "$noselfcollisions" => s.no_self = true,
            "$remove2d" => s.remove_2d = true,
            "$assumeworldspace" => s.world_space = true,
            "$weldposition" => s.weld_position = number(&a[0], diags).unwrap_or(0.0).max(0.0),
            "$weldnormal" => s.weld_normal = number(&a[0], diags).unwrap_or(2.0),
            "$jointcollide" => s.pairs.push((&a[0], &a[1])),
            "$animatedfriction" => {
                let v: Vec<f32> = a[..5].iter().filter_map(|x| number(x, diags)).collect();
                if let [mn, mx, tin, thold, tout] = v[..] {
                    // the SDK keeps the frictions as integers
                    s.animated_friction = Some([mn.trunc(), mx.trunc(), tin, thold, tout]);
                }
            }
            _ => {}
        }
    }
    (diags.len() == before).then_some(s)
}

/// Densities (kg/m³) and thicknesses (inches) of surface properties for `$automass`. Only
/// values checked against a Valve build are listed: `metal` is sheet metal 0.1 inch thick
/// (the chamber door frame's 162.857 kg = 36,808 in² × 0.1 in × 2700 kg/m³); `default` is the
/// density Valve's compiler falls back to (unverified: no corpus model uses it).
const DENSITIES: &[(&str, f64, f64)] = &[("default", 2000.0, 0.0), ("metal", 2700.0, 0.1)];

/// The collision model has errors; the diagnostics say which.
#[derive(Debug)]
pub struct Failed;

/// Plans the collision model of `model`, or `Ok(None)` without one. `bones` are the MDL's
/// bones and `bone_surface_props` their surface properties; `static_prop` turns the mesh as a
/// static prop's.
pub fn plan(
    model: &Model,
    bones: &[PBone],
    bone_surface_props: &[String],
    static_prop: bool,
    diags: &mut Vec<Diagnostic>,
) -> Result<Option<PhysPlan>, Failed> {
    let Some(c) = &model.collision else {
        return Ok(None);
    };
    let set = parse(c, diags).ok_or(Failed)?;
    let skel = &c.skeleton;
    let n = skel.len();
    let default_prop = model
        .surface_prop
        .as_ref()
        .map(|s| s.value.clone())
        .unwrap_or_else(|| "default".into());

    let out_index = |name: &str| bones.iter().position(|b| b.name.eq_ignore_ascii_case(name));
    let find = |s: &Spanned<String>| skel.find(&s.value).map(|b| b.index());
    let unknown = |s: &Spanned<String>, what: &str| {
        let names: Vec<&str> = skel.bones.iter().map(|b| b.name.as_str()).collect();
        let mut d = Diagnostic::new(
            Code::PhysicsUnknownBone,
            format!(
                "`{}` {what} is not a bone of the collision mesh `{}`",
                s.value,
                c.path.display()
            ),
            s.span.span(),
            "no such bone",
        );
        if let Some(h) = crate::suggest::suggest(&s.value, &names) {
            d = d.with_note(format!("help: did you mean `{h}`?"));
        }
        d
    };

    // which bone each bone's vertices count for (`m_bonemap`)
    let mut bonemap: Vec<Option<usize>> = (0..n).map(Some).collect();
    let mut bad = false;
    for s in &set.skip {
        match find(s) {
            Some(i) => bonemap[i] = None,
            None => {
                diags.push(unknown(s, "in `$jointskip`"));
                bad = true;
            }
        }
    }
    // bones the model does not keep (the SDK's `Simplify`)
    if c.joints {
        for (i, b) in skel.bones.iter().enumerate() {
            if out_index(&b.name).is_none() {
                bonemap[i] = None;
            }
        }
    }
    let merge = |bonemap: &mut Vec<Option<usize>>, parent: usize, child: usize| {
        let mut m = parent;
        for _ in 0..=n {
            match bonemap[m] {
                Some(x) if x != m => m = x,
                _ => break,
            }
        }
        bonemap[child] = bonemap[m].map(|_| m);
    };
    for (p, ch) in &set.merge {
        match (find(p), find(ch)) {
            (Some(p), Some(ch)) => merge(&mut bonemap, p, ch),
            (pp, _) => {
                let s = if pp.is_none() { p } else { ch };
                diags.push(unknown(s, "in `$jointmerge`"));
                bad = true;
            }
        }
    }
    if c.joints && !set.root.trim().is_empty() {
        // the animation's root bone takes the `$rootbone`'s vertices
        if let (Some(root), Some(r)) = (
            bones.first().and_then(|b| skel.find(&b.name)),
            skel.find(&set.root),
        ) {
            merge(&mut bonemap, root.index(), r.index());
        }
    }
    if bad {
        return Err(Failed);
    }

    // bind pose of the mesh's own skeleton
    let world: Vec<math::M34> = math::chain(skel.bones.iter().map(|b| {
        (
            math::from_euler(b.rest.rot, b.rest.pos),
            b.parent.map(|p| p.index()),
        )
    }));

    let mut solids: Vec<PhysSolid> = Vec::new();
    let mut prop_bounds = None;
    let new_solid = |name: String, parent: Option<String>, pieces: Vec<Piece>, client: i32| {
        let volume = pieces.iter().map(Piece::volume).sum();
        let area = pieces.iter().map(Piece::area).sum();
        let surface_prop = out_index(&name)
            .and_then(|i| bone_surface_props.get(i).cloned())
            .unwrap_or_else(|| default_prop.clone());
        PhysSolid {
            name,
            parent,
            pieces,
            client_data: client,
            mass_center: set.mass_center,
            volume,
            area,
            mass: 1.0,
            damping: set.damping,
            rotdamping: set.rotdamping,
            inertia: set.inertia,
            drag: set.drag,
            mass_bias: 1.0,
            surface_prop,
        }
    };
    let long_and_thin = |pts: &[[f64; 3]]| {
        let (lo, hi) = super::phy_write::bounds(pts);
        let size = sub(hi, lo);
        let largest = (0..3)
            .max_by(|&a, &b| size[a].total_cmp(&size[b]))
            .unwrap_or(0);
        let mut rest = size;
        rest[largest] = 0.0;
        let len = dot(rest, rest).sqrt();
        len > 0.0 && size[largest] / len > 9.0
    };

    if c.joints {
        // the bones (after the bone map) each triangle's corners are linked to, with the
        // links the model keeps (at most 3, none under 0.05): worked out once, not per bone
        let tri_bones: Vec<Vec<usize>> = c
            .mesh
            .triangles
            .iter()
            .map(|t| {
                let mut v: Vec<usize> = Vec::new();
                for k in &c.mesh.corners_of(t) {
                    let ws = c.mesh.weights_of(k);
                    if ws.is_empty() {
                        v.push(k.bone.index());
                    } else {
                        v.extend(
                            super::prepare::kept_bones(ws)
                                .into_iter()
                                .map(|b| b.index()),
                        );
                    }
                }
                let mut v: Vec<usize> = v
                    .into_iter()
                    .filter_map(|b| bonemap.get(b).copied().flatten())
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        for i in 0..n {
            if bonemap[i] != Some(i) {
                continue;
            }
            let inv = math::invert(&world[i]);
            let mut pts: Vec<[f64; 3]> = Vec::new();
            for (t, bones_of) in c.mesh.triangles.iter().zip(&tri_bones) {
                if bones_of.binary_search(&i).is_ok() {
                    for k in &c.mesh.corners_of(t) {
                        pts.push(math::apply(&inv, k.pos).map(f64::from));
                    }
                }
            }
            if pts.is_empty() {
                continue;
            }
            let Some(h) = convex_hull(&pts) else {
                continue;
            };
            let name = skel.bones[i].name.clone();
            // the parent as merged (`FixBoneList` maps it through the bone map); a skipped one
            // passes to its own parent
            let mut parent = None;
            let mut up = skel.bones[i].parent;
            for _ in 0..=n {
                let Some(p) = up else { break };
                if let Some(m) = bonemap[p.index()] {
                    if m != i {
                        parent = Some(skel.bones[m].name.clone());
                    }
                    break;
                }
                up = skel.bones[p.index()].parent;
            }
            let client = out_index(&name).map(|o| o as i32 + 1).unwrap_or(0);
            let mut s = new_solid(name, parent, vec![h], client);
            if long_and_thin(&pts) {
                s.rotdamping = 1.0;
            }
            // the SDK's list is built by prepending
            solids.insert(0, s);
        }
    } else {
        let rz = math::from_euler([0.0, 0.0, std::f32::consts::FRAC_PI_2], [0.0; 3]);
        let place = |p: [f32; 3]| -> [f64; 3] {
            if set.world_space {
                p
            } else if static_prop {
                math::rot_z90(p)
            } else {
                math::apply(&rz, p)
            }
            .map(f64::from)
        };
        let all: Vec<[f64; 3]> = c
            .mesh
            .triangles
            .iter()
            .flat_map(|t| c.mesh.corners_of(t).map(|k| place(k.pos)))
            .collect();
        // the bounds of the points the hulls were made of, as given (the hulls' own points are
        // snapped to 1/4096 inch)
        let mut hulled = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        let whole = || convex_hull(&all);
        let mut pieces = Vec::new();
        if set.concave {
            let parts = connected_parts(c, set.weld_position, set.weld_normal);
            let mut fallback = false;
            // parts whose hull is much larger than they are: (hull in³, part in³)
            let mut not_convex: Vec<(f64, f64)> = Vec::new();
            for part in &parts {
                let pts: Vec<[f64; 3]> = part.points.iter().map(|&p| place(p)).collect();
                if pts.len() <= 2 {
                    continue;
                }
                if approximately_planar(&pts, 0.5) {
                    if set.remove_2d {
                        continue;
                    }
                    diags.push(
                        Diagnostic::new(
                            Code::PhysicsFlatPiece,
                            "a connected part of the concave collision mesh is flat; the whole mesh's convex hull is used instead",
                            c.span,
                            "this collision model",
                        )
                        .with_note("Valve's compiler does the same (\"check your smoothing groups\"): close the part, or split the mesh into closed parts"),
                    );
                    fallback = true;
                    break;
                }
                if let Some(h) = convex_hull(&pts) {
                    // the part's own volume (meaningful when it is closed): a hull more than
                    // 10 % (and 1 in³) larger fills a hollow the part has
                    let own: f64 = part
                        .tris
                        .iter()
                        .map(|t| {
                            let [a, b, c] = t.map(place);
                            dot(a, cross(b, c)) / 6.0
                        })
                        .sum::<f64>()
                        .abs();
                    let hull = h.volume();
                    if own > 0.0 && hull > own * 1.1 && hull - own > 1.0 {
                        not_convex.push((hull, own));
                    }
                    pieces.push(h);
                    let (lo, hi) = super::phy_write::bounds(&pts);
                    for k in 0..3 {
                        hulled.0[k] = hulled.0[k].min(lo[k]);
                        hulled.1[k] = hulled.1[k].max(hi[k]);
                    }
                }
            }
            match set.max_pieces {
                Some((max, span)) if pieces.len() > max && !fallback => {
                    diags.push(
                        Diagnostic::new(
                            Code::PhysicsTooManyPieces,
                            format!(
                                "the concave collision mesh has {} convex parts; `$maxconvexpieces` allows {max}",
                                pieces.len()
                            ),
                            span,
                            "the limit",
                        )
                        .with_note("raise the limit, or join parts of the mesh"),
                    );
                    return Err(Failed);
                }
                None if pieces.len() > 20 && !fallback => {
                    diags.push(
                        Diagnostic::new(
                            Code::PhysicsCostly,
                            format!(
                                "the concave collision mesh has {} convex parts, more than 20; the whole mesh's convex hull is used instead",
                                pieces.len()
                            ),
                            c.span,
                            "this collision model",
                        )
                        .with_note("as Valve's compiler does; give `$maxconvexpieces` to keep the parts"),
                    );
                    fallback = true;
                }
                _ => {}
            }
            if fallback {
                pieces = whole().into_iter().collect();
                hulled = super::phy_write::bounds(&all);
            } else if let Some(&(hull, own)) = not_convex
                .iter()
                .max_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)))
            {
                diags.push(
                    Diagnostic::new(
                        Code::PhysicsPartNotConvex,
                        format!(
                            "{} connected part(s) of the concave collision mesh are not convex; each becomes its convex hull",
                            not_convex.len()
                        ),
                        c.span,
                        "this collision model",
                    )
                    .with_note(format!(
                        "the worst: a part of {own:.1} in³ has a hull of {hull:.1} in³, which fills its hollows; as in Valve's compiler, each part should be convex"
                    ))
                    .with_note("split such parts into convex ones in the collision mesh"),
                );
            }
        } else {
            pieces.extend(whole());
            hulled = super::phy_write::bounds(&all);
        }
        if !pieces.is_empty() {
            prop_bounds = Some(hulled);
            let name = c
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut s = new_solid(name, None, pieces, 0);
            if long_and_thin(&all) {
                s.rotdamping = 1.0;
            }
            solids.push(s);
        }
    }
    if solids.is_empty() {
        diags.push(
            Diagnostic::new(
                Code::PhysicsEmpty,
                format!(
                    "the collision mesh `{}` makes no solid: it has no triangles, or its points are flat",
                    c.path.display()
                ),
                c.span,
                "this collision model",
            )
            .with_note(if c.joints {
                "each solid is the hull of the triangles weighted to one bone, and needs volume"
            } else {
                "a solid is the convex hull of the mesh, and needs volume"
            }),
        );
        return Err(Failed);
    }

    // parents: the nearest ancestor with a solid (`FixParent`)
    let has_solid =
        |name: &str, solids: &[PhysSolid]| solids.iter().any(|s| s.name.eq_ignore_ascii_case(name));
    let fix_parent = |mut name: Option<String>, solids: &[PhysSolid]| {
        for _ in 0..=n {
            let nm = name.as_ref()?;
            if has_solid(nm, solids) {
                return name;
            }
            let b = skel.find(nm)?;
            name = skel.bones[b.index()]
                .parent
                .map(|p| skel.bones[p.index()].name.clone());
        }
        None
    };
    for i in 0..solids.len() {
        let p = fix_parent(solids[i].parent.clone(), &solids);
        solids[i].parent = p;
    }
    sort_parents_first(&mut solids);

    // per-joint values and surface properties
    for (which, bone, v) in &set.joint_values {
        let Some(target) = find(bone)
            .and_then(|_| fix_parent(Some(bone.value.clone()), &solids))
            .and_then(|nm| solids.iter_mut().find(|s| s.name.eq_ignore_ascii_case(&nm)))
        else {
            if find(bone).is_none() {
                diags.push(unknown(bone, &format!("in `$joint{which}`")));
                bad = true;
            }
            continue;
        };
        match *which {
            "inertia" => target.inertia = *v,
            "damping" => target.damping = *v,
            "rotdamping" => target.rotdamping = *v,
            _ => target.mass_bias = *v,
        }
    }
    if bad {
        return Err(Failed);
    }

    // masses
    let total_mass = if set.automass {
        let mut m = 0.0;
        for s in &solids {
            let (density, thickness) = match DENSITIES
                .iter()
                .find(|d| d.0.eq_ignore_ascii_case(&s.surface_prop))
            {
                Some(d) => (d.1, d.2),
                None => {
                    diags.push(
                        Diagnostic::new(
                            Code::PhysicsUnknownDensity,
                            format!(
                                "`$automass`: mdlc does not know the density of surface property `{}`; 2000 kg/m³ is used",
                                s.surface_prop
                            ),
                            c.span,
                            "this collision model",
                        )
                        .with_note("Valve's compiler reads it from the game's surfaceproperties; give `$mass` to set the mass yourself"),
                    );
                    (2000.0, 0.0)
                }
            };
            m += if thickness > 0.0 {
                s.area * thickness * CUBIC_METRES_PER_CUBIC_INCH * density
            } else {
                s.volume * CUBIC_METRES_PER_CUBIC_INCH * density
            };
        }
        m as f32
    } else {
        set.total_mass
    };
    let total_volume = {
        let v: f64 = solids.iter().map(|s| s.volume * s.mass_bias as f64).sum();
        if v <= 0.0 {
            1.0
        } else {
            v
        }
    };
    for s in &mut solids {
        let m = ((s.volume * s.mass_bias as f64) / total_volume * total_mass as f64) as f32;
        s.mass = m.max(1.0);
    }

    // ragdoll constraints: a constraint on a bone without a solid applies to its nearest
    // ancestor with one
    let index_of = |name: &str, solids: &[PhysSolid]| {
        solids
            .iter()
            .position(|s| s.name.eq_ignore_ascii_case(name))
    };
    let mut axes: Vec<[(f32, f32, f32); 3]> = vec![[(0.0, 0.0, 0.0); 3]; solids.len()];
    // the SDK's list is prepended, so the first constraint written for an axis wins
    for k in set.constraints.iter().rev() {
        if find(k.bone).is_none() {
            diags.push(unknown(k.bone, "in `$jointconstrain`"));
            bad = true;
            continue;
        }
        let Some(i) =
            fix_parent(Some(k.bone.value.clone()), &solids).and_then(|nm| index_of(&nm, &solids))
        else {
            diags.push(Diagnostic::new(
                Code::PhysicsUnknownBone,
                format!(
                    "`{}` in `$jointconstrain` has no solid: no triangle of the collision mesh is weighted to it or to a bone above it",
                    k.bone.value
                ),
                k.bone.span.span(),
                "no solid",
            ));
            bad = true;
            continue;
        };
        if solids[i].parent.is_none() && !solids[i].name.eq_ignore_ascii_case(&set.root) {
            diags.push(Diagnostic::new(
                Code::PhysicsUnknownBone,
                format!(
                    "`{}` in `$jointconstrain` is the ragdoll's root solid, which has no parent to turn against",
                    k.bone.value
                ),
                k.bone.span.span(),
                "the root",
            ));
            bad = true;
            continue;
        }
        axes[i][k.axis] = k.limits;
    }
    let mut pairs = Vec::new();
    for (a, b) in &set.pairs {
        for s in [a, b] {
            if find(s).is_none() {
                diags.push(unknown(s, "in `$jointcollide`"));
                bad = true;
            }
        }
        pairs.push((a, b));
    }
    if bad {
        return Err(Failed);
    }

    // the text, as `CollisionModel_Write` prints it
    let mut t = String::new();
    let f = |x: f32| format!("{x:.6}");
    for (i, s) in solids.iter().enumerate() {
        t += "solid {\n";
        t += &format!("\"index\" \"{i}\"\n");
        t += &format!("\"name\" \"{}\"\n", s.name);
        if let Some(p) = &s.parent {
            t += &format!("\"parent\" \"{p}\"\n");
        }
        t += &format!("\"mass\" \"{}\"\n", f(s.mass));
        t += &format!("\"surfaceprop\" \"{}\"\n", s.surface_prop);
        t += &format!("\"damping\" \"{}\"\n", f(s.damping));
        t += &format!("\"rotdamping\" \"{}\"\n", f(s.rotdamping));
        if s.drag != -1.0 {
            t += &format!("\"drag\" \"{}\"\n", f(s.drag));
        }
        t += &format!("\"inertia\" \"{}\"\n", f(s.inertia));
        t += &format!("\"volume\" \"{}\"\n", f(s.volume as f32));
        if s.mass_bias != 1.0 {
            t += &format!("\"massbias\" \"{}\"\n", f(s.mass_bias));
        }
        t += "}\n";
    }
    for (i, s) in solids.iter().enumerate() {
        let Some(p) = s.parent.as_ref().and_then(|p| index_of(p, &solids)) else {
            continue;
        };
        if p == i {
            continue;
        }
        t += "ragdollconstraint {\n";
        t += &format!("\"parent\" \"{p}\"\n\"child\" \"{i}\"\n");
        for (k, axis) in ["x", "y", "z"].iter().enumerate() {
            let (mn, mx, fr) = axes[i][k];
            t += &format!(
                "\"{axis}min\" \"{}\"\n\"{axis}max\" \"{}\"\n\"{axis}friction\" \"{}\"\n",
                f(mn),
                f(mx),
                f(fr)
            );
        }
        t += "}\n";
    }
    if set.no_self {
        t += "collisionrules {\n\"selfcollisions\" \"0\"\n}\n";
    } else if !pairs.is_empty() {
        t += "collisionrules {\n";
        // the SDK prepends each pair
        for (a, b) in pairs.iter().rev() {
            let sa = fix_solid(&a.value, skel, &solids);
            let sb = fix_solid(&b.value, skel, &solids);
            match (sa, sb) {
                (Some(x), Some(y)) if x != y => {
                    t += &format!("\"collisionpair\" \"{x},{y}\"\n");
                }
                _ => {}
            }
        }
        t += "}\n";
    }
    if let Some([mn, mx, tin, thold, tout]) = set.animated_friction {
        t += "animatedfriction {\n";
        t += &format!("\"animfrictionmin\" \"{}\"\n", f(mn));
        t += &format!("\"animfrictionmax\" \"{}\"\n", f(mx));
        t += &format!("\"animfrictiontimein\" \"{}\"\n", f(tin));
        t += &format!("\"animfrictiontimeout\" \"{}\"\n", f(tout));
        t += &format!("\"animfrictiontimehold\" \"{}\"\n", f(thold));
        t += "}\n";
    }
    t += "editparams {\n";
    t += &format!("\"rootname\" \"{}\"\n", set.root);
    t += &format!("\"totalmass\" \"{}\"\n", f(total_mass));
    if set.concave {
        t += "\"concave\" \"1\"\n";
    }
    for (p, ch) in &set.merge {
        t += &format!("\"jointmerge\" \"{},{}\"\n", p.value, ch.value);
    }
    t += "}\n";
    t += &model.collision_text;

    // each bone's physics bone: its solid, or its nearest ancestor's, or 0
    let mut bone_physics = vec![0i32; bones.len()];
    for (i, slot) in bone_physics.iter_mut().enumerate() {
        let mut cur = Some(i);
        while let Some(k) = cur {
            if let Some(s) = index_of(&bones[k].name, &solids) {
                *slot = s as i32;
                break;
            }
            cur = bones[k].parent;
        }
    }
    Ok(Some(PhysPlan {
        solids,
        prop_bounds,
        text: t,
        total_mass,
        bone_physics,
    }))
}

/// The solid a bone's name stands for in `$jointcollide`: its own or its nearest ancestor's.
fn fix_solid(name: &str, skel: &crate::ir::Skeleton, solids: &[PhysSolid]) -> Option<usize> {
    let mut cur = skel.find(name);
    for _ in 0..=skel.len() {
        let b = cur?;
        let nm = &skel.bones[b.index()].name;
        if let Some(i) = solids.iter().position(|s| s.name.eq_ignore_ascii_case(nm)) {
            return Some(i);
        }
        cur = skel.bones[b.index()].parent;
    }
    None
}

/// Valve's `SortCollisionList`: swap a child with its parent while the parent comes later,
/// until nothing moves.
fn sort_parents_first(solids: &mut [PhysSolid]) {
    let n = solids.len();
    for _ in 0..n * n + 1 {
        let mut swapped = false;
        for i in 0..n {
            let Some(parent) = solids[i].parent.clone() else {
                continue;
            };
            let j = (0..n).find(|&j| j != i && solids[j].name.eq_ignore_ascii_case(&parent));
            if let Some(j) = j.filter(|&j| j > i) {
                solids.swap(i, j);
                swapped = true;
            }
        }
        if !swapped {
            break;
        }
    }
}

/// The points of each connected part of the mesh, vertices joined when they lie within
/// `weld` inches of each other (the same position when 0) and their normals are within
/// `angle` degrees (`BuildVertWeldTable`, `MarkConnectedMeshes`; `$weldposition`,
/// `$weldnormal`), in the order of each part's first vertex.
fn connected_parts(c: &Collision, weld: f32, angle: f32) -> Vec<Part> {
    let cos = angle.to_radians().cos();
    // unique vertices by position, normal and uv, in first-use order
    let mut verts: Vec<([f32; 3], [f32; 3])> = Vec::new();
    let mut key_of: std::collections::HashMap<[u32; 8], usize> = std::collections::HashMap::new();
    let mut tri_verts: Vec<[usize; 3]> = Vec::with_capacity(c.mesh.triangles.len());
    for t in &c.mesh.triangles {
        let mut ids = [0; 3];
        for (slot, k) in ids.iter_mut().zip(&c.mesh.corners_of(t)) {
            let key = [
                k.pos[0].to_bits(),
                k.pos[1].to_bits(),
                k.pos[2].to_bits(),
                k.normal[0].to_bits(),
                k.normal[1].to_bits(),
                k.normal[2].to_bits(),
                k.uv[0].to_bits(),
                k.uv[1].to_bits(),
            ];
            *slot = *key_of.entry(key).or_insert_with(|| {
                verts.push((k.pos, k.normal));
                verts.len() - 1
            });
        }
        tri_verts.push(ids);
    }
    // weld: the first earlier vertex close enough with a normal close enough; a grid of cells
    // `weld` wide (or exact positions) finds the candidates
    let cell = |p: [f32; 3]| -> [i64; 3] {
        if weld > 0.0 {
            p.map(|c| (c / weld).floor() as i64)
        } else {
            p.map(|c| c.to_bits() as i64)
        }
    };
    let mut grid: std::collections::HashMap<[i64; 3], Vec<usize>> =
        std::collections::HashMap::new();
    let mut weld_to: Vec<usize> = Vec::with_capacity(verts.len());
    let near = |a: [f32; 3], b: [f32; 3]| {
        if weld > 0.0 {
            let d = math::sub(a, b);
            math::dot(d, d) <= weld * weld
        } else {
            a == b
        }
    };
    for (i, (p, nrm)) in verts.iter().enumerate() {
        let home = cell(*p);
        let mut found = None;
        let span: &[i64] = if weld > 0.0 { &[-1, 0, 1] } else { &[0] };
        'look: for dx in span {
            for dy in span {
                for dz in span {
                    let key = [home[0] + dx, home[1] + dy, home[2] + dz];
                    if let Some(list) = grid.get(&key) {
                        for &j in list {
                            if weld_to[j] == j
                                && near(verts[j].0, *p)
                                && math::dot(verts[j].1, *nrm) > cos
                                && found.is_none_or(|f| j < f)
                            {
                                found = Some(j);
                            }
                        }
                    }
                    if found.is_some() && weld == 0.0 {
                        break 'look;
                    }
                }
            }
        }
        grid.entry(home).or_default().push(i);
        weld_to.push(found.unwrap_or(i));
    }
    // union-find over the welded vertices of each triangle
    let mut up: Vec<usize> = (0..verts.len()).collect();
    fn root(up: &mut [usize], mut x: usize) -> usize {
        while up[x] != x {
            up[x] = up[up[x]];
            x = up[x];
        }
        x
    }
    for t in &tri_verts {
        for &v in &t[1..] {
            let a = root(&mut up, weld_to[t[0]]);
            let b = root(&mut up, weld_to[v]);
            if a != b {
                let (lo, hi) = (a.min(b), a.max(b));
                up[hi] = lo;
            }
        }
    }
    let mut part_of: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut parts: Vec<Part> = Vec::new();
    for i in 0..verts.len() {
        if weld_to[i] != i {
            continue;
        }
        let r = root(&mut up, i);
        let k = *part_of.entry(r).or_insert_with(|| {
            parts.push(Part::default());
            parts.len() - 1
        });
        parts[k].points.push(verts[i].0);
    }
    for t in &tri_verts {
        let r = root(&mut up, weld_to[t[0]]);
        if let Some(&k) = part_of.get(&r) {
            parts[k].tris.push(t.map(|v| verts[v].0));
        }
    }
    parts
}

/// A connected part of a concave collision mesh: its points and triangles.
#[derive(Default)]
struct Part {
    points: Vec<[f32; 3]>,
    tris: Vec<[[f32; 3]; 3]>,
}

/// Whether all points lie within `epsilon` of the plane of the first three that span one
/// (the SDK's `IsApproximatelyPlanar`).
fn approximately_planar(p: &[[f64; 3]], epsilon: f64) -> bool {
    if p.len() < 4 {
        return true;
    }
    let mut normal = None;
    'search: for i in 1..p.len() {
        for j in i + 1..p.len() {
            let n = cross(sub(p[i], p[0]), sub(p[j], p[0]));
            let l = dot(n, n).sqrt();
            if l > 0.001 {
                normal = Some(super::phy_write::scale(n, 1.0 / l));
                break 'search;
            }
        }
    }
    let Some(n) = normal else {
        return true;
    };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for q in p {
        let d = dot(n, *q);
        lo = lo.min(d);
        hi = hi.max(d);
        if hi - lo > epsilon {
            return false;
        }
    }
    true
}
