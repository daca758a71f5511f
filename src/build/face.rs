//! The face: what the `$model` blocks say made into [`Face`], in the order and with the
//! numbering of Valve's compiler (2006 SDK `studiomdl.cpp`: `Cmd_Model`, `Option_Eyeball`,
//! `Option_Eyelid`, `Option_Flex`, `Option_Mouth`, `Option_Flexcontroller`, `Option_Flexrule`).
//!
//! * Flex descriptions are one list for the model. An eyelid adds four (`upper_right`, then
//!   `upper_right_lowerer` … in the order its shapes are written), a mouth one (found if it
//!   exists), `flex` one, `flexpair X` two (`XR`, `XL`), `defaultflex` `default`, `localvar`
//!   one per name; a name already in the list is reused (eyelids always add theirs).
//! * Rules are compiled to the engine's stack program with Valve's operator-precedence method
//!   ([`compile`]), so the stacks equal Valve's.
//! * mdlc resolves names after the whole block is read (Valve: at the line), so a rule may name
//!   a controller declared after it.

use crate::diag::{Code, Diagnostic, FileSpan};
use crate::ir::face::*;
use crate::ir::model::{nearest_model_bone, Material, MaterialId, MeshId, ModelBone, ModelMesh};
use crate::ir::skeleton::BoneId;
use crate::project::face::{ExprToken, FaceItem, FaceSpec, FlexKind, LidKind};
use crate::project::spec::{FileRef, Spanned};

use crate::ir::written::Target;

use super::materials::material_key;
use super::{loc, Builder};

/// Engine limits (`public/studio.h`: MAXSTUDIOFLEXDESC, MAXSTUDIOFLEXCTRL; the rule and op
/// limits of Valve's compiler).
pub const MAX_FLEX_DESCS: usize = 1024;
pub const MAX_FLEX_CONTROLLERS: usize = 96;
pub const MAX_FLEX_RULES: usize = 1024;
pub const MAX_FLEX_OPS: usize = 512;

struct Pending<'s> {
    rule: &'s crate::project::face::FlexRuleSpec,
}

