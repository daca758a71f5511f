//! Small models compiled by the Source back end, checked by mdlc's own invariants and the
//! Python oracles (valvemdl validate(), srctools).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod source_common;

use std::fmt::Write as _;
use std::path::Path;

use mdlc::diag::Code;
use mdlc::formats::source;
use mdlc::load::fs::RealFs;
use source_common::*;

/// Compiles, writes, re-reads, checks; returns the files read back and the warnings.
fn build(qc: &Path, out: &Path) -> (source::Files, Vec<mdlc::diag::Diagnostic>) {
    let (files, diags) = compile_qc(qc);
    let errors: Vec<_> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let files = files.expect("output");
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    let mdl = write_files(out, &files);
    let f = mdlc::inspect::source::read_files(&mdl, &RealFs).unwrap();
    assert_eq!(source::check(&f), Vec::<String>::new());
    oracle_check(&mdl);
    let (text, problems) = mdlc::inspect::source::inspect(&mdl, &RealFs, false).unwrap();
    assert!(problems.is_empty() && text.contains("MDL v48"));
    let (json, _) = mdlc::inspect::source::inspect(&mdl, &RealFs, true).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
    (f, diags)
}

#[test]
fn static_prop_end_to_end() {
    let qc = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/static_prop/crate.qc");
    let (f, _) = build(&qc, &tmp("source", "static"));
    let m = &f.mdl;
    assert_eq!(m.bones.len(), 1);
    assert_eq!(m.bones[0].name, "static_prop");
    // drawn at LOD 0, and the generated hit box (10 × 10 × 10) sits on it
    assert_eq!(m.bones[0].rec.flags, 0x500);
    assert_eq!(m.hitbox_sets[0].boxes.len(), 1);
    assert_eq!(m.hdr.flags & 0x1, 0x1);
    assert_eq!(m.hdr.flags & 0x10, 0x10);
    assert_eq!(m.textures, ["wood", "metal"]);
    assert_eq!(m.cd_materials, ["models\\mdlc\\"]);
    assert_eq!(m.sequences, ["idle"]);
    let vvd = f.vvd.as_ref().unwrap();
    // 4 + 3 vertices (the quad shares 2); positions turned (x, y, z) → (−y, x, z)
    assert_eq!(vvd.vertices.len(), 7);
    assert!(vvd
        .vertices
        .iter()
        .any(|v| v.vec_position == [0.0, 10.0, 0.0]));
    assert!(vvd
        .vertices
        .iter()
        .any(|v| v.vec_position == [-10.0, 10.0, 0.0]));
    for v in &vvd.vertices {
        assert_eq!(
            (v.numbones, v.bone, v.weight),
            (1, [0, 0, 0], [1.0, 0.0, 0.0])
        );
    }
    for t in &vvd.tangents {
        assert!(t[3] == 1.0 || t[3] == -1.0);
    }
    for (_, vtx) in &f.vtx {
        for g in &vtx.body_parts[0][0][0].meshes[0].groups {
            assert_eq!(g.rec.flags, 0x02);
            for s in &g.strips {
                assert_eq!((s.rec.num_bones, s.rec.num_bone_state_changes), (0, 0));
            }
        }
    }
}

#[test]
fn sixty_bones_four_weights_split_into_strips() {
    let dir = tmp("source", "skinned");
    let tris = sixty_bone_quads();
    std::fs::write(dir.join("body.smd"), smd(60, &tris)).unwrap();
    std::fs::write(
        dir.join("m.qc"),
        "$modelname \"mdlc/skinned.mdl\"\n$body body \"body.smd\"\n$sequence idle \"body.smd\"\n",
    )
    .unwrap();
    let (f, diags) = build(&dir.join("m.qc"), &dir.join("out"));
    let w: Vec<_> = diags
        .iter()
        .filter(|d| d.code == Code::SourceWeightsPruned)
        .collect();
    assert_eq!(w.len(), 1, "one warning per file: {diags:?}");
    assert!(
        w[0].message.starts_with("240 vertices") || w[0].message.contains("vertices"),
        "{}",
        w[0].message
    );
    assert!(w[0].notes[0].contains("0.100"), "{:?}", w[0].notes);
    assert_eq!(f.mdl.bones.len(), 60);
    let vvd = f.vvd.as_ref().unwrap();
    for v in &vvd.vertices {
        assert_eq!(v.numbones, 3);
        let s: f32 = v.weight.iter().sum();
        assert!((s - 1.0).abs() < 1e-6);
    }
    for (variant, vtx) in &f.vtx {
        let strips: usize = vtx.body_parts[0][0][0].meshes[0]
            .groups
            .iter()
            .map(|g| g.strips.len())
            .sum();
        match variant {
            source::strips::Variant::Dx90 => assert!(strips >= 2, "60 bones need 2 strips at 53"),
            source::strips::Variant::Dx80 => assert!(strips >= 4, "60 bones need 4 strips at 16"),
            source::strips::Variant::Sw => {
                assert_eq!(vtx.body_parts[0][0][0].meshes[0].groups[0].rec.flags, 0x00);
            }
        }
    }
}

