//! `mdlc inspect` on Source models compiled by mdlc: the text dump of each hand-written model is
//! pinned as an insta snapshot named after the model (read by eye; the numbers each one must
//! show are derived from the input in the comments), and the JSON dump is checked against it.
//! (The animation side of Valve's models and `--pose` are tested in `source_anim_inspect.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod source_common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mdlc::load::fs::RealFs;
use source_common::*;

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/source")
        .join(rel)
}

/// Compiles `qc`, writes the files, and returns the text and JSON dumps (both without
/// invariant problems).
fn dumps(qc: &Path, name: &str) -> (String, serde_json::Value) {
    let (files, diags) = compile_qc(qc);
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let out = tmp("inspect", name);
    let mdl = write_files(&out, &files.expect("output"));
    let (text, problems) = mdlc::inspect::source::inspect(&mdl, &RealFs, false).unwrap();
    assert_eq!(problems, Vec::<String>::new());
    let (json, problems) = mdlc::inspect::source::inspect(&mdl, &RealFs, true).unwrap();
    assert!(problems.is_empty());
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    // the two dumps agree on what they both show
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    assert_eq!(
        json["mdl"]["bones"].as_array().unwrap().len(),
        f.mdl.bones.len()
    );
    assert_eq!(
        json["vvd"]["vertices"].as_u64().unwrap() as usize,
        f.vvd.as_ref().unwrap().vertices.len()
    );
    assert_eq!(json["vtx"].as_array().unwrap().len(), 3);
    assert_eq!(
        json["mdl"]["sequences"].as_array().unwrap().len(),
        f.mdl.seqs.len()
    );
    for (a, ja) in f
        .mdl
        .animations
        .iter()
        .zip(json["mdl"]["animations"].as_array().unwrap())
    {
        assert_eq!(ja["name"], a.name.as_str());
        for c in ja["chains"].as_array().unwrap() {
            assert!(c["records"].is_u64(), "{c}");
        }
    }
    assert!(text.contains("invariants: all hold"));
    let _ = std::fs::remove_dir_all(&out);
    (text, json)
}

/// `crate.qc`: a static prop with a wood quad (4 vertices, 2 triangles) and a metal triangle
/// (3 vertices): one bone `static_prop` (flags 0x500: hit box + LOD 0), flags 0x11, 2 textures,
/// 2 meshes, 7 VVD vertices, no bone-state changes, sw group flags 0x2 (static props).
#[test]
fn static_prop() {
    let (text, json) = dumps(&testdata("static_prop/crate.qc"), "static_prop");
    assert_eq!(json["vvd"]["vertices"], 7);
    assert_eq!(json["mdl"]["header"]["flags"]["value"], 0x11);
    // A static prop's rest-pose animation is the empty chain (source-animation.md §7).
    assert_eq!(json["mdl"]["animations"][0]["chains"][0]["records"], 0);
    assert_eq!(
        json["mdl"]["sequences"][0]["weights"],
        serde_json::json!([1.0])
    );
    insta::assert_snapshot!("static_prop", text);
}

/// 60 bones in a chain, 60 quads along X, each corner on 4 consecutive bones (0.4, 0.3, 0.2,
/// 0.1, pruned to 3 and rescaled to 4/9, 3/9, 2/9): 240 vertices (neighbouring quads' corners
/// differ in uv), 120 triangles, every vertex with 3 bones, all 60 bones drawn at LOD 0; each
/// quad uses 4 bones, so dx90 (53 per strip) takes quads 0-49 (bones 0-52) and 50-59 (13
/// bones, wrapping to 0-2), dx80 (16) 13 quads per strip: 5 strips. Flat, so no hit box.
#[test]
fn skinned60() {
    let dir = tmp("inspect", "skinned60-src");
    let tris = sixty_bone_quads();
    std::fs::write(dir.join("body.smd"), smd(60, &tris)).unwrap();
    std::fs::write(
        dir.join("skinned60.qc"),
        "$modelname \"mdlc/skinned60.mdl\"\n$cdmaterials \"models/mdlc/\"\n$body body \"body.smd\"\n$sequence idle \"body.smd\"\n",
    )
    .unwrap();
    let (text, json) = dumps(&dir.join("skinned60.qc"), "skinned60");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(json["vvd"]["vertices"], 240);
    assert_eq!(json["vvd"]["vertices_by_bone_count"][3], 240);
    assert_eq!(json["mdl"]["bones"].as_array().unwrap().len(), 60);
    // Only the root differs from its rest pose (the +90° turn): one record (§7).
    assert_eq!(json["mdl"]["animations"][0]["chains"][0]["records"], 1);
    insta::assert_snapshot!("skinned60", text);
}

