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
use mdlc::load::fs::RealFs;
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
        spec.and_then(|spec| compile_goldsrc(&spec, &RealFs, None, &mut sources, &mut diags, None));
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

/// Every file a build writes: (full path, bytes).
type Files = Vec<(PathBuf, Vec<u8>)>;

/// Reads and compiles a fixture with `out_dir`: every file written, or `None`, and the codes of
/// the diagnostics.
fn build_in(qc: &Path, out_dir: Option<&Path>) -> (Option<Files>, Vec<String>) {
    let (spec, mut sources, mut diags) = read(qc);
    let files = spec
        .and_then(|spec| compile_goldsrc(&spec, &RealFs, out_dir, &mut sources, &mut diags, None));
    let codes = diags.iter().map(|d| d.code.as_str().to_string()).collect();
    (files, codes)
}

fn count(codes: &[String], code: &str) -> usize {
    codes.iter().filter(|c| *c == code).count()
}

#[test]
fn every_texture_group_adds_its_textures_but_only_the_first_makes_skins() {
    let (files, codes) = build_in(&fixture("texgroups/texgroups.qc"), None);
    // the two later groups are reported, and only they
    assert_eq!(count(&codes, "W0403"), 2, "{codes:?}");
    let files: Vec<(String, Vec<u8>)> = files
        .expect("the model builds")
        .into_iter()
        .map(|(p, b)| (p.file_name().unwrap().to_string_lossy().into_owned(), b))
        .collect();
    let main = file(&files, "texgroups.mdl");
    let p = read::parse(main, None, &[]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    // §8.2 / `lookup_texture` from `Cmd_TextureGroup`, run for every group: the mesh textures
    // (first.bmp, second.bmp, SMD order), then third.bmp (group 1), fourth.bmp (group 2),
    // fifth.bmp (group 3), each read from its BMP and written.
    // §8.3 / `SetSkinValues`: a texture no mesh uses takes the range of its `parent`, which
    // `Cmd_TextureGroup` sets, for rows after the first of every group, to the texture at the
    // same position of that group's first row, the last group naming it winning:
    // * third.bmp: group 1 says first.bmp, group 3 says second.bmp → second's range, s 0..7,
    //   t 0..1 (UVs over [0, 1] of an 8×2 image): 8×2;
    // * fourth.bmp: group 2 says second.bmp → 8×2;
    // * fifth.bmp: position 1 of group 3, whose first row has one texture: the zeroed slot,
    //   texture 0 (first.bmp, s 0..3, t 0..3): 4×4.
    let tex: Vec<(&str, i32, i32)> = p
        .textures
        .iter()
        .map(|t| (t.name.as_str(), t.width, t.height))
        .collect();
    assert_eq!(
        tex,
        [
            ("first.bmp", 4, 4),
            ("second.bmp", 8, 2),
            ("third.bmp", 8, 2),
            ("fourth.bmp", 8, 2),
            ("fifth.bmp", 4, 4)
        ]
    );
    // §8.3 `ResizeTexture`: output row i = source row (srcheight − height − min_t + i), column
    // j = min_s + j (source rows top-down). The BMPs hold, top-down, third 8×8: 8·r + c;
    // fourth 16×4: 16·r + c; fifth 8×8: 128 + 8·r + c.
    let pixels = |i: usize| {
        let t = &p.textures[i];
        let at = t.index as usize;
        main[at..at + (t.width * t.height) as usize].to_vec()
    };
    // third: rows 8 − 2 + i = 6, 7
    assert_eq!(
        pixels(2),
        [(48..56).collect::<Vec<u8>>(), (56..64).collect()].concat()
    );
    // fourth: rows 4 − 2 + i = 2, 3, columns 0..7
    assert_eq!(
        pixels(3),
        [(32..40).collect::<Vec<u8>>(), (48..56).collect()].concat()
    );
    // fifth: rows 8 − 4 + i = 4..7, columns 0..3
    let fifth: Vec<u8> = (4..8u8)
        .flat_map(|r| (0..4u8).map(move |c| 128 + 8 * r + c))
        .collect();
    assert_eq!(pixels(4), fifth);
    // `Cmd_TextureGroup` / `SetSkinValues`: only the first group makes families; numskinref =
    // textures known when it is read (2); family 1 replaces first.bmp (0) with third.bmp (2).
    assert_eq!(p.header.numskinref, 2);
    assert_eq!(p.skins, vec![vec![0, 1], vec![2, 1]]);
}

#[test]
fn texture_group_rows_of_different_lengths_make_the_skins_valves_tool_makes() {
    let (files, codes) = build_in(&fixture("texgroup_rows/rows.qc"), None);
    // rows 1 and 2 differ from the first in length
    assert_eq!(count(&codes, "W0408"), 2, "{codes:?}");
    let files = files.expect("the model builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    // §8.2: first, second (the mesh's), then third, fourth, fifth as the group names them;
    // numskinref = 2, the textures known when the group is read.
    let names: Vec<&str> = p.textures.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "first.bmp",
            "second.bmp",
            "third.bmp",
            "fourth.bmp",
            "fifth.bmp"
        ]
    );
    assert_eq!(p.header.numskinref, 2);
    // `Cmd_TextureGroup` leaves 3 families (the last texture is in row 2) and 3 positions (the
    // last row's length) in a zeroed table g, so g[0][2] = g[1][1] = g[1][2] = 0 (first.bmp).
    // `SetSkinValues`, family i, j = 0..2: skin[i][g[0][j]] = g[i][j]:
    // * family 0: skin[0] = 0, skin[1] = 1, then skin[0] = g[0][2] = 0: [0, 1];
    // * family 1: skin[0] = third (2), skin[1] = g[1][1] = 0, skin[0] = g[1][2] = 0: [0, 0];
    // * family 2: skin[0] = fourth (3), skin[1] = fifth (4), skin[0] = third (2): [2, 4].
    assert_eq!(p.skins, vec![vec![0, 1], vec![0, 0], vec![2, 4]]);
    // §8.3: a texture no mesh uses takes its parent's range; `Cmd_TextureGroup` gives third
    // and fourth the parent g[0][0] = first (4×4), fifth g[0][1] = second (8×2); third is
    // named again at position 2, whose g[0][2] is 0: first again.
    let sizes: Vec<(i32, i32)> = p.textures.iter().map(|t| (t.width, t.height)).collect();
    assert_eq!(sizes, [(4, 4), (8, 2), (4, 4), (4, 4), (8, 2)]);
}

