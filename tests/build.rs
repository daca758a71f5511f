//! Building a whole model (`mdlc::build::build_model`) from hand-made `ProjectSpec`s over in-memory
//! file trees of tiny SMDs. Expected values are worked out by hand from the merge rules:
//! GoldSrc `goldsrc.md` §8.2-§8.5, Source `source-animation.md` §2.2-§2.4, `qc-source.md` §4.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::corpus_dir;

use std::path::PathBuf;

use mdlc::build::build_model;
use mdlc::diag::{Diagnostic, FileId, FileSpan, Sources, Span};
use mdlc::ir::model::{AnimId, BodyOption, MaterialId, MeshId, Model};
use mdlc::ir::{BoneId, Pose};
use mdlc::load::fs::MemFs;
use mdlc::project::spec::{
    self, Attachment, BodyModel, BodyOption as SpecOption, BodyPart, DefineBone, FileRef, Lod,
    ProjectSpec, ReplaceModel, Sequence, Spanned, Target, TargetChoice, TextureGroup,
};

/// The project file: every spanned value of a test spec is a word appended to this text, so each
/// span is real and points into file 0.
struct P {
    text: String,
}

const PROJECT: FileId = FileId(0);

impl P {
    fn new() -> Self {
        P {
            text: String::new(),
        }
    }

    fn span(&mut self, word: &str) -> FileSpan {
        let start = self.text.len() as u32;
        self.text.push_str(word);
        let end = self.text.len() as u32;
        self.text.push('\n');
        Span::new(start, end).in_file(PROJECT)
    }

    fn s(&mut self, word: &str) -> Spanned<String> {
        let at = self.span(&format!("\"{word}\""));
        Spanned::new(word.to_string(), at)
    }

    fn file(&mut self, path: &str) -> FileRef {
        FileRef {
            written: path.to_string(),
            path: PathBuf::from(path),
            span: spec::Loc(self.span(&format!("\"{path}\""))),
        }
    }

    fn body(&mut self, name: &str, files: &[&str]) -> BodyPart {
        let name = self.s(name);
        let options = files
            .iter()
            .map(|f| {
                if *f == "blank" {
                    SpecOption::Blank(spec::Loc(self.span("blank")))
                } else {
                    SpecOption::Model(BodyModel {
                        file: self.file(f),
                        name: f.to_string(),
                        reverse: false,
                        scale: 1.0,
                        origin_offset: [0.0; 3],
                        flex_block: None,
                        face: None,
                    })
                }
            })
            .collect();
        BodyPart {
            span: name.span,
            name,
            options,
        }
    }

    fn anim(&mut self, name: &str, path: &str) -> spec::Animation {
        let name = self.s(name);
        spec::Animation {
            span: name.span,
            name,
            file: self.file(path),
            fps: 30.0,
            looping: false,
            frames: None,
            origin: [0.0; 3],
            rotation: spec::DEFAULT_ROTATION,
            scale: 1.0,
            motion: Vec::new(),
            start_loop: None,
            flags: Vec::new(),
            commands: Vec::new(),
        }
    }

    fn seq(&mut self, name: &str, anims: &[&str]) -> Sequence {
        let name = self.s(name);
        Sequence {
            span: name.span,
            name,
            animations: anims.iter().map(|a| self.s(a)).collect(),
            blend_width: None,
            blends: Vec::new(),
            activity: None,
            events: Vec::new(),
            pivots: Vec::new(),
            node: None,
            transition: None,
            fade_in: None,
            fade_out: None,
            exit_phase: None,
            flags: Vec::new(),
            extras: Vec::new(),
            group: 0,
        }
    }

    fn attachment(&mut self, bone: &str) -> Attachment {
        let name = self.s("att");
        Attachment {
            span: name.span,
            name,
            bone: self.s(bone),
            position: [1.0, 2.0, 3.0],
            flags: Vec::new(),
            rotate_deg: None,
            x_and_z_axes: None,
        }
    }
}

fn project(target: Target) -> ProjectSpec {
    ProjectSpec::new(PathBuf::from("model.toml"), TargetChoice::Default(target))
}

struct Built {
    model: Option<Model>,
    diags: Vec<Diagnostic>,
    sources: Sources,
}

