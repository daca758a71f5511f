//! Lowering of SMD/VTA text into the IR (`mdlc::smd::lower_smd`), with small inline files whose
//! expected values are worked out by hand from the format description and the specs
//! (`spec/seeds/smd-format.txt`, QUIRKS.md §2, `goldsrc.md` §7, `source-animation.md` §2.1), and
//! structural checks of the bundled creature model in `testdata/models/creature/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mdlc::diag::{Diagnostic, FileId, Sources};

use mdlc::ir::{BoneId, FillRule, Pose, Weight};
use mdlc::smd;
use mdlc::smd::{lower_smd, SmdModel};

const FILE: FileId = FileId(0);

/// Parses (asserting no parse error) and lowers. Returns the model and only the diagnostics
/// lowering added, so the tests see exactly what lowering reports.
fn lower(text: &str) -> (SmdModel, Vec<Diagnostic>) {
    let parsed = smd::parse(text, FILE);
    assert!(
        !parsed.has_errors(),
        "test input must parse without error: {:#?}",
        parsed.diagnostics
    );
    let mut diags = Vec::new();
    let model = lower_smd(&parsed.smd, FILE, &mut diags);
    (model, diags)
}

fn codes(diags: &[Diagnostic]) -> Vec<&'static str> {
    diags.iter().map(|d| d.code.as_str()).collect()
}

fn pose(pos: [f32; 3], rot: [f32; 3]) -> Pose {
    Pose { pos, rot }
}

const ZERO: Pose = Pose {
    pos: [0.0; 3],
    rot: [0.0; 3],
};

// ---------------------------------------------------------------------------------------------
// Skeleton and rest pose
// ---------------------------------------------------------------------------------------------

#[test]
fn rest_pose_is_the_frame_with_the_smallest_time_and_parents_are_mapped() {
    // Frame 3 comes first in the file, but frame 2 is the smallest time: it is the rest pose.
    let text = "\
version 1
nodes
0 \"Bip01\" -1
1 \"Bip01 Spine\" 0
2 \"Bip01 Head\" 1
3 \"Bip01 L Leg\" 0
end
skeleton
time 3
0 1 2 3 0 0 0
1 0 0 5 0.5 0 0
2 0 0 4 0 0 0.5
3 0 2 -4 0 0 0
time 2
0 10 20 30 0 0 0.25
1 0 0 6 0 0.75 0
2 0 0 7 0 0 0
3 0 2.5 -4 0.125 0 0
end
";
    let (m, diags) = lower(text);
    assert!(diags.is_empty(), "{diags:#?}");
    let s = &m.skeleton;
    assert_eq!(s.len(), 4);
    let names: Vec<&str> = s.bones.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["Bip01", "Bip01 Spine", "Bip01 Head", "Bip01 L Leg"]);
    let parents: Vec<Option<BoneId>> = s.bones.iter().map(|b| b.parent).collect();
    assert_eq!(
        parents,
        [None, Some(BoneId(0)), Some(BoneId(1)), Some(BoneId(0))]
    );
    // Rest pose = time 2.
    assert_eq!(s.bones[0].rest, pose([10.0, 20.0, 30.0], [0.0, 0.0, 0.25]));
    assert_eq!(s.bones[1].rest, pose([0.0, 0.0, 6.0], [0.0, 0.75, 0.0]));
    assert_eq!(s.bones[2].rest, pose([0.0, 0.0, 7.0], [0.0, 0.0, 0.0]));
    assert_eq!(s.bones[3].rest, pose([0.0, 2.5, -4.0], [0.125, 0.0, 0.0]));
    // Frames are addressed from the smallest time: frame 0 = time 2, frame 1 = time 3.
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames, a.num_bones), (2, 2, 4));
    assert_eq!(a.get(1, 0), Some(pose([1.0, 2.0, 3.0], [0.0; 3])));
    assert_eq!(a.get(1, 1), Some(pose([0.0, 0.0, 5.0], [0.5, 0.0, 0.0])));
    assert_eq!(a.present, [true, true]);
    // No triangles section, no vertex animation.
    assert!(m.mesh.is_none());
    assert!(m.flex.is_none());
}