#[test]
fn a_texture_group_before_the_bodies_is_read_after_them() {
    let (early, codes) = build_in(&fixture("texgroup_early/early.qc"), None);
    assert_eq!(count(&codes, "W0411"), 1, "{codes:?}");
    let (after, codes) = build_in(&fixture("texgroup_early/after.qc"), None);
    assert_eq!(count(&codes, "W0411"), 0, "{codes:?}");
    let (early, after) = (early.expect("builds"), after.expect("builds"));
    assert!(early[0].1 == after[0].1, "the two builds differ");
    // §8.3 with the group after the body: numskinref = the mesh's two textures, family 1
    // replaces first.bmp (0) with third.bmp (2). Before, numskinref was 0 (no texture known
    // where the group stands) and the skin table empty.
    let p = read::parse(&early[0].1, None, &[]).unwrap();
    assert_eq!(p.header.numskinref, 2);
    assert_eq!(p.skins, vec![vec![0, 1], vec![2, 1]]);
}

#[test]
fn a_qc_saved_in_latin1_builds_with_a_warning() {
    // Valve's tool reads bytes; mdlc reads a file that is not UTF-8 as Latin-1 (W0001).
    let (latin1, codes) = build_in(&fixture("texgroup_early/latin1.qc"), None);
    assert_eq!(count(&codes, "W0001"), 1, "{codes:?}");
    let (after, _) = build_in(&fixture("texgroup_early/after.qc"), None);
    assert!(latin1.expect("builds")[0].1 == after.expect("builds")[0].1);
}

#[test]
fn a_long_body_part_name_is_stored_as_valves_tool_stores_it() {
    let (files, codes) = build_in(&fixture("long_bodypart/long.qc"), None);
    assert_eq!(count(&codes, "W0540"), 1, "{codes:?}");
    let main = &files.expect("the model builds")[0].1;
    let p = read::parse(main, None, &[]).unwrap();
    // §1, §11.10: the first 32 bytes, then the low byte of `nummodels` (2), then the NUL that
    // ends the int's remaining zero bytes; the rest of the 64-byte field is zero.
    let at = p.header.bodypartindex as usize;
    let mut expected = b"a_body_part_name_of_forty_bytes_".to_vec();
    expected.push(2);
    expected.resize(64, 0);
    assert_eq!(&main[at..at + 64], &expected[..]);
}

