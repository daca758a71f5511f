//! The DMX `model` schema made into the IR pieces of an SMD ([`SmdModel`]).
//!
//! What is read (element and attribute names from source-sdk-2013 `public/movieobjects/`,
//! checked on files Blender Source Tools wrote and Valve's compiler built):
//! - the root's `model` (or, without one, `skeleton`): a `DmeModel` whose `children` are
//!   `DmeJoint`s and `DmeDag`s, each with a `transform` (`DmeTransform`: `position`, `orientation`
//!   quaternion, relative to the parent) and `children`. Every joint and dag becomes a bone, in
//!   depth-first order, with that transform as its rest pose, as Valve's compiler makes them
//!   (unused ones are left out later, as for an SMD's unused nodes);
//! - the joint numbering that vertex weights use: `jointList` (joints) where the model has one
//!   (later tools; no file here has one, so unverified), else `jointTransforms` (their
//!   transforms: `dmemodel.h` of source-sdk-2013 says their order is the joint index);
//! - a dag's `shape` (`DmeMesh`): its `bindState` (else `currentState`, else the first of
//!   `baseStates`), a `DmeVertexData` with per-corner index arrays (`positionsIndices`, …) into
//!   `positions`, `normals` and `textureCoordinates` (or the `position$0`, `normal$0`, `texcoord$0`
//!   names of later tools: taken as the same fields, though no file here has them, so unverified),
//!   `jointCount` weights and joint indices per position, and `flipVCoordinates`; and
//!   its `faceSets`, each a material (`DmeMaterial` `mtlName`) and `faces`, polygons of corner
//!   indices ended by −1;
//! - the root's `animationList`: the first `DmeChannelsClip` (`frameRate`, `timeFrame`
//!   `startTime`/`durationTime`, `channels` whose `toElement` is a joint's transform and whose
//!   `toAttribute` is `position` or `orientation`, with a log of times and values);
//! - a mesh's `deltaStates` (`DmeVertexDeltaData`: `positions`/`normals` deltas with their
//!   `…Indices` into the bind state's arrays), the bind state's `balance` (per position), and
//!   the root's `combinationOperator` `controls` (`DmeCombinationInputControl`: `stereo`,
//!   `rawControlNames`): made into [`MeshShapes`], laid out as a VTA's shapes. How they become
//!   flexes was read off Valve's build of `alastor_rel.qc` (issue 16's notes). `wrinkle` deltas
//!   and domination rules are not read (no file here has wrinkles; domination rules only
//!   shape the automatic rules mdlc does not make, `W0421`).

use std::collections::HashMap;

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Span};
use crate::ir::anim::{quat_euler, Animation, Pose, Shape};
use crate::ir::face::{MeshDelta, MeshShapes};
use crate::ir::mesh::{Corner, Mesh, Weight};
use crate::ir::skeleton::{Bone, BoneId, Skeleton};
use crate::smd::SmdModel;

use super::read::{Dmx, Element, Value};

/// A problem with the content of a DMX file (the container read fine).
fn bad(at: FileSpan, message: String) -> Diagnostic {
    Diagnostic::new(Code::DmxBadModel, message, at, "in this file").with_note(
        "mdlc reads the `model` format that Blender Source Tools and Valve's tools write",
    )
}

struct Doc<'a> {
    dmx: &'a Dmx,
}

