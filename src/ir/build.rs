//! Lowering a [`ProjectSpec`] and the SMD files it names into a whole [`Model`].
//!
//! The steps, in order:
//! 1. **Load** every file once (by resolved path; a second spelling of the same file is the same
//!    file). A file missing as written but present in another case is used with a warning; a
//!    missing file is an error at its reference, with the nearest existing name. SMD problems
//!    are reported by [`check_smd`] in the SMD's own file; a file with an error is skipped.
//! 2. **`$renamebone`** renames bones of every loaded file (GoldSrc: exact names, first match;
//!    Source: without regard to case).
//! 3. **Skeleton merge** (see `Builder::merge_goldsrc` and `Builder::merge_source`).
//! 4. **Meshes** get merged bone ids and model material ids; positions are multiplied by their
//!    file's scale.
//! 5. **Materials and skins**: the global list in order of first use, then `$texrendermode`
//!    names, then texture group names; the first texture group becomes the skin table.
//! 6. **Animations** are mapped onto the merged skeleton by name, frames filled with the target's
//!    rule and cut to their `frames` range. The root transform is kept as parameters.
//! 7. **Sequences** resolve their animation names; blend grids are checked (Source).
//! 8. **Bone references** of every other command are resolved.
//!
//! Every independent problem is reported; the model is returned only when none is an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Sources};
use crate::load::{Fs, LoadedSmd, SmdLoader, SmdRef};
use crate::project::spec::{self, FileRef, ProjectSpec, Spanned, Target};

use super::anim::{FillRule, Pose, UsesLeft};
use super::mesh::{Corner, Mesh, Triangle, Weight};
use super::model::*;
use super::skeleton::{Bone, BoneId};
use crate::load::shared::SharedSmds;
use crate::smd::SmdModel;

/// Loads every file the project references and builds the model. Returns `None` when an error
/// was reported (every independent problem is still reported).
pub fn build_model(
    spec: &ProjectSpec,
    fs: &dyn Fs,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<Model> {
    build_model_sharing(spec, fs, sources, diags, None)
}

/// [`build_model`] as one of several projects built at once: SMD files another of them parsed
/// and still holds are taken from `shared` rather than parsed again (see [`super::shared`]).
pub fn build_model_sharing(
    spec: &ProjectSpec,
    fs: &dyn Fs,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
    shared: Option<&SharedSmds>,
) -> Option<Model> {
    let before = diags.len();
    let target = spec.target.target();
    let mut b = Builder {
        spec,
        sources,
        diags,
        target,
        loader: SmdLoader::new(fs, target, shared),
        first_scale: HashMap::new(),
    };
    b.prefetch();
    let model = b.run();
    if spec.body_parts.is_empty() && spec.sequences.is_empty() && spec.include_models.is_empty() {
        b.diags.push(empty_model(spec, b.sources));
    }
    let failed = b
        .diags
        .get(before..)
        .unwrap_or(&[])
        .iter()
        .any(|d| d.is_error());
    if failed {
        None
    } else {
        model
    }
}

/// [`Code::BuildEmptyModel`]: at `$modelname` when there is one, else at the project file's
/// first line.
fn empty_model(spec: &ProjectSpec, sources: &Sources) -> Diagnostic {
    let message = "the model has no body part and no sequence";
    let d = match &spec.name {
        Some(n) => Diagnostic::new(
            Code::BuildEmptyModel,
            message,
            n.span.span(),
            "this model has nothing to draw or animate",
        ),
        None => {
            let name = spec.source.display().to_string();
            let file = (0..sources.len() as u32)
                .map(FileId)
                .find(|&id| sources.name(id) == name);
            match file {
                Some(id) => {
                    let text = sources.text(id);
                    let end = text.find(['\n', '\r']).unwrap_or(text.len());
                    let end = u32::try_from(end).unwrap_or(0);
                    Diagnostic::new(
                        Code::BuildEmptyModel,
                        message,
                        crate::diag::Span::new(0, end).in_file(id),
                        "this project has nothing to draw or animate",
                    )
                }
                None => Diagnostic::about_file(Code::BuildEmptyModel, message, name),
            }
        }
    };
    d.with_note("a model needs geometry (`$body`, `$model` or `$bodygroup`) or sequences; mdlc writes no file")
        .with_note("help: add `$body \"body\" \"reference_file\"` with the reference SMD, and a sequence")
}

/// A file loaded without error.
struct Builder<'a> {
    spec: &'a ProjectSpec,
    sources: &'a mut Sources,
    diags: &'a mut Vec<Diagnostic>,
    target: Target,
    /// The project's SMD files, each loaded once.
    loader: SmdLoader<'a>,
    /// Source loads each file once: the scale of its first load.
    first_scale: HashMap<usize, f32>,
}

/// A mesh to be: a loaded file with the options of the reference that named it.
struct PendingMesh {
    loaded: usize,
    name: String,
    reverse: bool,
    scale: f32,
    origin_offset: [f32; 3],
    flex_block: Option<Spanned<String>>,
    span: FileSpan,
    written: String,
}

/// A `replacemodel`: the replaced body mesh, the replacement, the span of `from`.
type LodReplacement = (Option<MeshId>, Option<MeshId>, FileSpan);

/// The merged skeleton while it is built.
struct Table {
    bones: Vec<ModelBone>,
    /// Parent names of `$definebone` bones, resolved after the merge.
    define_parents: Vec<(usize, Spanned<String>)>,
}

fn loc(l: spec::Loc) -> FileSpan {
    l.span()
}

/// The file name without folders and extension.
fn stem(written: &str) -> String {
    let s = written.replace('\\', "/");
    let last = s.rsplit('/').next().unwrap_or(&s).to_string();
    match last.rfind('.') {
        Some(i) if i > 0 => last.get(..i).unwrap_or(&last).to_string(),
        _ => last,
    }
}

use crate::suggest::nearest;