#[test]
fn a_body_group_without_a_model_is_an_error() {
    let (files, codes) = build_in(&fixture("long_bodypart/empty_group.qc"), None);
    assert!(files.is_none());
    assert_eq!(
        codes
            .iter()
            .filter(|c| c.starts_with('E'))
            .collect::<Vec<_>>(),
        ["E0411"]
    );
}

#[test]
fn a_model_without_sequences_is_written_with_a_warning() {
    let (files, codes) = build_in(&fixture("long_bodypart/no_sequence.qc"), None);
    assert_eq!(count(&codes, "W0545"), 1, "{codes:?}");
    let p = read::parse(&files.expect("the model builds")[0].1, None, &[]).unwrap();
    assert_eq!(p.header.numseq, 0);
}

#[test]
fn quoted_sequence_options_are_options_as_valves_tokenizer_drops_quotes() {
    let (files, codes) = build_in(&fixture("seqoptions/seqoptions.qc"), None);
    // every quoted word is an option or a file that exists: nothing to report
    assert!(codes.is_empty(), "{codes:?}");
    let files = files.expect("the model builds");
    assert_eq!(files.len(), 1);
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    let seq = |i: usize| &p.sequences[i].desc;
    // `Cmd_Sequence` on `"idle" "loop" "fps" "15" "ACT_IDLE" "2" "LX"`: one blend (idle.smd),
    // LOOPING (§5: 0x1), fps 15, activity ACT_IDLE = 1 (§6.4) with weight 2, motion LX = 0x40.
    let idle = seq(0);
    assert_eq!(idle.label, "idle");
    assert_eq!(idle.numblends, 1);
    assert_eq!(idle.flags, 1);
    assert_eq!(idle.fps, 15.0);
    assert_eq!((idle.activity, idle.actweight), (1, 2));
    assert_eq!(idle.motiontype, 0x40);
    // §8.6 / `ExtractMotion`: the root's y goes 0, 2, 4; the default +90° turn puts it on x
    // as c·x − s·y = −y (s = 1.0 as a float); LX moves x from frame 0 to the last: −4 − 0.
    assert_eq!(idle.numframes, 3);
    assert_eq!(idle.linearmovement, [-4.0, 0.0, 0.0]);
    // `"frame" "1" "2"`: times 1..2 of walk.smd's 0..3; `"rtransition" "1" "2"`: entry 1,
    // exit 2, nodeflags 1; `"blend" "XR" "-10" "10"`: blendtype XR = 0x8 (§5).
    let walk = seq(1);
    assert_eq!(walk.numframes, 2);
    assert_eq!((walk.entrynode, walk.exitnode, walk.nodeflags), (1, 2, 1));
    assert_eq!(walk.blendtype[0], 0x8);
    assert_eq!((walk.blendstart[0], walk.blendend[0]), (-10.0, 10.0));
    // `strnicmp(…, 4)` / `(…, 5)`: `"looping"` is `loop`, `"Frames" 0 1` is `frame 0 1`.
    let run = seq(2);
    assert_eq!((run.flags, run.numframes, run.numblends), (1, 2, 1));
}