#[test]
fn body_groups_skins_and_lods() {
    let dir = tmp("source", "groups");
    let quad = |mat: &str, z: f32| {
        format!("{mat}\n0 0 0 {z} 0 0 1 0 0\n0 4 0 {z} 0 0 1 1 0\n0 4 4 {z} 0 0 1 1 1\n{mat}\n0 0 0 {z} 0 0 1 0 0\n0 4 4 {z} 0 0 1 1 1\n0 0 4 {z} 0 0 1 0 1\n")
    };
    std::fs::write(
        dir.join("base.smd"),
        smd(1, &(quad("red", 0.0) + &quad("blue", 1.0))),
    )
    .unwrap();
    std::fs::write(dir.join("a.smd"), smd(1, &quad("red", 2.0))).unwrap();
    std::fs::write(dir.join("b.smd"), smd(1, &quad("blue", 3.0))).unwrap();
    std::fs::write(dir.join("base_lod1.smd"), smd(1, &quad("red", 0.0))).unwrap();
    std::fs::write(
        dir.join("m.qc"),
        r#"$modelname "mdlc/groups.mdl"
$cdmaterials "models/mdlc"
$body body "base.smd"
$bodygroup extras
{
    blank
    studio "a.smd"
    studio "b.smd"
}
$texturegroup skins
{
    { "red" "blue" }
    { "green" "yellow" }
}
$lod 20
{
    replacemodel "base.smd" "base_lod1.smd"
    removemodel "a.smd"
}
$sequence idle "base.smd"
"#,
    )
    .unwrap();
    let (f, _) = build(&dir.join("m.qc"), &dir.join("out"));
    let m = &f.mdl;
    assert_eq!(m.body_parts.len(), 2);
    assert_eq!(m.body_parts[1].models.len(), 3);
    assert_eq!(m.body_parts[1].models[0].rec.nummeshes, 0);
    assert_eq!(m.body_parts[1].rec.base, 1);
    assert_eq!(m.textures, ["red", "blue", "green", "yellow"]);
    assert_eq!(m.skins, [vec![0, 1, 2, 3], vec![2, 3, 2, 3]]);
    let vvd = f.vvd.as_ref().unwrap();
    assert_eq!(vvd.hdr.num_lods, 2);
    for (_, vtx) in &f.vtx {
        assert_eq!(vtx.body_parts[0][0][1].switch_point, 20.0);
        // LOD 1 of the base model: only the red quad
        let lod1 = &vtx.body_parts[0][0][1];
        let tris: usize = lod1
            .meshes
            .iter()
            .flat_map(|me| me.groups.iter())
            .map(|g| g.indices.len() / 3)
            .sum();
        assert_eq!(tris, 2);
        // a.smd removed at LOD 1
        assert!(vtx.body_parts[1][1][1]
            .meshes
            .iter()
            .all(|me| me.groups.is_empty()));
    }
    // LOD bits: bone 0 drawn at both LODs
    assert_eq!(m.bones[0].rec.flags & 0xc00, 0xc00);
}

#[test]
fn a_mesh_over_65536_vertices_is_split() {
    let dir = tmp("source", "big");
    let mut tris = String::new();
    // 22,000 separate triangles with their own vertices: 66,000 vertices, one material
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
        dir.join("m.qc"),
        "$modelname \"mdlc/big.mdl\"\n$body body \"big.smd\"\n$sequence idle \"big.smd\"\n",
    )
    .unwrap();
    let (f, diags) = build(&dir.join("m.qc"), &dir.join("out"));
    assert!(diags
        .iter()
        .any(|d| d.code == Code::SourceModelTooManyVertices));
    let md = &f.mdl.body_parts[0].models[0];
    assert!(md.meshes.len() >= 2);
    for me in &md.meshes {
        assert!(me.rec.numvertices <= 65_535);
    }
    assert_eq!(f.vvd.as_ref().unwrap().vertices.len(), 66_000);
    for (_, vtx) in &f.vtx {
        for me in &vtx.body_parts[0][0][0].meshes {
            for g in &me.groups {
                assert!(g.verts.len() <= 32_767 && g.indices.len() <= 32_767);
            }
        }
    }
    let tris_out = lod0_triangles(&f).unwrap();
    assert_eq!(tris_out.len(), 22_000);
}

#[test]
fn readers_never_panic_on_garbage() {
    let mut seed = 0x1234_5678u32;
    for len in [0usize, 3, 64, 408, 700, 5000] {
        for _ in 0..50 {
            let mut b: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed as u8
                })
                .collect();
            if len >= 8 {
                b[..4].copy_from_slice(b"IDST");
                b[4..8].copy_from_slice(&48i32.to_le_bytes());
            }
            let _ = source::read::read_mdl(&b);
            let _ = source::read::read_vvd(&b);
            let _ = source::read::read_vtx(&b);
        }
    }
}

