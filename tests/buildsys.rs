//! `mdlc build` for build systems (docs/build-systems.md): the report (checked against
//! docs/build-report.schema.json by the `jsonschema` package of the oracle virtualenv), the
//! depfile (its inputs alone rebuild the same bytes), up-to-date skipping, outputs that do not
//! depend on where the build ran, the errors of the options, and Ninja on a tree of QCs.
//!
//! The trees are copies of the shared corpus (`goldsrc-hl1` has SMDs that two projects read).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod source_common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use common::{corpus_dir, files_with_ext, fresh_dir, mdlc};
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    fresh_dir(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("buildsys-{name}")))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A writable copy of the Half-Life sources under `dir/hl1`; returns its `modelsrc/models`
/// folder (beside which the builds write) and its 42 QCs relative to it.
fn hl1_tree(corpus: &Path, dir: &Path) -> (PathBuf, Vec<String>) {
    copy_tree(&corpus.join("goldsrc-hl1"), &dir.join("hl1"));
    let src = dir.join("hl1/modelsrc/models");
    let qcs: Vec<String> = files_with_ext(&src, &["qc"])
        .iter()
        .map(|p| p.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert_eq!(qcs.len(), 42, "goldsrc-hl1 has 42 QCs");
    (src, qcs)
}

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = mdlc(args, dir);
    assert!(
        out.status.success(),
        "mdlc {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["project"].as_str().unwrap().to_string(),
                p["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn inputs_of(report: &Value) -> BTreeMap<String, BTreeSet<String>> {
    report["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let inputs = p["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap().to_string())
                .collect();
            (p["project"].as_str().unwrap().to_string(), inputs)
        })
        .collect()
}

/// Every file under `dir` with its modification time and contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for f in files_with_ext(dir, &["mdl", "vvd", "vtx", "phy", "json"]) {
        let m = std::fs::metadata(&f).unwrap().modified().unwrap();
        out.insert(f.clone(), (m, std::fs::read(&f).unwrap()));
    }
    out
}

/// The rules of a depfile as Make reads them: `target: inputs`, `\ ` an escaped space, `\`
/// at the end of a line a continuation, `$$` a dollar.
fn parse_depfile(text: &str) -> Vec<(String, Vec<String>)> {
    let joined = text.replace("\\\n", " ");
    let mut rules = Vec::new();
    for line in joined.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some(' ' | '#')) => word.push(chars.next().unwrap()),
                '$' if chars.peek() == Some(&'$') => {
                    chars.next();
                    word.push('$');
                }
                ' ' | '\t' => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                _ => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        let target = words.remove(0);
        let target = target.strip_suffix(':').unwrap().to_string();
        rules.push((target, words));
    }
    rules
}

/// `touch FILE`: a new modification time, the same content.
fn touch(path: &Path) {
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(SystemTime::now()).unwrap();
}

/// Whether the build tool `name` runs here. Under CI (`CI=true`) a missing tool fails the
/// test (`.ci/run` installs it); on a user's machine the test is skipped with a message.
fn have_tool(name: &str) -> bool {
    let ok = std::process::Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "{name} is missing; CI must install it (.ci/run)"
        );
        eprintln!("skipping: no {name}");
    }
    ok
}

/// Validates a report against docs/build-report.schema.json with Python's `jsonschema`
/// (an independent implementation of JSON Schema 2020-12).
fn check_schema(report: &Path) {
    let Some(py) = source_common::oracle_python() else {
        return;
    };
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/build-report.schema.json");
    let out = std::process::Command::new(py)
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             s = json.load(open(sys.argv[1]))\n\
             jsonschema.Draft202012Validator.check_schema(s)\n\
             jsonschema.Draft202012Validator(s).validate(json.load(open(sys.argv[2])))\n\
             print('valid')",
        ])
        .arg(&schema)
        .arg(report)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("valid"),
        "the report does not match the schema: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Half-Life tree: one build of every QC lists every project as built in a report that