impl Builder<'_> {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn same_name(&self, a: &str, b: &str) -> bool {
        match self.target {
            Target::GoldSrc => a == b,
            Target::Source => a.eq_ignore_ascii_case(b),
        }
    }

    // --- 1. loading ---------------------------------------------------------------------------

    /// Loads a file once; reports a missing or broken file. `what` names the reference in
    /// messages ("mesh", "animation", …).
    fn load(&mut self, fr: &FileRef, what: &str) -> Option<usize> {
        let r = SmdRef {
            path: &fr.path,
            written: &fr.written,
            at: loc(fr.span),
        };
        self.loader.load(r, what, self.sources, self.diags)
    }

    /// Reads and parses every SMD file the project references ahead of [`Builder::run`], in
    /// the order it loads them (so they get the same file ids).
    fn prefetch(&mut self) {
        let spec = self.spec;
        let mut refs: Vec<&Path> = Vec::new();
        for bp in &spec.body_parts {
            for opt in &bp.options {
                if let spec::BodyOption::Model(m) = opt {
                    refs.push(&m.file.path);
                }
            }
        }
        for lod in &spec.lods {
            for r in &lod.replace_models {
                refs.push(&r.to.path);
            }
        }
        for a in &spec.animations {
            refs.push(&a.file.path);
        }
        if let Some(c) = &spec.collision {
            refs.push(&c.file.path);
        }
        self.loader.prefetch(&refs, self.sources);
    }

    /// Loads a file once; reports a missing or broken file. `what` names the reference in
    /// messages ("mesh", "animation", …).
    fn run(&mut self) -> Option<Model> {
        let spec = self.spec;

        // Body parts, then LOD meshes.
        let mut pending: Vec<PendingMesh> = Vec::new();
        let mut body_parts = Vec::new();
        for bp in &spec.body_parts {
            let mut options = Vec::new();
            for opt in &bp.options {
                match opt {
                    spec::BodyOption::Blank(l) => options.push(BodyOption::Blank(loc(*l))),
                    spec::BodyOption::Model(m) => {
                        if let Some(i) = self.load_mesh(&m.file, m.scale) {
                            pending.push(PendingMesh {
                                loaded: i,
                                name: stem(&m.file.written),
                                reverse: m.reverse,
                                scale: m.scale,
                                origin_offset: m.origin_offset,
                                flex_block: m.flex_block.clone(),
                                span: loc(m.file.span),
                                written: m.name.clone(),
                            });
                            options.push(BodyOption::Mesh(MeshId(pending.len() as u32 - 1)));
                        }
                    }
                }
            }
            if bp.options.is_empty() {
                // the engine picks a part's model as `body / base % nummodels`
                self.push(
                    Diagnostic::new(
                        Code::BuildEmptyBodyGroup,
                        format!("body group `{}` has no model", bp.name.value),
                        loc(bp.name.span),
                        "no `studio` or `blank` in this group",
                    )
                    .with_note("the engine divides by a body group's number of models to pick one; Valve's HL1 compiler writes such a group anyway, and the game crashes on it")
                    .with_note("help: add `studio \"file\"` or `blank`, or remove the group"),
                );
            }
            body_parts.push(BodyPart {
                name: bp.name.clone(),
                options,
                span: loc(bp.span),
            });
        }
        let body_meshes = pending.len();
        let mut lod_replacements: Vec<Vec<LodReplacement>> = Vec::new();
        for lod in &spec.lods {
            let mut reps = Vec::new();
            for r in &lod.replace_models {
                let from = self.find_body_mesh(&pending[..body_meshes], &r.from);
                let to = self.load_mesh(&r.to, r.scale).map(|i| {
                    pending.push(PendingMesh {
                        loaded: i,
                        name: stem(&r.to.written),
                        reverse: r.reverse,
                        scale: r.scale,
                        origin_offset: [0.0; 3],
                        flex_block: None,
                        span: loc(r.to.span),
                        written: r.name.clone(),
                    });
                    MeshId(pending.len() as u32 - 1)
                });
                reps.push((from, to, loc(r.from.span)));
            }
            lod_replacements.push(reps);
        }

        // Animations: load their files (first scale per file for Source).
        let mut anim_files: Vec<Option<usize>> = Vec::new();
        for a in &spec.animations {
            let i = self.load(&a.file, "animation");
            if let Some(i) = i {
                self.first_scale.entry(i).or_insert(a.scale);
            }
            anim_files.push(i);
        }
        let collision_file = spec
            .collision
            .as_ref()
            .and_then(|c| self.load(&c.file, "collision model"));

        // 2. renames (`$mirrorbone` names bones as the files spell them before renaming)
        let mirror_names = self.mirror_names();
        self.apply_renames();

        // 3. skeleton
        let table = match self.target {
            Target::GoldSrc => self.merge_goldsrc(&pending),
            Target::Source => self.merge_source(&pending, &anim_files),
        };
        let bones = table;

        // 4. meshes and 5. materials
        let mut materials: Vec<Material> = Vec::new();
        let mut meshes = Vec::new();
        for p in &pending {
            meshes.push(self.make_mesh(p, &bones, &mut materials));
        }
        let skins = self.materials_and_skins(&mut materials);

        // 6. animations
        let mut animations = Vec::new();
        let mut anim_ids: Vec<Option<AnimId>> = Vec::new();
        // Nothing reads a file's frames after its last animation is made: they are let go
        // then, so that a large model does not hold them beside the animations made of them.
        let mut uses = UsesLeft::count(
            self.loader.files.len(),
            anim_files.iter().flatten().copied(),
        );
        for (a, f) in spec.animations.iter().zip(&anim_files) {
            let made = f.and_then(|f| self.make_anim(a, f, &bones));
            if let Some(f) = *f {
                if let (true, Some(l)) = (uses.used(f), self.loader.files.get_mut(f)) {
                    // (`make_mut` copies nothing when no other project holds the file: it
                    // only cuts the batch table's weak reference, `super::shared`)
                    match Arc::strong_count(&l.smd) {
                        1 => Arc::make_mut(&mut l.smd).animation.release_frames(),
                        // Another project of the batch holds the file too: this one lets go
                        // of its hold on the frames (the last holder frees them), keeping the
                        // rest of the file.
                        _ => {
                            let s = &l.smd;
                            l.smd = Arc::new(SmdModel {
                                file: s.file,
                                skeleton: s.skeleton.clone(),
                                mesh: s.mesh.clone(),
                                animation: s.animation.without_frames(),
                                flex: s.flex.clone(),
                                negative_time: s.negative_time,
                            });
                        }
                    }
                }
            }
            match made {
                Some(anim) => {
                    animations.push(anim);
                    anim_ids.push(Some(AnimId(animations.len() as u32 - 1)));
                }
                None => anim_ids.push(None),
            }
        }

        // 7. sequences
        let sequences = self.make_sequences(&anim_ids);

        // 8. bone references
        // `$staticprop` (Source) merges every bone into one named `static_prop`, which will be
        // bone 0; commands may name it before that pass has run.
        let static_prop = self.target == Target::Source && spec.static_prop;
        let find = |name: &str| -> Option<BoneId> {
            bones
                .iter()
                .position(|b| b.name.eq_ignore_ascii_case(name))
                .map(|i| BoneId(i as u32))
                .or_else(|| {
                    (static_prop && !bones.is_empty() && name.eq_ignore_ascii_case("static_prop"))
                        .then_some(BoneId(0))
                })
        };
        let bone_names: Vec<String> = bones.iter().map(|b| b.name.clone()).collect();
        let mut r = Resolver {
            find: &find,
            names: &bone_names,
            diags: Vec::new(),
        };
        let attachments: Vec<Attachment> = spec
            .attachments
            .iter()
            .filter_map(|a| {
                Some(Attachment {
                    name: a.name.clone(),
                    bone: r.must(&a.bone, "attachment")?,
                    position: a.position,
                    flags: a.flags.clone(),
                    rotate_deg: a.rotate_deg,
                    x_and_z_axes: a.x_and_z_axes,
                    span: loc(a.span),
                })
            })
            .collect();
        let hitbox_sets = spec
            .hitbox_sets
            .iter()
            .map(|s| HitboxSet {
                name: s.name.clone(),
                boxes: s
                    .boxes
                    .iter()
                    .filter_map(|h| {
                        Some(Hitbox {
                            group: h.group,
                            bone: r.must(&h.bone, "hit box")?,
                            min: h.min,
                            max: h.max,
                            name: h.name.clone(),
                            span: loc(h.span),
                        })
                    })
                    .collect(),
            })
            .collect();
        let hit_groups = spec
            .hit_groups
            .iter()
            .filter_map(|(g, b)| Some((g.value, r.must(b, "hit group")?, loc(g.span))))
            .collect();
        let controllers = spec
            .controllers
            .iter()
            .filter_map(|c| {
                Some(Controller {
                    index: c.index.value,
                    bone: r.must(&c.bone, "bone controller")?,
                    axis: c.axis.clone(),
                    start: c.start,
                    end: c.end,
                    span: loc(c.span),
                })
            })
            .collect();
        let gold = self.target == Target::GoldSrc;
        let mirror_bones = spec
            .mirror_bones
            .iter()
            .zip(&mirror_names)
            .filter_map(|(b, renamed)| {
                if !gold {
                    return Some((r.may(b, "$mirrorbone")?, loc(b.span)));
                }
                // GoldSrc bone names are compared with case (`findNode`)
                let renamed = renamed.as_ref()?;
                match bones.iter().position(|x| x.name == renamed.value) {
                    Some(i) => Some((BoneId(i as u32), loc(b.span))),
                    None => {
                        let d = bone_not_found(
                            Code::BuildUnusedBoneName,
                            renamed,
                            "$mirrorbone",
                            bones.iter().map(|x| x.name.as_str()),
                            Some("it is ignored, as in Valve's compilers"),
                            None,
                        );
                        r.diags.push(d);
                        None
                    }
                }
            })
            .collect();
        let always_collapse = spec
            .always_collapse
            .iter()
            .filter_map(|b| Some((r.may(b, "$alwayscollapse")?, loc(b.span))))
            .collect();
        let bone_merge = spec
            .bone_merge
            .iter()
            .filter_map(|b| Some((r.must(b, "$bonemerge")?, loc(b.span))))
            .collect();
        let root_bone = spec.root_bone.as_ref().and_then(|b| {
            let id = if gold {
                r.may(b, "$root")
            } else {
                r.must(b, "$root")
            };
            Some((id?, loc(b.span)))
        });
        let pivots = spec
            .pivots
            .iter()
            .map(|(i, b)| (i.value, r.may(b, "$pivot"), loc(i.span)))
            .collect();
        let weight_lists = spec
            .weight_lists
            .iter()
            .map(|w| WeightList {
                name: w.name.clone(),
                weights: w
                    .weights
                    .iter()
                    .filter_map(|bw| {
                        Some((r.may(&bw.bone, "weight list")?, bw.weight, bw.pos_weight))
                    })
                    .collect(),
            })
            .collect();
        let mut lods = Vec::new();
        for (lod, reps) in spec.lods.iter().zip(&lod_replacements) {
            let replace_models = reps
                .iter()
                .filter_map(|&(f, t, s)| Some((f?, t?, s)))
                .collect();
            let remove_models = lod
                .remove_models
                .iter()
                .filter_map(|m| {
                    Some((
                        self.find_body_mesh(&pending[..body_meshes], m)?,
                        loc(m.span),
                    ))
                })
                .collect();
            let replace_bones = lod
                .replace_bones
                .iter()
                .filter_map(|(a, b)| {
                    Some((
                        r.may(a, "replacebone")?,
                        r.may(b, "replacebone")?,
                        loc(a.span),
                    ))
                })
                .collect();
            let bone_tree_collapse = lod
                .bone_tree_collapse
                .iter()
                .filter_map(|b| Some((r.may(b, "bonetreecollapse")?, loc(b.span))))
                .collect();
            lods.push(Lod {
                distance: lod.distance.clone(),
                replace_models,
                remove_models,
                replace_materials: lod.replace_materials.clone(),
                remove_meshes: lod.remove_meshes.clone(),
                replace_bones,
                bone_tree_collapse,
                facial: lod.facial,
                use_shadowlod_materials: lod.use_shadowlod_materials,
                span: loc(lod.span),
            });
        }
        let resolver_diags = std::mem::take(&mut r.diags);
        self.diags.extend(resolver_diags);

        let collision = match (&spec.collision, collision_file) {
            (Some(c), Some(i)) => self.loader.files.get(i).map(|l| Collision {
                joints: c.joints,
                path: l.path.clone(),
                file: l.file,
                mesh: l.smd.mesh.clone().unwrap_or_default(),
                skeleton: l.smd.skeleton.clone(),
                commands: c.commands.clone(),
                span: loc(c.span),
            }),
            _ => None,
        };

        Some(Model {
            target: self.target,
            name: spec.name.clone(),
            material_dirs: spec.material_dirs.clone(),
            texture_dirs: spec.texture_dirs.clone(),
            materials,
            skins,
            rename_materials: spec.rename_materials.clone(),
            gamma: spec.gamma.clone(),
            external_textures: spec.external_textures,
            bones,
            meshes,
            body_parts,
            lods,
            animations,
            sequences,
            pose_parameters: spec.pose_parameters.clone(),
            weight_lists,
            sequence_groups: spec.sequence_groups.clone(),
            sequence_group_size: spec.sequence_group_size.clone(),
            skip_transitions: spec.skip_transitions.clone(),
            section_frames: spec.section_frames.clone(),
            anim_block_size: spec.anim_block_size.clone(),
            include_models: spec.include_models.clone(),
            attachments,
            hitbox_sets,
            hit_groups,
            controllers,
            mirror_bones,
            always_collapse,
            collapse_bones: spec.collapse_bones,
            bone_merge,
            root_bone,
            pivots,
            eye_position: spec.eye_position.clone(),
            illum_position: spec.illum_position.clone(),
            bbox: spec.bbox.clone(),
            cbox: spec.cbox.clone(),
            flags: spec.flags.clone(),
            surface_prop: spec.surface_prop.clone(),
            contents: spec.contents.clone(),
            static_prop: spec.static_prop,
            keyvalues: spec.keyvalues.clone(),
            header_flags: spec.header_flags.clone(),
            collision,
        })
    }

    /// Loads a reference mesh; warns when it has no triangles.
    fn load_mesh(&mut self, fr: &FileRef, scale: f32) -> Option<usize> {
        let i = self.load(fr, "mesh")?;
        self.first_scale.entry(i).or_insert(scale);
        let empty = self
            .loader
            .files
            .get(i)
            .is_none_or(|l| l.smd.mesh.as_ref().is_none_or(|m| m.triangles.is_empty()));
        if empty {
            self.push(
                Diagnostic::new(
                    Code::BuildNoTriangles,
                    format!("mesh file `{}` has no triangles", fr.written),
                    loc(fr.span),
                    "this file gives no triangle",
                )
                .with_note(
                    "a reference mesh has a `triangles` section; is this an animation file?",
                ),
            );
        }
        Some(i)
    }

    /// `replacemodel`/`removemodel`: a body mesh named by its file name, extension stripped,
    /// without regard to case.
    fn find_body_mesh(&mut self, body: &[PendingMesh], name: &Spanned<String>) -> Option<MeshId> {
        let want = stem(&name.value);
        if let Some(i) = body.iter().position(|p| p.name.eq_ignore_ascii_case(&want)) {
            return Some(MeshId(i as u32));
        }
        let mut d = Diagnostic::new(
            Code::BuildUnknownModel,
            format!("no model `{}` was loaded", name.value),
            loc(name.span),
            "not the name of a body part mesh",
        )
        .with_note("`replacemodel` and `removemodel` name a mesh file loaded by `$body`, `$model` or `$bodygroup`, without its extension");
        if let Some(n) = nearest(&want, body.iter().map(|p| p.name.as_str())) {
            d = d.with_note(format!("help: did you mean `{n}`?"));
        } else if !body.is_empty() {
            let names: Vec<String> = body
                .iter()
                .take(8)
                .map(|p| format!("`{}`", p.name))
                .collect();
            d = d.with_note(format!("loaded: {}", names.join(", ")));
        }
        self.push(d);
        None
    }

    // --- 2. renames --------------------------------------------------------------------------

    fn apply_renames(&mut self) {
        let renames = &self.spec.rename_bones;
        let gold = self.target == Target::GoldSrc;
        let mut used = vec![false; renames.len()];
        let hit = |name: &str| {
            renames.iter().position(|(from, _)| {
                if gold {
                    from.value == name
                } else {
                    from.value.eq_ignore_ascii_case(name)
                }
            })
        };
        for l in &mut self.loader.files {
            // (a file shared with other projects is copied only when a bone of it is renamed)
            if !l.smd.skeleton.bones.iter().any(|b| hit(&b.name).is_some()) {
                continue;
            }
            for b in &mut Arc::make_mut(&mut l.smd).skeleton.bones {
                let hit = hit(&b.name);
                if let Some(k) = hit {
                    if let (Some((_, to)), Some(u)) = (renames.get(k), used.get_mut(k)) {
                        b.name = to.value.clone();
                        *u = true;
                    }
                }
            }
        }
        let mut out = Vec::new();
        for ((from, _), u) in renames.iter().zip(&used) {
            if !u {
                let mut d = Diagnostic::new(
                    Code::BuildUnusedBoneName,
                    format!(
                        "`$renamebone` names bone \"{}\", which no loaded file has",
                        from.value
                    ),
                    loc(from.span),
                    "no bone of this name",
                )
                .with_note("the rename is ignored");
                let all = self
                    .loader
                    .files
                    .iter()
                    .flat_map(|l| l.smd.skeleton.bones.iter().map(|b| b.name.as_str()));
                if let Some(n) = nearest(&from.value, all) {
                    d = d.with_note(format!("help: did you mean \"{n}\"?"));
                }
                out.push(d);
            }
        }
        self.diags.extend(out);
    }

    /// For each `$mirrorbone` (GoldSrc), the name of the bone it mirrors after `$renamebone`;
    /// `None` (with a warning) when no loaded file has a bone of that exact name. Valve's HL1
    /// tool marks a node mirrored while reading each SMD (`Grab_Nodes`, `strcmp` against every
    /// `$mirrorbone` name), long before `SimplifyModel` renames bones, so the name is matched
    /// as the files spell it, with case, and then follows its rename (the first
    /// `$renamebone` from that name, as `apply_renames` does). Source: the names as written.
    fn mirror_names(&mut self) -> Vec<Option<Spanned<String>>> {
        let spec = self.spec;
        if self.target != Target::GoldSrc {
            return spec.mirror_bones.iter().cloned().map(Some).collect();
        }
        let mut out = Vec::with_capacity(spec.mirror_bones.len());
        let mut warns = Vec::new();
        for m in &spec.mirror_bones {
            let names = || {
                self.loader
                    .files
                    .iter()
                    .flat_map(|l| l.smd.skeleton.bones.iter().map(|b| b.name.as_str()))
            };
            if names().any(|n| n == m.value) {
                // Valve's tool marks nodes while it reads each SMD, at its `$body` or
                // `$sequence`: a `$mirrorbone` after them reaches none of those files.
                let (before, after) = self.reads_around(m.span, true);
                if before > 0 {
                    let mut d = Diagnostic::new(
                        Code::BuildMirrorAfterFiles,
                        format!(
                            "`$mirrorbone \"{}\"` comes after {before} SMD file{} {} read",
                            m.value,
                            if before == 1 { "" } else { "s" },
                            if before == 1 { "is" } else { "are" }
                        ),
                        loc(m.span),
                        "after those files are read",
                    )
                    .with_note("Valve's HL1 compiler marks a bone mirrored while it reads each SMD file, at its `$body` or `$sequence`, with the `$mirrorbone` commands read so far");
                    if after == 0 {
                        d = d.with_note("it comes after every SMD file, so it mirrors nothing, and mdlc ignores it too");
                    } else {
                        d = d.with_note(format!(
                            "Valve's tool would mirror the bone only in the {after} SMD file{} read after it; mdlc mirrors it in every file",
                            if after == 1 { "" } else { "s" }
                        ));
                    }
                    warns.push(d.with_note(
                        "help: put `$mirrorbone` before the `$body` and `$sequence` commands",
                    ));
                    if after == 0 {
                        out.push(None);
                        continue;
                    }
                }
                let to = spec
                    .rename_bones
                    .iter()
                    .find(|(from, _)| from.value == m.value)
                    .map_or_else(|| m.value.clone(), |(_, to)| to.value.clone());
                out.push(Some(Spanned {
                    value: to,
                    span: m.span,
                }));
                continue;
            }
            out.push(None);
            let mut d = Diagnostic::new(
                Code::BuildUnusedBoneName,
                format!(
                    "`$mirrorbone` names bone \"{}\", which no loaded file has",
                    m.value
                ),
                loc(m.span),
                "no bone of this name",
            )
            .with_note("it is ignored: Valve's HL1 compiler compares `$mirrorbone` with the bone names of each SMD file as written (with case), before any `$renamebone`");
            let renamed_from: Vec<&str> = spec
                .rename_bones
                .iter()
                .filter(|(from, to)| to.value == m.value && names().any(|n| n == from.value))
                .map(|(from, _)| from.value.as_str())
                .collect();
            if let Some(from) = renamed_from.first() {
                d = d.with_note(format!(
                    "help: `$renamebone` gives this name to \"{from}\"; write `$mirrorbone \"{from}\"` to mirror it"
                ));
            } else if let Some(n) = nearest(&m.value, names()) {
                d = d.with_note(format!("help: did you mean \"{n}\"?"));
            }
            warns.push(d);
        }
        self.diags.extend(warns);
        out
    }

    /// W0411 when the first texture group of a QC comes before every `$body` (and every
    /// `$texrendermode`): Valve's HL1 compiler stops there, as no texture is known yet
    /// ("texturegroups must follow model loading"); mdlc reads the group after the last `$body`
    /// (`formats::goldsrc::texture_order`).
    fn texture_group_too_early(&self, g: &spec::TextureGroup, warns: &mut Vec<Diagnostic>) {
        let (before, after) = self.reads_around(g.name.span, false);
        let key = self.sources.reading_order(loc(g.name.span));
        let mode_before = self
            .spec
            .texture_render_modes
            .iter()
            .any(|rm| self.sources.reading_order(loc(rm.texture.span)) < key);
        if before > 0 || after == 0 || mode_before {
            return;
        }
        warns.push(
            Diagnostic::new(
                Code::BuildTextureGroupFirst,
                format!("texture group `{}` comes before every `$body`", g.name.value),
                loc(g.name.span),
                "no texture is known here yet",
            )
            .with_note("Valve's HL1 compiler stops here (\"texturegroups must follow model loading\"): a texture group replaces the textures the bodies read before it")
            .with_note("mdlc reads the group as if it came after the last `$body`")
            .with_note("help: move `$texturegroup` after the `$body` and `$bodygroup` commands"),
        );
    }

    /// How many SMD file reads of a QC (`$body` files, and `$sequence` files when `animations`,
    /// in reading order) come before and after `at`; (0, 0) for a TOML project, which has no
    /// order of commands.
    fn reads_around(&self, at: spec::Loc, animations: bool) -> (usize, usize) {
        let at = loc(at);
        let is_toml = std::path::Path::new(self.sources.name(at.file))
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        if is_toml {
            return (0, 0);
        }
        let spec = self.spec;
        let bodies = spec.body_parts.iter().flat_map(|bp| &bp.options);
        let reads = bodies
            .filter_map(|o| match o {
                spec::BodyOption::Model(m) => Some(m.file.span),
                spec::BodyOption::Blank(_) => None,
            })
            .chain(
                spec.animations
                    .iter()
                    .filter(|_| animations)
                    .map(|a| a.span),
            );
        let key = self.sources.reading_order(at);
        let mut n = (0, 0);
        for r in reads {
            if self.sources.reading_order(loc(r)) < key {
                n.0 += 1;
            } else {
                n.1 += 1;
            }
        }
        n
    }

    // --- 3. skeleton -------------------------------------------------------------------------

    /// Bone names (lower case) that commands name. `always`: bones Source counts as referenced
    /// in every file that has them (`$attachment`, `$bonemerge`; `source-animation.md` §2.2).
    /// `keep`: bones kept only when no file uses them otherwise — GoldSrc attachments,
    /// controllers, hit boxes and hit groups (Valve's HL1 tool drops such bones and then fails;
    /// mdlc keeps them), Source controllers, hit boxes and hit groups.
    fn named_bones(&self) -> (Vec<String>, Vec<String>) {
        let s = self.spec;
        let lower = |b: &Spanned<String>| b.value.to_ascii_lowercase();
        let mut always: Vec<String> = Vec::new();
        let mut keep: Vec<String> = Vec::new();
        let attachments = s.attachments.iter().map(|a| lower(&a.bone));
        match self.target {
            Target::GoldSrc => keep.extend(attachments),
            Target::Source => {
                always.extend(attachments);
                always.extend(s.bone_merge.iter().map(lower));
            }
        }
        keep.extend(s.controllers.iter().map(|c| lower(&c.bone)));
        keep.extend(
            s.hitbox_sets
                .iter()
                .flat_map(|h| &h.boxes)
                .map(|b| lower(&b.bone)),
        );
        keep.extend(s.hit_groups.iter().map(|(_, b)| lower(b)));
        for v in [&mut always, &mut keep] {
            v.sort();
            v.dedup();
        }
        (always, keep)
    }

    /// The bones a file's vertices use: GoldSrc the first column (Valve's HL1 tool ignores
    /// weights), Source every weighted bone.
    fn vertex_bones(&self, smd: &SmdModel) -> Vec<BoneId> {
        let mut out: Vec<BoneId> = Vec::new();
        let Some(m) = &smd.mesh else { return out };
        let mut seen = vec![false; smd.skeleton.bones.len()];
        let mut add = |b: BoneId| {
            if let Some(s) = seen.get_mut(b.index()) {
                if !*s {
                    *s = true;
                    out.push(b);
                }
            }
        };
        for t in &m.triangles {
            for c in &t.corners {
                match self.target {
                    Target::GoldSrc => add(c.bone),
                    Target::Source => m.weights_of(c).iter().for_each(|w| add(w.bone)),
                }
            }
        }
        out
    }

    /// Marks the used bones of one file: `seed` bones and every ancestor of them.
    fn used_bones(smd: &SmdModel, seed: impl Iterator<Item = BoneId>) -> Vec<bool> {
        let n = smd.skeleton.bones.len();
        let mut used = vec![false; n];
        for b in seed {
            let mut cur = Some(b);
            let mut steps = 0;
            while let Some(c) = cur {
                match used.get_mut(c.index()) {
                    Some(u) if !*u => *u = true,
                    _ => break,
                }
                steps += 1;
                if steps > n {
                    break;
                }
                cur = smd.skeleton.get(c).and_then(|b| b.parent);
            }
        }
        used
    }

    /// The used bones of each of `files` (in load order): vertex bones, `always` names in every
    /// file that has them, then each `keep` name no file uses yet in the first file that has it;
    /// with their ancestors.
    fn used_per_file(&self, files: &[usize]) -> HashMap<usize, Vec<bool>> {
        let (always, keep) = self.named_bones();
        let mut seeds: HashMap<usize, Vec<BoneId>> = HashMap::new();
        for &f in files {
            let Some(l) = self.loader.files.get(f) else {
                continue;
            };
            let mut v = self.vertex_bones(&l.smd);
            v.extend(always.iter().filter_map(|n| l.smd.skeleton.find(n)));
            seeds.insert(f, v);
        }
        let used_now = |seeds: &HashMap<usize, Vec<BoneId>>, f: usize| -> Vec<bool> {
            match (self.loader.files.get(f), seeds.get(&f)) {
                (Some(l), Some(s)) => Self::used_bones(&l.smd, s.iter().copied()),
                _ => Vec::new(),
            }
        };
        for name in &keep {
            let covered = files.iter().any(|&f| {
                let used = used_now(&seeds, f);
                self.loader.files.get(f).is_some_and(|l| {
                    l.smd
                        .skeleton
                        .bones
                        .iter()
                        .zip(&used)
                        .any(|(b, u)| *u && b.name.eq_ignore_ascii_case(name))
                })
            });
            if covered {
                continue;
            }
            for &f in files {
                let Some(l) = self.loader.files.get(f) else {
                    continue;
                };
                if let Some(b) = l.smd.skeleton.find(name) {
                    seeds.entry(f).or_default().push(b);
                    break;
                }
            }
        }
        files.iter().map(|&f| (f, used_now(&seeds, f))).collect()
    }

    /// The rest pose a file gives a bone, scaled. GoldSrc takes the last value the reference
    /// skeleton writes (`time` lines are ignored there, so the last frame wins); Source frame 0.
    fn rest_of(&self, l: &LoadedSmd, b: usize, scale: f32) -> Pose {
        let a = &l.smd.animation;
        let mut p = match self.target {
            Target::GoldSrc => (0..a.num_frames)
                .rev()
                .find_map(|f| a.get(f, b))
                .unwrap_or_default(),
            Target::Source => l
                .smd
                .skeleton
                .bones
                .get(b)
                .map(|b| b.rest)
                .unwrap_or_default(),
        };
        for c in &mut p.pos {
            *c *= scale;
        }
        p
    }

    /// GoldSrc (`goldsrc.md` §8.4): models in body order, nodes in file order, used bones only,
    /// exact names; a known bone given another parent is "illegal parent bone replacement".
    fn merge_goldsrc(&mut self, pending: &[PendingMesh]) -> Vec<ModelBone> {
        let files: Vec<usize> = pending.iter().map(|p| p.loaded).collect();
        let used_of = self.used_per_file(&files);
        let mut bones: Vec<ModelBone> = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        let mut errs = Vec::new();
        for p in pending {
            if done.contains(&p.loaded) {
                continue;
            }
            done.push(p.loaded);
            let Some(l) = self.loader.files.get(p.loaded) else {
                continue;
            };
            let used = used_of.get(&p.loaded).cloned().unwrap_or_default();
            for (i, b) in l.smd.skeleton.bones.iter().enumerate() {
                if !used.get(i).copied().unwrap_or(false) {
                    continue;
                }
                let file_parent = b.parent.and_then(|p| l.smd.skeleton.get(p));
                if let Some(existing) = bones.iter().find(|x| x.name == b.name) {
                    let old_parent = existing
                        .parent
                        .and_then(|p| bones.get(p.index()))
                        .map(|x| x.name.as_str());
                    let new_parent = file_parent.map(|x| x.name.as_str());
                    if old_parent != new_parent {
                        errs.push(illegal_parent(
                            b,
                            new_parent,
                            old_parent,
                            existing.span,
                            "model",
                        ));
                    }
                    continue;
                }
                let parent = file_parent
                    .and_then(|fp| bones.iter().position(|x| x.name == fp.name))
                    .map(|i| BoneId(i as u32));
                bones.push(ModelBone {
                    name: b.name.clone(),
                    parent,
                    rest: self.rest_of(l, i, p.scale),
                    rest_parent: parent,
                    fixup: None,
                    defined: false,
                    span: b.span,
                });
            }
        }
        self.diags.extend(errs);
        bones
    }

    /// Source (`source-animation.md` §2.2): `$definebone` first, then the referenced bones of
    /// every loaded file in load order (meshes, LOD meshes, animations), names without regard
    /// to case; `$hierarchy` re-parents, then the table is reordered so parents come first.
    fn merge_source(
        &mut self,
        pending: &[PendingMesh],
        anim_files: &[Option<usize>],
    ) -> Vec<ModelBone> {
        let mut table = Table {
            bones: Vec::new(),
            define_parents: Vec::new(),
        };
        for d in &self.spec.define_bones {
            if table
                .bones
                .iter()
                .any(|b| b.name.eq_ignore_ascii_case(&d.name.value))
            {
                continue;
            }
            let [p, y, r] = d.rotation_deg;
            if let Some(parent) = &d.parent {
                if !parent.value.is_empty() {
                    table
                        .define_parents
                        .push((table.bones.len(), parent.clone()));
                }
            }
            table.bones.push(ModelBone {
                name: d.name.value.clone(),
                parent: None,
                rest: Pose {
                    pos: d.position,
                    rot: [r.to_radians(), p.to_radians(), y.to_radians()],
                },
                rest_parent: None,
                fixup: d.fixup,
                defined: true,
                span: loc(d.span),
            });
        }
        // Load order: every mesh (body parts, then LODs), then animation files.
        let mut order: Vec<(usize, f32)> = Vec::new();
        for p in pending {
            if !order.iter().any(|(f, _)| *f == p.loaded) {
                order.push((
                    p.loaded,
                    self.first_scale.get(&p.loaded).copied().unwrap_or(p.scale),
                ));
            }
        }
        for &f in anim_files.iter().flatten() {
            if !order.iter().any(|(g, _)| *g == f) {
                order.push((f, self.first_scale.get(&f).copied().unwrap_or(1.0)));
            }
        }
        let files: Vec<usize> = order.iter().map(|(f, _)| *f).collect();
        let used_of = self.used_per_file(&files);
        for &(f, scale) in &order {
            let Some(l) = self.loader.files.get(f) else {
                continue;
            };
            let used = used_of.get(&f).cloned().unwrap_or_default();
            for (i, b) in l.smd.skeleton.bones.iter().enumerate() {
                if !used.get(i).copied().unwrap_or(false)
                    || table
                        .bones
                        .iter()
                        .any(|x| x.name.eq_ignore_ascii_case(&b.name))
                {
                    continue;
                }
                let parent = b
                    .parent
                    .and_then(|p| l.smd.skeleton.get(p))
                    .and_then(|fp| {
                        table
                            .bones
                            .iter()
                            .position(|x| x.name.eq_ignore_ascii_case(&fp.name))
                    })
                    .map(|i| BoneId(i as u32));
                let rest = self.rest_of(l, i, scale);
                table.bones.push(ModelBone {
                    name: b.name.clone(),
                    parent,
                    rest,
                    rest_parent: parent,
                    fixup: None,
                    defined: false,
                    span: b.span,
                });
            }
        }
        let mut bones = table.bones;
        let lookup = |bones: &[ModelBone], name: &str| {
            bones
                .iter()
                .position(|x| x.name.eq_ignore_ascii_case(name))
                .map(|i| BoneId(i as u32))
        };
        // `$definebone` parents, then `$hierarchy`.
        let mut errs = Vec::new();
        let mut links: Vec<(usize, Option<BoneId>, FileSpan, &'static str)> = Vec::new();
        for (child, parent) in &table.define_parents {
            match lookup(&bones, &parent.value) {
                Some(p) => links.push((*child, Some(p), loc(parent.span), "$definebone")),
                None => errs.push(unknown_bone(parent, "$definebone parent", &bones)),
            }
        }
        for (child, parent) in &self.spec.hierarchy {
            let c = lookup(&bones, &child.value);
            let p = if parent.value.is_empty() {
                Some(None)
            } else {
                lookup(&bones, &parent.value).map(Some)
            };
            if c.is_none() {
                errs.push(unknown_bone(child, "$hierarchy", &bones));
            }
            if p.is_none() {
                errs.push(unknown_bone(parent, "$hierarchy parent", &bones));
            }
            if let (Some(c), Some(p)) = (c, p) {
                links.push((c.index(), p, loc(parent.span), "$hierarchy"));
            }
        }
        for (child, parent, at, what) in links {
            if let Some(p) = parent {
                // The new parent must not be the bone or one of its descendants.
                let mut cur = Some(p);
                let mut steps = 0;
                let mut cycle = false;
                while let Some(c) = cur {
                    if c.index() == child {
                        cycle = true;
                        break;
                    }
                    steps += 1;
                    if steps > bones.len() {
                        break;
                    }
                    cur = bones.get(c.index()).and_then(|b| b.parent);
                }
                if cycle {
                    let name = bones.get(child).map_or("", |b| b.name.as_str());
                    let pname = bones.get(p.index()).map_or("", |b| b.name.as_str());
                    errs.push(
                        Diagnostic::new(
                            Code::BuildBoneCycle,
                            format!("`{what}` makes bone \"{name}\" its own ancestor"),
                            at,
                            format!("\"{pname}\" descends from \"{name}\""),
                        )
                        .with_note("this parent is ignored"),
                    );
                    continue;
                }
            }
            if let Some(b) = bones.get_mut(child) {
                b.parent = parent;
                if b.defined {
                    b.rest_parent = parent;
                }
            }
        }
        self.diags.extend(errs);
        reorder_parents_first(&mut bones);
        bones
    }

    // --- 4. meshes ---------------------------------------------------------------------------

    /// The merged bone of each bone of a file (GoldSrc: exact name; Source: any case).
    fn bone_map(&self, l: &LoadedSmd, bones: &[ModelBone]) -> Vec<Option<BoneId>> {
        l.smd
            .skeleton
            .bones
            .iter()
            .map(|b| {
                bones
                    .iter()
                    .position(|x| self.same_name(&x.name, &b.name))
                    .map(|i| BoneId(i as u32))
            })
            .collect()
    }

    fn make_mesh(
        &self,
        p: &PendingMesh,
        bones: &[ModelBone],
        materials: &mut Vec<Material>,
    ) -> ModelMesh {
        let Some(l) = self.loader.files.get(p.loaded) else {
            return ModelMesh {
                name: p.name.clone(),
                path: PathBuf::new(),
                file: FileId(0),
                mesh: Mesh::default(),
                materials: Vec::new(),
                reverse: p.reverse,
                scale: p.scale,
                origin_offset: p.origin_offset,
                flex_block: p.flex_block.clone(),
                span: p.span,
                written: p.written.clone(),
                file_bones: Vec::new(),
                source_positions: Vec::new(),
            };
        };
        let map = self.bone_map(l, bones);
        let src = l.smd.mesh.clone().unwrap_or_default();
        let gold = self.target == Target::GoldSrc;
        let mut out = Mesh {
            materials: src.materials.clone(),
            triangles: Vec::with_capacity(src.triangles.len()),
            weights: Vec::with_capacity(src.weights.len()),
        };
        let mapped = |b: BoneId| map.get(b.index()).copied().flatten();
        let mut source_positions = Vec::with_capacity(src.triangles.len());
        'tri: for t in &src.triangles {
            let mut corners: [Option<Corner>; 3] = [None; 3];
            for (slot, c) in corners.iter_mut().zip(&t.corners) {
                let mut ws: Vec<Weight> = Vec::new();
                if gold {
                    let Some(b) = mapped(c.bone) else {
                        continue 'tri;
                    };
                    ws.push(Weight {
                        bone: b,
                        weight: 1.0,
                    });
                } else {
                    for w in src.weights_of(c) {
                        let Some(b) = mapped(w.bone) else {
                            continue 'tri;
                        };
                        ws.push(Weight {
                            bone: b,
                            weight: w.weight,
                        });
                    }
                }
                let Some(first) = ws.first().map(|w| w.bone) else {
                    continue 'tri;
                };
                let bone = mapped(c.bone).unwrap_or(first);
                let start = out.weights.len() as u32;
                out.weights.extend_from_slice(&ws);
                *slot = Some(Corner {
                    pos: c.pos.map(|v| v * p.scale),
                    bone,
                    weights: (start, ws.len() as u32),
                    ..*c
                });
            }
            if let [Some(a), Some(b), Some(c)] = corners {
                out.triangles.push(Triangle {
                    corners: [a, b, c],
                    ..*t
                });
                source_positions.push(t.corners.map(|c| c.pos));
            }
        }
        // Materials: global list, case-insensitive, first spelling kept.
        let mut mat_ids = Vec::with_capacity(out.materials.len());
        for (i, name) in out.materials.iter().enumerate() {
            let used_here = out.triangles.iter().any(|t| t.material as usize == i);
            let span = out
                .triangles
                .iter()
                .find(|t| t.material as usize == i)
                .map_or(p.span, |t| t.span);
            let id = match materials
                .iter()
                .position(|m| material_key(self.target, &m.name) == material_key(self.target, name))
            {
                Some(k) => {
                    if let Some(m) = materials.get_mut(k) {
                        m.used |= used_here;
                    }
                    k
                }
                None => {
                    materials.push(Material {
                        name: name.clone(),
                        render_modes: Vec::new(),
                        used: used_here,
                        span,
                    });
                    materials.len() - 1
                }
            };
            mat_ids.push(MaterialId(id as u32));
        }
        ModelMesh {
            name: p.name.clone(),
            path: l.path.clone(),
            file: l.file,
            mesh: out,
            materials: mat_ids,
            reverse: p.reverse,
            scale: p.scale,
            origin_offset: p.origin_offset,
            flex_block: p.flex_block.clone(),
            span: p.span,
            written: p.written.clone(),
            file_bones: l
                .smd
                .skeleton
                .bones
                .iter()
                .enumerate()
                .map(|(i, b)| MeshBone {
                    name: b.name.clone(),
                    parent: b.parent.map(|p| p.0),
                    rest: self.rest_of(l, i, p.scale),
                    bone: map.get(i).copied().flatten(),
                })
                .collect(),
            source_positions,
        }
    }

    // --- 5. materials and skins --------------------------------------------------------------

    fn materials_and_skins(&mut self, materials: &mut Vec<Material>) -> SkinTable {
        let target = self.target;
        let find_or_add =
            |materials: &mut Vec<Material>, name: &Spanned<String>| -> (usize, bool) {
                match materials.iter().position(|m| {
                    material_key(target, &m.name) == material_key(target, &name.value)
                }) {
                    Some(k) => (k, false),
                    None => {
                        materials.push(Material {
                            name: name.value.clone(),
                            render_modes: Vec::new(),
                            used: false,
                            span: loc(name.span),
                        });
                        (materials.len() - 1, true)
                    }
                }
            };
        for rm in &self.spec.texture_render_modes {
            let (k, _) = find_or_add(materials, &rm.texture);
            if let Some(m) = materials.get_mut(k) {
                m.render_modes.push(rm.mode.clone());
            }
        }
        let num_ref = materials.len();
        let mut table = SkinTable {
            num_ref,
            families: vec![(0..num_ref as u32).map(MaterialId).collect()],
            span: None,
            groups: Vec::new(),
        };
        let mut warns = Vec::new();
        // Every group names its materials in QC order (GoldSrc: Valve's `Cmd_TextureGroup` runs
        // `lookup_texture` on each, so a later group's new textures are written too); Source
        // keeps the first group only.
        let kept = match target {
            Target::GoldSrc => self.spec.texture_groups.len(),
            Target::Source => 1,
        };
        for g in self.spec.texture_groups.iter().take(kept) {
            let rows = g
                .skins
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|name| MaterialId(find_or_add(materials, name).0 as u32))
                        .collect()
                })
                .collect();
            table.groups.push(TextureGroupRows {
                rows,
                span: loc(g.name.span),
            });
        }
        for g in self.spec.texture_groups.iter().skip(1) {
            let d = Diagnostic::new(
                Code::BuildExtraTextureGroup,
                format!("texture group `{}` makes no skins", g.name.value),
                loc(g.name.span),
                "a second texture group",
            )
            .with_note("only the first texture group makes skins, in both of Valve's compilers");
            warns.push(match target {
                Target::GoldSrc => d.with_note("its textures are still written (loaded from their BMPs, after those named before it), as Valve's HL1 compiler does"),
                Target::Source => d,
            });
        }
        if let Some(g) = self.spec.texture_groups.first() {
            table.span = Some(loc(g.name.span));
            if target == Target::GoldSrc {
                self.texture_group_too_early(g, &mut warns);
            }
            let mut rows: Vec<Vec<usize>> = Vec::new();
            for (ri, row) in g.skins.iter().enumerate() {
                let mut ids = Vec::new();
                for name in row {
                    let (k, _) = find_or_add(materials, name);
                    let used = materials.get(k).is_some_and(|m| m.used);
                    if ri == 0 && !used {
                        let candidates: Vec<&str> = materials
                            .iter()
                            .filter(|m| m.used)
                            .map(|m| m.name.as_str())
                            .collect();
                        let mut d = Diagnostic::new(
                            Code::BuildUnusedGroupMaterial,
                            format!("texture group material `{}` is not used by any mesh", name.value),
                            loc(name.span),
                            "no triangle has this material",
                        )
                        .with_note("the first row of a texture group lists materials of the meshes, which the other rows replace");
                        if let Some(n) = nearest(&name.value, candidates) {
                            d = d.with_note(format!("help: did you mean `{n}`?"));
                        }
                        warns.push(d);
                    }
                    ids.push(k);
                }
                rows.push(ids);
            }
            let width = rows.first().map_or(0, Vec::len);
            for (ri, row) in g.skins.iter().enumerate().skip(1) {
                if row.len() != width {
                    let at = row.first().map_or(loc(g.name.span), |n| loc(n.span));
                    warns.push(
                        Diagnostic::new(
                            Code::BuildTextureGroupRows,
                            format!("skin {ri} of texture group `{}` has {} materials, the first has {width}", g.name.value, row.len()),
                            at,
                            format!("{} materials here", row.len()),
                        )
                        .with_note(match target {
                            Target::GoldSrc => "Valve's HL1 compiler replaces as many positions as the last row has, taking the model's first texture where a row has no material (mdlc does the same)",
                            Target::Source => "materials are replaced position by position; the extra positions are ignored",
                        }),
                    );
                }
            }
            let base = rows.first().cloned().unwrap_or_default();
            table.families = rows
                .iter()
                .map(|row| {
                    let mut fam: Vec<MaterialId> = (0..num_ref as u32).map(MaterialId).collect();
                    for (&from, &to) in base.iter().zip(row) {
                        if let Some(slot) = fam.get_mut(from) {
                            *slot = MaterialId(to as u32);
                        }
                    }
                    fam
                })
                .collect();
            if table.families.is_empty() {
                table.families = vec![(0..num_ref as u32).map(MaterialId).collect()];
            }
        }
        self.diags.extend(warns);
        table
    }

    // --- 6. animations -----------------------------------------------------------------------

    fn make_anim(&mut self, a: &spec::Animation, f: usize, bones: &[ModelBone]) -> Option<Anim> {
        let gold = self.target == Target::GoldSrc;
        let l = self.loader.files.get(f)?;
        let map = self.bone_map(l, bones);
        let file_bones: Vec<AnimBone> = l
            .smd
            .skeleton
            .bones
            .iter()
            .zip(&map)
            .map(|(b, m)| AnimBone {
                name: b.name.clone(),
                parent: b.parent.map(|p| p.0),
                bone: *m,
            })
            .collect();
        let mut errs = Vec::new();
        if gold {
            // `goldsrc.md` §8.4: a matched bone whose parent differs from the model's.
            for (b, m) in l.smd.skeleton.bones.iter().zip(&map) {
                let Some(m) = m.and_then(|m| bones.get(m.index())) else {
                    continue;
                };
                let file_parent = b
                    .parent
                    .and_then(|p| l.smd.skeleton.get(p))
                    .map(|p| p.name.as_str());
                let model_parent = m
                    .parent
                    .and_then(|p| bones.get(p.index()))
                    .map(|p| p.name.as_str());
                if file_parent != model_parent {
                    errs.push(illegal_parent(
                        b,
                        file_parent,
                        model_parent,
                        m.span,
                        "animation",
                    ));
                }
            }
        }
        let anim = &l.smd.animation;
        let rule = if gold {
            FillRule::Zero
        } else {
            FillRule::HoldPrevious
        };
        let resolved = anim.resolve(rule);
        let nb = anim.num_bones;
        let first = anim.first_time as i64;
        let last = first + anim.num_frames as i64 - 1;
        let file_name = self.sources.name(l.file).to_string();
        let (lo, hi) = if gold {
            let Some(range) = self.gold_frame_range(a, anim, &file_name, &mut errs) else {
                self.diags.extend(errs);
                return None;
            };
            range
        } else {
            let (mut lo, mut hi) = (first, last);
            if let Some((s, e)) = a.frames {
                let (s, e) = (s as i64, e as i64);
                if s > e || e < first || s > last {
                    errs.push(bad_frame_range(a, s, e, &file_name, first, last));
                    self.diags.extend(errs);
                    return None;
                }
                if s < first || e > last {
                    let used = (s.max(first), e.min(last));
                    errs.push(frame_range_clamped(
                        a,
                        s,
                        e,
                        &file_name,
                        (first, last),
                        Some(used),
                    ));
                }
                lo = s.max(first);
                hi = e.min(last);
            }
            (lo, hi)
        };
        let from = (lo - first) as usize * nb;
        let to = (hi - first + 1) as usize * nb;
        // The kept range, cut out of `resolved` in place (no copy of the whole animation).
        let frames = if from <= to && to <= resolved.len() {
            let mut v = resolved;
            v.truncate(to);
            v.drain(..from);
            v
        } else {
            Vec::new()
        };
        let num_frames = frames
            .len()
            .checked_div(nb)
            .unwrap_or((hi - lo + 1) as usize);
        let given = (from..to)
            .map(|i| anim.poses.get(i).is_some_and(Option::is_some))
            .collect();
        let scale = if gold {
            a.scale
        } else {
            self.first_scale.get(&f).copied().unwrap_or(a.scale)
        };
        let out = Anim {
            name: a.name.clone(),
            path: l.path.clone(),
            file: l.file,
            file_bones,
            frames,
            given,
            num_frames,
            first_time: lo as i32,
            fps: a.fps,
            looping: a.looping,
            origin: a.origin,
            rotation: a.rotation,
            scale,
            motion: a.motion.clone(),
            start_loop: a.start_loop,
            flags: a.flags.clone(),
            commands: a.commands.clone(),
            span: loc(a.span),
        };
        self.diags.extend(errs);
        Some(out)
    }

    /// The SMD times a GoldSrc animation keeps, as Valve's HL1 `Grab_Animation` reads them: a
    /// bone line counts when its time is within the `frame` range (default 0 to 2047, the
    /// frames `MAXSTUDIOANIMATIONS` holds), and the animation runs from the smallest to the
    /// largest such time that has a bone line (`goldsrc.md` §7). Times below 0 or above 2047
    /// are not read (Valve's tool ignores them without a `frame` range, and writes outside its
    /// arrays with one): a warning says which. An empty range (`hi < lo`) when no frame is
    /// left; `None` after an error (a `frame` range outside the file).
    fn gold_frame_range(
        &self,
        a: &spec::Animation,
        anim: &super::anim::Animation,
        file_name: &str,
        errs: &mut Vec<Diagnostic>,
    ) -> Option<(i64, i64)> {
        const LAST_FRAME: i64 = 2047;
        let nb = anim.num_bones;
        let first = anim.first_time as i64;
        let last = first + anim.num_frames as i64 - 1;
        // a time with a bone line (a file without nodes: a `time` line)
        let has_data = |t: i64| {
            let f = (t - first) as usize;
            if nb == 0 {
                return anim.present.get(f).copied().unwrap_or(false);
            }
            (0..nb).any(|b| anim.get(f, b).is_some())
        };
        let data: Vec<i64> = (first..=last).filter(|&t| has_data(t)).collect();
        let (data_lo, data_hi) = match (data.first(), data.last()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (first, last),
        };
        // the times asked for (all without a `frame` range)
        let (s, e) = match a.frames {
            Some((s, e)) => {
                let (s, e) = (s as i64, e as i64);
                if s > e || e < first || s > last {
                    errs.push(bad_frame_range(a, s, e, file_name, first, last));
                    return None;
                }
                (s, e)
            }
            None => (i64::MIN, i64::MAX),
        };
        let (win_lo, win_hi) = (s.max(0), e.min(LAST_FRAME));
        let short = std::path::Path::new(file_name).file_name().map_or_else(
            || file_name.to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let outside: Vec<i64> = data
            .iter()
            .copied()
            .filter(|&t| (s..=e).contains(&t) && !(0..=LAST_FRAME).contains(&t))
            .collect();
        let kept: Vec<i64> = data
            .iter()
            .copied()
            .filter(|&t| (win_lo..=win_hi).contains(&t))
            .collect();
        if let (Some(&o_lo), Some(&o_hi)) = (outside.first(), outside.last()) {
            let what = if o_hi < 0 {
                "below 0".to_string()
            } else if o_lo > LAST_FRAME {
                "above 2047".to_string()
            } else {
                "below 0 and above 2047".to_string()
            };
            let mut d = Diagnostic::new(
                Code::BuildFramesNotRead,
                format!("`{short}` has frames at times {what}, which GoldSrc does not read"),
                loc(a.span),
                "in this animation",
            )
            .with_note(format!(
                "its bone values are at times {data_lo} to {data_hi}; Valve's HL1 compiler reads times 0 to 2047 only{}",
                if a.frames.is_some() {
                    " (with a `frame` range reaching past them, it writes outside its arrays)"
                } else {
                    ""
                }
            ));
            d = match (kept.first(), kept.last()) {
                (Some(k_lo), Some(k_hi)) => {
                    d.with_note(format!("frames {k_lo} to {k_hi} are used"))
                }
                _ => d,
            };
            errs.push(d);
        }
        let used = kept.first().copied().zip(kept.last().copied());
        if a.frames.is_some() && (s < first || e > last) {
            errs.push(frame_range_clamped(a, s, e, file_name, (first, last), used));
        }
        match used {
            Some(range) => Some(range),
            // No frame left: an empty animation starting at the file's first time, which the
            // back end reports (`E0526`; Valve's tool crashes on it).
            None => Some((data_lo, data_lo - 1)),
        }
    }

    // --- 7. sequences ------------------------------------------------------------------------

    fn make_sequences(&mut self, anim_ids: &[Option<AnimId>]) -> Vec<Seq> {
        let spec = self.spec;
        let anim_by_name = |name: &str| -> Option<usize> {
            spec.animations
                .iter()
                .position(|a| a.name.value.eq_ignore_ascii_case(name))
        };
        let seq_by_name = |name: &str| -> Option<usize> {
            spec.sequences
                .iter()
                .position(|s| s.name.value.eq_ignore_ascii_case(name))
        };
        let from_qc = spec
            .source
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("qc"));
        let mut out = Vec::new();
        let mut errs = Vec::new();
        for (si, s) in spec.sequences.iter().enumerate() {
            // Duplicate names. The QC front end reports them itself (with the animation names
            // that share the namespace in QC), so only other projects are checked here.
            if let Some(first) = seq_by_name(&s.name.value).filter(|&f| f < si && !from_qc) {
                let first_span = spec
                    .sequences
                    .get(first)
                    .map_or(loc(s.name.span), |f| loc(f.name.span));
                let d = match self.target {
                    Target::GoldSrc => Diagnostic::new(
                        Code::BuildDuplicateSequenceGoldSrc,
                        format!("a second sequence is named `{}`", s.name.value),
                        loc(s.name.span),
                        "name used before",
                    )
                    .with_secondary(first_span, "first sequence of this name")
                    .with_note(
                        "Valve's HL1 compiler keeps both; the game finds only the first by name",
                    ),
                    Target::Source => Diagnostic::new(
                        Code::BuildDuplicateSequence,
                        format!("a second sequence is named `{}`", s.name.value),
                        loc(s.name.span),
                        "name used before",
                    )
                    .with_secondary(first_span, "first sequence of this name")
                    .with_note("sequence names are unique in a Source model; rename one of them"),
                };
                errs.push(d);
            }
            let mut ids = Vec::new();
            let mut broken = false;
            for r in &s.animations {
                let resolved = anim_by_name(&r.value).or_else(|| {
                    seq_by_name(&r.value)
                        .and_then(|q| spec.sequences.get(q))
                        .and_then(|q| q.animations.first())
                        .and_then(|first| anim_by_name(&first.value))
                });
                match resolved {
                    Some(k) => match anim_ids.get(k).copied().flatten() {
                        Some(id) => ids.push(id),
                        // Its file failed to load: already reported.
                        None => broken = true,
                    },
                    None => {
                        let names = spec
                            .animations
                            .iter()
                            .map(|a| a.name.value.as_str())
                            .filter(|n| !n.starts_with('@'))
                            .chain(spec.sequences.iter().map(|s| s.name.value.as_str()));
                        let mut d = Diagnostic::new(
                            Code::BuildUnknownAnimation,
                            format!(
                                "sequence `{}` uses animation `{}`, which does not exist",
                                s.name.value, r.value
                            ),
                            loc(r.span),
                            "no animation or sequence of this name",
                        );
                        if let Some(n) = nearest(&r.value, names) {
                            d = d.with_note(format!("help: did you mean `{n}`?"));
                        }
                        errs.push(d);
                        broken = true;
                    }
                }
            }
            let n = s.animations.len();
            if n == 0 {
                errs.push(
                    Diagnostic::new(
                        Code::BuildNoAnimation,
                        format!("sequence `{}` has no animation", s.name.value),
                        loc(s.name.span),
                        "this sequence",
                    )
                    .with_note("a sequence plays at least one animation"),
                );
                continue;
            }
            let mut width = n;
            if self.target == Target::Source {
                match &s.blend_width {
                    Some(w) if w.value <= 0 || n % (w.value as usize) != 0 => {
                        errs.push(
                            Diagnostic::new(
                                Code::BuildBlendGrid,
                                format!("sequence `{}` has {n} animations, not a whole number of rows of {}", s.name.value, w.value),
                                loc(w.span),
                                "blend width",
                            )
                            .with_note("with `blendwidth w` the number of animations is a multiple of w (rows of w, row by row)"),
                        );
                        broken = true;
                    }
                    Some(w) => width = w.value as usize,
                    None if n < 4 => {}
                    None => {
                        let r = (n as f64).sqrt().round() as usize;
                        if r * r == n {
                            width = r;
                        } else {
                            errs.push(
                                Diagnostic::new(
                                    Code::BuildBlendGrid,
                                    format!("sequence `{}` has {n} animations, which is not a square grid", s.name.value),
                                    loc(s.name.span),
                                    "this sequence",
                                )
                                .with_note("without `blendwidth`, 4 or more animations make a square grid")
                                .with_note("help: give `blendwidth` the number of animations per row"),
                            );
                            broken = true;
                        }
                    }
                }
            }
            if broken {
                continue;
            }
            out.push(Seq {
                name: s.name.clone(),
                animations: ids,
                blend_width: width,
                blends: s.blends.clone(),
                activity: s.activity.clone(),
                events: s.events.clone(),
                pivots: s.pivots.clone(),
                node: s.node.clone(),
                transition: s.transition.clone(),
                fade_in: s.fade_in,
                fade_out: s.fade_out,
                exit_phase: s.exit_phase,
                flags: s.flags.clone(),
                extras: s.extras.clone(),
                group: s.group,
                span: loc(s.span),
            });
        }
        self.diags.extend(errs);
        out
    }
}

