//! LOD vertex sharing (`source-geometry.md` 7.4): every corpus model with Valve's build beside
//! it must get Valve's vertex counts per mesh and per LOD (`numLODVertexes` of every mesh and of
//! the VVD header, and the fix-up table), not just the same total.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::Path;

use common::corpus_dir;
use mdlc::formats::source;
use mdlc::load::fs::RealFs;
use source_common::*;

/// (corpus QC, Valve's MDL) of the builds with several LODs.
const LOD_PAIRS: &[(&str, &str)] = &[
    ("reepblue-chamberdoor-frame/Punt/Portalish_2012/modelsrc/props_gameplay/oldies/chamberdoor_frame.qc", "reepblue-chamberdoor-frame/Punt/Portalish_2012/modelsrc/props_gameplay/oldies/chamberdoor_frame.mdl"),
    ("ha-suit-charger-hl2/modelsrc/editor/item_suitcharger_hl2/suit_charger001.qc", "ha-suit-charger-hl2/hammer/models/editor/item_suit_charger_hl2.mdl"),
    ("mapbase-door01-left/modelsrc/door01_left/door01_left.qc", "mapbase-door01-left/compiled/VPKs/shared_content_v7_0/models/props_c17/door01_left.mdl"),
    ("mapbase-bunker-gun01/modelsrc/weapons/bunker_gun01/bunker_gun01.qc", "mapbase-bunker-gun01/compiled/VPKs/hl2_mapbase_content/models/props_combine/bunker_gun01.mdl"),
];

/// `model name / mesh index: numLODVertexes` for every mesh, in file order.
fn mesh_counts(f: &source::Files) -> Vec<String> {
    let mut out = Vec::new();
    for bp in &f.mdl.body_parts {
        for md in &bp.models {
            for (k, me) in md.meshes.iter().enumerate() {
                out.push(format!(
                    "{} / {k}: {:?}",
                    md.rec.name.as_str(),
                    me.rec.num_lod_vertexes
                ));
            }
        }
    }
    out
}