/// `mdlc inspect` on a broken file whose bone parents form a cycle must finish (and report it),
/// not loop: the creature's bones 1 and 2 are made each other's parent.
#[test]
fn inspect_finishes_on_a_parent_cycle() {
    use mdlc::diag::Sources;
    use mdlc::driver::{self, InputKind};
    use mdlc::load::fs::RealFs;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let toml = root.join("testdata/models/creature/model.toml");
    let spec = driver::read_project(
        &toml,
        InputKind::Toml,
        &RealFs,
        None,
        &mut sources,
        &mut diags,
    )
    .unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("parent_cycle");
    let _ = std::fs::remove_dir_all(&dir);
    let files =
        driver::compile_source(&spec, &RealFs, Some(&dir), &mut sources, &mut diags, None).unwrap();
    mdlc::output::write_outputs(&files).unwrap();
    let mdl_path = files
        .iter()
        .map(|(p, _)| p)
        .find(|p| p.extension().is_some_and(|e| e == "mdl"))
        .unwrap();
    let mut mdl = std::fs::read(mdl_path).unwrap();
    let at = |b: &[u8], o: usize| i32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    // studiohdr_t.boneindex at 160; mstudiobone_t is 216 bytes with `parent` at +4.
    let bones = at(&mdl, 160) as usize;
    for (bone, parent) in [(1usize, 2i32), (2, 1)] {
        let o = bones + bone * 216 + 4;
        mdl[o..o + 4].copy_from_slice(&parent.to_le_bytes());
    }
    std::fs::write(mdl_path, &mdl).unwrap();
    let (_, problems) = mdlc::inspect::source::inspect(mdl_path, &RealFs, false).unwrap();
    assert!(
        problems.iter().any(|p| p.contains("not an earlier bone")),
        "{problems:?}"
    );
}

/// `$includemodel` files are listed in the MDL with `models/` before them (no label), as
/// valvemdl reads them.
#[test]
fn include_models_are_listed() {
    let dir = tmp("source", "include");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("testdata/models/creature/creature_reference.smd"),
        dir.join("ref.smd"),
    )
    .unwrap();
    let qc = dir.join("inc.qc");
    std::fs::write(
        &qc,
        "$modelname \"t/inc.mdl\"\n$cdmaterials \"models/t/\"\n$body body \"ref.smd\"\n\
         $includemodel \"humans/male_shared.mdl\"\n$includemodel \"humans/male_ss.mdl\"\n\
         $sequence idle \"ref.smd\"\n",
    )
    .unwrap();
    let (f, _) = build(&qc, &dir.join("out"));
    assert_eq!(f.mdl.hdr.numincludemodels, 2);
    let mdl = dir.join("out/t/inc.mdl");
    if let Some(summary) = oracle_check(&mdl) {
        assert_eq!(
            summary["include_models"],
            serde_json::json!(["models/humans/male_shared.mdl", "models/humans/male_ss.mdl"])
        );
    }
}

/// Animation-side mistakes are diagnostics with spans, all in one run, and nothing is written:
/// a pose parameter no `$poseparameter` declares (a warning with the near name), an event past the end, a `subtract` frame
/// past the end, an event number over 32 bits; options not applied yet give one W0620 each.
#[test]
fn animation_mistakes_are_diagnostics() {
    let dir = tmp("source", "anim-diags");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in [
        "creature_reference.smd",
        "creature_idle.smd",
        "creature_walk.smd",
    ] {
        std::fs::copy(root.join("testdata/models/creature").join(f), dir.join(f)).unwrap();
    }
    let qc = dir.join("m.qc");
    std::fs::write(
        &qc,
        "$modelname \"t/m.mdl\"\n$cdmaterials \"models/t/\"\n$body body \"creature_reference.smd\"\n\
         $poseparameter \"aim_yaw\" -60 60\n\
         $animation walk_a \"creature_walk.smd\" {\n\tstartloop 100000\n\tsubtract idle 500\n}\n\
         $animation walk_b \"creature_walk.smd\" {\n\tstartloop 100000\n}\n\
         $sequence idle \"creature_idle.smd\" {\n\t{ event 1004 500 \"step\" }\n\t{ event 99999999999 0 }\n\tblend \"aim_yw\" -60 60\n}\n\
         $sequence walk walk_a\n",
    )
    .unwrap();
    let (files, diags) = compile_qc(&qc);
    assert!(files.is_none());
    let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    for code in ["W0233", "E0621", "E0622", "W0620"] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    assert_eq!(
        codes.iter().filter(|c| **c == "E0621").count(),
        2,
        "{codes:?}"
    );
    // one W0620 for a `startloop` past the end, naming the second animation that has one
    let w: Vec<_> = diags
        .iter()
        .filter(|d| d.code.as_str() == "W0620")
        .collect();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].notes.iter().any(|n| n.contains("walk_b")),
        "{:?}",
        w[0].notes
    );
    // a pose parameter no `$poseparameter` declares is made, as Valve's compiler makes it,
    // with a warning that names the near one
    let near = diags.iter().find(|d| d.code.as_str() == "W0233").unwrap();
    assert!(near.message.contains("aim_yw"));
    assert!(
        near.notes
            .iter()
            .any(|n| n.contains("did you mean `aim_yaw`")),
        "{:?}",
        near.notes
    );
}
