//! From the engine-neutral [`Model`] to what the three Source files hold: the bone table
//! (`$staticprop` collapses it into `static_prop`), textures and skins, one mesh per model and
//! material with its welded vertex pool shared by every LOD, tangents, LOD groups, bone flags,
//! attachments and hit boxes (`source-geometry.md` §5–§7).

use crate::formats::hash::{FastMap, FastSet};

use crate::diag::{Code, Diagnostic};
use crate::ir::model::{AimTarget, BodyOption, MeshId, Model, ProcRule};
use crate::ir::BoneId;

use super::face;
use super::math::{self, Aabb, M34};
use super::model::{
    BoneWeights, Links3, PAttachment, PBodyPart, PBone, PHitbox, PHitboxSet, PIkChain, PMesh,
    PModel, PProc, PProcRule, PVertex, SourceModel, VtxStrips,
};
use super::records::{AimAtBone, AxisInterpBone, JiggleBone, QuatInterpInfo};
use super::strips::{self, Variant};

/// Largest number of vertices one mesh may have (`origMeshVertID` is a u16).
pub const MAX_MESH_VERTS: usize = 65_535;
/// `MAXSTUDIOVERTS`: studiomdl refuses models with this many vertices or more.
pub const MAX_MODEL_VERTS: usize = 65_536;
pub const MAX_LODS: usize = 8;
/// `public/studio.h` MAXSTUDIOFLEXVERTS: vertices the flexes of one model may move.
pub const MAX_FLEX_VERTS: usize = 10_000;

/// One triangle corner after the weight cleanup, before welding.
#[derive(Clone, Copy)]
struct CornerIn {
    pos: [f32; 3],
    normal: [f32; 3],
    uv: [f32; 2],
    /// IR bones and weights (7.7 step 1), largest first.
    weights: Links,
}

/// A vertex's IR bone links after 7.7 step 1, which keeps at most three.
type Links = Links3<BoneId>;

const NO_LINKS: Links = Links::empty(BoneId(0));

/// One link of weight 1.
fn one_link(bone: BoneId) -> Links {
    let mut l = NO_LINKS;
    l.push(bone, 1.0);
    l
}

/// The bones a vertex keeps links to after [`balance`] (the collision model counts a vertex
/// for these bones only, as the 2006 SDK's `globalBoneweight` does).
pub(crate) fn kept_bones(ws: &[crate::ir::Weight]) -> Vec<BoneId> {
    balance(ws).0.iter().map(|l| l.0).collect()
}

/// 7.7 step 1: sort descending (stable), drop trailing links under 0.05 while more than one
/// remains, keep at most 3, rescale to 1 in float. Returns the weights and the largest weight
/// dropped (0 when nothing was).
fn balance(ws: &[crate::ir::Weight]) -> (Links, f32) {
    // the merged links, on the stack for the usual few (a longer list is rare)
    let mut stack = [(BoneId(0), 0f32); 8];
    let mut heap = Vec::new();
    let v: &mut [(BoneId, f32)] = if ws.len() <= stack.len() {
        &mut stack
    } else {
        heap.resize(ws.len(), (BoneId(0), 0f32));
        &mut heap
    };
    let mut n = 0usize;
    for w in ws {
        if let Some(e) = v.iter_mut().take(n).find(|e| e.0 == w.bone) {
            e.1 += w.weight;
        } else if let Some(slot) = v.get_mut(n) {
            *slot = (w.bone, w.weight);
            n += 1;
        }
    }
    // bubble sort, swapping only on `>`
    for i in 0..n {
        for j in 0..n.saturating_sub(1 + i) {
            if v[j + 1].1 > v[j].1 {
                v.swap(j, j + 1);
            }
        }
    }
    let mut dropped = 0.0f32;
    while n > 1 && (n > 3 || v[n - 1].1 < 0.05) {
        dropped = dropped.max(v[n - 1].1);
        n -= 1;
    }
    let v = &mut v[..n];
    let sum: f32 = v.iter().map(|e| e.1).sum();
    if sum > 0.0 {
        let t = (1.0f64 / sum as f64) as f32;
        for e in v.iter_mut() {
            e.1 *= t;
        }
    } else if !v.is_empty() {
        let k = v.len() as f32;
        for e in v.iter_mut() {
            e.1 = 1.0 / k;
        }
    }
    let mut out = NO_LINKS;
    for &(b, w) in v.iter() {
        out.push(b, w);
    }
    (out, dropped)
}

/// The corners of a triangle after the weight cleanup (7.7 step 1), `v` flipped and in
/// the file's final winding, with how many of them lost links and the largest weight dropped.
fn corners_in(
    mm: &crate::ir::model::ModelMesh,
    t: &crate::ir::Triangle,
    repose: Option<&[Option<M34>]>,
) -> ([CornerIn; 3], usize, f32) {
    let mut lost = 0usize;
    let mut largest = 0.0f32;
    let mut cs = mm.mesh.corners_of(t).map(|c| {
        let all = mm.mesh.weights_of(&c);
        let (pos, normal) = match repose {
            Some(r) => repose_vertex(r, all, c.bone, c.pos, c.normal),
            None => (c.pos, c.normal),
        };
        let (w, d) = balance(all);
        if d > 0.0 {
            lost += 1;
            largest = largest.max(d);
        }
        let w = if w.is_empty() { one_link(c.bone) } else { w };
        CornerIn {
            pos,
            normal,
            uv: [c.uv[0], 1.0 - c.uv[1]],
            weights: w,
        }
    });
    if !mm.reverse {
        cs.swap(1, 2);
    }
    (cs, lost, largest)
}

/// The 2006 SDK's `RemapVerticesToGlobalBones` (`simplify.cpp`): a mesh is skinned in its own
/// file's rest pose, the model's bones stand in theirs (the first file that has a bone, or its
/// `$definebone`). Each vertex is taken into each of its bones' space with the file's pose of
/// that bone (through the bone's `$definebone` fixup, `srcRealign`) and out again with the
/// model's, weighted: `p' = Σ wᵢ · B_kᵢ · (F_kᵢ · S_kᵢ)⁻¹ · p`, the normal likewise and
/// normalised. Per model bone, `B_k · (F_k · S_k)⁻¹`; `None` for a bone where that is the
/// identity but for printing noise (1e-4 in the turn, 0.002 units; a mesh in the model's pose
/// keeps its positions bit for bit), and `None` overall when no bone moves. Valve's build of
/// `alastor_rel.qc` (issue 16's notes) shows it: its DMX head, bound in a pose 2.2 units from
/// the `$definebone` skeleton's, sits on that skeleton.
fn repose_of(
    model: &Model,
    mm: &crate::ir::model::ModelMesh,
    ir_world: &[M34],
) -> Option<Vec<Option<M34>>> {
    let n = mm.file_bones.len();
    // the file's bone-to-world matrices, parents first whatever the order (a bone in a parent
    // cycle gets none)
    let mut world: Vec<Option<M34>> = vec![None; n];
    let mut progress = true;
    while progress {
        progress = false;
        for q in 0..n {
            if world[q].is_some() {
                continue;
            }
            let b = &mm.file_bones[q];
            let local = math::from_euler(b.rest.rot, b.rest.pos);
            let parent = b.parent.map(|p| p as usize).filter(|&p| p < n && p != q);
            let w = match parent {
                None => Some(local),
                Some(p) => world[p].map(|pw| math::mul(&pw, &local)),
            };
            if w.is_some() {
                world[q] = w;
                progress = true;
            }
        }
    }
    let mut out: Vec<Option<M34>> = vec![None; model.bones.len()];
    let mut seen = vec![false; model.bones.len()];
    let mut any = false;
    for (q, fb) in mm.file_bones.iter().enumerate() {
        let (Some(k), Some(Some(w))) = (fb.bone, world.get(q)) else {
            continue;
        };
        let (Some(done), Some(model_world)) = (seen.get_mut(k.index()), ir_world.get(k.index()))
        else {
            continue;
        };
        if std::mem::replace(done, true) {
            continue;
        }
        let src = match model
            .bones
            .get(k.index())
            .filter(|b| b.defined)
            .and_then(|b| b.fixup)
        {
            Some((pos, ang)) => math::mul(w, &super::realign::fixup_matrix(pos, ang)),
            None => *w,
        };
        let t = math::mul(model_world, &math::invert(&src));
        // Exporters write 6 decimals, so one skeleton's pose differs between its files by
        // printing noise (up to about 1e-5 in a matrix entry, 1e-4 units at arm's length);
        // that is not a pose of its own.
        let identity = (0..3).all(|r| {
            (0..3).all(|c| (t[r][c] - math::IDENTITY[r][c]).abs() <= 1e-4) && t[r][3].abs() <= 2e-3
        });
        if !identity {
            out[k.index()] = Some(t);
            any = true;
        }
    }
    any.then_some(out)
}

/// A vertex through [`repose_of`]'s matrices: its links' weighted sum (links normalised; a
/// vertex without links follows `bone`).
fn repose_vertex(
    repose: &[Option<M34>],
    links: &[crate::ir::Weight],
    bone: BoneId,
    pos: [f32; 3],
    normal: [f32; 3],
) -> ([f32; 3], [f32; 3]) {
    let one = [crate::ir::Weight { bone, weight: 1.0 }];
    let links = if links.is_empty() { &one[..] } else { links };
    if links
        .iter()
        .all(|w| repose.get(w.bone.index()).is_none_or(|t| t.is_none()))
    {
        return (pos, normal);
    }
    let total: f32 = links.iter().map(|w| w.weight).sum();
    let total = if total > 0.0 { total } else { 1.0 };
    let (mut p, mut n) = ([0.0f32; 3], [0.0f32; 3]);
    for w in links {
        let (tp, tn) = match repose.get(w.bone.index()).copied().flatten() {
            Some(t) => (math::apply(&t, pos), math::rotate(&t, normal)),
            None => (pos, normal),
        };
        let f = w.weight / total;
        for i in 0..3 {
            p[i] += f * tp[i];
            n[i] += f * tn[i];
        }
    }
    let len = math::dot(n, n).sqrt();
    if len > 0.0 {
        n = math::scale(n, 1.0 / len);
    }
    (p, n)
}

/// `$attachment … rigid`: the attachment does not keep its bone (2006 SDK `IS_RIGID`).
fn is_rigid(a: &crate::ir::model::Attachment) -> bool {
    a.flags.iter().any(|f| f.value == "rigid")
}

/// A material name without its extension (everything after the last `.`).
pub fn texture_name(material: &str) -> String {
    let base = material.rsplit(['/', '\\']).next().unwrap_or(material);
    match base.rfind('.') {
        Some(i) => material[..material.len() - (base.len() - i)].to_string(),
        None => material.to_string(),
    }
}

fn header_flag(name: &str) -> i32 {
    match name {
        "opaque" => 0x4,
        "mostlyopaque" => 0x8,
        "obsolete" => 0x200,
        "noforcedfade" => 0x800,
        "forcephonemecrossfade" => 0x1000,
        "ambientboost" => 0x10000,
        "donotcastshadows" => 0x20000,
        "casttextureshadows" => 0x40000,
        _ => 0,
    }
}

fn contents_flag(name: &str) -> i32 {
    match name.to_ascii_lowercase().as_str() {
        "solid" => 0x1,
        "window" => 0x2,
        "grate" => 0x8,
        "monster" => 0x0200_0000,
        "ladder" => 0x2000_0000,
        "debris" => 0x0400_0000,
        _ => 0,
    }
}