/// matches the schema, with a depfile rule per project naming exactly the report's inputs; a
/// second run touches nothing; one changed shared SMD rebuilds exactly the projects that read
/// it; `--force`, a corrupt record and a deleted output rebuild.
#[test]
fn hl1_tree_report_depfile_and_up_to_date() {
    let Some(corpus) = corpus_dir() else { return };
    let (src, qcs) = hl1_tree(&corpus, &scratch("hl1"));
    let dir = src.parent().unwrap().to_path_buf();
    let mut args: Vec<&str> = vec!["build", "-o", "../out"];
    args.extend(qcs.iter().map(String::as_str));
    let with = |extra: &[&'static str]| {
        let mut a = args.clone();
        a.extend_from_slice(extra);
        a
    };

    run(
        &src,
        &with(&["--report", "../r1.json", "--depfile", "../d1.d"]),
    );
    let r1 = read_json(&dir.join("r1.json"));
    check_schema(&dir.join("r1.json"));
    let s1 = statuses(&r1);
    assert_eq!(
        s1.iter().map(|s| s.0.clone()).collect::<Vec<_>>(),
        qcs,
        "one entry per project, in the order given, named as given"
    );
    assert!(s1.iter().all(|s| s.1 == "built"), "{s1:?}");
    for p in r1["projects"].as_array().unwrap() {
        assert_eq!(p["target"], "goldsrc");
        for o in p["outputs"].as_array().unwrap() {
            let path = src.join(o["path"].as_str().unwrap());
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(o["bytes"].as_u64().unwrap(), bytes.len() as u64);
            assert_eq!(
                o["sha256"].as_str().unwrap(),
                mdlc::buildsys::sha256_hex(&bytes),
                "{}",
                path.display()
            );
        }
    }
    let inputs = inputs_of(&r1);
    // the depfile: one rule per project, its main model first, then exactly the report's inputs
    let rules = parse_depfile(&std::fs::read_to_string(dir.join("d1.d")).unwrap());
    assert_eq!(rules.len(), qcs.len());
    for ((target, deps), p) in rules.iter().zip(r1["projects"].as_array().unwrap()) {
        let project = p["project"].as_str().unwrap();
        assert!(
            target.ends_with(".mdl") && target.starts_with("../out/"),
            "{target}"
        );
        let outs: Vec<&str> = p["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["path"].as_str().unwrap())
            .collect();
        assert!(outs.contains(&target.as_str()), "{target} not in {outs:?}");
        let deps: BTreeSet<String> = deps.iter().cloned().collect();
        assert_eq!(&deps, &inputs[project], "{project}");
        assert!(deps.contains(project), "the QC itself is an input");
        assert!(deps.iter().any(|d| d.to_lowercase().ends_with(".smd")));
        for d in &deps {
            assert!(src.join(d).is_file(), "{d} read by {project} is not a file");
        }
    }
    let bmps = inputs
        .values()
        .flatten()
        .filter(|i| i.to_lowercase().ends_with(".bmp"))
        .count();
    assert!(bmps > 100, "the textures are inputs ({bmps} BMPs)");

    // nothing changed: all up to date, not one output touched
    let before = snapshot(&dir.join("out"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = run(
        &src,
        &with(&["--report", "../r2.json", "--depfile", "../d2.d"]),
    );
    let r2 = read_json(&dir.join("r2.json"));
    check_schema(&dir.join("r2.json"));
    assert!(
        statuses(&r2).iter().all(|s| s.1 == "up-to-date"),
        "{:?}",
        statuses(&r2)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("mdlc: wrote"));
    assert_eq!(
        snapshot(&dir.join("out")),
        before,
        "an up-to-date run touches nothing"
    );
    assert_eq!(
        inputs_of(&r2),
        inputs,
        "an up-to-date project reports its recorded inputs"
    );
    for (a, b) in r1["projects"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r2["projects"].as_array().unwrap())
    {
        assert_eq!(a["outputs"], b["outputs"]);
        assert_eq!(
            a["warnings"], b["warnings"],
            "warnings are kept with the record"
        );
    }
    assert_eq!(
        std::fs::read(dir.join("d1.d")).unwrap(),
        std::fs::read(dir.join("d2.d")).unwrap(),
        "the depfile of an up-to-date run is the same"
    );

    // one shared SMD changes: exactly the projects that read it are built
    let shared = "holo/meshes/hologram.smd";
    let readers: BTreeSet<&String> = inputs
        .iter()
        .filter(|(_, i)| i.contains(shared))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(readers.len(), 2, "{readers:?}");
    let mut text = std::fs::read(src.join(shared)).unwrap();
    text.extend_from_slice(b"\n");
    std::fs::write(src.join(shared), text).unwrap();
    run(&src, &with(&["--report", "../r3.json"]));
    for (p, s) in statuses(&read_json(&dir.join("r3.json"))) {
        let want = if readers.contains(&p) {
            "built"
        } else {
            "up-to-date"
        };
        assert_eq!(s, want, "{p}");
    }

    // a touched file whose content is the same is not a change
    touch(&src.join(shared));
    run(&src, &with(&["--report", "../r4.json"]));
    assert!(statuses(&read_json(&dir.join("r4.json")))
        .iter()
        .all(|s| s.1 == "up-to-date"));

    // --force builds everything
    run(&src, &with(&["--force", "--report", "../r5.json"]));
    assert!(statuses(&read_json(&dir.join("r5.json")))
        .iter()
        .all(|s| s.1 == "built"));

    // a corrupt record, a foreign one, one written by another build of this very version (as
    // every mdlc before build identifiers wrote them: the version alone) and a deleted output
    // each mean "rebuild"
    let records = files_with_ext(&dir.join("out/.mdlc"), &["json"]);
    assert_eq!(records.len(), qcs.len(), "one record per project");
    std::fs::write(&records[0], b"{\"format\": 1, \"mdlc\": ").unwrap();
    let mut foreign = read_json(&records[1]);
    foreign["mdlc"] = Value::from("0.0.0-other");
    std::fs::write(&records[1], serde_json::to_vec(&foreign).unwrap()).unwrap();
    let mut same_version = read_json(&records[2]);
    assert!(same_version["mdlc"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}+", env!("CARGO_PKG_VERSION"))));
    same_version["mdlc"] = Value::from(env!("CARGO_PKG_VERSION"));
    std::fs::write(&records[2], serde_json::to_vec(&same_version).unwrap()).unwrap();
    let victim = r1["projects"][5]["outputs"][0]["path"].as_str().unwrap();
    std::fs::remove_file(src.join(victim)).unwrap();
    run(&src, &with(&["--report", "../r6.json"]));
    let built = statuses(&read_json(&dir.join("r6.json")))
        .iter()
        .filter(|s| s.1 == "built")
        .count();
    // the record names are hashes, so the three damaged records may belong to project 5
    assert!((3..=4).contains(&built), "{built} projects were built");
    assert!(src.join(victim).is_file());
}

/// For every project of the corpus that builds: copying only the files its depfile names into
/// an empty folder and building there gives the same bytes.
#[test]
fn depfile_inputs_alone_rebuild_identical_bytes() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = scratch("depfile");
    let mut checked = 0;
    let mut sources = 0;
    for qc in files_with_ext(&corpus, &["qc"]) {
        let rel = qc.strip_prefix(&corpus).unwrap().display().to_string();
        let out1 = dir.join("out1");
        let _ = std::fs::remove_dir_all(&out1);
        let dep = dir.join("d.d");
        let first = mdlc(
            &[
                "build",
                &rel,
                "-o",
                out1.to_str().unwrap(),
                "--depfile",
                dep.to_str().unwrap(),
                "--report",
                dir.join("r.json").to_str().unwrap(),
            ],
            &corpus,
        );
        if !first.status.success() {
            continue; // a project mdlc refuses (tests/corpus.rs says which)
        }
        let rules = parse_depfile(&std::fs::read_to_string(&dep).unwrap());
        assert_eq!(rules.len(), 1, "{rel}");
        let report = read_json(&dir.join("r.json"));
        if report["projects"][0]["target"] == "source" {
            sources += 1;
        }
        let copy = fresh_dir(dir.join("copy"));
        for input in &rules[0].1 {
            let to = copy.join(input);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(corpus.join(input), &to).unwrap();
        }
        let out2 = dir.join("out2");
        let _ = std::fs::remove_dir_all(&out2);
        let second = mdlc(&["build", &rel, "-o", out2.to_str().unwrap()], &copy);
        assert!(
            second.status.success(),
            "{rel} does not build from its depfile's inputs: {}",
            String::from_utf8_lossy(&second.stderr)
        );
        let models = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
            files_with_ext(d, &["mdl", "vvd", "vtx", "phy"])
                .into_iter()
                .map(|f| {
                    (
                        f.strip_prefix(d).unwrap().to_path_buf(),
                        std::fs::read(&f).unwrap(),
                    )
                })
                .collect()
        };
        let (a, b) = (models(&out1), models(&out2));
        assert!(!a.is_empty(), "{rel}");
        assert!(
            a == b,
            "{rel}: the rebuild from the depfile's inputs differs"
        );
        checked += 1;
    }
    eprintln!("{checked} projects ({sources} Source) rebuilt from their depfile's inputs alone");
    assert!(checked >= 57, "only {checked} projects checked");
    assert!(sources >= 13, "only {sources} Source projects checked");
}

/// The same projects built from two folders, given by absolute paths, give the same bytes, and
/// no output holds the path of either folder.
#[test]
fn outputs_do_not_depend_on_the_build_folder() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = scratch("where");
    let mut outputs = Vec::new();
    for side in ["a", "machine-b/deeper"] {
        let root = dir.join(side);
        copy_tree(&corpus, &root);
        let projects: Vec<String> = files_with_ext(&root, &["qc"])
            .iter()
            .filter(|p| !p.to_string_lossy().contains("goldsrc-hl1"))
            .map(|p| p.display().to_string())
            .collect();
        let mut built = BTreeMap::new();
        for p in &projects {
            let out = root.join("out");
            let _ = std::fs::remove_dir_all(&out);
            let r = mdlc(&["build", p, "-o", out.to_str().unwrap()], &dir);
            if !r.status.success() {
                continue;
            }
            for f in files_with_ext(&out, &["mdl", "vvd", "vtx", "phy"]) {
                let bytes = std::fs::read(&f).unwrap();
                let needle = root.to_str().unwrap().as_bytes();
                assert!(
                    !bytes.windows(needle.len()).any(|w| w == needle),
                    "{} holds the build folder's path",
                    f.display()
                );
                let key = format!("{p}:{}", f.strip_prefix(&out).unwrap().display());
                built.insert(key.replacen(root.to_str().unwrap(), "", 1), bytes);
            }
        }
        outputs.push(built);
    }
    assert!(outputs[0].len() >= 20, "{} files", outputs[0].len());
    assert_eq!(
        outputs[0].keys().collect::<Vec<_>>(),
        outputs[1].keys().collect::<Vec<_>>()
    );
    for (k, v) in &outputs[0] {
        assert!(&outputs[1][k] == v, "{k} differs between the two folders");
    }
}

/// The errors of the options: each is reported, exits non-zero and writes nothing.
#[test]
fn option_errors_write_nothing() {
    let dir = scratch("errors");
    let qc = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain/anim_chain.qc");
    let qc = qc.to_str().unwrap();

    let r = mdlc(&["build", qc, "-o", "out", "--jobs", "0"], &dir);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--jobs"));

    std::fs::write(dir.join("a-file"), b"").unwrap();
    let r = mdlc(
        &["build", qc, "-o", "out", "--report", "a-file/r.json"],
        &dir,
    );
    assert_eq!(r.status.code(), Some(2));
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(
        e.contains("cannot write the report") && e.contains("nothing was built"),
        "{e}"
    );
    std::fs::create_dir_all(dir.join("a-folder")).unwrap();
    let r = mdlc(&["build", qc, "-o", "out", "--depfile", "a-folder"], &dir);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("cannot write the depfile"));
    assert!(!dir.join("out").exists(), "nothing is written");

    // a report or depfile in a folder that does not exist yet: the folder is made
    run(
        &dir,
        &[
            "build",
            qc,
            "-o",
            "out",
            "--depfile",
            "deps/new/d.d",
            "--report",
            "reports/r.json",
        ],
    );
    assert!(dir.join("deps/new/d.d").is_file() && dir.join("reports/r.json").is_file());
    let _ = std::fs::remove_dir_all(dir.join("out"));

    // --game with a GoldSrc project: E0800, nothing written, not even for the Source project
    let gs = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/goldsrc");
    let gs_qc = files_with_ext(&gs, &["qc"])
        .into_iter()
        .find(|q| {
            mdlc(&["build", q.to_str().unwrap(), "-o", "probe"], &dir)
                .status
                .success()
        })
        .expect("a GoldSrc QC of testdata that builds");
    let _ = std::fs::remove_dir_all(dir.join("probe"));
    let r = mdlc(
        &[
            "build",
            qc,
            gs_qc.to_str().unwrap(),
            "--game",
            "game",
            "--report",
            "r.json",
        ],
        &dir,
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("error[E0800]"));
    assert!(!dir.join("game").exists(), "nothing is written");
    let report = read_json(&dir.join("r.json"));
    assert_eq!(
        statuses(&report)
            .iter()
            .map(|s| s.1.as_str())
            .collect::<Vec<_>>(),
        ["not-written", "failed"]
    );

    // --game places a Source model as Valve's compiler does: DIR/models/<$modelname>
    run(&dir, &["build", qc, "--game", "game"]);
    let mdls = files_with_ext(&dir.join("game/models"), &["mdl"]);
    assert_eq!(mdls.len(), 1, "{mdls:?}");
}