/// The key materials are matched by: lower case, `/` separators, and for Source without the
/// extension (Source material names carry none; SMDs often say `skin.bmp`).
fn material_key(target: Target, name: &str) -> String {
    let s = name.replace('\\', "/").to_ascii_lowercase();
    match target {
        Target::GoldSrc => s,
        Target::Source => {
            let cut = s.rfind('.').filter(|&i| !s[i..].contains('/'));
            match cut {
                Some(i) => s.get(..i).unwrap_or(&s).to_string(),
                None => s,
            }
        }
    }
}

/// [`Code::BuildBadFrameRange`]: the `frame` range `s`..`e` of `a` is empty or misses its
/// file's frames `first`..`last`.
fn bad_frame_range(
    a: &spec::Animation,
    s: i64,
    e: i64,
    file_name: &str,
    first: i64,
    last: i64,
) -> Diagnostic {
    Diagnostic::new(
        Code::BuildBadFrameRange,
        if s > e {
            format!(
                "frame range {s} to {e} of animation `{}` is empty",
                a.name.value
            )
        } else {
            format!(
                "frame range {s} to {e} of animation `{}` is outside its file",
                a.name.value
            )
        },
        loc(a.span),
        "in this animation",
    )
    .with_note(format!("`{file_name}` has frames {first} to {last}"))
}

