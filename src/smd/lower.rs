//! Lowering one parsed SMD/VTA file into the IR: skeleton with rest pose, mesh with normalised
//! weights, animation frames merged by frame number, vertex animation shapes.
//!
//! Lowering expects a tree whose parse reported no error (the load stage does not lower a file with
//! errors, so a broken line never causes a second, confusing report); it is still total on any
//! tree and never panics.

use std::collections::HashMap;

use indexmap::IndexSet;

use crate::diag::{Code, Diagnostic, FileId, Span};
use crate::ir::anim::{Animation, Pose, Shape, VertexAnimation};
use crate::ir::mesh::{Corner, Mesh, Triangle, Weight};
use crate::ir::skeleton::{Bone, BoneId, Skeleton};

use super::ast::{self, SmdFile};

/// Animations may not span more frames than this (about an hour at 30 fps).
pub const MAX_FRAMES: usize = 100_000;

/// One SMD or VTA file in IR form.
#[derive(Clone, Debug, PartialEq)]
pub struct SmdModel {
    pub file: FileId,
    pub skeleton: Skeleton,
    /// The `triangles` section, if the file has one (reference files).
    pub mesh: Option<Mesh>,
    /// The `skeleton` frames. For a reference file, frame 0 is the rest pose.
    pub animation: Animation,
    /// The `vertexanimation` section (VTA files).
    pub flex: Option<VertexAnimation>,
    /// The flex shapes a DMX mesh file carries (`deltaStates`); `None` for an SMD.
    pub shapes: Option<crate::ir::face::MeshShapes>,
    /// The number (and its span) of the first `skeleton` `time` line with a negative frame number, if any:
    /// Valve's HL1 compiler skips such frames, Valve's Source compiler refuses them (`E0132`,
    /// see [`negative_time_error`]); the build decides by target.
    pub negative_time: Option<(Span, i32)>,
}

/// `E0132` for a `time` line with a negative frame number, where Source rules apply (Valve's
/// Source compiler stops at it: "Missing frame start" before the first frame, "Frame error"
/// after it).
pub fn negative_time_error(smd: &SmdModel, (span, time): (Span, i32)) -> Diagnostic {
    Diagnostic::new(
        Code::SmdNegativeFrame,
        format!("negative frame number {time}"),
        span.in_file(smd.file),
        "negative",
    )
    .with_note("frames are numbered from 0")
    .with_note("Valve's HL1 compiler skips frames below 0 (a GoldSrc build warns, W0409); Valve's Source compiler refuses them")
}

/// Lowers a parsed file. Warnings and errors found here are pushed to `diags`.
pub fn lower_smd(smd: &SmdFile, file: FileId, diags: &mut Vec<Diagnostic>) -> SmdModel {
    lower_with(smd, file, diags, |bone_of| {
        smd.triangles.as_ref().map(|t| {
            let sizes = (t.triangle_count(), t.vertex_count());
            lower_mesh(&t.materials, sizes, t.runs(), file, bone_of)
        })
    })
}

/// [`lower_smd`], taking the tree: each run of triangles is let go as soon as it is lowered, so
/// that a large mesh is not held twice (as its tree and as its lowered form) at any moment.
pub fn lower_smd_owned(mut smd: SmdFile, file: FileId, diags: &mut Vec<Diagnostic>) -> SmdModel {
    let triangles = smd.triangles.take();
    lower_with(&smd, file, diags, |bone_of| {
        triangles.map(|mut t| {
            let materials = std::mem::take(&mut t.materials);
            let sizes = (t.triangle_count(), t.vertex_count());
            lower_mesh(
                &materials,
                sizes,
                t.into_runs().map(|r| (r.triangles, r.vertices, r.links)),
                file,
                bone_of,
            )
        })
    })
}