#[test]
fn skeleton_find_ignores_case() {
    let text = "\
version 1
nodes
0 \"ValveBiped.Bip01_Pelvis\" -1
1 \"Bip01 L Leg1\" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 0 0 0 0
end
";
    let (m, _) = lower(text);
    let s = &m.skeleton;
    // The QUIRKS §2.10 example: a QC names the pelvis in another case.
    assert_eq!(s.find("valvebiped.Bip01_Pelvis"), Some(BoneId(0)));
    assert_eq!(s.find("VALVEBIPED.BIP01_PELVIS"), Some(BoneId(0)));
    assert_eq!(s.find("bip01 l leg1"), Some(BoneId(1)));
    assert_eq!(s.find("Bip01 L Leg1"), Some(BoneId(1)));
    // A different name is not found, nor is a prefix or a name without its space.
    assert_eq!(s.find("Bip01 L Leg"), None);
    assert_eq!(s.find("Bip01LLeg1"), None);
    assert_eq!(s.find(""), None);
    assert_eq!(
        s.get(BoneId(1)).map(|b| b.name.as_str()),
        Some("Bip01 L Leg1")
    );
    assert!(s.get(BoneId(2)).is_none());
}

// ---------------------------------------------------------------------------------------------
// Sparse frames, late start, re-opened frames
// ---------------------------------------------------------------------------------------------

/// Bone 1 is missing from the first frame and from frame 2 (QUIRKS §2.7).
const SPARSE: &str = "\
version 1
nodes
0 \"root\" -1
1 \"arm\" 0
end
skeleton
time 0
0 0 0 0 0 0 0
time 1
0 1 0 0 0 0 0
1 0 0 10 0 0 1.5
time 2
0 2 0 0 0 0 0
end
";

#[test]
fn sparse_frames_hold_previous_for_source() {
    let (m, diags) = lower(SPARSE);
    // The first frame lacks bone 1: one W0131, nothing else.
    assert_eq!(codes(&diags), ["W0131"]);
    assert!(
        diags[0].notes.iter().any(|n| n.contains("\"arm\"")),
        "{diags:#?}"
    );
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames, a.num_bones), (0, 3, 2));
    assert_eq!(a.get(2, 1), None);
    assert_eq!(a.get(0, 1), None);
    let r = a.resolve(FillRule::HoldPrevious);
    assert_eq!(r.len(), 6);
    let arm = pose([0.0, 0.0, 10.0], [0.0, 0.0, 1.5]);
    // Frame 0: root given, arm missing in the first frame -> zero (source-animation.md §2.1).
    assert_eq!(r[0], ZERO);
    assert_eq!(r[1], ZERO);
    // Frame 1: both given.
    assert_eq!(r[2], pose([1.0, 0.0, 0.0], [0.0; 3]));
    assert_eq!(r[3], arm);
    // Frame 2: the arm keeps its frame-1 value.
    assert_eq!(r[4], pose([2.0, 0.0, 0.0], [0.0; 3]));
    assert_eq!(r[5], arm);
    // The rest pose of the arm is zero, as the first frame leaves it.
    assert_eq!(m.skeleton.bones[1].rest, ZERO);
}

#[test]
fn sparse_frames_are_zero_for_goldsrc() {
    let (m, _) = lower(SPARSE);
    let r = m.animation.resolve(FillRule::Zero);
    assert_eq!(r.len(), 6);
    // goldsrc.md §7: "Missing data is zero, not interpolated".
    assert_eq!(r[1], ZERO);
    assert_eq!(r[3], pose([0.0, 0.0, 10.0], [0.0, 0.0, 1.5]));
    assert_eq!(r[4], pose([2.0, 0.0, 0.0], [0.0; 3]));
    assert_eq!(r[5], ZERO);
}

#[test]
fn frames_starting_late_are_numbered_from_the_first_time() {
    let text = "\
version 1
nodes
0 \"root\" -1
end
skeleton
time 5
0 5 0 0 0 0 0
time 6
0 6 0 0 0 0 0
time 7
0 7 0 0 0 0 0
end
";
    let (m, diags) = lower(text);
    // Starting at 5 is not a gap: frames 0..4 do not exist.
    assert!(diags.is_empty(), "{diags:#?}");
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames), (5, 3));
    assert_eq!(a.present, [true, true, true]);
    assert_eq!(a.get(0, 0), Some(pose([5.0, 0.0, 0.0], [0.0; 3])));
    assert_eq!(a.get(2, 0), Some(pose([7.0, 0.0, 0.0], [0.0; 3])));
    assert_eq!(a.get(3, 0), None);
    assert_eq!(m.skeleton.bones[0].rest, pose([5.0, 0.0, 0.0], [0.0; 3]));
}