/// [`Code::BuildFrameRangeClamped`]: the `frame` range `s`..`e` of `a` reaches past its file's
/// frames `first`..`last`; `used` is what is kept of them (none: an error follows).
fn frame_range_clamped(
    a: &spec::Animation,
    s: i64,
    e: i64,
    file_name: &str,
    (first, last): (i64, i64),
    used: Option<(i64, i64)>,
) -> Diagnostic {
    Diagnostic::new(
        Code::BuildFrameRangeClamped,
        format!(
            "frame range {s} to {e} of animation `{}` reaches past its file",
            a.name.value
        ),
        loc(a.span),
        "in this animation",
    )
    .with_note(match used {
        Some((lo, hi)) => {
            format!("`{file_name}` has frames {first} to {last}; frames {lo} to {hi} are used")
        }
        None => format!("`{file_name}` has frames {first} to {last}; none of them is used"),
    })
}

fn illegal_parent(
    b: &Bone,
    new_parent: Option<&str>,
    old_parent: Option<&str>,
    earlier: FileSpan,
    what: &str,
) -> Diagnostic {
    let show = |p: Option<&str>| p.map_or("no parent".to_string(), |p| format!("parent \"{p}\""));
    Diagnostic::new(
        Code::BuildIllegalParent,
        format!(
            "illegal parent bone replacement: bone \"{}\" has {} in this {what}",
            b.name,
            show(new_parent)
        ),
        b.span,
        format!("{} here", show(new_parent)),
    )
    .with_secondary(
        earlier,
        format!("{} in the model's skeleton", show(old_parent)),
    )
    .with_note("GoldSrc merges bones by name; every file must give a bone the same parent")
}