impl Built {
    fn codes(&self) -> Vec<&'static str> {
        self.diags.iter().map(|d| d.code.as_str()).collect()
    }

    fn model(&self) -> &Model {
        match &self.model {
            Some(m) => m,
            None => panic!("build failed: {:#?}", self.diags),
        }
    }

    fn bone_names(&self) -> Vec<&str> {
        self.model().bones.iter().map(|b| b.name.as_str()).collect()
    }

    fn parents(&self) -> Vec<Option<u32>> {
        self.model()
            .bones
            .iter()
            .map(|b| b.parent.map(|p| p.0))
            .collect()
    }

    /// The one diagnostic with this code.
    fn only(&self, code: &str) -> &Diagnostic {
        let found: Vec<&Diagnostic> = self
            .diags
            .iter()
            .filter(|d| d.code.as_str() == code)
            .collect();
        assert_eq!(found.len(), 1, "want one {code}: {:#?}", self.diags);
        found[0]
    }

    /// The text under the primary span of a diagnostic.
    fn primary_text(&self, d: &Diagnostic) -> &str {
        let at = d.primary().unwrap();
        &self.sources.text(at.file)[at.span.range()]
    }
}

fn build(p: P, spec: &ProjectSpec, fs: &MemFs) -> Built {
    let mut sources = Sources::new();
    assert_eq!(sources.add("model.qc", p.text), PROJECT);
    let mut diags = Vec::new();
    let model = build_model(spec, fs, &mut sources, &mut diags);
    if model.is_some() {
        assert!(diags.iter().all(|d| !d.is_error()));
    } else {
        assert!(diags.iter().any(|d| d.is_error()), "None without an error");
    }
    Built {
        model,
        diags,
        sources,
    }
}

// ---------------------------------------------------------------------------------------------
// Source files
// ---------------------------------------------------------------------------------------------

/// Five bones; triangles use `head` (3) and `spine` (1) only; `unused` and `tip` carry no vertex.
const REF1: &str = "version 1
nodes
0 \"root\" -1
1 \"spine\" 0
2 \"unused\" 0
3 \"head\" 1
4 \"tip\" 3
end
skeleton
time 0
0 0 0 0 0 0 0
1 1 0 0 0 0 0
2 2 0 0 0 0 0
3 0 0 3 0 0 0.5
4 0 0 4 0 0 0
end
triangles
skin.bmp
3 0 0 0 0 0 1 0 0
3 1 0 0 0 0 1 1 0
1 0 1 0 0 0 1 0 1
end
";

/// Source-style weights: the second vertex is 0.25 `arm` + 0.75 `root`. Names differ in case
/// from REF1's (`ROOT`), and `spine` is re-declared with the same parent.
const REF2: &str = "version 1
nodes
0 \"ROOT\" -1
1 \"arm\" 0
2 \"spine\" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 5 0 0 0 0
2 1 0 0 0 0 0
end
triangles
Skin.bmp
1 0 0 0 0 0 1 0 0
1 1 0 0 0 0 1 1 0 2 1 0.25 0 0.75
1 0 1 0 0 0 1 0 1
eyes.bmp
2 0 0 0 0 0 1 0 0
2 1 0 0 0 0 1 1 0
2 0 1 0 0 0 1 0 1
end
";

/// Animation: bones `root`, `spine`, `extra`; frame 1 leaves `spine` out; frames 0..2.
const ANIM: &str = "version 1
nodes
0 \"root\" -1
1 \"spine\" 0
2 \"extra\" 1
end
skeleton
time 0
0 0 0 0 0 0 0
1 1 0 0 0 0 0
2 0 0 0 0 0 0
time 1
0 0 0 1 0 0 0
2 0 0 0 0 0 0
time 2
0 0 0 2 0 0 0
1 3 0 0 0 0 0
2 0 0 0 0 0 0
end
";

fn fs() -> MemFs {
    let mut fs = MemFs::new();
    fs.add("m/ref1.smd", REF1)
        .add("m/ref2.smd", REF2)
        .add("m/anim.smd", ANIM);
    fs
}

// ---------------------------------------------------------------------------------------------
// Skeleton merge
// ---------------------------------------------------------------------------------------------

#[test]
fn goldsrc_keeps_used_bones_in_body_order_with_exact_names() {
    // ref1: used = head(3), spine(1) and their ancestor root(0) → root, spine, head.
    // ref2 (GoldSrc reads only the first column): arm (1) and spine (2) are used, plus ROOT.
    // Exact names: `ROOT` is not `root`, so it is a new root bone; arm's parent is ROOT;
    // spine exists already, with parent root — but in ref2 its parent is ROOT: illegal.
    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    let b = build(p, &s, &fs());
    assert_eq!(b.bone_names(), ["root", "spine", "head"]);
    assert_eq!(b.parents(), [None, Some(0), Some(1)]);
    // Rest pose from the reference skeleton.
    assert_eq!(
        b.model().bones[2].rest,
        Pose {
            pos: [0.0, 0.0, 3.0],
            rot: [0.0, 0.0, 0.5]
        }
    );

    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.body_parts.push(p.body("arms", &["m/ref2.smd"]));
    let b = build(p, &s, &fs());
    let d = b.only("E0403");
    // Primary: spine's line in ref2; secondary: its first definition in ref1.
    assert_eq!(b.sources.name(d.primary().unwrap().file), "m/ref2.smd");
    assert_eq!(b.primary_text(d), "2 \"spine\" 0");
    assert_eq!(b.sources.name(d.labels[1].at.file), "m/ref1.smd");
    assert!(b.model.is_none());
}

