//! Helpers shared by the Source back-end tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mdlc::build::build_model;
use mdlc::diag::{Diagnostic, Sources};
use mdlc::driver::{read_project, InputKind};
use mdlc::formats::source::{self, read};
use mdlc::load::fs::RealFs;

/// The files `compile` returns: (name, bytes).
pub type Output = Vec<(String, Vec<u8>)>;

pub fn compile_qc(qc: &Path) -> (Option<Output>, Vec<Diagnostic>) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let Some(spec) = read_project(qc, InputKind::Qc, &RealFs, None, &mut sources, &mut diags)
    else {
        return (None, diags);
    };
    let Some(model) = build_model(&spec, &RealFs, &mut sources, &mut diags) else {
        return (None, diags);
    };
    if diags.iter().any(|d| d.is_error()) {
        return (None, diags);
    }
    let out = source::compile(&model, &mut diags);
    (out, diags)
}

/// Writes the files under `dir` and returns the MDL's path.
pub fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> PathBuf {
    let mut mdl = None;
    for (name, bytes) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        if name.ends_with(".mdl") {
            mdl = Some(p);
        }
    }
    mdl.expect("an .mdl among the files")
}

pub fn close(a: &[f32], b: &[f32], eps: f32) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= eps)
}

pub fn quat_close(a: [f32; 4], b: [f32; 4], eps: f32) -> bool {
    close(&a, &b, eps) || close(&a, &b.map(|x| -x), eps)
}

/// LOD-0 triangles of every model as sorted position triples, quantised to 1e-3.
pub fn lod0_triangles(f: &source::Files) -> Result<BTreeSet<[[i64; 3]; 3]>, String> {
    let vvd = f.vvd.as_ref().ok_or("no vvd")?;
    let (_, vtx) = f.vtx.first().ok_or("no vtx")?;
    let mut out = BTreeSet::new();
    let q = |x: f32| (x * 1000.0).round() as i64;
    for (bp, vbp) in f.mdl.body_parts.iter().zip(&vtx.body_parts) {
        for (md, vm) in bp.models.iter().zip(vbp) {
            let Some(lod) = vm.first() else { continue };
            let base = md.rec.vertexindex / 48;
            for (me, vme) in md.meshes.iter().zip(&lod.meshes) {
                for t in read::mesh_triangles(vme, base + me.rec.vertexoffset)? {
                    let mut pts = t.map(|i| {
                        vvd.vertices
                            .get(i)
                            .map(|v| v.vec_position.map(q))
                            .unwrap_or([0; 3])
                    });
                    // canonical rotation keeps winding
                    let m = (0..3).min_by_key(|&k| pts[k]).unwrap();
                    pts.rotate_left(m);
                    out.insert(pts);
                }
            }
        }
    }
    Ok(out)
}

/// The LOD-0 triangles of every mesh as corner positions, in file order (duplicates kept).
pub fn lod0_triangle_list(f: &source::Files) -> Result<Vec<[[f32; 3]; 3]>, String> {
    let vvd = f.vvd.as_ref().ok_or("no vvd")?;
    let (_, vtx) = f.vtx.first().ok_or("no vtx")?;
    let mut out = Vec::new();
    for (bp, vbp) in f.mdl.body_parts.iter().zip(&vtx.body_parts) {
        for (md, vm) in bp.models.iter().zip(vbp) {
            let Some(lod) = vm.first() else { continue };
            let base = md.rec.vertexindex / 48;
            for (me, vme) in md.meshes.iter().zip(&lod.meshes) {
                for t in read::mesh_triangles(vme, base + me.rec.vertexoffset)? {
                    out.push(t.map(|i| vvd.vertices.get(i).map_or([0.0; 3], |v| v.vec_position)));
                }
            }
        }
    }
    Ok(out)
}

/// How many triangles of `a` have no partner in `b`: a triangle of `b` not used by another
/// match whose corners, in the same winding (any rotation), are each within `tol` on every axis.
/// Positions are compared with a tolerance, not rounded, so two positions a float ulp apart
/// on either side of a rounding boundary still match.
pub fn unmatched_triangles(a: &[[[f32; 3]; 3]], b: &[[[f32; 3]; 3]], tol: f32) -> usize {
    use std::collections::HashMap;
    let cell = |t: &[[f32; 3]; 3]| {
        let c = [0, 1, 2].map(|k| (t[0][k] + t[1][k] + t[2][k]) / 3.0);
        c.map(|x| (x / (4.0 * tol)).floor() as i64)
    };
    let mut grid: HashMap<[i64; 3], Vec<usize>> = HashMap::new();
    for (i, t) in b.iter().enumerate() {
        grid.entry(cell(t)).or_default().push(i);
    }
    let close = |p: [f32; 3], q: [f32; 3]| (0..3).all(|k| (p[k] - q[k]).abs() <= tol);
    let same = |x: &[[f32; 3]; 3], y: &[[f32; 3]; 3]| {
        (0..3).any(|r| (0..3).all(|k| close(x[k], y[(k + r) % 3])))
    };
    let mut used = vec![false; b.len()];
    let mut missing = 0;
    for t in a {
        let c = cell(t);
        let mut found = None;
        'search: for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    for &j in grid
                        .get(&[c[0] + dx, c[1] + dy, c[2] + dz])
                        .map_or(&[][..], |v| v)
                    {
                        if !used[j] && same(t, &b[j]) {
                            found = Some(j);
                            break 'search;
                        }
                    }
                }
            }
        }
        match found {
            Some(j) => used[j] = true,
            None => missing += 1,
        }
    }
    missing
}

