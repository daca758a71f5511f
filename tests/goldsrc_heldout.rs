//! GoldSrc features the development corpus does not exercise, checked against values worked out
//! by hand from `goldsrc.md` (the description of what Valve's released HL1 studiomdl writes) and
//! Valve's published source (ValveSoftware/halflife `utils/studiomdl/studiomdl.c`, `write.c`).
//! Each assertion names the section or function its expected value comes from.
//!
//! Fixtures: `testdata/goldsrc/heldout/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use mdlc::diag::{Diagnostic, Sources};
use mdlc::driver::{compile_goldsrc, read_project, InputKind};
use mdlc::formats::goldsrc::read;
use mdlc::project::files::RealFs;
use mdlc::project::spec::ProjectSpec;
use mdlc::project::Target;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/goldsrc/heldout")
        .join(rel)
}

/// Reads a fixture as a GoldSrc project: the spec (when it reads), its sources, and the
/// errors rendered.
fn read(qc: &Path) -> (Option<ProjectSpec>, Sources, Vec<Diagnostic>) {
    let mut sources = Sources::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let spec = read_project(
        qc,
        InputKind::Qc,
        &RealFs,
        Some(Target::GoldSrc),
        &mut sources,
        &mut diags,
    );
    (spec, sources, diags)
}

fn errors(sources: &Sources, diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| mdlc::diag::render_plain(sources, d))
        .collect()
}

fn spec_of(qc: &Path) -> ProjectSpec {
    let (spec, sources, diags) = read(qc);
    let errors = errors(&sources, &diags);
    assert!(errors.is_empty(), "{errors}");
    spec.expect("the project reads")
}

/// Compiles a fixture: (file name, bytes) of every file written.
fn build(qc: &Path) -> Vec<(String, Vec<u8>)> {
    let (spec, mut sources, mut diags) = read(qc);
    let files =
        spec.and_then(|spec| compile_goldsrc(&spec, &RealFs, None, &mut sources, &mut diags));
    let errors = errors(&sources, &diags);
    let files = files.unwrap_or_else(|| panic!("no output:\n{errors}"));
    files
        .into_iter()
        .map(|(p, b)| (p.file_name().unwrap().to_string_lossy().into_owned(), b))
        .collect()
}

fn file<'a>(files: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &files
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} was not written"))
        .1
}

