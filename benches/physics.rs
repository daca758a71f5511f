//! Benchmark of collision models (issue 19): the convex hull and the concave decomposition of
//! large physics meshes.
//!
//! Run: `cargo bench --bench physics` (best of 5; `--runs N` or `MDLC_BENCH_RUNS=N` after `--`).
//!
//! Sections:
//! 1. **hulls** (`formats::source::physics::convex_hull`, exact integer quickhull): points spread in a ball (few on the
//!    hull: 10,000, 100,000 and 1,000,000 points) and points on a sphere (all on the hull: 1,000
//!    and 2,000);
//! 2. **a whole build** of a generated prop whose `$concave` collision mesh is 20 separate
//!    spheres of 3,200 triangles each (64,000 triangles; a piece holds at most 4,095, so a
//!    sphere of 5,000 would be E0663): in-process compile (read the QC and
//!    SMDs, decompose into parts, 20 hulls, lay out the model and the `.phy`; nothing written).

#![allow(clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mdlc::diag::{Severity, Sources};
use mdlc::driver::{self, InputKind};
use mdlc::formats::source::physics::convex_hull;
use mdlc::load::fs::RealFs;

/// A small deterministic generator (xorshift), so every run times the same points.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn in_ball(n: usize) -> Vec<[f64; 3]> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let p = [
            r.unit() * 2.0 - 1.0,
            r.unit() * 2.0 - 1.0,
            r.unit() * 2.0 - 1.0,
        ];
        if p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= 1.0 {
            out.push(p.map(|c| c * 50.0));
        }
    }
    out
}

/// `n` points on a sphere of radius 50 (a Fibonacci lattice).
fn on_sphere(n: usize) -> Vec<[f64; 3]> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..n)
        .map(|i| {
            let y = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - y * y).sqrt();
            let t = golden * i as f64;
            [50.0 * r * t.cos(), 50.0 * y, 50.0 * r * t.sin()]
        })
        .collect()
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        last = Some(v);
    }
    (best, last.expect("at least one run"))
}

/// A sphere of `rings × segments × 2` triangles around `c`, smooth normals.
fn sphere_smd(s: &mut String, c: [f64; 3], rings: usize, segments: usize) {
    let point = |i: usize, j: usize| {
        let th = std::f64::consts::PI * i as f64 / rings as f64;
        let ph = 2.0 * std::f64::consts::PI * j as f64 / segments as f64;
        let n = [th.sin() * ph.cos(), th.sin() * ph.sin(), th.cos()];
        (
            [c[0] + 10.0 * n[0], c[1] + 10.0 * n[1], c[2] + 10.0 * n[2]],
            n,
        )
    };
    for i in 0..rings {
        for j in 0..segments {
            let q = [
                point(i, j),
                point(i + 1, j),
                point(i + 1, j + 1),
                point(i, j + 1),
            ];
            for t in [[0, 1, 2], [0, 2, 3]] {
                s.push_str("phys\n");
                for k in t {
                    let (p, n) = q[k];
                    let _ = writeln!(
                        s,
                        "0 {:.4} {:.4} {:.4} {:.4} {:.4} {:.4} 0 0",
                        p[0], p[1], p[2], n[0], n[1], n[2]
                    );
                }
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .or_else(|| std::env::var("MDLC_BENCH_RUNS").ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);

    println!("1. convex hulls (best of {runs})");
    for n in [10_000, 100_000, 1_000_000] {
        let pts = in_ball(n);
        let (t, h) = best(runs, || convex_hull(&pts));
        let (p, tr) = h.map_or((0, 0), |h| (h.points.len(), h.tris.len()));
        println!(
            "   {n:>9} points in a ball:   {:>9.2} ms  ({p} hull points, {tr} triangles)",
            t.as_secs_f64() * 1e3
        );
    }
    for n in [1_000, 2_000] {
        let pts = on_sphere(n);
        let (t, h) = best(runs, || convex_hull(&pts));
        let (p, tr) = h.map_or((0, 0), |h| (h.points.len(), h.tris.len()));
        println!(
            "   {n:>9} points on a sphere: {:>9.2} ms  ({p} hull points, {tr} triangles)",
            t.as_secs_f64() * 1e3
        );
    }

    // 2. a generated prop with a concave collision mesh of 20 spheres
    let dir = std::env::temp_dir().join(format!("mdlc-bench-physics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let mut smd = String::from(
        "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\n",
    );
    for k in 0..20 {
        sphere_smd(&mut smd, [30.0 * k as f64, 0.0, 0.0], 40, 40);
    }
    smd.push_str("end\n");
    std::fs::write(dir.join("phys.smd"), &smd).expect("write the mesh");
    std::fs::write(
        dir.join("prop.qc"),
        "$modelname \"bench/prop.mdl\"\n$body body \"phys.smd\"\n$sequence idle \"phys.smd\"\n\
         $collisionmodel \"phys.smd\" {\n $concave\n $maxconvexpieces 20\n $mass 100\n}\n",
    )
    .expect("write the QC");
    let qc = dir.join("prop.qc");
    let (t, ok) = best(runs, || compile(&qc));
    println!(
        "2. build of a prop with a $concave collision mesh of 20 spheres (64,000 triangles), \
         in-process, best of {runs}: {:.1} ms ({})",
        t.as_secs_f64() * 1e3,
        if ok { "ok" } else { "FAILED" }
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads and compiles the QC in-process; whether it compiled without error.
fn compile(qc: &Path) -> bool {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let Some(spec) =
        driver::read_project(qc, InputKind::Qc, &RealFs, None, &mut sources, &mut diags)
    else {
        return false;
    };
    let out = driver::compile_source(&spec, &RealFs, None, &mut sources, &mut diags, None);
    let phy = out.as_ref().is_some_and(|f| {
        f.iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "phy"))
    });
    phy && !diags.iter().any(|d| d.severity == Severity::Error)
}