/// `--progress always` shows the count and the project on standard error, ending with the line
/// cleared before any diagnostic; `never` (and a pipe, by default) shows nothing.
#[test]
fn progress_is_shown_only_when_asked_on_a_pipe() {
    let dir = scratch("progress");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain");
    copy_tree(&from, &dir.join("a"));
    copy_tree(&from, &dir.join("b"));
    let qc = std::fs::read_to_string(dir.join("b/anim_chain.qc")).unwrap();
    std::fs::write(
        dir.join("b/anim_chain.qc"),
        qc.replace("test/anim_chain.mdl", "test/other.mdl"),
    )
    .unwrap();
    let (a, b) = ("a/anim_chain.qc", "b/anim_chain.qc");
    let r = run(&dir, &["build", a, b, "-o", "o1", "--progress", "always"]);
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(e.contains("[2/2]"), "{e}");
    let last_progress = e.rfind("\r\x1b[2K").unwrap();
    assert!(
        !e[..last_progress].contains('\n'),
        "diagnostics come after the bar is cleared: {e:?}"
    );
    assert!(e[last_progress..].contains("warning[W0120]"), "{e:?}");
    let r = run(&dir, &["build", a, b, "-o", "o2"]);
    assert!(!String::from_utf8_lossy(&r.stderr).contains('\r'));
}