pub fn oracle_python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("MDLC_ORACLE_PYTHON") {
        return Some(PathBuf::from(p));
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("MDLC_ORACLE_PYTHON is not set; CI must provide the oracle virtualenv");
    }
    let local = PathBuf::from("/tmp/oracle-venv/bin/python");
    if local.is_file() {
        Some(local)
    } else {
        eprintln!("skipping the Python oracles: no MDLC_ORACLE_PYTHON and no /tmp/oracle-venv");
        None
    }
}

/// Runs the Python oracle `tests/oracle/<script>` on `file` and returns the JSON it prints;
/// panics when it fails. `None` when the oracles are not available (never under CI).
pub fn oracle_json(script: &str, file: &Path) -> Option<serde_json::Value> {
    let py = oracle_python()?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oracle")
        .join(script);
    let out = std::process::Command::new(py)
        .arg(path)
        .arg(file)
        .output()
        .expect("run the oracle");
    assert!(
        out.status.success(),
        "{script} failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("oracle JSON"))
}

/// Runs tests/oracle/check_source.py (valvemdl validate() + srctools) on an MDL; panics on
/// any problem they report. Returns the oracle's JSON summary.
pub fn oracle_check(mdl: &Path) -> Option<serde_json::Value> {
    let v = oracle_json("check_source.py", mdl)?;
    for k in ["valvemdl", "srctools"] {
        let problems = v[k].as_array().cloned().unwrap_or_default();
        assert!(
            problems.is_empty(),
            "{k} on {}: {problems:?}",
            mdl.display()
        );
    }
    Some(v["summary"].clone())
}

/// A fresh scratch folder for one test (`kind` keeps the suites apart).
pub fn tmp(kind: &str, name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mdlc-{kind}-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An SMD with a chain of `nodes` bones (`b0` … each 1 unit along X from its parent) and the
/// given triangle lines.
pub fn smd(nodes: usize, tris: &str) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("version 1\nnodes\n");
    for i in 0..nodes {
        let p = if i == 0 { -1 } else { i as i32 - 1 };
        let _ = writeln!(s, "{i} \"b{i}\" {p}");
    }
    s.push_str("end\nskeleton\ntime 0\n");
    for i in 0..nodes {
        let _ = writeln!(s, "{i} {} 0 0 0 0 0", if i == 0 { 0 } else { 1 });
    }
    s.push_str("end\ntriangles\n");
    s.push_str(tris);
    s.push_str("end\n");
    s
}

/// Triangle lines of 60 quads along X, each corner weighted to 4 consecutive bones of 60
/// (0.4, 0.3, 0.2, 0.1): the 60-bone, 4-weight test mesh.
pub fn sixty_bone_quads() -> String {
    use std::fmt::Write as _;
    let mut tris = String::new();
    for i in 0..60 {
        let x0 = i as f32;
        let x1 = x0 + 1.0;
        let link = |b: usize| {
            let bs = [b % 60, (b + 1) % 60, (b + 2) % 60, (b + 3) % 60];
            format!("4 {} 0.4 {} 0.3 {} 0.2 {} 0.1", bs[0], bs[1], bs[2], bs[3])
        };
        let _ = writeln!(
            tris,
            "skin\n0 {x0} 0 0 0 0 1 0 0 {}\n0 {x1} 0 0 0 0 1 1 0 {}\n0 {x1} 1 0 0 0 1 1 1 {}",
            link(i),
            link(i + 1),
            link(i + 1)
        );
        let _ = writeln!(
            tris,
            "skin\n0 {x0} 0 0 0 0 1 0 0 {}\n0 {x1} 1 0 0 0 1 1 1 {}\n0 {x0} 1 0 0 0 1 0 1 {}",
            link(i),
            link(i + 1),
            link(i)
        );
    }
    tris
}

/// Builds the IR of a project (QC or TOML, chosen by the extension) and compiles it with the
/// Source back end: (IR, files, diagnostics). The IR is `None` when building failed; the files
/// are `None` when the IR or the back end had errors.
pub fn compile_with_ir(
    project: &Path,
) -> (
    Option<mdlc::ir::model::Model>,
    Option<Output>,
    Vec<Diagnostic>,
) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let kind = InputKind::of(project).expect("a .qc or .toml project");
    let Some(spec) = read_project(project, kind, &RealFs, None, &mut sources, &mut diags) else {
        return (None, None, diags);
    };
    let Some(model) = build_model(&spec, &RealFs, &mut sources, &mut diags) else {
        return (None, None, diags);
    };
    if diags.iter().any(|d| d.is_error()) {
        return (Some(model), None, diags);
    }
    let out = source::compile(&model, &mut diags);
    (Some(model), out, diags)
}

/// Runs tests/oracle/sequences.py (valvemdl and srctools) on an MDL and returns its JSON:
/// `{"valvemdl": {...} | null, "srctools": {...} | null, "errors": {"valvemdl": [..],
/// "srctools": [..]}}`. `None` when the oracles are not available (never under CI).
pub fn oracle_sequences(mdl: &Path) -> Option<serde_json::Value> {
    oracle_json("sequences.py", mdl)
}

/// Each diagnostic but notes (N…) as (code, the text its primary label covers in `text`).
pub fn codes_at(diags: &[Diagnostic], text: &str) -> Vec<(String, String)> {
    diags
        .iter()
        .filter(|d| !d.code.as_str().starts_with('N'))
        .map(|d| {
            let l = d.labels.iter().find(|l| l.primary).unwrap();
            let (s, e) = (l.at.span.start as usize, l.at.span.end as usize);
            (d.code.as_str().to_string(), text[s..e].to_string())
        })
        .collect()
}
