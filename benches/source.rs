//! Benchmark of the Source back end (MDL v48 + VVD + VTX).
//!
//! Run: `cargo bench --bench source` (all sections, best of 5). Options after `--`:
//! `--runs N` (or `MDLC_BENCH_RUNS=N`), `--sections 1,3` (or `MDLC_BENCH_SECTIONS`; also by
//! name: `hev`, `mesh`, `acmr`, `anim`), `--tris N` (or `MDLC_BENCH_TRIS`: the size of the
//! generated mesh of section 2, default 1,000,000). `MDLC_BENCH_BIN` times another build of mdlc
//! (for example the previous commit's); `MDLC_BENCH_CORPUS` points at another corpus folder;
//! `MDLC_BENCH_POLL_RSS=1` measures the CLI's peak memory by polling even when `/usr/bin/time`
//! is installed.
//!
//! Sections (one report block each):
//!
//! 1. **the largest corpus model** `ha-hev-charger-mesa` (6,928 triangles): in-process compile
//!    time (read the QC and SMDs, build, compile, lay out the five files; nothing written) and
//!    its peak memory, in a fresh process of this binary; `mdlc build <qc> -o <tmp>` spawned
//!    from the QC's folder: wall time and peak memory (max RSS of the process, from
//!    `/usr/bin/time` when it is installed, else by polling `/proc/<pid>/status` VmHWM);
//! 2. **a generated skinned grid** of 1,000,000 triangles (about 500,000 vertices, so mdlc
//!    splits it and warns W0601) with a chain of 100 bones, each vertex weighted to 1–3 bones:
//!    the same figures as 1;
//! 3. **vertex-cache ACMR** (cache misses / triangles, FIFO post-transform cache of 16 and 24
//!    entries, reset per strip group, over the strip-group vertex indices in index order) of
//!    mdlc's `.dx90.vtx` LOD 0 against Valve's, for every corpus model with Valve's compiled
//!    files (`ha-*`, `mapbase-*`, `reepblue-*`);
//! 4. **animation**: `sdk-male06` (60 animation SMDs) compile time and peak memory as in 1, and
//!    the bytes of the animation record chains (every animdesc's chain, or every section's, from
//!    its first record to the end of its last record's data; the padding after the last record
//!    is not counted) per bone per frame (numbones × the sum of numframes), ours against
//!    Valve's, on the corpus pairs with animations.
//!
//! With gltfpack installed (Debian package `gltfpack`), section 2 also writes the same triangles
//! as an OBJ file and times `gltfpack -i grid.obj -o grid.glb` the same way (best of the runs,
//! peak RSS), with the ratios issue 17 asks about; without it, the figure is skipped with a
//! message. `MDLC_BENCH_GRID_DIR=<dir>` writes the generated files there and keeps them.
//!
//! Temporary files (the generated mesh, the CLI outputs) go under the system's temporary
//! folder and are removed at the end.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mdlc::diag::{Diagnostic, Severity, Sources};
use mdlc::driver::{self, InputKind};
use mdlc::formats::source::animcodec::{
    ANIM_ANIMPOS, ANIM_ANIMROT, ANIM_RAWPOS, ANIM_RAWROT, ANIM_RAWROT2,
};
use mdlc::formats::source::read::{self, ChainRecord, Mdl, Vtx};
use mdlc::load::fs::RealFs;

mod common;

type Res<T> = Result<T, String>;
/// Compiled files: (path, bytes).
type Outputs = Vec<(PathBuf, Vec<u8>)>;
/// One row of the animation table: ours, and Valve's when there is a Valve build.
type AnimRow = Res<(AnimSize, Option<AnimSize>)>;

/// The largest corpus Source model: (corpus folder, QC inside it).
const HEV: (&str, &str) = (
    "ha-hev-charger-mesa",
    "modelsrc/editor/item_suitcharger_mesa/hev_charger.qc",
);
/// The animation-heavy corpus model (no compiled pair).
const MALE06: (&str, &str) = (
    "sdk-male06",
    "sourcesdk_content/hl2/modelsrc/humans_sdk/male_sdk/male_06_sdk.qc",
);
/// Corpus pairs with animations whose record chains are compared with Valve's.
const ANIM_PAIRS: [&str; 3] = [
    "mapbase-bunker-gun01",
    "mapbase-door01-left",
    "ha-suit-charger-hl2",
];
/// Folder prefixes of the corpus models compiled by Valve's studiomdl.
const PAIR_PREFIXES: [&str; 3] = ["ha-", "mapbase-", "reepblue-"];
const GRID_BONES: usize = 100;
const CACHE_SIZES: [usize; 2] = [16, 24];

// --- Options and machine ---------------------------------------------------------------------

struct Opts {
    runs: usize,
    sections: Vec<u32>,
    tris: usize,
    corpus: PathBuf,
    mdlc: PathBuf,
    tmp: PathBuf,
    machine: String,
    revision: String,
}