#[test]
fn time_going_backwards_reopens_frames_and_adds_a_bone() {
    // QUIRKS §2.8: frames 6 and 7 are written without bone 1, then re-opened to add it.
    let text = "\
version 1
nodes
0 \"root\" -1
1 \"gun\" 0
end
skeleton
time 5
0 0 0 0 0 0 0
1 1 1 1 0 0 0
time 6
0 0 0 6 0 0 0
time 7
0 0 0 7 0 0 0
time 6
1 2 2 2 0 0 0
time 7
1 3 3 3 0 0 0
end
";
    let (m, diags) = lower(text);
    assert!(diags.is_empty(), "{diags:#?}");
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames), (5, 3));
    assert_eq!(a.present, [true, true, true]);
    // Re-opened frames keep what they had and gain the new bone.
    assert_eq!(a.get(1, 0), Some(pose([0.0, 0.0, 6.0], [0.0; 3])));
    assert_eq!(a.get(1, 1), Some(pose([2.0, 2.0, 2.0], [0.0; 3])));
    assert_eq!(a.get(2, 0), Some(pose([0.0, 0.0, 7.0], [0.0; 3])));
    assert_eq!(a.get(2, 1), Some(pose([3.0, 3.0, 3.0], [0.0; 3])));
    // Every value is given, so both fill rules agree with the merged frames.
    assert_eq!(a.resolve(FillRule::Zero), a.resolve(FillRule::HoldPrevious));
}

#[test]
fn a_time_below_the_first_one_moves_the_start() {
    // The smallest time wins even when it is written last.
    let text = "\
version 1
nodes
0 \"root\" -1
end
skeleton
time 5
0 5 0 0 0 0 0
time 6
0 6 0 0 0 0 0
time 4
0 4 0 0 0 0 0
end
";
    let (m, diags) = lower(text);
    assert!(diags.is_empty(), "{diags:#?}");
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames), (4, 3));
    assert_eq!(a.get(0, 0), Some(pose([4.0, 0.0, 0.0], [0.0; 3])));
    assert_eq!(a.get(1, 0), Some(pose([5.0, 0.0, 0.0], [0.0; 3])));
    assert_eq!(a.get(2, 0), Some(pose([6.0, 0.0, 0.0], [0.0; 3])));
    assert_eq!(m.skeleton.bones[0].rest, pose([4.0, 0.0, 0.0], [0.0; 3]));
}

#[test]
fn reopened_frame_changing_a_value_warns_once_and_the_later_value_wins() {
    let text = "\
version 1
nodes
0 \"root\" -1
1 \"arm\" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 1 0 0 0 0 0
time 1
0 0 0 0 0 0 0
1 1 0 0 0 0 0
time 0
1 9 0 0 0 0 0
end
";
    let (m, diags) = lower(text);
    assert_eq!(codes(&diags), ["W0130"]);
    // Only one replacement: no "more" note.
    assert!(
        !diags[0].notes.iter().any(|n| n.contains("more")),
        "{diags:#?}"
    );
    // The primary label points at the later line, the secondary at the replaced one.
    let primary = diags[0].labels.iter().find(|l| l.primary).unwrap();
    let secondary = diags[0].labels.iter().find(|l| !l.primary).unwrap();
    let at = |s: mdlc::diag::FileSpan| &text[s.span.range()];
    assert_eq!(at(primary.at), "1 9 0 0 0 0 0");
    assert_eq!(at(secondary.at), "1 1 0 0 0 0 0");
    assert_eq!(primary.at.span.start as usize, text.rfind("1 9 0").unwrap());
    assert_eq!(
        secondary.at.span.start as usize,
        text.find("1 1 0").unwrap()
    );
    let a = &m.animation;
    assert_eq!(a.num_frames, 2);
    assert_eq!(a.get(0, 1), Some(pose([9.0, 0.0, 0.0], [0.0; 3])));
    // The rest pose is the merged frame, so it has the later value too.
    assert_eq!(m.skeleton.bones[1].rest, pose([9.0, 0.0, 0.0], [0.0; 3]));
}

#[test]
fn several_replacements_give_one_warning_with_a_count() {
    // Three values replaced (frame 0 bone 1, frame 1 bone 0, frame 1 bone 1), one repeated
    // identically (frame 0 bone 0): one W0130 whose note counts the two further replacements.
    let text = "\
version 1
nodes
0 \"root\" -1
1 \"arm\" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 1 0 0 0 0 0
time 1
0 0 0 0 0 0 0
1 1 0 0 0 0 0
time 0
0 0 0 0 0 0 0
1 2 0 0 0 0 0
time 1
0 0 0 5 0 0 0
1 3 0 0 0 0 0
end
";
    let (m, diags) = lower(text);
    assert_eq!(codes(&diags), ["W0130"]);
    assert!(
        diags[0]
            .notes
            .iter()
            .any(|n| n.starts_with("2 more bone values")),
        "{diags:#?}"
    );
    let a = &m.animation;
    assert_eq!(a.get(0, 0), Some(ZERO));
    assert_eq!(a.get(0, 1), Some(pose([2.0, 0.0, 0.0], [0.0; 3])));
    assert_eq!(a.get(1, 0), Some(pose([0.0, 0.0, 5.0], [0.0; 3])));
    assert_eq!(a.get(1, 1), Some(pose([3.0, 0.0, 0.0], [0.0; 3])));
}

