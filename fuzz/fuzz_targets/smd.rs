//! `cargo +nightly fuzz run smd`: the SMD front end on arbitrary bytes. The body is
//! `mdlc::fuzzing::smd`, replayed on `fuzz/corpus/smd` by `tests/fuzz_replay.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mdlc::fuzzing::smd(data));
