//! `mdlc inspect` of a Source model: the MDL with its `.vvd` and `.vtx` siblings read from the
//! disk (or any [`Fs`]), dumped record by record, and the invariants between them checked.

use std::path::Path;

use crate::formats::source::{self, pose::PoseError, pose::PoseQuery, strips::Variant, Files};
use crate::load::Fs;

/// Reads an MDL and whichever siblings exist beside it (`NAME.vvd`, `NAME.dx90.vtx`, …).
pub fn read_files(path: &Path, fs: &dyn Fs) -> Result<Files, String> {
    let bytes = fs
        .read(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mdl = source::read::read_mdl(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let stem = path.with_extension("");
    let sibling = |ext: &str| {
        let mut s = stem.as_os_str().to_owned();
        s.push(".");
        s.push(ext);
        std::path::PathBuf::from(s)
    };
    let vvd = fs.read(&sibling("vvd")).ok();
    let vtx: Vec<(Variant, Vec<u8>)> = Variant::ALL
        .into_iter()
        .filter_map(|v| Some((v, fs.read(&sibling(v.extension())).ok()?)))
        .collect();
    source::read_set(mdl, vvd.as_deref(), &vtx)
}

/// Reads an MDL v48 (with its .vvd/.vtx siblings found through `fs`) for `mdlc inspect`: a
/// readable dump (or JSON) of every record, and the invariant problems.
pub fn inspect(path: &Path, fs: &dyn Fs, json: bool) -> Result<(String, Vec<String>), String> {
    let f = read_files(path, fs)?;
    let problems = source::check(&f);
    let text = if json {
        let mut t = source::dump::to_json(&f, &problems).to_string();
        t.push('\n');
        t
    } else {
        source::dump::to_text(&f, &problems)
    };
    Ok((text, problems))
}

/// `mdlc inspect --pose`: reads the MDL (the pose needs no VVD or VTX), then answers the pose
/// query (the text or JSON of [`source::pose::pose_report`], or why it cannot be answered), with the
/// problems of the animation side.
pub fn inspect_pose(
    path: &Path,
    fs: &dyn Fs,
    query: &PoseQuery,
    json: bool,
) -> Result<(Result<String, PoseError>, Vec<String>), String> {
    let bytes = fs
        .read(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mdl = source::read::read_mdl(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let problems = source::anim_problems(&mdl);
    Ok((source::pose::pose_report(&mdl, query, json), problems))
}