#[test]
fn goldsrc_keeps_bones_named_by_attachments() {
    // `tip` carries no vertex, but an attachment names it (in another case): kept, after head.
    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.attachments.push(p.attachment("TIP"));
    let b = build(p, &s, &fs());
    assert_eq!(b.bone_names(), ["root", "spine", "head", "tip"]);
    assert_eq!(b.parents(), [None, Some(0), Some(1), Some(2)]);
    assert_eq!(b.model().attachments[0].bone, BoneId(3));
}

#[test]
fn source_merges_case_insensitively_in_load_order_and_remaps_weights() {
    // ref1 → root, spine, head (weights bones are the first column here: link count absent).
    // ref2: weights use arm, ROOT (vertex 2), spine; ROOT = root, spine known; arm is new with
    // parent root (0) → root, spine, head, arm.
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.body_parts.push(p.body("arms", &["blank", "m/ref2.smd"]));
    let b = build(p, &s, &fs());
    assert_eq!(b.codes(), Vec::<&str>::new());
    assert_eq!(b.bone_names(), ["root", "spine", "head", "arm"]);
    assert_eq!(b.parents(), [None, Some(0), Some(1), Some(0)]);
    let m = b.model();
    assert!(matches!(m.body_parts[1].options[0], BodyOption::Blank(_)));
    let BodyOption::Mesh(id) = m.body_parts[1].options[1] else {
        panic!()
    };
    assert_eq!(id, MeshId(1));
    let mesh = &m.meshes[1].mesh;
    // ref2's first triangle, second corner: weights arm 0.25, ROOT 0.75 → bones 3 and 0.
    let c = &mesh.corners_of(&mesh.triangles[0])[1];
    let ws: Vec<(u32, f32)> = mesh
        .weights_of(c)
        .iter()
        .map(|w| (w.bone.0, w.weight))
        .collect();
    assert_eq!(ws, [(3, 0.25), (0, 0.75)]);
    // First corner of ref2: all on arm → merged 3.
    assert_eq!(mesh.corners_of(&mesh.triangles[0])[0].bone, BoneId(3));
    // Second triangle: spine (file bone 2) → merged 1.
    assert_eq!(mesh.corners_of(&mesh.triangles[1])[0].bone, BoneId(1));
}

#[test]
fn source_definebone_first_then_hierarchy_reorders_parents_first() {
    // $definebone x (parent y), y (root): table x, y, then ref1's root, spine, head.
    // x's parent y is at 1 > 0: swap → y, x, root, spine, head.
    // $hierarchy spine → y: spine (3) parent y (0): fine, no reorder needed.
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    let x = p.s("x");
    let y = p.s("y");
    s.define_bones.push(DefineBone {
        span: x.span,
        name: x,
        parent: Some(y.clone()),
        position: [1.0, 2.0, 3.0],
        rotation_deg: [90.0, 0.0, 0.0],
        fixup: None,
    });
    s.define_bones.push(DefineBone {
        span: y.span,
        name: y,
        parent: None,
        position: [0.0; 3],
        rotation_deg: [0.0; 3],
        fixup: None,
    });
    s.hierarchy.push((p.s("SPINE"), p.s("y")));
    let b = build(p, &s, &fs());
    assert_eq!(b.bone_names(), ["y", "x", "root", "spine", "head"]);
    assert_eq!(b.parents(), [None, Some(0), None, Some(0), Some(3)]);
    let x = &b.model().bones[1];
    assert!(x.defined);
    // QAngle pitch 90° → Euler (roll, pitch, yaw) = (0, π/2, 0).
    assert_eq!(x.rest.pos, [1.0, 2.0, 3.0]);
    assert_eq!(x.rest.rot, [0.0, std::f32::consts::FRAC_PI_2, 0.0]);
    // spine's rest stays relative to the parent it had in the file (root, now at 2).
    assert_eq!(b.model().bones[3].rest_parent, Some(BoneId(2)));
}

#[test]
fn source_hierarchy_swap_moves_a_later_parent_first() {
    // ref2 alone: ROOT, arm, spine (arm and spine both under ROOT).
    // $hierarchy arm → spine: arm (1) gets parent spine (2): swap → ROOT, spine, arm.
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref2.smd"]));
    s.hierarchy.push((p.s("arm"), p.s("spine")));
    let b = build(p, &s, &fs());
    assert_eq!(b.bone_names(), ["ROOT", "spine", "arm"]);
    assert_eq!(b.parents(), [None, Some(0), Some(1)]);
    // Vertices follow: ref2's first corner is on arm, now 2.
    assert_eq!(
        b.model().meshes[0]
            .mesh
            .corners_of(&b.model().meshes[0].mesh.triangles[0])[0]
            .bone,
        BoneId(2)
    );
}