fn unknown_bone(name: &Spanned<String>, what: &str, bones: &[ModelBone]) -> Diagnostic {
    bone_not_found(
        Code::BuildUnknownBone,
        name,
        what,
        bones.iter().map(|b| b.name.as_str()),
        None,
        Some("the skeleton holds the bones that vertices use, their parents, and bones named by attachments, hit boxes and controllers"),
    )
}

/// "`what` names bone "x", which is not in the skeleton", with `lead` as the first note, then
/// "did you mean" when a bone name is close, else `fallback`.
fn bone_not_found<'n>(
    code: Code,
    name: &Spanned<String>,
    what: &str,
    candidates: impl IntoIterator<Item = &'n str>,
    lead: Option<&str>,
    fallback: Option<&str>,
) -> Diagnostic {
    let mut d = Diagnostic::new(
        code,
        format!(
            "{what} names bone \"{}\", which is not in the skeleton",
            name.value
        ),
        loc(name.span),
        "no bone of this name",
    );
    if let Some(l) = lead {
        d = d.with_note(l);
    }
    match (nearest(&name.value, candidates), fallback) {
        (Some(n), _) => d.with_note(format!("help: did you mean \"{n}\"?")),
        (None, Some(f)) => d.with_note(f),
        (None, None) => d,
    }
}

