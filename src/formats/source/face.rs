//! The face records of the `.mdl` decided from the IR's [`Face`]: flex descriptions,
//! controllers, controller UI, rules as operation stacks, mouths and eyeballs
//! (`public/studio.h` of source-sdk-2013: `mstudioflexdesc_t`, `mstudioflexcontroller_t`,
//! `mstudioflexcontrollerui_t`, `mstudioflexrule_t`/`mstudioflexop_t`, `mstudiomouth_t`,
//! `mstudioeyeball_t`; the MDL v48 seed's flex tables).

use crate::ir::face::{Eyeball, Face, FlexOp, Vta};

use super::math::{self, M34};

/// `mstudioflexcontroller_t`: type (group), name, range; `localToGlobal` is -1 in the file
/// (the engine fills it at load).
pub struct PController {
    pub group: String,
    pub name: String,
    pub min: f32,
    pub max: f32,
}

/// `mstudioflexcontrollerui_t`: a slider of the face poser. `left`/`right` are controller
/// indices: a stereo record drives a `right_X`/`left_X` pair (index0 = left, index1 = right,
/// as the struct's comment in `studio.h` says), a plain one a single controller (index0).
#[derive(Clone, Debug, PartialEq)]
pub struct PFlexUi {
    pub name: String,
    pub index0: usize,
    pub index1: Option<usize>,
    pub stereo: bool,
}

/// `mstudioflexrule_t` and its `mstudioflexop_t` (op code, payload as stored: an index or the
/// bits of a float).
pub struct PRule {
    pub flex: i32,
    pub ops: Vec<(i32, i32)>,
}

/// `mstudiomouth_t`.
pub struct PMouth {
    pub bone: i32,
    pub forward: [f32; 3],
    pub flexdesc: i32,
}

/// `mstudioeyeball_t` (172 bytes), values in the eyeball's bone space.
#[derive(Clone, Debug, PartialEq)]
pub struct PEyeball {
    pub bone: i32,
    pub org: [f32; 3],
    pub zoffset: f32,
    pub radius: f32,
    pub up: [f32; 3],
    pub forward: [f32; 3],
    pub iris_scale: f32,
    pub upper_flexdesc: [i32; 3],
    pub lower_flexdesc: [i32; 3],
    pub upper_target: [f32; 3],
    pub lower_target: [f32; 3],
    pub upper_lid_flexdesc: i32,
    pub lower_lid_flexdesc: i32,
}

/// The model-wide face records.
#[derive(Default)]
pub struct PFace {
    pub flex_descs: Vec<String>,
    pub controllers: Vec<PController>,
    pub ui: Vec<PFlexUi>,
    pub rules: Vec<PRule>,
    pub mouths: Vec<PMouth>,
}

/// Op codes (`studio.h`: STUDIO_CONST 1 … STUDIO_MIN 14).
pub fn op_code(op: FlexOp) -> (i32, i32) {
    match op {
        FlexOp::Const(v) => (1, v.to_bits() as i32),
        FlexOp::Fetch1(i) => (2, i as i32),
        FlexOp::Fetch2(i) => (3, i as i32),
        FlexOp::Add => (4, 0),
        FlexOp::Sub => (5, 0),
        FlexOp::Mul => (6, 0),
        FlexOp::Div => (7, 0),
        FlexOp::Neg => (8, 0),
        FlexOp::Max => (13, 0),
        FlexOp::Min => (14, 0),
    }
}

pub fn prepare_face(face: &Face, out_bone: &dyn Fn(crate::ir::skeleton::BoneId) -> usize) -> PFace {
    let controllers: Vec<PController> = face
        .controllers
        .iter()
        .map(|c| PController {
            group: c.group.clone(),
            name: c.name.clone(),
            min: c.min,
            max: c.max,
        })
        .collect();
    let ui = ui_records(&controllers);
    PFace {
        flex_descs: face.flex_descs.clone(),
        ui,
        controllers,
        rules: face
            .rules
            .iter()
            .map(|r| PRule {
                flex: r.flex as i32,
                ops: r.ops.iter().map(|&o| op_code(o)).collect(),
            })
            .collect(),
        mouths: face
            .mouths
            .iter()
            .map(|m| PMouth {
                bone: out_bone(m.bone) as i32,
                forward: m.forward,
                flexdesc: m.flex as i32,
            })
            .collect(),
    }
}

