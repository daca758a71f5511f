//! Meshes: the body parts' files and the LOD replacement meshes loaded (step 1), then each
//! made a [`ModelMesh`] on the merged skeleton with model material ids (step 4).

use crate::diag::FileId;
use crate::diag::{Code, Diagnostic, FileSpan, Spanned};
use crate::ir::mesh::{Corner, Mesh, Triangle, Weight};
use crate::ir::model::*;
use crate::ir::skeleton::BoneId;
use crate::ir::written::Target;
use crate::load::LoadedSmd;
use crate::project::spec::{self, FileRef};
use crate::suggest::nearest;
use std::path::PathBuf;
use std::sync::Arc;

use super::materials::material_key;
use super::{loc, stem, Builder};

/// A mesh to be: a loaded file with the options of the reference that named it.
pub(super) struct PendingMesh {
    pub loaded: usize,
    pub name: String,
    pub reverse: bool,
    pub scale: f32,
    pub origin_offset: [f32; 3],
    pub face: Option<crate::project::face::FaceSpec>,
    pub span: FileSpan,
    pub written: String,
}

/// A `replacemodel`: the replaced body mesh, the replacement, the span of `from`.
pub(super) type LodReplacement = (Option<MeshId>, Option<MeshId>, FileSpan);

/// What step 1 made of the body parts and LODs.
pub(super) struct BodyMeshes {
    /// Every mesh to make: the body parts' first, then the LOD replacements.
    pub pending: Vec<PendingMesh>,
    pub body_parts: Vec<BodyPart>,
    /// How many of `pending` are body part meshes.
    pub body_meshes: usize,
    /// Per `$lod`: its `replacemodel`s.
    pub lod_replacements: Vec<Vec<LodReplacement>>,
}