impl Opts {
    fn parse() -> Res<Opts> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let arg = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let runs = match arg("--runs").or_else(|| env("MDLC_BENCH_RUNS")) {
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("--runs `{v}`: expected a positive number"))?,
            None => 5,
        };
        let tris = match arg("--tris").or_else(|| env("MDLC_BENCH_TRIS")) {
            Some(v) => v
                .trim()
                .replace(['_', ','], "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("--tris `{v}`: expected a positive number"))?,
            None => 1_000_000,
        };
        let sections = match arg("--sections").or_else(|| env("MDLC_BENCH_SECTIONS")) {
            Some(v) => {
                let mut out = Vec::new();
                for s in v.split([',', ' ']).filter(|s| !s.is_empty()) {
                    let n = match s.trim().to_ascii_lowercase().as_str() {
                        "1" | "hev" | "largest" => 1,
                        "2" | "mesh" | "grid" | "generated" => 2,
                        "3" | "acmr" | "cache" => 3,
                        "4" | "anim" | "animation" => 4,
                        other => {
                            return Err(format!(
                                "--sections: unknown section `{other}` (1-4, hev, mesh, acmr, anim)"
                            ))
                        }
                    };
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
                out.sort_unstable();
                out
            }
            None => vec![1, 2, 3, 4],
        };
        let corpus = std::env::var_os("MDLC_BENCH_CORPUS")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
        let corpus = std::fs::canonicalize(&corpus).unwrap_or(corpus);
        let mdlc = std::env::var_os("MDLC_BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mdlc")));
        // the QCs are built from their own folders: a relative path must not depend on that
        let mdlc = std::fs::canonicalize(&mdlc).unwrap_or(mdlc);
        let tmp = std::env::temp_dir().join(format!("mdlc-bench-source-{}", std::process::id()));
        Ok(Opts {
            runs,
            sections,
            tris,
            corpus,
            mdlc,
            tmp,
            machine: machine(),
            revision: revision(),
        })
    }

    /// The command that reproduces one section.
    fn reproduce(&self, section: u32) -> String {
        let mut s = format!(
            "cargo bench --bench source -- --runs {} --sections {section}",
            self.runs
        );
        if section == 2 && self.tris != 1_000_000 {
            s.push_str(&format!(" --tris {}", self.tris));
        }
        if std::env::var_os("MDLC_BENCH_BIN").is_some() {
            s = format!("MDLC_BENCH_BIN={} {s}", self.mdlc.display());
        }
        s
    }

    fn header(&self, section: u32, title: &str) {
        println!();
        println!("== {section}. {title} ==");
        println!("machine:   {}", self.machine);
        println!("mdlc:      {} ({})", self.mdlc.display(), self.revision);
        println!("reproduce: {}", self.reproduce(section));
    }
}

/// CPU model and core count from `/proc/cpuinfo`, with the OS and architecture.
fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let procs = info
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    let avail = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(String::new(), |kb| {
            format!(", {:.1} GB RAM", kb as f64 / 1024.0 / 1024.0)
        });
    format!(
        "{model}, {procs} cores ({avail} available){mem}, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// The commit of the working tree and whether it has uncommitted changes (best effort).
fn revision() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(dir)
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("commit {rev} + uncommitted changes")
            } else {
                format!("commit {rev}")
            }
        }
        None => "revision unknown".to_string(),
    }
}

// --- Measuring ------------------------------------------------------------------------------

fn vm_hwm_kb(status: &str) -> Option<u64> {
    std::fs::read_to_string(status)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Reads and compiles one QC for Source in this process: the files (named under a folder that
/// is never written) and the diagnostics.
fn compile_in_process(qc: &Path) -> Res<(Outputs, Vec<Diagnostic>)> {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let first_error = |diags: &[Diagnostic]| {
        diags
            .iter()
            .find(|d| d.is_error())
            .map_or_else(String::new, |d| format!(": {} {}", d.code, d.message))
    };
    let Some(spec) =
        driver::read_project(qc, InputKind::Qc, &RealFs, None, &mut sources, &mut diags)
    else {
        return Err(format!(
            "{}: not readable{}",
            qc.display(),
            first_error(&diags)
        ));
    };
    let out = Path::new("/nonexistent-mdlc-bench-out");
    let files =
        driver::compile_source(&spec, &RealFs, Some(out), &mut sources, &mut diags, None)
            .ok_or_else(|| format!("{} does not compile{}", qc.display(), first_error(&diags)))?;
    Ok((files, diags))
}

/// The file of `files` whose name ends with `suffix`.
fn output<'a>(files: &'a [(PathBuf, Vec<u8>)], suffix: &str) -> Res<&'a [u8]> {
    files
        .iter()
        .find(|(p, _)| p.to_string_lossy().ends_with(suffix))
        .map(|(_, b)| b.as_slice())
        .ok_or_else(|| format!("no {suffix} among the outputs"))
}

/// `--inproc QC RUNS`: compiles QC RUNS times in this fresh process and prints one line for the
/// parent: `INPROC <best seconds> <VmHWM kB> <output bytes> <warnings>`.
fn inproc_child(qc: &Path, runs: usize) -> Res<()> {
    let mut best = f64::INFINITY;
    let (mut bytes, mut warnings) = (0usize, 0usize);
    for _ in 0..runs {
        let t = Instant::now();
        let (files, diags) = compile_in_process(qc)?;
        let secs = t.elapsed().as_secs_f64();
        best = best.min(secs);
        bytes = files.iter().map(|(_, b)| b.len()).sum();
        warnings = diags
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count();
        std::hint::black_box(&files);
    }
    let peak = vm_hwm_kb("/proc/self/status").unwrap_or(0);
    println!("INPROC {best} {peak} {bytes} {warnings}");
    Ok(())
}

