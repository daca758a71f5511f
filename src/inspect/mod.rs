//! `mdlc inspect`: reads a compiled model of either engine with its companion files, dumps every
//! record (text or JSON) and checks the format's invariants; `--pose` decodes a Source
//! animation frame. It reads through the back ends' readers (`crate::formats::*::read`), never
//! through their writers, so the tests can use it on Valve's files as on mdlc's.

pub mod source;

use std::path::Path;

use crate::diag::{Code, Diagnostic, Report};
use crate::load::RealFs;

/// The outcome of `mdlc inspect`: the dump (text or JSON) and the diagnostics (a file that is
/// not a model, a missing companion, every invariant that does not hold).
#[derive(Debug, Default)]
pub struct Inspect {
    pub report: Report,
    pub text: String,
}

/// Reads a model and dumps it: a GoldSrc model with its `T.mdl` and `NN.mdl` companions, a
/// Source model with its `.vvd` and `.vtx` files (all beside it). With `pose` (Source only), prints
/// the bones' local transforms in one animation frame instead of the dump.
pub fn inspect(
    path: &Path,
    json: bool,
    pose: Option<&crate::formats::source::pose::PoseQuery>,
    flex: Option<&str>,
) -> Inspect {
    use crate::formats::goldsrc::read;
    let mut out = Inspect::default();
    let name = path.display().to_string();
    let main = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.report.io_failures += 1;
            out.report
                .diagnostics
                .push(Diagnostic::unreadable(Path::new(&name), e));
            return out;
        }
    };
    // a Source collision model (no magic number: known by its extension)
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("phy"))
    {
        out.report.binary_files = 1;
        if let Some(text) = answer(
            source::inspect_phy(path, &main, &RealFs, json),
            &name,
            "a collision model",
            &mut out,
        ) {
            out.text = text;
        }
        return out;
    }
    // Source models (MDL v44-v49) go to the Source reader, which finds the VVD and VTX beside.
    let version = main
        .get(4..8)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let is_source = main.starts_with(b"IDST") && matches!(version, Some(44..=49));
    if let Some(flex) = flex {
        out.report.binary_files = 1;
        if is_source {
            inspect_source_flex(path, &name, flex, json, &mut out);
        } else {
            out.report.diagnostics.push(not_source(
                "--flex",
                &name,
                "GoldSrc models have no flexes",
            ));
        }
        return out;
    }
    if let Some(q) = pose {
        out.report.binary_files = 1;
        if is_source {
            inspect_source_pose(path, &name, q, json, &mut out);
        } else {
            out.report.diagnostics.push(not_source(
                "--pose",
                &name,
                "Source models are MDL versions 44 to 49; `mdlc inspect FILE` without `--pose` dumps a GoldSrc model's animation streams",
            ));
        }
        return out;
    }
    if is_source {
        out.report.binary_files = 1;
        if let Some(text) = answer(
            source::inspect(path, &RealFs, json),
            &name,
            "a Source model",
            &mut out,
        ) {
            out.text = text;
        }
        return out;
    }
    if main.starts_with(b"IDSQ") {
        out.report.binary_files = 1;
        inspect_group_file(&main, &name, json, &mut out);
        return out;
    }
    let header = match read::header(&main) {
        Ok(h) => h,
        Err(e) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` is not a GoldSrc model: {e}"),
                name,
            ));
            return out;
        }
    };
    let stem = path.with_extension("");
    let stem = stem.to_string_lossy();
    let tpath = std::path::PathBuf::from(format!("{stem}T.mdl"));
    let textures = if header.numtextures == 0 {
        match std::fs::read(&tpath) {
            Ok(b) => Some(b),
            Err(e) => {
                // A model with textures inside has no T file; one without needs it: Valve's
                // model viewer and the engine load it whenever `numtextures` is 0 (mdlc's
                // build refuses such a model without `$externaltextures`, E0544).
                out.report.diagnostics.push(Diagnostic::about_file(
                    Code::InspectInvariant,
                    format!(
                        "the model keeps its textures in `{}`, which cannot be read: {e}",
                        tpath.display()
                    ),
                    name.clone(),
                ));
                None
            }
        }
    } else {
        None
    };
    let mut groups = Vec::new();
    let mut missing_groups: Vec<usize> = Vec::new();
    for g in 1..header.numseqgroups.clamp(1, 1000) as usize {
        let gp =
            std::path::PathBuf::from(crate::formats::goldsrc::write::group_file_name(&stem, g));
        match std::fs::read(&gp) {
            Ok(b) => groups.push(b),
            Err(e) => {
                out.report.diagnostics.push(Diagnostic::about_file(
                    Code::InspectInvariant,
                    format!("cannot read sequence group file `{}`: {e}", gp.display()),
                    name.clone(),
                ));
                groups.push(Vec::new());
                missing_groups.push(g);
            }
        }
    }
    out.report.binary_files =
        1 + usize::from(textures.is_some()) + groups.len() - missing_groups.len();
    let group_refs: Vec<&[u8]> = groups.iter().map(Vec::as_slice).collect();
    let parsed = match read::parse(&main, textures.as_deref(), &group_refs) {
        Ok(p) => p,
        Err(e) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` is not a GoldSrc model: {e}"),
                name,
            ));
            return out;
        }
    };
    let set = read::FileSet {
        main: &main,
        textures: textures.as_deref(),
        groups: group_refs.clone(),
    };
    out.text = if json {
        serde_json::to_string_pretty(&parsed).unwrap_or_default()
    } else {
        read::dump(&parsed, &set)
    };
    for p in &parsed.problems {
        // An unreadable companion was reported already; its empty stand-in is not news.
        let about_missing_group = missing_groups
            .iter()
            .any(|g| p.starts_with(&format!("group file {g:02}:")));
        let about_missing_t = textures.is_none() && p.contains("no T file was given");
        if about_missing_group || about_missing_t {
            continue;
        }
        out.report.diagnostics.push(Diagnostic::about_file(
            Code::InspectInvariant,
            format!("invariant does not hold: {p}"),
            name.clone(),
        ));
    }
    out
}

