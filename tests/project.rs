//! The TOML project format: reading (`project::toml::parse_toml`), writing
//! (`project::write::write_toml`) and the round trip between them.
//!
//! - `testdata/project/ok/*.toml`: valid files; they must read with no diagnostic.
//! - `testdata/project/err/*.toml`: one broken idea per file. The first line says what must be
//!   reported: `# expect: E0301 line 5, E0302 line 7` (1-based line of each primary span, every
//!   diagnostic listed). Their plain renderings are snapshots in `tests/snapshots/`.
//! - Round trips: hand-built specs with every field set, the creature model, and (when the
//!   shared corpus is present) every QC of the corpus after the QC front end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{corpus_dir, files_with_ext};

use std::collections::BTreeSet;
use std::f32::consts::{FRAC_PI_2, PI};
use std::path::{Path, PathBuf};

use mdlc::diag::{self, Code, Diagnostic, FileId, FileSpan, Sources, Span};
use mdlc::project::spec::*;
use mdlc::project::toml::parse_toml;
use mdlc::project::write::write_toml;
use mdlc::project::Target;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(ROOT).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads `text` as the model.toml at `path`.
fn read(
    path: &Path,
    text: &str,
    forced: Option<Target>,
) -> (Sources, Vec<Diagnostic>, Option<ProjectSpec>) {
    let mut sources = Sources::new();
    let id = sources.add(relative(path), text.to_string());
    let mut diags = Vec::new();
    let spec = parse_toml(path, id, &sources, forced, &mut diags);
    (sources, diags, spec)
}

fn read_ok(path: &Path, text: &str) -> ProjectSpec {
    let (sources, diags, spec) = read(path, text, None);
    let rendered: String = diags
        .iter()
        .map(|d| diag::render_plain(&sources, d))
        .collect();
    assert!(diags.is_empty(), "unexpected diagnostics:\n{rendered}");
    spec.expect("no diagnostics but no spec")
}

fn render(sources: &Sources, diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| diag::render_plain(sources, d))
        .collect()
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("testdata/project").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

// --- the creature ------------------------------------------------------------------------------

fn creature_path() -> PathBuf {
    Path::new(ROOT).join("testdata/models/creature/model.toml")
}

fn creature() -> ProjectSpec {
    let path = creature_path();
    read_ok(&path, &std::fs::read_to_string(&path).unwrap())
}

#[test]
fn creature_model_reads_with_the_values_written() {
    let spec = creature();
    let dir = Path::new(ROOT).join("testdata/models/creature");
    assert_eq!(spec.target.target(), Target::Source);
    assert!(matches!(spec.target, TargetChoice::Given(_)));
    assert_eq!(spec.name.as_ref().unwrap().value, "creature/creature.mdl");
    assert_eq!(spec.material_dirs.len(), 1);
    assert_eq!(spec.material_dirs[0].value, "models/creature/");
    assert_eq!(spec.surface_prop.as_ref().unwrap().value, "flesh");

    // two body parts: the body, and a horns group with a blank option
    assert_eq!(spec.body_parts.len(), 2);
    let body = &spec.body_parts[0];
    assert_eq!(body.name.value, "body");
    let [BodyOption::Model(m)] = body.options.as_slice() else {
        panic!("{:?}", body.options)
    };
    assert_eq!(m.file.path, dir.join("creature_reference.smd"));
    assert_eq!(m.file.written, "creature_reference.smd");
    assert!(!m.reverse);
    assert_eq!(m.scale, 1.0);
    let horns = &spec.body_parts[1];
    assert_eq!(horns.name.value, "horns");
    assert!(
        matches!(&horns.options[..], [BodyOption::Model(h), BodyOption::Blank(_)] if h.file.path == dir.join("creature_horns.smd"))
    );

    let tg = &spec.texture_groups[0];
    let rows: Vec<Vec<&str>> = tg
        .skins
        .iter()
        .map(|r| r.iter().map(|s| s.value.as_str()).collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["creature_skin", "creature_eyes", "creature_horn"],
            vec!["creature_skin_albino", "creature_eyes", "creature_horn"]
        ]
    );

    // `file` makes the implied animations @idle and @walk, with the defaults
    let names: Vec<&str> = spec
        .animations
        .iter()
        .map(|a| a.name.value.as_str())
        .collect();
    assert_eq!(names, ["@idle", "@walk"]);
    for a in &spec.animations {
        assert_eq!(a.fps, 30.0);
        assert!(a.looping);
        assert_eq!(a.rotation, [0.0, 0.0, FRAC_PI_2]);
        assert_eq!(a.origin, [0.0; 3]);
        assert_eq!(a.scale, 1.0);
        assert_eq!(a.frames, None);
    }
    assert_eq!(spec.animations[0].file.path, dir.join("creature_idle.smd"));
    assert!(spec.animations[0].motion.is_empty());
    let walk_motion: Vec<&str> = spec.animations[1]
        .motion
        .iter()
        .map(|m| m.value.as_str())
        .collect();
    assert_eq!(walk_motion, ["LY"]);

    assert_eq!(spec.sequences.len(), 2);
    let idle = &spec.sequences[0];
    assert_eq!(idle.name.value, "idle");
    assert_eq!(idle.animations[0].value, "@idle");
    let act = idle.activity.as_ref().unwrap();
    assert_eq!((act.name.value.as_str(), act.weight), ("ACT_IDLE", 1));
    assert_eq!(
        spec.sequences[1].activity.as_ref().unwrap().name.value,
        "ACT_WALK"
    );
    assert!(idle.flags.is_empty());

    let att = &spec.attachments[0];
    assert_eq!(
        (att.name.value.as_str(), att.bone.value.as_str()),
        ("mouth", "Bip01 Head")
    );
    assert_eq!(att.position, [6.0, 0.0, 3.0]);
}