impl Builder<'_> {
    /// Loads the body parts' mesh files, then the LOD replacement meshes.
    pub(super) fn body_parts(&mut self) -> BodyMeshes {
        let spec = self.spec;
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
                                face: m.face.clone(),
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
                        face: None,
                        span: loc(r.to.span),
                        written: r.name.clone(),
                    });
                    MeshId(pending.len() as u32 - 1)
                });
                reps.push((from, to, loc(r.from.span)));
            }
            lod_replacements.push(reps);
        }

        BodyMeshes {
            pending,
            body_parts,
            body_meshes,
            lod_replacements,
        }
    }

    /// Loads a reference mesh; warns when it has no triangles.
    pub(super) fn load_mesh(&mut self, fr: &FileRef, scale: f32) -> Option<usize> {
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
    pub(super) fn find_body_mesh(
        &mut self,
        body: &[PendingMesh],
        name: &Spanned<String>,
    ) -> Option<MeshId> {
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

    /// The merged bone of each bone of a file (GoldSrc: exact name; Source: any case).
    pub(super) fn bone_map(&self, l: &LoadedSmd, bones: &[ModelBone]) -> Vec<Option<BoneId>> {
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

    /// The body mesh `p`: its file's triangles with the bones mapped to the model's and the
    /// positions scaled (GoldSrc: a triangle with a bone the model does not have is dropped). With
    /// `take`, the file's mesh is taken and changed in place rather than copied, when no other
    /// project holds the file (the caller knows nothing in this one reads it again).
    pub(super) fn make_mesh(
        &mut self,
        p: &PendingMesh,
        bones: &[ModelBone],
        materials: &mut Vec<Material>,
        take: bool,
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
                span: p.span,
                written: p.written.clone(),
                file_bones: Vec::new(),
                source_positions: Vec::new(),
            };
        };
        let map = self.bone_map(l, bones);
        let (path, file) = (l.path.clone(), l.file);
        let file_bones: Vec<MeshBone> = l
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
            .collect();
        let gold = self.target == Target::GoldSrc;
        // Source: a bone the model does not have (a bone of a file loaded only as an LOD's
        // replacement) is its nearest ancestor the model has, else the model's first bone, as
        // the 2006 SDK maps source bones (`MapSourcesToGlobalBonetable`). GoldSrc keeps every
        // vertex bone, so a bone missing there drops its triangle.
        let fallback: Vec<Option<BoneId>> = if gold {
            map.clone()
        } else {
            (0..file_bones.len())
                .map(|i| {
                    crate::ir::model::nearest_model_bone(&file_bones, i)
                        .or((!bones.is_empty()).then_some(BoneId(0)))
                })
                .collect()
        };
        let mapped = |b: BoneId| fallback.get(b.index()).copied().flatten();
        // One corner mapped, its weights appended to `weights`; `None` when it names a bone
        // the model does not have (a triangle with such a corner is dropped).
        // (one buffer for every corner's weights: no allocation per corner)
        let mut ws: Vec<Weight> = Vec::new();
        let mut map_corner =
            |c: &Corner, src_weights: &[Weight], weights: &mut Vec<Weight>| -> Option<Corner> {
                ws.clear();
                if gold {
                    ws.push(Weight {
                        bone: mapped(c.bone)?,
                        weight: 1.0,
                    });
                } else {
                    let own = src_weights
                        .get(c.weights.0 as usize..(c.weights.0 + c.weights.1) as usize)
                        .unwrap_or(&[]);
                    for w in own {
                        ws.push(Weight {
                            bone: mapped(w.bone)?,
                            weight: w.weight,
                        });
                    }
                }
                let first = ws.first().map(|w| w.bone)?;
                let bone = mapped(c.bone).unwrap_or(first);
                let start = weights.len() as u32;
                weights.extend_from_slice(&ws);
                Some(Corner {
                    pos: c.pos.map(|v| v * p.scale),
                    bone,
                    weights: (start, ws.len() as u32),
                    ..*c
                })
            };
        // (GoldSrc only: the Source back end does not read them)
        let mut source_positions = Vec::new();
        let owned = if take {
            self.loader
                .files
                .get_mut(p.loaded)
                .and_then(|l| Arc::get_mut(&mut l.smd))
                .and_then(|smd| smd.mesh.take())
        } else {
            None
        };
        // A file whose bones are the model's, in the same order, at scale 1, maps every
        // corner to itself when the corners' links lie one after another as lowering lays
        // them out: the mapping below would copy the mesh unchanged, so it is kept as it is
        // (a large mesh's longest single pass of the build otherwise).
        let identity = !gold
            && p.scale == 1.0
            && map
                .iter()
                .enumerate()
                .all(|(i, m)| *m == Some(BoneId(i as u32)));
        let mut map_mesh = |src: &Mesh| -> Mesh {
            let mut out = Mesh {
                materials: src.materials.clone(),
                triangles: Vec::with_capacity(src.triangles.len()),
                corners: Vec::with_capacity(src.corners.len()),
                weights: Vec::with_capacity(src.weights.len()),
            };
            // each corner mapped once; its index in `out.corners`, or `None` (dropped)
            let index: Vec<Option<u32>> = src
                .corners
                .iter()
                .map(|c| {
                    let m = map_corner(c, &src.weights, &mut out.weights)?;
                    out.corners.push(m);
                    Some(out.corners.len() as u32 - 1)
                })
                .collect();
            if gold {
                source_positions.reserve(src.triangles.len());
            }
            for t in &src.triangles {
                let [Some(a), Some(b), Some(c)] =
                    t.corners.map(|i| index.get(i as usize).copied().flatten())
                else {
                    continue;
                };
                out.triangles.push(Triangle {
                    corners: [a, b, c],
                    ..*t
                });
                if gold {
                    source_positions.push(src.corners_of(t).map(|c| c.pos));
                }
            }
            out
        };
        let out = match owned {
            Some(mesh) if identity && maps_to_itself(&mesh, map.len()) => mesh,
            Some(mesh) => map_mesh(&mesh),
            None => {
                let empty = Mesh::default();
                let src = self
                    .loader
                    .files
                    .get(p.loaded)
                    .and_then(|l| l.smd.mesh.as_ref())
                    .unwrap_or(&empty);
                map_mesh(src)
            }
        };
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
                        texture: None,
                    });
                    materials.len() - 1
                }
            };
            mat_ids.push(MaterialId(id as u32));
        }
        ModelMesh {
            name: p.name.clone(),
            path,
            file,
            mesh: out,
            materials: mat_ids,
            reverse: p.reverse,
            scale: p.scale,
            origin_offset: p.origin_offset,
            span: p.span,
            written: p.written.clone(),
            file_bones,
            source_positions,
        }
    }
}