/// The controller UI records a project without `$flexcontrollerui` gets, as Valve's later
/// compilers write them (matched against `mapbase-mp-male01`'s build: 54 controllers give 38
/// records): controllers in order; `right_X` with a `left_X` (or `left_X` with a `right_X`)
/// become one stereo record `X` where the first of the two stands; every other controller a
/// record of its own name.
pub fn ui_records(controllers: &[PController]) -> Vec<PFlexUi> {
    let mut used = vec![false; controllers.len()];
    let mut out = Vec::new();
    for (i, c) in controllers.iter().enumerate() {
        if used.get(i).copied().unwrap_or(true) {
            continue;
        }
        used[i] = true;
        let lower = c.name.to_ascii_lowercase();
        let pair = [("right_", "left_"), ("left_", "right_")]
            .iter()
            .find_map(|(this, other)| {
                let rest = lower.strip_prefix(this)?;
                let want = format!("{other}{rest}");
                let j = controllers
                    .iter()
                    .enumerate()
                    .position(|(j, o)| !used[j] && o.name.eq_ignore_ascii_case(&want))?;
                Some((j, *this == "right_", c.name.get(this.len()..)?.to_string()))
            });
        match pair {
            Some((j, this_is_right, name)) => {
                used[j] = true;
                let (left, right) = if this_is_right { (j, i) } else { (i, j) };
                out.push(PFlexUi {
                    name,
                    index0: left,
                    index1: Some(right),
                    stereo: true,
                });
            }
            None => out.push(PFlexUi {
                name: c.name.clone(),
                index0: i,
                index1: None,
                stereo: false,
            }),
        }
    }
    out
}

/// An eyeball moved into its bone's space as Valve's `Option_Eyeball` does: the centre by the
/// inverse of the bone's bind pose, up (0, 0, 1) and forward by its inverse rotation. The 2006
/// SDK rotates (0, 1, 0) for forward with a "FIXME: this is backwards"; Valve's later build of
/// `mapbase-mp-male01` stores the rotation of (0, −1, 0), which mdlc writes.
pub fn eyeball(e: &Eyeball, bone: usize, world: &M34) -> PEyeball {
    let inv = math::invert(world);
    let lid = |l: &Option<crate::ir::face::Lid>| match l {
        Some(l) => (l.descs.map(|d| d as i32), l.targets, l.lid as i32),
        None => ([0; 3], [0.0; 3], 0),
    };
    let (ud, ut, ul) = lid(&e.upper);
    let (ld, lt, ll) = lid(&e.lower);
    PEyeball {
        bone: bone as i32,
        org: math::apply(&inv, e.origin),
        zoffset: e.zoffset,
        radius: e.radius,
        up: math::rotate(&inv, [0.0, 0.0, 1.0]),
        forward: math::rotate(&inv, [0.0, -1.0, 0.0]),
        iris_scale: e.iris_scale,
        upper_flexdesc: ud,
        lower_flexdesc: ld,
        upper_target: ut,
        lower_target: lt,
        upper_lid_flexdesc: ul,
        lower_lid_flexdesc: ll,
    }
}

// --- vertex animation ----------------------------------------------------------------------------