#[test]
fn creature_round_trips() {
    let spec = creature();
    let dir = creature_path().parent().unwrap().to_path_buf();
    let text = write_toml(&spec, &dir);
    let back = read_ok(&creature_path(), &text);
    assert_eq!(back, spec, "written:\n{text}");
    // simple stays simple: the implied animations are written as `file` of their sequence
    assert!(!text.contains("[[animation]]"), "{text}");
    assert!(text.contains("file = \"creature_idle.smd\""), "{text}");
}

// --- reading: defaults, targets, paths --------------------------------------------------------

#[test]
fn defaults_apply_when_keys_are_absent() {
    let path = Path::new("/p/m/model.toml");
    let spec = read_ok(
        path,
        "[[animation]]\nname = \"a\"\nfile = \"a.smd\"\n\n[[sequence]]\nname = \"s\"\nanimations = [\"a\"]\n",
    );
    assert_eq!(spec.target, TargetChoice::Default(Target::Source));
    assert_eq!(spec.source, PathBuf::from("/p/m/model.toml"));
    let a = &spec.animations[0];
    assert_eq!(a.fps, DEFAULT_FPS);
    assert_eq!(a.rotation, DEFAULT_ROTATION);
    assert_eq!(a.scale, 1.0);
    assert!(!a.looping);
    assert_eq!(a.file.path, PathBuf::from("/p/m/a.smd"));
    let s = &spec.sequences[0];
    assert_eq!(s.group, 0);
    assert!(s.activity.is_none() && s.events.is_empty() && s.transition.is_none());
}

#[test]
fn forced_target_overrides_the_file() {
    let path = Path::new("m/model.toml");
    let text = "[model]\ntarget = \"source\"\n";
    let (_, d, spec) = read(path, text, Some(Target::GoldSrc));
    assert!(d.is_empty());
    let spec = spec.unwrap();
    assert!(matches!(&spec.target, TargetChoice::Given(t) if t.value == Target::GoldSrc));
    let (_, _, spec) = read(path, text, None);
    assert!(matches!(&spec.unwrap().target, TargetChoice::Given(t) if t.value == Target::Source));
    let (_, _, spec) = read(path, "", Some(Target::Source));
    assert!(matches!(&spec.unwrap().target, TargetChoice::Given(t) if t.value == Target::Source));
    let (_, _, spec) = read(path, "[model]\ntarget = \"goldsrc\"\n", None);
    assert_eq!(spec.unwrap().target.target(), Target::GoldSrc);
}

#[test]
fn paths_are_relative_to_the_toml_folder() {
    let path = Path::new("work/models/crate/model.toml");
    let spec = read_ok(
        path,
        "[model]\ntextures = [\"../textures\"]\n[[body]]\nname = \"b\"\noptions = [\"meshes\\\\ref.smd\", \"./x/../lod.smd\", { file = \"blank\" }]\n",
    );
    let files: Vec<&Path> = spec.body_parts[0]
        .options
        .iter()
        .map(|o| match o {
            BodyOption::Model(m) => m.file.path.as_path(),
            BodyOption::Blank(_) => Path::new("<blank>"),
        })
        .collect();
    // backslashes become slashes, `.` and `..` are resolved, `{ file = "blank" }` is a file
    assert_eq!(
        files,
        [
            Path::new("work/models/crate/meshes/ref.smd"),
            Path::new("work/models/crate/lod.smd"),
            Path::new("work/models/crate/blank"),
        ]
    );
    match &spec.body_parts[0].options[0] {
        BodyOption::Model(m) => assert_eq!(m.file.written, "meshes\\ref.smd"),
        BodyOption::Blank(_) => panic!(),
    }
    assert_eq!(
        spec.texture_dirs[0].value,
        PathBuf::from("work/models/textures")
    );
}

#[test]
fn rotation_is_in_degrees() {
    let path = Path::new("model.toml");
    let spec = read_ok(
        path,
        "[[animation]]\nname = \"a\"\nfile = \"a.smd\"\nrotation = [0, 0, 90]\n\
         [[animation]]\nname = \"b\"\nfile = \"b.smd\"\nrotation = [90, -45.0, 180]\n",
    );
    assert_eq!(spec.animations[0].rotation, DEFAULT_ROTATION);
    // by hand: 90° = π/2, -45° = -π/4, 180° = π (each rounded to the nearest f32)
    assert_eq!(
        spec.animations[1].rotation,
        [FRAC_PI_2, -std::f32::consts::FRAC_PI_4, PI]
    );
}