/// Builds the plan; `None` after an error diagnostic.
pub fn prepare(model: &Model, diags: &mut Vec<Diagnostic>) -> Option<SourceModel> {
    let static_prop = model.static_prop;
    let nbones_ir = model.bones.len();

    // --- LODs: which source mesh each body-part mesh uses at each LOD --------------------------
    let mut lod_defs: Vec<&crate::ir::model::Lod> =
        model.lods.iter().filter(|l| l.distance.is_some()).collect();
    lod_defs.truncate(MAX_LODS - 1);
    let shadow = model.lods.iter().find(|l| l.distance.is_none());
    let mut lod_list: Vec<(&crate::ir::model::Lod, f32)> = lod_defs
        .iter()
        .map(|l| (*l, l.distance.as_ref().map(|d| d.value).unwrap_or(0.0)))
        .collect();
    if let Some(s) = shadow {
        if lod_list.len() < MAX_LODS - 1 {
            lod_list.push((s, -1.0));
        }
    }
    let num_lods = 1 + lod_list.len();
    let mut lod_switch = vec![0.0f32];
    lod_switch.extend(lod_list.iter().map(|l| l.1));

    // mesh used at each LOD, per body option mesh
    let lod_source = |m: MeshId| -> Vec<Option<MeshId>> {
        let mut out = vec![Some(m)];
        let mut cur = Some(m);
        for (l, _) in &lod_list {
            if l.remove_models.iter().any(|r| r.0 == m) {
                cur = None;
            } else if let Some(r) = l.replace_models.iter().find(|r| r.0 == m) {
                cur = Some(r.1);
            }
            out.push(cur);
        }
        out
    };

    // --- textures and skins ----------------------------------------------------------------------
    let mut textures: Vec<String> = Vec::new();
    let mut mat_tex: Vec<usize> = Vec::with_capacity(model.materials.len());
    for m in &model.materials {
        let t = texture_name(&m.name);
        let i = match textures.iter().position(|x| x.eq_ignore_ascii_case(&t)) {
            Some(i) => i,
            None => {
                textures.push(t);
                textures.len() - 1
            }
        };
        mat_tex.push(i);
    }
    if textures.is_empty() {
        textures.push("default".into());
    }
    let mut skins: Vec<Vec<i16>> = Vec::new();
    for fam in &model.skins.families {
        let mut row: Vec<i16> = (0..textures.len() as i16).collect();
        for (r, m) in fam.iter().enumerate() {
            if let (Some(&col), Some(&tex)) = (mat_tex.get(r), mat_tex.get(m.index())) {
                if r < model.skins.num_ref {
                    row[col] = tex as i16;
                }
            }
        }
        skins.push(row);
    }
    if skins.is_empty() {
        skins.push((0..textures.len() as i16).collect());
    }

    // every bone's rest transform in model space (the meshes are re-posed to it, and the
    // output bones are made from it)
    let ir_world: Vec<M34> = math::chain(model.bones.iter().map(|b| {
        (
            math::from_euler(b.rest.rot, b.rest.pos),
            b.rest_parent.map(|p| p.index()),
        )
    }));

    // per mesh, how its vertices are re-posed onto the model's bones (`None`: they stay)
    let reposes: Vec<Option<Vec<Option<M34>>>> = model
        .meshes
        .iter()
        .map(|mm| repose_of(model, mm, &ir_world))
        .collect();
    let repose_of_mesh = |m: MeshId| reposes.get(m.index()).and_then(|r| r.as_deref());

    // --- welding, and the weight cleanup's report ------------------------------------------------
    // Every body-part model's corners are made (weights balanced, normals unit length) and
    // welded into one vertex pool per material here, before the bones are chosen: the bones
    // kept are those the balanced weights name, and the corners are made once for both. A
    // mesh's corners that lose links are counted the first time it is welded; one warning
    // per mesh, in the order they are first used.
    let mut scans: Vec<(MeshId, Scan)> = Vec::new();
    let mut welded: Vec<Vec<Welded>> = Vec::with_capacity(model.body_parts.len());
    for bp in &model.body_parts {
        let mut options = Vec::with_capacity(bp.options.len());
        for o in &bp.options {
            let BodyOption::Mesh(m) = o else {
                options.push(Welded::Blank);
                continue;
            };
            if model.mesh(*m).is_none() {
                options.push(Welded::Missing);
                continue;
            }
            let sources = lod_source(*m);
            // material → list of mesh chunks
            let mut meshes: Vec<(usize, MeshBuild)> = Vec::new();
            for (lod, src) in sources.iter().enumerate() {
                let Some(src) = src else { continue };
                let Some(smesh) = model.mesh(*src) else {
                    continue;
                };
                // each triangle's texture and corners (weights balanced, normals unit length),
                // and what the balancing dropped: made on a spare core for a large mesh, a
                // block ahead of the welding here
                let repose = repose_of_mesh(*src);
                let make = |t: &crate::ir::Triangle| -> Made {
                    let (tri, lost, largest) = corners_in(smesh, t, repose);
                    let tex = smesh
                        .material_of(t)
                        .map(|mat| mat_tex.get(mat.index()).copied().unwrap_or(0));
                    let corners = tri.map(|c| {
                        let (pos, normal) = if static_prop {
                            (math::rot_z90(c.pos), math::rot_z90(c.normal))
                        } else {
                            (c.pos, c.normal)
                        };
                        let nl = math::dot(normal, normal).sqrt();
                        let normal = if nl > 0.0 {
                            math::scale(normal, 1.0 / nl)
                        } else {
                            normal
                        };
                        CornerIn {
                            pos,
                            normal,
                            uv: c.uv,
                            weights: c.weights,
                        }
                    });
                    Made {
                        tex,
                        corners,
                        lost,
                        largest,
                    }
                };
                // a mesh's vertices and LOD-0 triangles, at most `MAX_MESH_VERTS` of each per
                // piece: about the source's triangles, for the maps' first size
                let expected = if lod == 0 {
                    smesh.mesh.triangles.len().min(MAX_MESH_VERTS + 1)
                } else {
                    0
                };
                // counted the first time the mesh is welded
                let mut scan =
                    (!scans.iter().any(|(id, _)| id == src)).then(|| Scan::new(nbones_ir));
                let mut weld_one = |made: Made| {
                    if let Some(scan) = scan.as_mut() {
                        scan.add(&made);
                    }
                    let Some(tex) = made.tex else { return };
                    let last = meshes.iter().rposition(|m| m.0 == tex);
                    let idx = match last {
                        Some(i) if meshes[i].1.verts.len() + 3 <= MAX_MESH_VERTS || lod > 0 => i,
                        _ => {
                            // a full piece takes no more LOD-0 triangles (only the last piece
                            // of a texture takes any): its weld maps go now, not at the end
                            if let Some(full) = last.and_then(|i| meshes.get_mut(i)) {
                                full.1.welded();
                            }
                            meshes.push((tex, MeshBuild::new(num_lods, expected)));
                            meshes.len() - 1
                        }
                    };
                    meshes[idx].1.triangle(lod, &made.corners);
                };
                let tris = &smesh.mesh.triangles;
                if tris.len() < PARALLEL_CORNER_TRIS || crate::threads::spare_threads(2) < 2 {
                    tris.iter().for_each(|t| weld_one(make(t)));
                } else {
                    const BLOCK: usize = 8192;
                    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<_>>(2);
                    std::thread::scope(|scope| {
                        scope.spawn(move || {
                            for block in tris.chunks(BLOCK) {
                                if tx.send(block.iter().map(make).collect()).is_err() {
                                    break;
                                }
                            }
                        });
                        while let Ok(block) = rx.recv() {
                            block.into_iter().for_each(&mut weld_one);
                        }
                    });
                }
                if let Some(scan) = scan {
                    scans.push((*src, scan));
                }
            }
            // what only the welding of LOD 0 reads goes now, not when the model is finished:
            // every model is welded before any is finished
            for (_, mb) in &mut meshes {
                mb.welded();
            }
            options.push(Welded::Meshes(meshes));
        }
        welded.push(options);
    }
    // Only LOD 0's meshes weight bones in: an LOD mesh's vertices take their links from LOD 0
    // (`unify_lods`), so a bone only an LOD file's own weights name is not kept for them (the
    // 2006 SDK tags used bones on active models only, `TagUsedBones`; an LOD's replacement file
    // is loaded as not active).
    let lod0: std::collections::HashSet<MeshId> = model
        .body_parts
        .iter()
        .flat_map(|bp| &bp.options)
        .filter_map(|o| match o {
            BodyOption::Mesh(m) => lod_source(*m).first().copied().flatten(),
            _ => None,
        })
        .collect();
    let mut weighted = vec![false; nbones_ir];
    for (mid, scan) in &scans {
        if lod0.contains(mid) {
            for (u, k) in weighted.iter_mut().zip(&scan.linked) {
                *u |= k;
            }
        }
        let Some(mm) = model.mesh(*mid) else { continue };
        if scan.lost > 0 && !static_prop {
            diags.push(
                Diagnostic::new(
                    Code::SourceWeightsPruned,
                    format!(
                        "{} vertices of `{}` lose bone weights (Source keeps at most 3 links per vertex, none under 0.05)",
                        scan.lost, mm.name
                    ),
                    mm.span,
                    "in this mesh",
                )
                .with_note(format!(
                    "the largest weight dropped is {:.3}; the remaining weights are rescaled to add up to 1",
                    scan.largest
                )),
            );
        }
    }

    // --- bones ---------------------------------------------------------------------------------
    let mut keep = vec![false; nbones_ir];
    let mark = |b: BoneId, keep: &mut Vec<bool>| {
        let mut cur = Some(b);
        while let Some(c) = cur {
            if c.index() >= keep.len() || keep[c.index()] {
                break;
            }
            keep[c.index()] = true;
            cur = model.bones[c.index()].parent;
        }
    };
    for (b, _) in weighted.iter().enumerate().filter(|w| *w.1) {
        mark(BoneId(b as u32), &mut keep);
    }
    for a in &model.attachments {
        if is_rigid(a) {
            // 2006 SDK `TagUsedBones`: a `rigid` attachment keeps the nearest bone at or above
            // its own that LOD 0's vertices use, not its own bone (`LinkAttachments` then
            // moves it there)
            let mut cur = Some(a.bone);
            while let Some(c) = cur {
                if weighted.get(c.index()).copied().unwrap_or(false) {
                    mark(c, &mut keep);
                    break;
                }
                cur = model.bones.get(c.index()).and_then(|b| b.parent);
            }
        } else {
            mark(a.bone, &mut keep);
        }
    }
    for c in &model.ik_chains {
        mark(c.bones[2], &mut keep);
    }
    for (b, _, _) in &model.screen_align {
        mark(*b, &mut keep);
    }
    // procedural bones and the bones they follow are kept whether or not they carry vertices
    // (2006 SDK `TagProceduralBones`)
    for p in &model.procedural_bones {
        mark(p.bone, &mut keep);
        match &p.rule {
            ProcRule::QuatInterp { control, .. } | ProcRule::AxisInterp { control, .. } => {
                mark(*control, &mut keep)
            }
            ProcRule::AimAt { parent, aim, .. } => {
                mark(*parent, &mut keep);
                if let AimTarget::Bone(b) = aim {
                    mark(*b, &mut keep);
                }
            }
            ProcRule::Jiggle(_) => {}
        }
    }
    for s in &model.hitbox_sets {
        for h in &s.boxes {
            mark(h.bone, &mut keep);
        }
    }
    for (i, b) in model.bones.iter().enumerate() {
        if b.defined {
            mark(BoneId(i as u32), &mut keep);
        }
    }
    for (b, _) in &model.bone_merge {
        mark(*b, &mut keep);
    }
    for e in &model.face.eyeballs {
        mark(e.bone, &mut keep);
    }
    for m in &model.face.mouths {
        mark(m.bone, &mut keep);
    }
    if nbones_ir > 0 && !keep.iter().any(|&k| k) {
        keep[0] = true;
    }

    let mut bones: Vec<PBone> = Vec::new();
    let mut ir_to_out: Vec<Option<usize>> = vec![None; nbones_ir];
    if static_prop || nbones_ir == 0 {
        bones.push(PBone {
            name: "static_prop".into(),
            parent: None,
            pos: [0.0; 3],
            quat: [0.0, 0.0, 0.0, 1.0],
            rot: [0.0; 3],
            pose_to_bone: math::IDENTITY,
            world: math::IDENTITY,
            flags: 0,
        });
        for m in ir_to_out.iter_mut() {
            *m = Some(0);
        }
        if !static_prop {
            bones[0].name = "root".into();
        }
    } else {
        for (i, b) in model.bones.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            let mut p = b.parent;
            while let Some(pp) = p {
                if keep[pp.index()] {
                    break;
                }
                p = model.bones[pp.index()].parent;
            }
            let parent = p.and_then(|p| ir_to_out[p.index()]);
            let world = ir_world[i];
            let (pos, rot) = if p == b.rest_parent {
                (b.rest.pos, b.rest.rot)
            } else {
                let pw = parent.map(|p| bones[p].world).unwrap_or(math::IDENTITY);
                let local = math::mul(&math::invert(&pw), &world);
                (
                    [local[0][3], local[1][3], local[2][3]],
                    math::to_euler(&local),
                )
            };
            ir_to_out[i] = Some(bones.len());
            bones.push(PBone {
                name: b.name.clone(),
                parent,
                pos,
                quat: math::euler_quat(rot),
                rot,
                pose_to_bone: math::invert(&world),
                world,
                flags: 0,
            });
        }
    }
    if bones.len() > 128 {
        let span = model.bones.first().map(|b| b.span);
        if let Some(span) = span {
            diags.push(
                Diagnostic::new(
                    Code::SourceTooManyBones,
                    format!(
                        "the model has {} bones; Source allows at most 128",
                        bones.len()
                    ),
                    span,
                    "in this skeleton",
                )
                .with_note("bones nothing references are already dropped; merge or remove bones"),
            );
        }
        return None;
    }
    // turned before anything is placed in a bone's frame (2006 SDK `RealignBones`)
    let realign = super::realign::realign(model, &mut bones, &ir_to_out, diags)?;
    let out_bone = |b: BoneId| ir_to_out.get(b.index()).copied().flatten().unwrap_or(0);

    // --- each LOD's bone replacements (`replacebone`, `bonetreecollapse`) -----------------------
    let lod_bone_maps: Vec<Vec<BoneId>> = (0..num_lods)
        .map(
            |lod| match lod.checked_sub(1).and_then(|l| lod_list.get(l)) {
                Some((l, _)) => lod_bone_map(model, l, &ir_to_out),
                None => (0..nbones_ir).map(|b| BoneId(b as u32)).collect(),
            },
        )
        .collect();

    // --- body parts, models, meshes ----------------------------------------------------------------
    let mut body_parts = Vec::new();
    let mut failed = false;
    for (bp, options) in model.body_parts.iter().zip(welded) {
        let mut models = Vec::new();
        for (o, w) in bp.options.iter().zip(options) {
            let (BodyOption::Mesh(m), Welded::Meshes(mut meshes)) = (o, w) else {
                if matches!(o, BodyOption::Mesh(_)) {
                    continue;
                }
                models.push(PModel {
                    name: String::new(),
                    meshes: Vec::new(),
                    eyeballs: Vec::new(),
                });
                continue;
            };
            let Some(mm) = model.mesh(*m) else { continue };
            // the model's LOD-0 vertices, where a vertex only a LOD has takes its links from
            // only a model with LOD triangles searches its LOD-0 vertices
            let has_lods = meshes
                .iter()
                .any(|m| m.1.pending.iter().any(|p| !p.is_empty()));
            let root = RootVertices::new(if has_lods {
                meshes
                    .iter()
                    .flat_map(|m| m.1.verts.iter().cloned())
                    .collect()
            } else {
                Vec::new()
            });
            meshes.sort_by_key(|m| m.0);
            let mut out_meshes = Vec::new();
            let lods = LodContext {
                root: &root,
                bone_maps: &lod_bone_maps,
            };
            for (tex, mb) in meshes {
                out_meshes.push(mb.finish(tex, num_lods, static_prop, &out_bone, &lods));
            }
            let total: usize = out_meshes.iter().map(|m: &PMesh| m.vertices.len()).sum();
            if total >= MAX_MODEL_VERTS {
                diags.push(
                    Diagnostic::new(
                        Code::SourceModelTooManyVertices,
                        format!(
                            "model `{}` has {total} vertices; Valve's tools allow fewer than 65536 per model",
                            mm.name
                        ),
                        mm.span,
                        "this mesh",
                    )
                    .with_note("its meshes were split to fit the VTX's 16-bit vertex numbers, but the engine may refuse the model; split the mesh into several body parts"),
                );
            }
            // the file as the QC wrote it, folders and all (2006 SDK: `Option_Studio` keeps the
            // token, `write.cpp` copies it into the name; a Garry's Mod build keeps
            // `meshes\pony_mature\body.smd`); cut at 63 bytes when written
            let name = if mm.written.is_empty() {
                mm.name.clone()
            } else {
                mm.written.clone()
            };
            // vertex animation (flexes), which may also move vertices to the default shape
            let fx = face::vertex_anims(
                &model.face,
                *m,
                &mut out_meshes,
                static_prop,
                repose_of_mesh(*m),
            );
            for (pm, flexes) in out_meshes.iter_mut().zip(fx.per_mesh) {
                pm.flexes = flexes;
            }
            for (vta, n) in fx.unmatched {
                let file = model.face.vtas.get(vta);
                if let Some(base) = file.and_then(|v| v.base()) {
                    let what = if file.is_some_and(|v| v.dmx.is_some()) {
                        "DMX file's flex shapes"
                    } else {
                        "VTA"
                    };
                    diags.push(
                        Diagnostic::new(
                            Code::BuildVtaUnmatched,
                            format!(
                                "{n} moving vertices of this {what} match no vertex of `{}`; their motion is dropped",
                                mm.name
                            ),
                            base.span,
                            "the base shape",
                        )
                        .with_note("a VTA vertex matches a mesh vertex whose position is within 0.387 units (squared distance under 0.15) in the base shape, as in Valve's compiler")
                        .with_note("export the VTA from the same mesh as the reference SMD"),
                    );
                }
            }
            if fx.moved > MAX_FLEX_VERTS {
                if let Some(k) = model.face.keys.iter().find(|k| k.mesh == *m) {
                    diags.push(
                        Diagnostic::new(
                            Code::BuildFaceLimit,
                            format!(
                                "flexes move {} vertices of `{}`; the engine moves at most {MAX_FLEX_VERTS}",
                                fx.moved, mm.name
                            ),
                            k.span,
                            "the first flex",
                        )
                        .with_note("public/studio.h: MAXSTUDIOFLEXVERTS"),
                    );
                    failed = true;
                }
            }
            // eyeballs: into their bone's space; their meshes marked
            let mut eyeballs = Vec::new();
            for e in model.face.eyeballs.iter().filter(|e| e.mesh == *m) {
                let bone = out_bone(e.bone);
                let world = bones.get(bone).map_or(math::IDENTITY, |b| b.world);
                let tex = mat_tex.get(e.material.index()).copied().unwrap_or(0);
                for pm in out_meshes.iter_mut().filter(|pm| pm.material == tex) {
                    pm.material_type = 1;
                    pm.material_param = eyeballs.len() as i32;
                }
                eyeballs.push(face::eyeball(e, bone, &world));
            }
            models.push(PModel {
                name,
                meshes: out_meshes,
                eyeballs,
            });
        }
        body_parts.push(PBodyPart {
            name: bp.name.value.clone(),
            models,
        });
    }

    if failed {
        return None;
    }

    // --- bone flags from vertices per LOD ------------------------------------------------------------
    let parents: Vec<Option<usize>> = bones.iter().map(|b| b.parent).collect();
    let mut flags = vec![0i32; bones.len()];
    let set = |flags: &mut Vec<i32>, b: usize, bit: i32| {
        let mut cur = Some(b);
        while let Some(c) = cur {
            if c >= flags.len() {
                break;
            }
            flags[c] |= bit;
            cur = parents[c];
        }
    };
    // the bones each LOD's corners name, then each of them with its ancestors (once a bone, not
    // once a corner: a deep skeleton made this walk the bulk of a big mesh's build)
    let mut direct = vec![0i32; bones.len()];
    for bp in &body_parts {
        for m in &bp.models {
            for mesh in &m.meshes {
                for (lod, tris) in mesh.lod_tris.iter().enumerate() {
                    let bit = 0x400 << lod;
                    for t in tris {
                        for &v in t {
                            if let Some(vx) = mesh.vertices.get(v as usize) {
                                for w in &vx.weights {
                                    if let Some(d) = direct.get_mut(w.0 as usize) {
                                        *d |= bit;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (b, &d) in direct.iter().enumerate() {
        if d != 0 {
            set(&mut flags, b, d);
        }
    }

    // --- attachments -----------------------------------------------------------------------------------
    let mut attachments = Vec::new();
    for a in &model.attachments {
        // a bone the model dropped (a `rigid` attachment's): its nearest kept ancestor, the
        // place re-expressed there (2006 SDK `LinkAttachments`)
        let mut at = Some(a.bone);
        while let Some(c) = at.filter(|c| ir_to_out.get(c.index()).copied().flatten().is_none()) {
            at = model.bones.get(c.index()).and_then(|b| b.parent);
        }
        let moved = at != Some(a.bone);
        let bone = at.map_or(0, out_bone);
        let mut local = math::IDENTITY;
        if let Some(r) = a.rotate_deg {
            // QAngle (pitch, yaw, roll) → Euler (roll, pitch, yaw)
            local = math::from_euler(
                [r[2].to_radians(), r[0].to_radians(), r[1].to_radians()],
                [0.0; 3],
            );
        }
        if let Some(xz) = a.x_and_z_axes {
            let x = [xz[0], xz[1], xz[2]];
            let z = [xz[3], xz[4], xz[5]];
            let y = math::cross(z, x);
            for r in 0..3 {
                local[r][0] = x[r];
                local[r][1] = y[r];
                local[r][2] = z[r];
            }
        }
        local[0][3] = a.position[0];
        local[1][3] = a.position[1];
        local[2][3] = a.position[2];
        // `absolute`: the place is given in the model's rest space, not the bone's (2006 SDK
        // `simplify.cpp`: world = local, then local = poseToBone × world)
        let absolute = a.flags.iter().any(|f| f.value == "absolute");
        if static_prop {
            // a static prop's one bone is the model, turned as its meshes are
            let world = if absolute {
                local
            } else {
                math::mul(&ir_world[a.bone.index()], &local)
            };
            let rz = math::from_euler([0.0, 0.0, std::f32::consts::FRAC_PI_2], [0.0; 3]);
            local = math::mul(&rz, &world);
        } else if absolute {
            local = math::mul(&bones[bone].pose_to_bone, &local);
        } else if moved {
            let world = math::mul(&ir_world[a.bone.index()], &local);
            local = math::mul(&bones[bone].pose_to_bone, &world);
        }
        set(&mut flags, bone, 0x200);
        attachments.push(PAttachment {
            name: a.name.value.clone(),
            bone,
            local,
        });
    }
    // IK chains: the three bones carry BONE_USED_BY_ATTACHMENT as attachment bones do (2006
    // SDK `LinkIKChains`; `source-geometry.md` 5.2 on held-out builds)
    let ik_chains: Vec<PIkChain> = model
        .ik_chains
        .iter()
        .map(|c| {
            let bones = c.bones.map(&out_bone);
            for &b in &bones {
                set(&mut flags, b, 0x200);
            }
            PIkChain {
                name: c.name.clone(),
                bones: bones.map(|b| b as i32),
                knee: c.knee,
                height: c.height,
                radius: c.radius,
                floor: c.floor,
                center: c.center,
            }
        })
        .collect();
    // eyeball and mouth bones are flagged as attachment bones are (`source-geometry.md` §5.2)
    for e in &model.face.eyeballs {
        set(&mut flags, out_bone(e.bone), 0x200);
    }
    for m in &model.face.mouths {
        set(&mut flags, out_bone(m.bone), 0x200);
    }
    let face = face::prepare_face(&model.face, &out_bone);
    let ik_autoplay_locks: Vec<(i32, f32, f32)> = model
        .ik_autoplay_locks
        .iter()
        .map(|&(c, p, q)| (c as i32, p, q))
        .collect();

    // --- hit boxes -----------------------------------------------------------------------------------------
    let mut hitbox_sets = Vec::new();
    let auto = model.hitbox_sets.is_empty();
    if auto {
        let skip = model
            .header_flags
            .iter()
            .any(|f| f.value == "skipboneinbbox");
        let mut boxes: Vec<Aabb> = vec![Aabb::EMPTY; bones.len()];
        if !skip {
            for b in boxes.iter_mut() {
                b.add([0.0; 3]);
            }
        }
        for bp in &body_parts {
            for m in &bp.models {
                for mesh in &m.meshes {
                    for v in &mesh.vertices {
                        for w in &v.weights {
                            let b = w.0 as usize;
                            if let Some(bx) = boxes.get_mut(b) {
                                bx.add(math::apply(&bones[b].pose_to_bone, v.pos));
                            }
                        }
                    }
                }
            }
        }
        for b in (0..bones.len()).rev() {
            if let Some(p) = bones[b].parent {
                let pos = bones[b].pos;
                boxes[p].add(pos);
            }
        }
        let mut out = Vec::new();
        for (b, bx) in boxes.iter().enumerate() {
            if bx.is_empty() {
                continue;
            }
            if (0..3).all(|a| bx.max[a] - bx.min[a] > 1.0) {
                let mut group = 0;
                let mut cur = Some(b);
                'g: while let Some(c) = cur {
                    for (g, hb, _) in &model.hit_groups {
                        if ir_to_out.get(hb.index()).copied().flatten() == Some(c) {
                            group = *g;
                            break 'g;
                        }
                    }
                    cur = bones[c].parent;
                }
                out.push(PHitbox {
                    bone: b,
                    group,
                    min: bx.min,
                    max: bx.max,
                    name: String::new(),
                });
            }
        }
        hitbox_sets.push(PHitboxSet {
            name: "default".into(),
            boxes: out,
        });
    } else {
        for s in &model.hitbox_sets {
            let boxes = s
                .boxes
                .iter()
                .map(|h| PHitbox {
                    bone: out_bone(h.bone),
                    group: h.group,
                    min: h.min,
                    max: h.max,
                    name: h.name.as_ref().map(|n| n.value.clone()).unwrap_or_default(),
                })
                .collect();
            hitbox_sets.push(PHitboxSet {
                name: s.name.value.clone(),
                boxes,
            });
        }
    }
    let procedural = procedural_bones(model, &bones, &attachments, &out_bone, &realign);
    for p in &procedural {
        if let Some(f) = flags.get_mut(p.bone) {
            *f |= 0x4; // BONE_ALWAYS_PROCEDURAL
        }
    }
    // `$bonemerge` bones are tagged with the bones' other uses, before the helpers' chains are
    // (2006 SDK `TagUsedBones`): a merged helper's control bone is used by bone merge too
    for (b, _) in &model.bone_merge {
        set(&mut flags, out_bone(*b), 0x40000);
    }
    // a helper's uses go up its own and its control bone's chains (2006 SDK
    // `MarkProceduralBoneChain`, which runs before the hit boxes are flagged)
    for p in &procedural {
        if let PProcRule::QuatInterp(control, _) = &p.rule {
            let used = flags.get(p.bone).copied().unwrap_or(0) & 0x0007_ff00;
            set(&mut flags, *control as usize, used);
            set(&mut flags, p.bone, used);
        }
    }
    for s in &hitbox_sets {
        for h in &s.boxes {
            set(&mut flags, h.bone, 0x100);
        }
    }
    // `$screenalign` (2006 SDK `TagScreenAlignedBones`)
    for (b, flag, _) in &model.screen_align {
        if let Some(f) = flags.get_mut(out_bone(*b)) {
            *f |= flag;
        }
    }
    for (b, f) in bones.iter_mut().zip(flags) {
        b.flags = f;
    }

    // each bone's surface property: its own or its nearest ancestor's `$jointsurfaceprop`,
    // else the model's (`GetSurfaceProp` of the 2006 SDK's studiomdl.cpp)
    let default_prop = model
        .surface_prop
        .as_ref()
        .map(|s| s.value.clone())
        .unwrap_or_else(|| "default".into());
    let bone_surface_props: Vec<String> = (0..bones.len())
        .map(|i| {
            let mut cur = Some(i);
            while let Some(k) = cur {
                if let Some((_, p)) = model
                    .joint_surface_props
                    .iter()
                    .find(|(b, _)| b.eq_ignore_ascii_case(&bones[k].name))
                {
                    return p.clone();
                }
                cur = bones[k].parent;
            }
            default_prop.clone()
        })
        .collect();
    let physics =
        super::physics::plan(model, &bones, &bone_surface_props, static_prop, diags).ok()?;

    // --- boxes -------------------------------------------------------------------------------------------------
    let rz = if static_prop {
        math::IDENTITY
    } else {
        math::from_euler([0.0, 0.0, std::f32::consts::FRAC_PI_2], [0.0; 3])
    };
    let mut seq = Aabb::EMPTY;
    for bp in &body_parts {
        for m in &bp.models {
            for mesh in &m.meshes {
                for v in &mesh.vertices {
                    seq.add(math::apply(&rz, v.pos));
                }
            }
        }
    }
    for s in hitbox_sets.iter().take(1) {
        for h in &s.boxes {
            let hb = Aabb {
                min: h.min,
                max: h.max,
            };
            let w = math::mul(&rz, &bones[h.bone].world);
            for c in hb.corners() {
                seq.add(math::apply(&w, c));
            }
        }
    }
    let rest_plain = seq;
    // a prop's collision hull, 0.25 inch wider, widens the box; a ragdoll's does not (2006 SDK
    // `CollisionModel_ExpandBBox`: "don't do fixup for ragdolls")
    let mut collision_box = Aabb::EMPTY;
    let prop_hull = physics.as_ref().and_then(|p| p.prop_bounds);
    if let (Some((lo, hi)), None) = (prop_hull, &model.bbox) {
        let mut cb = Aabb::EMPTY;
        cb.add(lo.map(|c| c as f32));
        cb.add(hi.map(|c| c as f32));
        if !cb.is_empty() {
            cb.add(math::sub(cb.min, [0.25; 3]));
            cb.add(math::add(cb.max, [0.25; 3]));
            seq.union(&cb);
            collision_box = cb;
        }
    }
    let rest_box = seq.or_zero();

    // --- animations and sequences ------------------------------------------------------------------
    let anim = super::anim::plan(
        model,
        &super::anim::Context {
            bones: &bones,
            ir_to_out: &ir_to_out,
            static_prop,
            body_parts: &body_parts,
            hitbox_sets: &hitbox_sets,
            attachments: &attachments,
            ik_chains: &ik_chains,
            rest_box,
            realign: &realign,
        },
        diags,
    )?;
    // §6.11: the hull and the illumination point come from sequence 0's box
    let seq0 = match anim.seqs.first() {
        Some(s) if !static_prop => {
            let mut b = Aabb {
                min: s.bbox.0,
                max: s.bbox.1,
            };
            let centre = b.or_zero();
            b.union(&collision_box);
            (b.or_zero(), centre)
        }
        _ => (rest_box, rest_plain.or_zero()),
    };
    let illum_default = {
        let (a, b) = seq0.1;
        [
            (a[0] + b[0]) * 0.5,
            (a[1] + b[1]) * 0.5,
            (a[2] + b[2]) * 0.5,
        ]
    };
    let seq_box = seq0.0;
    let hull = match &model.bbox {
        Some(b) => (b.value[0], b.value[1]),
        None => seq_box,
    };
    let view_bb = match &model.cbox {
        Some(b) => (b.value[0], b.value[1]),
        None => ([0.0; 3], [0.0; 3]),
    };
    let swap = |p: [f32; 3]| [-p[1], p[0], p[2]];

    let mut flags = 0i32;
    if auto {
        flags |= 0x1;
    }
    if static_prop {
        flags |= 0x10;
    }
    if shadow.is_some() {
        flags |= 0x40;
    }
    for f in &model.header_flags {
        flags |= header_flag(&f.value);
    }
    let contents = if model.contents.is_empty() {
        1
    } else {
        model
            .contents
            .iter()
            .fold(0, |a, c| a | contents_flag(&c.value))
    };
    let mut name = model
        .name
        .as_ref()
        .map(|n| n.value.clone())
        .unwrap_or_else(|| "model.mdl".into());
    if !name.to_ascii_lowercase().ends_with(".mdl") {
        name.push_str(".mdl");
    }
    let cd_materials = model
        .material_dirs
        .iter()
        .map(|d| {
            let mut s = d.value.replace('/', "\\");
            if !s.ends_with('\\') {
                s.push('\\');
            }
            s
        })
        .collect();
    let keyvalues = model.keyvalues.as_ref().map(|k| {
        let t = k.value.trim();
        let inner = t
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(t);
        format!("mdlkeyvalue\n{{\n{}\n}}\n", inner.trim())
    });
    Some(SourceModel {
        procedural,
        name,
        static_prop,
        flags,
        bones,
        textures,
        cd_materials,
        skins,
        body_parts,
        num_lods,
        lod_switch,
        attachments,
        ik_chains,
        ik_autoplay_locks,
        hitbox_sets,
        anim,
        eye_position: model
            .eye_position
            .as_ref()
            .map(|e| swap(e.value))
            .unwrap_or([0.0; 3]),
        // `studio.h` reads the field as a cosine ("default to cos(30) if not set"); that Valve's
        // compiler stores cos(degrees) is inferred from it, not checked against a build
        max_eye_deflection: model
            .max_eye_deflection
            .as_ref()
            .map_or(0.0, |d| d.value.to_radians().cos()),
        illum_position: model
            .illum_position
            .as_ref()
            .map(|e| swap(e.value))
            .unwrap_or(illum_default),
        hull,
        view_bb,
        surface_prop: default_prop,
        contents,
        keyvalues,
        face,
        physics,
        bone_surface_props,
    })
}

/// The VTX strip groups of every variant: `[model][lod][mesh]`, models in body part order
/// (`source-geometry.md` §8.3–§8.4).
/// The procedural bones' records (2006 SDK `RemapProceduralBones` and `WriteBoneInfo`): each
/// trigger's position gains the control bone's rest offset × the `<display>` share, and its
/// rotations are taken through a matrix as Valve's compiler takes them: the trigger through the
/// control bone's realignment, the helper's pose through its own (`realign.rs`).
fn procedural_bones(
    model: &Model,
    bones: &[PBone],
    attachments: &[PAttachment],
    out_bone: &dyn Fn(BoneId) -> usize,
    realign: &[Option<M34>],
) -> Vec<PProc> {
    // `MatrixAngles(QuaternionMatrix(q, pos) × srcRealign)`
    let through = |q: [f32; 4], pos: [f32; 3], bone: usize| {
        let m = math::quat_matrix(q, pos);
        let m = match realign.get(bone) {
            Some(Some(r)) => math::mul(&m, r),
            _ => m,
        };
        (math::matrix_quat(&m), [m[0][3], m[1][3], m[2][3]])
    };
    model
        .procedural_bones
        .iter()
        .filter_map(|p| {
            let bone = out_bone(p.bone);
            let rule = match &p.rule {
                ProcRule::QuatInterp {
                    control,
                    percentage,
                    triggers,
                } => {
                    let c = out_bone(*control);
                    let offset = bones.get(c).map_or([0.0; 3], |b| b.pos);
                    PProcRule::QuatInterp(
                        c as i32,
                        triggers
                            .iter()
                            .map(|t| {
                                let pos = math::add(t.pos, math::scale(offset, *percentage));
                                let (quat, pos) = through(t.quat, pos, bone);
                                QuatInterpInfo {
                                    inv_tolerance: 1.0 / t.tolerance,
                                    trigger: through(t.trigger, [0.0; 3], c).0,
                                    pos,
                                    quat,
                                }
                            })
                            .collect(),
                    )
                }
                ProcRule::AimAt {
                    parent,
                    aim,
                    aim_vector,
                    up_vector,
                    base_pos,
                } => {
                    let (aim, attach) = match aim {
                        AimTarget::Bone(b) => (out_bone(*b) as i32, false),
                        AimTarget::Attachment(n) => {
                            (attachments.iter().position(|a| a.name == *n)? as i32, true)
                        }
                    };
                    PProcRule::AimAt(
                        AimAtBone {
                            parent: out_bone(*parent) as i32,
                            aim,
                            aimvector: *aim_vector,
                            upvector: *up_vector,
                            basepos: *base_pos,
                        },
                        attach,
                    )
                }
                ProcRule::AxisInterp {
                    control,
                    axis,
                    pos,
                    quat,
                } => PProcRule::AxisInterp(AxisInterpBone {
                    control: out_bone(*control) as i32,
                    axis: *axis,
                    pos: *pos,
                    quat: *quat,
                }),
                ProcRule::Jiggle(j) => {
                    PProcRule::Jiggle(JiggleBone::from_values(j.flags, &j.values))
                }
            };
            Some(PProc { bone, rule })
        })
        .collect()
}

/// What the weight cleanup did to one mesh's corners: how many lost links, the largest weight
/// dropped, and the bones the kept links name.
struct Scan {
    lost: usize,
    largest: f32,
    linked: Vec<bool>,
}

impl Scan {
    fn new(bones: usize) -> Scan {
        Scan {
            lost: 0,
            largest: 0.0,
            linked: vec![false; bones],
        }
    }

    /// One made triangle, whether or not it has a material.
    fn add(&mut self, made: &Made) {
        self.lost += made.lost;
        self.largest = self.largest.max(made.largest);
        for c in &made.corners {
            for w in &c.weights {
                if let Some(u) = self.linked.get_mut(w.0.index()) {
                    *u = true;
                }
            }
        }
    }
}

/// A triangle made for welding: its texture (none when its material is unknown: not welded),
/// its corners, and what the weight cleanup did to them ([`corners_in`]).
struct Made {
    tex: Option<usize>,
    corners: [CornerIn; 3],
    lost: usize,
    largest: f32,
}

/// A body-part option after welding.
enum Welded {
    /// `blank`: a model with no mesh.
    Blank,
    /// A mesh the model does not have (never, for a model the build made).
    Missing,
    /// The option's vertex pools, by texture.
    Meshes(Vec<(usize, MeshBuild)>),
}

/// Below this many triangles in a mesh its corners are made on the thread that welds them.
const PARALLEL_CORNER_TRIS: usize = 60_000;

/// Below this many triangles (all variants, models, LODs and meshes together) the strips are
/// built on this thread alone: a thread costs more than it saves.
const PARALLEL_STRIP_TRIS: usize = 60_000;

/// The VTX strip groups of a prepared model, one [`VtxStrips`] for each variant (`.dx90`,
/// `.dx80`, `.sw`, in [`Variant::ALL`] order): `[model][lod][mesh]`, models in body part order.
/// Made when the files are written, once the IR model is let go (`compile_owned`): a large
/// mesh's strips and its IR triangles are not held at once.
pub fn strips(plan: &SourceModel) -> Vec<VtxStrips> {
    strip_groups(&plan.body_parts, plan.num_lods, plan.static_prop)
}

fn strip_groups(body_parts: &[PBodyPart], num_lods: usize, static_prop: bool) -> Vec<VtxStrips> {
    let models: Vec<&PModel> = body_parts.iter().flat_map(|b| b.models.iter()).collect();
    // which vertices move, per model and mesh: once, for every variant and LOD
    let flexed: Vec<Vec<Vec<bool>>> = models
        .iter()
        .map(|m| m.meshes.iter().map(PMesh::flexed).collect())
        .collect();
    // One job per model, LOD and mesh, each independent of the others, making the strips of
    // all three variants (which share meshopt's work where they cut the same strips): built
    // on the spare cores, largest first, and put back in order.
    let tris = |m: usize, l: usize, k: usize| {
        models[m].meshes[k]
            .lod_tris
            .get(l)
            .map_or(&[][..], Vec::as_slice)
    };
    let mut jobs: Vec<(usize, usize, usize)> = Vec::new();
    for (m, model) in models.iter().enumerate() {
        for l in 0..num_lods {
            for k in 0..model.meshes.len() {
                jobs.push((m, l, k));
            }
        }
    }
    let total: usize = jobs.iter().map(|&(m, l, k)| tris(m, l, k).len()).sum();
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&j| {
        let (m, l, k) = jobs[j];
        std::cmp::Reverse(tris(m, l, k).len())
    });
    let threads = if total * Variant::ALL.len() < PARALLEL_STRIP_TRIS {
        1
    } else {
        crate::threads::spare_threads(jobs.len())
    };
    let built = crate::threads::map_parallel(&order, threads, |&j| {
        let (m, l, k) = jobs[j];
        let mesh = &models[m].meshes[k];
        let mut cache = strips::Orders::default();
        Variant::ALL.map(|variant| {
            strips::build(
                &mesh.vertices,
                tris(m, l, k),
                &flexed[m][k],
                variant,
                static_prop,
                &mut cache,
            )
        })
    });
    let mut per_job: Vec<Option<[Vec<super::model::Group>; 3]>> =
        (0..jobs.len()).map(|_| None).collect();
    for (&j, groups) in order.iter().zip(built) {
        per_job[j] = Some(groups);
    }
    // variant by variant, in job order
    let mut slots: Vec<Option<Vec<super::model::Group>>> = Vec::new();
    for v in 0..Variant::ALL.len() {
        for job in per_job.iter_mut() {
            slots.push(job.as_mut().map(|g| std::mem::take(&mut g[v])));
        }
    }
    let mut slots = slots.into_iter().map(Option::unwrap_or_default);
    Variant::ALL
        .into_iter()
        .map(|variant| VtxStrips {
            variant,
            groups: models
                .iter()
                .map(|m| {
                    (0..num_lods)
                        .map(|_| {
                            m.meshes
                                .iter()
                                .map(|_| slots.next().unwrap_or_default())
                                .collect()
                        })
                        .collect()
                })
                .collect(),
        })
        .collect()
}

/// Weld key: exact position and uv bits, and the links (at most 3 after [`balance`]; unused
/// entries are `NO_LINK`, which no link equals, so keys of different lengths differ).
#[derive(Hash, PartialEq, Eq)]
struct Key {
    pos: [u32; 3],
    uv: [u32; 2],
    weights: [(u32, u32); 3],
}

const NO_LINK: (u32, u32) = (u32::MAX, u32::MAX);

impl Key {
    /// The key of a corner (whose links [`balance`] made at most 3).
    fn of(c: &CornerIn) -> Key {
        debug_assert!(c.weights.len() <= 3);
        let mut weights = [NO_LINK; 3];
        for (slot, w) in weights.iter_mut().zip(&c.weights) {
            *slot = (w.0 .0, w.1.to_bits());
        }
        Key {
            pos: c.pos.map(bits),
            uv: c.uv.map(bits),
            weights,
        }
    }
}

fn bits(f: f32) -> u32 {
    if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

/// Everything a finished vertex is made of, bit for bit (weights in bone order): a LOD-n vertex
/// is only shared with a vertex that equals it exactly in all of these.
#[derive(Hash, PartialEq, Eq)]
struct ExactKey {
    pos: [u32; 3],
    normal: [u32; 3],
    uv: [u32; 2],
    tangent: [u32; 4],
    /// The links in bone order, then `NO_LINK`s.
    weights: [(u32, u32); 3],
}

impl ExactKey {
    fn of(v: &RawVertex) -> ExactKey {
        let mut weights = [NO_LINK; 3];
        for (slot, w) in weights.iter_mut().zip(v.weights.iter()) {
            *slot = (w.0 .0, bits(w.1));
        }
        weights.sort_unstable();
        ExactKey {
            pos: v.pos.map(bits),
            normal: v.normal.map(bits),
            uv: v.uv.map(bits),
            tangent: v.tangent.map(bits),
            weights,
        }
    }
}

#[derive(Clone)]
struct RawVertex {
    pos: [f32; 3],
    normal: [f32; 3],
    uv: [f32; 2],
    weights: Links,
    /// Studiomdl's raw tangent (7.6): orthonormalized direction, zero when the uvs are
    /// degenerate, and the handedness sign; filled in once the triangles of its LOD are known.
    tangent: [f32; 4],
    lod_mask: u32,
}

/// Vertices by a key, each key's in the order they were added, without a list per key: the
/// map holds a key's first and last vertex and `next` links each vertex to the following one
/// (a large mesh has about one key per vertex, so a `Vec` per key would be an allocation per
/// vertex).
struct Chains<K> {
    map: FastMap<K, (u32, u32)>,
    next: Vec<u32>,
}

impl<K: std::hash::Hash + Eq> Default for Chains<K> {
    fn default() -> Self {
        Chains {
            map: FastMap::default(),
            next: Vec::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq> Chains<K> {
    const END: u32 = u32::MAX;

    fn with_capacity(n: usize) -> Self {
        let mut map = FastMap::default();
        map.reserve(n);
        Chains {
            map,
            next: Vec::with_capacity(n),
        }
    }

    /// Adds vertex `v` (in no chain yet) at the end of `key`'s chain.
    fn push(&mut self, key: K, v: u32) {
        let at = v as usize;
        if self.next.len() <= at {
            self.next.resize(at + 1, Self::END);
        }
        match self.map.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let (first, last) = *e.get();
                if let Some(n) = self.next.get_mut(last as usize) {
                    *n = v;
                }
                e.insert((first, v));
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert((v, v));
            }
        }
    }

    /// `key`'s vertices, in the order they were added.
    fn get<'a>(&'a self, key: &K) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.map.get(key).map_or(Self::END, |e| e.0);
        std::iter::from_fn(move || {
            (at != Self::END).then(|| {
                let v = at;
                at = self.next.get(v as usize).copied().unwrap_or(Self::END);
                v
            })
        })
    }
}

/// Normals of corners welded into one vertex are within 2° of the vertex's (first) normal.
fn weld_cos() -> f32 {
    (2.0f32).to_radians().cos()
}

/// Welds one corner into a vertex pool: exact position, uv and links, normal within 2° of the
/// first normal; zero normals never weld. Returns the vertex and whether it is new.
fn weld(
    verts: &mut Vec<RawVertex>,
    index: &mut Chains<Key>,
    c: &CornerIn,
    lod: usize,
) -> (u32, bool) {
    let key = Key::of(c);
    let zero = math::dot(c.normal, c.normal) == 0.0;
    if !zero {
        let cos2 = weld_cos();
        let found = index.get(&key).find(|&i| {
            verts.get(i as usize).is_some_and(|v| {
                math::dot(v.normal, v.normal) > 0.0 && math::dot(v.normal, c.normal) > cos2
            })
        });
        if let Some(v) = found.and_then(|i| verts.get_mut(i as usize).map(|v| (i, v))) {
            v.1.lod_mask |= 1 << lod;
            return (v.0, false);
        }
    }
    let i = verts.len() as u32;
    index.push(key, i);
    verts.push(RawVertex {
        pos: c.pos,
        normal: c.normal,
        uv: c.uv,
        weights: c.weights,
        tangent: [0.0, 0.0, 0.0, 1.0],
        lod_mask: 1 << lod,
    });
    (i, true)
}

/// Studiomdl's tangents (7.6) of `verts`, summed over `tris` only, in its raw form: the
/// direction orthonormalized against the normal (zero for degenerate uvs) and the handedness.
fn tangent_frames(verts: &[RawVertex], tris: &[[u32; 3]]) -> Vec<[f32; 4]> {
    let n = verts.len();
    let mut s_sum = vec![[0.0f32; 3]; n];
    let mut t_sum = vec![[0.0f32; 3]; n];
    for t in tris {
        let (Some(a), Some(b), Some(c)) = (
            verts.get(t[0] as usize),
            verts.get(t[1] as usize),
            verts.get(t[2] as usize),
        ) else {
            continue;
        };
        let p = [a.pos, b.pos, c.pos];
        let uv = [a.uv, b.uv, c.uv];
        let mut s = [0.0f32; 3];
        let mut tt = [0.0f32; 3];
        for k in 0..3 {
            let e1 = [p[1][k] - p[0][k], uv[1][0] - uv[0][0], uv[1][1] - uv[0][1]];
            let e2 = [p[2][k] - p[0][k], uv[2][0] - uv[0][0], uv[2][1] - uv[0][1]];
            let c = math::cross(e1, e2);
            if c[0].abs() > 1e-12 {
                s[k] = -c[1] / c[0];
                tt[k] = -c[2] / c[0];
            }
        }
        let s = math::normalize(s);
        let tt = math::normalize(tt);
        for &i in t {
            let i = i as usize;
            s_sum[i] = math::add(s_sum[i], s);
            t_sum[i] = math::add(t_sum[i], tt);
        }
    }
    verts
        .iter()
        .zip(s_sum.iter().zip(&t_sum))
        .map(|(v, (&s, &t))| {
            let nrm = v.normal;
            let left = math::dot(math::cross(s, t), nrm) < 0.0;
            let sp = math::normalize(math::sub(s, math::scale(nrm, math::dot(nrm, s))));
            [sp[0], sp[1], sp[2], if left { -1.0 } else { 1.0 }]
        })
        .collect()
}

/// Grid cell of a position for the LOD vertex searches: cells twice as wide as the largest
/// distance searched ([`LOD_POS_EPS`]), so the 27 cells around a position hold every candidate.
fn cell(p: [f32; 3]) -> [i64; 3] {
    let per_unit = 1.0 / (2.0 * LOD_POS_EPS as f64);
    p.map(|x| (x as f64 * per_unit).floor() as i64)
}

/// How far apart a LOD-n vertex and the vertex it reuses may be (`source-geometry.md` 7.4; the
/// procedure is the LOD unification of Valve's 2006 studiomdl, `UnifyLODs.cpp` in the 2006 SDK).
/// Position 0.05, uv 0.1 and link error 0.5 are that code's values. Its normal and tangent
/// limits (60°) do not reproduce Valve's later v48 builds in the corpus; 10° does, measured: every
/// mesh and LOD count of the four multi-LOD Valve builds is reproduced with 10°, and none with a
/// normal angle of 5° or 20° or a tangent angle of 5° or 15° (nor with a position tolerance of
/// 0.01 or 0.1). The uv and link limits are not pinned by the corpus (its LOD models are rigid,
/// and uv limits of 0.01 and 0.1 give the same counts); tangents must have the same handedness.
const LOD_POS_EPS: f32 = 0.05;
const LOD_UV_EPS: f32 = 0.1;
const LOD_ANGLE_DEG: f32 = 10.0;
const LOD_WEIGHT_EPS: f32 = 0.5;

/// The errors of a candidate vertex, compared in this order (smallest wins): position, uv,
/// links, normal, tangent.
type LodErrors = [f32; 5];

/// `a` is at least as good as `b` (later candidates win ties, as in studiomdl).
fn no_worse(a: &LodErrors, b: &LodErrors) -> bool {
    for (x, y) in a.iter().zip(b) {
        if x < y {
            return true;
        }
        if x > y {
            return false;
        }
    }
    true
}

fn lod_cos() -> f32 {
    (LOD_ANGLE_DEG * (std::f32::consts::PI / 180.0)).cos()
}

/// Squared distance, if within [`LOD_POS_EPS`].
fn pos_error(a: [f32; 3], b: [f32; 3]) -> Option<f32> {
    let d = math::sub(a, b);
    let e = math::dot(d, d);
    (e <= LOD_POS_EPS * LOD_POS_EPS).then_some(e)
}

/// Squared uv distance, if within [`LOD_UV_EPS`].
fn uv_error(a: [f32; 2], b: [f32; 2]) -> Option<f32> {
    let (du, dv) = ((b[0] - a[0]).abs(), (b[1] - a[1]).abs());
    let e = du * du + dv * dv;
    (e <= LOD_UV_EPS * LOD_UV_EPS).then_some(e)
}

/// 1 − cos of the angle between two directions, if within [`LOD_ANGLE_DEG`] (a zero vector
/// is never close to anything).
fn angle_error(a: [f32; 3], b: [f32; 3]) -> Option<f32> {
    let d = math::dot(math::normalize(a), math::normalize(b));
    (d >= lod_cos()).then_some(1.0 - d)
}

/// Tangents: the same handedness and directions within [`LOD_ANGLE_DEG`].
fn tangent_error(a: [f32; 4], b: [f32; 4]) -> Option<f32> {
    if a[3] != b[3] {
        return None;
    }
    angle_error([a[0], a[1], a[2]], [b[0], b[1], b[2]])
}

/// How different two sets of links are: squared weight differences of the shared bones plus
/// the squared weights of the others, over √(number of links); no shared bone is no match.
fn weight_error(a: &[(BoneId, f32)], b: &[(BoneId, f32)]) -> Option<f32> {
    let mut shared = 0usize;
    let mut e = 0.0f32;
    for x in a {
        match b.iter().find(|y| y.0 == x.0) {
            Some(y) => {
                shared += 1;
                let d = (x.1 - y.1).abs();
                e += d * d;
            }
            None => e += x.1 * x.1,
        }
    }
    for y in b {
        if !a.iter().any(|x| x.0 == y.0) {
            e += y.1 * y.1;
        }
    }
    if shared == 0 {
        return None;
    }
    e /= ((a.len() + b.len()) as f32).sqrt();
    (e <= LOD_WEIGHT_EPS).then_some(e)
}

/// What the LODs of one body-part model share: its LOD-0 vertices (every material's) and each
/// LOD's bone replacements (IR bone → IR bone).
struct LodContext<'a> {
    root: &'a RootVertices,
    bone_maps: &'a [Vec<BoneId>],
}

/// A model's LOD-0 vertices on a grid, for [`RootVertices::nearest`].
struct RootVertices {
    verts: Vec<RawVertex>,
    cells: FastMap<[i64; 3], Vec<u32>>,
    size: f32,
    /// The lowest and highest cell of any vertex, per axis.
    span: ([i64; 3], [i64; 3]),
}

impl RootVertices {
    fn new(verts: Vec<RawVertex>) -> Self {
        // about two vertices per cell of the box around them
        let mut lo = [f32::MAX; 3];
        let mut hi = [f32::MIN; 3];
        for v in &verts {
            for k in 0..3 {
                lo[k] = lo[k].min(v.pos[k]);
                hi[k] = hi[k].max(v.pos[k]);
            }
        }
        let extent = (0..3)
            .map(|k| (hi[k] - lo[k]).max(0.0))
            .fold(0.0f32, f32::max);
        let per_side = (verts.len() as f32 / 2.0).cbrt().max(1.0);
        let size = if extent.is_finite() && extent > 0.0 {
            (extent / per_side).max(1e-3)
        } else {
            1.0
        };
        let mut cells: FastMap<[i64; 3], Vec<u32>> = FastMap::default();
        let mut span = ([i64::MAX; 3], [i64::MIN; 3]);
        for (i, v) in verts.iter().enumerate() {
            let c = Self::cell_of(v.pos, size);
            for (k, x) in c.iter().enumerate() {
                span.0[k] = span.0[k].min(*x);
                span.1[k] = span.1[k].max(*x);
            }
            cells.entry(c).or_default().push(i as u32);
        }
        RootVertices {
            verts,
            cells,
            size,
            span,
        }
    }

    /// How many shells of cells are searched before every vertex is compared.
    const SHELLS: u64 = 8;

    fn cell_of(p: [f32; 3], size: f32) -> [i64; 3] {
        p.map(|x| (f64::from(x) / f64::from(size)).floor() as i64)
    }

    /// The LOD-0 vertex nearest to `v` (2006 SDK `FindBoneWeightWithinModel`, tangents and
    /// links ignored): smallest squared distance, then uv error, then normal error (1 − cos);
    /// of equal ones the later vertex, as Valve's linear search keeps the last. Searched in
    /// growing shells of cells until no closer vertex can lie further out; a vertex more than
    /// [`Self::SHELLS`] cells from every other is compared with all of them.
    fn nearest(&self, v: &RawVertex) -> Option<&RawVertex> {
        if self.verts.is_empty() {
            return None;
        }
        let c = Self::cell_of(v.pos, self.size);
        let (lo, hi) = self.span;
        let max_r = (0..3)
            .map(|k| c[k].abs_diff(lo[k]).max(hi[k].abs_diff(c[k])))
            .max()
            .unwrap_or(0);
        let n = math::normalize(v.normal);
        let mut best: Option<(u32, [f32; 3])> = None;
        let consider = |i: u32, best: &mut Option<(u32, [f32; 3])>| {
            let Some(w) = self.verts.get(i as usize) else {
                return;
            };
            let d = math::sub(v.pos, w.pos);
            let pe = math::dot(d, d);
            // the later errors only matter on a tie of the earlier ones
            if best.as_ref().is_some_and(|b| pe > b.1[0]) {
                return;
            }
            let (du, dv) = ((w.uv[0] - v.uv[0]).abs(), (w.uv[1] - v.uv[1]).abs());
            let ue = du * du + dv * dv;
            if best.as_ref().is_some_and(|b| pe == b.1[0] && ue > b.1[1]) {
                return;
            }
            let e = [pe, ue, 1.0 - math::dot(n, math::normalize(w.normal))];
            let better = best.as_ref().is_none_or(|b| {
                for (x, y) in e.iter().zip(&b.1) {
                    if x != y {
                        return x < y;
                    }
                }
                i > b.0
            });
            if better {
                *best = Some((i, e));
            }
        };
        if max_r > Self::SHELLS {
            for i in 0..self.verts.len() as u32 {
                consider(i, &mut best);
            }
            return best.and_then(|b| self.verts.get(b.0 as usize));
        }
        let max_r = max_r as i64;
        for r in 0..=max_r {
            for dx in -r..=r {
                for dy in -r..=r {
                    for dz in -r..=r {
                        if dx.abs().max(dy.abs()).max(dz.abs()) != r {
                            continue;
                        }
                        let key = [
                            c[0].saturating_add(dx),
                            c[1].saturating_add(dy),
                            c[2].saturating_add(dz),
                        ];
                        for &i in self.cells.get(&key).into_iter().flatten() {
                            consider(i, &mut best);
                        }
                    }
                }
            }
            // every vertex not yet searched is more than r cells away
            let reach = r as f32 * self.size;
            if best.as_ref().is_some_and(|b| b.1[0] < reach * reach) {
                break;
            }
        }
        best.and_then(|b| self.verts.get(b.0 as usize))
    }
}

/// A LOD's links through its bone replacements (2006 SDK `RemapBoneWeights`,
/// `CollapseBoneWeights`, `SortBoneWeightByWeight`): links that now name one bone are one link
/// with the sum of their weights, ordered by bone, then largest weight first (a stable sort).
fn remap_links(l: &Links, map: &[BoneId]) -> Links {
    if l.iter()
        .all(|x| map.get(x.0.index()).is_none_or(|&m| m == x.0))
    {
        return *l;
    }
    let mut v: Vec<(BoneId, f32)> = l
        .iter()
        .map(|&(b, w)| (map.get(b.index()).copied().unwrap_or(b), w))
        .collect();
    v.sort_by_key(|x| x.0 .0);
    let mut merged: Vec<(BoneId, f32)> = Vec::with_capacity(v.len());
    for (b, w) in v {
        match merged.last_mut() {
            Some(last) if last.0 == b => last.1 += w,
            _ => merged.push((b, w)),
        }
    }
    merged.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    let mut out = NO_LINKS;
    for (b, w) in merged {
        out.push(b, w);
    }
    out
}

/// One LOD's bone replacements as a map over the IR bones (2006 SDK `BuildBoneLODMapping`):
/// `replacebone from to`, and `bonetreecollapse bone` as the replacement of every bone below
/// it by it (`ConvertBoneTreeCollapsesToReplaceBones`), chains followed to their end
/// (`FixupReplacedBonesForLOD`). As in Valve's compiler, a replacement naming a bone that is
/// not in the model's bone table is skipped.
fn lod_bone_map(
    model: &Model,
    lod: &crate::ir::model::Lod,
    ir_to_out: &[Option<usize>],
) -> Vec<BoneId> {
    let n = model.bones.len();
    let in_table = |b: BoneId| ir_to_out.get(b.index()).copied().flatten().is_some();
    let mut reps: Vec<(BoneId, BoneId)> = lod.replace_bones.iter().map(|r| (r.0, r.1)).collect();
    for (top, _) in &lod.bone_tree_collapse {
        // every bone whose chain of parents reaches `top`, in bone order
        for b in 0..n {
            let mut p = model.bones[b].parent;
            let mut steps = 0;
            while let Some(x) = p {
                if x == *top {
                    reps.push((BoneId(b as u32), *top));
                    break;
                }
                steps += 1;
                if steps > n {
                    break;
                }
                p = model.bones.get(x.index()).and_then(|m| m.parent);
            }
        }
    }
    // a → b, b → c becomes a → c (bounded: a cycle of replacements stops)
    for _ in 0..reps.len() {
        let mut changed = false;
        for i in 0..reps.len() {
            for j in 0..reps.len() {
                if i != j && reps[i].0 == reps[j].1 && reps[j].1 != reps[i].1 {
                    reps[j].1 = reps[i].1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut map: Vec<BoneId> = (0..n).map(|b| BoneId(b as u32)).collect();
    for (from, to) in reps {
        if in_table(from) && in_table(to) {
            if let Some(slot) = map.get_mut(from.index()) {
                *slot = to;
            }
        }
    }
    map
}

/// One material's vertices and triangles for every LOD of one body-part model. LOD 0 is
/// welded as its corners arrive; the corners of every other LOD are kept until
/// [`MeshBuild::finish`], which unifies them with the pool LOD by LOD (studiomdl's order: the
/// tangents of LOD 0 must be known first).
struct MeshBuild {
    verts: Vec<RawVertex>,
    index: Chains<Key>,
    /// LOD-0 vertices by grid cell, made only when the mesh has LOD triangles to unify.
    lod0_grid: Chains<[i64; 3]>,
    /// Vertices LODs ≥ 1 added, by grid cell.
    lod_grid: Chains<[i64; 3]>,
    /// Every vertex by its exact contents (the first one when several are equal).
    exact: FastMap<ExactKey, u32>,
    tris: Vec<Vec<[u32; 3]>>,
    seen: Vec<FastSet<[u32; 3]>>,
    /// The triangles of each LOD ≥ 1 as they came (unused for LOD 0).
    pending: Vec<Vec<[CornerIn; 3]>>,
}

impl MeshBuild {
    /// `expected`: about how many vertices and triangles the mesh will have, to size its maps
    /// once instead of growing them.
    fn new(num_lods: usize, expected: usize) -> Self {
        let mut seen: Vec<FastSet<[u32; 3]>> = vec![Default::default(); num_lods];
        if let Some(s) = seen.first_mut() {
            s.reserve(expected);
        }
        MeshBuild {
            verts: Vec::with_capacity(expected),
            index: Chains::with_capacity(expected),
            lod0_grid: Chains::default(),
            lod_grid: Chains::default(),
            exact: FastMap::default(),
            tris: vec![Vec::new(); num_lods],
            seen,
            pending: (0..num_lods).map(|_| Vec::new()).collect(),
        }
    }

    /// Lets go of what only LOD 0's welding reads (its weld keys and the triangles it saw),
    /// once every triangle of the model is in.
    fn welded(&mut self) {
        self.index = Chains::default();
        if let Some(s) = self.seen.first_mut() {
            *s = FastSet::default();
        }
    }

    /// Adds one triangle of the given LOD (corners in the file's final winding).
    fn triangle(&mut self, lod: usize, corners: &[CornerIn; 3]) {
        if lod > 0 {
            if let Some(p) = self.pending.get_mut(lod) {
                p.push(*corners);
            }
            return;
        }
        let ids = corners
            .each_ref()
            .map(|c| weld(&mut self.verts, &mut self.index, c, 0).0);
        self.add_tri(0, ids);
    }

    fn add_tri(&mut self, lod: usize, ids: [u32; 3]) {
        if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
            return;
        }
        if self.seen[lod].insert(ids) {
            self.tris[lod].push(ids);
        }
    }

    /// Candidates near `pos` among the vertices of `grid`, in creation order.
    fn near(grid: &Chains<[i64; 3]>, pos: [f32; 3]) -> Vec<u32> {
        let c = cell(pos);
        let mut out = Vec::new();
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    out.extend(grid.get(&[c[0] + dx, c[1] + dy, c[2] + dz]));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Studiomdl's first search for a LOD-n vertex: the closest LOD-0 vertex of the mesh by
    /// position, uv and normal, whatever its links and tangent.
    fn lod0_match(&self, v: &RawVertex) -> Option<u32> {
        let mut best: Option<(u32, LodErrors)> = None;
        for i in Self::near(&self.lod0_grid, v.pos) {
            let Some(w) = self.verts.get(i as usize) else {
                continue;
            };
            let (Some(p), Some(u), Some(n)) = (
                pos_error(v.pos, w.pos),
                uv_error(v.uv, w.uv),
                angle_error(v.normal, w.normal),
            ) else {
                continue;
            };
            let e = [p, u, 0.0, n, 0.0];
            if best.as_ref().is_none_or(|b| no_worse(&e, &b.1)) {
                best = Some((i, e));
            }
        }
        best.map(|b| b.0)
    }

    /// The second search, when no LOD-0 vertex is close: the closest vertex an earlier LOD
    /// added (below `limit`), now also by links and tangent.
    fn earlier_lod_match(&self, v: &RawVertex, limit: u32) -> Option<u32> {
        let mut best: Option<(u32, LodErrors)> = None;
        for i in Self::near(&self.lod_grid, v.pos) {
            if i >= limit {
                break;
            }
            let Some(w) = self.verts.get(i as usize) else {
                continue;
            };
            let (Some(p), Some(u), Some(b), Some(n), Some(t)) = (
                pos_error(v.pos, w.pos),
                uv_error(v.uv, w.uv),
                weight_error(&v.weights, &w.weights),
                angle_error(v.normal, w.normal),
                tangent_error(v.tangent, w.tangent),
            ) else {
                continue;
            };
            let e = [p, u, b, n, t];
            if best.as_ref().is_none_or(|b| no_worse(&e, &b.1)) {
                best = Some((i, e));
            }
        }
        best.map(|b| b.0)
    }

    /// Unifies the triangles of one LOD ≥ 1 with the pool (`source-geometry.md` 7.4). The LOD's
    /// corners are first welded among themselves and get tangents from the LOD's own
    /// triangles. Each such vertex then becomes the closest LOD-0 vertex of the mesh within the
    /// tolerances (all of its data, whatever its links and tangent). Otherwise it takes the links
    /// of the model's LOD-0 vertex nearest to it (2006 SDK `CalculateBoneWeightFromRootLod`,
    /// `FindBoneWeightWithinModel`: a LOD's own links are not trusted), and becomes the closest
    /// vertex an earlier LOD added whose links and tangent are close too, or else stays itself.
    /// Its links then go through the LOD's bone replacements (`RemapBoneWeights`, links to one
    /// bone merged, largest first). The result is shared with a vertex of the mesh equal to it
    /// in every bit, or added.
    fn unify_lod(&mut self, lod: usize, lods: &LodContext) {
        let tris_in = self
            .pending
            .get_mut(lod)
            .map(std::mem::take)
            .unwrap_or_default();
        if tris_in.is_empty() {
            return;
        }
        let mut src: Vec<RawVertex> = Vec::new();
        let mut src_index: Chains<Key> = Chains::default();
        let src_tris: Vec<[u32; 3]> = tris_in
            .iter()
            .map(|t| {
                t.each_ref()
                    .map(|c| weld(&mut src, &mut src_index, c, lod).0)
            })
            .collect();
        let mut seen = FastSet::default();
        let unique: Vec<[u32; 3]> = src_tris
            .iter()
            .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2] && seen.insert(**t))
            .copied()
            .collect();
        let frames = tangent_frames(&src, &unique);
        for (v, t) in src.iter_mut().zip(frames) {
            v.tangent = t;
        }
        let limit = self.verts.len() as u32;
        let mut map = Vec::with_capacity(src.len());
        let bone_map = lods.bone_maps.get(lod);
        for mut sv in src {
            let found = match self.lod0_match(&sv) {
                Some(i) => Some(i),
                None => {
                    if let Some(w) = lods.root.nearest(&sv) {
                        sv.weights = w.weights;
                    }
                    self.earlier_lod_match(&sv, limit)
                }
            };
            let mut v = match found.and_then(|i| self.verts.get(i as usize)) {
                Some(w) => w.clone(),
                None => sv,
            };
            if let Some(map) = bone_map {
                v.weights = remap_links(&v.weights, map);
            }
            v.lod_mask = 1 << lod;
            let key = ExactKey::of(&v);
            let id = match self.exact.get(&key) {
                Some(&i) => {
                    if let Some(w) = self.verts.get_mut(i as usize) {
                        w.lod_mask |= 1 << lod;
                    }
                    i
                }
                None => {
                    let i = self.verts.len() as u32;
                    self.exact.insert(key, i);
                    self.lod_grid.push(cell(v.pos), i);
                    self.verts.push(v);
                    i
                }
            };
            map.push(id);
        }
        for t in src_tris {
            let ids = t.map(|i| map.get(i as usize).copied().unwrap_or(0));
            self.add_tri(lod, ids);
        }
    }

    fn finish(
        mut self,
        tex: usize,
        num_lods: usize,
        static_prop: bool,
        out_bone: &dyn Fn(BoneId) -> usize,
        lods: &LodContext,
    ) -> PMesh {
        // tangents of LOD 0 from its triangles; every other LOD's come with its vertices
        let frames = tangent_frames(&self.verts, &self.tris[0]);
        for (v, t) in self.verts.iter_mut().zip(frames) {
            v.tangent = t;
        }
        if self.pending.iter().any(|p| !p.is_empty()) {
            // every vertex so far is a LOD-0 one (LODs ≥ 1 are welded below)
            for (i, v) in self.verts.iter().enumerate() {
                self.exact.entry(ExactKey::of(v)).or_insert(i as u32);
                self.lod0_grid.push(cell(v.pos), i as u32);
            }
            for lod in 1..self.pending.len() {
                self.unify_lod(lod, lods);
            }
        }
        let n = self.verts.len();
        let mut order: Vec<usize> = (0..n).collect();
        let group = |v: &RawVertex| 31 - v.lod_mask.leading_zeros() as usize;
        order.sort_by_key(|&i| std::cmp::Reverse(group(&self.verts[i])));
        let mut new_of = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_of[old] = new as u32;
        }
        let mut vertices = Vec::with_capacity(n);
        for &i in &order {
            let v = &self.verts[i];
            let nrm = v.normal;
            let mut sp = [v.tangent[0], v.tangent[1], v.tangent[2]];
            let w = v.tangent[3];
            if math::dot(sp, sp) < 0.5 && math::dot(nrm, nrm) > 0.0 {
                // degenerate uv: any unit vector perpendicular to the normal
                let a = if nrm[0].abs() < 0.9 {
                    [1.0, 0.0, 0.0]
                } else {
                    [0.0, 1.0, 0.0]
                };
                sp = math::normalize(math::cross(math::cross(nrm, a), nrm));
                if math::dot(sp, a) < 0.0 {
                    sp = math::scale(sp, -1.0);
                }
            }
            let mut weights = BoneWeights::default();
            if static_prop {
                weights.push(0, 1.0);
            } else {
                for &(b, wt) in v.weights.iter() {
                    let ob = out_bone(b) as u8;
                    if let Some(e) = weights.iter_mut().find(|e| e.0 == ob) {
                        e.1 += wt;
                    } else {
                        weights.push(ob, wt);
                    }
                }
            }
            vertices.push(PVertex {
                pos: v.pos,
                normal: nrm,
                uv: v.uv,
                weights,
                tangent: [sp[0], sp[1], sp[2], w],
                group: group(v),
            });
        }
        let lod_tris: Vec<Vec<[u32; 3]>> = self
            .tris
            .iter()
            .map(|ts| ts.iter().map(|t| t.map(|i| new_of[i as usize])).collect())
            .collect();
        let mut num_lod_vertexes = [0i32; 8];
        for (l, slot) in num_lod_vertexes.iter_mut().enumerate() {
            let l = l.min(num_lods - 1);
            *slot = vertices.iter().filter(|v| v.group >= l).count() as i32;
        }
        PMesh {
            material: tex,
            vertices,
            lod_tris,
            num_lod_vertexes,
            material_type: 0,
            material_param: 0,
            flexes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Weight;

    #[test]
    fn balance_keeps_three_largest_and_rescales() {
        let ws: Vec<Weight> = [(0, 0.4), (1, 0.3), (2, 0.2), (3, 0.1)]
            .iter()
            .map(|&(b, w)| Weight {
                bone: BoneId(b),
                weight: w,
            })
            .collect();
        let (v, dropped) = balance(&ws);
        assert_eq!(v.len(), 3);
        assert_eq!(dropped, 0.1);
        let s: f32 = v.iter().map(|e| e.1).sum();
        assert!((s - 1.0).abs() < 1e-6);
        assert_eq!(v[0].0, BoneId(0));
    }

    fn corner(pos: [f32; 3], uv: [f32; 2]) -> CornerIn {
        CornerIn {
            pos,
            normal: [0.0, 0.0, 1.0],
            uv,
            weights: one_link(BoneId(0)),
        }
    }

    /// A triangle with its first corner at `at` whose uv u axis runs along `angle` (degrees,
    /// in the xy plane): the tangent of every corner points that way.
    fn turned(at: [f32; 3], angle: f32) -> [CornerIn; 3] {
        let (s, c) = angle.to_radians().sin_cos();
        let p = |x: f32, y: f32| {
            [
                at[0] + 10.0 * (x * c - y * s),
                at[1] + 10.0 * (x * s + y * c),
                at[2],
            ]
        };
        [
            corner(at, [0.0, 0.0]),
            corner(p(1.0, 0.0), [1.0, 0.0]),
            corner(p(0.0, 1.0), [0.0, 1.0]),
        ]
    }

    fn build(tris: Vec<(usize, [CornerIn; 3])>, num_lods: usize) -> PMesh {
        let mut mb = MeshBuild::new(num_lods, 0);
        for (lod, t) in tris {
            mb.triangle(lod, &t);
        }
        let root = RootVertices::new(mb.verts.clone());
        let maps: Vec<Vec<BoneId>> = vec![(0..4).map(BoneId).collect(); num_lods];
        let lods = LodContext {
            root: &root,
            bone_maps: &maps,
        };
        mb.finish(0, num_lods, false, &|b: BoneId| b.index(), &lods)
    }

    /// The nearest LOD-0 vertex: by shells of cells near the grid, by every vertex far from
    /// it (a stray vertex must not make the search walk millions of cells); of equal ones the
    /// later, as Valve's linear search.
    #[test]
    fn nearest_root_vertex_by_shells_or_by_all() {
        let mk = |x: f32, b: u32| RawVertex {
            pos: [x, 0.0, 0.0],
            normal: [0.0, 0.0, 1.0],
            uv: [0.0; 2],
            weights: one_link(BoneId(b)),
            tangent: [0.0; 4],
            lod_mask: 1,
        };
        let root = RootVertices::new((0..100).map(|i| mk(i as f32, i)).collect());
        let q = |x: f32| root.nearest(&mk(x, 999)).map(|v| v.weights[0].0 .0);
        assert_eq!(q(41.2), Some(41));
        assert_eq!(q(41.7), Some(42));
        assert_eq!(q(-1e4), Some(0));
        assert_eq!(q(1e30), Some(99));
        let twins = RootVertices::new(vec![mk(5.0, 1), mk(5.0, 2), mk(9.0, 3)]);
        assert_eq!(
            twins.nearest(&mk(5.1, 0)).map(|v| v.weights[0].0 .0),
            Some(2)
        );
        assert!(RootVertices::new(Vec::new()).nearest(&mk(0.0, 0)).is_none());
    }

    /// A LOD-2 corner equal to a vertex LOD 1 added (position, uv, normal, links) is that
    /// vertex only when their tangents, each from its own LOD's triangles, are within 10°.
    #[test]
    fn a_lod_corner_shares_an_earlier_lod_vertex_only_with_a_close_tangent() {
        for (angle, shared) in [(0.0, true), (5.0, true), (30.0, false), (180.0, false)] {
            let m = build(
                vec![
                    (0, turned([100.0, 0.0, 0.0], 0.0)),
                    (1, turned([0.0; 3], 0.0)),
                    (2, turned([0.0; 3], angle)),
                ],
                3,
            );
            // LOD 0's 3, LOD 1's 3, LOD 2's 2 or 3 (the origin is shared or not)
            let lod2_new = if angle == 0.0 {
                0
            } else if shared {
                2
            } else {
                3
            };
            assert_eq!(m.vertices.len(), 6 + lod2_new, "{angle}°");
            let at_origin = m.vertices.iter().filter(|v| v.pos == [0.0; 3]).count();
            assert_eq!(at_origin, if shared { 1 } else { 2 }, "{angle}°");
            let groups: Vec<i32> = m.num_lod_vertexes[..3].to_vec();
            let expected = match (angle == 0.0, shared) {
                (true, _) => vec![6, 3, 3],
                (false, true) => vec![8, 5, 3],
                (false, false) => vec![9, 6, 3],
            };
            assert_eq!(groups, expected, "{angle}°");
        }
    }

    /// A LOD-1 corner close to a LOD-0 vertex (position within 0.05, uv within 0.1, normal
    /// within 10°) becomes that vertex whatever its tangent; farther away it stays itself.
    #[test]
    fn a_lod_corner_becomes_a_close_lod0_vertex_whatever_its_tangent() {
        for (offset, tilt, shared) in [
            (0.03, 0.0, true),
            (0.0, 8.0, true),
            (0.07, 0.0, false),
            (0.0, 12.0, false),
        ] {
            let mut lod1 = turned([offset, 0.0, 0.0], 90.0);
            let t: f32 = f32::to_radians(tilt);
            lod1[0].normal = [t.sin(), 0.0, t.cos()];
            let m = build(vec![(0, turned([0.0; 3], 0.0)), (1, lod1)], 2);
            assert_eq!(
                m.vertices.len(),
                if shared { 5 } else { 6 },
                "offset {offset}, tilt {tilt}°"
            );
            // LOD 0's vertex at the origin keeps its data (its tangent runs along x, the LOD-1
            // triangle's along y) and is drawn by LOD 1 only when shared
            let lod0 = m
                .vertices
                .iter()
                .filter(|v| v.pos == [0.0; 3] && v.normal == [0.0, 0.0, 1.0])
                .collect::<Vec<_>>();
            assert_eq!(lod0.len(), 1, "offset {offset}, tilt {tilt}°");
            assert!(lod0[0].tangent[0] > 0.99);
            assert_eq!(lod0[0].group, usize::from(shared));
            assert_eq!(m.num_lod_vertexes[1], 3, "offset {offset}, tilt {tilt}°");
        }
    }

    #[test]
    fn texture_names_lose_everything_after_the_last_dot() {
        assert_eq!(texture_name("combine_lock01.001"), "combine_lock01");
        assert_eq!(texture_name("a.bmp"), "a");
        assert_eq!(texture_name("dir.x/tex"), "dir.x/tex");
    }
}