/// `bodygroups.qc`: body parts `body` (1 model), `head` (2), `extras` (blank + 1): bases 1, 1,
/// 2; models of 4, 3, 4, 0 and 3 vertices (14 in the VVD) at vertexindex 0, 192, 336, 528,
/// 528; textures body, head, metal in first-use order.
#[test]
fn bodygroups() {
    let (text, json) = dumps(&testdata("bodygroups/bodygroups.qc"), "bodygroups");
    assert_eq!(json["vvd"]["vertices"], 14);
    insta::assert_snapshot!("bodygroups", text);
}

/// `skins.qc`: textures red, blue, green, yellow; family 0 = 0 1 …, family 1 puts green and
/// yellow in the red and blue columns; two meshes of 3 vertices.
#[test]
fn skins() {
    let (text, json) = dumps(&testdata("skins/skins.qc"), "skins");
    assert_eq!(json["mdl"]["skin_families"].as_array().unwrap().len(), 2);
    insta::assert_snapshot!("skins", text);
}

/// `lods.qc`: LOD 0 = 9 vertices / 8 triangles, LOD 1 = 4 vertices (3 shared + 1 new with the
/// tilted normal) / 2 triangles: 10 vertices, numLODVertexes (10, 4, 4, …), switch point 30,
/// bone flags 0xc00 (LOD 0, LOD 1; the grid is flat, so the generated hit box, which must be
/// over 1 unit on every axis, is dropped); one mesh, so no fix-ups.
#[test]
fn lods() {
    let (text, json) = dumps(&testdata("lods/lods.qc"), "lods");
    assert_eq!(json["vvd"]["vertices"], 10);
    assert_eq!(
        json["vvd"]["num_lod_vertexes"],
        serde_json::json!([10, 4, 4, 4, 4, 4, 4, 4])
    );
    insta::assert_snapshot!("lods", text);
}

/// 22,000 separate triangles of one material, each with its own 3 vertices: 66,000 vertices,
/// over the VTX's 16-bit limit, so the one material becomes several meshes of at most 65,535
/// vertices; 22,000 triangles in all.
#[test]
fn big() {
    let dir = tmp("inspect", "big-src");
    let mut tris = String::new();
    for i in 0..22_000 {
        let x = (i % 200) as f32 * 2.0;
        let y = (i / 200) as f32 * 2.0;
        let _ = writeln!(
            tris,
            "big\n0 {x} {y} 0 0 0 1 0 0\n0 {} {y} 0 0 0 1 1 0\n0 {x} {} 0 0 0 1 0 1",
            x + 1.0,
            y + 1.0
        );
    }
    std::fs::write(dir.join("big.smd"), smd(1, &tris)).unwrap();
    std::fs::write(
        dir.join("big.qc"),
        "$modelname \"mdlc/big.mdl\"\n$cdmaterials \"models/mdlc/\"\n$body body \"big.smd\"\n$sequence idle \"big.smd\"\n",
    )
    .unwrap();
    let (text, json) = dumps(&dir.join("big.qc"), "big");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(json["vvd"]["vertices"], 66_000);
    let meshes = json["mdl"]["body_parts"][0]["models"][0]["meshes"]
        .as_array()
        .unwrap();
    assert!(meshes.len() >= 2);
    let sum: i64 = meshes
        .iter()
        .map(|m| m["numvertices"].as_i64().unwrap())
        .sum();
    assert_eq!(sum, 66_000);
    insta::assert_snapshot!("big", text);
}

