//! Animation commands of issue 16 applied as the 2006 SDK's `processAnimations` applies them
//! (`simplify.cpp`: `processMatch`, `linearDelta`, `createDerivative`, `worldspaceBlend` with
//! `CalcBoneTransformsCycle`, `counterRotateBone`, `matchBlend`, `extractLinearMotion`), on an arm that turns
//! 0°, 20°, 20°, 30° about Z over four frames (`testdata/source/animops`), the values worked out
//! by hand and read back from the built model with `mdlc inspect --pose --json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/animops");

/// The arm's turn about Z in degrees and its position in each frame of sequence `seq`.
fn arm(mdl: &Path, seq: &str) -> Vec<(f64, Vec<f64>)> {
    (0..4)
        .map(|f| {
            let j = common::inspect_json_with(
                mdl,
                &["--pose", seq, "--frame", &f.to_string(), "--bone", "arm"],
            );
            let b = &j["bones"][0];
            let e: Vec<f64> = b["euler_degrees"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert!(e[0].abs() < 0.01 && e[1].abs() < 0.01, "{seq} {f}: {e:?}");
            let p = b["pos"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            (e[2], p)
        })
        .collect()
}

fn turns(v: &[(f64, Vec<f64>)]) -> Vec<f64> {
    v.iter().map(|x| x.0).collect()
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 0.01)
}

/// - `lineardelta`: each frame less the straight way from 0° to 30° (0, 10, 20, 30): 0, 10, 0, 0,
///   a delta (positions 0);
/// - `splinedelta`: less the eased way, 3s² − 2s³ of 30° (0, 7.78, 22.22, 30): 0, 12.22,
///   −2.22, 0;
/// - `derivative 1`: each frame less the one before, frame 0 less the last: −30, 20, 0, 10;
/// - `match pose45`: turned by the difference of frame 0 and `pose45`'s 45°: 45, 65, 65, 75.
#[test]
fn match_lineardelta_splinedelta_derivative_worldspaceblend() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("ops.qc"), "animops");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let linear = arm(&mdl, "linear");
    assert!(close(&turns(&linear), &[0.0, 10.0, 0.0, 0.0]), "{linear:?}");
    assert!(linear.iter().all(|x| close(&x.1, &[0.0; 3])), "{linear:?}");
    let spline = arm(&mdl, "spline");
    let s1 = 30.0 * (3.0 / 9.0 - 2.0 / 27.0);
    let s2 = 30.0 * (12.0 / 9.0 - 16.0 / 27.0);
    assert!(
        close(&turns(&spline), &[0.0, 20.0 - s1, 20.0 - s2, 0.0]),
        "{spline:?}"
    );
    let derivative = arm(&mdl, "derivative");
    assert!(
        close(&turns(&derivative), &[-30.0, 20.0, 0.0, 10.0]),
        "{derivative:?}"
    );
    let matched = arm(&mdl, "matched");
    assert!(
        close(&turns(&matched), &[45.0, 65.0, 65.0, 75.0]),
        "{matched:?}"
    );
    // worldspaceblend pose45 with the arm's weight ½: half way in model space from the swing's
    // turn to 45°: 22.5, 32.5, 32.5, 37.5
    let world = arm(&mdl, "world");
    assert!(
        close(&turns(&world), &[22.5, 32.5, 32.5, 37.5]),
        "{world:?}"
    );
    // worldspaceblendloop bob 0: `bob` (0°, 40°, 0°) read as a loop at cycles 0, ⅓, ⅔, 1 is
    // 0, 26.67, 26.67, 0 (frames interpolated); half way from the swing: 0, 23.33, 23.33, 15
    let looped = arm(&mdl, "worldloop");
    assert!(
        close(&turns(&looped), &[0.0, 70.0 / 3.0, 70.0 / 3.0, 15.0]),
        "{looped:?}"
    );
    // counterrotate arm (`counterRotateBone`): the arm keeps its rest turn in the model in every
    // frame, so relative to the root it does not turn at all: 0, 0, 0, 0 (the swing undone)
    let counter = arm(&mdl, "counter");
    assert!(close(&turns(&counter), &[0.0; 4]), "{counter:?}");
    assert!(counter.iter().all(|x| close(&x.1, &[0.0, 0.0, 10.0])));
    // counterrotateto 0 45 0 arm: yaw 45° in the model, whose root carries the Source turn of
    // 90° about Z: −45° relative to the root in every frame
    let to = arm(&mdl, "counterto");
    assert!(close(&turns(&to), &[-45.0; 4]), "{to:?}");
    // matchblend pose45 0 1 -1 1 (`matchBlend`): frame 1 (20°) takes the whole difference to
    // pose45's frame 0 (45°), 25°; frames 0 and 2 take SimpleSpline(½) = ½ of it, frame 3
    // none: 12.5, 45, 32.5, 30
    let mb = arm(&mdl, "matchblended");
    assert!(close(&turns(&mb), &[12.5, 45.0, 32.5, 30.0]), "{mb:?}");
    // applied, so no "not applied yet" warning
    let out = common::mdlc(
        &[
            "build",
            Path::new(FIXTURES).join("ops.qc").to_str().unwrap(),
            "-o",
            dir.to_str().unwrap(),
            "--force",
        ],
        Path::new("."),
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("W0620"));
}

/// The root's position in each frame of sequence `seq`.
fn root_pos(mdl: &Path, seq: &str) -> Vec<Vec<f64>> {
    (0..4)
        .map(|f| {
            let j = common::inspect_json_with(
                mdl,
                &["--pose", seq, "--frame", &f.to_string(), "--bone", "root"],
            );
            j["bones"][0]["pos"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

/// `walkalignto 3 start LX` and `walkalign 3 start LX 0 3` (2006 SDK `CMD_REFMOTION`,
/// `extractLinearMotion` with another animation's frame as the reference) on a root that walks
/// 0, 10, 20, 30 along the model's X (after Source's 90° turn), measured from `start`'s root
/// at 5: the travel is 25 over three frames with 10 at the middle (frame 1.5), so
/// v0 = 4·10 − 25 = 15, v1 = 3·25 − 4·10 = 35 (accelerating), and the root keeps
/// x − (15t + 10t²): 0, 3.889, 5.556, 5. `walkframe 3 LX` measures from its own frame 0 and
/// takes all of the uniform walk out: 0, 0, 0, 0.
#[test]
fn walkalign_measures_from_another_animation() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("ops.qc"), "animops-walkalign");
    let mdl = common::files_with_ext(&dir, &["mdl"]).remove(0);
    let x = |seq: &str| -> Vec<f64> { root_pos(&mdl, seq).iter().map(|p| p[0]).collect() };
    assert!(close(&x("walkframe"), &[0.0; 4]), "{:?}", x("walkframe"));
    let want = [0.0, 35.0 / 9.0, 50.0 / 9.0, 5.0];
    assert!(close(&x("walkalignto"), &want), "{:?}", x("walkalignto"));
    assert!(close(&x("walkalign"), &want), "{:?}", x("walkalign"));
}

/// A `worldspaceblendloop` on a one-frame reference has no loop to read: E0621 at the command,
/// nothing written.
#[test]
fn a_loop_of_one_frame_is_an_error() {
    let qc = Path::new(FIXTURES).join("oneframe_loop.qc");
    let dir = common::fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join("animops-loop1"));
    let out = common::build_into_out(&qc, &dir);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0621]"), "{err}");
    assert!(err.contains("oneframe_loop.qc:5:28"), "{err}");
    assert!(!dir.join("out").exists());
}