#[test]
fn identical_repeat_gives_no_warning() {
    let text = "\
version 1
nodes
0 \"root\" -1
end
skeleton
time 0
0 1 2 3 0.5 0 0
time 1
0 1 2 3 0.5 0 0
time 0
0 1 2 3 0.5 0 0
0 1.0 2.0 3.0 0.50 0 0
end
";
    let (m, diags) = lower(text);
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(
        m.animation.get(0, 0),
        Some(pose([1.0, 2.0, 3.0], [0.5, 0.0, 0.0]))
    );
}

// ---------------------------------------------------------------------------------------------
// Frame gaps and runaway frame numbers
// ---------------------------------------------------------------------------------------------

const GAP: &str = "\
version 1
nodes
0 \"root\" -1
1 \"arm\" 0
end
skeleton
time 0
0 1 0 0 0 0 0
1 0 0 2 0 0 0.5
time 3
0 4 0 0 0 0 0
end
";

#[test]
fn frame_gap_warns_and_marks_missing_frames() {
    let (m, diags) = lower(GAP);
    assert_eq!(codes(&diags), ["W0132"]);
    assert_eq!(diags[0].message, "2 frames between 0 and 3 are missing");
    // It points at the `time` line after the gap (the number 3).
    let primary = diags[0].labels.iter().find(|l| l.primary).unwrap();
    assert_eq!(&GAP[primary.at.span.range()], "3");
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames), (0, 4));
    assert_eq!(a.present, [true, false, false, true]);
    assert_eq!(a.get(1, 0), None);
    assert_eq!(a.get(2, 1), None);
    // Frame 3 gives only the root: the arm is missing there too.
    assert_eq!(a.get(3, 1), None);
}

#[test]
fn missing_whole_frame_under_both_fill_rules() {
    let (m, _) = lower(GAP);
    let root0 = pose([1.0, 0.0, 0.0], [0.0; 3]);
    let arm0 = pose([0.0, 0.0, 2.0], [0.0, 0.0, 0.5]);
    let root3 = pose([4.0, 0.0, 0.0], [0.0; 3]);

    let zero = m.animation.resolve(FillRule::Zero);
    assert_eq!(zero, [root0, arm0, ZERO, ZERO, ZERO, ZERO, root3, ZERO]);

    let hold = m.animation.resolve(FillRule::HoldPrevious);
    assert_eq!(hold, [root0, arm0, root0, arm0, root0, arm0, root3, arm0]);
}

fn two_times(last: i64, bones: usize) -> String {
    let mut t = String::from("version 1\nnodes\n");
    for b in 0..bones {
        let parent = if b == 0 { -1 } else { 0 };
        t.push_str(&format!("{b} \"b{b}\" {parent}\n"));
    }
    t.push_str("end\nskeleton\ntime 0\n");
    for b in 0..bones {
        t.push_str(&format!("{b} 0 0 0 0 0 0\n"));
    }
    t.push_str(&format!("time {last}\n"));
    for b in 0..bones {
        t.push_str(&format!("{b} 1 0 0 0 0 0\n"));
    }
    t.push_str("end\n");
    t
}