/// A flexed mesh of 24 bones, two per triangle: its dx80 strip group is software skinned (no
/// `IS_HWSKINNED`, as in Valve's dx80 builds of flexed meshes) and names more bones than the
/// 16 of a dx80 palette, which is allowed there; the invariant checks must not call it a
/// broken strip (they did, on Valve's own build of a Garry's Mod head too).
#[test]
fn a_software_skinned_flexed_group_may_name_many_bones() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-sw-flex");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = 24;
    let mut smd = String::from("version 1\nnodes\n");
    for b in 0..n {
        writeln!(smd, "{b} \"b{b}\" {}", b - 1).unwrap();
    }
    smd.push_str("end\nskeleton\ntime 0\n");
    for b in 0..n {
        writeln!(smd, "{b} {} 0 0 0 0 0", if b == 0 { 0 } else { 1 }).unwrap();
    }
    smd.push_str("end\ntriangles\n");
    let mut vta = String::from(
        "version 1\nnodes\n0 \"b0\" -1\nend\nskeleton\ntime 0\ntime 1\nend\nvertexanimation\n",
    );
    let mut corners = Vec::new();
    for b in 0..n {
        let x = b as f32;
        smd.push_str("skin\n");
        // two bones per triangle: dx80 skins a flexed triangle in hardware only on one
        for (k, (dx, dy)) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)].into_iter().enumerate() {
            let (px, py) = (x * 2.0 + dx, dy);
            let bone = if k == 1 { (b + 1) % n } else { b };
            writeln!(smd, "{bone} {px} {py} 0 0 0 1 {dx} {dy} 1 {bone} 1").unwrap();
            corners.push((px, py));
        }
    }
    smd.push_str("end\n");
    for frame in 0..2 {
        writeln!(vta, "time {frame}").unwrap();
        for (i, (px, py)) in corners.iter().enumerate() {
            let z = if frame == 1 { 0.5 } else { 0.0 };
            writeln!(vta, "{i} {px} {py} {z} 0 0 1").unwrap();
        }
    }
    vta.push_str("end\n");
    std::fs::write(dir.join("strip.smd"), smd).unwrap();
    std::fs::write(dir.join("strip.vta"), vta).unwrap();
    std::fs::write(
        dir.join("strip.qc"),
        "$modelname \"test/swflex.mdl\"\n$model \"body\" \"strip.smd\" {\n\tflexfile \"strip.vta\" {\n\t\tdefaultflex frame 0\n\t\tflex \"lift\" frame 1\n\t}\n\tflexcontroller lift lift\n\t%lift = lift\n}\n$sequence \"idle\" \"strip.smd\"\n",
    )
    .unwrap();
    let (files, diags) = compile_qc(&dir.join("strip.qc"));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let mdl = write_files(&dir.join("out"), &files.expect("output"));
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    // The case exists: a dx80 group without IS_HWSKINNED whose vertices name more than 16 bones.
    let (_, dx80) = f
        .vtx
        .iter()
        .find(|(v, _)| format!("{v:?}").to_ascii_lowercase().contains("dx80"))
        .expect("a dx80 file");
    let widest = dx80
        .body_parts
        .iter()
        .flatten()
        .flatten()
        .flat_map(|lod| &lod.meshes)
        .flat_map(|m| &m.groups)
        .filter(|g| g.rec.flags & 0x02 == 0)
        .map(|g| {
            let mut bones: Vec<i8> = g.verts.iter().flat_map(|v| v.bone_id).collect();
            bones.sort_unstable();
            bones.dedup();
            bones.len()
        })
        .max()
        .unwrap_or(0);
    assert!(
        widest > 16,
        "the software-skinned group names {widest} bones"
    );
    assert_eq!(mdlc::formats::source::check(&f), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}