#[test]
fn a_sequence_file_implies_an_animation_in_declaration_order() {
    let path = Path::new("model.toml");
    let spec = read_ok(
        path,
        r#"
[[animation]]
name = "first"
file = "first.smd"

[[sequence]]
name = "run"
file = "run.smd"
fps = 24
loop = true
animation_flags = ["snap"]
flags = ["autoplay"]

[[animation]]
name = "last"
file = "last.smd"
"#,
    );
    let names: Vec<&str> = spec
        .animations
        .iter()
        .map(|a| a.name.value.as_str())
        .collect();
    assert_eq!(names, ["first", "@run", "last"]);
    let run = &spec.animations[1];
    assert_eq!(run.fps, 24.0);
    assert!(run.looping);
    assert_eq!(run.flags[0].value, "snap");
    assert_eq!(spec.sequences[0].flags[0].value, "autoplay");
    assert_eq!(spec.sequences[0].animations[0].value, "@run");
    // and the writer keeps that order
    let text = write_toml(&spec, Path::new(""));
    assert_eq!(read_ok(path, &text), spec, "{text}");
    let first = text.find("name = \"first\"").unwrap();
    let run_at = text.find("name = \"run\"").unwrap();
    let last = text.find("name = \"last\"").unwrap();
    assert!(first < run_at && run_at < last, "{text}");
}

#[test]
fn events_take_numbers_or_names() {
    let spec = read_ok(
        Path::new("model.toml"),
        r#"
[[sequence]]
name = "fire"
animations = ["a"]
events = [{ frame = 0, event = 1004, options = "x" }, { frame = 3, event = "AE_CL_PLAYSOUND" }]
"#,
    );
    let e = &spec.sequences[0].events;
    assert_eq!(
        (e[0].id.value.as_str(), e[0].frame, e[0].options.as_deref()),
        ("1004", 0, Some("x"))
    );
    assert_eq!(
        (e[1].id.value.as_str(), e[1].frame, e[1].options.as_deref()),
        ("AE_CL_PLAYSOUND", 3, None)
    );
}

// --- fixtures ----------------------------------------------------------------------------------

#[test]
fn ok_fixtures_read_without_diagnostics() {
    let files = fixtures("ok");
    assert!(files.len() >= 3);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let spec = read_ok(&path, &text);
        // and each one survives the round trip
        let back = read_ok(&path, &write_toml(&spec, path.parent().unwrap()));
        assert_eq!(back, spec, "{}", path.display());
    }
}

/// `# expect: E0301 line 5, E0302 line 7` → {(E0301, 5), (E0302, 7)}.
fn expectations(text: &str) -> BTreeSet<(String, usize)> {
    let first = text.lines().next().unwrap_or("");
    common::parse_expectations(first, "# expect:", first)
        .into_iter()
        .collect()
}

#[test]
fn err_fixtures_report_what_they_expect() {
    let files = fixtures("err");
    assert!(files.len() >= 10);
    let mut seen_codes = std::collections::HashSet::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let want = expectations(&text);
        let (sources, diags, spec) = read(path, &text, None);
        let got: BTreeSet<(String, usize)> = diags
            .iter()
            .map(|d| {
                let p = d.primary().unwrap();
                let (line, _) = sources.get(p.file).unwrap().line_col(p.span.start);
                (d.code.as_str().to_string(), line)
            })
            .collect();
        assert_eq!(
            got,
            want,
            "{}:\n{}",
            path.display(),
            render(&sources, &diags)
        );
        assert_eq!(
            diags.len(),
            want.len(),
            "{}: one diagnostic per expectation:\n{}",
            path.display(),
            render(&sources, &diags)
        );
        assert!(spec.is_none(), "{}: errors but a spec", path.display());
        seen_codes.extend(diags.iter().map(|d| d.code));
    }
    // every TOML code has a fixture
    for c in Code::ALL.iter().filter(|c| {
        c.as_str()[1..]
            .parse::<u32>()
            .is_ok_and(|n| (300..350).contains(&n))
    }) {
        assert!(seen_codes.contains(c), "no fixture produces {c}");
    }
}

#[test]
fn err_fixture_snapshots() {
    insta::glob!("../testdata/project/err", "*.toml", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let (sources, diags, _) = read(path, &text, None);
        insta::assert_snapshot!(render(&sources, &diags));
    });
}

// --- round trips of hand-built specs ------------------------------------------------------------

fn span() -> FileSpan {
    Span::new(0, 0).in_file(FileId(0))
}

fn s(v: &str) -> Spanned<String> {
    Spanned::new(v.to_string(), span())
}

fn fr(dir: &Path, written: &str) -> FileRef {
    FileRef {
        written: written.to_string(),
        path: resolve_path(dir, written),
        span: Loc(span()),
    }
}

fn cmd(words: &[&str]) -> AnimCommand {
    AnimCommand {
        keyword: s(words[0]),
        args: words[1..].iter().map(|w| s(w)).collect(),
    }
}

fn loc() -> Loc {
    Loc(span())
}

/// A `$model` block (the `flex` key) and one whose text needs care when quoted in TOML.
const FACE_TEXT: &str = "{\n\teyeball righteye \"Bip01 Head\" 1 2 3 \"eye\" 1 4 \"iris\" 0.5\n\tflexfile \"a.vta\" { defaultflex frame 0 }\n}";
const QUOTED_FACE_TEXT: &str = "localvar a // text with ''' and \r\n\tlocalvar b\t";