#[test]
fn runaway_frame_number_is_e0135_without_allocating() {
    let start = Instant::now();
    // time 0 and time 100001: 100002 frames, over the limit of 100000.
    let (m, diags) = lower(&two_times(100_001, 1));
    assert_eq!(codes(&diags), ["E0135"]);
    assert!(diags[0].is_error());
    assert!(
        diags[0].message.contains("from 0 to 100001"),
        "{}",
        diags[0].message
    );
    let a = &m.animation;
    assert_eq!(a.num_frames, 0);
    assert!(a.poses.is_empty());
    assert!(a.present.is_empty());
    assert!(a.resolve(FillRule::HoldPrevious).is_empty());

    // A frame number near i32::MAX with many bones would need gigabytes: refused at once.
    let (m, diags) = lower(&two_times(2_000_000_000, 64));
    assert_eq!(codes(&diags), ["E0135"]);
    assert!(m.animation.poses.is_empty());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn frame_limit_boundary() {
    // 0..=99_999 is exactly 100_000 frames: allowed (with a gap warning for the 99_998 frames
    // between).
    let (m, diags) = lower(&two_times(99_999, 1));
    assert_eq!(codes(&diags), ["W0132"]);
    assert_eq!(
        diags[0].message,
        "99998 frames between 0 and 99999 are missing"
    );
    assert_eq!(m.animation.num_frames, 100_000);
    assert_eq!(
        m.animation.get(99_999, 0),
        Some(pose([1.0, 0.0, 0.0], [0.0; 3]))
    );
    // 0..=100_000 is one frame too many.
    let (_, diags) = lower(&two_times(100_000, 1));
    assert_eq!(codes(&diags), ["E0135"]);
}

#[test]
fn many_bones_times_many_frames_is_refused_even_below_the_frame_limit() {
    // 200 bones x 100_000 frames = 20_000_000 values (more than 16 Mi) from only 400 lines.
    let (m, diags) = lower(&two_times(99_999, 200));
    assert_eq!(codes(&diags), ["E0135"]);
    assert!(m.animation.poses.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Weights
// ---------------------------------------------------------------------------------------------

fn mesh_file(triangles: &str) -> String {
    format!(
        "version 1
nodes
0 \"root\" -1
1 \"a\" 0
2 \"b\" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 0 0 0 0
2 0 0 0 0 0 0
end
triangles
{triangles}end
"
    )
}

fn w(bone: u32, weight: f32) -> Weight {
    Weight {
        bone: BoneId(bone),
        weight,
    }
}

#[test]
fn weights_are_merged_filtered_and_normalised() {
    let text = mesh_file(
        "\
skin
1 0 0 0 0 0 1 0 0
1 1 0 0 0 0 1 1 0 0
0 0 1 0 0 0 1 0 1 3 1 0.25 2 0.5 1 0.25
skin
0 0 0 0 0 0 1 0 0 3 1 0.000000 2 1.000000 0 0
0 1 0 0 0 0 1 1 0 2 1 0.25 2 0.25
2 0 1 0 0 0 1 0 1 2 0 0 1 0
skin
0 0 0 0 0 0 1 0 0 1 2 1.0
0 1 0 0 0 0 1 1 0 2 1 0.5 2 1.0
0 0 1 0 0 0 1 0 1 1 0 1
",
    );
    let (m, diags) = lower(&text);
    assert!(diags.is_empty(), "{diags:#?}");
    let mesh = m.mesh.as_ref().unwrap();
    assert_eq!(mesh.triangles.len(), 3);
    let weights = |t: usize, c: usize| {
        mesh.weights_of(&mesh.corners_of(&mesh.triangles[t])[c])
            .to_vec()
    };

    // Nine values: the vertex belongs to its bone alone.
    assert_eq!(weights(0, 0), [w(1, 1.0)]);
    // Link count 0: weight 1.0 on the first-column bone (QUIRKS §2.2).
    assert_eq!(weights(0, 1), [w(1, 1.0)]);
    // Bone 1 twice (0.25 + 0.25) merged, in order of first appearance.
    assert_eq!(weights(0, 2), [w(1, 0.5), w(2, 0.5)]);
    // Zero-weight links dropped (QUIRKS §2.5): only bone 2 remains.
    assert_eq!(weights(1, 0), [w(2, 1.0)]);
    // Sum 0.5, normalised to 1 (QUIRKS §2.4).
    assert_eq!(weights(1, 1), [w(1, 0.5), w(2, 0.5)]);
    // All zero: falls back to the first-column bone (2).
    assert_eq!(weights(1, 2), [w(2, 1.0)]);
    // The links decide, not the first column: bone 0 in the first column, weight on bone 2.
    assert_eq!(weights(2, 0), [w(2, 1.0)]);
    assert_eq!(mesh.corners_of(&mesh.triangles[2])[0].bone, BoneId(0));
    // Sum 1.5: 1/3 and 2/3.
    let v = weights(2, 1);
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].bone, v[1].bone), (BoneId(1), BoneId(2)));
    assert!((v[0].weight - 1.0 / 3.0).abs() < 1e-6, "{v:?}");
    assert!((v[1].weight - 2.0 / 3.0).abs() < 1e-6, "{v:?}");
    // One link of weight 1 on the first-column bone.
    assert_eq!(weights(2, 2), [w(0, 1.0)]);

    // Every corner: non-empty, no zero weight, sums to 1, bones in range.
    for t in &mesh.triangles {
        for c in &mesh.corners_of(t) {
            let ws = mesh.weights_of(c);
            assert!(!ws.is_empty());
            assert!(ws.iter().all(|x| x.weight > 0.0 && x.bone.index() < 3));
            let sum: f32 = ws.iter().map(|x| x.weight).sum();
            assert!((sum - 1.0).abs() < 1e-6);
        }
    }
    // Corner data are carried over as written.
    let c = &mesh.corners_of(&mesh.triangles[0])[2];
    assert_eq!(c.pos, [0.0, 1.0, 0.0]);
    assert_eq!(c.normal, [0.0, 0.0, 1.0]);
    assert_eq!(c.uv, [0.0, 1.0]);
    assert_eq!(c.bone, BoneId(0));
}

