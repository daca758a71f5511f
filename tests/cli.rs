//! The `mdlc` binary: exit codes, JSON output, help texts, and that `check` writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn fixture(rel: &str) -> PathBuf {
    Path::new(ROOT).join("testdata/smd").join(rel)
}

fn mdlc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .args(args)
        .current_dir(ROOT)
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("mdlc was killed by a signal")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const ERR: &str = "testdata/smd/err/weight_above_one.smd";
const OK: &str = "testdata/smd/ok/hl1_nine_value_vertices.smd";
const OK_WITH_WARNING: &str = "testdata/smd/ok/warn_weight_sum.smd";

#[test]
fn exit_1_on_an_error() {
    let o = mdlc(&["check", ERR]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("error[E0143]"), "{err}");
    assert!(err.contains("weight_above_one.smd:15:79"), "{err}");
    assert!(err.contains("1 error and 0 warnings in 1 file"), "{err}");
}

#[test]
fn exit_0_on_a_valid_file() {
    let o = mdlc(&["check", OK]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(stdout(&o), "");
}

/// A negative `time` is refused by Valve's Source compiler and skipped by Valve's HL1 compiler:
/// a lone SMD is checked by Source's rules unless `--target goldsrc` asks for GoldSrc's.
#[test]
fn a_negative_time_is_an_error_except_for_goldsrc() {
    const NEG: &str = "testdata/smd/err/negative_frame.smd";
    let o = mdlc(&["check", NEG]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("error[E0132]"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("negative_frame.smd:11:6"),
        "{}",
        stderr(&o)
    );
    let o = mdlc(&["check", "--target", "goldsrc", NEG]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // a project built for Source refuses the file where it is loaded, with its span
    let qc = "testdata/goldsrc/heldout/negative_time/negative_time.qc";
    let o = mdlc(&["check", "--target", "source", qc]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("error[E0132]"), "{}", stderr(&o));
    assert!(stderr(&o).contains("walk.smd:"), "{}", stderr(&o));
    let o = mdlc(&["check", "--target", "goldsrc", qc]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("warning[W0409]"), "{}", stderr(&o));
}

#[test]
fn exit_0_with_warnings_only() {
    let o = mdlc(&["check", OK_WITH_WARNING]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("warning[W0140]"), "{}", stderr(&o));
}

#[test]
fn exit_1_when_any_of_several_files_has_an_error() {
    let o = mdlc(&["check", OK, ERR, OK_WITH_WARNING]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 error and 1 warning in 3 files"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn exit_2_on_a_missing_file() {
    let o = mdlc(&["check", "testdata/smd/ok/no_such_file.smd"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("E0001"), "{}", stderr(&o));
    // A missing file wins over errors in other files.
    let o = mdlc(&["check", ERR, "testdata/smd/ok/no_such_file.smd"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn exit_2_on_bad_usage() {
    for args in [
        &["check"][..],
        &["check", "--no-such-flag", OK][..],
        &["check", "--message-format", "xml", OK][..],
        &["no-such-command"][..],
        &[][..],
    ] {
        let o = mdlc(args);
        assert_eq!(code(&o), 2, "mdlc {args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "mdlc {args:?} printed no reason");
    }
}

#[test]
fn help_has_examples() {
    for args in [
        &["--help"][..],
        &["check", "--help"][..],
        &["help", "check"][..],
    ] {
        let o = mdlc(args);
        assert_eq!(code(&o), 0, "mdlc {args:?}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("Example"),
            "mdlc {args:?}: {}",
            stdout(&o)
        );
    }
    assert!(stdout(&mdlc(&["check", "--help"])).contains("--message-format"));
}

const JSON_KEYS: [&str; 9] = [
    "severity",
    "code",
    "message",
    "file",
    "line",
    "column",
    "end_line",
    "end_column",
    "notes",
];

/// Parses JSON output: one object per line, each with exactly the documented keys.
fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    let want: BTreeSet<&str> = JSON_KEYS.into_iter().collect();
    stdout(o)
        .lines()
        .map(|line| {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys, want, "{line}");
            assert!(v["notes"].as_array().unwrap().iter().all(|n| n.is_string()));
            v
        })
        .collect()
}

#[test]
fn json_output() {
    let o = mdlc(&[
        "check",
        "--message-format",
        "json",
        "testdata/smd/err/several_errors.smd",
        OK_WITH_WARNING,
    ]);
    assert_eq!(code(&o), 1);
    // JSON goes to stdout; nothing human-readable is mixed in.
    assert_eq!(stderr(&o), "");
    let lines = json_lines(&o);
    let got: Vec<(String, String, u64)> = lines
        .iter()
        .map(|v| {
            (
                v["severity"].as_str().unwrap().to_string(),
                v["code"].as_str().unwrap().to_string(),
                v["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let e = |c: &str, l| ("error".to_string(), c.to_string(), l);
    assert_eq!(
        got,
        vec![
            e("E0110", 5),
            e("E0111", 6),
            e("E0112", 12),
            e("E0131", 14),
            e("E0142", 19),
            e("E0144", 21),
            ("warning".to_string(), "W0140".to_string(), 13),
        ]
    );
    let first = &lines[0];
    assert_eq!(first["file"], "testdata/smd/err/several_errors.smd");
    assert_eq!(first["column"], 9);
    assert_eq!(first["end_line"], 5);
    assert_eq!(first["end_column"], 10);
    assert_eq!(first["notes"][0], "unexpected value");
    // A secondary label becomes a `file:line:col: label` note after the primary label.
    let tri = &lines[5];
    assert_eq!(
        tri["notes"][1],
        "testdata/smd/err/several_errors.smd:23:1: this line is not a vertex"
    );
}

#[test]
fn json_for_a_missing_file_has_no_position() {
    let o = mdlc(&["check", "--message-format", "json", "no_such_file.smd"]);
    assert_eq!(code(&o), 2);
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1);
    let v = &lines[0];
    assert_eq!(v["code"], "E0001");
    assert_eq!(v["file"], "no_such_file.smd");
    for k in ["line", "column", "end_line", "end_column"] {
        assert!(v[k].is_null(), "{k} = {}", v[k]);
    }
}

#[test]
fn json_ok_file_prints_nothing() {
    let o = mdlc(&["check", "--message-format", "json", OK]);
    assert_eq!(code(&o), 0);
    assert_eq!(stdout(&o), "");
}

fn listing(dir: &Path) -> BTreeSet<(PathBuf, u64)> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                out.insert((e.path(), meta.len()));
            }
        }
    }
    out
}

#[test]
fn check_writes_no_file() {
    let dir = fixture("");
    let before = listing(&dir);
    let all: Vec<String> = before
        .iter()
        .map(|(p, _)| p.to_string_lossy().into_owned())
        .collect();
    // Run from an empty working directory, which must stay empty.
    let cwd = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-test");
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    for format in ["human", "json"] {
        let o = Command::new(env!("CARGO_BIN_EXE_mdlc"))
            .args(["check", "--message-format", format])
            .args(&all)
            .current_dir(&cwd)
            .output()
            .unwrap();
        assert_eq!(code(&o), 1, "{}", stderr(&o));
    }
    assert_eq!(listing(&dir), before);
    assert!(listing(&cwd).is_empty());
    std::fs::remove_dir(&cwd).unwrap();
}

/// Several projects in one `mdlc build` run in parallel, and each finished project keeps only
/// the texts its diagnostics cite: the warnings of both still show their source lines, in the
/// order the projects were given, and both models are written.
#[test]
fn build_of_several_projects_renders_each_projects_diagnostics() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-several");
    let _ = std::fs::remove_dir_all(&tmp);
    let src = Path::new(ROOT).join("testdata/goldsrc/inspect/box");
    // each names its sequence twice (`b` two lines further down)
    for (name, again) in [
        ("a", "$sequence \"idle\" \"box\" fps 15\n"),
        ("b", "\n\n$sequence \"idle\" \"box\" fps 20\n"),
    ] {
        let dir = tmp.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["box.smd", "box.bmp"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        let qc = std::fs::read_to_string(src.join("box.qc"))
            .unwrap()
            .replace("\"box.mdl\"", &format!("\"{name}.mdl\""));
        std::fs::write(dir.join(format!("{name}.qc")), qc + again).unwrap();
    }
    let out = tmp.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .current_dir(&tmp)
        .args(["build", "a/a.qc", "b/b.qc", "--color", "never", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    let a = err.find("a/a.qc:10:11");
    let b = err.find("b/b.qc:12:11");
    assert!(a.is_some() && b.is_some() && a < b, "{err}");
    assert!(
        err.contains("10 │ $sequence \"idle\" \"box\" fps 15"),
        "{err}"
    );
    assert!(
        err.contains("12 │ $sequence \"idle\" \"box\" fps 20"),
        "{err}"
    );
    assert!(out.join("a.mdl").is_file() && out.join("b.mdl").is_file());
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A reference SMD whose bone `spine` (line 4) hangs from a root named `root`: two files with
/// roots of different case give `spine` different parents in a GoldSrc build (`E0403`).
fn spine_reference(root: &str) -> String {
    format!(
        "version 1\nnodes\n0 \"{root}\" -1\n1 \"spine\" 0\nend\nskeleton\ntime 0\n\
         0 0 0 0 0 0 0\n1 0 0 1 0 0 0\nend\ntriangles\nskin.bmp\n\
         1 0 0 0 0 0 1 0 0\n1 1 0 0 0 0 1 1 0\n1 0 1 0 0 0 1 0 1\nend\n"
    )
}

/// SMD texts that parse cleanly are let go during the build and read again for a diagnostic a
/// later stage gives: the lines of both files still show (GoldSrc `E0403`, two files giving a
/// bone different parents).
#[test]
fn a_later_diagnostic_shows_the_lines_of_files_parsed_without_one() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-reread");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("ref1.smd"), spine_reference("root")).unwrap();
    std::fs::write(tmp.join("ref2.smd"), spine_reference("ROOT")).unwrap();
    std::fs::write(
        tmp.join("m.qc"),
        "$modelname \"m.mdl\"\n$cd \".\"\n$body body \"ref1\"\n$body arms \"ref2\"\n\
         $sequence idle \"ref1\"\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .args(["check", "--target", "goldsrc", "m.qc"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("error[E0403]"), "{err}");
    assert!(err.contains("ref2.smd:4:1"), "{err}");
    assert!(err.contains("4 │ 1 \"spine\" 0"), "{err}");
    assert!(err.contains("ref1.smd:4:1"), "{err}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// Projects of one run that read the same SMD files share one parse of each
/// (`mdlc::load::shared`): whichever project parsed a file, each project reports that file's
/// warning at its own line and column with its source line, and writes the same bytes as when
/// it is built alone. Six projects on the run's threads, so that files are taken while another
/// project parses them, while another holds them, and after.
#[test]
fn projects_sharing_files_report_and_write_as_when_built_alone() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-shared");
    let _ = std::fs::remove_dir_all(&tmp);
    let src = Path::new(ROOT).join("testdata/goldsrc/inspect/box");
    let shared = tmp.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::copy(src.join("box.bmp"), shared.join("box.bmp")).unwrap();
    // without its `version` line: W0101 at the `nodes` line (line 2, after the comment)
    let smd = std::fs::read_to_string(src.join("box.smd"))
        .unwrap()
        .replacen("version 1\n", "", 1);
    assert!(smd.lines().nth(1) == Some("nodes"), "{smd}");
    std::fs::write(shared.join("box.smd"), &smd).unwrap();
    std::fs::write(shared.join("idle.smd"), &smd).unwrap();
    let names: Vec<String> = (0..6).map(|k| format!("p{k}")).collect();
    for name in &names {
        let dir = tmp.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("{name}.qc")),
            format!(
                "$modelname \"{name}.mdl\"\n$cd \"../shared\"\n$cdtexture \"../shared\"\n\
                 $body \"body\" \"box\"\n$sequence \"idle\" \"idle\" fps 30\n"
            ),
        )
        .unwrap();
    }
    let run = |qcs: &[String], out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_mdlc"))
            .current_dir(&tmp)
            .args(["build", "--color", "never", "-o"])
            .arg(out)
            .args(qcs)
            .output()
            .unwrap()
    };
    let qcs: Vec<String> = names.iter().map(|n| format!("{n}/{n}.qc")).collect();
    let together = tmp.join("together");
    let o = run(&qcs, &together);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    // each project reports both files' warning, with the source line
    for file in ["box.smd", "idle.smd"] {
        let at = format!("shared/{file}:2:1");
        assert_eq!(err.matches(&at).count(), names.len(), "{at}\n{err}");
    }
    assert_eq!(err.matches("2 │ nodes").count(), 2 * names.len(), "{err}");
    for (name, qc) in names.iter().zip(&qcs) {
        let alone = tmp.join(format!("alone-{name}"));
        let o = run(std::slice::from_ref(qc), &alone);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let file = format!("{name}.mdl");
        assert_eq!(
            std::fs::read(together.join(&file)).unwrap(),
            std::fs::read(alone.join(&file)).unwrap(),
            "{file}"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A shared file whose text was let go is read again for a later stage's diagnostic in every
/// project that cites it (GoldSrc `E0403` in three projects: two shared files give a bone
/// different parents).
#[test]
fn a_later_diagnostic_shows_the_lines_of_a_shared_file_in_each_project() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-shared-reread");
    let _ = std::fs::remove_dir_all(&tmp);
    let shared = tmp.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("ref1.smd"), spine_reference("root")).unwrap();
    std::fs::write(shared.join("ref2.smd"), spine_reference("ROOT")).unwrap();
    let mut qcs = Vec::new();
    for name in ["a", "b", "c"] {
        std::fs::create_dir_all(tmp.join(name)).unwrap();
        std::fs::write(
            tmp.join(name).join("m.qc"),
            format!(
                "$modelname \"{name}.mdl\"\n$cd \"../shared\"\n$body body \"ref1\"\n\
                 $body arms \"ref2\"\n$sequence idle \"ref1\"\n"
            ),
        )
        .unwrap();
        qcs.push(format!("{name}/m.qc"));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .args([
            "build", "--target", "goldsrc", "--color", "never", "-o", "out",
        ])
        .args(&qcs)
        .current_dir(&tmp)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(!tmp.join("out").exists(), "{err}");
    assert_eq!(err.matches("error[E0403]").count(), 3, "{err}");
    assert_eq!(err.matches("shared/ref2.smd:4:1").count(), 3, "{err}");
    assert_eq!(err.matches("4 │ 1 \"spine\" 0").count(), 6, "{err}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `check` goes through the back end: an error only the Source back end finds (a negative
/// `$animblocksize`, E0622) is reported with its span and exit 1, and nothing is written, not
/// even an output folder or an up-to-date record.
#[test]
fn check_reports_back_end_diagnostics_and_writes_nothing() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-backend");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(
        Path::new(ROOT).join("testdata/source/ikrule/ref.smd"),
        tmp.join("ref.smd"),
    )
    .unwrap();
    std::fs::write(
        tmp.join("m.qc"),
        "$modelname \"t/m.mdl\"\n$cdmaterials \"x\"\n$animblocksize -4\n$body body \"ref.smd\"\n\
         $sequence idle \"ref.smd\"\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mdlc"))
        .args(["check", "m.qc", "--color", "never"])
        .current_dir(&tmp)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("error[E0622]"), "{err}");
    assert!(err.contains("m.qc:3:16"), "{err}");
    let mut left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["m.qc", "ref.smd"]);
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A clean build of a mesh large enough for the parallel corner making (60,000 triangles and
/// more) says nothing on stderr but mdlc's own `mdlc:` lines: no timing or debugging output
/// (stop 31 shipped a stray `WELD total` line there).
#[test]
fn a_large_clean_build_prints_only_its_own_lines() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("mdlc-cli-large");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = 176; // 175 × 175 quads: 61,250 triangles
    let mut smd = String::from(
        "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\n",
    );
    let v = |x: usize, y: usize| {
        format!(
            "0 {x} {y} 0 0 0 1 {} {} 1 0 1\n",
            x as f32 / n as f32,
            y as f32 / n as f32
        )
    };
    for y in 0..n - 1 {
        for x in 0..n - 1 {
            smd.push_str("grid\n");
            smd.push_str(&(v(x, y) + &v(x + 1, y) + &v(x + 1, y + 1)));
            smd.push_str("grid\n");
            smd.push_str(&(v(x, y) + &v(x + 1, y + 1) + &v(x, y + 1)));
        }
    }
    smd.push_str("end\n");
    std::fs::write(dir.join("grid.smd"), smd).unwrap();
    std::fs::write(
        dir.join("grid.qc"),
        "$modelname \"grid.mdl\"\n$cdmaterials \"x\"\n$model \"grid\" \"grid.smd\"\n$sequence \"idle\" \"grid.smd\"\n",
    )
    .unwrap();
    let qc = dir.join("grid.qc");
    let out = dir.join("out");
    let o = mdlc(&[
        "build",
        "--target",
        "source",
        qc.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 0, "{err}");
    assert!(out.join("grid.vvd").is_file(), "{err}");
    let stray: Vec<&str> = err
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("mdlc:"))
        .collect();
    assert!(stray.is_empty(), "stderr: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}
