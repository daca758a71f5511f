//! The QC command parser (`qc::commands::parse_project`) on both dialects.
//!
//! - `testdata/qc/ok/*.qc`: no error; files named `warn_*` show at least one warning, the others
//!   none.
//! - `testdata/qc/err/*.qc`: one broken idea each; the first line says what must be reported,
//!   `// expect: E0220 line 3` (1-based line of the primary span), and no other error may appear.
//! - Snapshots of the diagnostics of every fixture (plain and JSON) in `tests/snapshots/`.
//! - Unit tests: exact `ProjectSpec` fields for small QCs, values worked out by hand from
//!   `goldsrc.md` §6/§8.1, `qc-source.md` §1.6/§4 and `source-animation.md` §2.4.
//! - The corpus: every `.qc` under `../shared/corpus` parses with no error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{corpus_dir, files_with_ext};

use std::collections::{BTreeMap, BTreeSet};
use std::f32::consts::{FRAC_PI_2, PI};
use std::path::{Path, PathBuf};

use mdlc::diag::{self, render_plain, Code, Diagnostic, Severity, Sources};
use mdlc::load::fs::{MemFs, RealFs};
use mdlc::project::spec::{BodyOption, TargetChoice};
use mdlc::project::{ProjectSpec, Target};
use mdlc::qc::commands::parse_project;
use mdlc::qc::tokens::tokenize;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Parses one QC text given as `models/test/test.qc` in memory.
fn parse_with(text: &str, forced: Option<Target>) -> (Sources, Vec<Diagnostic>, ProjectSpec) {
    let main = Path::new("models/test/test.qc");
    let mut fs = MemFs::new();
    fs.add(main, text);
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let toks = tokenize(main, &fs, &mut sources, &mut diags);
    let spec = parse_project(main, &toks, forced, &mut diags);
    (sources, diags, spec)
}

fn parse(text: &str) -> (Vec<Diagnostic>, ProjectSpec) {
    let (_, d, s) = parse_with(text, None);
    (d, s)
}

/// Parses and asserts that nothing at all was reported.
fn clean(text: &str) -> ProjectSpec {
    let (sources, d, s) = parse_with(text, None);
    let all: String = d.iter().map(|d| render_plain(&sources, d)).collect();
    assert!(d.is_empty(), "unexpected diagnostics:\n{all}");
    s
}

fn codes(d: &[Diagnostic]) -> Vec<&'static str> {
    d.iter().map(|d| d.code.as_str()).collect()
}