// ---------------------------------------------------------------------------------------------
// Materials
// ---------------------------------------------------------------------------------------------

#[test]
fn materials_in_first_use_order_and_blank_material_dropped() {
    let v = "0 0 0 0 0 0 1 0 0\n0 1 0 0 0 0 1 1 0\n0 0 1 0 0 0 1 0 1\n";
    let tris = format!("skin.bmp\n{v}eyes\n{v}skin.bmp\n{v}   \n{v}  teeth  \n{v}eyes\n{v}");
    let text = mesh_file(&tris);
    let parsed = smd::parse(&text, FILE);
    assert!(!parsed.has_errors(), "{:#?}", parsed.diagnostics);
    // The blank material line is a warning (QUIRKS §2.1), reported once.
    assert_eq!(codes(&parsed.diagnostics), ["W0141"]);
    let mut diags = Vec::new();
    let m = lower_smd(&parsed.smd, FILE, &mut diags);
    assert!(diags.is_empty(), "{diags:#?}");
    let mesh = m.mesh.unwrap();
    assert_eq!(mesh.materials, ["skin.bmp", "eyes", "teeth"]);
    let mats: Vec<u32> = mesh.triangles.iter().map(|t| t.material).collect();
    assert_eq!(mats, [0, 1, 0, 2, 1]);
    // Each triangle's span is its (trimmed) material line.
    let names: Vec<&str> = mesh
        .triangles
        .iter()
        .map(|t| &text[t.span.span.range()])
        .collect();
    assert_eq!(names, ["skin.bmp", "eyes", "skin.bmp", "teeth", "eyes"]);
}

// ---------------------------------------------------------------------------------------------
// VTA
// ---------------------------------------------------------------------------------------------