/// `mdlc inspect` of a GoldSrc sequence group file (`NN.mdl`, `IDSQ`) given alone: its header
/// (`goldsrc.md` §4.2) and the invariants that hold without the main model; its animations are
/// decoded through the main model, which names the file.
fn inspect_group_file(bytes: &[u8], name: &str, json: bool, out: &mut Inspect) {
    use crate::formats::goldsrc::read::{Record, StudioSeqHdr};
    if bytes.len() < StudioSeqHdr::SIZE {
        out.report.diagnostics.push(Diagnostic::about_file(
            Code::InspectNotMdl,
            format!(
                "`{name}` is not a GoldSrc sequence group file: {} bytes is too short for its header ({} bytes)",
                bytes.len(),
                StudioSeqHdr::SIZE
            ),
            name,
        ));
        return;
    }
    let h = StudioSeqHdr::parse(bytes.get(..StudioSeqHdr::SIZE).unwrap_or(bytes));
    let mut problems = Vec::new();
    if h.version != 10 {
        problems.push(format!("version is {}, not 10", h.version));
    }
    if i64::from(h.length) != bytes.len() as i64 {
        problems.push(format!(
            "length is {} but the file has {} bytes",
            h.length,
            bytes.len()
        ));
    }
    if bytes.get(8..72).is_some_and(|n| !n.contains(&0)) {
        problems.push("the name fills its 64 bytes without a terminating NUL".into());
    }
    let data = bytes.len() - StudioSeqHdr::SIZE;
    out.text = if json {
        serde_json::to_string_pretty(&serde_json::json!({
            "group_header": h,
            "animation_bytes": data,
        }))
        .unwrap_or_default()
    } else {
        let mut t = String::new();
        t.push_str("sequence group file\n");
        t.push_str(&format!(
            "header @ 0 ({}, {} bytes)\n",
            StudioSeqHdr::NAME,
            StudioSeqHdr::SIZE
        ));
        t.push_str(&format!("  id: \"{}\"\n", h.id));
        t.push_str(&format!("  version: {}\n", h.version));
        t.push_str(&format!("  name: \"{}\"\n", h.name));
        t.push_str(&format!("  length: {}\n", h.length));
        t.push_str(&format!(
            "animation data @ {}: {data} bytes{}\n",
            StudioSeqHdr::SIZE,
            if data == 0 {
                " (a group without sequences)"
            } else {
                " (decoded through the main model: `mdlc inspect` its `.mdl`)"
            }
        ));
        if problems.is_empty() {
            t.push_str("invariants: all hold\n");
        }
        t
    };
    for p in problems {
        out.report.diagnostics.push(Diagnostic::about_file(
            Code::InspectInvariant,
            format!("invariant does not hold: {p}"),
            name,
        ));
    }
}

/// E0654: an option that reads Source models only, given another file.
fn not_source(option: &str, name: &str, note: &str) -> Diagnostic {
    Diagnostic::about_file(
        Code::InspectPoseNotSource,
        format!("`{option}` reads Source models only, and `{name}` is not one"),
        name,
    )
    .with_note(note)
}