/// The same project given twice would write one file twice: E0801, nothing written.
#[test]
fn two_projects_writing_one_file_are_refused() {
    let dir = scratch("same-output");
    let qc = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain/anim_chain.qc");
    let qc = qc.to_str().unwrap();
    let r = mdlc(&["build", qc, qc, "-o", "out"], &dir);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("error[E0801]"));
    assert!(!dir.join("out").exists());
    let r = mdlc(&["ninja", qc, qc, "-o", "out", "--file", "b.ninja"], &dir);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("error[E0801]"));
    assert!(!dir.join("b.ninja").exists());
}

/// Ninja, from `mdlc ninja`: builds the tree, then has nothing to do, then rebuilds exactly the
/// projects that read a changed shared SMD. CI installs Ninja; without it the test fails there.
#[test]
fn ninja_builds_then_has_nothing_to_do_then_rebuilds_dependents() {
    let Some(corpus) = corpus_dir() else { return };
    if !have_tool("ninja") {
        return;
    }
    let dir = scratch("ninja");
    let (src, qcs) = hl1_tree(&corpus, &dir);
    let mut args: Vec<&str> = vec!["ninja", "-o", "../out", "--file", "build.ninja"];
    args.extend(qcs.iter().map(String::as_str));
    run(&src, &args);
    let ninja = |what: &str| {
        let o = std::process::Command::new("ninja")
            .current_dir(&src)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "ninja ({what}) failed: {text}");
        text
    };
    let built = |log: &str| -> BTreeSet<String> {
        log.lines()
            .filter_map(|l| {
                l.split_once("mdlc build ")
                    .map(|(_, p)| p.trim().to_string())
            })
            .collect()
    };
    let first = ninja("first");
    assert_eq!(built(&first).len(), qcs.len(), "{first}");
    assert!(files_with_ext(&src.join("../out"), &["mdl"]).len() >= qcs.len());
    assert!(ninja("second").contains("no work to do"));

    let shared = "holo/meshes/hologram.smd";
    let mut text = std::fs::read(src.join(shared)).unwrap();
    text.extend_from_slice(b"\n");
    std::fs::write(src.join(shared), text).unwrap();
    let third = ninja("after a change");
    let want: BTreeSet<String> = ["holo/holo.qc", "holo/holo_cart.qc"]
        .iter()
        .map(|s| s.to_string())
        .filter(|s| qcs.contains(s))
        .collect();
    assert_eq!(want.len(), 2, "the corpus's hologram projects: {qcs:?}");
    assert_eq!(built(&third), want, "{third}");
    assert!(ninja("fourth").contains("no work to do"));

    // touched, not changed: Ninja runs the two again, mdlc finds them up to date and leaves
    // their outputs alone, and `restat` ends it there
    touch(&src.join(shared));
    let fifth = ninja("after a touch");
    assert_eq!(built(&fifth), want, "{fifth}");
    assert_eq!(fifth.matches("mdlc: up to date:").count(), 2, "{fifth}");
    assert!(ninja("sixth").contains("no work to do"));
}