impl Builder<'_> {
    /// Builds the face of every body part mesh that has a `$model` block (`faces[i]` belongs to
    /// `meshes[i]`).
    pub(super) fn make_face(
        &mut self,
        faces: &[Option<&FaceSpec>],
        meshes: &[ModelMesh],
        bones: &[ModelBone],
        materials: &[Material],
    ) -> Face {
        let mut face = Face::default();
        let mut rules: Vec<Pending> = Vec::new();
        let mut mouths: Vec<Option<Mouth>> = Vec::new();
        for (i, mesh) in meshes.iter().enumerate() {
            let spec = faces.get(i).copied().flatten();
            let mesh_id = MeshId(i as u32);
            self.dmx_shapes(&mut face, mesh_id, mesh, spec);
            let Some(spec) = spec else { continue };
            let first_eyeball = face.eyeballs.len();
            for item in &spec.items {
                match item {
                    FaceItem::Eyeball(e) => {
                        let bone = self.face_bone(bones, &e.bone, "eyeball");
                        let material = find_mesh_material(mesh, materials, &e.material.value);
                        if material.is_none() {
                            let names: Vec<&str> = mesh
                                .materials
                                .iter()
                                .filter_map(|m| materials.get(m.index()))
                                .map(|m| m.name.as_str())
                                .collect();
                            self.push(
                                Diagnostic::new(
                                    Code::BuildEyeballMaterial,
                                    format!(
                                        "eyeball `{}`: the model has no triangles with material `{}`",
                                        e.name.value, e.material.value
                                    ),
                                    loc(e.material.span),
                                    "no mesh of this model uses it",
                                )
                                .with_note(format!("its materials are: {}", names.join(", ")))
                                .with_note("Valve's compiler stops with \"can't find eyeball texture\""),
                            );
                        }
                        if let (Some(bone), Some(material)) = (bone, material) {
                            face.eyeballs.push(Eyeball {
                                name: e.name.value.clone(),
                                mesh: mesh_id,
                                bone,
                                origin: e.origin,
                                material,
                                radius: e.diameter / 2.0,
                                zoffset: e.angle.to_radians().tan(),
                                iris_scale: 1.0 / e.iris_scale.value,
                                upper: None,
                                lower: None,
                                span: loc(e.span),
                            });
                        }
                    }
                    FaceItem::Eyelid(l) => {
                        let base = face.flex_descs.len();
                        face.flex_descs.push(l.name.value.clone());
                        let mut descs = [0usize; 3];
                        let mut targets = [0f32; 3];
                        let mut frames = [0i32; 3];
                        for (kind, shape) in &l.shapes {
                            let k = lid_index(*kind);
                            descs[k] = face.flex_descs.len();
                            face.flex_descs
                                .push(format!("{}_{}", l.name.value, kind.word()));
                            targets[k] = shape.target;
                            frames[k] = shape.frame.value;
                        }
                        // the three keys of the lid (targets as Valve's `Option_Eyelid`)
                        let t = targets;
                        let key_targets = [
                            [-11.0, -10.0, t[0], t[1]],
                            [t[0], t[1], t[1], t[2]],
                            [t[1], t[2], 10.0, 11.0],
                        ];
                        let vta = self.load_vta(&mut face, &l.file, mesh.scale);
                        for (k, kt) in key_targets.iter().enumerate() {
                            let frame = l
                                .shapes
                                .iter()
                                .find(|(kind, _)| lid_index(*kind) == k)
                                .map(|(_, s)| &s.frame);
                            let (Some(vta), Some(frame)) = (vta, frame) else {
                                continue;
                            };
                            if !self.check_frame(&face, vta, frame) {
                                continue;
                            }
                            face.keys.push(FlexKey {
                                mesh: mesh_id,
                                flex_desc: base,
                                flex_pair: 0,
                                targets: *kt,
                                split: l.split,
                                decay: 0.0,
                                vta,
                                frame: frames[k],
                                balance_side: false,
                                span: loc(l.span),
                            });
                        }
                        let lid = Lid {
                            lid: base,
                            descs,
                            targets,
                        };
                        let mut matched = false;
                        for eb in face.eyeballs[first_eyeball..].iter_mut() {
                            if let Some(want) = &l.eyeball {
                                if !eb.name.eq_ignore_ascii_case(&want.value) {
                                    continue;
                                }
                            }
                            matched = true;
                            for (k, &tv) in targets.iter().enumerate() {
                                if tv.abs() > eb.radius {
                                    let kind =
                                        [LidKind::Lowerer, LidKind::Neutral, LidKind::Raiser][k];
                                    self.diags.push(
                                        Diagnostic::new(
                                            Code::BuildEyelidRange,
                                            format!(
                                                "eyelid `{}`: the {} target {} is outside eyeball `{}` (radius {})",
                                                l.name.value,
                                                kind.word(),
                                                tv,
                                                eb.name,
                                                eb.radius
                                            ),
                                            loc(l.span),
                                            "this eyelid",
                                        )
                                        .with_note("a lid target is a height on the eyeball, between -radius and +radius")
                                        .with_note("Valve's compiler stops with \"Eyelid … out of range\""),
                                    );
                                }
                            }
                            if l.name.value.starts_with('u') {
                                eb.upper = Some(lid.clone());
                            } else if l.name.value.starts_with('l') {
                                eb.lower = Some(lid.clone());
                            }
                        }
                        if !matched {
                            let (span, what) = match &l.eyeball {
                                Some(e) => (
                                    loc(e.span),
                                    format!("this model has no eyeball `{}`", e.value),
                                ),
                                None => (loc(l.span), "this model has no eyeball".to_string()),
                            };
                            self.push(
                                Diagnostic::new(
                                    Code::BuildEyelidNoEyeball,
                                    format!("eyelid `{}` moves no eyeball: {what}", l.name.value),
                                    span,
                                    "no eyeball found",
                                )
                                .with_note("the lid's shapes are still written; no eyeball follows them (as in Valve's compiler)"),
                            );
                        }
                    }
                    FaceItem::Mouth(m) => {
                        let flex = add_desc(&mut face.flex_descs, &m.flex.value);
                        let bone = self.face_bone(bones, &m.bone, "mouth");
                        let index = m.index.value.max(0) as usize;
                        if mouths.len() <= index {
                            mouths.resize(index + 1, None);
                        }
                        if let (Some(bone), Some(slot)) = (bone, mouths.get_mut(index)) {
                            *slot = Some(Mouth {
                                bone,
                                forward: m.forward,
                                flex,
                                span: loc(m.span),
                            });
                        }
                    }
                    FaceItem::Flex(f) => {
                        let (desc, pair, split) = match f.kind {
                            FlexKind::Pair(s) => {
                                let r =
                                    add_desc(&mut face.flex_descs, &format!("{}R", f.name.value));
                                let l =
                                    add_desc(&mut face.flex_descs, &format!("{}L", f.name.value));
                                (r, l, f.split.unwrap_or(s))
                            }
                            FlexKind::Single | FlexKind::Default => (
                                add_desc(&mut face.flex_descs, &f.name.value),
                                0,
                                f.split.unwrap_or(0.0),
                            ),
                        };
                        let Some(vta) = self.load_vta(&mut face, &f.file, mesh.scale) else {
                            continue;
                        };
                        let Some(frame) = f.frame.as_ref() else {
                            continue;
                        };
                        if !self.check_frame(&face, vta, frame) {
                            continue;
                        }
                        let mut key = FlexKey {
                            mesh: mesh_id,
                            flex_desc: desc,
                            flex_pair: pair,
                            targets: [0.0, f.position, 10.0, 11.0],
                            split,
                            decay: f.decay,
                            vta,
                            frame: frame.value,
                            balance_side: false,
                            span: loc(f.span),
                        };
                        if f.kind == FlexKind::Default {
                            face.default_key = Some(face.keys.len());
                        }
                        // Valve: a shape following another of the same description takes over
                        // from it (the earlier one ends where this one starts). Valve compares
                        // from the third key on (`g_numflexkeys > 1`).
                        let n = face.keys.len();
                        if n > 1 {
                            if let Some(prev) = face.keys.last_mut() {
                                if prev.flex_desc == key.flex_desc {
                                    prev.targets[2] = prev.targets[1];
                                    prev.targets[3] = key.targets[1];
                                    key.targets[0] = prev.targets[1];
                                }
                            }
                        }
                        face.keys.push(key);
                    }
                    FaceItem::Controller(c) => face.controllers.push(FlexController {
                        group: c.group.clone(),
                        name: c.name.value.clone(),
                        min: c.min,
                        max: c.max,
                    }),
                    FaceItem::LocalVar(v) => {
                        add_desc(&mut face.flex_descs, &v.value);
                    }
                    FaceItem::Rule(r) => rules.push(Pending { rule: r }),
                }
            }
        }
        for p in rules {
            if let Some(rule) = self.compile_rule(&face, p.rule) {
                face.rules.push(rule);
            }
        }
        face.mouths = mouths.into_iter().flatten().collect();
        self.face_limits(&face, faces);
        face
    }

    /// Loads a VTA once (by resolved path); checks that every shape moves only vertices its
    /// base shape (the first `time`) has, which Valve's compiler reads the base position of.
    fn load_vta(&mut self, face: &mut Face, file: &FileRef, scale: f32) -> Option<usize> {
        if let Some(i) = face.vtas.iter().position(|v| v.path == file.path) {
            return Some(i);
        }
        let i = self.load(file, "vertex animation")?;
        let loaded = self.loader.files.get(i)?;
        let (path, id) = (loaded.path.clone(), loaded.file);
        let Some(anim) = loaded.smd.flex.clone() else {
            self.push(
                Diagnostic::new(
                    Code::BuildVtaMismatch,
                    format!("`{}` has no `vertexanimation` section", file.written),
                    loc(file.span),
                    "not a VTA file",
                )
                .with_note("flexes and eyelids take their shapes from a VTA file (an SMD with a vertexanimation section)"),
            );
            return None;
        };
        let first_time = loaded.smd.animation.first_time;
        let num_frames = loaded.smd.animation.num_frames;
        let mut shapes = anim.shapes;
        let Some(base) = shapes.iter().find(|s| s.time == first_time) else {
            self.push(
                Diagnostic::new(
                    Code::BuildVtaMismatch,
                    format!("`{}` has no base shape (time {first_time})", file.written),
                    loc(file.span),
                    "no base shape",
                )
                .with_note("the first `time` of the vertexanimation section lists every vertex in the reference pose; shapes are measured from it"),
            );
            return None;
        };
        let known: std::collections::HashSet<u32> = base.vertices.iter().map(|v| v.0).collect();
        for sh in shapes.iter().filter(|s| s.time != first_time) {
            if let Some(v) = sh.vertices.iter().find(|v| !known.contains(&v.0)) {
                self.push(
                    Diagnostic::new(
                        Code::BuildVtaMismatch,
                        format!(
                            "shape {} of `{}` moves vertex {}, which its base shape (time {}) does not have",
                            sh.time, file.written, v.0, base.time
                        ),
                        sh.span,
                        "in this shape",
                    )
                    .with_note("a shape's vertices are matched to the reference mesh through the base shape's positions; the base shape must list every vertex"),
                );
                return None;
            }
        }
        if scale != 1.0 {
            for sh in &mut shapes {
                for v in &mut sh.vertices {
                    v.1 = v.1.map(|x| x * scale);
                }
            }
        }
        face.vtas.push(Vta {
            path,
            file: id,
            shapes,
            first_time,
            num_frames,
            scale,
            dmx: None,
        });
        Some(face.vtas.len() - 1)
    }

    /// The flex shapes of a DMX body part mesh ([`crate::ir::face::MeshShapes`]), before the
    /// lines of its `$model` block (Valve's build of `alastor_rel.qc`, issue 16's notes, lists
    /// them first): a description per shape (a stereo shape two, `nameL` then `nameR`, one
    /// key with the second as its pair and each vertex's balance as its side), with targets
    /// 0, 1, 10, 11 and no decay, as in that build.
    fn dmx_shapes(
        &mut self,
        face: &mut Face,
        mesh_id: MeshId,
        mesh: &ModelMesh,
        spec: Option<&FaceSpec>,
    ) {
        let Some(shapes) = self
            .loader
            .files
            .iter()
            .find(|f| f.file == mesh.file)
            .and_then(|f| f.smd.shapes.as_ref())
        else {
            return;
        };
        let mut list = shapes.shapes.clone();
        if mesh.scale != 1.0 {
            for sh in &mut list {
                for v in &mut sh.vertices {
                    v.1 = v.1.map(|x| x * mesh.scale);
                }
            }
        }
        let vta = face.vtas.len();
        face.vtas.push(Vta {
            path: mesh.path.clone(),
            file: mesh.file,
            shapes: list,
            first_time: 0,
            num_frames: shapes.deltas.len() + 1,
            scale: mesh.scale,
            dmx: Some(DmxShapeVertices {
                balance: shapes.balance.clone(),
                links: shapes
                    .links
                    .iter()
                    .map(|l| {
                        l.iter()
                            .map(|&(q, w)| {
                                let b = nearest_model_bone(&mesh.file_bones, q as usize);
                                (b.unwrap_or(BoneId(0)), w)
                            })
                            .collect()
                    })
                    .collect(),
            }),
        });
        for (k, d) in shapes.deltas.iter().enumerate() {
            let (desc, pair) = if d.stereo {
                let l = add_desc(&mut face.flex_descs, &format!("{}L", d.name));
                let r = add_desc(&mut face.flex_descs, &format!("{}R", d.name));
                (l, r)
            } else {
                (add_desc(&mut face.flex_descs, &d.name), 0)
            };
            face.keys.push(FlexKey {
                mesh: mesh_id,
                flex_desc: desc,
                flex_pair: pair,
                targets: [0.0, 1.0, 10.0, 11.0],
                split: 0.0,
                decay: 0.0,
                vta,
                frame: k as i32 + 1,
                balance_side: true,
                span: mesh.span,
            });
        }
        if shapes.controls > 0 && !spec.is_some_and(|s| s.no_auto_dmx_rules) {
            let n = shapes.deltas.len();
            self.push(
                Diagnostic::new(
                    Code::BuildDmxRulesNotMade,
                    format!(
                        "the {n} flex shape{} of `{}` {} built, but not the flex controllers and rules later compilers make of its {} control{}",
                        if n == 1 { "" } else { "s" },
                        mesh.written,
                        if n == 1 { "is" } else { "are" },
                        shapes.controls,
                        if shapes.controls == 1 { "" } else { "s" },
                    ),
                    mesh.span,
                    "this mesh",
                )
                .with_note("Valve's later compilers make them unless the `$model` block says `noautodmxrules`; no Valve build of such a model is at hand to check how, so mdlc does not guess: only the QC's own `flexcontroller` and `%` rule lines drive the shapes")
                .with_note("help: write the controllers and rules in the `$model` block and add `noautodmxrules`"),
            );
        }
    }

    /// Whether the VTA has the shape a `frame N` names (reported when not).
    fn check_frame(&mut self, face: &Face, vta: usize, frame: &Spanned<i32>) -> bool {
        let Some(v) = face.vtas.get(vta) else {
            return false;
        };
        if v.has_frame(frame.value) {
            return true;
        }
        let first = v.first_time;
        let last = first.saturating_add(v.num_frames as i32).saturating_sub(1);
        let name = v
            .path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        self.push(
            Diagnostic::new(
                Code::BuildFlexFrame,
                format!("frame {} is not a shape of `{name}`", frame.value),
                loc(frame.span),
                "no such shape",
            )
            .with_note(format!(
                "the file's frames are times {first} to {last}; frame N is time {first} + N"
            )),
        );
        false
    }

    fn face_bone(
        &mut self,
        bones: &[ModelBone],
        name: &Spanned<String>,
        what: &str,
    ) -> Option<BoneId> {
        let found = bones
            .iter()
            .position(|b| b.name.eq_ignore_ascii_case(&name.value))
            .map(|i| BoneId(i as u32));
        if found.is_none() {
            let mut d = Diagnostic::new(
                Code::BuildFaceBone,
                format!("{what}: bone `{}` is not in the skeleton", name.value),
                loc(name.span),
                "unknown bone",
            );
            let names: Vec<&str> = bones.iter().map(|b| b.name.as_str()).collect();
            if let Some(n) = crate::suggest::nearest(&name.value, names.iter().copied()) {
                d = d.with_note(format!("help: did you mean `{n}`?"));
            }
            self.push(d);
        }
        found
    }

    fn face_limits(&mut self, face: &Face, faces: &[Option<&FaceSpec>]) {
        // the face's first line, else (a face only of DMX shapes) the first mesh with shapes
        let Some(span) = faces
            .iter()
            .flatten()
            .flat_map(|f| f.items.first())
            .map(item_span)
            .next()
            .or_else(|| face.keys.first().map(|k| k.span))
        else {
            return;
        };
        for (n, max, what) in [
            (face.flex_descs.len(), MAX_FLEX_DESCS, "flex descriptions"),
            (
                face.controllers.len(),
                MAX_FLEX_CONTROLLERS,
                "flex controllers",
            ),
            (face.rules.len(), MAX_FLEX_RULES, "flex rules"),
        ] {
            if n > max {
                self.push(
                    Diagnostic::new(
                        Code::BuildFaceLimit,
                        format!("the model has {n} {what}; the engine reads at most {max}"),
                        span,
                        "the face starts here",
                    )
                    .with_note(
                        "public/studio.h fixes these limits; the game would overrun its tables",
                    ),
                );
            }
        }
    }

    /// Compiles a rule as Valve's `Option_Flexrule` does: the tokens become a stream (a `-`
    /// after nothing or after `( + - * / ,` is a negation; mdlc also reads a leading `-` as one,
    /// where Valve writes a subtraction with one operand), then an operator-precedence pass
    /// (`+ -` 1, `* /` 2, negation 4, min/max 5) writes postfix; a negation right before a
    /// constant folds into it; the commas of min/max are removed at the end.
    fn compile_rule(
        &mut self,
        face: &Face,
        r: &crate::project::face::FlexRuleSpec,
    ) -> Option<FlexRule> {
        let Some(flex) = find(&face.flex_descs, &r.name.value) else {
            self.push(unknown_flex(&face.flex_descs, &r.name, true));
            return None;
        };
        #[derive(Clone, Copy, PartialEq)]
        enum S {
            Op(FlexOp),
            Open,
            Close,
            Comma,
        }
        let mut stream: Vec<S> = Vec::new();
        let mut ok = true;
        for t in &r.expr {
            let s = match &t.value {
                ExprToken::Number(v) => S::Op(FlexOp::Const(*v)),
                ExprToken::Name(n) => match face
                    .controllers
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(n))
                {
                    Some(i) => S::Op(FlexOp::Fetch1(i)),
                    None => {
                        let names: Vec<&str> =
                            face.controllers.iter().map(|c| c.name.as_str()).collect();
                        let mut d = Diagnostic::new(
                            Code::BuildFlexUnknownController,
                            format!("flex rule `%{}` names controller `{n}`, which no `flexcontroller` declares", r.name.value),
                            loc(t.span),
                            "unknown controller",
                        );
                        if let Some(s) = crate::suggest::nearest(n, names.iter().copied()) {
                            d = d.with_note(format!("help: did you mean `{s}`?"));
                        }
                        self.push(d.with_note("a %name is a flex; a plain name is a controller"));
                        ok = false;
                        continue;
                    }
                },
                ExprToken::Flex(n) => match find(&face.flex_descs, n) {
                    Some(i) => S::Op(FlexOp::Fetch2(i)),
                    None => {
                        self.push(unknown_flex(
                            &face.flex_descs,
                            &Spanned::new(n.clone(), loc(t.span)),
                            false,
                        ));
                        ok = false;
                        continue;
                    }
                },
                ExprToken::Plus => S::Op(FlexOp::Add),
                ExprToken::Minus => {
                    let unary = matches!(
                        stream.last(),
                        None | Some(
                            S::Open
                                | S::Comma
                                | S::Op(
                                    FlexOp::Add
                                        | FlexOp::Sub
                                        | FlexOp::Mul
                                        | FlexOp::Div
                                        | FlexOp::Neg
                                )
                        )
                    );
                    S::Op(if unary { FlexOp::Neg } else { FlexOp::Sub })
                }
                ExprToken::Star => S::Op(FlexOp::Mul),
                ExprToken::Slash => S::Op(FlexOp::Div),
                ExprToken::Open => S::Open,
                ExprToken::Close => S::Close,
                ExprToken::Comma => S::Comma,
                ExprToken::Min => S::Op(FlexOp::Min),
                ExprToken::Max => S::Op(FlexOp::Max),
            };
            stream.push(s);
        }
        if !ok {
            return None;
        }
        fn prec(s: S) -> u8 {
            match s {
                S::Op(FlexOp::Add | FlexOp::Sub) => 1,
                S::Op(FlexOp::Mul | FlexOp::Div) => 2,
                S::Op(FlexOp::Neg) => 4,
                S::Op(FlexOp::Max | FlexOp::Min) => 5,
                _ => 0,
            }
        }
        let mut out: Vec<S> = Vec::new();
        let mut stack: Vec<S> = Vec::new();
        let mut k = 0;
        while k < stream.len() {
            let s = stream[k];
            match s {
                S::Op(FlexOp::Const(_) | FlexOp::Fetch1(_) | FlexOp::Fetch2(_)) => out.push(s),
                S::Open => stack.push(s),
                S::Close => {
                    while let Some(&top) = stack.last().filter(|t| **t != S::Open) {
                        out.push(top);
                        stack.pop();
                    }
                    stack.pop();
                }
                S::Comma => {
                    while let Some(&top) = stack.last().filter(|t| **t != S::Open) {
                        out.push(top);
                        stack.pop();
                    }
                    stack.push(s);
                }
                S::Op(FlexOp::Add | FlexOp::Sub | FlexOp::Mul | FlexOp::Div) => {
                    while let Some(&top) = stack.last().filter(|t| prec(s) <= prec(**t)) {
                        out.push(top);
                        stack.pop();
                    }
                    stack.push(s);
                }
                S::Op(FlexOp::Neg) => {
                    if let Some(S::Op(FlexOp::Const(v))) = stream.get(k + 1).copied() {
                        if let Some(next) = stream.get_mut(k + 1) {
                            *next = S::Op(FlexOp::Const(-v));
                        }
                    } else {
                        stack.push(s);
                    }
                }
                S::Op(FlexOp::Max | FlexOp::Min) => stack.push(s),
            }
            k += 1;
        }
        while let Some(top) = stack.pop() {
            out.push(top);
        }
        // remove the commas: min/max take the place of the comma before them
        let mut ops: Vec<S> = Vec::new();
        for s in out {
            match s {
                S::Op(FlexOp::Max | FlexOp::Min) => {
                    if let Some(last) = ops.last_mut().filter(|l| **l == S::Comma) {
                        *last = s;
                    }
                }
                _ => ops.push(s),
            }
        }
        let ops: Vec<FlexOp> = ops
            .into_iter()
            .filter_map(|s| match s {
                S::Op(o) => Some(o),
                _ => None,
            })
            .collect();
        if ops.len() > MAX_FLEX_OPS {
            self.push(Diagnostic::new(
                Code::BuildFaceLimit,
                format!(
                    "flex rule `%{}` compiles to {} operations; the limit is {MAX_FLEX_OPS}",
                    r.name.value,
                    ops.len()
                ),
                loc(r.span),
                "this rule",
            ));
            return None;
        }
        Some(FlexRule {
            flex,
            ops,
            span: loc(r.span),
        })
    }
}

