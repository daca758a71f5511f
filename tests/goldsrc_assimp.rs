//! An independent reader of GoldSrc models: Assimp's Half-Life 1 MDL importer (the `assimp`
//! command line tool, Debian package `assimp-utils`; `.ci/run` installs it). Every GoldSrc model
//! mdlc builds here — the 42 QCs of `goldsrc-hl1` (among them the 7 that Valve's tool cannot
//! compile), `gs-man` (external textures, a sequence group, blends), `gs-chrome-sphere`, the
//! bundled example and the hand-written fixtures — is written with `mdlc build`, loaded by
//! `assimp info` (which also reads the `T.mdl` and `NN.mdl` companions), and what Assimp reports
//! is compared with what the files hold, read by mdlc's reader and, for the triangles, by a
//! command-list decoder written here:
//!
//! - the import succeeds;
//! - one mesh per mesh record, in body part → model → mesh order, each with the triangles its
//!   command list decodes to, the bones its vertices use, and as many vertices as distinct
//!   (vertex, normal, s, t) corners;
//! - the texture names, the bone names in order, the body parts with their models' names;
//! - one animation per sequence blend, named after its sequence, and `blends × bones` channels;
//! - the sequence groups, the sequences with their events, the attachments, hit boxes and bone
//!   controllers (counted);
//! - the model-space box of every vertex in the rest pose (Assimp places the bone-space vertices
//!   with the bones' positions and angles; the test does it on its own in f64), within 1e-3;
//! - every frame of every animation (`assimp dump`): each bone's position and rotation as
//!   Assimp decodes the run-length channels equal the file's, decoded by mdlc's `rle::decode`
//!   and turned into a quaternion here (the root bones, which Assimp turns into its axes, are
//!   left out).
//!
//! `MDLC_ASSIMP` names another `assimp` binary. Without one the test fails under CI
//! (`CI=true`) and is skipped elsewhere with a message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use mdlc::formats::goldsrc::read;

fn assimp() -> Option<PathBuf> {
    let bin = std::env::var_os("MDLC_ASSIMP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("assimp"));
    let ok = Command::new(&bin)
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(bin);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "`{}` does not run: CI must install Assimp (Debian package assimp-utils)",
            bin.display()
        );
    }
    eprintln!("skipping: no `assimp` (install the Debian package assimp-utils)");
    None
}

/// What `assimp info` prints of a model.
#[derive(Debug, Default)]
struct Info {
    /// (vertices, bones, faces) per mesh.
    meshes: Vec<(usize, usize, usize)>,
    textures: Vec<String>,
    animations: Vec<String>,
    channels: usize,
    /// The node hierarchy: (depth, name) per line below the root.
    nodes: Vec<(usize, String)>,
    /// The scene's smallest and largest vertex coordinates (`Minimum point`, `Maximum point`).
    min: Option<[f64; 3]>,
    max: Option<[f64; 3]>,
}