impl<'a> Doc<'a> {
    fn el(&self, i: usize) -> Option<&'a Element> {
        self.dmx.elements.get(i)
    }

    fn child(&self, e: &Element, name: &str) -> Option<(usize, &'a Element)> {
        match e.get(name) {
            Some(Value::Element(Some(i))) => self.el(*i).map(|c| (*i, c)),
            _ => None,
        }
    }

    fn children(&self, e: &Element, name: &str) -> Vec<(usize, &'a Element)> {
        match e.get(name) {
            Some(Value::ElementArray(v)) => v
                .iter()
                .flatten()
                .filter_map(|&i| self.el(i).map(|c| (i, c)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn float(v: Option<&Value>) -> Option<f32> {
    match v? {
        Value::Float(f) | Value::Time(f) => Some(*f),
        Value::Int(i) => Some(*i as f32),
        _ => None,
    }
}

/// A time: seconds, or (older files, an `int` attribute) ticks of 1/10,000 s.
fn time(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Time(f) | Value::Float(f) => Some(f64::from(*f)),
        Value::Int(i) => Some(f64::from(*i) / 10_000.0),
        _ => None,
    }
}

fn pose_of(t: Option<&Element>) -> Pose {
    let pos = match t.and_then(|t| t.get("position")) {
        Some(Value::Vec3(p)) => *p,
        _ => [0.0; 3],
    };
    let q = match t.and_then(|t| t.get("orientation")) {
        Some(Value::Quat(q)) => *q,
        _ => [0.0, 0.0, 0.0, 1.0],
    };
    Pose {
        pos,
        rot: quat_euler(q),
    }
}

/// A rigid transform as a rotation quaternion and a translation (f64).
#[derive(Clone, Copy)]
struct Rigid {
    q: [f64; 4],
    t: [f64; 3],
}

impl Rigid {
    fn of(t: Option<&Element>) -> Rigid {
        let p = match t.and_then(|t| t.get("position")) {
            Some(Value::Vec3(p)) => p.map(f64::from),
            _ => [0.0; 3],
        };
        let q = match t.and_then(|t| t.get("orientation")) {
            Some(Value::Quat(q)) => {
                let q = q.map(f64::from);
                let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
                if n > 0.0 {
                    q.map(|c| c / n)
                } else {
                    [0.0, 0.0, 0.0, 1.0]
                }
            }
            _ => [0.0, 0.0, 0.0, 1.0],
        };
        Rigid { q, t: p }
    }

    fn is_identity(&self) -> bool {
        self.t == [0.0; 3] && (self.q[3].abs() - 1.0).abs() < 1e-12
    }

    fn rotate(&self, v: [f64; 3]) -> [f64; 3] {
        let [x, y, z, w] = self.q;
        // v + 2w(u×v) + 2u×(u×v), u = (x, y, z)
        let c1 = [
            y * v[2] - z * v[1],
            z * v[0] - x * v[2],
            x * v[1] - y * v[0],
        ];
        let c2 = [
            y * c1[2] - z * c1[1],
            z * c1[0] - x * c1[2],
            x * c1[1] - y * c1[0],
        ];
        [
            v[0] + 2.0 * (w * c1[0] + c2[0]),
            v[1] + 2.0 * (w * c1[1] + c2[1]),
            v[2] + 2.0 * (w * c1[2] + c2[2]),
        ]
    }

    /// `self` applied after `child` (a child's transform in its parent's space).
    fn then(&self, child: &Rigid) -> Rigid {
        let (a, b) = (self.q, child.q);
        let q = [
            a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
            a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
            a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
            a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
        ];
        let r = self.rotate(child.t);
        Rigid {
            q,
            t: [r[0] + self.t[0], r[1] + self.t[1], r[2] + self.t[2]],
        }
    }
}

struct Node {
    element: usize,
    transform: Option<usize>,
    parent: Option<usize>,
}

/// Makes the `model` content of `dmx` into an [`SmdModel`]; problems are pushed to `diags` at
/// `at` (the file's header line: a binary file has no lines to point into).
pub fn lower_dmx(
    dmx: &Dmx,
    file: FileId,
    at: Span,
    diags: &mut Vec<Diagnostic>,
) -> Option<SmdModel> {
    let at = at.in_file(file);
    let doc = Doc { dmx };
    let root = doc.el(0)?;
    let Some((_, model)) = doc
        .child(root, "model")
        .or_else(|| doc.child(root, "skeleton"))
    else {
        diags.push(bad(
            at,
            format!(
                "the root element (`{}`) has no `model` or `skeleton`: this DMX holds no model",
                root.ty
            ),
        ));
        return None;
    };

    // Bones: every joint and dag under the model, depth first.
    let mut nodes: Vec<Node> = Vec::new();
    let mut stack: Vec<(usize, Option<usize>)> = doc
        .children(model, "children")
        .into_iter()
        .rev()
        .map(|(i, _)| (i, None))
        .collect();
    let mut seen = vec![false; dmx.elements.len()];
    while let Some((i, parent)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let Some(e) = doc.el(i) else { continue };
        let me = nodes.len();
        nodes.push(Node {
            element: i,
            transform: doc.child(e, "transform").map(|(t, _)| t),
            parent,
        });
        for (c, _) in doc.children(e, "children").into_iter().rev() {
            stack.push((c, Some(me)));
        }
    }
    let bones: Vec<Bone> = nodes
        .iter()
        .map(|n| Bone {
            name: doc
                .el(n.element)
                .map(|e| e.name.clone())
                .unwrap_or_default(),
            parent: n.parent.map(|p| BoneId(p as u32)),
            rest: pose_of(n.transform.and_then(|t| doc.el(t))),
            span: at,
        })
        .collect();
    // (names compared without regard to case, as bones are; one pass, whatever the count)
    let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
    if let Some(b) = bones
        .iter()
        .find(|b| !names.insert(b.name.to_ascii_lowercase()))
    {
        diags.push(bad(at, format!("two joints are called `{}`", b.name)));
        return None;
    }

    // The numbering of `jointIndices`.
    let by_element: HashMap<usize, usize> = nodes
        .iter()
        .enumerate()
        .map(|(b, n)| (n.element, b))
        .collect();
    let by_transform: HashMap<usize, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(b, n)| n.transform.map(|t| (t, b)))
        .collect();
    let joint_bone: Vec<Option<usize>> = match model.get("jointList") {
        Some(Value::ElementArray(v)) => v
            .iter()
            .map(|j| j.and_then(|j| by_element.get(&j).copied()))
            .collect(),
        _ => match model.get("jointTransforms") {
            Some(Value::ElementArray(v)) => v
                .iter()
                .map(|t| t.and_then(|t| by_transform.get(&t).copied()))
                .collect(),
            _ => Vec::new(),
        },
    };

    // World transforms, for meshes under a moved dag.
    let mut world: Vec<Rigid> = Vec::with_capacity(nodes.len());
    for n in &nodes {
        let local = Rigid::of(n.transform.and_then(|t| doc.el(t)));
        let w = match n.parent {
            Some(p) => world[p].then(&local),
            None => local,
        };
        world.push(w);
    }

    let mut mesh = Mesh::default();
    let mut materials: HashMap<String, u32> = HashMap::new();
    let mut any_mesh = false;
    let mut shapes = ShapeAcc::default();
    for (b, n) in nodes.iter().enumerate() {
        let Some(e) = doc.el(n.element) else { continue };
        let Some((_, shape)) = doc.child(e, "shape") else {
            continue;
        };
        if !shape.ty.eq_ignore_ascii_case("DmeMesh") {
            continue;
        }
        any_mesh = true;
        let ctx = MeshCtx {
            doc: &doc,
            at,
            bone: b,
            joint_bone: &joint_bone,
            world: world[b],
        };
        if !ctx.add(shape, &mut mesh, &mut materials, &mut shapes, diags) {
            return None;
        }
    }

    let animation = match doc.child(root, "animationList") {
        Some((_, list)) if !any_mesh => animation(&doc, list, &bones, &by_transform, at, diags)?,
        _ => Animation {
            first_time: 0,
            num_frames: 1,
            num_bones: bones.len(),
            poses: bones.iter().map(|b| Some(b.rest)).collect(),
            present: vec![true],
        },
    };

    // Binary files hold any bit pattern: a value that is not a finite number is refused, as
    // in an SMD (`E0112`).
    let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
    let bad_bone = bones
        .iter()
        .find(|b| !finite(&b.rest.pos) || !finite(&b.rest.rot));
    let bad_corner = mesh
        .corners
        .iter()
        .any(|c| !finite(&c.pos) || !finite(&c.normal) || !finite(&c.uv));
    let bad_frame = animation
        .poses
        .iter()
        .flatten()
        .any(|p| !finite(&p.pos) || !finite(&p.rot));
    if let Some(b) = bad_bone {
        diags.push(bad(
            at,
            format!(
                "the joint `{}` has a transform that is not a finite number",
                b.name
            ),
        ));
        return None;
    }
    if bad_corner || bad_frame {
        let what = if bad_corner {
            "a vertex"
        } else {
            "an animation frame"
        };
        diags.push(bad(
            at,
            format!("{what} holds a value that is not a finite number"),
        ));
        return None;
    }
    Some(SmdModel {
        file,
        skeleton: Skeleton { bones },
        mesh: any_mesh.then_some(mesh),
        animation,
        flex: None,
        shapes: shapes.finish(&doc, root, at),
        negative_time: None,
    })
}

struct MeshCtx<'a, 'd> {
    doc: &'a Doc<'d>,
    at: FileSpan,
    /// The dag's bone: where a vertex without weights goes.
    bone: usize,
    joint_bone: &'a [Option<usize>],
    world: Rigid,
}

/// One of the vertex data's fields: its values and its per-corner indices.
fn field<'a, T>(
    data: &'a Element,
    names: &[&str],
    pick: impl Fn(&'a Value) -> Option<&'a [T]>,
) -> Option<(&'a [T], &'a [i32])> {
    for n in names {
        if let Some(values) = data.get(n).and_then(&pick) {
            let indices = match data.get(&format!("{n}Indices")) {
                Some(Value::IntArray(v)) => v.as_slice(),
                _ => &[],
            };
            return Some((values, indices));
        }
    }
    None
}

impl MeshCtx<'_, '_> {
    fn add(
        &self,
        shape: &Element,
        mesh: &mut Mesh,
        materials: &mut HashMap<String, u32>,
        shapes: &mut ShapeAcc,
        diags: &mut Vec<Diagnostic>,
    ) -> bool {
        let doc = self.doc;
        let data = doc
            .child(shape, "bindState")
            .or_else(|| doc.child(shape, "currentState"))
            .or_else(|| doc.children(shape, "baseStates").into_iter().next());
        let Some((_, data)) = data else {
            diags.push(bad(
                self.at,
                format!("the mesh `{}` has no vertex data (`bindState`)", shape.name),
            ));
            return false;
        };
        let Some((positions, pos_idx)) = field(data, &["positions", "position$0"], |v| match v {
            Value::Vec3Array(a) => Some(a.as_slice()),
            _ => None,
        }) else {
            diags.push(bad(
                self.at,
                format!("the mesh `{}` has no `positions`", shape.name),
            ));
            return false;
        };
        let normals = field(data, &["normals", "normal$0"], |v| match v {
            Value::Vec3Array(a) => Some(a.as_slice()),
            _ => None,
        });
        let uvs = field(data, &["textureCoordinates", "texcoord$0"], |v| match v {
            Value::Vec2Array(a) => Some(a.as_slice()),
            _ => None,
        });
        let flip = matches!(data.get("flipVCoordinates"), Some(Value::Bool(true)));
        let joint_count = match data.get("jointCount") {
            Some(Value::Int(n)) if *n > 0 => *n as usize,
            _ => 0,
        };
        let (weights, joints) = match (data.get("jointWeights"), data.get("jointIndices")) {
            (Some(Value::FloatArray(w)), Some(Value::IntArray(j))) if joint_count > 0 => {
                (w.as_slice(), j.as_slice())
            }
            _ => (&[][..], &[][..]),
        };
        let jw = JointWeights {
            weights,
            joints,
            count: joint_count,
        };
        let corners = pos_idx.len();
        let mismatch = |what: &str, n: usize| {
            bad(
                self.at,
                format!(
                    "the mesh `{}` has {n} {what} indices for {corners} corners",
                    shape.name
                ),
            )
        };
        for (what, idx) in [
            ("normal", normals.map(|n| n.1)),
            ("texture coordinate", uvs.map(|u| u.1)),
        ] {
            if let Some(idx) = idx {
                if idx.len() != corners {
                    diags.push(mismatch(what, idx.len()));
                    return false;
                }
            }
        }
        // Index lookups: any index outside its array is an error of the file.
        let get = |arr: &[i32], i: usize| -> Option<usize> {
            arr.get(i).and_then(|&v| usize::try_from(v).ok())
        };
        let corner_at = |c: usize, mesh: &mut Mesh| -> Result<Corner, String> {
            let p = get(pos_idx, c)
                .filter(|&p| p < positions.len())
                .ok_or_else(|| {
                    format!("corner {c} of the mesh `{}` has no position", shape.name)
                })?;
            let pos = positions[p];
            let normal = match normals {
                Some((vals, idx)) => {
                    let n = get(idx, c).and_then(|i| vals.get(i)).ok_or_else(|| {
                        format!("corner {c} of the mesh `{}` has no normal", shape.name)
                    })?;
                    *n
                }
                None => [0.0, 0.0, 0.0],
            };
            let uv = match uvs {
                Some((vals, idx)) => {
                    let t = get(idx, c).and_then(|i| vals.get(i)).ok_or_else(|| {
                        format!(
                            "corner {c} of the mesh `{}` has no texture coordinates",
                            shape.name
                        )
                    })?;
                    // `v` as an SMD writes it (up from the bottom): what a flipped file holds.
                    if flip {
                        *t
                    } else {
                        [t[0], 1.0 - t[1]]
                    }
                }
                None => [0.0, 0.0],
            };
            let first = mesh.weights.len() as u32;
            for (b, w) in self.position_links(&jw, p, &shape.name)? {
                mesh.weights.push(Weight {
                    bone: BoneId(b as u32),
                    weight: w,
                });
            }
            let mine = &mut mesh.weights[first as usize..];
            let sum: f32 = mine.iter().map(|w| w.weight).sum();
            if mine.is_empty() || !sum.is_finite() || sum <= 0.0 {
                mesh.weights.truncate(first as usize);
                mesh.weights.push(Weight {
                    bone: BoneId(self.bone as u32),
                    weight: 1.0,
                });
            } else if sum != 1.0 {
                for w in mine {
                    w.weight /= sum;
                }
            }
            let count = mesh.weights.len() as u32 - first;
            let (pos, normal) = (self.place(pos), self.turn(normal));
            Ok(Corner {
                pos,
                normal,
                uv,
                bone: mesh.weights[first as usize].bone,
                weights: (first, count),
                span: self.at,
            })
        };

        for (_, set) in doc.children(shape, "faceSets") {
            let material = doc
                .child(set, "material")
                .map(|(_, m)| match m.get("mtlName") {
                    Some(Value::Str(s)) => s.clone(),
                    _ => m.name.clone(),
                })
                .unwrap_or_else(|| set.name.clone());
            let next = mesh.materials.len() as u32;
            let mat = *materials.entry(material.clone()).or_insert_with(|| {
                mesh.materials.push(material);
                next
            });
            let faces: &[i32] = match set.get("faces") {
                Some(Value::IntArray(f)) => f,
                _ => &[],
            };
            // Polygons end at −1 (a last one may end at the array's end); each is cut into a
            // fan from its first corner.
            for poly in faces.split(|&i| i < 0).filter(|p| !p.is_empty()) {
                if poly.len() < 3 {
                    continue;
                }
                let mut made: Vec<Corner> = Vec::with_capacity(poly.len());
                for &c in poly {
                    match corner_at(c as usize, mesh) {
                        Ok(corner) => made.push(corner),
                        Err(m) => {
                            diags.push(bad(self.at, m));
                            return false;
                        }
                    }
                }
                for k in 1..made.len() - 1 {
                    let mut tri = [made[0], made[k], made[k + 1]];
                    if normals.is_none() {
                        let n = face_normal(&tri);
                        for c in &mut tri {
                            c.normal = n;
                        }
                    }
                    mesh.push_triangle(mat, tri, self.at);
                }
            }
        }
        let deltas = doc.children(shape, "deltaStates");
        if deltas.is_empty() {
            return true;
        }
        let used: Vec<usize> = doc
            .children(shape, "faceSets")
            .iter()
            .filter_map(|(_, set)| match set.get("faces") {
                Some(Value::IntArray(f)) => Some(f),
                _ => None,
            })
            .flatten()
            .filter_map(|&c| usize::try_from(c).ok())
            .collect();
        let input = ShapeInput {
            name: &shape.name,
            data,
            positions,
            pos_idx,
            normals,
            jw,
        };
        match self.shapes(&input, &used, &deltas, shapes) {
            Ok(()) => true,
            Err(m) => {
                diags.push(bad(self.at, m));
                false
            }
        }
    }

    /// Adds a mesh's delta states to the file's shapes: its base vertices (one per distinct
    /// position and normal among the corners `used`), and per delta state the base
    /// vertices it moves. Deltas are in the mesh's space, so they turn with the dag's world
    /// transform (no translation).
    fn shapes(
        &self,
        input: &ShapeInput<'_>,
        used: &[usize],
        deltas: &[(usize, &Element)],
        acc: &mut ShapeAcc,
    ) -> Result<(), String> {
        let mesh = input.name;
        let get = |arr: &[i32], i: usize| arr.get(i).and_then(|&v| usize::try_from(v).ok());
        let balance = field(input.data, &["balance", "balance$0"], |v| match v {
            Value::FloatArray(a) => Some(a.as_slice()),
            _ => None,
        });
        // (position index, normal) → base vertex id. Files that give a normal per corner
        // repeat equal normals; a vertex is one position with one normal value, and takes the
        // normal delta of the first corner that has it.
        let mut ids: HashMap<(usize, [u32; 3]), u32> = HashMap::new();
        let mut mine: Vec<(usize, usize, u32)> = Vec::new();
        for &c in used {
            let p = get(input.pos_idx, c)
                .filter(|&p| p < input.positions.len())
                .ok_or_else(|| format!("corner {c} of the mesh `{mesh}` has no position"))?;
            let n = match input.normals {
                Some((_, idx)) => get(idx, c).unwrap_or(usize::MAX),
                None => usize::MAX,
            };
            let normal = input
                .normals
                .and_then(|(vals, _)| vals.get(n).copied())
                .unwrap_or([0.0; 3]);
            let key = (p, normal.map(f32::to_bits));
            if ids.contains_key(&key) {
                continue;
            }
            let id = acc.base.len() as u32;
            ids.insert(key, id);
            mine.push((p, n, id));
            let local = input.positions[p];
            let side = match balance {
                Some((vals, idx)) => {
                    let i = if idx.is_empty() { Some(p) } else { get(idx, c) };
                    i.and_then(|i| vals.get(i).copied()).ok_or_else(|| {
                        format!("corner {c} of the mesh `{mesh}` has no `balance`")
                    })?
                }
                // No file here lacks `balance` where it has stereo shapes; the side of a
                // position is then taken from its x (unverified).
                None if local[0] < 0.0 => 1.0,
                None if local[0] > 0.0 => 0.0,
                None => 0.5,
            };
            acc.base.push((id, self.place(local), self.turn(normal)));
            acc.balance.push(side);
            let mut links = self.position_links(&input.jw, p, mesh)?;
            if links.is_empty() {
                links.push((self.bone, 1.0));
            }
            acc.links
                .push(links.into_iter().map(|(b, w)| (b as u32, w)).collect());
        }
        for (_, delta) in deltas {
            let name = delta.name.clone();
            let moved = |field_names: &[&str],
                         what: &str,
                         limit: usize|
             -> Result<HashMap<usize, [f32; 3]>, String> {
                let Some((vals, idx)) = field(delta, field_names, |v| match v {
                    Value::Vec3Array(a) => Some(a.as_slice()),
                    _ => None,
                }) else {
                    return Ok(HashMap::new());
                };
                if idx.len() != vals.len() {
                    return Err(format!(
                        "the flex shape `{name}` of the mesh `{mesh}` has {} {what} indices for {} {what}s",
                        idx.len(),
                        vals.len()
                    ));
                }
                let mut out = HashMap::with_capacity(vals.len());
                for (&i, v) in idx.iter().zip(vals) {
                    let i = usize::try_from(i).ok().filter(|&i| i < limit).ok_or_else(|| {
                        format!(
                            "the flex shape `{name}` of the mesh `{mesh}` moves {what} {i}, which the mesh does not have ({limit} {what}s)"
                        )
                    })?;
                    if !v.iter().all(|x| x.is_finite()) {
                        return Err(format!(
                            "the flex shape `{name}` of the mesh `{mesh}` holds a value that is not a finite number"
                        ));
                    }
                    out.insert(i, *v);
                }
                Ok(out)
            };
            let dpos = moved(
                &["positions", "position$0"],
                "position",
                input.positions.len(),
            )?;
            let dnrm = moved(
                &["normals", "normal$0"],
                "normal",
                input.normals.map_or(0, |(v, _)| v.len()),
            )?;
            let k = match acc.names.iter().position(|n| *n == name) {
                Some(k) => k,
                None => {
                    acc.names.push(name.clone());
                    acc.moved.push(Vec::new());
                    acc.names.len() - 1
                }
            };
            for &(p, n, id) in &mine {
                let (dp, dn) = (dpos.get(&p), dnrm.get(&n));
                if dp.is_none() && dn.is_none() {
                    continue;
                }
                let Some(&(_, bp, bn)) = acc.base.get(id as usize) else {
                    continue;
                };
                let add = |a: [f32; 3], d: Option<&[f32; 3]>| match d {
                    Some(d) => {
                        let d = self.turn(*d);
                        [a[0] + d[0], a[1] + d[1], a[2] + d[2]]
                    }
                    None => a,
                };
                acc.moved[k].push((id, add(bp, dp), add(bn, dn)));
            }
        }
        Ok(())
    }

    /// The bones position `p` is weighted to (this file's bone numbers; weights as given, a
    /// joint listed twice summed, links of no weight left out). Empty when it has none: its
    /// corners then follow the mesh's dag.
    fn position_links(
        &self,
        jw: &JointWeights<'_>,
        p: usize,
        mesh: &str,
    ) -> Result<Vec<(usize, f32)>, String> {
        let mut out: Vec<(usize, f32)> = Vec::new();
        for k in 0..jw.count {
            let slot = p * jw.count + k;
            let (Some(&w), Some(&j)) = (jw.weights.get(slot), jw.joints.get(slot)) else {
                return Err(format!(
                    "position {p} of the mesh `{mesh}` has no weights (`jointWeights` is too short)"
                ));
            };
            if !w.is_finite() || w <= 0.0 {
                continue;
            }
            let Some(b) = usize::try_from(j)
                .ok()
                .and_then(|j| self.joint_bone.get(j).copied().flatten())
            else {
                return Err(format!(
                    "position {p} of the mesh `{mesh}` is weighted to joint {j}, which the model does not have"
                ));
            };
            match out.iter_mut().find(|x| x.0 == b) {
                Some(x) => x.1 += w,
                None => out.push((b, w)),
            }
        }
        Ok(out)
    }

    /// A mesh position in the file's model space (through the dag's world transform).
    fn place(&self, p: [f32; 3]) -> [f32; 3] {
        if self.world.is_identity() {
            return p;
        }
        let r = self.world.rotate(p.map(f64::from));
        [
            (r[0] + self.world.t[0]) as f32,
            (r[1] + self.world.t[1]) as f32,
            (r[2] + self.world.t[2]) as f32,
        ]
    }

    /// A direction (a normal, a delta) turned by the dag's world transform.
    fn turn(&self, v: [f32; 3]) -> [f32; 3] {
        if self.world.is_identity() {
            return v;
        }
        self.world.rotate(v.map(f64::from)).map(|c| c as f32)
    }
}

/// What [`MeshCtx::shapes`] reads of a mesh's bind state.
struct ShapeInput<'a> {
    name: &'a str,
    data: &'a Element,
    positions: &'a [[f32; 3]],
    pos_idx: &'a [i32],
    normals: Option<(&'a [[f32; 3]], &'a [i32])>,
    jw: JointWeights<'a>,
}

/// A bind state's `jointWeights` and `jointIndices`, `count` (`jointCount`) per position.
struct JointWeights<'a> {
    weights: &'a [f32],
    joints: &'a [i32],
    count: usize,
}

