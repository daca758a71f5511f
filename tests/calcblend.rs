//! `calcblend` (issue 16): a blend's pose-parameter values measured from an attachment, as the
//! 2006 SDK's `CalcPoseParameters` does, and `absolute` attachments (placed in the model's rest
//! space, `simplify.cpp`), on a fixture whose values are worked out by hand
//! (`testdata/source/calcblend`: a head bone at z 10 turned −30°, 0° and +30° about its Z).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::path::Path;

use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/source/calcblend");

fn inspect(mdl: &Path) -> Value {
    common::inspect_json(mdl)["mdl"].clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// The eyes attachment turns with the head by −30°, 0°, +30° about its own Z, so `calcblend
/// head_yaw "eyes" ZR` gives the blend −30..30 (keys −30, 0, 30) and the pose parameter that
/// range; the same from delta animations (subtracted from the rest pose and applied back on
/// the model's first animation). `absolute` puts `chin` at model (3, 0, 0): (3, 0, −10) from
/// the head bone at z 10.
#[test]
fn calcblend_measures_the_attachment() {
    let dir = common::build_fresh(&Path::new(FIXTURES).join("head.qc"), "calcblend-head");
    let mdls = common::files_with_ext(&dir, &["mdl"]);
    let m = inspect(&mdls[0]);
    let params: Vec<(String, f64, f64)> = m["pose_parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                f(&p["start"]),
                f(&p["end"]),
            )
        })
        .collect();
    assert_eq!(params.len(), 2);
    for (i, name) in ["head_yaw", "head_yaw_delta"].iter().enumerate() {
        assert_eq!(params[i].0, *name);
        assert!((params[i].1 + 30.0).abs() < 1e-4 && (params[i].2 - 30.0).abs() < 1e-4);
        let s = m["sequences"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["label"] == ["turn", "turn_delta"][i])
            .unwrap();
        assert_eq!(s["paramindex"][0], i as i64);
        assert!((f(&s["paramstart"][0]) + 30.0).abs() < 1e-4);
        assert!((f(&s["paramend"][0]) - 30.0).abs() < 1e-4);
        let keys: Vec<f64> = s["pose_keys"].as_array().unwrap().iter().map(f).collect();
        for (k, want) in keys.iter().zip([-30.0, 0.0, 30.0]) {
            assert!((k - want).abs() < 1e-4, "{keys:?}");
        }
    }
    let chin = m["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "chin")
        .unwrap();
    let t: Vec<f64> = (0..3).map(|r| f(&chin["local"][r][3])).collect();
    assert_eq!(t, [3.0, 0.0, -10.0]);
    if let Some(summary) = source_common::oracle_check(&mdls[0]) {
        assert!(!summary.is_null());
    }
}

/// A calcblend whose attachment does not move is E0623 (Valve's "calcblend failed"); an unknown
/// attachment is E0620 with the nearest name; nothing is written.
#[test]
fn calcblend_errors() {
    for (qc, code, at) in [
        ("still.qc", "E0623", "calcblend"),
        ("unknown.qc", "E0620", "\"eys\""),
    ] {
        let path = Path::new(FIXTURES).join(qc);
        let (out, diags) = source_common::compile_qc(&path);
        assert!(out.is_none(), "{qc}");
        let d = diags
            .iter()
            .find(|d| d.code.as_str() == code)
            .unwrap_or_else(|| panic!("{qc}: {diags:?}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let start = d.labels.iter().find(|l| l.primary).unwrap().at.span.start as usize;
        assert!(text[start..].starts_with(at), "{qc}: {}", &text[start..]);
    }
}

/// The SDK male's six lean sequences (`calcblend … "eyes" ZR/X/YR/XR`) build without the
/// not-applied warning, each with its pose parameter and a measured range.
#[test]
fn sdk_male_calcblends_build() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let qc =
        corpus.join("sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk/male_sdk/male_06_sdk.qc");
    let (out, diags) = source_common::compile_qc(&qc);
    assert!(
        !diags
            .iter()
            .any(|d| d.message.contains("`calcblend`") && d.code.as_str() == "W0620"),
        "{diags:?}"
    );
    let files = out.unwrap_or_else(|| {
        panic!(
            "{:?}",
            diags.iter().filter(|d| d.is_error()).collect::<Vec<_>>()
        )
    });
    let dir = source_common::tmp("calcblend", "male06");
    let mdl = source_common::write_files(&dir, &files);
    let m = inspect(&mdl);
    for name in [
        "body_rot_z",
        "spine_rot_z",
        "neck_trans_x",
        "head_rot_z",
        "head_rot_y",
        "head_rot_x",
    ] {
        let s = m["sequences"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["label"] == name)
            .unwrap();
        assert!(s["paramindex"][0].as_i64().unwrap() >= 0, "{name}");
        assert!(
            (f(&s["paramstart"][0]) - f(&s["paramend"][0])).abs() >= 0.01,
            "{name}"
        );
    }
}
