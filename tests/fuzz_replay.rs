//! Replays the saved fuzz inputs (`fuzz/corpus/smd`) through the fuzz body on stable Rust, and
//! runs a deterministic mutation fuzzer over the SMD fixtures: every mutated input must go
//! through the front end without a panic, with every span inside its file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

mod common;
use common::{mutate, Rng};

fn files_in(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn saved_fuzz_inputs_do_not_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inputs = files_in(&root.join("fuzz/corpus/smd"));
    assert!(!inputs.is_empty(), "fuzz/corpus/smd is empty");
    for data in inputs {
        mdlc::fuzzing::smd(&data);
    }
}

const DICTIONARY: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"\"",
    b"end\n",
    b"time ",
    b"time -1\n",
    b"-",
    b"1e999",
    b"nan",
    b"0",
    b".",
    b",",
    b"triangles\n",
    b"nodes\n",
    b"skeleton\n",
    b"vertexanimation\n",
    b"version 2\n",
    b"\0",
    b"\xff",
    b"\xc3\xa9",
    b"# c",
    b"// c",
    b"99999999999",
    b"-2147483648",
    b"2147483647",
    b"3 ",
    b"0 0.5 1 0.5",
];

#[test]
fn mutated_fixtures_do_not_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = Vec::new();
    for dir in ["testdata/smd/ok", "testdata/smd/err", "fuzz/corpus/smd"] {
        seeds.extend(files_in(&root.join(dir)));
    }
    assert!(seeds.len() >= 3, "no seeds");
    let mut rng = Rng(0x51_7C_C1_B7_27_22_0A_95);
    let mut runs = 0;
    for seed in &seeds {
        for _ in 0..200 {
            let mut data = seed.clone();
            mutate(&mut rng, &mut data, DICTIONARY, true);
            mdlc::fuzzing::smd(&data);
            runs += 1;
        }
    }
    assert!(runs >= 600);
}

fn mutation_run(dirs: &[&str], body: fn(&[u8]), per_seed: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds = Vec::new();
    for dir in dirs {
        seeds.extend(files_in(&root.join(dir)));
    }
    assert!(!seeds.is_empty(), "no seeds in {dirs:?}");
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for seed in &seeds {
        body(seed);
        for _ in 0..per_seed {
            let mut data = seed.clone();
            mutate(&mut rng, &mut data, DICTIONARY, true);
            body(&data);
        }
    }
}

/// DMX files (binary 2, 4 and 5, `keyvalues2`, two of them with flex shapes and a combination
/// operator; `fuzz/corpus/dmx`),
/// mutated: every input gives a model or an error, never a panic.
#[test]
fn mutated_dmx_files_do_not_panic() {
    mutation_run(&["fuzz/corpus/dmx"], mdlc::fuzzing::dmx, 5000);
}

#[test]
fn mutated_qc_projects_do_not_panic() {
    mutation_run(
        &["testdata/qc/ok", "testdata/qc/err", "fuzz/corpus/qc"],
        mdlc::fuzzing::qc,
        100,
    );
}

#[test]
fn mutated_toml_projects_do_not_panic() {
    mutation_run(
        &[
            "testdata/project/ok",
            "testdata/project/err",
            "fuzz/corpus/toml",
        ],
        mdlc::fuzzing::toml,
        100,
    );
}

/// The animation fixture (a QC with sequences, events, blends of options, and four SMDs), one
/// file mutated at a time, through the QC front end and both back ends: no panic, and every
/// Source build reads back with its invariants holding.
#[test]
fn mutated_animation_projects_do_not_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source/anim_chain");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let name = if name.ends_with(".qc") {
            "main.qc".to_string()
        } else {
            name
        };
        files.push((name, std::fs::read(&p).unwrap()));
    }
    files.sort();
    assert_eq!(files.len(), 5, "anim_chain fixture changed");
    assert!(
        mdlc::fuzzing::project(&files),
        "the fixture itself must build"
    );
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut built = 0;
    for _ in 0..3000 {
        let mut mutated = files.clone();
        let k = rng.below(mutated.len());
        mutate(&mut rng, &mut mutated[k].1, DICTIONARY, true);
        built += usize::from(mdlc::fuzzing::project(&mutated));
    }
    // most mutations still build (they exercise the back ends, not just the front end); a
    // mutation that leaves the QC without any `$body` and `$sequence` (an opened `/*`, a cut
    // file) is an empty model, refused (E0412) since 488 of these 3000 build
    assert!(built > 450, "only {built} of 3000 mutated projects built");
}

/// The IK rule and procedural bone fixtures (a QC, its SMDs and its `.vrd`), one file mutated at
/// a time, through the QC front end and both back ends: no panic, and every Source build reads
/// back with its invariants holding (the IK rule records and streams, the procedural records).
#[test]
fn mutated_ik_and_procedural_projects_do_not_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source");
    for (dir, qc, others) in [
        ("ikrule", "rules.qc", &["ref.smd", "walk.smd"][..]),
        ("procedural", "helpers.qc", &["ref.smd", "arm.vrd"][..]),
    ] {
        let mut files = vec![(
            "main.qc".to_string(),
            std::fs::read(root.join(dir).join(qc)).unwrap(),
        )];
        for f in others {
            files.push((
                f.to_string(),
                std::fs::read(root.join(dir).join(f)).unwrap(),
            ));
        }
        assert!(
            mdlc::fuzzing::project(&files),
            "{dir}: the fixture itself must build"
        );
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut built = 0;
        for _ in 0..1000 {
            let mut mutated = files.clone();
            let k = rng.below(mutated.len());
            mutate(&mut rng, &mut mutated[k].1, DICTIONARY, true);
            built += usize::from(mdlc::fuzzing::project(&mutated));
        }
        assert!(
            built > 100,
            "{dir}: only {built} of 1000 mutated projects built"
        );
    }
}