/// A shape's vertex: base vertex id, position, normal (as [`Shape::vertices`]).
type ShapeVertex = (u32, [f32; 3], [f32; 3]);

/// The flex shapes of a file's meshes, gathered mesh by mesh.
#[derive(Default)]
struct ShapeAcc {
    base: Vec<ShapeVertex>,
    balance: Vec<f32>,
    links: Vec<Vec<(u32, f32)>>,
    /// Delta state names in the order the file first gives them (meshes sharing a name make
    /// one shape).
    names: Vec<String>,
    moved: Vec<Vec<ShapeVertex>>,
}

impl ShapeAcc {
    /// The shapes as [`MeshShapes`], with the stereo flags of the file's combination
    /// operator (`controls`: `rawControlNames`, `stereo`).
    fn finish(self, doc: &Doc<'_>, root: &Element, at: FileSpan) -> Option<MeshShapes> {
        if self.names.is_empty() {
            return None;
        }
        let op = doc.child(root, "combinationOperator").map(|(_, e)| e);
        let controls = op
            .map(|op| doc.children(op, "controls"))
            .unwrap_or_default();
        let mut stereo: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for (_, c) in &controls {
            if !matches!(c.get("stereo"), Some(Value::Bool(true))) {
                continue;
            }
            match c.get("rawControlNames") {
                Some(Value::StrArray(names)) => stereo.extend(names.iter().map(String::as_str)),
                _ => {
                    stereo.insert(c.name.as_str());
                }
            }
        }
        let deltas = self
            .names
            .iter()
            .map(|n| MeshDelta {
                name: n.clone(),
                stereo: stereo.contains(n.as_str()),
            })
            .collect();
        let mut shapes = vec![Shape {
            time: 0,
            name: None,
            vertices: self.base,
            span: at,
        }];
        for (k, (name, mut vertices)) in self.names.into_iter().zip(self.moved).enumerate() {
            vertices.sort_by_key(|v| v.0);
            shapes.push(Shape {
                time: k as i32 + 1,
                name: Some(name),
                vertices,
                span: at,
            });
        }
        Some(MeshShapes {
            shapes,
            deltas,
            balance: self.balance,
            links: self.links,
            controls: controls.len(),
        })
    }
}