/// `(x y z)` after a label.
fn point(t: &str) -> Option<[f64; 3]> {
    let inner = t.split_once('(')?.1.split_once(')')?.0;
    let v: Vec<f64> = inner
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

fn parse_info(text: &str) -> Info {
    let mut info = Info::default();
    let mut section = "";
    for line in text.lines() {
        let t = line.trim();
        if let Some(n) = t.strip_prefix("Animation Channels:") {
            info.channels = n.trim().parse().unwrap();
            continue;
        }
        if t.starts_with("Minimum point") {
            info.min = point(t);
            continue;
        }
        if t.starts_with("Maximum point") {
            info.max = point(t);
            continue;
        }
        if t.starts_with("Meshes:  (name)") {
            section = "meshes";
            continue;
        }
        if t == "Texture Refs:" {
            section = "textures";
            continue;
        }
        if t == "Named Animations:" {
            section = "animations";
            continue;
        }
        if t == "Node hierarchy:" {
            section = "nodes";
            continue;
        }
        if t.is_empty() || t.ends_with(':') {
            section = "";
            continue;
        }
        match section {
            "meshes" => {
                // `0 (name): [462 / 11 / 452 | triangle]`
                let inner = t
                    .rsplit_once('[')
                    .and_then(|(_, r)| r.split_once('|'))
                    .map(|(l, _)| l)
                    .unwrap_or_else(|| panic!("mesh line `{t}`"));
                let n: Vec<usize> = inner
                    .split('/')
                    .map(|x| x.trim().parse().unwrap())
                    .collect();
                info.meshes.push((n[0], n[1], n[2]));
            }
            "textures" => info.textures.push(t.trim_matches('\'').to_string()),
            "animations" => info.animations.push(t.trim_matches('\'').to_string()),
            "nodes" if t != "<MDL_root>" => {
                // `│ ├╴name`: two characters per level, then the branch.
                let chars: Vec<char> = line.chars().collect();
                let at = chars
                    .iter()
                    .position(|&c| c == '├' || c == '└')
                    .unwrap_or_else(|| panic!("node line `{line}`"));
                let name: String = chars[at + 2..].iter().collect();
                info.nodes.push((at / 2, name));
            }
            _ => {}
        }
    }
    info
}

/// The children of the node `path` (names from the root's children down), with their own
/// children's lines.
fn children<'a>(nodes: &'a [(usize, String)], path: &[&str]) -> Vec<(&'a str, usize)> {
    let mut lo = 0;
    let mut hi = nodes.len();
    for (depth, want) in path.iter().enumerate() {
        let Some(i) = (lo..hi).find(|&i| nodes[i].0 == depth && nodes[i].1 == *want) else {
            return Vec::new();
        };
        let end = (i + 1..hi).find(|&j| nodes[j].0 <= depth).unwrap_or(hi);
        lo = i + 1;
        hi = end;
    }
    let depth = path.len();
    let mut out = Vec::new();
    for i in lo..hi {
        if nodes[i].0 == depth {
            let sub = (i + 1..hi)
                .take_while(|&j| nodes[j].0 > depth)
                .filter(|&j| nodes[j].0 == depth + 1)
                .count();
            out.push((nodes[i].1.as_str(), sub));
        }
    }
    out
}

/// Names as Assimp's importer makes them unique: an empty name becomes `{empty}_k`, and every
/// repeat of a name after its first use gets `_0`, `_1`, … appended.
fn assimp_names<'a>(names: impl IntoIterator<Item = &'a str>, empty: &str) -> Vec<String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut empties = 0;
    let mut out = Vec::new();
    for n in names {
        if n.is_empty() {
            out.push(format!("{empty}_{empties}"));
            empties += 1;
            continue;
        }
        let k = seen.entry(n.to_string()).or_insert(0);
        out.push(if *k == 0 {
            n.to_string()
        } else {
            format!("{n}_{}", *k - 1)
        });
        *k += 1;
    }
    out
}