/// A build without `--report` records no SHA-256; a later report of the project up to date
/// gives the files' own.
#[test]
fn an_up_to_date_report_after_a_build_without_one_has_the_sha256() {
    let dir = scratch("late-report");
    let qc = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain/anim_chain.qc");
    let qc = qc.to_str().unwrap();
    run(&dir, &["build", qc, "-o", "out"]);
    run(&dir, &["build", qc, "-o", "out", "--report", "r.json"]);
    let report = read_json(&dir.join("r.json"));
    assert_eq!(report["projects"][0]["status"], "up-to-date");
    let outputs = report["projects"][0]["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 5, "mdl, vvd and three vtx");
    for o in outputs {
        let bytes = std::fs::read(dir.join(o["path"].as_str().unwrap())).unwrap();
        assert_eq!(o["sha256"], mdlc::buildsys::sha256_hex(&bytes).as_str());
    }
}

/// The Make rule of docs/build-systems.md: built, then nothing to do, then a changed SMD
/// rebuilds through the depfile. CI installs Make; without it the test fails there.
#[test]
fn make_rebuilds_through_the_depfile() {
    if !have_tool("make") {
        return;
    }
    let dir = scratch("make");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain"),
        &dir.join("a"),
    );
    std::fs::write(
        dir.join("Makefile"),
        "MODEL := build/models/test/anim_chain.mdl\n\
         all: $(MODEL)\n\
         $(MODEL): a/anim_chain.qc\n\
         \t$(MDLC) build $< -o build/models --depfile $@.d --progress never\n\
         -include $(MODEL).d\n",
    )
    .unwrap();
    let make = || {
        let o = std::process::Command::new("make")
            .arg(format!("MDLC={}", env!("CARGO_BIN_EXE_mdlc")))
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
    };
    assert!(make().contains("mdlc: wrote build/models/test/anim_chain.mdl"));
    assert!(make().contains("Nothing to be done"));
    let mut smd = std::fs::read(dir.join("a/swing.smd")).unwrap();
    smd.extend_from_slice(b"\n");
    std::fs::write(dir.join("a/swing.smd"), smd).unwrap();
    assert!(make().contains("mdlc: wrote build/models/test/anim_chain.mdl"));
    assert!(make().contains("Nothing to be done"));
}

