//! `cargo +nightly fuzz run qc`: QC front end and model building on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mdlc::fuzzing::qc(data));