#[test]
fn hierarchy_cycle_and_unknown_bones_are_errors() {
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.hierarchy.push((p.s("root"), p.s("head")));
    s.hierarchy.push((p.s("hed"), p.s("")));
    let b = build(p, &s, &fs());
    let d = b.only("E0409");
    assert_eq!(b.primary_text(d), "\"head\"");
    let d = b.only("E0402");
    assert_eq!(b.primary_text(d), "\"hed\"");
    assert!(d.notes.iter().any(|n| n == "help: did you mean \"head\"?"));
    assert_eq!(d.primary().unwrap().file, PROJECT);
}

#[test]
fn scale_multiplies_positions_and_rest_pose() {
    let mut p = P::new();
    let mut s = project(Target::Source);
    let mut body = p.body("body", &["m/ref1.smd"]);
    if let SpecOption::Model(m) = &mut body.options[0] {
        m.scale = 2.0;
    }
    s.body_parts.push(body);
    let b = build(p, &s, &fs());
    let m = b.model();
    assert_eq!(m.bones[1].rest.pos, [2.0, 0.0, 0.0]);
    assert_eq!(
        m.meshes[0].mesh.corners_of(&m.meshes[0].mesh.triangles[0])[1].pos,
        [2.0, 0.0, 0.0]
    );
    assert_eq!(m.meshes[0].scale, 2.0);
}

// ---------------------------------------------------------------------------------------------
// Materials and skins
// ---------------------------------------------------------------------------------------------

#[test]
fn materials_are_global_case_insensitive_and_skins_follow_the_first_group() {
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.body_parts.push(p.body("arms", &["m/ref2.smd"]));
    // skin.bmp = 0, eyes.bmp = 1 (Skin.bmp is skin.bmp). The group's second row adds 2, 3.
    let g = TextureGroup {
        name: p.s("skinfamilies"),
        skins: vec![
            vec![p.s("eyes"), p.s("SKIN.bmp")],
            vec![p.s("eyes_blue"), p.s("skin_dirty")],
        ],
    };
    let g2 = TextureGroup {
        name: p.s("second"),
        skins: vec![vec![p.s("skin.bmp")]],
    };
    s.texture_groups.push(g);
    s.texture_groups.push(g2);
    let b = build(p, &s, &fs());
    assert_eq!(b.codes(), ["W0403"]);
    assert_eq!(b.primary_text(b.only("W0403")), "\"second\"");
    let m = b.model();
    let names: Vec<&str> = m.materials.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["skin.bmp", "eyes.bmp", "eyes_blue", "skin_dirty"]);
    assert_eq!(m.meshes[1].materials, [MaterialId(0), MaterialId(1)]);
    assert_eq!(m.skins.num_ref, 2);
    assert_eq!(
        m.skins.families,
        [
            vec![MaterialId(0), MaterialId(1)],
            vec![MaterialId(3), MaterialId(2)]
        ]
    );
    assert!(!m.materials[2].used);
}

#[test]
fn a_texture_group_material_no_mesh_uses_is_a_warning() {
    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.texture_groups.push(TextureGroup {
        name: p.s("skins"),
        skins: vec![vec![p.s("skn.bmp")], vec![p.s("other.bmp")]],
    });
    let b = build(p, &s, &fs());
    let d = b.only("W0402");
    assert_eq!(b.primary_text(d), "\"skn.bmp\"");
    assert!(d
        .notes
        .iter()
        .any(|n| n == "help: did you mean `skin.bmp`?"));
    // The model is still built: skn.bmp (1) is appended and replaced by other.bmp (2), but it
    // is outside the table's 1 reference material, so the table is unchanged.
    assert_eq!(b.model().skins.num_ref, 1);
    assert_eq!(b.model().skins.families[1], [MaterialId(0)]);
}

// ---------------------------------------------------------------------------------------------
// Animations
// ---------------------------------------------------------------------------------------------

fn anim_project(target: Target) -> (P, ProjectSpec) {
    let mut p = P::new();
    let mut s = project(target);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.animations.push(p.anim("idle", "m/anim.smd"));
    s.sequences.push(p.seq("idle", &["IDLE"]));
    (p, s)
}