struct InProc {
    best: f64,
    peak_kb: u64,
    bytes: usize,
    warnings: usize,
}

/// Runs `--inproc` in a fresh process of this binary, from the QC's folder.
fn in_process(qc: &Path, runs: usize) -> Res<InProc> {
    let dir = qc.parent().ok_or("QC without a folder")?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let o = Command::new(&exe)
        .current_dir(dir)
        .arg("--inproc")
        .arg(qc)
        .arg(runs.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("INPROC "));
    let (Some(line), true) = (line, o.status.success()) else {
        return Err(format!(
            "in-process compile of {} failed ({}): {}",
            qc.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    };
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    Ok(InProc {
        best: num(0),
        peak_kb: num(1) as u64,
        bytes: num(2) as usize,
        warnings: num(3) as usize,
    })
}

/// One `mdlc build` run: wall time, peak RSS, and the process's stderr.
struct CliRun {
    secs: f64,
    peak_kb: Option<u64>,
    stderr: String,
}

/// Runs `mdlc build <qc file name> -o <out>` from the QC's folder. The peak RSS comes from
/// `/usr/bin/time -f %M` (the child's `getrusage` max RSS) when it is installed, else from
/// polling `/proc/<pid>/status` VmHWM every 2 ms (which can miss the last few ms of growth).
fn run_cli(o: &Opts, qc: &Path, out: &Path) -> Res<CliRun> {
    let dir = qc.parent().ok_or("QC without a folder")?;
    let name = qc.file_name().ok_or("QC without a file name")?;
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let err_path = o.tmp.join("mdlc-stderr.txt");
    let rss_path = o.tmp.join("mdlc-maxrss.txt");
    let err_file = File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let time = Path::new("/usr/bin/time");
    let use_time = time.exists() && std::env::var_os("MDLC_BENCH_POLL_RSS").is_none();
    let mut cmd = if use_time {
        let mut c = Command::new(time);
        c.arg("-o").arg(&rss_path).args(["-f", "%M"]).arg(&o.mdlc);
        c
    } else {
        Command::new(&o.mdlc)
    };
    cmd.current_dir(dir)
        .arg("build")
        // every run builds (a run after the first would find the outputs up to date)
        .arg("--force")
        .arg(name)
        .arg("-o")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file);
    let t = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", o.mdlc.display()))?;
    let (status, polled): (ExitStatus, Option<u64>) = if use_time {
        (child.wait().map_err(|e| e.to_string())?, None)
    } else {
        let status_file = format!("/proc/{}/status", child.id());
        let mut peak = None;
        loop {
            if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                break (st, peak);
            }
            if let Some(kb) = vm_hwm_kb(&status_file) {
                peak = Some(peak.map_or(kb, |p: u64| p.max(kb)));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let secs = t.elapsed().as_secs_f64();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
        return Err(format!(
            "`mdlc build {}` in {} failed ({status}):\n{}",
            name.to_string_lossy(),
            dir.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    let peak_kb = if use_time {
        std::fs::read_to_string(&rss_path)
            .ok()
            .and_then(|s| s.lines().last().and_then(|l| l.trim().parse().ok()))
    } else {
        polled
    };
    Ok(CliRun {
        secs,
        peak_kb,
        stderr,
    })
}

/// Sections 1, 2 and 4: in-process and CLI time and peak memory of one QC. Returns the CLI's
/// best wall time and its peak RSS in KiB (when measured).
fn measure_compile(o: &Opts, qc: &Path) -> Res<(f64, Option<u64>)> {
    println!(
        "qc:        {} (run from its folder)",
        qc.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    println!(
        "folder:    {}",
        qc.parent()
            .map_or_else(String::new, |d| d.display().to_string())
    );
    let ip = in_process(qc, o.runs)?;
    println!(
        "in-process (read QC+SMDs, build, compile, lay out files; nothing written), best of {}: {:.3} s; peak RSS {} (fresh process; {} output bytes, {} warning(s))",
        o.runs,
        ip.best,
        mb(ip.peak_kb),
        thousands(ip.bytes),
        ip.warnings
    );
    let out = o.tmp.join("out");
    let mut best = f64::INFINITY;
    let mut peak: Option<u64> = None;
    let mut stderr = String::new();
    for _ in 0..o.runs {
        let r = run_cli(o, qc, &out)?;
        best = best.min(r.secs);
        if let Some(kb) = r.peak_kb {
            peak = Some(peak.map_or(kb, |p| p.max(kb)));
        }
        stderr = r.stderr;
    }
    let mut written = Vec::new();
    common::files_under(&out, None, &mut written);
    let bytes: u64 = written
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let how = if Path::new("/usr/bin/time").exists()
        && std::env::var_os("MDLC_BENCH_POLL_RSS").is_none()
    {
        "max RSS from /usr/bin/time"
    } else {
        "VmHWM polled every 2 ms"
    };
    println!(
        "CLI `mdlc build {} -o <tmp>`, best of {}: {best:.3} s wall; peak RSS {} (highest over the runs, {how}); wrote {} files, {}",
        qc.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        o.runs,
        peak.map_or_else(|| "?".to_string(), mb),
        written.len(),
        mb(bytes / 1024),
    );
    let summary = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("mdlc:") && l.contains("error"))
        .unwrap_or("");
    let mut codes: Vec<&str> = stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("warning[")?;
            rest.split(']').next()
        })
        .collect();
    codes.sort_unstable();
    codes.dedup();
    if !summary.is_empty() || !codes.is_empty() {
        println!(
            "diagnostics: {}{}",
            summary.trim_start_matches("mdlc:").trim(),
            if codes.is_empty() {
                String::new()
            } else {
                format!(" (warning codes: {})", codes.join(", "))
            }
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok((best, peak))
}

// --- Section 2: the generated mesh -----------------------------------------------------------

/// Writes `grid.smd` and `grid.qc` into `dir`: a `w`-wide grid of quads (1 unit each) rising
/// along +Y with exactly `tris` triangles, skinned to a chain of 100 bones along +Y; each vertex
/// is weighted to 1, 2 or 3 neighbouring bones (in turn). Returns (QC path, SMD bytes, unique
/// vertices).
fn write_grid(dir: &Path, tris: usize) -> Res<(PathBuf, u64, usize)> {
    let quads = tris.div_ceil(2);
    let w = 500usize.min(quads.max(1));
    let h = quads.div_ceil(w);
    let bone_len = (h as f64 / GRID_BONES as f64).max(1e-3);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let smd = dir.join("grid.smd");
    let io = |e: std::io::Error| format!("{}: {e}", smd.display());
    let mut f = BufWriter::with_capacity(1 << 20, File::create(&smd).map_err(io)?);
    writeln!(f, "version 1\nnodes").map_err(io)?;
    for b in 0..GRID_BONES {
        writeln!(f, "{b} \"bone{b:03}\" {}", b as i64 - 1).map_err(io)?;
    }
    writeln!(f, "end\nskeleton\ntime 0").map_err(io)?;
    for b in 0..GRID_BONES {
        let y = if b == 0 { 0.0 } else { bone_len };
        writeln!(f, "{b} 0 {y:.4} 0 0 0 0").map_err(io)?;
    }
    writeln!(f, "end\ntriangles").map_err(io)?;
    // One line per grid vertex, so every triangle repeats it byte for byte.
    let line = |i: usize, j: usize| -> String {
        let t = j as f64 / bone_len;
        let b = (t.floor() as usize).min(GRID_BONES - 1);
        // The fraction along the bone, in eighths (exact short decimals).
        let frac = (((t - b as f64) * 8.0).round() as usize).clamp(1, 7) as f64 / 8.0;
        let links: Vec<(usize, f64)> = match (i + j) % 3 {
            0 => vec![(b, 1.0)],
            1 => {
                let n = if b + 1 < GRID_BONES { b + 1 } else { b - 1 };
                vec![(b, 1.0 - frac), (n, frac)]
            }
            _ => {
                let lo = b.clamp(1, GRID_BONES - 2);
                vec![(lo - 1, 0.25), (lo, 0.5), (lo + 1, 0.25)]
            }
        };
        let mut s = format!(
            "{} {i} {j} 0 0 0 1 {:.4} {:.4} {}",
            links[0].0,
            i as f64 / w as f64,
            j as f64 / h as f64,
            links.len()
        );
        for (bone, weight) in &links {
            s.push_str(&format!(" {bone} {weight}"));
        }
        s
    };
    let lines: Vec<String> = (0..=h)
        .flat_map(|j| (0..=w).map(move |i| (i, j)))
        .map(|(i, j)| line(i, j))
        .collect();
    let at = |i: usize, j: usize| lines.get(j * (w + 1) + i).map_or("", String::as_str);
    let mut written = 0usize;
    for tri in grid_triangles(w, h, tris) {
        writeln!(f, "grid").map_err(io)?;
        for (x, y) in tri {
            writeln!(f, "{}", at(x, y)).map_err(io)?;
        }
        written += 1;
    }
    writeln!(f, "end").map_err(io)?;
    f.flush().map_err(io)?;
    drop(f);
    let qc = dir.join("grid.qc");
    std::fs::write(
        &qc,
        "$modelname \"bench/grid.mdl\"\n\
         $cdmaterials \"models/bench/\"\n\
         $body \"grid\" \"grid.smd\"\n\
         $sequence idle \"grid.smd\"\n",
    )
    .map_err(|e| format!("{}: {e}", qc.display()))?;
    write_grid_obj(&dir.join("grid.obj"), w, h, tris)?;
    let size = std::fs::metadata(&smd).map(|m| m.len()).unwrap_or(0);
    let verts = if written == 2 * w * h {
        (w + 1) * (h + 1)
    } else {
        // The last row is partial: count the vertices its triangles use.
        let full_rows = written / (2 * w);
        let rest = written % (2 * w);
        (w + 1) * (full_rows + 1) + if rest == 0 { 0 } else { rest.div_ceil(2) + 1 }
    };
    Ok((qc, size, verts))
}

/// The first `tris` triangles of a `w` × `h` grid of quads, row by row, each quad as two
/// triangles: the corners' grid coordinates.
fn grid_triangles(w: usize, h: usize, tris: usize) -> impl Iterator<Item = [(usize, usize); 3]> {
    (0..h)
        .flat_map(move |j| (0..w).map(move |i| (i, j)))
        .flat_map(|(i, j)| {
            [
                [(i, j), (i + 1, j), (i + 1, j + 1)],
                [(i, j), (i + 1, j + 1), (i, j + 1)],
            ]
        })
        .take(tris)
}

/// Writes the grid's triangles as `grid.obj` for gltfpack: the same positions, texture
/// coordinates and normal as `grid.smd`, the same triangles in the same order, with indexed
/// vertices (OBJ has no skin, so the bone weights are the one thing it lacks).
fn write_grid_obj(obj: &Path, w: usize, h: usize, tris: usize) -> Res<()> {
    let io = |e: std::io::Error| format!("{}: {e}", obj.display());
    let mut f = BufWriter::with_capacity(1 << 20, File::create(obj).map_err(io)?);
    for j in 0..=h {
        for i in 0..=w {
            writeln!(f, "v {i} {j} 0").map_err(io)?;
        }
    }
    for j in 0..=h {
        for i in 0..=w {
            writeln!(
                f,
                "vt {:.4} {:.4}",
                i as f64 / w as f64,
                j as f64 / h as f64
            )
            .map_err(io)?;
        }
    }
    writeln!(f, "vn 0 0 1").map_err(io)?;
    // OBJ indices count from 1
    let at = |i: usize, j: usize| j * (w + 1) + i + 1;
    for tri in grid_triangles(w, h, tris) {
        let [a, b, c] = tri.map(|(x, y)| at(x, y));
        writeln!(f, "f {a}/{a}/1 {b}/{b}/1 {c}/{c}/1").map_err(io)?;
    }
    f.flush().map_err(io)
}

/// gltfpack on the search path, if installed (Debian's package `gltfpack`).
fn find_gltfpack() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("gltfpack"))
        .find(|p| p.is_file())
}

/// `gltfpack -i grid.obj -o grid.glb`, best of `o.runs`: (wall seconds, peak RSS in KiB when
/// `/usr/bin/time` is installed).
fn run_gltfpack(o: &Opts, gltfpack: &Path, obj: &Path) -> Res<(f64, Option<u64>)> {
    let glb = o.tmp.join("grid.glb");
    let rss_path = o.tmp.join("gltfpack-maxrss.txt");
    let time = Path::new("/usr/bin/time");
    let mut best = f64::INFINITY;
    let mut peak: Option<u64> = None;
    for _ in 0..o.runs {
        let _ = std::fs::remove_file(&glb);
        let mut cmd = if time.exists() {
            let mut c = Command::new(time);
            c.arg("-o").arg(&rss_path).args(["-f", "%M"]).arg(gltfpack);
            c
        } else {
            Command::new(gltfpack)
        };
        cmd.arg("-i")
            .arg(obj)
            .arg("-o")
            .arg(&glb)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let t = Instant::now();
        let status = cmd
            .status()
            .map_err(|e| format!("cannot run {}: {e}", gltfpack.display()))?;
        let secs = t.elapsed().as_secs_f64();
        if !status.success() {
            return Err(format!("`gltfpack -i {}` failed ({status})", obj.display()));
        }
        best = best.min(secs);
        if time.exists() {
            if let Some(kb) = std::fs::read_to_string(&rss_path)
                .ok()
                .and_then(|s| s.lines().last().and_then(|l| l.trim().parse::<u64>().ok()))
            {
                peak = Some(peak.map_or(kb, |p| p.max(kb)));
            }
        }
    }
    let _ = std::fs::remove_file(&glb);
    Ok((best, peak))
}

// --- Section 3: ACMR ---------------------------------------------------------------------------

/// Cache misses of a FIFO post-transform cache of `size` entries over `indices`.
fn fifo_misses(indices: &[u16], size: usize) -> usize {
    let mut cache: VecDeque<u16> = VecDeque::with_capacity(size + 1);
    let mut misses = 0;
    for &i in indices {
        if !cache.contains(&i) {
            misses += 1;
            cache.push_back(i);
            if cache.len() > size {
                cache.pop_front();
            }
        }
    }
    misses
}

#[derive(Default)]
struct CacheStats {
    tris: usize,
    misses: [usize; CACHE_SIZES.len()],
    groups: usize,
    non_list_strips: usize,
    vert_cache_size: i32,
}

impl CacheStats {
    fn acmr(&self, k: usize) -> f64 {
        self.misses.get(k).copied().unwrap_or(0) as f64 / self.tris.max(1) as f64
    }
}

/// ACMR inputs of LOD 0 of every model of a VTX: per strip group, its strips' indices in order
/// (the cache is reset at each strip group).
fn vtx_cache_stats(vtx: &Vtx) -> Res<CacheStats> {
    let mut st = CacheStats {
        vert_cache_size: vtx.hdr.vert_cache_size,
        ..CacheStats::default()
    };
    for bp in &vtx.body_parts {
        for model in bp {
            let Some(lod0) = model.first() else {
                continue;
            };
            for mesh in &lod0.meshes {
                for g in &mesh.groups {
                    let mut idx: Vec<u16> = Vec::with_capacity(g.indices.len());
                    for s in &g.strips {
                        let start = s.rec.index_offset.max(0) as usize;
                        let n = s.rec.num_indices.max(0) as usize;
                        let part = g
                            .indices
                            .get(start..start + n)
                            .ok_or("strip indices run past the strip group")?;
                        if s.rec.flags & 0x1 != 0 {
                            st.tris += n / 3;
                        } else {
                            // A triangle strip (never seen in dx90 files): n − 2 triangles.
                            st.non_list_strips += 1;
                            st.tris += n.saturating_sub(2);
                        }
                        idx.extend_from_slice(part);
                    }
                    st.groups += 1;
                    for (k, &size) in CACHE_SIZES.iter().enumerate() {
                        if let Some(m) = st.misses.get_mut(k) {
                            *m += fifo_misses(&idx, size);
                        }
                    }
                }
            }
        }
    }
    Ok(st)
}

/// The corpus models compiled by Valve: (folder name, QC, Valve's `.dx90.vtx`).
fn valve_pairs(corpus: &Path) -> Vec<(String, PathBuf, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(corpus) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    dirs.sort();
    let mut out = Vec::new();
    for d in dirs {
        let name = d
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if !d.is_dir() || !PAIR_PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let mut files = Vec::new();
        common::files_under(&d, None, &mut files);
        let ends = |p: &Path, s: &str| p.to_string_lossy().to_ascii_lowercase().ends_with(s);
        let qc = files.iter().find(|p| ends(p, ".qc"));
        let vtx = files.iter().find(|p| ends(p, ".dx90.vtx"));
        if let (Some(qc), Some(vtx)) = (qc, vtx) {
            out.push((name, qc.clone(), vtx.clone()));
        }
    }
    out
}

fn section_acmr(o: &Opts) -> Res<()> {
    o.header(
        3,
        "vertex-cache ACMR of the dx90 VTX, LOD 0: mdlc vs Valve's studiomdl",
    );
    println!(
        "ACMR = FIFO cache misses / triangles over each strip group's vertex indices in index order (cache reset per strip group), summed over the model; lower is better (≈ 0.5 is the bound for a large regular mesh, 3.0 = no reuse)"
    );
    let pairs = valve_pairs(&o.corpus);
    if pairs.is_empty() {
        return Err(format!("no compiled pair under {}", o.corpus.display()));
    }
    println!(
        "{:<28} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}",
        "model",
        "tris us",
        "tris V",
        "16 us",
        "16 V",
        "16 ±%",
        "24 us",
        "24 V",
        "24 ±%",
        "grp us",
        "grp V"
    );
    let mut tot = [(0usize, [0usize; 2]), (0usize, [0usize; 2])];
    let mut notes = Vec::new();
    for (name, qc, valve_vtx) in &pairs {
        let row = (|| -> Res<(CacheStats, CacheStats)> {
            let (files, _) = compile_in_process(qc)?;
            let ours = read::read_vtx(output(&files, ".dx90.vtx")?)
                .map_err(|e| format!("our dx90.vtx: {e}"))?;
            let bytes =
                std::fs::read(valve_vtx).map_err(|e| format!("{}: {e}", valve_vtx.display()))?;
            let valve = read::read_vtx(&bytes).map_err(|e| format!("Valve's dx90.vtx: {e}"))?;
            Ok((vtx_cache_stats(&ours)?, vtx_cache_stats(&valve)?))
        })();
        let (us, v) = match row {
            Ok(r) => r,
            Err(e) => {
                println!("{name:<28} error: {e}");
                continue;
            }
        };
        let pct = |k: usize| (us.acmr(k) / v.acmr(k).max(1e-9) - 1.0) * 100.0;
        println!(
            "{name:<28} {:>8} {:>8} {:>7.3} {:>7.3} {:>+6.1}% {:>7.3} {:>7.3} {:>+6.1}% {:>6} {:>6}",
            us.tris,
            v.tris,
            us.acmr(0),
            v.acmr(0),
            pct(0),
            us.acmr(1),
            v.acmr(1),
            pct(1),
            us.groups,
            v.groups
        );
        for (t, s) in tot.iter_mut().zip([&us, &v]) {
            t.0 += s.tris;
            for (m, sm) in t.1.iter_mut().zip(s.misses) {
                *m += sm;
            }
        }
        if us.non_list_strips + v.non_list_strips > 0 {
            notes.push(format!(
                "{name}: {} of our strips and {} of Valve's are not triangle lists (counted as strips)",
                us.non_list_strips, v.non_list_strips
            ));
        }
        if us.vert_cache_size != v.vert_cache_size {
            notes.push(format!(
                "{name}: header vertCacheSize {} (ours) vs {} (Valve's)",
                us.vert_cache_size, v.vert_cache_size
            ));
        }
    }
    let all = |t: &(usize, [usize; 2]), k: usize| {
        t.1.get(k).copied().unwrap_or(0) as f64 / t.0.max(1) as f64
    };
    let [us, v] = &tot;
    println!(
        "{:<28} {:>8} {:>8} {:>7.3} {:>7.3} {:>+6.1}% {:>7.3} {:>7.3} {:>+6.1}%",
        "all (misses / triangles)",
        us.0,
        v.0,
        all(us, 0),
        all(v, 0),
        (all(us, 0) / all(v, 0).max(1e-9) - 1.0) * 100.0,
        all(us, 1),
        all(v, 1),
        (all(us, 1) / all(v, 1).max(1e-9) - 1.0) * 100.0,
    );
    println!("(16/24 = cache entries; us = mdlc, V = Valve; ±% = ours relative to Valve's; grp = strip groups)");
    for n in notes {
        println!("note: {n}");
    }
    Ok(())
}

// --- Section 4: animation --------------------------------------------------------------------

fn byte(b: &[u8], at: usize) -> Res<u8> {
    b.get(at)
        .copied()
        .ok_or_else(|| format!("offset {at} is past the end of the file"))
}

fn i16_at(b: &[u8], at: usize) -> Res<i16> {
    Ok(i16::from_le_bytes([byte(b, at)?, byte(b, at + 1)?]))
}

/// The end of a record's own data (header, payload, the run-length streams it points at).
fn record_end(b: &[u8], r: &ChainRecord, frames: usize) -> Res<usize> {
    let at = r.offset;
    let f = r.flags;
    if r.bone == 255 {
        return Ok(at + 4);
    }
    let raw = |flag: u8, n: usize| if f & flag != 0 { n } else { 0 };
    if f & (ANIM_RAWROT | ANIM_RAWROT2 | ANIM_RAWPOS) != 0 {
        return Ok(at + 4 + raw(ANIM_RAWROT, 6) + raw(ANIM_RAWROT2, 8) + raw(ANIM_RAWPOS, 6));
    }
    let mut ptrs = Vec::new();
    if f & ANIM_ANIMROT != 0 {
        ptrs.push(at + 4);
    }
    if f & ANIM_ANIMPOS != 0 {
        ptrs.push(at + 4 + 6 * ptrs.len());
    }
    let mut end = at + 4 + 6 * ptrs.len();
    for vp in ptrs {
        for axis in 0..3 {
            let off = i16_at(b, vp + 2 * axis)?;
            if off <= 0 {
                continue;
            }
            let mut p = vp + off as usize;
            let mut covered = 0usize;
            while covered < frames {
                let valid = byte(b, p)? as usize;
                let total = byte(b, p + 1)? as usize;
                if total == 0 {
                    return Err(format!(
                        "stream header with total 0 at offset {p} after {covered} of {frames} frames"
                    ));
                }
                covered += total;
                p += 2 * (valid + 1);
            }
            end = end.max(p);
        }
    }
    Ok(end)
}

struct AnimSize {
    bones: usize,
    anims: usize,
    frames: usize,
    chains: usize,
    bytes: usize,
    external: usize,
}

impl AnimSize {
    fn per_bone_frame(&self) -> f64 {
        self.bytes as f64 / (self.bones * self.frames).max(1) as f64
    }
}

/// The bytes of every record chain of an MDL (every section's when sectioned).
fn anim_size(mdl: &Mdl) -> Res<AnimSize> {
    let b = &mdl.bytes;
    let mut s = AnimSize {
        bones: mdl.bones.len(),
        anims: mdl.animations.len(),
        frames: 0,
        chains: 0,
        bytes: 0,
        external: 0,
    };
    for a in &mdl.animations {
        s.frames += a.rec.numframes.max(0) as usize;
        for c in &a.chains {
            let Some(start) = c.start else {
                s.external += 1;
                continue;
            };
            let records =
                read::walk_chain(b, start).map_err(|e| format!("animation `{}`: {e}", a.name))?;
            let last = records
                .last()
                .ok_or_else(|| format!("animation `{}`: empty chain", a.name))?;
            let end = record_end(b, last, c.frames)
                .map_err(|e| format!("animation `{}`: {e}", a.name))?;
            s.bytes += end.saturating_sub(start);
            s.chains += 1;
        }
    }
    Ok(s)
}

fn print_anim_row(who: &str, s: &AnimSize) {
    println!(
        "  {who:<7} {:>6} {:>6} {:>7} {:>7} {:>10} {:>9.3}{}",
        s.bones,
        s.anims,
        s.frames,
        s.chains,
        thousands(s.bytes),
        s.per_bone_frame(),
        if s.external > 0 {
            format!(
                "  ({} chains in external .ani blocks, not counted)",
                s.external
            )
        } else {
            String::new()
        }
    );
}

fn section_anim(o: &Opts) -> Res<()> {
    o.header(
        4,
        "animation: sdk-male06 compile, and animation data size vs Valve's",
    );
    let qc = o.corpus.join(MALE06.0).join(MALE06.1);
    println!(
        "model:     {} (60 animation SMDs, 93 bones, 4,704 triangles)",
        MALE06.0
    );
    let mut errors = 0usize;
    if let Err(e) = measure_compile(o, &qc) {
        println!("error: {e}");
        errors += 1;
    }
    println!();
    println!(
        "animation record chains (first record to the end of the last record's data, summed over animdescs and sections; bytes per bone per frame = bytes / (numbones × Σ numframes)):"
    );
    println!(
        "  {:<7} {:>6} {:>6} {:>7} {:>7} {:>10} {:>9}",
        "", "bones", "anims", "frames", "chains", "bytes", "B/bone/f"
    );
    let mut rows: Vec<(String, AnimRow)> = Vec::new();
    for name in ANIM_PAIRS {
        let r = (|| {
            let pair = valve_pairs(&o.corpus)
                .into_iter()
                .find(|(n, _, _)| n == name)
                .ok_or_else(|| format!("{name}: no QC or no compiled pair in the corpus"))?;
            let (files, _) = compile_in_process(&pair.1)?;
            let ours =
                read::read_mdl(output(&files, ".mdl")?).map_err(|e| format!("our mdl: {e}"))?;
            let valve_mdl = pair.2.to_string_lossy().replace(".dx90.vtx", ".mdl");
            let bytes = std::fs::read(&valve_mdl).map_err(|e| format!("{valve_mdl}: {e}"))?;
            let valve = read::read_mdl(&bytes).map_err(|e| format!("Valve's mdl: {e}"))?;
            Ok((anim_size(&ours)?, Some(anim_size(&valve)?)))
        })();
        rows.push((name.to_string(), r));
    }
    let r = (|| {
        let (files, _) = compile_in_process(&qc)?;
        let ours = read::read_mdl(output(&files, ".mdl")?).map_err(|e| format!("our mdl: {e}"))?;
        Ok((anim_size(&ours)?, None))
    })();
    rows.push((format!("{} (no Valve build)", MALE06.0), r));
    for (name, r) in rows {
        println!("{name}:");
        match r {
            Ok((us, v)) => {
                print_anim_row("mdlc", &us);
                if let Some(v) = v {
                    print_anim_row("Valve", &v);
                    println!(
                        "  ours/Valve: {:.2}x bytes per bone per frame, {:.2}x total bytes",
                        us.per_bone_frame() / v.per_bone_frame().max(1e-9),
                        us.bytes as f64 / v.bytes.max(1) as f64
                    );
                }
            }
            Err(e) => {
                println!("  error: {e}");
                errors += 1;
            }
        }
    }
    if errors > 0 {
        return Err(format!("{errors} error(s) in section 4 (above)"));
    }
    Ok(())
}

// --- Main ------------------------------------------------------------------------------------

/// Removes the temporary folder when the bench ends, however it ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn section_hev(o: &Opts) -> Res<()> {
    o.header(
        1,
        "largest corpus Source model: ha-hev-charger-mesa (6,928 triangles, 19 bones)",
    );
    measure_compile(o, &o.corpus.join(HEV.0).join(HEV.1)).map(|_| ())
}

fn section_mesh(o: &Opts) -> Res<()> {
    o.header(
        2,
        &format!(
            "generated skinned grid: {} triangles, {GRID_BONES} bones (chain), 1-3 bone weights per vertex",
            thousands(o.tris)
        ),
    );
    // MDLC_BENCH_GRID_DIR keeps the generated files there (for A/B runs of two binaries by hand)
    let kept = std::env::var_os("MDLC_BENCH_GRID_DIR").map(PathBuf::from);
    let dir = kept.clone().unwrap_or_else(|| o.tmp.join("grid"));
    let t = Instant::now();
    let (qc, size, verts) = write_grid(&dir, o.tris)?;
    let obj_size = std::fs::metadata(dir.join("grid.obj")).map_or(0, |m| m.len());
    println!(
        "generated: {} of SMD ({} unique vertices) + QC, and the same triangles as {} of OBJ, in {:.2} s (not part of the figures)",
        mb(size / 1024),
        thousands(verts),
        mb(obj_size / 1024),
        t.elapsed().as_secs_f64()
    );
    let r = measure_compile(o, &qc).and_then(|(secs, peak)| {
        let Some(gltfpack) = find_gltfpack() else {
            println!("gltfpack: not installed (Debian package `gltfpack`), so no side-by-side figure");
            return Ok(());
        };
        let (g_secs, g_peak) = run_gltfpack(o, &gltfpack, &dir.join("grid.obj"))?;
        println!(
            "gltfpack `gltfpack -i grid.obj -o <tmp>.glb` ({}), best of {}: {g_secs:.3} s wall; peak RSS {}",
            gltfpack.display(),
            o.runs,
            g_peak.map_or_else(|| "?".to_string(), mb)
        );
        let mem = match (peak, g_peak) {
            (Some(a), Some(b)) if b > 0 => format!("{:.2}x", a as f64 / b as f64),
            _ => "?".to_string(),
        };
        println!(
            "mdlc / gltfpack: {:.2}x the time, {mem} the peak memory (goal: at most 2x each)",
            secs / g_secs
        );
        Ok(())
    });
    if kept.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    r
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--inproc") {
        let qc = args.get(i + 1).map(PathBuf::from).unwrap_or_default();
        let runs = args
            .get(i + 2)
            .and_then(|r| r.parse().ok())
            .unwrap_or(1usize);
        if let Err(e) = inproc_child(&qc, runs) {
            eprintln!("{e}");
            std::process::exit(1);
        }
        return;
    }
    let o = match Opts::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if !o.corpus.is_dir() {
        eprintln!(
            "no corpus at {}: ../shared is needed (or MDLC_BENCH_CORPUS)",
            o.corpus.display()
        );
        return;
    }
    if let Err(e) = std::fs::create_dir_all(&o.tmp) {
        eprintln!("{}: {e}", o.tmp.display());
        std::process::exit(1);
    }
    let _tmp = TempDir(o.tmp.clone());
    let started = Instant::now();
    let mut failures = 0;
    for &s in &o.sections {
        let r = match s {
            1 => section_hev(&o),
            2 => section_mesh(&o),
            3 => section_acmr(&o),
            _ => section_anim(&o),
        };
        if let Err(e) = r {
            println!("error: {e}");
            failures += 1;
        }
    }
    println!();
    println!(
        "source bench: {} section(s), best of {} runs, {:.1} s in all",
        o.sections.len(),
        o.runs,
        started.elapsed().as_secs_f64()
    );
    if failures > 0 {
        drop(_tmp);
        std::process::exit(1);
    }
}
