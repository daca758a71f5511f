//! Bodies of the fuzz targets. They live in the library so that a stable `#[test]` can replay
//! saved inputs (`tests/fuzz_replay.rs`) and the `fuzz/` crate (cargo-fuzz, nightly) stays a
//! one-line wrapper.
//!
//! Each body runs a stage on arbitrary bytes and checks what must hold for every input; a
//! violated check panics, which is what a fuzzer looks for.

use crate::diag::{self, Sources};
use crate::driver;

/// SMD front end: text check, parse, lower, render every diagnostic both ways.
pub fn smd(data: &[u8]) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let (id, ok) = driver::add_text(&mut sources, "fuzz.smd", data.to_vec(), &mut diags);
    if ok {
        driver::check_smd(&sources, id, &mut diags);
    }
    let text = sources.text(id);
    for d in &diags {
        for l in &d.labels {
            let r = l.at.span.range();
            assert!(
                r.start <= r.end && r.end <= text.len(),
                "span {r:?} outside a file of {} bytes",
                text.len()
            );
            assert!(
                text.is_char_boundary(r.start) && text.is_char_boundary(r.end),
                "span {r:?} splits a character"
            );
        }
        let plain = diag::render_plain(&sources, d);
        assert!(
            !plain.contains("could not show the source"),
            "bad span in {plain}"
        );
        let json = diag::render_json(&sources, d);
        assert!(json.starts_with('{') && json.ends_with('}'), "{json}");
    }
    // A file that is not text, or is empty, is always an error.
    if !ok || text.trim().is_empty() {
        assert!(
            diags.iter().any(|d| d.is_error()),
            "no error for an unreadable or empty input"
        );
    }
}