/// A Source project's Ninja edge names every file the build writes: the `.mdl`, and as implicit
/// outputs the `.vvd`, the three `.vtx` and, with a collision model, the `.phy`. Deleting the
/// `.phy` makes Ninja run the build again, which writes it back.
#[test]
fn ninja_edges_name_every_output() {
    if !have_tool("ninja") {
        return;
    }
    let dir = scratch("ninja-outputs");
    let src = dir.join("src");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/physics"),
        &src,
    );
    run(
        &src,
        &[
            "ninja",
            "automass.qc",
            "-o",
            "../out",
            "--file",
            "build.ninja",
        ],
    );
    let text = std::fs::read_to_string(src.join("build.ninja")).unwrap();
    let edge = text
        .lines()
        .find(|l| l.starts_with("build "))
        .unwrap()
        .to_string();
    let (outputs, _) = edge.split_once(": mdlc ").unwrap();
    let (main, implicit) = outputs.split_once(" | ").unwrap();
    assert_eq!(main, "build ../out/physics/automass.mdl");
    let implicit: Vec<&str> = implicit.split(' ').collect();
    assert_eq!(
        implicit,
        [
            "../out/physics/automass.vvd",
            "../out/physics/automass.dx90.vtx",
            "../out/physics/automass.dx80.vtx",
            "../out/physics/automass.sw.vtx",
            "../out/physics/automass.phy"
        ]
    );
    let ninja = || {
        let o = std::process::Command::new("ninja")
            .current_dir(&src)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    ninja();
    for f in &implicit {
        assert!(src.join(f).is_file(), "{f} was not written");
    }
    assert!(ninja().contains("no work to do"));
    std::fs::remove_file(src.join(implicit[4])).unwrap();
    let again = ninja();
    assert!(again.contains("mdlc build"), "{again}");
    assert!(src.join(implicit[4]).is_file());
    assert!(ninja().contains("no work to do"));
}
