#![allow(clippy::expect_used)]
//! Benchmark of the SMD front end: lexing + parsing + lowering a generated ~100 MB reference SMD
//! (weighted triangles, Source style) and a ~100 MB animation SMD.
//!
//! Run: `cargo bench --bench frontend` (add `-- --mb 20` for a smaller input, `-- --write DIR` to
//! keep the generated files for timing `mdlc check` on them). Prints, per file,
//! the size, the best of several runs as MB/s on one core, and the peak memory the parse and
//! lowering added (Linux: VmHWM after resetting it through /proc/self/clear_refs). Then the
//! same for every SMD of the Half-Life corpus (`../shared/corpus/goldsrc-hl1`, when present):
//! real exporters' text, rigid vertices, as the GoldSrc back end reads it (`-- --corpus-only`
//! skips the generated files; `--runs N` sets the number of runs).

use std::time::Instant;

use mdlc::diag::{FileId, Sources};
use mdlc::smd;

mod common;

/// Deterministic xorshift generator: the same input every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self, scale: f32) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
    }
}

const BONES: usize = 60;

fn header(out: &mut String) {
    out.push_str("version 1\nnodes\n");
    for b in 0..BONES {
        let parent = if b == 0 { -1 } else { (b as i64 - 1) / 2 };
        out.push_str(&format!("{b} \"Bip01 Bone{b}\" {parent}\n"));
    }
    out.push_str("end\n");
}

fn reference(target: usize) -> (String, usize) {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let mut s = String::with_capacity(target + 4096);
    header(&mut s);
    s.push_str("skeleton\ntime 0\n");
    for b in 0..BONES {
        s.push_str(&format!(
            "{b} {:.6} {:.6} {:.6} {:.6} {:.6} {:.6}\n",
            rng.f(10.0),
            rng.f(10.0),
            rng.f(10.0),
            rng.f(3.1),
            rng.f(3.1),
            rng.f(3.1)
        ));
    }
    s.push_str("end\ntriangles\n");
    let mut tris = 0;
    while s.len() < target {
        s.push_str(if tris % 3 == 0 {
            "creature_skin\n"
        } else {
            "models/creature/eyes.vmt\n"
        });
        for _ in 0..3 {
            let b0 = (rng.next() % BONES as u64) as usize;
            let b1 = (b0 + 1) % BONES;
            let w = (rng.next() % 1000) as f32 / 1000.0;
            s.push_str(&format!(
                "{b0} {:.6} {:.6} {:.6} {:.6} {:.6} {:.6} {:.6} {:.6} 2 {b0} {:.6} {b1} {:.6}\n",
                rng.f(50.0),
                rng.f(50.0),
                rng.f(50.0),
                rng.f(1.0),
                rng.f(1.0),
                rng.f(1.0),
                rng.f(1.0).abs(),
                rng.f(1.0).abs(),
                w,
                1.0 - w
            ));
        }
        tris += 1;
    }
    s.push_str("end\n");
    (s, tris)
}

fn animation(target: usize) -> (String, usize) {
    let mut rng = Rng(0xD1B54A32D192ED03);
    let mut s = String::with_capacity(target + 4096);
    header(&mut s);
    s.push_str("skeleton\n");
    let mut frames = 0;
    while s.len() < target {
        s.push_str(&format!("time {frames}\n"));
        for b in 0..BONES {
            s.push_str(&format!(
                "{b} {:.6} {:.6} {:.6} {:.6} {:.6} {:.6}\n",
                rng.f(10.0),
                rng.f(10.0),
                rng.f(10.0),
                rng.f(3.1),
                rng.f(3.1),
                rng.f(3.1)
            ));
        }
        frames += 1;
    }
    s.push_str("end\n");
    (s, frames)
}