#[test]
fn vta_shapes_merged_by_time_with_names() {
    let text = "\
version 1
nodes
0 \"root\" -1
end
skeleton
time 0 # basis
0 0 0 0 0 0 0
time 1 # Smile
0 0 0 0 0 0 0
time 2 # Key 2
0 0 0 0 0 0 0
time 3
0 0 0 0 0 0 0
end
vertexanimation
time 0
0 0 0 0 0 0 1
1 1 0 0 0 0 1
2 0 1 0 0 0 1
time 2
4 1 0 0.5 0 0 1
time 1
5 0 1 0.25 0 0 1
3 0 0 0.25 0 0 1
time 2
0 0 0 1 0 0 1
time 3
7 0 0 2 0 1 0
end
";
    let (m, diags) = lower(text);
    assert!(diags.is_empty(), "{diags:#?}");
    let flex = m.flex.as_ref().unwrap();
    let times: Vec<i32> = flex.shapes.iter().map(|s| s.time).collect();
    assert_eq!(times, [0, 1, 2, 3]);
    let names: Vec<Option<&str>> = flex.shapes.iter().map(|s| s.name.as_deref()).collect();
    assert_eq!(names, [Some("basis"), Some("Smile"), Some("Key 2"), None]);
    let corners = |i: usize| -> Vec<u32> { flex.shapes[i].vertices.iter().map(|v| v.0).collect() };
    assert_eq!(corners(0), [0, 1, 2]);
    assert_eq!(corners(1), [3, 5]);
    assert_eq!(corners(2), [0, 4]);
    assert_eq!(corners(3), [7]);
    assert_eq!(
        flex.shapes[1].vertices[0],
        (3, [0.0, 0.0, 0.25], [0.0, 0.0, 1.0])
    );
    assert_eq!(
        flex.shapes[2].vertices[0],
        (0, [0.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    );
    assert_eq!(
        flex.shapes[2].vertices[1],
        (4, [1.0, 0.0, 0.5], [0.0, 0.0, 1.0])
    );
    assert_eq!(
        flex.shapes[3].vertices[0],
        (7, [0.0, 0.0, 2.0], [0.0, 1.0, 0.0])
    );
    // The shape's span is its first `time` number in `vertexanimation`.
    let first_time2 = text.find("time 2\n4").unwrap() + "time ".len();
    assert_eq!(flex.shapes[2].span.span.start as usize, first_time2);
    // A VTA has no triangles.
    assert!(m.mesh.is_none());
}

#[test]
fn vta_corner_given_twice_keeps_one_entry() {
    let text = "\
version 1
nodes
0 \"root\" -1
end
skeleton
time 0
0 0 0 0 0 0 0
time 1 # Blink
0 0 0 0 0 0 0
end
vertexanimation
time 0
0 0 0 0 0 0 1
time 1
6 0 0 1 0 0 1
2 0 0 1 0 0 1
time 1
2 0 0 1 0 0 1
6 0 0 3 0 0 1
end
";
    let (m, diags) = lower(text);
    // Corner 2 repeated identically: no warning; corner 6 changed: one W0130, later wins.
    assert_eq!(codes(&diags), ["W0130"]);
    let shape = &m.flex.as_ref().unwrap().shapes[1];
    assert_eq!(shape.name.as_deref(), Some("Blink"));
    assert_eq!(
        shape.vertices,
        [
            (2, [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]),
            (6, [0.0, 0.0, 3.0], [0.0, 0.0, 1.0])
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------------------------

#[test]
fn check_smd_does_not_lower_a_file_with_parse_errors() {
    // Frame 2 names an undeclared bone (E0131); frame 1 is missing, which lowering would report
    // as W0132 if it ran.
    let bad = "\
version 1
nodes
0 \"root\" -1
end
skeleton
time 0
0 0 0 0 0 0 0
time 2
7 0 0 0 0 0 0
end
";
    let mut sources = Sources::new();
    let id = sources.add("bad.smd", bad.to_string());
    let mut diags = Vec::new();
    assert!(mdlc::load::check_smd(&sources, id, &mut diags).is_none());
    assert_eq!(codes(&diags), ["E0131"]);

    // The same file without the bad line is lowered (and then has its gap warning).
    let good = bad.replace("7 0 0 0 0 0 0\n", "0 0 0 0 0 0 0\n");
    let id = sources.add("good.smd", good);
    let mut diags = Vec::new();
    let model = mdlc::load::check_smd(&sources, id, &mut diags).unwrap();
    assert_eq!(codes(&diags), ["W0132"]);
    assert_eq!(diags[0].message, "1 frame between 0 and 2 is missing");
    assert_eq!(model.file, id);
    assert_eq!(model.animation.num_frames, 3);
}

#[test]
fn check_smd_returns_none_when_lowering_finds_an_error() {
    let mut sources = Sources::new();
    let id = sources.add("runaway.smd", two_times(100_001, 1));
    let mut diags = Vec::new();
    assert!(mdlc::load::check_smd(&sources, id, &mut diags).is_none());
    assert_eq!(codes(&diags), ["E0135"]);
}

// ---------------------------------------------------------------------------------------------
// The bundled creature
// ---------------------------------------------------------------------------------------------

fn creature(name: &str) -> (String, SmdModel) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "testdata",
        "models",
        "creature",
        name,
    ]
    .iter()
    .collect();
    let text = std::fs::read_to_string(&path).unwrap();
    let parsed = smd::parse(&text, FILE);
    assert!(
        parsed.diagnostics.is_empty(),
        "{name}: {:#?}",
        parsed.diagnostics
    );
    let mut diags = Vec::new();
    let model = lower_smd(&parsed.smd, FILE, &mut diags);
    assert!(diags.is_empty(), "{name}: {diags:#?}");
    (text, model)
}

/// Counts the triangles in the text: the lines between `triangles` and `end`, four per triangle.
fn triangles_in_text(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.trim() == "triangles").unwrap();
    let end = start
        + lines[start..]
            .iter()
            .position(|l| l.trim() == "end")
            .unwrap();
    let body = end - start - 1;
    assert_eq!(body % 4, 0);
    body / 4
}

const CREATURE_BONES: [&str; 7] = [
    "root",
    "Bip01 Pelvis",
    "Bip01 Spine",
    "Bip01 Head",
    "Bip01 L Leg",
    "Bip01 R Leg",
    "Bip01 Tail",
];

fn check_skeleton(m: &SmdModel) {
    let names: Vec<&str> = m.skeleton.bones.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, CREATURE_BONES);
    let parents: Vec<Option<u32>> = m
        .skeleton
        .bones
        .iter()
        .map(|b| b.parent.map(|p| p.0))
        .collect();
    assert_eq!(
        parents,
        [None, Some(0), Some(1), Some(2), Some(1), Some(1), Some(1)]
    );
    assert_eq!(m.skeleton.find("bip01 head"), Some(BoneId(3)));
}

fn check_mesh(name: &str, materials: &[&str], triangles: usize) {
    let (text, m) = creature(name);
    check_skeleton(&m);
    assert_eq!(m.animation.num_frames, 1);
    let mesh = m.mesh.as_ref().unwrap();
    assert_eq!(mesh.materials, materials);
    assert_eq!(mesh.triangles.len(), triangles);
    assert_eq!(mesh.triangles.len(), triangles_in_text(&text));
    let bones = m.skeleton.len();
    for t in &mesh.triangles {
        assert!((t.material as usize) < mesh.materials.len());
        for c in &mesh.corners_of(t) {
            assert!(c.bone.index() < bones);
            let ws = mesh.weights_of(c);
            assert!(!ws.is_empty());
            assert!(ws.iter().all(|w| w.bone.index() < bones && w.weight > 0.0));
            let sum: f32 = ws.iter().map(|w| w.weight).sum();
            assert!((sum - 1.0).abs() <= 1e-6, "{name}: weights {ws:?}");
            let len = c.normal.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((len - 1.0).abs() < 1e-5, "{name}: normal {:?}", c.normal);
            assert!(c.uv.iter().all(|u| (0.0..=1.0).contains(u)));
        }
    }
}

#[test]
fn creature_reference_mesh() {
    // 8n + 4 triangles per box of n slices: pelvis 1 slice (12), torso 3 (28), head 2 (20),
    // two legs 3 (28 each), tail 3 (28), two eyes 1 (12 each) = 168.
    check_mesh(
        "creature_reference.smd",
        &["creature_skin", "creature_eyes"],
        168,
    );
    let (_, m) = creature("creature_reference.smd");
    let mesh = m.mesh.as_ref().unwrap();
    // Some vertices are shared by two bones; the torso's bottom ring is half spine, half pelvis.
    let two: Vec<&[Weight]> = mesh
        .triangles
        .iter()
        .flat_map(|t| mesh.corners_of(t))
        .map(|c| mesh.weights_of(&c))
        .filter(|ws| ws.len() == 2)
        .collect();
    assert!(!two.is_empty());
    assert!(two.contains(&&[w(2, 0.5), w(1, 0.5)][..]));
    assert!(mesh
        .triangles
        .iter()
        .flat_map(|t| mesh.corners_of(t))
        .all(|c| mesh.weights_of(&c).len() <= 2));
    // About 50 units tall.
    let top = mesh
        .triangles
        .iter()
        .flat_map(|t| mesh.corners_of(t))
        .map(|c| c.pos[2])
        .fold(f32::MIN, f32::max);
    assert_eq!(top, 50.0);
    // Rest pose: pelvis 20 units above the root.
    assert_eq!(m.skeleton.bones[1].rest, pose([0.0, 0.0, 20.0], [0.0; 3]));
}

#[test]
fn creature_horns_mesh() {
    // Two horns of 2 slices each: 2 x 20.
    check_mesh("creature_horns.smd", &["creature_horn"], 40);
}

fn check_loop(name: &str, frames: usize) -> (SmdModel, Vec<Pose>) {
    let (_, m) = creature(name);
    check_skeleton(&m);
    assert!(m.mesh.is_none());
    let a = &m.animation;
    assert_eq!((a.first_time, a.num_frames, a.num_bones), (0, frames, 7));
    assert!(a.present.iter().all(|&p| p));
    // Every frame gives every bone, so the fill rule does not matter.
    assert!(a.poses.iter().all(Option::is_some));
    let poses = a.resolve(FillRule::Zero);
    assert_eq!(poses, a.resolve(FillRule::HoldPrevious));
    (m, poses)
}

#[test]
fn creature_idle_loops() {
    let (_, p) = check_loop("creature_idle.smd", 30);
    let (first, last) = (&p[..7], &p[29 * 7..]);
    assert_eq!(first, last);
    // It does move in between.
    assert_ne!(&p[7 * 7..8 * 7], first);
}

#[test]
fn creature_walk_loops_while_moving_forward() {
    let (_, p) = check_loop("creature_walk.smd", 24);
    let (first, last) = (&p[..7], &p[23 * 7..]);
    // The root has walked one stride (24 units) along +X; everything else is as in frame 0.
    assert_eq!(first[0].pos[0], 0.0);
    assert_eq!(last[0].pos[0], 24.0);
    let mut moved = last.to_vec();
    moved[0].pos[0] = 0.0;
    assert_eq!(first, &moved[..]);
    // The root's X position grows every frame.
    assert!(p
        .chunks(7)
        .zip(p.chunks(7).skip(1))
        .all(|(a, b)| b[0].pos[0] > a[0].pos[0]));
    // The legs swing in opposite directions about Y.
    let quarter = &p[6 * 7..7 * 7];
    assert!(
        quarter[4].rot[1] > 0.4 && quarter[5].rot[1] < -0.4,
        "{quarter:?}"
    );
}