fn lid_index(k: LidKind) -> usize {
    match k {
        LidKind::Lowerer => 0,
        LidKind::Neutral => 1,
        LidKind::Raiser => 2,
    }
}

fn item_span(i: &FaceItem) -> FileSpan {
    match i {
        FaceItem::Eyeball(e) => loc(e.span),
        FaceItem::Eyelid(e) => loc(e.span),
        FaceItem::Mouth(m) => loc(m.span),
        FaceItem::Flex(f) => loc(f.span),
        FaceItem::Controller(c) => loc(c.name.span),
        FaceItem::LocalVar(v) => loc(v.span),
        FaceItem::Rule(r) => loc(r.span),
    }
}

fn find(descs: &[String], name: &str) -> Option<usize> {
    descs.iter().position(|d| d.eq_ignore_ascii_case(name))
}

/// Valve's `Add_Flexdesc`: the existing description of that name, or a new one.
fn add_desc(descs: &mut Vec<String>, name: &str) -> usize {
    match find(descs, name) {
        Some(i) => i,
        None => {
            descs.push(name.to_string());
            descs.len() - 1
        }
    }
}

fn unknown_flex(descs: &[String], name: &Spanned<String>, target: bool) -> Diagnostic {
    let msg = if target {
        format!(
            "flex rule for `{}`, which is not a flex of the model",
            name.value
        )
    } else {
        format!(
            "flex rule names `%{}`, which is not a flex of the model",
            name.value
        )
    };
    let names: Vec<&str> = descs.iter().map(String::as_str).collect();
    let mut d = Diagnostic::new(Code::BuildFlexUnknownFlex, msg, loc(name.span), "unknown flex")
        .with_note("flexes come from eyelid, mouth, flex, flexpair (NAME becomes NAMER and NAMEL), defaultflex and localvar lines");
    if let Some(s) = crate::suggest::nearest(&name.value, names.iter().copied()) {
        d = d.with_note(format!("help: did you mean `{s}`?"));
    }
    d
}

/// The model material of one of the mesh's own materials, by name (without regard to case).
fn find_mesh_material(mesh: &ModelMesh, materials: &[Material], name: &str) -> Option<MaterialId> {
    let want = name.to_ascii_lowercase();
    mesh.materials.iter().copied().find(|m| {
        materials.get(m.index()).is_some_and(|mat| {
            material_key(Target::Source, &mat.name) == material_key(Target::Source, &want)
        })
    })
}