/// `mstudiovertanim_t` (16 bytes): the mesh-local vertex, its speed and side (×255), and the
/// position and normal deltas as IEEE half floats, which the engine converts when the header
/// lacks VERT_ANIM_FIXED_POINT_SCALE (`studio.h`: "force fp16 data into this structure for
/// writing to file in legacy format").
#[derive(Clone, Debug, PartialEq)]
pub struct PVertAnim {
    pub index: u16,
    pub speed: u8,
    pub side: u8,
    pub delta: [u16; 3],
    pub ndelta: [u16; 3],
}

/// `mstudioflex_t` of one mesh with its vertex animations (sorted by vertex).
#[derive(Clone, Debug, PartialEq)]
pub struct PFlex {
    pub flexdesc: i32,
    pub targets: [f32; 4],
    pub flexpair: i32,
    pub anims: Vec<PVertAnim>,
}

/// f32 → half, as Valve's `float16::ConvertFloatTo16bits` (`mathlib/compressed_vector.h`):
/// the mantissa is truncated, magnitudes above 65504 clamp to it, float denormals and NaN give
/// 0, small values become half denormals.
pub fn half(x: f32) -> u16 {
    let x = x.clamp(-65504.0, 65504.0);
    let bits = if x.is_nan() { 0 } else { x.to_bits() };
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0 {
        return sign; // zero and float denormals
    }
    let e = exp - 127;
    if e < -14 {
        let k = (-14 - e) as u32;
        if k > 0 && k < 11 {
            return sign | ((1u32 << (10 - k)) + (mant >> (13 + k))) as u16;
        }
        return sign;
    }
    if e > 15 {
        return sign | 0x7bff;
    }
    sign | (((e + 15) as u16) << 10) | (mant >> 13) as u16
}

/// Half → f32 (for the reader and the tests).
pub fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let mant = f32::from(h & 0x3ff);
    let v = match exp {
        0 => mant * (2f32).powi(-24),
        31 => f32::INFINITY,
        _ => (1.0 + mant / 1024.0) * (2f32).powi(exp - 15),
    };
    sign * v
}

/// What one model's vertex animation made: per mesh its flexes, and how many vertices move.
pub struct ModelFlexes {
    pub per_mesh: Vec<Vec<PFlex>>,
    pub moved: usize,
    /// Per VTA used (index into `Face::vtas`): moving vertices that matched no mesh vertex.
    pub unmatched: Vec<(usize, usize)>,
}