#[test]
fn animations_map_bones_by_name_with_each_fill_rule() {
    for (target, spine_at_1) in [(Target::GoldSrc, 0.0), (Target::Source, 1.0)] {
        let (p, s) = anim_project(target);
        let b = build(p, &s, &fs());
        let a = &b.model().animations[0];
        assert_eq!(a.num_frames, 3);
        let mapped: Vec<Option<u32>> = a.file_bones.iter().map(|x| x.bone.map(|b| b.0)).collect();
        // root → 0, spine → 1, extra → not in the model.
        assert_eq!(mapped, [Some(0), Some(1), None]);
        // Frame 1 leaves spine out: GoldSrc zero, Source the previous frame's x = 1.
        assert_eq!(
            a.pose(1, 1).unwrap().pos,
            [spine_at_1, 0.0, 0.0],
            "{target:?}"
        );
        assert_eq!(a.pose(2, 1).unwrap().pos, [3.0, 0.0, 0.0]);
        assert_eq!(a.pose(1, 0).unwrap().pos, [0.0, 0.0, 1.0]);
        assert_eq!(a.file_bone_of(BoneId(1)), Some(1));
        // Root transform kept as data.
        assert_eq!(a.rotation, spec::DEFAULT_ROTATION);
        assert_eq!(b.model().sequences[0].animations, [AnimId(0)]);
    }
}

#[test]
fn frame_ranges_cut_clamp_or_fail() {
    let (p, mut s) = anim_project(Target::Source);
    s.animations[0].frames = Some((1, 2));
    let b = build(p, &s, &fs());
    let a = &b.model().animations[0];
    assert_eq!((a.first_time, a.num_frames), (1, 2));
    assert_eq!(a.pose(0, 0).unwrap().pos, [0.0, 0.0, 1.0]);

    let (p, mut s) = anim_project(Target::Source);
    s.animations[0].frames = Some((1, 9));
    let b = build(p, &s, &fs());
    assert_eq!(b.codes(), ["W0406"]);
    assert_eq!(b.primary_text(b.only("W0406")), "\"idle\"");
    assert_eq!(b.model().animations[0].num_frames, 2);

    let (p, mut s) = anim_project(Target::GoldSrc);
    s.animations[0].frames = Some((5, 9));
    let b = build(p, &s, &fs());
    let d = b.only("E0405");
    assert_eq!(b.primary_text(d), "\"idle\"");
    assert!(d.notes[0].ends_with("has frames 0 to 2"));
}

// ---------------------------------------------------------------------------------------------
// Sequences
// ---------------------------------------------------------------------------------------------

#[test]
fn sequences_resolve_animations_and_sequence_names() {
    let (mut p, mut s) = anim_project(Target::Source);
    // `walk` names the sequence `idle`, which stands for its first animation.
    s.sequences.push(p.seq("walk", &["Idle"]));
    s.sequences.push(p.seq("run", &["idel"]));
    let b = build(p, &s, &fs());
    let d = b.only("E0404");
    assert_eq!(b.primary_text(d), "\"idel\"");
    assert!(d.notes.iter().any(|n| n == "help: did you mean `idle`?"));

    let (mut p, mut s) = anim_project(Target::Source);
    s.sequences.push(p.seq("walk", &["Idle"]));
    let b = build(p, &s, &fs());
    assert_eq!(b.model().sequences[1].animations, [AnimId(0)]);
}

#[test]
fn blend_grids_and_duplicate_names() {
    let (mut p, mut s) = anim_project(Target::Source);
    s.sequences
        .push(p.seq("grid", &["idle", "idle", "idle", "idle"]));
    let mut three = p.seq("three", &["idle", "idle", "idle"]);
    three.blend_width = Some(Spanned::new(2, p.span("2")));
    s.sequences.push(three);
    s.sequences.push(p.seq("five", &["idle"; 5]));
    s.sequences.push(p.seq("Idle", &["idle"]));
    let b = build(p, &s, &fs());
    let grid: Vec<&Diagnostic> = b
        .diags
        .iter()
        .filter(|d| d.code.as_str() == "E0407")
        .collect();
    assert_eq!(grid.len(), 2);
    assert_eq!(b.primary_text(grid[0]), "2");
    assert_eq!(b.primary_text(grid[1]), "\"five\"");
    let d = b.only("E0408");
    assert_eq!(b.primary_text(d), "\"Idle\"");

    // The QC front end reports duplicates itself: not again here.
    let (mut p, mut s) = anim_project(Target::Source);
    s.source = PathBuf::from("model.QC");
    s.sequences.push(p.seq("Idle", &["idle"]));
    let b = build(p, &s, &fs());
    assert_eq!(b.codes(), Vec::<&str>::new());

    // A square grid gets its width; GoldSrc only warns about a duplicate name.
    let (mut p, mut s) = anim_project(Target::GoldSrc);
    s.sequences
        .push(p.seq("idle", &["idle", "idle", "idle", "idle"]));
    let b = build(p, &s, &fs());
    assert_eq!(b.codes(), ["W0404"]);
    let d = b.only("W0404");
    assert_eq!(
        b.sources.text(PROJECT)[d.labels[1].at.span.range()].to_string(),
        "\"idle\""
    );
    let (mut p, mut s) = anim_project(Target::Source);
    s.sequences
        .push(p.seq("grid", &["idle", "idle", "idle", "idle"]));
    let b = build(p, &s, &fs());
    assert_eq!(b.model().sequences[1].blend_width, 2);
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/// A name written without an extension is `name.smd`, else `name.dmx` (Valve's later
/// compilers; a Garry's Mod model names `studio hood` with only `hood.dmx`), found in another
/// case with W0401 as any file; with neither, the error names the SMD.
#[test]
fn a_name_without_extension_falls_back_to_dmx() {
    let dmx = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/smd/ok/dmx_triangle.dmx"),
    )
    .unwrap();
    let mut f = fs();
    f.add("m/Hood.dmx", dmx);
    for (written, found) in [("m/hood", true), ("m/belt", false)] {
        let mut p = P::new();
        let mut s = project(Target::Source);
        let mut body = p.body("body", &["m/ref1.smd"]);
        let mut file = p.file(written);
        file.path = PathBuf::from(format!("{written}.smd"));
        if let SpecOption::Model(m) = &body.options[0] {
            let mut m = m.clone();
            m.file = file;
            m.name = written.into();
            body.options.push(SpecOption::Model(m));
        }
        s.body_parts.push(body);
        let b = build(p, &s, &f);
        if found {
            let d = b.only("W0401");
            assert_eq!(b.primary_text(d), format!("\"{written}\""));
            assert!(d.message.contains("Hood.dmx"), "{}", d.message);
            assert!(b.model().body_parts[0].options.len() == 2);
        } else {
            let d = b.only("E0401");
            assert_eq!(b.primary_text(d), format!("\"{written}\""));
            assert!(d.labels[0].message.contains("belt.smd"));
        }
    }
}