/// The block read as both front ends read it (VTA names relative to `dir`).
fn face_of(text: &str, dir: &Path) -> Option<mdlc::project::face::FaceSpec> {
    let mut d = Vec::new();
    let words = mdlc::project::face::words(text, span(), false);
    let f = mdlc::project::face::parse(&words, dir, &mut d);
    assert!(d.is_empty(), "{d:?}");
    Some(f)
}

/// A spec with every field set to something other than its default.
fn everything(qc_dir: &Path) -> ProjectSpec {
    let mut p = ProjectSpec::new(
        qc_dir.join("model.toml"),
        TargetChoice::Given(Spanned::new(Target::GoldSrc, span())),
    );
    p.name = Some(s("props/everything.mdl"));
    p.material_dirs = vec![s("models/a/"), s("models/b")];
    p.texture_dirs = vec![Spanned::new(qc_dir.join("tex"), span())];
    p.texture_groups = vec![
        TextureGroup {
            name: s("skinfamilies"),
            skins: vec![vec![s("a"), s("b")], vec![s("c"), s("d \"q\"")]],
        },
        TextureGroup {
            name: s("second"),
            skins: vec![vec![s("x")]],
        },
    ];
    p.texture_render_modes = vec![TextureRenderMode {
        texture: s("chrome.bmp"),
        mode: s("additive"),
    }];
    p.rename_materials = vec![(s("old"), s("new"))];
    p.gamma = Some(Spanned::new(1.8, span()));
    p.external_textures = true;
    p.body_parts = vec![
        BodyPart {
            name: s("body"),
            options: vec![
                BodyOption::Model(BodyModel {
                    file: fr(qc_dir, "ref.smd"),
                    name: "ref".into(),
                    reverse: false,
                    scale: 1.0,
                    origin_offset: [0.0; 3],
                    flex_block: None,
                    face: None,
                }),
                BodyOption::Blank(loc()),
                BodyOption::Model(BodyModel {
                    file: fr(qc_dir, "sub/../other ref.smd"),
                    // a stored name unlike the file's: written as `name` in the TOML
                    name: "models/other_ref".into(),
                    reverse: true,
                    scale: 0.1,
                    origin_offset: [1.5, -2.25, 1e-7],
                    flex_block: Some(s(FACE_TEXT)),
                    face: face_of(FACE_TEXT, qc_dir),
                }),
                BodyOption::Model(BodyModel {
                    // a file actually named `blank`
                    file: fr(qc_dir, "blank"),
                    name: "blank".into(),
                    reverse: false,
                    scale: 1.0,
                    origin_offset: [0.0; 3],
                    flex_block: Some(s(QUOTED_FACE_TEXT)),
                    face: face_of(QUOTED_FACE_TEXT, qc_dir),
                }),
            ],
            span: loc(),
        },
        BodyPart {
            name: s("empty"),
            options: vec![],
            span: loc(),
        },
    ];
    p.lods = vec![
        Lod {
            distance: Some(Spanned::new(12.5, span())),
            replace_models: vec![ReplaceModel {
                from: s("ref"),
                to: fr(qc_dir, "../lods/ref_lod1.smd"),
                name: "lods/ref_lod1".into(),
                reverse: true,
                scale: 2.0,
            }],
            remove_models: vec![s("gun")],
            replace_materials: vec![(s("skin"), s("skin_lod"))],
            remove_meshes: vec![s("eyes")],
            replace_bones: vec![(s("finger1"), s("hand"))],
            bone_tree_collapse: vec![s("hand")],
            facial: Some(false),
            use_shadowlod_materials: false,
            span: loc(),
        },
        Lod {
            distance: None,
            replace_models: vec![],
            remove_models: vec![],
            replace_materials: vec![],
            remove_meshes: vec![],
            replace_bones: vec![],
            bone_tree_collapse: vec![],
            facial: Some(true),
            use_shadowlod_materials: true,
            span: loc(),
        },
    ];
    p.define_bones = vec![
        DefineBone {
            name: s("root"),
            parent: None,
            position: [0.0, 0.0, 1.0],
            rotation_deg: [0.0, 90.0, -90.0],
            fixup: Some(([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])),
            span: loc(),
        },
        DefineBone {
            name: s("child"),
            parent: Some(s("root")),
            position: [3.0, 0.0, 0.0],
            rotation_deg: [0.0, 0.0, 0.0],
            fixup: None,
            span: loc(),
        },
    ];
    p.hierarchy = vec![(s("child"), s("root")), (s("free"), s(""))];
    p.rename_bones = vec![(s("Bip01"), s("bip_root"))];
    p.mirror_bones = vec![s("Bip01 L Hand")];
    p.always_collapse = vec![s("helper")];
    p.collapse_bones = true;
    p.bone_merge = vec![s("weapon_bone")];
    p.root_bone = Some(s("root"));
    p.pivots = vec![(Spanned::new(2, span()), s("child"))];
    p.controllers = vec![Controller {
        index: Spanned::new(4, span()),
        bone: s("jaw"),
        axis: s("XR"),
        start: -10.0,
        end: 30.5,
        span: loc(),
    }];
    p.attachments = vec![Attachment {
        name: s("muzzle"),
        bone: s("gun"),
        position: [10.0, -0.5, 3.25],
        flags: vec![s("absolute"), s("rigid")],
        rotate_deg: Some([0.0, 90.0, 180.0]),
        x_and_z_axes: Some([1.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
        span: loc(),
    }];
    p.hitbox_sets = vec![
        HitboxSet {
            name: s("default"),
            boxes: vec![Hitbox {
                group: 1,
                bone: s("head"),
                min: [-1.0, -2.0, -3.0],
                max: [1.0, 2.0, 3.0],
                name: Some(s("headbox")),
                span: loc(),
            }],
        },
        HitboxSet {
            name: s("cheap"),
            boxes: vec![Hitbox {
                group: 0,
                bone: s("root"),
                min: [0.0; 3],
                max: [4.0; 3],
                name: None,
                span: loc(),
            }],
        },
    ];
    p.hit_groups = vec![(Spanned::new(3, span()), s("head"))];
    p.eye_position = Some(Spanned::new([0.0, 0.0, 64.0], span()));
    p.illum_position = Some(Spanned::new([1.0, 2.0, 3.0], span()));
    p.max_eye_deflection = Some(Spanned::new(20.0, span()));
    p.bbox = Some(Spanned::new(
        [[-16.0, -16.0, 0.0], [16.0, 16.0, 72.0]],
        span(),
    ));
    p.cbox = Some(Spanned::new([[-1.0, -1.0, 0.0], [1.0, 1.0, 1.0]], span()));
    p.flags = Some(Spanned::new(16, span()));
    p.surface_prop = Some(s("metal"));
    p.contents = vec![s("solid"), s("grate")];
    p.static_prop = true;
    p.keyvalues = Some(s(
        "{\n\tprop_data\n\t{\n\t\t\"base\" \"Metal.Medium\"\n\t}\n}",
    ));
    p.header_flags = vec![s("opaque"), s("noforcedfade")];
    p.animations = vec![
        Animation {
            name: s("a1"),
            file: fr(qc_dir, "anims/a1.smd"),
            fps: 24.0,
            looping: true,
            frames: Some((2, 17)),
            origin: [1.0, 2.0, -3.5],
            rotation: [0.1, -0.2, FRAC_PI_2 + 0.3],
            scale: 2.54,
            motion: vec![s("LX"), s("LY")],
            start_loop: Some(3),
            flags: vec![s("snap"), s("fudgeloop")],
            commands: vec![
                cmd(&["subtract", "idle", "0"]),
                cmd(&["ikrule", "lhand", "touch", "a bone"]),
            ],
            span: loc(),
        },
        // implied by the sequence `walk`, written as its `file`
        Animation {
            name: s("@walk"),
            file: fr(qc_dir, "walk.smd"),
            fps: 15.0,
            looping: false,
            frames: None,
            origin: [0.0; 3],
            rotation: [0.0, 0.0, PI],
            scale: 1.0,
            motion: vec![s("LX")],
            start_loop: None,
            flags: vec![s("post")],
            commands: vec![cmd(&["walkframe", "12", "LX"])],
            span: loc(),
        },
        // an `@` name that cannot be written as a `file`: two sequences named `run`
        Animation {
            name: s("@run"),
            file: fr(qc_dir, "run.smd"),
            fps: DEFAULT_FPS,
            looping: false,
            frames: None,
            origin: [0.0; 3],
            rotation: DEFAULT_ROTATION,
            scale: 1.0,
            motion: vec![],
            start_loop: None,
            flags: vec![],
            commands: vec![],
            span: loc(),
        },
        Animation {
            name: s("@solo"),
            file: fr(qc_dir, "solo.smd"),
            fps: 10.0,
            looping: false,
            frames: None,
            origin: [0.0; 3],
            rotation: DEFAULT_ROTATION,
            scale: 1.0,
            motion: vec![],
            start_loop: None,
            flags: vec![],
            commands: vec![],
            span: loc(),
        },
    ];
    p.sequences = vec![
        Sequence {
            name: s("walk"),
            animations: vec![s("@walk")],
            blend_width: None,
            blends: vec![],
            activity: Some(Activity {
                name: s("ACT_WALK"),
                weight: 1,
            }),
            events: vec![],
            pivots: vec![],
            node: None,
            transition: None,
            fade_in: None,
            fade_out: None,
            exit_phase: None,
            flags: vec![s("loop")],
            extras: vec![],
            group: 0,
            span: loc(),
        },
        Sequence {
            name: s("aim"),
            animations: vec![s("a1"), s("walk"), s("a1"), s("@run")],
            blend_width: Some(Spanned::new(2, span())),
            blends: vec![
                Blend {
                    param: s("aim_yaw"),
                    min: -45.0,
                    max: 45.0,
                },
                Blend {
                    param: s("XR"),
                    min: 0.0,
                    max: 1.5,
                },
            ],
            activity: Some(Activity {
                name: s("ACT_RANGE_ATTACK1"),
                weight: 3,
            }),
            events: vec![
                Event {
                    id: s("1004"),
                    frame: 0,
                    options: Some("weapons/fire.wav".into()),
                },
                Event {
                    id: s("AE_CL_PLAYSOUND"),
                    frame: 5,
                    options: None,
                },
                Event {
                    id: s("007"),
                    frame: -1,
                    options: Some(String::new()),
                },
            ],
            pivots: vec![[0, 1, 2], [1, -5, 10]],
            node: Some(s("3")),
            transition: Some(Transition {
                entry: s("1"),
                exit: s("2"),
                reversible: true,
            }),
            fade_in: Some(0.2),
            fade_out: Some(0.3),
            exit_phase: Some(0.9),
            flags: vec![s("delta"), s("hidden")],
            extras: vec![
                cmd(&["addlayer", "walk"]),
                cmd(&["iklock", "lfoot", "1", "0"]),
            ],
            group: 2,
            span: loc(),
        },
        Sequence {
            name: s("run"),
            animations: vec![s("@run")],
            blend_width: None,
            blends: vec![],
            activity: None,
            events: vec![],
            pivots: vec![],
            node: None,
            transition: Some(Transition {
                entry: s("a"),
                exit: s("b"),
                reversible: false,
            }),
            fade_in: None,
            fade_out: None,
            exit_phase: None,
            flags: vec![],
            extras: vec![],
            group: 0,
            span: loc(),
        },
        Sequence {
            name: s("run"),
            animations: vec![s("@run")],
            blend_width: None,
            blends: vec![],
            activity: None,
            events: vec![],
            pivots: vec![],
            node: None,
            transition: None,
            fade_in: None,
            fade_out: None,
            exit_phase: None,
            flags: vec![],
            extras: vec![],
            group: 1,
            span: loc(),
        },
    ];
    p.pose_parameters = vec![PoseParameter {
        name: s("aim_yaw"),
        min: -45.0,
        max: 45.0,
        wrap: true,
        loop_range: Some(360.0),
        widened_from: 0,
    }];
    p.weight_lists = vec![WeightList {
        name: s("default"),
        weights: vec![
            BoneWeight {
                bone: s("root"),
                weight: 1.0,
                pos_weight: None,
            },
            BoneWeight {
                bone: s("arm"),
                weight: 0.25,
                pos_weight: Some(0.5),
            },
        ],
    }];
    p.sequence_groups = vec![s("anims01"), s("anims02")];
    p.sequence_group_size = Some(Spanned::new(1024, span()));
    p.skip_transitions = vec![vec![s("1"), s("2"), s("3")]];
    p.section_frames = Some(Spanned::new((30, 120), span()));
    p.anim_block_size = Some(Spanned::new(16, span()));
    p.bone_save_frames = vec![
        BoneSaveFrame {
            bone: s("hips"),
            position: true,
            rotation: true,
        },
        BoneSaveFrame {
            bone: s("arm"),
            position: false,
            rotation: true,
        },
    ];
    p.include_models = vec![s("humans/male_shared.mdl")];
    p.collision = Some(Collision {
        joints: true,
        file: fr(qc_dir, "phys.smd"),
        commands: vec![
            cmd(&["$mass", "10"]),
            cmd(&["$concave"]),
            cmd(&["$jointconstrain", "bone", "x", "limit", "-10", "10"]),
        ],
        scale: 2.5,
        span: loc(),
    });
    p.joint_surface_props = vec![(s("head"), s("flesh"))];
    p.collision_text = "animatedfriction {\"animfrictionmin\" \"1.000000\"  }\n".into();
    let prop = |name: &str, values: &[f32]| JiggleProp {
        name: s(name),
        values: values.to_vec(),
    };
    let group = |kind, props| JiggleGroup {
        kind: Spanned::new(kind, span()),
        props,
    };
    p.realign_bones = true;
    p.screen_align = vec![(s("glow"), false), (s("beam"), true)];
    p.force_realign = vec![(s("head"), [0.0, 0.0, 90.5])];
    p.jiggle_bones = vec![JiggleBone::new(
        s("hair"),
        vec![
            group(
                JiggleKind::Flexible,
                vec![
                    prop("length", &[20.0]),
                    prop("allow_length_flex", &[]),
                    prop("yaw_constraint", &[-30.5, 45.0]),
                ],
            ),
            group(
                JiggleKind::BaseSpring,
                vec![
                    prop("stiffness", &[350.0]),
                    prop("left_constraint", &[-0.2, 0.2]),
                ],
            ),
            group(JiggleKind::Boing, vec![prop("impact_angle", &[60.0])]),
        ],
    )];
    p.not_carried = vec![s("$jigglebone \"hair\" { … }"), s("$proceduralbones x")];
    p
}

/// What a TOML cannot carry: the file the spec was read from, how the target was decided
/// (a QC-inferred target comes back as given), and the `not_carried` list (written as comments).
fn comparable(mut spec: ProjectSpec, source: &Path) -> ProjectSpec {
    spec.source = source.to_path_buf();
    spec.not_carried.clear();
    if let TargetChoice::Inferred { target, because } = &spec.target {
        spec.target = TargetChoice::Given(Spanned {
            value: *target,
            span: because.span,
        });
    }
    spec
}

#[test]
fn every_field_round_trips() {
    let dir = Path::new("/work/q/models");
    let spec = everything(dir);
    let text = write_toml(&spec, dir);
    let toml_path = dir.join("model.toml");
    let back = read_ok(&toml_path, &text);
    assert_eq!(
        back,
        comparable(spec.clone(), &toml_path),
        "written:\n{text}"
    );

    // the things the reader cannot see are in the text as comments
    assert!(text.contains("# not carried over: $jigglebone \"hair\" { … }\n"));
    assert!(text.contains("# not carried over: $proceduralbones x\n"));
    // paths relative to the TOML's folder
    assert!(text.contains("\"../lods/ref_lod1.smd\""), "{text}");
    assert!(text.contains("{ file = \"blank\""), "{text}");
    assert!(text.contains("\"blank\""), "{text}");
    // the keyvalues block is a multi-line string, written as is
    assert!(text.contains("keyvalues = '''\n{\n\tprop_data\n"), "{text}");
    // `@walk` is the `file` of `walk`, `@run` the `file` of the first `run`; `@solo`, which no
    // sequence named `solo` plays, is an [[animation]]
    assert!(
        text.contains("[[sequence]]\nname = \"run\"\nfile = \"run.smd\""),
        "{text}"
    );
    assert!(text.contains("[[animation]]\nname = \"@solo\""), "{text}");
    assert!(!text.contains("name = \"@walk\""), "{text}");

    // a different folder for the TOML: paths change, the spec does not
    let elsewhere = Path::new("/work/out");
    let text2 = write_toml(&spec, elsewhere);
    let back2 = read_ok(&elsewhere.join("model.toml"), &text2);
    assert_eq!(
        back2,
        comparable(spec.clone(), &elsewhere.join("model.toml"))
    );
    assert!(text2.contains("\"../q/models/ref.smd\""), "{text2}");

    // relative folders too
    let rel = Path::new("q/models");
    let spec_rel = everything(rel);
    let text3 = write_toml(&spec_rel, Path::new("out"));
    assert_eq!(
        read_ok(Path::new("out/model.toml"), &text3),
        comparable(spec_rel, Path::new("out/model.toml"))
    );
}

fn anim(name: &str, dir: &Path) -> Animation {
    Animation {
        name: s(name),
        file: fr(dir, &format!("{name}.smd")),
        fps: DEFAULT_FPS,
        looping: false,
        frames: None,
        origin: [0.0; 3],
        rotation: DEFAULT_ROTATION,
        scale: 1.0,
        motion: vec![],
        start_loop: None,
        flags: vec![],
        commands: vec![],
        span: loc(),
    }
}

fn seq(name: &str, plays: &[&str]) -> Sequence {
    Sequence {
        name: s(name),
        animations: plays.iter().map(|p| s(p)).collect(),
        blend_width: None,
        blends: vec![],
        activity: None,
        events: vec![],
        pivots: vec![],
        node: None,
        transition: None,
        fade_in: None,
        fade_out: None,
        exit_phase: None,
        flags: vec![],
        extras: vec![],
        group: 0,
        span: loc(),
    }
}

/// Implied animations declared in another order than their sequences: the writer inlines
/// only those whose order it can keep.
#[test]
fn animation_order_is_kept_when_sequences_disagree() {
    let dir = Path::new("/m");
    let mut spec = ProjectSpec::new(
        dir.join("model.toml"),
        TargetChoice::Default(Target::Source),
    );
    spec.animations = vec![anim("@b", dir), anim("@a", dir), anim("c", dir)];
    spec.sequences = vec![seq("a", &["@a"]), seq("b", &["@b"]), seq("c", &["c"])];
    let text = write_toml(&spec, dir);
    assert_eq!(read_ok(&dir.join("model.toml"), &text), spec, "{text}");
    // `@b` is inlined; `@a` cannot be (it comes after `@b` but its sequence before `b`)
    assert!(text.contains("[[animation]]\nname = \"@a\""), "{text}");
    assert!(text.contains("name = \"b\"\nfile = \"@b.smd\""), "{text}");
}

#[test]
fn inferred_and_default_targets() {
    let dir = Path::new("/m");
    let mut spec = ProjectSpec::new(dir.join("x.qc"), TargetChoice::Default(Target::Source));
    let text = write_toml(&spec, dir);
    assert!(!text.contains("target"), "{text}");
    let back = read_ok(&dir.join("model.toml"), &text);
    assert_eq!(back.target, TargetChoice::Default(Target::Source));

    spec.target = TargetChoice::Inferred {
        target: Target::GoldSrc,
        because: s("$cdtexture"),
    };
    let text = write_toml(&spec, dir);
    assert!(text.contains("target = \"goldsrc\""), "{text}");
    let back = read_ok(&dir.join("model.toml"), &text);
    assert!(matches!(back.target, TargetChoice::Given(t) if t.value == Target::GoldSrc));
}

/// Radians written as degrees read back to the same `f32`, for many values.
#[test]
fn rotations_round_trip_exactly() {
    let dir = Path::new("/m");
    let mut spec = ProjectSpec::new(
        dir.join("model.toml"),
        TargetChoice::Default(Target::Source),
    );
    let mut x: u32 = 12345;
    let mut next = || {
        // xorshift: any f32 bit pattern that is finite
        loop {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let f = f32::from_bits(x);
            if f.is_finite() {
                return f;
            }
        }
    };
    let special = [
        0.0,
        -0.0,
        FRAC_PI_2,
        PI,
        -PI,
        1e-30,
        f32::MIN_POSITIVE,
        1e-45,
        3.0e38,
        90f32.to_radians(),
        (90.0f32 + 45.0).to_radians(),
    ];
    for i in 0..600 {
        let r = if i < special.len() {
            [special[i], special[i], special[i]]
        } else if i < 300 {
            // plausible angles
            [next() % 7.0, next() % 7.0, next() % 7.0]
        } else {
            [next(), next(), next()]
        };
        spec.animations.push(Animation {
            name: s(&format!("a{i}")),
            file: fr(dir, "a.smd"),
            fps: DEFAULT_FPS,
            looping: false,
            frames: None,
            origin: [0.0; 3],
            rotation: r,
            scale: 1.0,
            motion: vec![],
            start_loop: None,
            flags: vec![],
            commands: vec![],
            span: loc(),
        });
    }
    let text = write_toml(&spec, dir);
    let back = read_ok(&dir.join("model.toml"), &text);
    for (a, b) in spec.animations.iter().zip(&back.animations) {
        let bits = |r: [f32; 3]| r.map(f32::to_bits);
        assert_eq!(bits(a.rotation), bits(b.rotation), "{}", a.name.value);
    }
    // nice angles stay nice
    let mut one = ProjectSpec::new(
        dir.join("model.toml"),
        TargetChoice::Default(Target::Source),
    );
    let mut a = spec.animations[0].clone();
    a.rotation = [0.0, 0.0, PI];
    one.animations.push(a);
    let text = write_toml(&one, dir);
    assert!(text.contains("rotation = [0.0, 0.0, 180.0]"), "{text}");
}

// --- the corpus ----------------------------------------------------------------------------------

/// Every QC of the corpus, through the QC front end, written as TOML and read back: equal.
#[test]
fn every_corpus_qc_round_trips_through_toml() {
    let Some(dir) = corpus_dir() else { return };
    let files = files_with_ext(&dir, &["qc"]);
    assert!(files.len() >= 40, "only {} QC files", files.len());
    let mut failures = Vec::new();
    let (mut bodies, mut sequences, mut animations) = (0, 0, 0);
    for qc in &files {
        let mut sources = Sources::new();
        let mut diags = Vec::new();
        let tokens =
            mdlc::qc::tokens::tokenize(qc, &mdlc::load::fs::RealFs, &mut sources, &mut diags);
        let spec = mdlc::qc::commands::parse_project(qc, &tokens, None, &mut diags);
        let qc_dir = qc.parent().unwrap();
        bodies += spec.body_parts.len();
        sequences += spec.sequences.len();
        animations += spec.animations.len();
        let text = write_toml(&spec, qc_dir);
        let toml_path = qc_dir.join("model.toml");
        let (tsources, tdiags, back) = read(&toml_path, &text, None);
        let want = comparable(spec, &toml_path);
        match back {
            Some(back) if back == want => {}
            Some(back) => failures.push(format!(
                "{}: differs after the round trip\n{}",
                qc.display(),
                first_difference(&format!("{want:#?}"), &format!("{back:#?}"))
            )),
            None => failures.push(format!(
                "{}: the written TOML does not read:\n{}\n{text}",
                qc.display(),
                render(&tsources, &tdiags)
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!(
        "{} QC files: {bodies} body parts, {animations} animations, {sequences} sequences",
        files.len()
    );
    // the corpus has real content: an empty spec would round-trip trivially
    assert!(
        bodies >= 50 && sequences >= 200,
        "{bodies} bodies, {sequences} sequences"
    );
}

fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {i}: want `{x}`, got `{y}`");
        }
    }
    "lengths differ".into()
}

/// No input makes the reader panic: every prefix of every fixture, and a few odd documents.
#[test]
fn reader_never_panics_on_broken_input() {
    let mut texts: Vec<String> = Vec::new();
    for dir in ["ok", "err"] {
        for path in fixtures(dir) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.char_indices() {
                texts.push(text[..i].to_string());
            }
        }
    }
    texts.extend(
        [
            "body = 1",
            "[[sequence]]\nname = 1\nfile = []\nanimations = {}\n",
            "[model]\nbbox = [[1, 2], 3]\neye_position = [\"a\", 1, 2e99]\n",
            "[[hitbox_set]]\nboxes = [1, { }]\n",
            "[[lod]]\nshadow = \"yes\"\ndistance = \"far\"\n",
            "[[animation]]\nrotation = [1e308, 0, 0]\nframes = [9999999999, 1]\n",
            "a = 2024-01-01T00:00:00Z\n[model]\nname = 1979-05-27\n",
        ]
        .map(String::from),
    );
    for text in &texts {
        let (_, diags, spec) = read(Path::new("fuzz/model.toml"), text, None);
        // an error always comes with no spec, and no spec always comes with an error
        assert_eq!(spec.is_none(), diags.iter().any(|d| d.is_error()), "{text}");
    }
}
