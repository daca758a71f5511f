//! Benchmark of the GoldSrc back end: compiles every QC of `../shared/corpus/goldsrc-hl1`
//! (42 Half-Life models: read the QC and every SMD/BMP, build the model, compile, lay out the
//! files; nothing is written) and prints the total time, the slowest model and the peak memory.
//!
//! Run: `cargo bench --bench goldsrc`. The figures issue 4 compares with (Valve's HL1 studiomdl
//! on this kind of machine): 0.95 s for the 35 QCs it compiles, 0.50 s and 43 MB for its largest
//! model. For a per-process comparison, time the CLI too:
//! `for q in …/*.qc; do (cd "$(dirname "$q")" && /usr/bin/time -f "%e s %M KB" mdlc build "$(basename "$q")" -o /tmp/out); done`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mdlc::diag::Sources;
use mdlc::driver::{self, InputKind};
use mdlc::project::files::RealFs;

fn qcs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            qcs(&p, out);
        } else if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("qc")) {
            out.push(p);
        }
    }
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/goldsrc-hl1/modelsrc/models");
    let mut files = Vec::new();
    qcs(&root, &mut files);
    if files.is_empty() {
        eprintln!("no QC under {}: ../shared is needed", root.display());
        return;
    }
    let runs = 5;
    let mut best_total = f64::INFINITY;
    let mut slowest = (0.0f64, PathBuf::new());
    let mut bytes = 0usize;
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut run_slowest = (0.0f64, PathBuf::new());
        bytes = 0;
        for qc in &files {
            let t = Instant::now();
            let mut sources = Sources::new();
            let mut diags = Vec::new();
            let Some(spec) = driver::read_project(qc, InputKind::Qc, &RealFs, None, &mut sources, &mut diags) else {
                panic!("{}: not readable", qc.display());
            };
            let out = Path::new("/nonexistent-out");
            let files = driver::compile_goldsrc(&spec, &RealFs, Some(out), &mut sources, &mut diags)
                .unwrap_or_else(|| panic!("{} does not compile", qc.display()));
            bytes += files.iter().map(|(_, b)| b.len()).sum::<usize>();
            std::hint::black_box(&files);
            let secs = t.elapsed().as_secs_f64();
            if secs > run_slowest.0 {
                run_slowest = (secs, qc.clone());
            }
        }
        let total = t0.elapsed().as_secs_f64();
        if total < best_total {
            best_total = total;
            slowest = run_slowest;
        }
    }
    println!(
        "{} QCs compiled in {:.3} s (best of {runs}; {:.1} MB of output), slowest {} in {:.3} s, peak memory {:.1} MB",
        files.len(),
        best_total,
        bytes as f64 / 1e6,
        slowest.1.strip_prefix(&root).unwrap_or(&slowest.1).display(),
        slowest.0,
        peak_rss_kb() as f64 / 1024.0
    );
}