#[test]
fn missing_files_other_case_and_smd_errors() {
    let mut f = fs();
    f.add(
        "m/broken.smd",
        "version 1\nnodes\n0 \"a\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 x\nend\n",
    );
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts
        .push(p.body("body", &["m/REF1.smd", "m/ref3.smd", "m/broken.smd"]));
    let b = build(p, &s, &f);
    let d = b.only("W0401");
    assert_eq!(b.primary_text(d), "\"m/REF1.smd\"");
    let d = b.only("E0401");
    assert_eq!(b.primary_text(d), "\"m/ref3.smd\"");
    assert!(d
        .notes
        .iter()
        .any(|n| n.starts_with("help: did you mean `m/ref")));
    // The SMD's own error, in its own file.
    let d = b.only("E0111");
    assert_eq!(b.sources.name(d.primary().unwrap().file), "m/broken.smd");
    assert!(b.model.is_none());
}

#[test]
fn lods_resolve_replaced_models_by_file_name() {
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    let lod_span = p.span("$lod 10");
    let rep = |p: &mut P, from: &str| ReplaceModel {
        from: p.s(from),
        to: p.file("m/ref2.smd"),
        name: "m/ref2.smd".into(),
        reverse: false,
        scale: 1.0,
    };
    let mut lod = Lod {
        distance: Some(Spanned::new(10.0, lod_span)),
        replace_models: vec![rep(&mut p, "REF1.smd")],
        remove_models: Vec::new(),
        replace_materials: Vec::new(),
        remove_meshes: Vec::new(),
        replace_bones: Vec::new(),
        bone_tree_collapse: Vec::new(),
        facial: None,
        use_shadowlod_materials: false,
        span: spec::Loc(lod_span),
    };
    s.lods.push(lod.clone());
    let b = build(p, &s, &fs());
    let m = b.model();
    assert_eq!(m.lods[0].replace_models[0].0, MeshId(0));
    assert_eq!(m.lods[0].replace_models[0].1, MeshId(1));
    // The LOD mesh's own bone `arm` does not join the skeleton: an LOD file's vertices take
    // their links from LOD 0 and mark no bone used (2006 SDK: an LOD's file is not an active
    // model; Valve's build of a Garry's Mod model with such LOD files has none of their nodes).
    assert_eq!(b.bone_names(), ["root", "spine", "head"]);

    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    lod.replace_models = vec![rep(&mut p, "ref_1")];
    s.lods.push(lod);
    let b = build(p, &s, &fs());
    let d = b.only("E0406");
    assert_eq!(b.primary_text(d), "\"ref_1\"");
    assert!(d.notes.iter().any(|n| n == "help: did you mean `ref1`?"));
}

#[test]
fn an_attachment_on_a_bone_no_file_has_is_an_error() {
    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.attachments.push(p.attachment("spin"));
    let b = build(p, &s, &fs());
    let d = b.only("E0402");
    assert_eq!(b.primary_text(d), "\"spin\"");
    assert!(d.notes.iter().any(|n| n == "help: did you mean \"spine\"?"));
}