/// Resolves bone names of commands against the finished skeleton.
struct Resolver<'a> {
    find: &'a dyn Fn(&str) -> Option<BoneId>,
    names: &'a [String],
    diags: Vec<Diagnostic>,
}

impl Resolver<'_> {
    /// A bone the command cannot do without: an error when it is missing.
    fn must(&mut self, name: &Spanned<String>, what: &str) -> Option<BoneId> {
        let found = (self.find)(&name.value);
        if found.is_none() {
            let names = self.names.iter().map(String::as_str);
            let fallback = Some("no loaded mesh file has a bone of this name");
            let d = bone_not_found(Code::BuildUnknownBone, name, what, names, None, fallback);
            self.diags.push(d);
        }
        found
    }

    /// A bone the command can do without: a warning, and the item is dropped.
    fn may(&mut self, name: &Spanned<String>, what: &str) -> Option<BoneId> {
        let found = (self.find)(&name.value);
        if found.is_none() {
            let names = self.names.iter().map(String::as_str);
            let lead = Some("it is ignored, as in Valve's compilers");
            let d = bone_not_found(Code::BuildUnusedBoneName, name, what, names, lead, None);
            self.diags.push(d);
        }
        found
    }
}

/// Reorders bones until every parent comes before its children, by repeated swaps of a bone
/// with a parent that follows it (`source-animation.md` §2.2 item 5); every handle is remapped.
fn reorder_parents_first(bones: &mut Vec<ModelBone>) {
    let n = bones.len();
    // order[pos] = old index; pos_of[old] = pos.
    let mut order: Vec<usize> = (0..n).collect();
    let mut pos_of: Vec<usize> = (0..n).collect();
    let parent_of = |old: usize| bones.get(old).and_then(|b| b.parent).map(BoneId::index);
    let mut guard = 0usize;
    let limit = n.saturating_mul(n).saturating_add(n);
    loop {
        let bad = (0..n).find_map(|pos| {
            let old = *order.get(pos)?;
            let p = parent_of(old)?;
            let pp = *pos_of.get(p)?;
            (pp > pos).then_some((pos, pp))
        });
        let Some((a, b)) = bad else { break };
        guard += 1;
        if guard > limit {
            break;
        }
        order.swap(a, b);
        if let (Some(&oa), Some(&ob)) = (order.get(a), order.get(b)) {
            if let Some(x) = pos_of.get_mut(oa) {
                *x = a;
            }
            if let Some(x) = pos_of.get_mut(ob) {
                *x = b;
            }
        }
    }
    if order.iter().enumerate().all(|(i, &o)| i == o) {
        return;
    }
    let remap = |id: Option<BoneId>| -> Option<BoneId> {
        id.and_then(|p| pos_of.get(p.index()).map(|&q| BoneId(q as u32)))
    };
    let old = std::mem::take(bones);
    for &o in &order {
        if let Some(b) = old.get(o) {
            let mut b = b.clone();
            b.parent = remap(b.parent);
            b.rest_parent = remap(b.rest_parent);
            bones.push(b);
        }
    }
}