#[test]
fn lod_vertex_counts_match_valve_per_mesh_and_lod() {
    let Some(dir) = corpus_dir() else { return };
    let out_root =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-source-lod-vertices");
    let _ = std::fs::remove_dir_all(&out_root);
    let mut wrong = Vec::new();
    for (qc, valve) in LOD_PAIRS {
        let (files, diags) = compile_qc(&dir.join(qc));
        assert!(!diags.iter().any(|d| d.is_error()), "{qc}");
        let stem = Path::new(qc).file_stem().unwrap();
        let mdl = write_files(&out_root.join(stem), &files.expect("output"));
        let ours = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
        let theirs = mdlc::inspect::source::read_files(&dir.join(valve), &RealFs).unwrap();
        let (a, b) = (mesh_counts(&ours), mesh_counts(&theirs));
        assert_eq!(a.len(), b.len(), "{qc}: mesh count");
        for (x, y) in a.iter().zip(&b) {
            if x != y {
                wrong.push(format!("{qc}: ours {x}, Valve's {y}"));
            }
        }
        let (va, vb) = (ours.vvd.as_ref().unwrap(), theirs.vvd.as_ref().unwrap());
        if va.hdr.num_lod_vertexes != vb.hdr.num_lod_vertexes {
            wrong.push(format!(
                "{qc}: VVD numLODVertexes {:?} vs {:?}",
                va.hdr.num_lod_vertexes, vb.hdr.num_lod_vertexes
            ));
        }
        let runs = |v: &mdlc::formats::source::read::Vvd| {
            v.fixups
                .iter()
                .map(|f| (f.lod, f.source_vertex_id, f.num_vertexes))
                .collect::<Vec<_>>()
        };
        if runs(va) != runs(vb) {
            wrong.push(format!("{qc}: fix-ups {:?} vs {:?}", runs(va), runs(vb)));
        }
    }
    let _ = std::fs::remove_dir_all(&out_root);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A skinned model's LODs (`testdata/source/lods/skinned`, 2006 SDK `UnifyLODs.cpp`): a vertex
/// only a LOD has takes its links from the nearest LOD-0 vertex, not from its own file (which
/// links the moved finger triangle to the root), and then goes through the LOD's bone
/// replacements (`replacebone finger hand` at LOD 1, `bonetreecollapse arm` at LOD 2). The
/// bones' LOD flags follow: the finger is used by LOD 0 only, the hand by LODs 0–1, the arm by
/// every LOD.
#[test]
fn lod_vertices_take_root_links_and_the_lods_bone_replacements() {
    let qc = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/lods/skinned/skinned.qc");
    let (files, diags) = compile_qc(&qc);
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-lod-skinned");
    let _ = std::fs::remove_dir_all(&out);
    let mdl = write_files(&out, &files.expect("output"));
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    let names: Vec<&str> = f.mdl.bones.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["root", "arm", "hand", "finger"]);
    let lods = |i: usize| (f.mdl.bones[i].rec.flags >> 10) & 0xff;
    assert_eq!(
        [lods(0), lods(1), lods(2), lods(3)],
        [0b111, 0b111, 0b011, 0b001]
    );
    // the moved finger triangle (x 13.2 and 14.2): once linked to the hand (LOD 1), once to the arm
    // (LOD 2), never to the root its file names
    let vvd = f.vvd.as_ref().unwrap();
    let mut moved: Vec<i8> = vvd
        .vertices
        .iter()
        .filter(|v| (v.vec_position[0] - v.vec_position[0].floor() - 0.2).abs() < 1e-3)
        .map(|v| {
            assert_eq!((v.numbones, v.weight[0]), (1, 1.0));
            v.bone[0]
        })
        .collect();
    moved.sort_unstable();
    assert_eq!(moved, [1, 1, 1, 2, 2, 2]);
    // the arm triangle is LOD 0's in every LOD: 9 + 3 + 3 vertices
    assert_eq!(vvd.vertices.len(), 15);
}

/// An LOD file whose one node is named after its mesh (`testdata/source/lods/mesh_node`):
/// the node is not a bone of the model, the LOD's triangles are kept (not dropped for their
/// unknown bone), and their vertices take LOD 0's links. Valve's build of a Garry's Mod model
/// whose LOD files are such (Talsa-ko, issue 16's notes) has none of their nodes either.
#[test]
fn an_lod_files_own_nodes_are_not_bones() {
    let qc =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/lods/mesh_node/mesh_node.qc");
    let (files, diags) = compile_qc(&qc);
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-lod-mesh-node");
    let _ = std::fs::remove_dir_all(&out);
    let mdl = write_files(&out, &files.expect("output"));
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    let names: Vec<&str> = f.mdl.bones.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["root", "arm", "hand", "finger"]);
    assert_eq!(mdlc::formats::source::check(&f), Vec::<String>::new());
    let vvd = f.vvd.as_ref().unwrap();
    // LOD 1: the arm triangle is LOD 0's, the moved finger triangle three vertices of its own
    assert_eq!(vvd.hdr.num_lod_vertexes[..2], [12, 6]);
    // every vertex names a bone of the model, and the finger triangle's LOD-1 copies the
    // finger (bone 3), LOD 0's nearest
    for v in &vvd.vertices {
        for k in 0..v.numbones as usize {
            assert!((v.bone[k] as usize) < names.len());
        }
    }
    let moved: Vec<_> = vvd
        .vertices
        .iter()
        .filter(|v| {
            (v.vec_position[0] - 13.2).abs() < 1e-4 || (v.vec_position[0] - 14.2).abs() < 1e-4
        })
        .collect();
    assert_eq!(moved.len(), 3);
    assert!(moved.iter().all(|v| v.numbones == 1 && v.bone[0] == 3));
    let _ = std::fs::remove_dir_all(&out);
}