/// A reader's answer (a dump, a `--pose` or `--flex` report) with its invariant problems
/// reported; `None` (with the diagnostic) when the file cannot be read as `what`.
fn answer<T>(
    r: Result<(T, Vec<String>), String>,
    name: &str,
    what: &str,
    out: &mut Inspect,
) -> Option<T> {
    match r {
        Ok((result, problems)) => {
            for p in problems {
                out.report.diagnostics.push(Diagnostic::about_file(
                    Code::InspectInvariant,
                    p,
                    name,
                ));
            }
            Some(result)
        }
        Err(e) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectNotMdl,
                format!("`{name}` cannot be read as {what}: {e}"),
                name,
            ));
            None
        }
    }
}

/// `mdlc inspect --flex` of a Source model: the flex's vertex deltas, or why not.
fn inspect_source_flex(path: &Path, name: &str, flex: &str, json: bool, out: &mut Inspect) {
    let Some(result) = answer(
        source::inspect_flex(path, &RealFs, flex, json),
        name,
        "a Source model",
        out,
    ) else {
        return;
    };
    match result {
        Ok(text) => out.text = text,
        Err(names) => {
            let mut d = Diagnostic::about_file(
                Code::InspectUnknownFlex,
                format!("`{name}` has no flex `{flex}`"),
                name,
            );
            if let Some(s) = crate::suggest::nearest(flex, names.iter().map(String::as_str)) {
                d = d.with_note(format!("help: did you mean `{s}`?"));
            }
            d = d.with_note(if names.is_empty() {
                "the model has no flexes".to_string()
            } else {
                "`mdlc inspect FILE` lists the model's flex descriptions".to_string()
            });
            out.report.diagnostics.push(d);
        }
    }
}

/// `mdlc inspect --pose` of a Source model: the pose text, or the diagnostic saying why not.
fn inspect_source_pose(
    path: &Path,
    name: &str,
    q: &crate::formats::source::pose::PoseQuery,
    json: bool,
    out: &mut Inspect,
) {
    use crate::formats::source::pose::PoseError;
    let Some(result) = answer(
        source::inspect_pose(path, &RealFs, q, json),
        name,
        "a Source model",
        out,
    ) else {
        return;
    };
    let did_you_mean = |d: Diagnostic, s: &Option<String>| match s {
        Some(s) => d.with_note(format!("help: did you mean `{s}`?")),
        None => d,
    };
    // A short list of names is shown whole; a long one is left to the dump.
    let listed = |what: &str, names: &[String]| {
        if names.is_empty() || names.len() > 20 {
            None
        } else {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            Some(format!("the model's {what}: {}", names.join(", ")))
        }
    };
    match result {
        Ok(text) => out.text = text,
        Err(PoseError::UnknownName {
            name: n,
            suggestion,
            sequences,
        }) => {
            let mut d = did_you_mean(
                Diagnostic::about_file(
                    Code::InspectUnknownAnimation,
                    format!("`{name}` has no animation or sequence `{n}`"),
                    name,
                ),
                &suggestion,
            );
            if let Some(l) = listed("sequences", &sequences) {
                d = d.with_note(l);
            }
            out.report.diagnostics.push(
                d.with_note("`mdlc inspect FILE` lists the model's sequences and animations"),
            );
        }
        Err(PoseError::FrameOutOfRange {
            frame,
            animation,
            numframes,
        }) => {
            out.report.diagnostics.push(
                Diagnostic::about_file(
                    Code::InspectFrameOutOfRange,
                    format!("frame {frame} is outside animation `{animation}`"),
                    name,
                )
                .with_note(if numframes > 0 {
                    format!(
                        "the animation has {numframes} frames: give a frame from 0 to {} (fractions interpolate)",
                        numframes - 1
                    )
                } else {
                    format!("the animation has {numframes} frames")
                }),
            );
        }
        Err(PoseError::UnknownBone {
            name: n,
            suggestion,
            bones,
        }) => {
            let d = did_you_mean(
                Diagnostic::about_file(
                    Code::InspectUnknownBone,
                    format!("`{name}` has no bone `{n}`"),
                    name,
                ),
                &suggestion,
            );
            out.report.diagnostics.push(match listed("bones", &bones) {
                Some(l) => d.with_note(l),
                None => d.with_note("`mdlc inspect FILE` lists the model's bones"),
            });
        }
        Err(PoseError::Undecodable { what, why }) => {
            out.report.diagnostics.push(Diagnostic::about_file(
                Code::InspectPoseUndecodable,
                format!("cannot decode {what}: {why}"),
                name,
            ));
        }
    }
}