#[test]
fn a_modelname_with_backslashes_is_a_path_and_is_stored_as_written() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-heldout-bs");
    let _ = std::fs::remove_dir_all(&dir);
    let (files, codes) = build_in(&fixture("modelname_backslash/bs.qc"), Some(&dir));
    assert!(
        codes
            .iter()
            .all(|c| c.starts_with('W') || c.starts_with('N')),
        "{codes:?}"
    );
    let files = files.expect("the model builds");
    // §2 / `WriteFile`: group files, then `T.mdl`, then the main file, each `outname` with its
    // suffix; Valve's Windows build takes `\` as a folder separator, so `models\bs` is the
    // file `bs` in folder `models` (under `-o DIR`).
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(
        paths,
        [
            dir.join("models").join("bs01.mdl"),
            dir.join("models").join("bsT.mdl"),
            dir.join("models").join("bs.mdl")
        ]
    );
    let (group, textures, main) = (&files[0].1, &files[1].1, &files[2].1);
    let p = read::parse(main, Some(textures), &[group]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    // `WriteFile`: the header's name is `outname` (StripExtension, then `.mdl`) as written.
    assert_eq!(p.header.name, "models\\bs.mdl");
    // §4.2 / `ExtractFileBase` (`\` a separator in the Windows build): `models\bs01.mdl`,
    // in the group record and in the group file's own header; `T.mdl` has an empty name.
    assert_eq!(p.seqgroups[1].name, "models\\bs01.mdl");
    assert_eq!(&group[8..25], b"models\\bs01.mdl\0\0");
    assert_eq!(&textures[8..12], b"\0\0\0\0");

    // `..\` leaves DIR: dropped with W0542, as `../` is.
    let (files, codes) = build_in(&fixture("modelname_backslash/up.qc"), Some(&dir));
    assert_eq!(count(&codes, "W0542"), 1, "{codes:?}");
    let files = files.expect("the model builds");
    assert_eq!(files[0].0, dir.join("models").join("up.mdl"));
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.header.name, "..\\models\\up.mdl");

    // `cmdlib.c` `StripExtension` stops only at `/`: in `..\models\noext` it cuts at the `.`
    // of `..`, so Valve's header name is `.` + `.mdl`; mdlc keeps that in the header, writes
    // the file where the path says, and warns (W0544).
    let (files, codes) = build_in(&fixture("modelname_backslash/noext.qc"), Some(&dir));
    assert_eq!(count(&codes, "W0544"), 1, "{codes:?}");
    let files = files.expect("the model builds");
    assert_eq!(files[0].0, dir.join("models").join("noext.mdl"));
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.header.name, "..mdl");
}

#[test]
fn without_modelname_the_model_is_named_after_the_qc() {
    // Without `-o`: beside the QC (its path without `.qc`), as Valve's tool run from the QC's
    // folder writes `nomodel.mdl` there.
    let qc = fixture("no_modelname/nomodel.qc");
    let (files, codes) = build_in(&qc, None);
    assert_eq!(count(&codes, "W0543"), 1, "{codes:?}");
    let files = files.expect("the model builds");
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(
        paths,
        [
            fixture("no_modelname/nomodel01.mdl"),
            fixture("no_modelname/nomodel.mdl")
        ]
    );
    let (group, main) = (&files[0].1, &files[1].1);
    let p = read::parse(main, None, &[group]).unwrap();
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    // `main` copies the QC path to `outname` before `ParseScript`; `WriteFile` strips `.qc`
    // and appends `.mdl`: the name of the QC (relative to its folder) with `.mdl`.
    assert_eq!(p.header.name, "nomodel.mdl");
    // §4.2 / `ExtractFileBase` of `nomodel01.mdl`.
    assert_eq!(p.seqgroups[1].name, "models\\nomodel01.mdl");
    assert_eq!(&group[8..29], b"models\\nomodel01.mdl\0");

    // With `-o DIR`: `DIR/nomodel.mdl`, the same bytes.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-heldout-nm");
    let _ = std::fs::remove_dir_all(&dir);
    let (files_o, _) = build_in(&qc, Some(&dir));
    let files_o = files_o.expect("the model builds");
    assert_eq!(files_o[1].0, dir.join("nomodel.mdl"));
    assert!(files_o[1].1 == *main && files_o[0].1 == *group);
}

/// Builds a `negative_time` fixture, which warns once (W0409) and whose `walk` sequence keeps
/// the frames at times 0 and 1 only. §8.6: LX from frame 0 (y 0) to frame 1 (y 4): x = −4 (see
/// the quoted-options test).
fn assert_walk_keeps_times_0_and_1(qc: &str) {
    let (files, codes) = build_in(&fixture(qc), None);
    assert_eq!(count(&codes, "W0409"), 1, "{codes:?}");
    let files = files.expect("the model builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    let walk = &p.sequences[0].desc;
    assert_eq!(walk.numframes, 2);
    assert_eq!(walk.linearmovement, [-4.0, 0.0, 0.0]);
}

#[test]
fn frames_past_time_2047_are_not_read() {
    // `Grab_Animation`: a bone line is stored when its time is within 0..2047 (the default
    // `frame` range, MAXSTUDIOANIMATIONS − 1); the frames at 0 and 1 are kept, 2048 is not.
    assert_walk_keeps_times_0_and_1("negative_time/late.qc");
}

#[test]
fn frames_at_negative_times_are_not_read() {
    // `Grab_Animation`: the line at time −1 is outside 0..2047 and not stored; the animation
    // starts at the smallest stored time, 0, and ends at 1 (`Shift_Animation`). With the frame
    // at −1 (y 7) it would be 3 frames and x = −4 − (−7) = 3.
    assert_walk_keeps_times_0_and_1("negative_time/negative_time.qc");
}

#[test]
fn a_frame_range_past_the_file_names_the_frames_goldsrc_keeps() {
    let (spec, mut sources, mut diags) = read(&fixture("negative_time/range.qc"));
    let files =
        spec.and_then(|spec| compile_goldsrc(&spec, &RealFs, None, &mut sources, &mut diags, None));
    let files = files.expect("the model builds");
    let clamped: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| d.code.as_str() == "W0406")
        .collect();
    assert_eq!(clamped.len(), 1, "{diags:?}");
    // the file has times -1 to 1; of the range -5..9 GoldSrc reads 0..2047, so 0 and 1
    assert!(
        clamped[0]
            .notes
            .iter()
            .any(|n| n.ends_with("has frames -1 to 1; frames 0 to 1 are used")),
        "{:?}",
        clamped[0].notes
    );
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.sequences[0].desc.numframes, 2);
}