// ---------------------------------------------------------------------------------------------
// Corpus: every real QC builds with no error
// ---------------------------------------------------------------------------------------------

fn qc_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            qc_files(&p, out);
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("qc"))
        {
            out.push(p);
        }
    }
}

/// Tokenizes, parses and builds one QC from disk.
fn build_qc(qc: &std::path::Path) -> (Option<Model>, Vec<Diagnostic>, Sources) {
    let fs = mdlc::load::fs::RealFs;
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let toks = mdlc::qc::tokens::tokenize(qc, &fs, &mut sources, &mut diags);
    let spec = mdlc::qc::commands::parse_project(qc, &toks, None, &mut diags);
    let built = build_model(&spec, &fs, &mut sources, &mut diags);
    (built, diags, sources)
}

#[test]
fn every_corpus_qc_builds_without_error() {
    let Some(dir) = corpus_dir() else { return };
    let mut qcs = Vec::new();
    qc_files(&dir, &mut qcs);
    assert!(qcs.len() >= 50, "{} QC files", qcs.len());
    let mut failures = Vec::new();
    for qc in &qcs {
        let (built, diags, sources) = build_qc(qc);
        let errors: Vec<String> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| mdlc::diag::render_plain(&sources, d))
            .collect();
        if !errors.is_empty() || built.is_none() {
            failures.push(format!("{}:\n{}", qc.display(), errors.join("")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} QC files fail:\n{}",
        failures.len(),
        qcs.len(),
        failures.join("\n")
    );
}

fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Outside oracle: the GoldSrc models Valve's HL1 compiler made from the corpus QCs. The merged
/// skeleton (names, parents, order), the sequence count, the texture count and the skin table
/// must be the ones in the header (`goldsrc.md` §4.1, §4.3: bone records of 112 bytes, name in
/// the first 32, parent at 32).
#[test]
fn goldsrc_corpus_skeletons_and_skins_match_valves_models() {
    let Some(dir) = corpus_dir() else { return };
    let mut qcs = Vec::new();
    qc_files(&dir.join("goldsrc-hl1/modelsrc/models"), &mut qcs);
    let mut compared = 0;
    for qc in &qcs {
        let folder = qc.parent().unwrap().file_name().unwrap();
        let stem = qc.file_stem().unwrap().to_str().unwrap();
        let mdl = dir
            .join("goldsrc-hl1/expected")
            .join(folder)
            .join(format!("{stem}.mdl"));
        let Ok(b) = std::fs::read(&mdl) else { continue };
        let (built, diags, _) = build_qc(qc);
        let m = built.unwrap_or_else(|| panic!("{}: {diags:#?}", qc.display()));
        let name = qc.display();
        let (nb, bi) = (le_i32(&b, 140) as usize, le_i32(&b, 144) as usize);
        let want: Vec<(String, i32)> = (0..nb)
            .map(|k| {
                let r = &b[bi + 112 * k..bi + 112 * k + 36];
                let n = r[..32].split(|&c| c == 0).next().unwrap();
                (String::from_utf8_lossy(n).into_owned(), le_i32(r, 32))
            })
            .collect();
        let got: Vec<(String, i32)> = m
            .bones
            .iter()
            .map(|x| (x.name.clone(), x.parent.map_or(-1, |p| p.0 as i32)))
            .collect();
        assert_eq!(got, want, "{name}: bones");
        assert_eq!(
            m.sequences.len(),
            le_i32(&b, 164) as usize,
            "{name}: sequences"
        );
        let ntex = le_i32(&b, 180) as usize;
        if ntex > 0 {
            assert_eq!(m.materials.len(), ntex, "{name}: textures");
            let ti = le_i32(&b, 184) as usize;
            for (k, mat) in m.materials.iter().enumerate() {
                let r = &b[ti + 80 * k..ti + 80 * k + 64];
                let n = r.split(|&c| c == 0).next().unwrap();
                assert_eq!(mat.name.as_bytes(), n, "{name}: texture {k}");
            }
            let (nref, nfam, si) = (
                le_i32(&b, 192) as usize,
                le_i32(&b, 196) as usize,
                le_i32(&b, 200) as usize,
            );
            assert_eq!(
                (m.skins.num_ref, m.skins.families.len()),
                (nref, nfam),
                "{name}"
            );
            for (f, fam) in m.skins.families.iter().enumerate() {
                for (r, id) in fam.iter().enumerate() {
                    let at = si + 2 * (f * nref + r);
                    let v = i16::from_le_bytes([b[at], b[at + 1]]);
                    assert_eq!(id.0 as i16, v, "{name}: skin {f} slot {r}");
                }
            }
        }
        compared += 1;
    }
    assert!(compared >= 30, "only {compared} models compared");
}

// ---------------------------------------------------------------------------------------------
// Smaller rules
// ---------------------------------------------------------------------------------------------

#[test]
fn a_sequence_without_animation_is_an_error() {
    let (mut p, mut s) = anim_project(Target::Source);
    s.sequences.push(p.seq("empty", &[]));
    let b = build(p, &s, &fs());
    let d = b.only("E0410");
    assert_eq!(b.primary_text(d), "\"empty\"");
}

#[test]
fn renames_apply_before_merging_and_unknown_ones_warn() {
    // GoldSrc renames by exact name: `spine` → `chest` in ref1; `Head` matches nothing (the
    // bone is `head`), which is a warning that suggests the real name.
    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.rename_bones.push((p.s("spine"), p.s("chest")));
    s.rename_bones.push((p.s("Head"), p.s("face")));
    let b = build(p, &s, &fs());
    assert_eq!(b.bone_names(), ["root", "chest", "head"]);
    let d = b.only("W0405");
    assert_eq!(b.primary_text(d), "\"Head\"");
    assert!(d.notes.iter().any(|n| n == "help: did you mean \"head\"?"));
}

/// `$bonemerge` of a bone no file has is skipped with a warning, as the 2006 SDK skips it
/// (it flags only the table's bones that match); a bone the files have is kept.
#[test]
fn an_unknown_bonemerge_bone_warns_and_a_known_one_is_kept() {
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.bone_merge.push(p.s("head"));
    s.bone_merge.push(p.s("weapon_bone_extra"));
    let b = build(p, &s, &fs());
    assert!(b.bone_names().contains(&"head"));
    let d = b.only("W0405");
    assert_eq!(b.primary_text(d), "\"weapon_bone_extra\"");
    assert_eq!(b.model().bone_merge.len(), 1);
}

#[test]
fn a_mesh_file_without_triangles_warns() {
    let mut p = P::new();
    let mut s = project(Target::Source);
    s.body_parts.push(p.body("body", &["m/anim.smd"]));
    let b = build(p, &s, &fs());
    let d = b.only("W0407");
    assert_eq!(b.primary_text(d), "\"m/anim.smd\"");
    // No vertex uses a bone: the skeleton is empty.
    assert!(b.model().bones.is_empty());
}

#[test]
fn texture_group_rows_of_other_lengths_warn() {
    let mut p = P::new();
    let mut s = project(Target::GoldSrc);
    s.body_parts.push(p.body("body", &["m/ref1.smd"]));
    s.texture_groups.push(TextureGroup {
        name: p.s("skins"),
        skins: vec![vec![p.s("skin.bmp")], vec![p.s("a.bmp"), p.s("b.bmp")]],
    });
    let b = build(p, &s, &fs());
    let d = b.only("W0408");
    assert_eq!(b.primary_text(d), "\"a.bmp\"");
    // Position 0 is still replaced: skin.bmp (0) → a.bmp (1).
    assert_eq!(b.model().skins.families[1], [MaterialId(1)]);
}

#[test]
fn goldsrc_rest_pose_is_the_last_value_and_source_the_first_frame() {
    // Two frames in a reference file: GoldSrc ignores `time` and keeps the last value written,
    // Source takes frame 0 (`goldsrc.md` §7, `source-animation.md` §2.3).
    let two = "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 1 0 0 0 0 0\ntime 1\n0 2 0 0 0 0 0\nend\ntriangles\nm\n0 0 0 0 0 0 1 0 0\n0 1 0 0 0 0 1 1 0\n0 0 1 0 0 0 1 0 1\nend\n";
    let mut f = MemFs::new();
    f.add("m/two.smd", two);
    for (target, x) in [(Target::GoldSrc, 2.0), (Target::Source, 1.0)] {
        let mut p = P::new();
        let mut s = project(target);
        s.body_parts.push(p.body("body", &["m/two.smd"]));
        let b = build(p, &s, &f);
        assert_eq!(b.model().bones[0].rest.pos, [x, 0.0, 0.0], "{target:?}");
    }
}

#[test]
fn source_animation_files_are_loaded_once_and_the_first_scale_wins() {
    let (mut p, mut s) = anim_project(Target::Source);
    s.animations[0].scale = 2.0;
    let mut again = p.anim("again", "m/anim.smd");
    again.scale = 3.0;
    s.animations.push(again);
    let b = build(p, &s, &fs());
    let m = b.model();
    assert_eq!(m.animations[1].scale, 2.0);
    assert_eq!(m.animations[0].file, m.animations[1].file);
    // GoldSrc reads the file again for each sequence, with its own scale.
    let (mut p, mut s) = anim_project(Target::GoldSrc);
    let mut again = p.anim("again", "m/anim.smd");
    again.scale = 3.0;
    s.animations.push(again);
    let b = build(p, &s, &fs());
    assert_eq!(b.model().animations[1].scale, 3.0);
}