fn face_normal(t: &[Corner; 3]) -> [f32; 3] {
    let a = t[0].pos.map(f64::from);
    let b = t[1].pos.map(f64::from);
    let c = t[2].pos.map(f64::from);
    let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
    let n = [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ];
    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    if len > 0.0 {
        n.map(|x| (x / len) as f32)
    } else {
        [0.0, 0.0, 1.0]
    }
}

/// Keys of one channel's log: times in seconds and values.
enum Keys<'a> {
    Pos(&'a [[f32; 3]]),
    Rot(&'a [[f32; 4]]),
}

fn animation(
    doc: &Doc<'_>,
    list: &Element,
    bones: &[Bone],
    by_transform: &HashMap<usize, usize>,
    at: FileSpan,
    diags: &mut Vec<Diagnostic>,
) -> Option<Animation> {
    let Some((_, clip)) = doc.children(list, "animations").into_iter().next() else {
        diags.push(bad(at, "the animation list holds no animation".to_string()));
        return None;
    };
    let fps = f64::from(float(clip.get("frameRate")).unwrap_or(30.0));
    let tf = doc.child(clip, "timeFrame").map(|(_, t)| t);
    let start = tf
        .and_then(|t| time(t.get("startTime")).or_else(|| time(t.get("start"))))
        .unwrap_or(0.0);
    let duration = tf
        .and_then(|t| time(t.get("durationTime")).or_else(|| time(t.get("duration"))))
        .unwrap_or(0.0);
    if !fps.is_finite()
        || fps <= 0.0
        || !duration.is_finite()
        || duration < 0.0
        || duration * fps >= crate::smd::lower::MAX_FRAMES as f64
    {
        diags.push(bad(
            at,
            format!(
                "the animation `{}` has a frame rate of {fps} and a length of {duration} s",
                clip.name
            ),
        ));
        return None;
    }
    // The frame at the start and one per frame time up to the end, the end included.
    let num_frames = (duration * fps).round() as usize + 1;
    let num_bones = bones.len();
    // Every frame holds every bone: a long clip of few keys in a small file would take memory
    // out of all proportion to it (the SMD reader's rule, `E0135`).
    let keys: usize = doc
        .children(clip, "channels")
        .iter()
        .filter_map(|(_, ch)| doc.child(ch, "log"))
        .flat_map(|(_, log)| doc.children(log, "layers"))
        .map(|(_, layer)| match layer.get("times") {
            Some(Value::IntArray(v)) => v.len(),
            Some(Value::TimeArray(v)) => v.len(),
            _ => 0,
        })
        .sum();
    let entries = num_frames.saturating_mul(num_bones);
    if entries > 16 << 20 && entries / 8 > keys {
        diags.push(bad(
            at,
            format!(
                "the animation `{}` spans {num_frames} frames of {num_bones} bones but gives only {keys} keys",
                clip.name
            ),
        ));
        return None;
    }
    let mut poses: Vec<Option<Pose>> = Vec::with_capacity(num_frames * num_bones);
    for _ in 0..num_frames {
        poses.extend(bones.iter().map(|b| Some(b.rest)));
    }
    for (_, ch) in doc.children(clip, "channels") {
        let Some((t, _)) = doc.child(ch, "toElement") else {
            continue;
        };
        let Some(&bone) = by_transform.get(&t) else {
            continue;
        };
        let attr = match ch.get("toAttribute") {
            Some(Value::Str(s)) => s.to_ascii_lowercase(),
            _ => continue,
        };
        let Some((_, log)) = doc.child(ch, "log") else {
            continue;
        };
        let Some((_, layer)) = doc.children(log, "layers").into_iter().next() else {
            continue;
        };
        let times: Vec<f64> = match layer.get("times") {
            Some(Value::IntArray(v)) => v.iter().map(|&t| f64::from(t) / 10_000.0).collect(),
            Some(Value::TimeArray(v)) => v.iter().map(|&t| f64::from(t)).collect(),
            _ => continue,
        };
        let keys = match (attr.as_str(), layer.get("values")) {
            ("position", Some(Value::Vec3Array(v))) => Keys::Pos(v),
            ("orientation", Some(Value::QuatArray(v))) => Keys::Rot(v),
            _ => continue,
        };
        let n = match &keys {
            Keys::Pos(v) => v.len(),
            Keys::Rot(v) => v.len(),
        };
        if n != times.len() {
            diags.push(bad(
                at,
                format!(
                    "the channel `{}` has {} times and {n} values",
                    ch.name,
                    times.len()
                ),
            ));
            return None;
        }
        if n == 0 {
            continue;
        }
        for f in 0..num_frames {
            let t = start + f as f64 / fps;
            // The last key at or before `t` and the weight of the next one.
            let after = times.partition_point(|&k| k <= t + 1e-6);
            let (i, j, s) = if after == 0 {
                (0, 0, 0.0)
            } else if after >= n {
                (n - 1, n - 1, 0.0)
            } else {
                let (a, b) = (times[after - 1], times[after]);
                let s = if b > a { (t - a) / (b - a) } else { 0.0 };
                (after - 1, after, s)
            };
            let Some(Some(p)) = poses.get_mut(f * num_bones + bone) else {
                continue;
            };
            match &keys {
                Keys::Pos(v) => {
                    let (a, b) = (v[i], v[j]);
                    p.pos = std::array::from_fn(|k| {
                        (f64::from(a[k]) + (f64::from(b[k]) - f64::from(a[k])) * s) as f32
                    });
                }
                Keys::Rot(v) => {
                    let q = if s == 0.0 { v[i] } else { nlerp(v[i], v[j], s) };
                    p.rot = quat_euler(q);
                }
            }
        }
    }
    Some(Animation {
        first_time: 0,
        num_frames,
        num_bones,
        poses,
        present: vec![true; num_frames],
    })
}

/// Spherical interpolation between two rotations, by the shorter way.
fn nlerp(a: [f32; 4], b: [f32; 4], s: f64) -> [f32; 4] {
    let a = a.map(f64::from);
    let mut b = b.map(f64::from);
    let mut dot: f64 = (0..4).map(|k| a[k] * b[k]).sum();
    if dot < 0.0 {
        b = b.map(|c| -c);
        dot = -dot;
    }
    let (wa, wb) = if dot > 0.9995 {
        (1.0 - s, s)
    } else {
        let th = dot.clamp(-1.0, 1.0).acos();
        let sin = th.sin();
        (((1.0 - s) * th).sin() / sin, (s * th).sin() / sin)
    };
    let q: [f64; 4] = std::array::from_fn(|k| wa * a[k] + wb * b[k]);
    let n = (q.iter().map(|c| c * c).sum::<f64>()).sqrt();
    q.map(|c| (c / n) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::FileId;

    /// A model of two joints `a` and `b` (names given), and one triangle whose positions are
    /// weighted to joint number `joint` of `jointTransforms`, listed as [b, a].
    fn model(a: &str, b: &str, joint: i32) -> String {
        format!(
            r#"<!-- dmx encoding keyvalues2 1 format model 1 -->
"DmElement" {{ "name" "string" "root" "model" "element" "m" }}
"DmeModel" {{
 "id" "elementid" "m"
 "children" "element_array" [ "element" "ja", "element" "dag" ]
 "jointTransforms" "element_array" [ "element" "tb", "element" "ta" ]
}}
"DmeJoint" {{ "id" "elementid" "ja" "name" "string" "{a}" "transform" "element" "ta"
 "children" "element_array" [ "DmeJoint" {{ "id" "elementid" "jb" "name" "string" "{b}" "transform" "element" "tb" }} ] }}
"DmeTransform" {{ "id" "elementid" "ta" "position" "vector3" "0 0 1" "orientation" "quaternion" "0 0 0 1" }}
"DmeTransform" {{ "id" "elementid" "tb" "position" "vector3" "2 0 0" "orientation" "quaternion" "0 0 0 1" }}
"DmeDag" {{ "id" "elementid" "dag" "name" "string" "mesh"
 "shape" "DmeMesh" {{ "name" "string" "mesh" "bindState" "DmeVertexData" {{
   "jointCount" "int" "1" "flipVCoordinates" "bool" "1"
   "positions" "vector3_array" [ "0 0 0", "1 0 0", "0 1 0" ]
   "positionsIndices" "int_array" [ "0", "1", "2" ]
   "jointWeights" "float_array" [ "1", "1", "1" ]
   "jointIndices" "int_array" [ "{joint}", "{joint}", "{joint}" ] }}
  "faceSets" "element_array" [ "DmeFaceSet" {{ "faces" "int_array" [ "0", "1", "2", "-1" ]
   "material" "DmeMaterial" {{ "mtlName" "string" "skin" }} }} ] }} }}
"#
        )
    }

    fn lower(text: &str) -> (Option<SmdModel>, Vec<Diagnostic>) {
        let dmx = super::super::read::parse(text.as_bytes()).unwrap();
        let mut diags = Vec::new();
        let m = lower_dmx(&dmx, FileId(0), Span::new(0, 0), &mut diags);
        (m, diags)
    }

    /// Weights name joints by their place in `jointTransforms`, not in the tree: joint 0 is
    /// `b`, the second bone of the tree.
    #[test]
    fn weights_follow_the_joint_transform_order() {
        for (joint, bone) in [(0, 1u32), (1, 0)] {
            let (m, d) = lower(&model("a", "b", joint));
            assert!(d.is_empty(), "{d:?}");
            let m = m.unwrap();
            let names: Vec<&str> = m.skeleton.bones.iter().map(|b| b.name.as_str()).collect();
            assert_eq!(names, ["a", "b", "mesh"]);
            assert_eq!(m.skeleton.bones[1].parent, Some(BoneId(0)));
            assert_eq!(m.skeleton.bones[1].rest.pos, [2.0, 0.0, 0.0]);
            let mesh = m.mesh.unwrap();
            assert_eq!(mesh.triangles.len(), 1);
            assert!(mesh.weights.iter().all(|w| w.bone == BoneId(bone)));
            assert_eq!(mesh.materials, ["skin"]);
        }
    }

    #[test]
    fn joints_of_one_name_and_unknown_joints_are_errors() {
        let (m, d) = lower(&model("a", "A", 0));
        assert!(m.is_none());
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::DmxBadModel);
        assert!(d[0].message.contains("two joints"), "{}", d[0].message);
        let (m, d) = lower(&model("a", "b", 7));
        assert!(m.is_none());
        assert!(d[0].message.contains("joint 7"), "{}", d[0].message);
    }

    /// A quad of positions 0..3 (x = −1, 1, 1, −1) under a dag moved by (0, 0, 10), with
    /// normals per corner (all equal), `balance`, the delta states `deltas` and a combination
    /// operator whose control `brow` is stereo.
    fn faced(deltas: &str) -> String {
        format!(
            r#"<!-- dmx encoding keyvalues2 1 format model 1 -->
"DmElement" {{ "name" "string" "root" "model" "element" "m"
 "combinationOperator" "DmeCombinationOperator" {{ "controls" "element_array" [
  "DmeCombinationInputControl" {{ "name" "string" "brow" "rawControlNames" "string_array" [ "brow" ] "stereo" "bool" "1" }},
  "DmeCombinationInputControl" {{ "name" "string" "smile" "rawControlNames" "string_array" [ "smile" ] "stereo" "bool" "0" }} ] }} }}
"DmeModel" {{ "id" "elementid" "m" "children" "element_array" [ "element" "dag" ]
 "jointTransforms" "element_array" [ "element" "t" ] }}
"DmeTransform" {{ "id" "elementid" "t" "position" "vector3" "0 0 10" "orientation" "quaternion" "0 0 0 1" }}
"DmeDag" {{ "id" "elementid" "dag" "name" "string" "mesh" "transform" "element" "t"
 "shape" "DmeMesh" {{ "name" "string" "mesh" "bindState" "DmeVertexData" {{
   "positions" "vector3_array" [ "-1 0 0", "1 0 0", "1 1 0", "-1 1 0" ]
   "positionsIndices" "int_array" [ "0", "1", "2", "3" ]
   "normals" "vector3_array" [ "0 0 1", "0 0 1", "0 0 1", "0 0 1" ]
   "normalsIndices" "int_array" [ "0", "1", "2", "3" ]
   "balance" "float_array" [ "1", "0", "0", "1" ]
   "balanceIndices" "int_array" [ "0", "1", "2", "3" ] }}
  "deltaStates" "element_array" [ {deltas} ]
  "faceSets" "element_array" [ "DmeFaceSet" {{ "faces" "int_array" [ "0", "1", "2", "3", "-1" ]
   "material" "DmeMaterial" {{ "mtlName" "string" "skin" }} }} ] }} }}
"#
        )
    }

    /// Delta states become shapes over one base vertex per position and normal value (the
    /// four corners' equal normals make no extra vertices), placed by the dag's transform;
    /// each shape lists the base vertices it moves with their moved position; `balance` is
    /// kept per base vertex and stereo comes from the combination operator's controls.
    #[test]
    fn delta_states_are_read_as_shapes() {
        let (m, d) = lower(&faced(
            r#""DmeVertexDeltaData" { "name" "string" "brow"
                 "positions" "vector3_array" [ "0 0 2" ] "positionsIndices" "int_array" [ "3" ] },
               "DmeVertexDeltaData" { "name" "string" "smile"
                 "normals" "vector3_array" [ "0 0.5 0" ] "normalsIndices" "int_array" [ "1" ] }"#,
        ));
        assert!(d.is_empty(), "{d:?}");
        let s = m.unwrap().shapes.unwrap();
        let names: Vec<(&str, bool)> = s
            .deltas
            .iter()
            .map(|d| (d.name.as_str(), d.stereo))
            .collect();
        assert_eq!(names, [("brow", true), ("smile", false)]);
        assert_eq!(s.controls, 2);
        assert_eq!(s.balance, [1.0, 0.0, 0.0, 1.0]);
        assert_eq!(s.shapes.len(), 3);
        let base: Vec<[f32; 3]> = s.shapes[0].vertices.iter().map(|v| v.1).collect();
        assert_eq!(
            base,
            [
                [-1.0, 0.0, 10.0],
                [1.0, 0.0, 10.0],
                [1.0, 1.0, 10.0],
                [-1.0, 1.0, 10.0]
            ]
        );
        assert_eq!(
            s.shapes[1].vertices,
            [(3, [-1.0, 1.0, 12.0], [0.0, 0.0, 1.0])]
        );
        assert_eq!(
            s.shapes[2].vertices,
            [(1, [1.0, 0.0, 10.0], [0.0, 0.5, 1.0])]
        );
        assert_eq!(s.shapes[2].name.as_deref(), Some("smile"));
    }

    /// A delta state that moves a position the mesh does not have, or whose indices do not
    /// pair with its values, is an error of the file.
    #[test]
    fn broken_delta_states_are_errors() {
        for (delta, says) in [
            (
                r#""DmeVertexDeltaData" { "name" "string" "x"
                 "positions" "vector3_array" [ "0 0 2" ] "positionsIndices" "int_array" [ "9" ] }"#,
                "moves position 9",
            ),
            (
                r#""DmeVertexDeltaData" { "name" "string" "x"
                 "positions" "vector3_array" [ "0 0 2" ] "positionsIndices" "int_array" [ "1", "2" ] }"#,
                "2 position indices for 1 positions",
            ),
        ] {
            let (m, d) = lower(&faced(delta));
            assert!(m.is_none());
            assert_eq!(d.len(), 1);
            assert_eq!(d[0].code, Code::DmxBadModel);
            assert!(d[0].message.contains(says), "{}", d[0].message);
        }
    }
}
