//! `mdlc inspect` of a Source model: the MDL with its `.vvd` and `.vtx` siblings read from the
//! disk (or any [`Fs`]), dumped record by record, and the invariants between them checked.

use std::path::Path;

use crate::formats::source::{self, pose::PoseError, pose::PoseQuery, strips::Variant, Files};
use crate::load::Fs;

/// `NAME.ext` beside `NAME.mdl`; also for a file named just `.mdl` (which Rust sees as a stem
/// without extension), as a `$modelname` ending in `/` gives.
fn sibling(path: &Path, ext: &str) -> std::path::PathBuf {
    let s = path.to_string_lossy();
    let stem = match s.len().checked_sub(4).filter(|&i| s.is_char_boundary(i)) {
        Some(i) if s[i..].eq_ignore_ascii_case(".mdl") => std::path::PathBuf::from(&s[..i]),
        _ => path.with_extension(""),
    };
    let mut s = stem.into_os_string();
    s.push(".");
    s.push(ext);
    std::path::PathBuf::from(s)
}

/// Reads an MDL, with the `.ani` file beside it when the MDL has anim blocks and the file is
/// there (the engine finds it by the name in the MDL, relative to the game folder; beside the
/// MDL is where a build puts it).
fn read_mdl(path: &Path, fs: &dyn Fs) -> Result<source::read::Mdl, String> {
    let bytes = fs
        .read(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let has_blocks = source::records::read::<source::records::StudioHdr>(&bytes, 0, "header")
        .is_ok_and(|h| h.numanimblocks > 1);
    let ani_path = sibling(path, "ani");
    let ani = if has_blocks {
        fs.read(&ani_path).ok()
    } else {
        None
    };
    source::read::read_mdl_ani(&bytes, ani.as_deref()).map_err(|e| {
        let which = if ani.is_some() {
            format!("{} with {}", path.display(), ani_path.display())
        } else {
            path.display().to_string()
        };
        format!("{which}: {e}")
    })
}

/// Reads an MDL and whichever siblings exist beside it (`NAME.ani`, `NAME.vvd`,
/// `NAME.dx90.vtx`, …).
pub fn read_files(path: &Path, fs: &dyn Fs) -> Result<Files, String> {
    let mdl = read_mdl(path, fs)?;
    let sibling = |ext: &str| sibling(path, ext);
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
    let mdl = read_mdl(path, fs)?;
    let problems = source::anim_problems(&mdl);
    Ok((source::pose::pose_report(&mdl, query, json), problems))
}

/// What `--flex` gives: the report (or the model's flex names when it has no such flex), and the
/// face's invariant problems.
pub type FlexInspection = (Result<String, Vec<String>>, Vec<String>);

/// `mdlc inspect --flex NAME`: the vertex deltas of one flex ([`source::face_read::flex_report`]),
/// vertex positions from the VVD beside the model; with the face's invariant problems.
pub fn inspect_flex(
    path: &Path,
    fs: &dyn Fs,
    name: &str,
    json: bool,
) -> Result<FlexInspection, String> {
    let f = read_files(path, fs)?;
    let problems = source::face_read::problems(&f.mdl.face, f.mdl.bones.len());
    let models: Vec<&source::read::RModel> =
        f.mdl.body_parts.iter().flat_map(|b| &b.models).collect();
    let positions = |k: usize, m: usize, i: u16| -> Option<[f32; 3]> {
        let model = models.get(k)?;
        let mesh = model.meshes.get(m)?;
        let at = usize::try_from(model.rec.vertexindex / 48 + mesh.rec.vertexoffset).ok()?;
        let v = f.vvd.as_ref()?.vertices.get(at + usize::from(i))?;
        Some(v.vec_position)
    };
    Ok((
        source::face_read::flex_report(&f.mdl.face, name, &positions, json),
        problems,
    ))
}

/// `mdlc inspect x.phy` (its bytes already read): the collision model's dump and its
/// invariants, the checksum compared with the `.mdl` beside it when there is one.
pub fn inspect_phy(
    path: &Path,
    bytes: &[u8],
    fs: &dyn Fs,
    json: bool,
) -> Result<(String, Vec<String>), String> {
    let p = source::phy::read_phy(bytes)?;
    let mdl_checksum = fs.read(&path.with_extension("mdl")).ok().and_then(|m| {
        m.get(8..12)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    });
    let problems = source::phy::problems(&p, mdl_checksum);
    let text = if json {
        let mut t = source::phy::to_json(&p, &problems).to_string();
        t.push('\n');
        t
    } else {
        source::phy::to_text(&p, &problems)
    };
    Ok((text, problems))
}