/// Lowers `smd`; `mesh` lowers its triangles with the bone numbering it is given.
fn lower_with(
    smd: &SmdFile,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
    mesh: impl FnOnce(&dyn Fn(i32) -> Option<usize>) -> Option<Mesh>,
) -> SmdModel {
    let nodes: &[ast::Node] = smd.nodes.as_ref().map_or(&[], |n| n.nodes.as_slice());
    // SMD bone index -> position in `nodes` (the first node with that index wins).
    let mut by_index: HashMap<i32, usize> = HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        by_index.entry(n.index).or_insert(i);
    }
    let bone_of = |index: i32| -> Option<usize> {
        match nodes.get(index as usize) {
            Some(n) if index >= 0 && n.index == index => Some(index as usize),
            _ => by_index.get(&index).copied(),
        }
    };

    let animation = lower_frames(smd, file, nodes.len(), &bone_of, diags);

    let bones = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| Bone {
            name: n.name.clone(),
            parent: bone_of(n.parent)
                .filter(|&p| p != i && n.parent >= 0)
                .map(|p| BoneId(p as u32)),
            rest: animation.get(0, i).unwrap_or_default(),
            span: n.line.in_file(file),
        })
        .collect::<Vec<_>>();
    // A parent cycle was an error at parse time; cut it here so the IR's rule (parents lead to
    // a root) holds for any tree.
    let mut bones = bones;
    break_cycles(&mut bones);

    if animation.num_frames > 0 {
        let missing: Vec<&str> = (0..nodes.len())
            .filter(|&b| animation.get(0, b).is_none())
            .map(|b| nodes[b].name.as_str())
            .collect();
        if let (Some(first), Some(frame_span)) =
            (missing.first(), first_frame_span(smd, animation.first_time))
        {
            let shown: Vec<String> = missing.iter().take(5).map(|n| format!("\"{n}\"")).collect();
            let more = if missing.len() > 5 {
                format!(" and {} more", missing.len() - 5)
            } else {
                String::new()
            };
            diags.push(
                Diagnostic::new(
                    Code::SmdBoneMissingFromFirstFrame,
                    format!(
                        "{} bone{} missing from the first frame",
                        missing.len(),
                        if missing.len() == 1 { " is" } else { "s are" }
                    ),
                    frame_span.in_file(file),
                    format!("frame {} gives no value for \"{first}\"", animation.first_time),
                )
                .with_note(format!("missing: {}{more}", shown.join(", ")))
                .with_note("their first-frame pose is taken as position 0 and rotation 0, as Valve's compilers do"),
            );
        }
    }

    let mesh = mesh(&bone_of);
    let flex = smd
        .vertex_animation
        .as_ref()
        .map(|v| lower_flex(v, smd, file, diags));
    SmdModel {
        file,
        skeleton: Skeleton { bones },
        mesh,
        animation,
        flex,
        shapes: None,
        negative_time: smd
            .skeleton
            .as_ref()
            .and_then(|s| s.frames.iter().find(|f| f.time < 0))
            .map(|f| (f.time_span, f.time)),
    }
}

fn break_cycles(bones: &mut [Bone]) {
    for start in 0..bones.len() {
        let mut cur = bones[start].parent;
        let mut steps = 0;
        while let Some(p) = cur {
            steps += 1;
            if p.index() == start || steps > bones.len() {
                bones[start].parent = None;
                break;
            }
            cur = bones.get(p.index()).and_then(|b| b.parent);
        }
    }
}

fn first_frame_span(smd: &SmdFile, time: i32) -> Option<Span> {
    smd.skeleton
        .as_ref()?
        .frames
        .iter()
        .find(|f| f.time == time)
        .map(|f| f.time_span)
}