/// Peak resident memory in bytes since the last reset (Linux only; 0 elsewhere).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn current_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn reset_peak() {
    // Writing 5 resets VmHWM to the current RSS (Linux >= 4.0).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn run(name: &str, text: &str, what: &str, runs: usize) {
    let mb = text.len() as f64 / 1e6;
    let mut best = f64::INFINITY;
    let mut extra = 0u64;
    let mut parse_secs = f64::INFINITY;
    for _ in 0..runs {
        let base = current_rss();
        reset_peak();
        let t = Instant::now();
        let parsed = smd::parse(text, FileId(0));
        parse_secs = parse_secs.min(t.elapsed().as_secs_f64());
        let mut diags = parsed.diagnostics;
        assert!(
            !diags.iter().any(|d| d.is_error()),
            "generated input has errors"
        );
        let model = mdlc::smd::lower_smd(&parsed.smd, FileId(0), &mut diags);
        let secs = t.elapsed().as_secs_f64();
        extra = extra.max(peak_rss().saturating_sub(base));
        std::hint::black_box(&model);
        drop(model);
        drop(parsed.smd);
        best = best.min(secs);
    }
    println!(
        "{name:<10} {mb:7.1} MB  {what:<28} best of {runs}: {:6.3} s (parse {:5.3} s)  {:6.0} MB/s  peak extra memory {:6.1} MB ({:.2}x the file)",
        best,
        parse_secs,
        mb / best,
        extra as f64 / 1e6,
        extra as f64 / text.len() as f64
    );
}

/// Parses and lowers every SMD of the Half-Life corpus, one file after another on one core.
fn corpus(runs: usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/goldsrc-hl1/modelsrc");
    let mut paths = Vec::new();
    common::files_under(&dir, Some("smd"), &mut paths);
    let texts: Vec<String> = paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter_map(|b| String::from_utf8(b).ok())
        .collect();
    if texts.is_empty() {
        println!(
            "corpus: no SMD under {} (../shared is needed)",
            dir.display()
        );
        return;
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let (mut best, mut best_parse) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..runs {
        let (mut parse, t) = (0.0, Instant::now());
        for text in &texts {
            let p = Instant::now();
            let parsed = smd::parse(text, FileId(0));
            parse += p.elapsed().as_secs_f64();
            let mut diags = parsed.diagnostics;
            let model = mdlc::smd::lower_smd(&parsed.smd, FileId(0), &mut diags);
            std::hint::black_box(&model);
        }
        best = best.min(t.elapsed().as_secs_f64());
        best_parse = best_parse.min(parse);
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "corpus     {mb:7.1} MB  {:<28} best of {runs}: {best:6.3} s (parse {best_parse:5.3} s)  {:6.0} MB/s",
        format!("{} Half-Life SMD files", texts.len()),
        mb / best
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut mb = 100usize;
    let mut runs = 5;
    let mut corpus_only = false;
    while let Some(a) = args.next() {
        if a == "--mb" {
            mb = args.next().and_then(|v| v.parse().ok()).unwrap_or(mb);
        } else if a == "--runs" {
            runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs);
        } else if a == "--corpus-only" {
            corpus_only = true;
        }
    }
    if corpus_only {
        corpus(runs);
        return;
    }
    let target = mb * 1_000_000;
    // `--write DIR`: also save the generated files, to time `mdlc check` on them end to end.
    let write_dir = std::env::args().skip_while(|a| a != "--write").nth(1);
    // The text check the CLI does before parsing (UTF-8 + NUL scan) is part of a real run too.
    let (r, tris) = reference(target);
    if let Some(dir) = &write_dir {
        std::fs::write(format!("{dir}/bench_reference.smd"), &r).expect("write the reference");
    }
    let t = Instant::now();
    let mut sources = Sources::new();
    let mut d = Vec::new();
    let (id, ok) = mdlc::load::add_text(&mut sources, "ref.smd", r.clone().into_bytes(), &mut d);
    assert!(ok);
    let check = t.elapsed().as_secs_f64();
    println!(
        "text check (UTF-8, NUL, line index) of the reference: {:.3} s ({:.0} MB/s)",
        check,
        r.len() as f64 / 1e6 / check
    );
    drop(sources);
    let _ = id;
    run("reference", &r, &format!("{tris} weighted triangles"), runs);
    drop(r);
    let (a, frames) = animation(target);
    if let Some(dir) = &write_dir {
        std::fs::write(format!("{dir}/bench_animation.smd"), &a).expect("write the animation");
    }
    run(
        "animation",
        &a,
        &format!("{frames} frames x {BONES} bones"),
        runs,
    );
    drop(a);
    corpus(runs);
}