/// Whether mapping `mesh` through the identity bone map of a file with `bones` bones, at scale
/// 1, gives `mesh` again: every corner's bone and link bones are the file's, every corner has
/// links, and the corners' links follow one another from the first, with none left over.
fn maps_to_itself(mesh: &Mesh, bones: usize) -> bool {
    let mut next = 0u32;
    let ok = mesh.corners.iter().all(|c| {
        let here = c.weights.0 == next && c.weights.1 > 0 && c.bone.index() < bones;
        next = next.wrapping_add(c.weights.1);
        here
    });
    let n = mesh.corners.len();
    ok && next as usize == mesh.weights.len()
        && mesh.weights.iter().all(|w| w.bone.index() < bones)
        && mesh
            .triangles
            .iter()
            .all(|t| t.corners.iter().all(|&i| (i as usize) < n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;

    /// Two triangles over bones 0..3, each corner with `links[i]` links laid out one after
    /// another.
    fn mesh(links: [u32; 6]) -> Mesh {
        let span = Span::new(0, 1).in_file(FileId(0));
        let mut weights = Vec::new();
        let mut corner = |i: usize| {
            let first = weights.len() as u32;
            for k in 0..links[i] {
                weights.push(Weight {
                    bone: BoneId((i as u32 + k) % 3),
                    weight: 1.0 / links[i] as f32,
                });
            }
            Corner {
                pos: [i as f32, 0.0, 1.0],
                normal: [0.0, 0.0, 1.0],
                uv: [0.5, 0.5],
                bone: BoneId(i as u32 % 3),
                weights: (first, links[i]),
                span,
            }
        };
        let corners: Vec<Corner> = (0..6).map(&mut corner).collect();
        Mesh {
            materials: vec!["m".into()],
            triangles: vec![
                Triangle {
                    material: 0,
                    corners: [0, 1, 2],
                    span,
                },
                Triangle {
                    material: 0,
                    corners: [3, 4, 5],
                    span,
                },
            ],
            corners,
            weights,
        }
    }

    /// The mesh is kept as it is only when the mapping would rebuild it unchanged.
    #[test]
    fn a_mesh_maps_to_itself_only_when_laid_out_as_lowered() {
        let m = mesh([1, 2, 3, 1, 1, 2]);
        assert!(maps_to_itself(&m, 3));
        // a bone the file does not have (a corner's, a link's)
        assert!(!maps_to_itself(&m, 2));
        let mut c = m.clone();
        c.corners[3].bone = BoneId(7);
        assert!(!maps_to_itself(&c, 3));
        // links shared by two corners, or out of order
        let mut c = m.clone();
        c.corners[4].weights = c.corners[3].weights;
        assert!(!maps_to_itself(&c, 3));
        let mut c = m.clone();
        c.corners.swap(0, 1);
        assert!(!maps_to_itself(&c, 3));
        // a corner without links, links nobody uses
        let mut c = m.clone();
        c.corners[5].weights.1 = 0;
        assert!(!maps_to_itself(&c, 3));
        // a triangle naming a corner the mesh lacks
        let mut c = m.clone();
        c.triangles[1].corners[2] = 6;
        assert!(!maps_to_itself(&c, 3));
        let mut c = m.clone();
        c.weights.push(Weight {
            bone: BoneId(0),
            weight: 1.0,
        });
        assert!(!maps_to_itself(&c, 3));
    }
}