fn i32_at(b: &[u8], o: usize) -> i32 {
    i32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn f32_at(b: &[u8], o: usize) -> f32 {
    f32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

#[test]
fn header_textures_mirror_groups_and_nodes_follow_valves_rules() {
    let files = build(&fixture("features/features.qc"));
    // §2: group files first, then the main file.
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["features01.mdl", "features.mdl"]);
    let main = file(&files, "features.mdl");
    let group = file(&files, "features01.mdl");
    let p = read::parse(main, None, &[group]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    let h = &p.header;

    // §4.1 / `Cmd_Eyeposition`: `$eyeposition 0 0 60` is stored as (−b, a, c), so x is −0.0.
    assert_eq!(h.eyeposition[0].to_bits(), 0x8000_0000);
    assert_eq!(h.eyeposition[1].to_bits(), 0);
    assert_eq!(h.eyeposition[2], 60.0);
    // §4.1: `$bbox` → min/max, `$cbox` → bbmin/bbmax, `$flags` as written.
    assert_eq!((h.min, h.max), ([-16.0, -16.0, 0.0], [16.0, 16.0, 72.0]));
    assert_eq!((h.bbmin, h.bbmax), ([-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]));
    assert_eq!(h.flags, 512);

    // §7 `nodes` / `Grab_Skeleton`: `$mirrorbone "child"` negates the child's reference
    // position after scaling; 0 × −1 is −0.0.
    let child = &p.bones[1];
    assert_eq!(child.name, "child");
    assert_eq!(child.value[0], -10.0);
    assert_eq!(child.value[1].to_bits(), 0x8000_0000);
    assert_eq!(child.value[2].to_bits(), 0x8000_0000);
    // §8.1 / `Build_Reference`: the mesh is put in bone space with the mirrored skeleton: the
    // corner at (10, 1, 0) on the child (world origin (−10, 0, 0)) is at (20, 1, 0). Vertices
    // are in lookup order (SMD corner order), so it is the third.
    let m = &p.bodyparts[0].models[0].model;
    assert_eq!(m.numverts, 3);
    let vi = m.vertinfoindex as usize;
    assert_eq!(&main[vi..vi + 3], &[0, 0, 1]);
    let v = m.vertindex as usize + 2 * 12;
    assert_eq!(
        [f32_at(main, v), f32_at(main, v + 4), f32_at(main, v + 8)],
        [20.0, 1.0, 0.0]
    );

    // §5 / `Cmd_SetTextureRendermode`: masked 0x40, additive 0x20, each ORed into the flags, so
    // `skin.bmp`, named masked and then additive, is both (0x60); `glow.bmp` is named only by
    // `$texrendermode`, so it is appended after the mesh's texture and (§8.3, used by no mesh,
    // no texture-group parent) takes texture 0's range: 4×4.
    let tex: Vec<(&str, i32, i32, i32)> = p
        .textures
        .iter()
        .map(|t| (t.name.as_str(), t.flags, t.width, t.height))
        .collect();
    assert_eq!(tex, [("skin.bmp", 0x60, 4, 4), ("glow.bmp", 0x20, 4, 4)]);
    // `$cliptotextures` has no effect (§6.2): the UVs cover [0, 1] of a 4×4 image, so the stored
    // texture is the whole image, rows as in the file read top-down.
    let t0 = p.textures[0].index as usize;
    assert_eq!(&main[t0..t0 + 16], &[0, 1, 2, 3].repeat(4)[..]);
    let t1 = p.textures[1].index as usize;
    assert_eq!(
        &main[t1..t1 + 16],
        &[[0u8; 4], [1; 4], [2; 4], [3; 4]].concat()[..]
    );
    // §8.3 / `ResizeTexture` with `$gamma 2.2`: g = float(2.2f / 1.8) = 1.2222222 (0x3f9c71c7),
    // each palette byte c → trunc(pow(c / 255.0f, g) · 255): 64 → 47, 128 → 109, 200 → 189,
    // 1 → 0, 255 → 255, 0 → 0 (worked out with IEEE single/double steps as in the source).
    let pal = t0 + 16;
    assert_eq!(
        &main[pal..pal + 12],
        &[0, 0, 0, 109, 47, 255, 189, 0, 0, 255, 255, 255]
    );
    assert!(main[pal + 12..pal + 768].iter().all(|&b| b == 0));

    // §8.11 / `Cmd_SequenceGroup`: sequences after `$sequencegroup "extra"` are in group 1,
    // written to `features01.mdl` whose name in the group record and in its own header is
    // `models\features01.mdl`; group 0 is `default` with an empty name.
    let groups: Vec<(&str, &str)> = p
        .seqgroups
        .iter()
        .map(|g| (g.label.as_str(), g.name.as_str()))
        .collect();
    assert_eq!(
        groups,
        [("default", ""), ("extra", "models\\features01.mdl")]
    );
    assert_eq!(&group[0..4], b"IDSQ");
    assert_eq!(i32_at(group, 4), 10);
    assert_eq!(&group[8..30], b"models\\features01.mdl\0");
    assert_eq!(i32_at(group, 72) as usize, group.len());
    let idle = &p.sequences[0].desc;
    let walk = &p.sequences[1].desc;
    assert_eq!((idle.seqgroup, walk.seqgroup), (0, 1));
    // §1: `animindex` is relative to the group's file: right after the 76-byte header.
    assert_eq!(walk.animindex, 76);

    // `Cmd_Sequence`: `node` and `(r)transition` overwrite entry and exit, `rtransition` sets
    // nodeflags and nothing clears it. idle: `rtransition 1 2 node 3` → 3, 3, flag 1; walk:
    // `rtransition 2 1 transition 1 2` → 1, 2, flag 1.
    assert_eq!((idle.entrynode, idle.exitnode, idle.nodeflags), (3, 3, 1));
    assert_eq!((walk.entrynode, walk.exitnode, walk.nodeflags), (1, 2, 1));
    // §8.10 / `MakeTransitions`: N = largest entry node = 3; walk links 1→2 and (reversible)
    // 2→1; idle's entry equals its exit, no link; nothing goes through node 3.
    assert_eq!(h.numtransitions, 3);
    assert_eq!(
        p.transitions,
        vec![vec![0, 2, 0], vec![1, 0, 0], vec![0, 0, 0]]
    );
}

#[test]
fn rotations_and_numbers_are_computed_as_valves_tool_does() {
    let spec = spec_of(&fixture("rotation/rotation.qc"));
    let anim = |seq: &str| {
        let name = format!("@{seq}");
        spec.animations
            .iter()
            .find(|a| a.name.value == name)
            .unwrap_or_else(|| panic!("no animation {name}"))
    };
    // `Cmd_Origin` / `Option_Rotate`: (atof(token) + 90) · (Q_PI / 180.0) in double, stored in a
    // float: 12.3 → 1.785471797 (0x3fe48a57). In single precision (12.3f + 90f) it would be
    // 0x3fe48a58.
    assert_eq!(anim("a").rotation[2].to_bits(), 0x3fe4_8a57);
    assert_eq!(anim("b").rotation[2].to_bits(), 0x3fe4_8a57);
    // `atof` returns a double that is then stored in a float: "1.0000000596046448" is
    // 1 + 2⁻²⁴ as a double, which rounds (ties to even) to 1.0 as a float; read directly as a
    // float it would round up to 1 + 2⁻²³.
    assert_eq!(anim("a").scale, 1.0);
    assert_eq!(anim("b").scale, 1.0);
    // `Cmd_Sequence`: the last of `node`/`transition`/`rtransition` sets entry and exit;
    // `rtransition`'s flag stays.
    let seq = |n: &str| spec.sequences.iter().find(|s| s.name.value == n).unwrap();
    let c = seq("c").transition.as_ref().unwrap();
    assert_eq!((c.entry.value.as_str(), c.exit.value.as_str()), ("1", "2"));
    assert!(c.reversible);
    let d = seq("d").transition.as_ref().unwrap();
    assert_eq!((d.entry.value.as_str(), d.exit.value.as_str()), ("3", "3"));
    assert!(!d.reversible);
}

#[test]
fn a_texrendermode_before_the_body_lists_its_texture_first() {
    let files = build(&fixture("texorder/texorder.qc"));
    let main = file(&files, "texorder.mdl");
    let p = read::parse(main, None, &[]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    // §8.2 / `lookup_texture`: textures are listed in the order the QC first names them:
    // second.bmp (`$texrendermode`, additive 0x20), first.bmp (the body), third.bmp (the
    // texture group). second.bmp's UVs cover its 8×2 image; third.bmp is used by no mesh and
    // takes the range of its texture-group parent first.bmp (4×4, §8.3), not of texture 0.
    let tex: Vec<(&str, i32, i32, i32)> = p
        .textures
        .iter()
        .map(|t| (t.name.as_str(), t.flags, t.width, t.height))
        .collect();
    assert_eq!(
        tex,
        [
            ("second.bmp", 0x20, 8, 2),
            ("first.bmp", 0, 4, 4),
            ("third.bmp", 0, 4, 4)
        ]
    );
    // Meshes in order of first use in the SMD (first.bmp, second.bmp) keep the new indices.
    let skinrefs: Vec<i32> = p.bodyparts[0].models[0]
        .meshes
        .iter()
        .map(|m| m.skinref)
        .collect();
    assert_eq!(skinrefs, [1, 0]);
    // `Cmd_TextureGroup` / `SetSkinValues`: numskinref = textures known when the group is read
    // (2); family 1 replaces first.bmp (1) with third.bmp (2).
    assert_eq!(p.header.numskinref, 2);
    assert_eq!(p.skins, vec![vec![0, 1], vec![0, 2]]);
}

/// The same `$texrendermode` in an included file read before the body: Valve's tool reads the
/// include where it stands, so the texture order — and the whole file — is the same as with the
/// command written in place.
#[test]
fn a_texrendermode_in_an_include_before_the_body_counts_where_it_is_included() {
    let inline = build(&fixture("texorder/texorder.qc"));
    let included = build(&fixture("texorder_include/texorder.qc"));
    assert!(
        file(&inline, "texorder.mdl") == file(&included, "texorder.mdl"),
        "the two builds differ"
    );
}
