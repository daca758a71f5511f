//! The model builder: a [`ProjectSpec`] and the SMD files it names (read by the load stage,
//! [`crate::load`]) made into one engine-neutral [`Model`].
//!
//! The steps, in order:
//! 1. **Load** every file once (by resolved path; a second spelling of the same file is the same
//!    file). A file missing as written but present in another case is used with a warning; a
//!    missing file is an error at its reference, with the nearest existing name. SMD problems
//!    are reported by the loader in the SMD's own file; a file with an error is skipped.
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
//!
//! One file per concern: `meshes` (body parts, LOD meshes, the meshes on the merged skeleton),
//! `skeleton` (renames and the skeleton merge of each engine), `materials` (materials, skin
//! families, GoldSrc textures), `animations`, `sequences`, `references` (bones that commands
//! name); this file holds the recipe (`Builder::run`).

use std::collections::HashMap;
use std::path::Path;

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Sources};
use crate::ir::model::*;
use crate::load::shared::SharedSmds;
use crate::load::{Fs, SmdLoader, SmdRef};
use crate::project::spec::{self, FileRef, ProjectSpec, Target};

mod animations;
mod face;
mod jiggle;
mod materials;
mod meshes;
mod procedural;
mod references;
mod sequences;
mod skeleton;

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
/// and still holds are taken from `shared` rather than parsed again (see [`crate::load::shared`]).
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

    /// Steps 1 to 8 of the module documentation, in order.
    fn run(&mut self) -> Option<Model> {
        let spec = self.spec;

        // 1. files: body parts, then LOD meshes, then animations, then the collision model
        let parts = self.body_parts();
        let anim_files = self.load_animations();
        let collision_file = spec
            .collision
            .as_ref()
            .and_then(|c| self.load(&c.file, "collision model"));

        // 2. renames (`$mirrorbone` names bones as the files spell them before renaming)
        let mirror_names = self.mirror_names();
        self.apply_renames();

        // 3. skeleton
        let bones = match self.target {
            Target::GoldSrc => self.merge_goldsrc(&parts.pending),
            Target::Source => self.merge_source(&parts.pending, parts.body_meshes, &anim_files),
        };

        // 4. meshes and 5. materials
        let mut materials: Vec<Material> = Vec::new();
        let mut meshes = Vec::new();
        // A mesh is taken from its file, not copied, by the last body mesh that uses the file
        // when the collision model does not read it later.
        for (k, p) in parts.pending.iter().enumerate() {
            let take = collision_file != Some(p.loaded)
                && !parts.pending[k + 1..].iter().any(|q| q.loaded == p.loaded);
            meshes.push(self.make_mesh(p, &bones, &mut materials, take));
        }
        let skins = self.materials_and_skins(&mut materials);
        if self.target == Target::GoldSrc {
            let fs = self.loader.fs();
            for m in &mut materials {
                m.texture = Some(materials::load_texture(
                    m,
                    &spec.texture_dirs,
                    fs,
                    self.sources,
                ));
            }
        }

        // 4b. the face (`$model` blocks)
        let faces: Vec<Option<&crate::project::face::FaceSpec>> =
            parts.pending.iter().map(|p| p.face.as_ref()).collect();
        let face = self.make_face(&faces, &meshes, &bones, &materials);

        // 6. animations
        let (animations, anim_ids) = self.make_animations(&anim_files, &bones);

        // 7. sequences
        let sequences = self.make_sequences(&anim_ids);

        // 8. bone references
        let refs = self.resolve_references(&bones, &mirror_names, &parts);
        let attachment_names: Vec<String> = refs
            .attachments
            .iter()
            .map(|a| a.name.value.clone())
            .collect();
        let mut procedural_bones = self.procedural_bones(&bones, &attachment_names);
        self.jiggle_bones(&bones, &mut procedural_bones);

        let collision = match (&spec.collision, collision_file) {
            (Some(c), Some(i)) => self.loader.files.get(i).map(|l| Collision {
                joints: c.joints,
                path: l.path.clone(),
                file: l.file,
                // scaled by the `$scale` in effect, as every mesh Valve's compiler loads
                mesh: {
                    let mut m = l.smd.mesh.clone().unwrap_or_default();
                    if c.scale != 1.0 {
                        for k in &mut m.corners {
                            k.pos = k.pos.map(|v| v * c.scale);
                        }
                    }
                    m
                },
                skeleton: {
                    let mut s = l.smd.skeleton.clone();
                    if c.scale != 1.0 {
                        for b in &mut s.bones {
                            b.rest.pos = b.rest.pos.map(|v| v * c.scale);
                        }
                    }
                    s
                },
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
            body_parts: parts.body_parts,
            lods: refs.lods,
            animations,
            sequences,
            pose_parameters: spec.pose_parameters.clone(),
            weight_lists: refs.weight_lists,
            sequence_groups: spec.sequence_groups.clone(),
            sequence_group_size: spec.sequence_group_size.clone(),
            skip_transitions: spec.skip_transitions.clone(),
            section_frames: spec.section_frames.clone(),
            anim_block_size: spec.anim_block_size.clone(),
            bone_save_frames: spec.bone_save_frames.clone(),
            include_models: spec.include_models.clone(),
            attachments: refs.attachments,
            hitbox_sets: refs.hitbox_sets,
            hit_groups: refs.hit_groups,
            controllers: refs.controllers,
            mirror_bones: refs.mirror_bones,
            always_collapse: refs.always_collapse,
            limit_rotations: refs.limit_rotations,
            collapse_bones: spec.collapse_bones,
            lock_bone_lengths: spec.lock_bone_lengths,
            realign_bones: spec.realign_bones,
            force_realign: refs.force_realign,
            screen_align: refs.screen_align,
            bone_merge: refs.bone_merge,
            ik_chains: refs.ik_chains,
            ik_autoplay_locks: refs.ik_autoplay_locks,
            procedural_bones,
            root_bone: refs.root_bone,
            pivots: refs.pivots,
            eye_position: spec.eye_position.clone(),
            illum_position: spec.illum_position.clone(),
            max_eye_deflection: spec.max_eye_deflection.clone(),
            bbox: spec.bbox.clone(),
            cbox: spec.cbox.clone(),
            flags: spec.flags.clone(),
            surface_prop: spec.surface_prop.clone(),
            contents: spec.contents.clone(),
            static_prop: spec.static_prop,
            keyvalues: spec.keyvalues.clone(),
            header_flags: spec.header_flags.clone(),
            collision,
            collision_text: spec.collision_text.clone(),
            joint_surface_props: spec
                .joint_surface_props
                .iter()
                .map(|(b, p)| (b.value.clone(), p.value.clone()))
                .collect(),
            face,
        })
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
}