fn i16_at(bytes: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

/// Decodes a triangle command list written at `at`: the corners of every triangle as
/// (vertex, normal, s, t), and the triangle count.
fn corners(bytes: &[u8], mut at: usize) -> (Vec<[i16; 4]>, usize) {
    let mut out = Vec::new();
    let mut tris = 0;
    loop {
        let c = i16_at(bytes, at).expect("command list runs past the file");
        at += 2;
        if c == 0 {
            return (out, tris);
        }
        let n = c.unsigned_abs() as usize;
        for _ in 0..n {
            let v: Vec<i16> = (0..4).map(|k| i16_at(bytes, at + 2 * k).unwrap()).collect();
            out.push([v[0], v[1], v[2], v[3]]);
            at += 8;
        }
        tris += n.saturating_sub(2);
    }
}

/// The model-space bounds of every vertex a triangle uses, in the rest pose: each bone's
/// matrix from its position and Euler angles (`R = Rz·Ry·Rx`, goldsrc.md §8.1) concatenated
/// down from the root, applied to the bone-space vertices the file stores. Computed here in
/// f64, independently of mdlc's own transforms.
fn rest_bounds(bytes: &[u8], parsed: &read::Parsed) -> Option<([f64; 3], [f64; 3])> {
    type M = [[f64; 4]; 3];
    let local = |v: &[f32; 6]| -> M {
        let (sx, cx) = f64::from(v[3]).sin_cos();
        let (sy, cy) = f64::from(v[4]).sin_cos();
        let (sz, cz) = f64::from(v[5]).sin_cos();
        [
            [
                cz * cy,
                cz * sy * sx - sz * cx,
                cz * sy * cx + sz * sx,
                f64::from(v[0]),
            ],
            [
                sz * cy,
                sz * sy * sx + cz * cx,
                sz * sy * cx - cz * sx,
                f64::from(v[1]),
            ],
            [-sy, cy * sx, cy * cx, f64::from(v[2])],
        ]
    };
    let mul = |a: &M, b: &M| -> M {
        let mut o = [[0.0; 4]; 3];
        for (r, row) in o.iter_mut().enumerate() {
            for (c, x) in row.iter_mut().enumerate() {
                *x = (0..3).map(|k| a[r][k] * b[k][c]).sum::<f64>()
                    + if c == 3 { a[r][3] } else { 0.0 };
            }
        }
        o
    };
    let mut world: Vec<M> = Vec::new();
    for b in &parsed.bones {
        let l = local(&b.value);
        let w = match usize::try_from(b.parent).ok().and_then(|p| world.get(p)) {
            Some(p) => mul(p, &l),
            None => l,
        };
        world.push(w);
    }
    let f32_at = |o: usize| f32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for bp in &parsed.bodyparts {
        for m in &bp.models {
            for mesh in &m.meshes {
                for c in corners(bytes, mesh.triindex as usize).0 {
                    let v = c[0] as usize;
                    let bone = bytes[m.model.vertinfoindex as usize + v] as usize;
                    let at = m.model.vertindex as usize + 12 * v;
                    let p = [f32_at(at), f32_at(at + 4), f32_at(at + 8)].map(f64::from);
                    let w = world.get(bone)?;
                    for a in 0..3 {
                        let x = w[a][0] * p[0] + w[a][1] * p[1] + w[a][2] * p[2] + w[a][3];
                        lo[a] = lo[a].min(x);
                        hi[a] = hi[a].max(x);
                    }
                }
            }
        }
    }
    (lo[0] <= hi[0]).then_some((lo, hi))
}

/// Compares Assimp's view of the model `main` (with its companions beside it) with the files.
/// Returns how many bone frames of animation were compared.
fn check(bin: &Path, main: &Path) -> Result<usize, String> {
    let dir = main.parent().unwrap();
    let name = main.file_name().unwrap();
    let out = Command::new(bin)
        .current_dir(dir)
        .arg("info")
        .arg(name)
        // a raw import: no post-processing (which would split degenerate triangles off as
        // lines and join vertices)
        .arg("-r")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("Importing file") {
        return Err(format!(
            "assimp cannot load it ({}): {}{}",
            out.status,
            text.lines()
                .filter(|l| l.contains("ERROR"))
                .collect::<Vec<_>>()
                .join("; "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let info = parse_info(&text);

    let bytes = std::fs::read(main).unwrap();
    let stem = main.file_stem().unwrap().to_string_lossy().into_owned();
    let tfile = dir.join(format!("{stem}T.mdl"));
    let tbytes = std::fs::read(&tfile).ok();
    let hdr = read::header(&bytes).map_err(|e| e.0)?;
    let group_files: Vec<Vec<u8>> = (1..hdr.numseqgroups)
        .map(|g| std::fs::read(dir.join(format!("{stem}{g:02}.mdl"))).unwrap())
        .collect();
    let group_refs: Vec<&[u8]> = group_files.iter().map(|g| g.as_slice()).collect();
    let parsed = read::parse(&bytes, tbytes.as_deref(), &group_refs).map_err(|e| e.0)?;
    let dump_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mdlc-assimp-{stem}.assxml"));
    let dumped = Command::new(bin)
        .current_dir(dir)
        .arg("dump")
        .arg(name)
        .arg(&dump_path)
        .arg("-r")
        .output()
        .unwrap();
    let dump_text = std::fs::read_to_string(&dump_path).unwrap_or_default();
    let _ = std::fs::remove_file(&dump_path);
    if !dumped.status.success() || dump_text.is_empty() {
        return Err(format!("assimp dump fails ({})", dumped.status));
    }
    if !parsed.problems.is_empty() {
        return Err(format!("mdlc's reader: {:?}", parsed.problems));
    }
    let mut errors = Vec::new();
    let mut expect = |what: &str, ours: String, theirs: String| {
        if ours != theirs {
            errors.push(format!(
                "{what}: the file holds {ours}, Assimp reads {theirs}"
            ));
        }
    };

    // Meshes, in body part → model → mesh order.
    let mut meshes = Vec::new();
    for bp in &parsed.bodyparts {
        for m in &bp.models {
            for mesh in &m.meshes {
                let (cs, tris) = corners(&bytes, mesh.triindex as usize);
                let bones: BTreeSet<u8> = cs
                    .iter()
                    .map(|c| bytes[m.model.vertinfoindex as usize + c[0] as usize])
                    .collect();
                let distinct: BTreeSet<[i16; 4]> = cs.iter().copied().collect();
                assert_eq!(tris, mesh.numtris as usize, "{}: numtris", main.display());
                meshes.push((distinct.len(), bones.len(), tris));
            }
        }
    }
    expect(
        "meshes (vertices, bones, triangles)",
        format!("{meshes:?}"),
        format!("{:?}", info.meshes),
    );
    // Assimp lists the textures material by material (each skin reference with its skin
    // family replacements), so they are compared as sets
    let textures: BTreeSet<&str> = parsed.textures.iter().map(|t| t.name.as_str()).collect();
    let theirs: BTreeSet<&str> = info.textures.iter().map(|t| t.as_str()).collect();
    expect("textures", format!("{textures:?}"), format!("{theirs:?}"));
    let seqs = assimp_names(
        parsed.sequences.iter().map(|s| s.desc.label.as_str()),
        "Sequence",
    );
    let mut animations = Vec::new();
    for (s, name) in parsed.sequences.iter().zip(&seqs) {
        for _ in 0..s.desc.numblends {
            animations.push(name.as_str());
        }
    }
    expect(
        "animations (one per blend)",
        format!("{animations:?}"),
        format!("{:?}", info.animations),
    );
    expect(
        "animation channels",
        (animations.len() * parsed.bones.len()).to_string(),
        info.channels.to_string(),
    );

    let names = |path: &[&str]| -> Vec<String> {
        children(&info.nodes, path)
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect()
    };
    let bones: Vec<String> = parsed.bones.iter().map(|b| b.name.clone()).collect();
    expect(
        "bones",
        format!("{bones:?}"),
        format!("{:?}", names(&["<MDL_bones>"])),
    );
    let parts = assimp_names(
        parsed.bodyparts.iter().map(|b| b.part.name.as_str()),
        "Bodypart",
    );
    expect(
        "body parts",
        format!("{parts:?}"),
        format!("{:?}", names(&["<MDL_bodyparts>"])),
    );
    for (bp, part) in parsed.bodyparts.iter().zip(&parts) {
        let models: Vec<String> = bp.models.iter().map(|m| m.model.name.clone()).collect();
        // Assimp appends the model's mesh indices to the node name: `name (mesh 0, 1)`
        let theirs: Vec<String> = names(&["<MDL_bodyparts>", part])
            .into_iter()
            .map(|n| match n.rsplit_once(" (mesh") {
                Some((l, _)) => l.to_string(),
                None => n,
            })
            .collect();
        expect(
            &format!("models of body part `{}`", bp.part.name),
            format!("{models:?}"),
            format!("{theirs:?}"),
        );
    }
    let groups = assimp_names(
        parsed.seqgroups.iter().map(|g| g.label.as_str()),
        "SequenceGroup",
    );
    expect(
        "sequence groups",
        format!("{groups:?}"),
        format!("{:?}", names(&["<MDL_sequence_groups>"])),
    );
    expect(
        "sequences",
        format!("{seqs:?}"),
        format!("{:?}", names(&["<MDL_sequence_infos>"])),
    );
    for (s, label) in parsed.sequences.iter().zip(&seqs) {
        // a sequence's events are the children of its `AnimationEvents` node
        let events = children(&info.nodes, &["<MDL_sequence_infos>", label])
            .into_iter()
            .find(|(n, _)| *n == "AnimationEvents")
            .map_or(0, |(_, k)| k);
        expect(
            &format!("events of sequence `{label}`"),
            s.events.len().to_string(),
            events.to_string(),
        );
    }
    for (node, ours) in [
        ("<MDL_attachments>", parsed.attachments.len()),
        ("<MDL_hitboxes>", parsed.hitboxes.len()),
        ("<MDL_bone_controllers>", parsed.bonecontrollers.len()),
    ] {
        expect(
            node,
            ours.to_string(),
            children(&info.nodes, &[node]).len().to_string(),
        );
    }
    // Assimp turns GoldSrc's Z-up space into its Y-up one: (x, y, z) → (−y, z, −x), so the
    // file's box [lo, hi] is Assimp's [(−hi.y, lo.z, −hi.x), (−lo.y, hi.z, −lo.x)].
    match (rest_bounds(&bytes, &parsed), info.min, info.max) {
        (Some((lo, hi)), Some(amin), Some(amax)) => {
            let want_min = [-hi[1], lo[2], -hi[0]];
            let want_max = [-lo[1], hi[2], -lo[0]];
            let close = |a: &[f64; 3], b: &[f64; 3]| {
                a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-3 + 1e-5 * x.abs())
            };
            if !close(&want_min, &amin) || !close(&want_max, &amax) {
                errors.push(format!(
                    "rest-pose vertex bounds: the file gives {want_min:?}..{want_max:?} (in Assimp's axes), Assimp {amin:?}..{amax:?}"
                ));
            }
        }
        (None, None, None) => {}
        (ours, amin, amax) => errors.push(format!(
            "rest-pose vertex bounds: the file gives {ours:?}, Assimp {amin:?}..{amax:?}"
        )),
    }
    let frames = compare_animations(
        &parsed,
        &bytes,
        &group_files,
        &parse_dump(&dump_text),
        &mut errors,
    );
    let animated = parsed.bones.iter().any(|b| b.parent >= 0)
        && parsed.sequences.iter().any(|s| s.desc.numframes > 0);
    if frames == 0 && animated && errors.is_empty() {
        errors.push("no animation frame was compared".into());
    }
    if errors.is_empty() {
        Ok(frames)
    } else {
        Err(errors.join("\n    "))
    }
}

/// The animation keys of `assimp dump` (ASSXML): per animation, per node name, the position
/// keys and the rotation keys (four numbers as printed).
type Keys = Vec<(String, Vec<[f64; 3]>, Vec<[f64; 4]>)>;

fn parse_dump(text: &str) -> Vec<Keys> {
    let mut anims: Vec<Keys> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.starts_with("<Animation ") {
            anims.push(Vec::new());
        } else if let Some(rest) = t.strip_prefix("<NodeAnim node=\"") {
            let name = rest.split('"').next().unwrap_or_default().to_string();
            if let Some(a) = anims.last_mut() {
                a.push((name, Vec::new(), Vec::new()));
            }
        } else if t.starts_with("<PositionKey ") || t.starts_with("<RotationKey ") {
            let v: Vec<f64> = lines
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            let Some(node) = anims.last_mut().and_then(|a| a.last_mut()) else {
                continue;
            };
            if t.starts_with("<PositionKey ") {
                node.1.push([v[0], v[1], v[2]]);
            } else {
                node.2.push([v[0], v[1], v[2], v[3]]);
            }
        }
    }
    anims
}

/// The quaternion (w, x, y, z) of `R = Rz(a[2])·Ry(a[1])·Rx(a[0])`.
fn quat(a: [f64; 3]) -> [f64; 4] {
    let (sr, cr) = (a[0] / 2.0).sin_cos();
    let (sp, cp) = (a[1] / 2.0).sin_cos();
    let (sy, cy) = (a[2] / 2.0).sin_cos();
    [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]
}

/// Compares every frame of every animation Assimp decodes with the files' own values, for
/// every bone but the roots (Assimp turns those into its axes): position `value + v·scale` and
/// rotation from `value + v·scale` Euler angles, each channel decoded from the file's run-length
/// words (`goldsrc.md` §8.7, §9). Returns how many bone frames were compared.
fn compare_animations(
    parsed: &read::Parsed,
    main: &[u8],
    groups: &[Vec<u8>],
    dump: &[Keys],
    errors: &mut Vec<String>,
) -> usize {
    let nb = parsed.bones.len();
    let mut compared = 0;
    let mut a = 0usize;
    for s in &parsed.sequences {
        let d = &s.desc;
        let file: &[u8] = match usize::try_from(d.seqgroup) {
            Ok(0) => main,
            Ok(g) => match groups.get(g - 1) {
                Some(f) => f,
                None => continue,
            },
            Err(_) => continue,
        };
        for (q, blend) in s.anims.iter().enumerate() {
            let Some(keys) = dump.get(a) else {
                errors.push(format!("Assimp has no animation {a} (`{}`)", d.label));
                return compared;
            };
            a += 1;
            for (j, (bone, anim)) in parsed.bones.iter().zip(blend).enumerate() {
                if bone.parent < 0 {
                    continue;
                }
                let Some((_, pos, rot)) = keys.iter().find(|k| k.0 == bone.name) else {
                    errors.push(format!("`{}`: no keys for bone `{}`", d.label, bone.name));
                    continue;
                };
                let frames = d.numframes as usize;
                let at = d.animindex as usize + (q * nb + j) * 12;
                let mut chan: Vec<Vec<f64>> = Vec::new();
                for k in 0..6 {
                    let raw = match anim.offset[k] {
                        0 => vec![0i16; frames],
                        o => {
                            let from = at + usize::from(o);
                            let words: Vec<u16> = file
                                .get(from..)
                                .unwrap_or_default()
                                .chunks_exact(2)
                                .map(|w| u16::from_le_bytes([w[0], w[1]]))
                                .collect();
                            match mdlc::formats::goldsrc::rle::decode(&words, frames) {
                                Some(v) => v,
                                None => {
                                    errors.push(format!("`{}`: channel undecodable", d.label));
                                    return compared;
                                }
                            }
                        }
                    };
                    chan.push(
                        raw.iter()
                            .map(|&v| f64::from(bone.value[k] + f32::from(v) * bone.scale[k]))
                            .collect(),
                    );
                }
                if pos.len() != frames || rot.len() != frames {
                    errors.push(format!(
                        "`{}` bone `{}`: {frames} frames, Assimp has {} position and {} rotation keys",
                        d.label,
                        bone.name,
                        pos.len(),
                        rot.len()
                    ));
                    continue;
                }
                for f in 0..frames {
                    let p = [chan[0][f], chan[1][f], chan[2][f]];
                    let r = quat([chan[3][f], chan[4][f], chan[5][f]]);
                    let pos_ok = p
                        .iter()
                        .zip(&pos[f])
                        .all(|(x, y)| (x - y).abs() <= 1e-4 + 1e-5 * x.abs());
                    // ASSXML prints x, y, z, w; q and −q are one rotation
                    let r = [r[1], r[2], r[3], r[0]];
                    let dot: f64 = r.iter().zip(&rot[f]).map(|(x, y)| x * y).sum();
                    if !pos_ok || dot.abs() < 1.0 - 1e-6 {
                        errors.push(format!(
                            "`{}` bone `{}` frame {f}: the file gives {p:?} {r:?}, Assimp {:?} {:?}",
                            d.label, bone.name, pos[f], rot[f]
                        ));
                        return compared;
                    }
                    compared += 1;
                }
            }
        }
    }
    compared
}

/// `NAMET.mdl` or `NAMENN.mdl` beside a `NAME.mdl`.
fn is_companion(p: &Path) -> bool {
    let s = p.file_stem().unwrap().to_string_lossy().into_owned();
    let main_exists = |cut: usize| {
        s.len() > cut
            && s.is_char_boundary(s.len() - cut)
            && p.with_file_name(format!("{}.mdl", &s[..s.len() - cut]))
                .is_file()
    };
    let digits = s.len() > 2 && s[s.len() - 2..].bytes().all(|b| b.is_ascii_digit());
    (s.ends_with('T') && main_exists(1)) || (digits && main_exists(2))
}

/// Builds `project` with `mdlc build` from its folder into `out` and returns the main file.
fn build(project: &Path, extra: &[&str], out: &Path) -> PathBuf {
    let o = Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .current_dir(project.parent().unwrap())
        .arg("build")
        .arg(project.file_name().unwrap())
        .args(extra)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} does not build: {}",
        project.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mains: Vec<PathBuf> = common::files_with_ext(out, &["mdl"])
        .into_iter()
        .filter(|p| !is_companion(p))
        .collect();
    assert_eq!(mains.len(), 1, "{}: {mains:?}", project.display());
    mains.into_iter().next().unwrap()
}

#[test]
fn assimp_reads_every_goldsrc_model_mdlc_builds() {
    let Some(bin) = assimp() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut projects: Vec<(PathBuf, Vec<&str>)> = Vec::new();
    // the hand-written models of the inspect and held-out tests (the other GoldSrc fixtures
    // are sources for tests below the command line, without textures)
    for qc in common::files_with_ext(&root.join("testdata/goldsrc/inspect"), &["qc"]) {
        projects.push((qc, vec![]));
    }
    for qc in ["features/features.qc", "texorder/texorder.qc"] {
        projects.push((root.join("testdata/goldsrc/heldout").join(qc), vec![]));
    }
    // the bundled example, built for GoldSrc
    projects.push((
        root.join("testdata/models/creature/model.toml"),
        vec!["--target", "goldsrc"],
    ));
    if let Some(corpus) = common::corpus_dir() {
        for qc in common::files_with_ext(&corpus.join("goldsrc-hl1/modelsrc"), &["qc"]) {
            projects.push((qc, vec![]));
        }
        projects.push((corpus.join("gs-man/models/man/man.qc"), vec![]));
        projects.push((
            corpus.join("gs-chrome-sphere/models/chrome_sphere/chrome_sphere.qc"),
            vec![],
        ));
    }
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-assimp");
    let _ = std::fs::remove_dir_all(&tmp);
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut frames = 0;
    for (i, (project, extra)) in projects.iter().enumerate() {
        let out = tmp.join(i.to_string());
        std::fs::create_dir_all(&out).unwrap();
        let main = build(project, extra, &out);
        match check(&bin, &main) {
            Ok(n) => {
                checked += 1;
                frames += n;
            }
            Err(e) => failures.push(format!("{}:\n    {e}", project.display())),
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!(
        "assimp read {checked} of {} GoldSrc models; {frames} bone frames of animation agree",
        projects.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} models disagree with Assimp:\n{}",
        failures.len(),
        projects.len(),
        failures.join("\n")
    );
}