#[test]
fn mirrorbone_names_a_bone_as_the_smd_spells_it_before_renamebone() {
    // `Grab_Nodes` marks `child` mirrored while reading each SMD; `SimplifyModel` renames it
    // to `arm` later. §7 / `Grab_Skeleton`: the mirrored default position is −(10, 0, 0).
    let (files, codes) = build_in(&fixture("mirror_rename/before.qc"), None);
    assert_eq!(count(&codes, "W0405"), 0, "{codes:?}");
    let files = files.expect("the model builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.bones[1].name, "arm");
    assert_eq!(p.bones[1].value[0], -10.0);
    // `Grab_Animation` mirrors the animation's `child` too: its x (−10) equals the default,
    // so the channel has no data (offset 0, §4.11); unmirrored it would differ by 20.
    assert_eq!(p.sequences[0].anims[0][1].offset[0], 0);
    // §8.1 `Build_Reference`: the corner at (10, 1, 0) on the child, whose world origin is
    // (−10, 0, 0), is at x = 20 in bone space (third vertex, lookup order).
    let main = &files[0].1;
    let m = &p.bodyparts[0].models[0].model;
    assert_eq!(f32_at(main, m.vertindex as usize + 2 * 12), 20.0);

    // `$mirrorbone "arm"`: no SMD has a node `arm` when it is read, so nothing is mirrored
    // (W0405 says so): default (10, 0, 0), the corner at x = 0.
    let (files, codes) = build_in(&fixture("mirror_rename/after.qc"), None);
    assert_eq!(count(&codes, "W0405"), 1, "{codes:?}");
    let files = files.expect("the model builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.bones[1].value[0], 10.0);
    let m = &p.bodyparts[0].models[0].model;
    assert_eq!(f32_at(&files[0].1, m.vertindex as usize + 2 * 12), 0.0);
}

#[test]
fn a_mirrorbone_after_every_smd_mirrors_nothing() {
    // `Grab_Nodes` runs as `$body` and `$sequence` read their files, with the `$mirrorbone`
    // names read so far: after both, `child` is mirrored nowhere. W0410 says so; default
    // (10, 0, 0) and the corner at x = 0, as in `after.qc` of the test above.
    let (files, codes) = build_in(&fixture("mirror_rename/late.qc"), None);
    assert_eq!(count(&codes, "W0410"), 1, "{codes:?}");
    let files = files.expect("the model builds");
    let p = read::parse(&files[0].1, None, &[]).unwrap();
    assert_eq!(p.bones[1].value[0], 10.0);
    let m = &p.bodyparts[0].models[0].model;
    assert_eq!(f32_at(&files[0].1, m.vertindex as usize + 2 * 12), 0.0);

    // Between the `$body` and the `$sequence`, Valve's tool would mirror idle.smd only; mdlc
    // mirrors everywhere (as `before.qc`) and W0410 says how it differs.
    let (files, codes) = build_in(&fixture("mirror_rename/between.qc"), None);
    assert_eq!(count(&codes, "W0410"), 1, "{codes:?}");
    let p = read::parse(&files.expect("the model builds")[0].1, None, &[]).unwrap();
    assert_eq!(p.bones[1].value[0], -10.0);
}