fn close(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

// --- target --------------------------------------------------------------------------------

/// The inferred target and the command that decided it.
fn inferred(s: &ProjectSpec) -> (Target, String) {
    match &s.target {
        TargetChoice::Inferred { target, because } => (*target, because.value.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn target_is_inferred_from_the_first_decisive_command() {
    // `$cd` (both dialects) decides only when no command of one dialect follows: a Source QC
    // may begin with it (Scentus' pony QCs: `$cd`, `$scale`, `$modelname`, `$model`)
    let (_, s) = parse("$modelname \"a.mdl\"\n$cd \".\"\n$cdmaterials \"x\"\n");
    assert_eq!(inferred(&s), (Target::Source, "$cdmaterials".into()));
    let (_, s) = parse("$modelname \"a.mdl\"\n$cd \".\"\n$body b \"ref\"\n");
    assert_eq!(inferred(&s), (Target::GoldSrc, "$cd".into()));
    let (d, s) = parse("$modelname \"a.mdl\"\n$SurfaceProp metal\n$cdtexture \".\"\n");
    // the later HL1 command is read, with a warning
    assert_eq!(codes(&d), ["W0229"]);
    assert_eq!(inferred(&s), (Target::Source, "$SurfaceProp".into()));
}

#[test]
fn target_defaults_to_source_and_can_be_forced() {
    let s = clean("$modelname \"a.mdl\"\n$body b \"ref\"\n");
    assert_eq!(s.target, TargetChoice::Default(Target::Source));
    // forced GoldSrc: HL1 rules (`.smd` always appended, no Source option `faces`)
    let (_, d, s) = parse_with(
        "$cdmaterials \"x\"\n$body b \"ref.v2\"\n",
        Some(Target::GoldSrc),
    );
    assert!(matches!(s.target, TargetChoice::Given(ref t) if t.value == Target::GoldSrc));
    assert_eq!(codes(&d), ["W0229"]);
    let BodyOption::Model(m) = &s.body_parts[0].options[0] else {
        panic!()
    };
    assert_eq!(m.file.path, p("models/test/ref.v2.smd"));
}

// --- HL1 -----------------------------------------------------------------------------------

#[test]
fn hl1_sequence_takes_the_defaults_and_its_options() {
    // goldsrc.md §6.3: each sequence starts from $origin/$scale; rotate d → z = rad(d + 90);
    // $origin's fourth value → default z = rad(rot + 90): 90 → π.
    let s = clean(
        "$cd \"./meshes\"\n$scale 2\n$origin 1 2 3 90\n\
         $sequence \"idle\" \"anims/idle\" fps 15 loop ACT_IDLE 2 LX { event 1004 3 \"step.wav\" }\n\
         $sequence \"turn\" \"turn\" rotate 0 origin 4 5 6 scale 3 frames 2 8 node 1\n",
    );
    assert_eq!(s.sequences.len(), 2);
    let idle = &s.sequences[0];
    assert_eq!(idle.animations[0].value, "@idle");
    assert_eq!(idle.flags[0].value, "loop");
    let act = idle.activity.as_ref().unwrap();
    assert_eq!((act.name.value.as_str(), act.weight), ("ACT_IDLE", 2));
    assert_eq!(idle.events.len(), 1);
    assert_eq!(idle.events[0].id.value, "1004");
    assert_eq!(idle.events[0].frame, 3);
    assert_eq!(idle.events[0].options.as_deref(), Some("step.wav"));
    let a = &s.animations[0];
    assert_eq!(a.name.value, "@idle");
    assert_eq!(a.file.path, p("models/test/meshes/anims/idle.smd"));
    assert_eq!(a.fps, 15.0);
    assert_eq!(a.scale, 2.0);
    assert_eq!(a.origin, [1.0, 2.0, 3.0]);
    assert!(close(a.rotation, [0.0, 0.0, PI]));
    assert_eq!(a.motion[0].value, "LX");
    let t = &s.animations[1];
    // `rotate 0` → z = rad(90); `scale 3` replaces the $scale in HL1
    assert!(close(t.rotation, [0.0, 0.0, FRAC_PI_2]));
    assert_eq!(t.origin, [4.0, 5.0, 6.0]);
    assert_eq!(t.scale, 3.0);
    assert_eq!(t.frames, Some((2, 8)));
    assert_eq!(s.sequences[1].node.as_ref().unwrap().value, "1");
}

#[test]
fn hl1_mesh_origin_offset_is_the_last_sequences() {
    // goldsrc.md §8.1: $origin alone does not move meshes; the offset of the last $sequence
    // parsed before the $body does.
    let s = clean(
        "$cd \".\"\n$origin 9 9 9\n$body \"a\" \"a\"\n\
         $sequence \"s\" \"s\" origin 5 6 7\n$body \"b\" \"b\"\n\
         $sequence \"t\" \"t\"\n$bodygroup \"c\"\n{\nstudio \"c\" scale 4\nblank\n}\n",
    );
    let offs: Vec<[f32; 3]> = s
        .body_parts
        .iter()
        .map(|b| match &b.options[0] {
            BodyOption::Model(m) => m.origin_offset,
            BodyOption::Blank(_) => panic!(),
        })
        .collect();
    assert_eq!(offs, [[0.0; 3], [5.0, 6.0, 7.0], [9.0, 9.0, 9.0]]);
    assert!(matches!(s.body_parts[2].options[1], BodyOption::Blank(_)));
    let BodyOption::Model(c) = &s.body_parts[2].options[0] else {
        panic!()
    };
    assert_eq!(c.scale, 4.0);
}

#[test]
fn hl1_blends_groups_and_header() {
    let (d, s) = parse(
        "$cd \".\"\n$sequencegroupsize 64\n$sequence \"a\" \"a1\" \"a2\" blend XR -25 25 ACT_1010 1\n\
         $sequencegroup \"more\"\n$sequence \"b\" animation \"loop_smd\"\n\
         $attachment 0 \"Hand\" 1 2 3\n$hbox 3 \"Head\" -1 -1 -1 1 1 1\n$scale 2\n\
         $attachment 1 \"Hand\" 1 2 3 x y\n$controller mouth \"Jaw\" ZR 0 30\n\
         $texrendermode \"glass.bmp\" masked\n",
    );
    assert!(d.is_empty(), "{d:?}");
    let a = &s.sequences[0];
    assert_eq!(
        a.animations
            .iter()
            .map(|x| x.value.as_str())
            .collect::<Vec<_>>(),
        ["@a", "@a_1"]
    );
    assert_eq!(a.blends[0].param.value, "XR");
    assert_eq!((a.blends[0].min, a.blends[0].max), (-25.0, 25.0));
    assert_eq!(a.activity.as_ref().unwrap().name.value, "ACT_1010");
    assert_eq!(a.group, 0);
    assert_eq!(s.sequences[1].group, 1);
    assert_eq!(s.sequence_groups[0].value, "more");
    assert_eq!(s.sequence_group_size.as_ref().unwrap().value, 64);
    // `animation` names a file even when it looks like an option
    assert_eq!(s.animations[2].file.path, p("models/test/loop_smd.smd"));
    // HL1 keeps attachment and hitbox coordinates as typed (goldsrc.md §4.5)
    assert_eq!(s.attachments[1].position, [1.0, 2.0, 3.0]);
    assert_eq!(s.hitbox_sets[0].name.value, "default");
    assert_eq!(s.hitbox_sets[0].boxes[0].group, 3);
    assert_eq!(s.controllers[0].index.value, 4);
    assert_eq!(s.controllers[0].axis.value, "ZR");
    assert_eq!(s.texture_render_modes[0].mode.value, "masked");
}

#[test]
fn hl1_duplicate_sequence_is_a_warning_and_both_are_kept() {
    let (d, s) = parse("$cd \".\"\n$sequence \"run\" \"r1\"\n$sequence \"run\" \"r2\"\n");
    assert_eq!(codes(&d), ["W0222"]);
    assert_eq!(s.sequences.len(), 2);
    assert_eq!(s.sequences[1].animations[0].value, "@run#2");
    assert_eq!(s.animations[1].file.path, p("models/test/r2.smd"));
}

#[test]
fn two_cd_is_an_error() {
    let (d, _) = parse("$cd \".\"\n$cd \"x\"\n");
    assert_eq!(codes(&d), ["E0229"]);
}

// --- Source --------------------------------------------------------------------------------

#[test]
fn source_paths_follow_pushd_and_extensions() {
    let s = clean(
        "$cdmaterials \"models\\x\\\" \"models/y\"\n$pushd \"../anims\"\n$pushd \"sub\"\n\
         $sequence idle \"idle\"\n$popd\n$sequence walk \"walk.SMD\"\n$popd\n$popd\n\
         $body main \"ref\" reverse scale 2 faces 1 2 bias 3\n",
    );
    assert_eq!(s.material_dirs[0].value, "models\\x\\");
    assert_eq!(s.material_dirs.len(), 2);
    assert_eq!(s.animations[0].file.path, p("models/anims/sub/idle.smd"));
    assert_eq!(s.animations[1].file.path, p("models/anims/walk.SMD"));
    let BodyOption::Model(m) = &s.body_parts[0].options[0] else {
        panic!()
    };
    assert_eq!(m.file.path, p("models/test/ref.smd"));
    assert_eq!(m.file.written, "ref");
    assert!(m.reverse);
    assert_eq!(m.scale, 2.0);
    assert_eq!(m.origin_offset, [0.0; 3]);
}

/// Valve's Source compiler reads the word after a command's arguments as the next command
/// wherever it stands, so `$popd $pushd "b"` on one line (Garry's Mod player animations) pops
/// and pushes; a word that is no command there is still an error.
#[test]
fn a_command_after_the_arguments_of_another_on_its_line_is_read() {
    let s = clean(
        "$cdmaterials \"x\"\n$pushd \"a\"\n$sequence one \"one\"\n\
         $popd $pushd \"b\"\n$sequence two \"two\"\n$popd\n",
    );
    assert_eq!(s.animations[0].file.path, p("models/test/a/one.smd"));
    assert_eq!(s.animations[1].file.path, p("models/test/b/two.smd"));
    let (d, _) = parse("$cdmaterials \"x\"\n$pushd \"a\"\n$popd pushd \"b\"\n");
    assert_eq!(codes(&d), ["E0235"]);
}

/// A `$cd` to a Windows folder of the author's (`C:\\…`, or `\\…` from the drive's root) is read
/// from the QC's folder or the nearest folder above it whose path ends the same way, with W0240
/// (on a machine that is not Windows, where that folder cannot exist); other folders are kept.
#[cfg(not(windows))]
#[test]
fn a_windows_cd_is_read_from_the_folder_that_ends_the_same_way() {
    // the QC is `models/test/test.qc`: `models` is one folder up
    for cd in ["C:\\qc_author_box\\models", "\\qc_author_box\\Models"] {
        let (d, s) = parse(&format!(
            "$cd \"{cd}\"\n$cdmaterials \"x\"\n$body main \"ref\"\n"
        ));
        assert_eq!(codes(&d), ["W0240"], "{cd}");
        let BodyOption::Model(m) = &s.body_parts[0].options[0] else {
            panic!()
        };
        assert_eq!(m.file.path, p("models/ref.smd"), "{cd}");
    }
    // no folder above ends the same way: kept as written (the file is then not found)
    let (d, s) = parse("$cd \"C:\\qc_author_box\\zzz\"\n$cdmaterials \"x\"\n$body main \"ref\"\n");
    assert!(codes(&d).is_empty());
    let BodyOption::Model(m) = &s.body_parts[0].options[0] else {
        panic!()
    };
    assert_eq!(m.file.path, p("models/test/C:/qc_author_box/zzz/ref.smd"));
}

#[test]
fn source_rotation_defaults_and_options() {
    // source-animation.md §2.4: $upaxis y → (π/2, 0, π/2); $origin … 90 → z = π;
    // `angles 10 20 30` → (rad 10, rad 20, rad 120), overwriting $upaxis; `rotate -90` → z = 0.
    let (d, s) = parse(
        "$cdmaterials \"x\"\n$upaxis y\n$origin 1 2 3 90\n$scale 2\n\
         $animation a \"a\"\n$animation b \"b\" angles 10 20 30 scale 3\n\
         $animation c \"c\" rotate -90 origin 0 0 5\n$upaxis -x\n$animation e \"e\"\n",
    );
    assert!(d.is_empty(), "{d:?}");
    let r = |i: usize| s.animations[i].rotation;
    assert!(close(r(0), [FRAC_PI_2, 0.0, PI]));
    assert!(close(
        r(1),
        [10f32.to_radians(), 20f32.to_radians(), 120f32.to_radians()]
    ));
    assert!(close(r(2), [FRAC_PI_2, 0.0, 0.0]));
    assert!(close(r(3), [0.0, -FRAC_PI_2, PI]));
    assert_eq!(s.animations[0].origin, [1.0, 2.0, 3.0]);
    assert_eq!(s.animations[2].origin, [0.0, 0.0, 5.0]);
    // the `scale` option multiplies the $scale in force (qc-source.md §1.6)
    assert_eq!(s.animations[0].scale, 2.0);
    assert_eq!(s.animations[1].scale, 6.0);
}

#[test]
fn source_sequence_items_and_implied_animations() {
    // qc-source.md §4.1: options after the first animation apply to it; implied animations
    // 2…n take its fps, origin, rotation, scale, motion and commands, not its frames or loop.
    let s = clean(
        "$cdmaterials \"x\"\n$animation a_idle \"idle\"\n\
         $poseparameter move_x -1 1\n$poseparameter move_y -2 2\n\
         $sequence s \"one\" \"two\" fps 12 LX loop frames 1 5 subtract a_idle 0 \
         activity ACT_RUN 1 node standing fadein 0.5 hidden\n\
         $sequence b a_idle a_idle a_idle a_idle blendwidth 2 blend move_x -1 1 blend move_y -2 2\n",
    );
    let seq = &s.sequences[0];
    assert_eq!(
        seq.animations
            .iter()
            .map(|a| a.value.as_str())
            .collect::<Vec<_>>(),
        ["@s", "@s_1"]
    );
    assert_eq!(seq.activity.as_ref().unwrap().name.value, "ACT_RUN");
    assert_eq!(seq.node.as_ref().unwrap().value, "standing");
    assert_eq!(seq.fade_in, Some(0.5));
    assert_eq!(seq.flags[0].value, "hidden");
    let one = &s.animations[1];
    let two = &s.animations[2];
    assert_eq!(
        (one.fps, one.looping, one.frames),
        (12.0, true, Some((1, 5)))
    );
    assert_eq!(one.commands[0].keyword.value, "subtract");
    assert_eq!(
        one.commands[0]
            .args
            .iter()
            .map(|a| a.value.as_str())
            .collect::<Vec<_>>(),
        ["a_idle", "0"]
    );
    assert_eq!((two.fps, two.looping, two.frames), (12.0, false, None));
    assert_eq!(two.motion[0].value, "LX");
    assert_eq!(two.commands, one.commands);
    let b = &s.sequences[1];
    assert_eq!(b.animations.len(), 4);
    assert_eq!(b.animations[0].value, "a_idle");
    assert_eq!(b.blend_width.as_ref().unwrap().value, 2);
    assert_eq!(b.blends.len(), 2);
    assert_eq!(b.blends[1].param.value, "move_y");
}

#[test]
fn source_amendments() {
    let s = clean(
        "$cdmaterials \"x\"\n$sequence idle \"idle\" fps 10\n$append idle { event 5 1 } fps 20\n\
         $continue idle\n{\n  snap\n}\n\
         $animation w \"w\" { alignto idle }\n$prepend w { walkframe 10 LX }\n\
         $cmdlist c { numframes 4 }\n$animation z \"z\" cmdlist c\n",
    );
    assert_eq!(s.sequences[0].events.len(), 1);
    assert_eq!(s.animations[0].fps, 20.0);
    assert_eq!(s.sequences[0].flags[0].value, "snap");
    let w = &s.animations[1];
    assert_eq!(w.commands[0].keyword.value, "walkframe");
    assert_eq!(w.commands[1].keyword.value, "alignto");
    assert_eq!(s.animations[2].commands[0].keyword.value, "numframes");
}

#[test]
fn source_duplicate_sequence_is_an_error() {
    let (d, _) = parse("$cdmaterials \"x\"\n$animation idle \"i\"\n$sequence IDLE idle\n");
    assert_eq!(codes(&d), ["E0230"]);
}

#[test]
fn source_scale_applies_to_attachments_and_hitboxes() {
    let s = clean(
        "$cdmaterials \"x\"\n$scale 2\n$attachment \"eyes\" \"head\" 1 2 3 rigid\n\
         $hbox 0 \"head\" -1 -1 -1 1 1 1 \"hb\"\n$hboxset \"second\"\n$hbox 1 \"pelvis\" 0 0 0 1 1 1\n",
    );
    assert_eq!(s.attachments[0].position, [2.0, 4.0, 6.0]);
    assert_eq!(s.attachments[0].flags[0].value, "rigid");
    assert_eq!(s.hitbox_sets.len(), 2);
    assert_eq!(s.hitbox_sets[0].boxes[0].max, [2.0, 2.0, 2.0]);
    assert_eq!(s.hitbox_sets[0].boxes[0].name.as_ref().unwrap().value, "hb");
    assert_eq!(s.hitbox_sets[1].name.value, "second");
}

#[test]
fn source_blocks() {
    let s = clean(
        "$cdmaterials \"x\"\n$body main \"ref\"\n$texturegroup skins\n{\n { \"a\" \"b\" }\n { \"c\" \"d\" }\n}\n\
         $lod 20\n{\n replacemodel \"Ref.smd\" \"lod1\" reverse\n removemodel \"x\"\n replacematerial a b\n nofacial\n}\n\
         $shadowlod\n{\n use_shadowlod_materials\n}\n\
         $keyvalues\n{\n  prop_data { \"base\" \"Wood\" }\n}\n\
         $definebone \"root\" \"\" 1 2 3 0 90 0\n$weightlist up \"spine\" 1 posweight 0.5 \"head\" 0\n\
         $poseparameter aim -45 45 loop 90\n$contents grate monster\n",
    );
    let t = &s.texture_groups[0];
    assert_eq!(t.skins.len(), 2);
    assert_eq!(t.skins[1][1].value, "d");
    let lod = &s.lods[0];
    assert_eq!(lod.distance.as_ref().unwrap().value, 20.0);
    assert_eq!(lod.replace_models[0].from.value, "Ref");
    assert_eq!(lod.replace_models[0].to.path, p("models/test/lod1.smd"));
    assert!(lod.replace_models[0].reverse);
    assert_eq!(lod.facial, Some(false));
    assert!(s.lods[1].distance.is_none() && s.lods[1].use_shadowlod_materials);
    assert_eq!(
        s.keyvalues.as_ref().unwrap().value,
        "{\nprop_data { \"base\" \"Wood\" }\n}"
    );
    let b = &s.define_bones[0];
    assert!(b.parent.is_none());
    assert_eq!(
        (b.position, b.rotation_deg),
        ([1.0, 2.0, 3.0], [0.0, 90.0, 0.0])
    );
    let w = &s.weight_lists[0];
    assert_eq!(w.weights.len(), 2);
    assert_eq!(w.weights[0].pos_weight, Some(0.5));
    assert_eq!(s.pose_parameters[0].loop_range, Some(90.0));
    assert_eq!(
        s.contents
            .iter()
            .map(|c| c.value.as_str())
            .collect::<Vec<_>>(),
        ["grate", "monster"]
    );
}

#[test]
fn unknown_command_suggests_the_nearest() {
    let (d, _) = parse("$cdmaterials \"x\"\n$sequnce idle \"idle\"\n");
    assert_eq!(codes(&d), ["E0220"]);
    assert!(
        d[0].notes
            .iter()
            .any(|n| n == "help: did you mean `$sequence`?"),
        "{:?}",
        d[0].notes
    );
}

/// A block nested in a skin is one mistake: one error, the block skipped to its `}` (before,
/// every nested `{` was an error, each printing the whole line: quadratic output).
#[test]
fn a_deeply_nested_skin_block_is_one_error() {
    let deep = format!(
        "$cd \".\"\n$texturegroup \"s\" {{ {{ {} a.bmp {} }} {{ b.bmp }} }}\n",
        "{ ".repeat(500),
        "} ".repeat(500)
    );
    let (d, spec) = parse(&deep);
    assert_eq!(codes(&d), ["E0227"]);
    // the skin goes on after the block: its own row, then the next one
    let rows: Vec<usize> = spec.texture_groups[0].skins.iter().map(Vec::len).collect();
    assert_eq!(rows, [0, 1]);
}

#[test]
fn not_carried_commands_warn_and_are_listed() {
    let (d, s) = parse(
        "$cdmaterials \"x\"\n$minlod 1\n\
         $fakevta \"f\"\n$declareanimation \"a\"\n",
    );
    assert_eq!(codes(&d), ["W0220", "W0220", "W0241"]);
    assert_eq!(
        s.not_carried
            .iter()
            .map(|n| n.value.as_str())
            .collect::<Vec<_>>(),
        ["$minlod", "$fakevta", "$declareanimation"]
    );
    assert_eq!(d[0].message, "`$minlod` is not supported yet; ignored");
}

/// `$insertbone child subparent parent` re-parents the child and inserts nothing, as the 2006
/// SDK's `EnforceHierarchy` does (its insertion is commented out): a `$hierarchy` entry, and
/// W0238 on the bone that is not inserted.
#[test]
fn insertbone_reparents_the_child() {
    let (d, s) = parse("$cdmaterials \"x\"\n$insertbone \"tail\" \"tail_root\" \"hips\"\n");
    assert_eq!(codes(&d), ["W0238"]);
    assert!(d[0].message.contains("`tail_root`"), "{}", d[0].message);
    let h: Vec<(&str, &str)> = s
        .hierarchy
        .iter()
        .map(|(c, p)| (c.value.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(h, [("tail", "hips")]);
    assert!(s.not_carried.is_empty());
}

#[test]
fn a_word_for_a_number_is_an_error_with_the_valve_reading() {
    let (d, s) = parse("$cd \".\"\n$scale two\n");
    assert_eq!(codes(&d), ["E0222"]);
    assert!(d[0].notes[0].contains("as 0"));
    // parsing goes on with 0, as Valve's tools do
    assert_eq!(s.body_parts.len(), 0);
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        "{",
        "}",
        "$sequence",
        "$sequence a {",
        "$bodygroup",
        "$bodygroup x {",
        "$lod",
        "$texturegroup t { {",
        "$append",
        "$prepend x",
        "\"quoted\"",
        "$model a b {",
        "$collisionmodel x {",
        "$keyvalues {",
        "$weightlist a posweight 1",
        "$hbox 0",
        "$sequence a b frames",
        "$animation a b { ikrule",
        "$definebone a \"\" 1 2 3 4 5 6 7",
    ] {
        for forced in [None, Some(Target::GoldSrc), Some(Target::Source)] {
            let _ = parse_with(text, forced);
        }
    }
}

// --- fixtures ------------------------------------------------------------------------------

fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(ROOT).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("testdata/qc").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "qc"))
        .collect();
    v.sort();
    v
}

/// Parses a fixture as `mdlc` would, naming it by its path relative to the crate.
fn check(path: &Path) -> (Sources, Vec<Diagnostic>, ProjectSpec) {
    let rel = PathBuf::from(relative(path));
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let toks = tokenize(&rel, &RealFs, &mut sources, &mut diags);
    let spec = parse_project(&rel, &toks, None, &mut diags);
    (sources, diags, spec)
}

fn expectations(path: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or_default();
    common::parse_expectations(first, "// expect:", &relative(path))
}

fn render(sources: &Sources, diags: &[Diagnostic]) -> String {
    let plain: String = diags.iter().map(|d| render_plain(sources, d)).collect();
    let json: Vec<String> = diags
        .iter()
        .map(|d| diag::render_json(sources, d))
        .collect();
    format!(
        "--- plain ---\n{}--- json ---\n{}\n",
        plain,
        json.join("\n")
    )
}

#[test]
fn ok_fixtures_have_no_error() {
    let files = fixtures("ok");
    assert!(files.len() >= 10, "only {} ok fixtures", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let (sources, diags, _) = check(path);
        failures.extend(common::ok_fixture_problems(path, &sources, &diags));
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn err_fixtures_report_what_they_expect() {
    let files = fixtures("err");
    assert!(files.len() >= 16, "only {} err fixtures", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let (sources, diags, _) = check(path);
        failures.extend(common::err_fixture_problems(
            &relative(path),
            &expectations(path),
            &sources,
            &diags,
        ));
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Codes of this parser: E0220-E0299, W0220-W0299.
fn is_command_code(c: Code) -> bool {
    c.as_str()[1..]
        .parse::<u32>()
        .is_ok_and(|n| (220..300).contains(&n))
}

#[test]
fn every_command_code_has_a_fixture() {
    let mut seen: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for dir in ["ok", "err"] {
        for path in fixtures(dir) {
            let (_, diags, _) = check(&path);
            for d in diags {
                seen.entry(d.code.as_str())
                    .or_default()
                    .push(relative(&path));
            }
        }
    }
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| is_command_code(**c))
        .map(|c| c.as_str())
        .filter(|c| !seen.contains_key(c))
        .collect();
    assert!(missing.is_empty(), "codes without a fixture: {missing:?}");
    let expected: BTreeSet<String> = fixtures("err")
        .iter()
        .flat_map(|p| expectations(p))
        .map(|(c, _)| c)
        .collect();
    let unexpected: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| is_command_code(**c) && c.severity() == Severity::Error)
        .map(|c| c.as_str())
        .filter(|c| !expected.contains(*c))
        .collect();
    assert!(
        unexpected.is_empty(),
        "error codes no err fixture expects: {unexpected:?}"
    );
}

#[test]
fn snapshots_ok() {
    insta::glob!("../testdata/qc/ok", "*.qc", |path| {
        let (sources, diags, _) = check(path);
        insta::assert_snapshot!(render(&sources, &diags));
    });
}

#[test]
fn snapshots_err() {
    insta::glob!("../testdata/qc/err", "*.qc", |path| {
        let (sources, diags, _) = check(path);
        insta::assert_snapshot!(render(&sources, &diags));
    });
}

#[test]
fn ok_fixture_hl1_model_reads_everything() {
    let (_, _, s) = check(&Path::new(ROOT).join("testdata/qc/ok/hl1_model.qc"));
    assert_eq!(s.target.target(), Target::GoldSrc);
    assert_eq!(s.sequences.len(), 4);
    assert_eq!(s.body_parts.len(), 2);
    assert_eq!(s.body_parts[1].options.len(), 3);
    assert_eq!(s.texture_groups[0].skins.len(), 2);
    assert_eq!(s.sequences[3].group, 1);
    assert!(s.external_textures);
    assert_eq!(s.texture_dirs[0].value, p("testdata/qc/ok/textures"));
    assert_eq!(s.mirror_bones.len(), 1);
    assert_eq!(s.pivots[0].1.value, "Bip01 L Foot");
    assert_eq!(s.sequences[1].pivots, vec![[0, 0, 10]]);
    // the body follows `die` (origin 1 2 3): goldsrc.md §8.1
    let BodyOption::Model(m) = &s.body_parts[0].options[0] else {
        panic!()
    };
    assert_eq!(m.origin_offset, [1.0, 2.0, 3.0]);
    assert_eq!(m.scale, 1.5);
    assert_eq!(m.file.path, p("testdata/qc/ok/meshes/reference.smd"));
}

// --- corpus --------------------------------------------------------------------------------

fn parse_file(path: &Path) -> (Sources, Vec<Diagnostic>, ProjectSpec) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let toks = tokenize(path, &RealFs, &mut sources, &mut diags);
    let spec = parse_project(path, &toks, None, &mut diags);
    (sources, diags, spec)
}

#[test]
fn every_corpus_qc_parses_without_error() {
    let Some(dir) = corpus_dir() else { return };
    let files = files_with_ext(&dir, &["qc"]);
    // 42 HL1 QCs in goldsrc-hl1, 2 in gs-*, 11 Source main QCs (SOURCES.md)
    assert!(files.len() >= 50, "only {} QC files", files.len());
    let mut failures = Vec::new();
    let mut not_carried: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let (sources, diags, spec) = parse_file(f);
        for d in diags.iter().filter(|d| d.is_error()) {
            failures.push(render_plain(&sources, d));
        }
        let rel = f
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let want = if rel.starts_with("goldsrc-hl1") || rel.starts_with("gs-") {
            Target::GoldSrc
        } else {
            Target::Source
        };
        if spec.target.target() != want || !matches!(spec.target, TargetChoice::Inferred { .. }) {
            failures.push(format!("{rel}: target {:?}", spec.target));
        }
        for n in &spec.not_carried {
            *not_carried.entry(n.value.to_ascii_lowercase()).or_default() += 1;
        }
    }
    eprintln!("not carried on the corpus: {not_carried:?}");
    assert!(
        failures.is_empty(),
        "{} errors:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_facts() {
    let Some(dir) = corpus_dir() else { return };
    // gs-man/models/man/man.qc: 3 `$sequence` lines, `$body` + `$bodygroup "heads"` (3 heads),
    // 6 `$hbox`, 2 `$attachment`, 3 `$controller`; "arms_up" names 4 SMDs.
    let (_, _, man) = parse_file(&dir.join("gs-man/models/man/man.qc"));
    assert_eq!(man.sequences.len(), 3);
    assert_eq!(man.body_parts.len(), 2);
    assert_eq!(man.body_parts[1].options.len(), 3);
    assert_eq!(man.hitbox_sets[0].boxes.len(), 6);
    assert_eq!(man.attachments.len(), 2);
    assert_eq!(man.controllers.len(), 3);
    assert_eq!(man.sequences[2].animations.len(), 4);
    assert_eq!(man.sequences[1].events.len(), 2);
    assert_eq!(man.sequence_group_size.as_ref().unwrap().value, 64);
    // sdk-male06: 1 `$model`; `$sequence` lines: 16 in male_shared_xsi_sdk.qci, 6 in
    // body_poses_lean.qci (others commented out), 36 in weaponanims_shared_sdk.qci, 1 in
    // ragdoll.qci = 59; 5 `$lod` + `$shadowlod`; 2 `$weightlist` in the main QC.
    let male =
        dir.join("sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk/male_sdk/male_06_sdk.qc");
    let (_, _, m) = parse_file(&male);
    assert_eq!(m.body_parts.len(), 1);
    assert_eq!(m.sequences.len(), 59);
    assert_eq!(m.lods.len(), 6);
    assert!(m.lods[5].distance.is_none());
    assert_eq!(m.lods[0].replace_models[0].from.value, "Male_06_reference");
    // two in the main QC, one in standardhierarchy.qci
    assert_eq!(m.always_collapse.len(), 3);
    assert_eq!(m.always_collapse[0].value, "Valvebiped.bip01");
    // 6 in standardhierarchy.qci, 4 in male_shared_xsi_sdk.qci
    assert_eq!(m.hierarchy.len(), 10);
    assert_eq!(m.hierarchy[0].1.value, "");
    assert!(m.collision.as_ref().unwrap().joints);
    let walk = m
        .sequences
        .iter()
        .find(|s| s.name.value == "walk_all")
        .unwrap();
    assert_eq!(walk.animations.len(), 9);
    // `$animation a_WalkS WalkS …` is in the pushd "../male_animations_sdk" folder
    let a = m
        .animations
        .iter()
        .find(|a| a.name.value == "a_WalkS")
        .unwrap();
    assert!(
        a.file
            .path
            .ends_with("humans_sdk/male_animations_sdk/WalkS.smd"),
        "{:?}",
        a.file.path
    );
    assert!(a.looping);
}

/// `walkalign` needs a motion type before its frames: Valve's compiler stops with "missing
/// controls on walkalign", and mdlc reports the word that is not one.
#[test]
fn walkalign_without_a_motion_type_is_an_error() {
    let (d, _) = parse("$cdmaterials \"x\"\n$animation a \"a.smd\" { walkalign 3 b 0 3 }\n");
    assert_eq!(codes(&d), ["E0228"], "{d:?}");
    let (d, _) = parse("$cdmaterials \"x\"\n$animation a \"a.smd\" { walkalign 3 b LX 0 3 }\n");
    assert!(codes(&d).is_empty(), "{d:?}");
}