fn lower_frames(
    smd: &SmdFile,
    file: FileId,
    num_bones: usize,
    bone_of: &dyn Fn(i32) -> Option<usize>,
    diags: &mut Vec<Diagnostic>,
) -> Animation {
    let Some(skel) = smd.skeleton.as_ref() else {
        return Animation {
            num_bones,
            ..Animation::default()
        };
    };
    let (Some(min), Some(max)) = (
        skel.frames.iter().map(|f| f.time).min(),
        skel.frames.iter().map(|f| f.time).max(),
    ) else {
        return Animation {
            num_bones,
            ..Animation::default()
        };
    };
    let num_frames = (max as i64 - min as i64 + 1) as usize;
    let lines: usize = skel.frames.iter().map(|f| f.bones.len()).sum();
    let entries = num_frames.saturating_mul(num_bones);
    if num_frames > MAX_FRAMES || (entries > 16 << 20 && entries / 8 > lines) {
        let at = skel
            .frames
            .iter()
            .find(|f| f.time == max)
            .map_or(skel.keyword, |f| f.time_span);
        diags.push(
            Diagnostic::new(
                Code::SmdTooManyFrames,
                format!("frame numbers run from {min} to {max}, {num_frames} frames of {num_bones} bones"),
                at.in_file(file),
                "frame number far beyond the others",
            )
            .with_note(if num_frames > MAX_FRAMES {
                format!("mdlc holds at most {MAX_FRAMES} frames per animation; is this frame number a typo?")
            } else {
                format!(
                    "the file gives only {lines} bone values for {entries} frame-and-bone slots; \
                     is a frame number a typo?"
                )
            }),
        );
        return Animation {
            num_bones,
            ..Animation::default()
        };
    }
    let mut poses: Vec<Option<Pose>> = vec![None; entries];
    let mut setter: Vec<Span> = vec![Span::default(); entries];
    let mut present = vec![false; num_frames];
    let mut replaced = 0usize;
    let mut first_replaced: Option<Diagnostic> = None;
    for f in &skel.frames {
        let fi = (f.time as i64 - min as i64) as usize;
        if let Some(p) = present.get_mut(fi) {
            *p = true;
        }
        for b in &f.bones {
            let Some(bi) = bone_of(b.bone) else { continue };
            let k = fi * num_bones + bi;
            let new = Pose {
                pos: b.pos,
                rot: b.rot,
            };
            let (Some(slot), Some(set_by)) = (poses.get_mut(k), setter.get_mut(k)) else {
                continue;
            };
            if let Some(old) = *slot {
                if old != new {
                    replaced += 1;
                    if first_replaced.is_none() {
                        first_replaced = Some(
                            Diagnostic::new(
                                Code::SmdFrameValueReplaced,
                                format!("frame {} gives bone {} a second, different value", f.time, b.bone),
                                b.line.in_file(file),
                                "this value is used",
                            )
                            .with_secondary(set_by.in_file(file), "earlier value, replaced")
                            .with_note("when a frame gives a bone twice, the later value wins, as in Valve's compilers"),
                        );
                    }
                }
            }
            *slot = Some(new);
            *set_by = b.line;
        }
    }
    if let Some(mut d) = first_replaced {
        if replaced > 1 {
            d.notes.push(format!(
                "{} more bone values in this file are replaced the same way",
                replaced - 1
            ));
        }
        diags.push(d);
    }
    let gaps: Vec<i64> = present
        .iter()
        .enumerate()
        .filter(|(_, p)| !**p)
        .map(|(i, _)| i as i64 + min as i64)
        .collect();
    if let Some(&first_gap) = gaps.first() {
        // Point at the first `time` line after the gap.
        let after = skel
            .frames
            .iter()
            .filter(|f| f.time as i64 > first_gap)
            .min_by_key(|f| f.time);
        if let Some(after) = after {
            diags.push(
                Diagnostic::new(
                    Code::SmdFrameGap,
                    format!(
                        "{} frame{} between {min} and {max} {} missing",
                        gaps.len(),
                        if gaps.len() == 1 { "" } else { "s" },
                        if gaps.len() == 1 { "is" } else { "are" }
                    ),
                    after.time_span.in_file(file),
                    format!("frame {first_gap} is missing before this one"),
                )
                .with_note("Valve's HL1 compiler takes missing frames as zero; Valve's Source compiler refuses them"),
            );
        }
    }
    Animation {
        first_time: min,
        num_frames,
        num_bones,
        poses,
        present,
    }
}

/// The triangles of `runs` (`sizes`: how many triangles and vertices they hold in all) as a
/// mesh: the bones numbered by `bone_of`, each
/// vertex's links merged per bone and scaled to add up to 1 (a triangle with a bone `nodes`
/// lacks is dropped). A run's vertex becomes one corner of the mesh, made when a kept triangle
/// first uses it, and every triangle using it indexes that corner. Each run is let go after it
/// is lowered when `runs` hands them over.
fn lower_mesh<T, V, L>(
    materials: &IndexSet<String>,
    (count, vertices): (usize, usize),
    runs: impl Iterator<Item = (T, V, L)>,
    file: FileId,
    bone_of: &dyn Fn(i32) -> Option<usize>,
) -> Mesh
where
    T: AsRef<[ast::Triangle]>,
    V: AsRef<[ast::Vertex]>,
    L: AsRef<[ast::Link]>,
{
    let mut mesh = Mesh {
        materials: materials.iter().cloned().collect(),
        triangles: Vec::with_capacity(count),
        // (at most one corner a vertex: sized once, not grown run by run)
        corners: Vec::with_capacity(vertices),
        weights: Vec::new(),
    };
    let mut scratch: Vec<Weight> = Vec::with_capacity(8);
    // per vertex of the run: its corner, `DROPPED` (a bone `nodes` lacks), or `NOT_YET`
    const NOT_YET: u32 = u32::MAX;
    const DROPPED: u32 = u32::MAX - 1;
    let mut made: Vec<u32> = Vec::new();
    for (tris, verts, links) in runs {
        let (verts, links) = (verts.as_ref(), links.as_ref());
        made.clear();
        made.resize(verts.len(), NOT_YET);
        'tri: for tri in tris.as_ref() {
            let mut corners = [0u32; 3];
            for (slot, &i) in corners.iter_mut().zip(&tri.vertices) {
                let Some(state) = made.get_mut(i as usize) else {
                    continue 'tri;
                };
                if *state == NOT_YET {
                    *state = match verts.get(i as usize).and_then(|v| {
                        lower_vertex(v, links, &mut scratch, &mut mesh.weights, file, bone_of)
                    }) {
                        Some(c) => {
                            mesh.corners.push(c);
                            mesh.corners.len() as u32 - 1
                        }
                        None => DROPPED,
                    };
                }
                if *state == DROPPED {
                    continue 'tri;
                }
                *slot = *state;
            }
            mesh.triangles.push(Triangle {
                material: tri.material,
                corners,
                span: tri.material_span.in_file(file),
            });
        }
    }
    mesh
}