/// Valve's `RemapVertexAnimations` (2006 SDK `simplify.cpp`) for the body part mesh `mesh`,
/// whose output meshes are `meshes` (their vertices final; the default shape, if any, moves
/// them here):
///
/// * each mesh vertex takes the base-shape vertex nearest to it (squared distance under 0.15;
///   on a tie the one whose normal agrees best); a VTA vertex may serve several mesh vertices
///   (vertices split along seams);
/// * the `defaultflex` shape replaces the position and normal of the vertices it lists, and the
///   base shape's with them;
/// * a key's deltas are its shape minus the base shape, kept when the position moves more than
///   0.001 or the normal more than √0.001; `split` fades a shape out across x = ±split
///   (smoothstep); a `flexpair` key keeps full size and stores the fade as `side`; a DMX
///   mesh's key stores each vertex's balance as `side`;
/// * `speed` is a delta's length over the key's longest times `decay` (1 when decay is 0).
pub fn vertex_anims(
    face: &Face,
    mesh: crate::ir::model::MeshId,
    meshes: &mut [super::model::PMesh],
    static_prop: bool,
    repose: Option<&[Option<M34>]>,
) -> ModelFlexes {
    let keys: Vec<(usize, &crate::ir::face::FlexKey)> = face
        .keys
        .iter()
        .enumerate()
        .filter(|(_, k)| k.mesh == mesh)
        .collect();
    let mut out = ModelFlexes {
        per_mesh: vec![Vec::new(); meshes.len()],
        moved: 0,
        unmatched: Vec::new(),
    };
    if keys.is_empty() {
        return out;
    }
    let place = |p: [f32; 3]| if static_prop { math::rot_z90(p) } else { p };
    // A DMX mesh's shapes move with their mesh when it is re-posed onto the model's bones
    // (`prepare::repose_of`): each vertex through its links' matrices, the normal (and so
    // the normal delta) turned, not normalised. A VTA's shapes are matched as written.
    let src = |vta: &Vta, id: u32, p: [f32; 3], n: [f32; 3]| -> ([f32; 3], [f32; 3]) {
        let (Some(r), Some(links)) = (
            repose,
            vta.dmx.as_ref().and_then(|d| d.links.get(id as usize)),
        ) else {
            return (p, n);
        };
        if links
            .iter()
            .all(|(b, _)| r.get(b.index()).is_none_or(|t| t.is_none()))
        {
            return (p, n);
        }
        let total: f32 = links.iter().map(|l| l.1).sum();
        let total = if total > 0.0 { total } else { 1.0 };
        let (mut op, mut on) = ([0.0f32; 3], [0.0f32; 3]);
        for &(b, w) in links {
            let (tp, tn) = match r.get(b.index()).copied().flatten() {
                Some(t) => (math::apply(&t, p), math::rotate(&t, n)),
                None => (p, n),
            };
            for i in 0..3 {
                op[i] += w / total * tp[i];
                on[i] += w / total * tn[i];
            }
        }
        (op, on)
    };
    // every vertex of the model: (mesh, local index)
    let mut owner: Vec<(usize, usize)> = Vec::new();
    for (mi, m) in meshes.iter().enumerate() {
        for vi in 0..m.vertices.len() {
            owner.push((mi, vi));
        }
    }
    // per VTA used: base positions/normals by VTA vertex id, and the mesh vertices of each id
    /// A position and a normal.
    type PosNormal = ([f32; 3], [f32; 3]);
    struct Mapped {
        base: std::collections::HashMap<u32, PosNormal>,
        map: std::collections::HashMap<u32, Vec<usize>>,
        /// Per VTA vertex no mesh vertex took: the taken ones at exactly its base position
        /// (an exporter that writes one VTA vertex per triangle corner repeats each vertex).
        twins: std::collections::HashMap<u32, Vec<u32>>,
    }
    let mut mapped: std::collections::HashMap<usize, Mapped> = Default::default();
    for &(_, k) in &keys {
        if mapped.contains_key(&k.vta) {
            continue;
        }
        let Some(base) = face.vtas.get(k.vta).and_then(|v| v.base()) else {
            continue;
        };
        let Some(file) = face.vtas.get(k.vta) else {
            continue;
        };
        let base_list: Vec<(u32, [f32; 3], [f32; 3])> = base
            .vertices
            .iter()
            .map(|&(i, p, n)| {
                let (p, n) = src(file, i, p, n);
                (i, place(p), place(n))
            })
            .collect();
        // a grid of cell √0.15 finds the candidates of each mesh vertex
        const R2: f32 = 0.15;
        let cell = R2.sqrt();
        let key_of = |p: [f32; 3]| p.map(|x| (x / cell).floor() as i64);
        let mut grid: std::collections::HashMap<[i64; 3], Vec<usize>> = Default::default();
        for (j, v) in base_list.iter().enumerate() {
            grid.entry(key_of(v.1)).or_default().push(j);
        }
        let mut map: std::collections::HashMap<u32, Vec<usize>> = Default::default();
        for (k_idx, &(mi, vi)) in owner.iter().enumerate() {
            let Some(v) = meshes.get(mi).and_then(|m| m.vertices.get(vi)) else {
                continue;
            };
            let c = key_of(v.pos);
            let mut best: Option<(f32, f32, usize)> = None;
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let Some(list) = grid.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else {
                            continue;
                        };
                        for &j in list {
                            let b = &base_list[j];
                            let d = math::sub(v.pos, b.1);
                            let dist = math::dot(d, d);
                            if dist >= R2 {
                                continue;
                            }
                            let dot = math::dot(v.normal, b.2);
                            let better = match best {
                                None => true,
                                Some((bd, bdot, bj)) => {
                                    dist < bd
                                        || (dist == bd && (dot > bdot || (dot == bdot && j < bj)))
                                }
                            };
                            if better {
                                best = Some((dist, dot, j));
                            }
                        }
                    }
                }
            }
            if let Some((_, _, j)) = best {
                map.entry(base_list[j].0).or_default().push(k_idx);
            }
        }
        let mut at: std::collections::HashMap<[u32; 3], Vec<u32>> = Default::default();
        for &(i, p, _) in &base_list {
            if map.contains_key(&i) {
                at.entry(p.map(f32::to_bits)).or_default().push(i);
            }
        }
        let twins = base_list
            .iter()
            .filter(|(i, _, _)| !map.contains_key(i))
            .filter_map(|&(i, p, _)| at.get(&p.map(f32::to_bits)).map(|t| (i, t.clone())))
            .collect();
        let base = base_list.iter().map(|&(i, p, n)| (i, (p, n))).collect();
        mapped.insert(k.vta, Mapped { base, map, twins });
    }
    // the default shape moves the mesh and the base shape
    if let Some(dk) = face
        .default_key
        .and_then(|i| face.keys.get(i))
        .filter(|k| k.mesh == mesh)
    {
        let shape = face.vtas.get(dk.vta).and_then(|v| v.shape(dk.frame));
        let file = face.vtas.get(dk.vta);
        if let (Some(shape), Some(m), Some(file)) = (
            shape.filter(|_| dk.frame != 0),
            mapped.get_mut(&dk.vta),
            file,
        ) {
            for &(id, p, n) in &shape.vertices {
                let (p, n) = src(file, id, p, n);
                let (p, n) = (place(p), place(n));
                let Some(targets) = m.map.get(&id) else {
                    continue;
                };
                for &k in targets {
                    if let Some(&(mi, vi)) = owner.get(k) {
                        if let Some(v) = meshes.get_mut(mi).and_then(|mm| mm.vertices.get_mut(vi)) {
                            v.pos = p;
                            v.normal = n;
                        }
                    }
                }
                m.base.insert(id, (p, n));
            }
        }
    }
    let mut moved = vec![false; owner.len()];
    let mut unmatched: std::collections::HashMap<usize, std::collections::HashSet<u32>> =
        Default::default();
    for &(_, key) in &keys {
        let (Some(vta), Some(m)) = (face.vtas.get(key.vta), mapped.get(&key.vta)) else {
            continue;
        };
        let Some(shape) = vta.shape(key.frame).filter(|_| key.frame != 0) else {
            continue;
        };
        let dmx = vta.dmx.is_some();
        // (model vertex, delta, normal delta, side)
        let mut dest: Vec<(usize, [f32; 3], [f32; 3], f32)> = Vec::new();
        // the shape's vertices by id, made when a twin is looked up
        let mut by_id: Option<std::collections::HashMap<u32, PosNormal>> = None;
        for &(id, p, n) in &shape.vertices {
            let Some(&(bp, bn)) = m.base.get(&id) else {
                continue;
            };
            let x = p[0];
            let (p, n) = src(vta, id, p, n);
            let (p, n) = (place(p), place(n));
            let split = key.split;
            let mut scale = 1.0f32;
            if split > 0.0 {
                scale = if x > split {
                    0.0
                } else if x < -split {
                    1.0
                } else {
                    let t = (split - x) / (2.0 * split);
                    3.0 * t * t - 2.0 * t * t * t
                };
            } else if split < 0.0 {
                scale = if x < split {
                    0.0
                } else if x > -split {
                    1.0
                } else {
                    let t = (split - x) / (2.0 * split);
                    3.0 * t * t - 2.0 * t * t * t
                };
            }
            let side = if key.balance_side {
                // a DMX shape: the vertex's balance (Valve's build of alastor_rel.qc stores
                // 255 × balance, truncated, for stereo and plain shapes alike)
                vta.dmx
                    .as_ref()
                    .and_then(|d| d.balance.get(id as usize))
                    .copied()
                    .unwrap_or(0.5)
                    .clamp(0.0, 1.0)
            } else if key.flex_pair != 0 {
                let s = 1.0 - scale;
                scale = 1.0;
                s
            } else {
                0.0
            };
            let delta = math::sub(p, bp);
            let ndelta = math::sub(n, bn);
            let moves =
                math::dot(delta, delta) > 0.001 * 0.001 || math::dot(ndelta, ndelta) > 0.001;
            if !(scale > 0.0 && moves) {
                continue;
            }
            let Some(targets) = m.map.get(&id) else {
                // Its motion is not lost when a taken twin (same base position) moves the same
                // way in this shape: the mesh vertex gets it from the twin.
                let same = |t: &u32| {
                    let twin = by_id.get_or_insert_with(|| {
                        shape
                            .vertices
                            .iter()
                            .map(|&(i, p, n)| {
                                let (p, n) = src(vta, i, p, n);
                                (i, (place(p), place(n)))
                            })
                            .collect()
                    });
                    let (tp, tn) = twin.get(t).copied().unwrap_or_else(|| {
                        m.base
                            .get(t)
                            .copied()
                            .unwrap_or(([f32::NAN; 3], [f32::NAN; 3]))
                    });
                    let (dp, dn) = (math::sub(tp, p), math::sub(tn, n));
                    // A DMX mesh gives normals (and normal deltas) per corner; the weld merges
                    // corners whose normals nearly agree, keeping one normal delta. Only a lost
                    // position motion counts there.
                    math::dot(dp, dp) <= 1e-12 && (dmx || math::dot(dn, dn) <= 1e-12)
                };
                if !m.twins.get(&id).is_some_and(|t| t.iter().any(same)) {
                    unmatched.entry(key.vta).or_default().insert(id);
                }
                continue;
            };
            for &k in targets {
                dest.push((
                    k,
                    math::scale(delta, scale),
                    math::scale(ndelta, scale),
                    side,
                ));
                if let Some(mv) = moved.get_mut(k) {
                    *mv = true;
                }
            }
        }
        let longest = dest
            .iter()
            .map(|d| math::dot(d.1, d.1).sqrt())
            .fold(0.0f32, f32::max);
        let longest = if longest == 0.0 { 0.01 } else { longest };
        let mut per_mesh: Vec<Vec<PVertAnim>> = vec![Vec::new(); meshes.len()];
        for (k, delta, ndelta, side) in dest {
            let Some(&(mi, vi)) = owner.get(k) else {
                continue;
            };
            let speed = if key.decay == 0.0 {
                1.0
            } else {
                (math::dot(delta, delta).sqrt() / (longest * key.decay)).clamp(0.0, 1.0)
            };
            if let Some(list) = per_mesh.get_mut(mi) {
                list.push(PVertAnim {
                    index: vi as u16,
                    speed: (255.0 * speed) as u8,
                    side: (255.0 * side) as u8,
                    delta: delta.map(half),
                    ndelta: ndelta.map(half),
                });
            }
        }
        for (mi, mut anims) in per_mesh.into_iter().enumerate() {
            if anims.is_empty() {
                continue;
            }
            anims.sort_by_key(|a| a.index);
            if let Some(list) = out.per_mesh.get_mut(mi) {
                list.push(PFlex {
                    flexdesc: key.flex_desc as i32,
                    targets: key.targets,
                    flexpair: key.flex_pair as i32,
                    anims,
                });
            }
        }
    }
    out.moved = moved.iter().filter(|&&m| m).count();
    let mut un: Vec<(usize, usize)> = unmatched.into_iter().map(|(v, s)| (v, s.len())).collect();
    un.sort_unstable();
    out.unmatched = un;
    out
}
