//! The Source back end, geometry side: MDL v48 + VVD v4 + VTX v7 (`.dx90`, `.dx80`, `.sw`)
//! sharing one checksum (`../shared/spec/source-geometry.md`).
//!
//! Stages: [`prepare`] turns the IR [`Model`](crate::ir::model::Model) into the contract type
//! [`model::SourceModel`] (bone table, textures, welded meshes per LOD, flags, hit boxes, the
//! animation side from [`anim`] and [`animcodec`], and the VTX strip groups [`strips`] cuts
//! within the bone limits, ordered by meshopt); [`write`] only lays it out; [`read`] reads the
//! files back for `mdlc inspect` (`crate::inspect`) and the tests.

pub mod anim;
pub mod animcodec;
pub mod dump;
pub mod face;
pub mod face_read;
pub mod hull;
pub mod ikrule;
pub mod iksolve;
pub mod math;
pub mod model;
pub mod phy;
pub mod phy_write;
pub mod physics;
pub mod pose;
pub mod prepare;
pub mod read;
mod realign;
pub mod records;
pub mod strips;
pub mod write;

use crate::diag::Diagnostic;

/// Compiles a Source-target model into its files: (file name relative to the output folder,
/// bytes), named `<modelname without .mdl>.mdl`, `.vvd`, `.dx90.vtx`, `.dx80.vtx`, `.sw.vtx`, and
/// `.ani` with `$animblocksize`, `.phy` with a collision model.
pub fn compile(
    model: &crate::ir::model::Model,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<(String, Vec<u8>)>> {
    let plan: model::SourceModel = prepare::prepare(model, diags)?;
    write_files(plan, &Cited::of(model), diags)
}

/// [`compile`], letting the model go once it is prepared: its meshes are the largest thing a
/// big model holds, and the files are made from the prepared model alone.
pub fn compile_owned(
    model: crate::ir::model::Model,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<(String, Vec<u8>)>> {
    let plan: model::SourceModel = prepare::prepare(&model, diags)?;
    let cited = Cited::of(&model);
    drop(model);
    write_files(plan, &cited, diags)
}

/// What of the model the writing's diagnostics point at.
struct Cited {
    anim_block_size: Option<crate::diag::FileSpan>,
    collision: Option<crate::diag::FileSpan>,
}

impl Cited {
    fn of(model: &crate::ir::model::Model) -> Cited {
        Cited {
            anim_block_size: model.anim_block_size.as_ref().map(|n| n.span.span()),
            collision: model.collision.as_ref().map(|c| c.span),
        }
    }
}

/// A model with at least this many vertices has its VVD and VTX files made on several threads.
const PARALLEL_FILE_VERTS: usize = 50_000;

/// The files of a prepared model.
fn write_files(
    mut plan: model::SourceModel,
    cited: &Cited,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<(String, Vec<u8>)>> {
    let (mut mdl, mut ani) = write::write_mdl(&plan);
    // The engine keeps at most 256 anim blocks, the MDL itself included (`MAXSTUDIOANIMBLOCKS`);
    // checked before the other files are made. The size is the compiler's packing target (the
    // MDL records each block's range), and Valve's later compilers build projects that ask for
    // a size whose blocks would not fit in mdlc's packing (Garry's Mod's player animations,
    // `$animblocksize 32`): the smallest size that fits is taken, with a warning.
    if let (Some(a), Some(span)) = (&ani, cited.anim_block_size) {
        if a.blocks.len() > 256 {
            let need = a.blocks.len() - 1;
            let asked = plan.anim.blocks.as_ref().map_or(0, |b| b.size / 1024);
            match a.smallest_kb_within(255) {
                Some(kb) => {
                    if let Some(b) = plan.anim.blocks.as_mut() {
                        b.size = kb * 1024;
                    }
                    (mdl, ani) = write::write_mdl(&plan);
                    let made = ani.as_ref().map_or(0, |a| a.blocks.len().saturating_sub(1));
                    diags.push(
                        Diagnostic::new(
                            crate::diag::Code::SourceAnimBlocksGrown,
                            format!(
                                "the animations need {need} blocks of {asked} KB, and Source reads at most 255: mdlc writes blocks of {kb} KB ({made} blocks)"
                            ),
                            span,
                            "this block size",
                        )
                        .with_note("the MDL records where each block starts and ends, so a larger block costs only the memory it takes while it loads")
                        .with_note(format!("help: write `$animblocksize {kb}` to ask for this size")),
                    );
                }
                None => {
                    diags.push(
                        Diagnostic::new(
                            crate::diag::Code::SourceAnimLimit,
                            format!(
                                "the animations need {need} blocks of this size; Source reads at most 255"
                            ),
                            span,
                            "this block size",
                        )
                        .with_note("no block size under 1024 KB fits them in 255 blocks"),
                    );
                    return None;
                }
            }
        }
    }
    let check = write::checksum(&mdl);
    let len = mdl.len() as i32;
    if let Some(f) = mdl.get_mut(8..12) {
        f.copy_from_slice(&check.to_le_bytes());
    }
    if let Some(f) = mdl.get_mut(76..80) {
        f.copy_from_slice(&len.to_le_bytes());
    }
    let stem = write::model_stem(&plan.name);
    // the VVD and the three VTX files are independent of each other: a large model's are
    // made side by side, the VTX files first, each letting its variant's strips go once it is
    // made (so that the strips and the VVD are not all held at once)
    let strips: Vec<std::sync::Mutex<Option<model::VtxStrips>>> = prepare::strips(&plan)
        .into_iter()
        .map(|s| std::sync::Mutex::new(Some(s)))
        .collect();
    let jobs: Vec<Option<strips::Variant>> = strips::Variant::ALL
        .map(Some)
        .into_iter()
        .chain(std::iter::once(None))
        .collect();
    let vertices: usize = plan
        .body_parts
        .iter()
        .flat_map(|b| &b.models)
        .flat_map(|m| &m.meshes)
        .map(|m| m.vertices.len())
        .sum();
    let threads = if vertices >= PARALLEL_FILE_VERTS {
        crate::threads::spare_threads(jobs.len())
    } else {
        1
    };
    let mut made = crate::threads::map_parallel(&jobs, threads, |job| match job {
        None => (format!("{stem}.vvd"), write::write_vvd(&plan, check)),
        Some(v) => {
            let mine = strips.iter().find_map(|m| {
                let mut slot = m.lock().ok()?;
                match slot.as_ref() {
                    Some(s) if s.variant == *v => slot.take(),
                    _ => None,
                }
            });
            (
                format!("{stem}.{}", v.extension()),
                write::write_vtx(&plan, mine.as_ref(), *v, check),
            )
        }
    });
    // the files in their usual order: the VVD before the VTX files
    made.rotate_right(1);
    let mut out = vec![(format!("{stem}.mdl"), mdl)];
    out.extend(made);
    if let Some(ani) = ani {
        out.push((format!("{stem}.ani"), ani.bytes));
    }
    if let Some(p) = &plan.physics {
        match phy_write::write_phy(p, check) {
            Ok(b) => out.push((format!("{stem}.phy"), b)),
            Err(e) => {
                if let Some(span) = cited.collision {
                    diags.push(
                        Diagnostic::new(
                            crate::diag::Code::PhysicsLimit,
                            format!("the collision model cannot be written: {e}"),
                            span,
                            "this collision model",
                        )
                        .with_note("simplify the collision mesh"),
                    );
                }
                return None;
            }
        }
    }
    Some(out)
}

/// Everything read from one model's files.
pub struct Files {
    pub mdl: read::Mdl,
    pub vvd: Option<read::Vvd>,
    pub vtx: Vec<(strips::Variant, read::Vtx)>,
    pub raw_checksums: Vec<(String, i32)>,
}

/// The files of one model as read: the MDL and whichever siblings were found (the `.vvd`, and
/// each `.vtx` variant with its bytes).
pub fn read_set(
    mdl: read::Mdl,
    vvd: Option<&[u8]>,
    vtx: &[(strips::Variant, Vec<u8>)],
) -> Result<Files, String> {
    let mut raw_checksums = vec![("mdl".to_string(), mdl.hdr.checksum)];
    let vvd = match vvd {
        Some(b) => {
            let v = read::read_vvd(b).map_err(|e| format!("vvd: {e}"))?;
            raw_checksums.push(("vvd".into(), v.hdr.checksum));
            Some(v)
        }
        None => None,
    };
    let mut out = Vec::new();
    for (v, b) in vtx {
        let x = read::read_vtx(b).map_err(|e| format!("{}: {e}", v.extension()))?;
        raw_checksums.push((v.extension().into(), x.hdr.check_sum));
        out.push((*v, x));
    }
    Ok(Files {
        mdl,
        vvd,
        vtx: out,
        raw_checksums,
    })
}

/// Checks the invariants the three files must keep between them; one line per problem.
pub fn check(f: &Files) -> Vec<String> {
    let mut p = Vec::new();
    let m = &f.mdl;
    if let Some((_, c0)) = f.raw_checksums.first() {
        for (n, c) in &f.raw_checksums {
            if c != c0 {
                p.push(format!(
                    "checksum of the {n} ({c}) differs from the MDL's ({c0})"
                ));
            }
        }
    }
    if m.hdr.length as usize != m.file_len {
        p.push(format!(
            "MDL length field {} but the file has {} bytes",
            m.hdr.length, m.file_len
        ));
    }
    let parents: Vec<i32> = m.bones.iter().map(|b| b.rec.parent).collect();
    for (i, &par) in parents.iter().enumerate() {
        if par >= i as i32 {
            p.push(format!("bone {i} has parent {par}, not an earlier bone"));
        }
    }
    p.extend(anim_problems(m));
    p.extend(face_read::problems(&m.face, m.bones.len()));
    let Some(vvd) = &f.vvd else {
        p.push("no .vvd beside the MDL".into());
        return p;
    };
    let nl = vvd.hdr.num_lods.clamp(1, 8) as usize;
    // vertex counts
    let mut running = 0i32;
    let mut total = 0usize;
    for bp in &m.body_parts {
        for md in &bp.models {
            if md.rec.vertexindex != running * 48 || md.rec.tangentsindex != running * 16 {
                p.push(format!(
                    "model `{}` vertexindex {} / tangentsindex {} do not follow the previous models ({running} vertices)",
                    md.rec.name.as_str(),
                    md.rec.vertexindex,
                    md.rec.tangentsindex
                ));
            }
            let mut voff = 0;
            for (k, me) in md.meshes.iter().enumerate() {
                if me.rec.vertexoffset != voff {
                    p.push(format!(
                        "model `{}` mesh {k}: vertexoffset {} (expected {voff})",
                        md.rec.name.as_str(),
                        me.rec.vertexoffset
                    ));
                }
                if me.rec.num_lod_vertexes[0] != me.rec.numvertices {
                    p.push(format!(
                        "model `{}` mesh {k}: numLODVertexes[0] {} ≠ numvertices {}",
                        md.rec.name.as_str(),
                        me.rec.num_lod_vertexes[0],
                        me.rec.numvertices
                    ));
                }
                voff += me.rec.numvertices;
            }
            if voff != md.rec.numvertices {
                p.push(format!(
                    "model `{}`: numvertices {} but its meshes have {voff}",
                    md.rec.name.as_str(),
                    md.rec.numvertices
                ));
            }
            running += md.rec.numvertices;
            total += md.rec.numvertices.max(0) as usize;
        }
    }
    // per-LOD vertex counts: the VVD header's against the sum of the meshes' (7.4)
    for l in 0..8 {
        let mut sum = 0i64;
        for bp in &m.body_parts {
            for md in &bp.models {
                for me in &md.meshes {
                    sum += me.rec.num_lod_vertexes[l] as i64;
                }
            }
        }
        let hl = vvd.hdr.num_lod_vertexes[l] as i64;
        if l < nl && sum != hl {
            p.push(format!(
                "VVD header numLODVertexes[{l}] is {hl} but the MDL's meshes have {sum} LOD-{l} vertices"
            ));
        }
    }
    for bp in &m.body_parts {
        for md in &bp.models {
            for (k, me) in md.meshes.iter().enumerate() {
                let c = &me.rec.num_lod_vertexes;
                if c.windows(2).take(nl.saturating_sub(1)).any(|w| w[1] > w[0]) {
                    p.push(format!(
                        "model `{}` mesh {k}: numLODVertexes {c:?} grow with the LOD",
                        md.rec.name.as_str()
                    ));
                }
            }
        }
    }
    if total != vvd.vertices.len() {
        p.push(format!(
            "the MDL's models have {total} vertices, the VVD {}",
            vvd.vertices.len()
        ));
    }
    for (variant, vtx) in &f.vtx {
        let ext = variant.extension();
        if vtx.hdr.num_lods != vvd.hdr.num_lods {
            p.push(format!(
                "{ext}: {} LODs, the VVD {}",
                vtx.hdr.num_lods, vvd.hdr.num_lods
            ));
        }
        if vtx.body_parts.len() != m.body_parts.len() {
            p.push(format!(
                "{ext}: {} body parts, the MDL {}",
                vtx.body_parts.len(),
                m.body_parts.len()
            ));
            continue;
        }
        let limit = vtx.hdr.max_bones_per_strip as usize;
        for (bi, (vbp, mbp)) in vtx.body_parts.iter().zip(&m.body_parts).enumerate() {
            if vbp.len() != mbp.models.len() {
                p.push(format!(
                    "{ext}: body part {bi} has {} models, the MDL {}",
                    vbp.len(),
                    mbp.models.len()
                ));
                continue;
            }
            for (mi, (vm, mm)) in vbp.iter().zip(&mbp.models).enumerate() {
                if vm.len() != nl {
                    p.push(format!(
                        "{ext}: body part {bi} model {mi} has {} LODs, expected {nl}",
                        vm.len()
                    ));
                }
                let base = (mm.rec.vertexindex / 48).max(0) as usize;
                for (l, lod) in vm.iter().enumerate() {
                    if lod.meshes.len() != mm.meshes.len() {
                        p.push(format!(
                            "{ext}: body part {bi} model {mi} LOD {l} has {} meshes, the MDL {}",
                            lod.meshes.len(),
                            mm.meshes.len()
                        ));
                        continue;
                    }
                    for (k, (vme, mme)) in lod.meshes.iter().zip(&mm.meshes).enumerate() {
                        let lod_n = mme.rec.num_lod_vertexes[l.min(7)];
                        for g in &vme.groups {
                            for v in &g.verts {
                                if v.orig_mesh_vert_id as i32 >= lod_n {
                                    p.push(format!(
                                        "{ext}: body part {bi} model {mi} LOD {l} mesh {k}: vertex {} is not among the mesh's {lod_n} LOD-{l} vertices",
                                        v.orig_mesh_vert_id
                                    ));
                                    break;
                                }
                                let vi = base
                                    + mme.rec.vertexoffset.max(0) as usize
                                    + v.orig_mesh_vert_id as usize;
                                if let Some(vx) = vvd.vertices.get(vi) {
                                    for s in 0..(vx.numbones.min(3) as usize) {
                                        let mut b = vx.bone[s] as i32;
                                        // Bounded: a broken file may have parents in a cycle.
                                        let mut steps = 0;
                                        while b >= 0
                                            && (b as usize) < m.bones.len()
                                            && steps <= m.bones.len()
                                        {
                                            steps += 1;
                                            if m.bones[b as usize].rec.flags & (0x400 << l) == 0 {
                                                p.push(format!("bone `{}` lacks the LOD-{l} vertex flag (0x{:x}) although a vertex of {ext} LOD {l} depends on it", m.bones[b as usize].name, 0x400 << l));
                                                b = -1;
                                            } else {
                                                b = parents[b as usize];
                                            }
                                        }
                                    }
                                }
                            }
                            // A software-skinned group (no `IS_HWSKINNED`, as Valve's dx80
                            // files make of flexed meshes) names the model's bones directly
                            // and has no bone palette to fit.
                            let hw_skinned = g.rec.flags & 0x02 != 0;
                            for s in g.strips.iter().filter(|_| hw_skinned) {
                                let mut bones: Vec<i8> = Vec::new();
                                let i0 = s.rec.index_offset.max(0) as usize;
                                let n = s.rec.num_indices.max(0) as usize;
                                for &i in g.indices.iter().skip(i0).take(n) {
                                    if let Some(v) = g.verts.get(i as usize) {
                                        for k2 in 0..(v.num_bones.min(3) as usize) {
                                            if !bones.contains(&v.bone_id[k2]) {
                                                bones.push(v.bone_id[k2]);
                                            }
                                        }
                                    } else {
                                        p.push(format!("{ext}: an index ({i}) points past its strip group's vertices"));
                                        break;
                                    }
                                }
                                if bones.len() > limit || s.changes.len() > limit {
                                    p.push(format!("{ext}: a strip uses {} bones, more than the limit of {limit}", bones.len().max(s.changes.len())));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    p.sort();
    p.dedup();
    p
}

/// Flags that are never on disk in v48: 0x40 (`STUDIO_FRAMEANIM` of v49), `STUDIO_ACTIVITY`
/// and `STUDIO_EVENT` (runtime markers; `source-animation.md` 3.1).
const FORBIDDEN_FLAGS: i32 = 0x40 | 0x1000 | 0x2000;

use model::AL_POSE;

/// The animation side's invariants (`source-animation.md` 3, 6, 7, 8.1): every record chain
/// decodable over the frames the engine reads, sequences pointing at existing animations,
/// pose parameters, sequences and nodes, blend grids of `numblends` cells, a weight list,
/// event cycles in [0, 1], no runtime-only flags, and at least one sequence.
pub fn anim_problems(m: &read::Mdl) -> Vec<String> {
    let mut p = Vec::new();
    let nb = m.bones.len();
    let n_anims = m.animations.len();
    let n_seqs = m.seqs.len();
    let n_params = m.pose_params.len();
    let n_nodes = m.nodes.len();
    if m.seqs.is_empty() {
        p.push("the model has no sequence (the engine needs sequence 0)".into());
    }
    for a in &m.animations {
        let what = format!("animation `{}`", a.name);
        if a.rec.numframes < 1 {
            p.push(format!("{what} has {} frames", a.rec.numframes));
        }
        if a.rec.flags & FORBIDDEN_FLAGS != 0 {
            p.push(format!(
                "{what} has flags 0x{:x}, which are never on disk in v48",
                a.rec.flags & FORBIDDEN_FLAGS
            ));
        }
        for c in &a.chains {
            let at = if a.rec.sectionframes == 0 {
                what.clone()
            } else {
                format!("{what} section {}", c.section)
            };
            match c.start {
                Some(start) => {
                    for e in animcodec::validate_chain(&m.bytes, start, nb, c.frames) {
                        p.push(format!("{at}: {e}"));
                    }
                }
                None if c.animblock == -1 => p.push(format!(
                    "{at} has no data (animblock -1: the model needs to be recompiled)"
                )),
                None if c.animblock < 0 || c.animblock >= m.hdr.numanimblocks => p.push(format!(
                    "{at} is in anim block {}, but the model has {} anim blocks",
                    c.animblock, m.hdr.numanimblocks
                )),
                // In an external .ani file, which was not read.
                None => {}
            }
        }
        if let Err(e) = pose::zero_frames(m, a) {
            p.push(format!("{what}: {e}"));
        }
    }
    if m.anim_blocks.len() > 1 {
        if m.ani_name.is_empty() {
            p.push("the model has anim blocks but no .ani file name".into());
        }
        let mut end = 0;
        for (k, b) in m.anim_blocks.iter().enumerate().skip(1) {
            if b.datastart < end || b.dataend < b.datastart {
                p.push(format!(
                    "anim block {k} ({}..{}) overlaps the one before or is reversed",
                    b.datastart, b.dataend
                ));
            }
            end = b.dataend;
        }
    }
    for q in &m.seqs {
        let r = &q.rec;
        let what = format!("sequence `{}`", q.label);
        if r.flags & FORBIDDEN_FLAGS != 0 {
            p.push(format!(
                "{what} has flags 0x{:x}, which are never on disk in v48",
                r.flags & FORBIDDEN_FLAGS
            ));
        }
        // (a `$declaresequence` placeholder, STUDIO_OVERRIDE, has no blends: 0×0)
        let placeholder = r.flags & anim::OVERRIDE != 0 && r.numblends == 0;
        if (r.groupsize[0] < 1 || r.groupsize[1] < 1) && !placeholder {
            p.push(format!(
                "{what} has a {}×{} blend grid",
                r.groupsize[0], r.groupsize[1]
            ));
        }
        if r.numblends as i64 != r.groupsize[0] as i64 * r.groupsize[1] as i64 {
            p.push(format!(
                "{what} has numblends {} but a {}×{} blend grid",
                r.numblends, r.groupsize[0], r.groupsize[1]
            ));
        }
        for (k, &a) in q.anim_indices.iter().enumerate() {
            if a < 0 || a as usize >= n_anims {
                p.push(format!(
                    "{what} blend {k} uses animation {a}, but the model has {n_anims}"
                ));
            }
        }
        if r.weightlistindex == 0 {
            p.push(format!(
                "{what} has no weight list (weightlistindex 0: the engine would read the seqdesc as weights)"
            ));
        }
        for (k, e) in q.events.iter().enumerate() {
            if !(0.0..=1.0).contains(&e.rec.cycle) {
                p.push(format!(
                    "{what} event {k} is at cycle {}, outside [0, 1]",
                    e.rec.cycle
                ));
            }
        }
        for axis in 0..2 {
            let pi = r.paramindex[axis];
            if pi != -1 && (pi < 0 || pi as usize >= n_params) {
                p.push(format!(
                    "{what} blend axis {axis} uses pose parameter {pi}, but the model has {n_params}"
                ));
            }
        }
        for (k, l) in q.autolayers.iter().enumerate() {
            if l.i_sequence < 0 || l.i_sequence as usize >= n_seqs {
                p.push(format!(
                    "{what} autolayer {k} uses sequence {}, but the model has {n_seqs}",
                    l.i_sequence
                ));
            }
            if l.flags & AL_POSE != 0 && (l.i_pose < 0 || l.i_pose as usize >= n_params) {
                p.push(format!(
                    "{what} autolayer {k} is driven by pose parameter {}, but the model has {n_params}",
                    l.i_pose
                ));
            }
        }
        for (name, node) in [("entry", r.localentrynode), ("exit", r.localexitnode)] {
            if node < 0 || node as usize > n_nodes {
                p.push(format!(
                    "{what} has {name} node {node}, but the model has {n_nodes} nodes"
                ));
            }
        }
    }
    if let Some(bad) = m.node_transitions.iter().find(|&&x| x as usize > n_nodes) {
        p.push(format!(
            "the node transition table names node {bad}, but the model has {n_nodes} nodes"
        ));
    }
    for (i, c) in m.bone_controllers.iter().enumerate() {
        if c.bone < 0 || c.bone as usize >= nb {
            p.push(format!(
                "bone controller {i} drives bone {}, but the model has {nb} bones",
                c.bone
            ));
        }
    }
    p
}
