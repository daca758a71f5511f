//! `cargo +nightly fuzz run dmx`: the DMX front end on arbitrary bytes. The body is
//! `mdlc::fuzzing::dmx`, replayed on `fuzz/corpus/dmx` by `tests/fuzz_replay.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mdlc::fuzzing::dmx(data));