/// One vertex as a corner, its links merged per bone and scaled to add up to 1, appended to
/// `weights`; `None` when its bone is one `nodes` lacks.
fn lower_vertex(
    v: &ast::Vertex,
    links: &[ast::Link],
    scratch: &mut Vec<Weight>,
    weights: &mut Vec<Weight>,
    file: FileId,
    bone_of: &dyn Fn(i32) -> Option<usize>,
) -> Option<Corner> {
    let bone = BoneId(bone_of(v.bone)? as u32);
    scratch.clear();
    for l in ast::links_in(links, v) {
        let Some(b) = bone_of(l.bone) else { continue };
        let b = BoneId(b as u32);
        if l.weight <= 0.0 {
            continue;
        }
        match scratch.iter_mut().find(|w| w.bone == b) {
            Some(w) => w.weight += l.weight,
            None => scratch.push(Weight {
                bone: b,
                weight: l.weight,
            }),
        }
    }
    let sum: f32 = scratch.iter().map(|w| w.weight).sum();
    if scratch.is_empty() || sum <= 0.0 || !sum.is_finite() {
        // Nine values, link count 0, or only zero weights: the vertex belongs to its bone.
        scratch.clear();
        scratch.push(Weight { bone, weight: 1.0 });
    } else if sum != 1.0 {
        for w in scratch.iter_mut() {
            w.weight /= sum;
        }
    }
    let first = weights.len() as u32;
    weights.extend_from_slice(scratch);
    Some(Corner {
        pos: v.pos,
        normal: v.normal,
        uv: v.uv,
        bone,
        weights: (first, scratch.len() as u32),
        span: v.line.in_file(file),
    })
}

fn lower_flex(
    v: &ast::VertexAnimationSection,
    smd: &SmdFile,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> VertexAnimation {
    // Shape names come from the `time N # name` comments of the skeleton.
    let names: HashMap<i32, &str> = smd
        .skeleton
        .iter()
        .flat_map(|s| &s.frames)
        .filter_map(|f| f.comment.as_deref().map(|c| (f.time, c)))
        .collect();
    let mut by_time: std::collections::BTreeMap<i32, Shape> = std::collections::BTreeMap::new();
    for f in &v.frames {
        let shape = by_time.entry(f.time).or_insert_with(|| Shape {
            time: f.time,
            name: names.get(&f.time).map(|s| s.to_string()),
            vertices: Vec::new(),
            span: f.time_span.in_file(file),
        });
        shape
            .vertices
            .extend(f.vertices.iter().map(|d| (d.index, d.pos, d.normal)));
    }
    let mut shapes: Vec<Shape> = by_time.into_values().collect();
    for s in &mut shapes {
        // One entry per corner; a corner given twice keeps its later value.
        let mut seen: HashMap<u32, usize> = HashMap::with_capacity(s.vertices.len());
        let mut out: Vec<(u32, [f32; 3], [f32; 3])> = Vec::with_capacity(s.vertices.len());
        let mut changed = false;
        for &(i, p, n) in &s.vertices {
            match seen.get(&i) {
                Some(&k) => {
                    changed |= out[k].1 != p || out[k].2 != n;
                    out[k] = (i, p, n);
                }
                None => {
                    seen.insert(i, out.len());
                    out.push((i, p, n));
                }
            }
        }
        if changed {
            diags.push(
                Diagnostic::new(
                    Code::SmdFrameValueReplaced,
                    format!("shape {} gives a vertex a second, different value", s.time),
                    s.span,
                    "this shape",
                )
                .with_note("the later value wins"),
            );
        }
        out.sort_by_key(|e| e.0);
        s.vertices = out;
    }
    VertexAnimation { shapes }
}
