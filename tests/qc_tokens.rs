//! The QC tokenizer and preprocessor (`mdlc::qc::tokens::tokenize`): token texts, quoting,
//! `line_start` flags and span positions on small hand-written inputs (expected values counted
//! by hand from the fixtures), every diagnostic of the E0200/W0200 block, every QC of the
//! development corpus, and a mutation fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{corpus_dir, mutate, Rng};

use std::path::{Path, PathBuf};

use mdlc::diag::{render_plain, Code, Diagnostic, Severity, Sources};
use mdlc::load::fs::{MemFs, RealFs};
use mdlc::qc::tokens::tokenize;
use mdlc::qc::QcToken;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

struct Run {
    sources: Sources,
    tokens: Vec<QcToken>,
    diags: Vec<Diagnostic>,
}

impl Run {
    /// Each token as `file:line:col` + `^` when it starts a line + its text (in `"…"` when
    /// quoted).
    fn shown(&self) -> Vec<String> {
        self.tokens
            .iter()
            .map(|t| {
                let f = self.sources.get(t.span.file).unwrap();
                let (l, c) = f.line_col(t.span.span.start);
                let text = if t.quoted {
                    format!("\"{}\"", t.text)
                } else {
                    t.text.clone()
                };
                format!(
                    "{}:{l}:{c} {}{text}",
                    f.name,
                    if t.line_start { "^" } else { "" }
                )
            })
            .collect()
    }

    /// Each diagnostic as `code file:line:col message`.
    fn diags(&self) -> Vec<String> {
        self.diags
            .iter()
            .map(|d| match d.primary() {
                Some(at) => {
                    let f = self.sources.get(at.file).unwrap();
                    let (l, c) = f.line_col(at.span.start);
                    format!("{} {}:{l}:{c} {}", d.code, f.name, d.message)
                }
                None => format!("{} {}", d.code, d.message),
            })
            .collect()
    }

    fn rendered(&self) -> String {
        self.diags
            .iter()
            .map(|d| render_plain(&self.sources, d))
            .collect()
    }
}

fn run_fs(fs: &MemFs, main: &str) -> Run {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let tokens = tokenize(Path::new(main), fs, &mut sources, &mut diags);
    let run = Run {
        sources,
        tokens,
        diags,
    };
    check_spans(&run);
    run
}

fn run(files: &[(&str, &str)], main: &str) -> Run {
    let mut fs = MemFs::new();
    for (p, t) in files {
        fs.add(*p, *t);
    }
    run_fs(&fs, main)
}

/// One file `a.qc`, no diagnostics expected.
fn clean(text: &str) -> Vec<String> {
    let r = run(&[("a.qc", text)], "a.qc");
    assert!(r.diags.is_empty(), "{}", r.rendered());
    r.shown()
}

/// Every token and label span is inside its file and on character boundaries.
fn check_spans(r: &Run) {
    let spans = r
        .tokens
        .iter()
        .map(|t| t.span)
        .chain(r.diags.iter().flat_map(|d| d.labels.iter().map(|l| l.at)));
    for s in spans {
        let f = r.sources.get(s.file).expect("span in a known file");
        let (a, b) = (s.span.start as usize, s.span.end as usize);
        assert!(
            a <= b && b <= f.text().len(),
            "span {a}..{b} outside {}",
            f.name
        );
        assert!(
            f.text().is_char_boundary(a) && f.text().is_char_boundary(b),
            "span {a}..{b} not on char boundaries in {}",
            f.name
        );
    }
}

/// Loads a folder of `testdata/qc/tokens` into a MemFs, with paths relative to that folder.
fn fixture_fs(dir: &str) -> MemFs {
    fn walk(base: &Path, dir: &Path, fs: &mut MemFs) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(base, &p, fs);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_path_buf();
                fs.add(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let base = Path::new(ROOT).join("testdata/qc/tokens");
    let mut fs = MemFs::new();
    walk(&base, &base.join(dir), &mut fs);
    fs
}

// --- the lexer ------------------------------------------------------------------------------

#[test]
fn quotes_braces_and_backslashes() {
    let r = run_fs(&fixture_fs(""), "basic.qc");
    assert!(r.diags.is_empty(), "{}", r.rendered());
    assert_eq!(
        r.shown(),
        [
            "basic.qc:1:1 ^$modelname",
            "basic.qc:1:12 \"my model.mdl\"",
            "basic.qc:2:1 ^$body",
            "basic.qc:2:7 studio",
            "basic.qc:2:14 \"ref.smd\"",
            // a quoted token ends at its quote: the brace is a token of its own
            "basic.qc:2:23 {",
            // braces are not self-delimiting
            "basic.qc:3:1 ^{event",
            "basic.qc:3:8 5",
            "basic.qc:3:10 \"a b\"",
            "basic.qc:3:16 }",
            "basic.qc:4:1 ^$cd",
            // no escapes: a backslash before the closing quote is kept
            "basic.qc:4:5 \".\\\"",
        ]
    );
    // The span of a quoted token covers its quotes.
    let t = &r.tokens[1];
    assert_eq!(
        &r.sources.text(t.span.file)[t.span.span.range()],
        "\"my model.mdl\""
    );
}

#[test]
fn comments_of_every_style() {
    let r = run_fs(&fixture_fs(""), "comments.qc");
    assert_eq!(
        r.diags(),
        ["W0204 comments.qc:5:7 `//` inside a token does not start a comment"]
    );
    assert_eq!(
        r.shown(),
        [
            // `$fake` is inside the header block comment
            "comments.qc:2:13 ^$a",
            // `// c` directly after the argument
            "comments.qc:2:16 1",
            // `# x` is a comment line
            "comments.qc:4:1 ^$b",
            // `;` ends a token and starts a comment
            "comments.qc:4:4 2",
            "comments.qc:5:1 ^$c",
            // `//` inside a token is part of it
            "comments.qc:5:4 foo//bar",
            "comments.qc:5:13 3",
            // a block comment spanning a line break counts as a line break
            "comments.qc:6:9 ^4",
        ]
    );
}

#[test]
fn comment_marker_glued_to_an_argument_is_part_of_it() {
    // Valve's rule: `//` starts a comment only where a token would start.
    let r = run(&[("a.qc", "$scale 1.0// note\n$x a/*b*/\n")], "a.qc");
    assert_eq!(
        r.diags(),
        [
            "W0204 a.qc:1:11 `//` inside a token does not start a comment",
            "W0204 a.qc:2:5 `/*` inside a token does not start a comment",
        ]
    );
    assert_eq!(
        r.shown(),
        [
            "a.qc:1:1 ^$scale",
            "a.qc:1:8 1.0//",
            "a.qc:1:14 note",
            "a.qc:2:1 ^$x",
            "a.qc:2:4 a/*b*/",
        ]
    );
}

#[test]
fn semicolon_and_quote_end_an_unquoted_token() {
    assert_eq!(
        clean("a;b\nc\"d\"e \"f\"\"g\"\n"),
        [
            "a.qc:1:1 ^a",
            "a.qc:2:1 ^c",
            "a.qc:2:2 \"d\"",
            "a.qc:2:5 e",
            "a.qc:2:7 \"f\"",
            "a.qc:2:10 \"g\"",
        ]
    );
}

#[test]
fn a_quoted_token_may_span_lines() {
    let r = run(&[("a.qc", "$a \"one\ntwo\" three\nfour")], "a.qc");
    // Valid, but no real QC does it: a warning points at where the string starts.
    assert_eq!(r.diags(), ["W0203 a.qc:1:4 quoted string spans 2 lines"]);
    assert_eq!(
        r.shown(),
        [
            "a.qc:1:1 ^$a",
            "a.qc:1:4 \"one\ntwo\"",
            // the line break inside the quotes does not start a line for `three`
            "a.qc:2:6 three",
            "a.qc:3:1 ^four",
        ]
    );
}

#[test]
fn a_missing_quote_is_found_where_it_is_missing() {
    // The quote after `crate.mdl` is missing: the string pairs with the quote before
    // `crate.smd`, and the last quote of the file is left unterminated.
    let r = run(
        &[(
            "a.qc",
            "$modelname \"props/crate.mdl\n$body body \"crate.smd\"\n",
        )],
        "a.qc",
    );
    assert_eq!(
        r.diags(),
        [
            "W0203 a.qc:1:12 quoted string spans 2 lines",
            "E0200 a.qc:2:22 unterminated quoted string",
        ]
    );
}

#[test]
fn crlf_files() {
    let r = run(
        &[("a.qc", "$a \"x y\"\r\n\r\n$b 1 // c\r\n\t$c \"p\r\nq\"\r\n")],
        "a.qc",
    );
    assert_eq!(r.diags(), ["W0203 a.qc:4:5 quoted string spans 2 lines"]);
    assert_eq!(
        r.shown(),
        [
            "a.qc:1:1 ^$a",
            "a.qc:1:4 \"x y\"",
            "a.qc:3:1 ^$b",
            "a.qc:3:4 1",
            "a.qc:4:2 ^$c",
            "a.qc:4:5 \"p\r\nq\"",
        ]
    );
}

#[test]
fn non_ascii_is_part_of_a_token_and_a_bom_is_skipped() {
    // Valve's reader would split `modèle` at the two bytes of `è`; mdlc reads UTF-8 text.
    assert_eq!(
        clean("\u{feff}$body é modèle.smd\n"),
        ["a.qc:1:2 ^$body", "a.qc:1:8 é", "a.qc:1:10 modèle.smd"]
    );
}

#[test]
fn empty_and_comment_only_files_give_no_tokens() {
    assert!(clean("").is_empty());
    assert!(clean("// nothing\n/* at\nall */ ; here\n").is_empty());
}

#[test]
fn unterminated_quote_ends_at_the_line_end() {
    let r = run(&[("a.qc", "$a \"open\r\n$b 1\n")], "a.qc");
    assert_eq!(r.diags(), ["E0200 a.qc:1:4 unterminated quoted string"]);
    assert_eq!(
        r.shown(),
        [
            "a.qc:1:1 ^$a",
            "a.qc:1:4 \"open\"",
            "a.qc:2:1 ^$b",
            "a.qc:2:4 1"
        ]
    );
    // The label is on the opening quote only.
    assert_eq!(r.diags[0].primary().unwrap().span.range(), 3..4);
}

#[test]
fn unterminated_block_comment() {
    let r = run(&[("a.qc", "$a 1\n/* never\n$b 2\n")], "a.qc");
    assert_eq!(r.diags(), ["E0201 a.qc:2:1 unterminated block comment"]);
    assert_eq!(r.shown(), ["a.qc:1:1 ^$a", "a.qc:1:4 1"]);
}

// --- $include -------------------------------------------------------------------------------

#[test]
fn nested_includes_relative_to_the_main_qc() {
    let r = run_fs(&fixture_fs("include"), "include/main.qc");
    assert_eq!(
        r.diags(),
        ["W0200 include/main.qc:3:20 file found in another case: `parts/b.qci`"]
    );
    assert_eq!(
        r.shown(),
        [
            "include/main.qc:1:1 ^$modelname",
            "include/main.qc:1:12 m",
            "include/parts/a.qci:1:1 ^$cd",
            "include/parts/a.qci:1:5 a",
            // `parts/deep.qci` from `parts/a.qci` is relative to the main QC's folder
            "include/parts/deep.qci:1:1 ^$deep",
            "include/parts/deep.qci:1:7 1",
            "include/main.qc:3:1 ^$body",
            "include/main.qc:3:7 x",
            "include/main.qc:3:9 {",
            // `$include` inside a block, with a backslash and another case
            "include/parts/b.qci:1:1 ^inner",
            // the token after an include starts a line
            "include/main.qc:3:34 ^}",
            "include/main.qc:4:1 ^$end",
        ]
    );
}

#[test]
fn missing_include_suggests_the_nearest_file() {
    let r = run(
        &[
            ("q/main.qc", "$include \"parts/comon.qci\"\n$after 1\n"),
            ("q/parts/common.qci", "$x\n"),
        ],
        "q/main.qc",
    );
    assert_eq!(
        r.diags(),
        ["E0203 q/main.qc:1:10 included file `parts/comon.qci` not found"]
    );
    assert!(
        r.diags[0]
            .notes
            .contains(&"help: did you mean `parts/common.qci`?".to_string()),
        "{:?}",
        r.diags[0].notes
    );
    assert_eq!(r.shown(), ["q/main.qc:2:1 ^$after", "q/main.qc:2:8 1"]);
}

#[test]
fn missing_include_far_from_any_file_has_no_suggestion() {
    let r = run(
        &[
            ("main.qc", "$include \"zzzzzzzzz.qci\"\n"),
            ("other.qci", ""),
        ],
        "main.qc",
    );
    assert_eq!(r.diags.len(), 1);
    assert_eq!(r.diags[0].code, Code::QcIncludeNotFound);
    assert!(!r.diags[0].notes.iter().any(|n| n.contains("did you mean")));
}

#[test]
fn include_without_a_file_name_on_its_line() {
    let r = run(&[("a.qc", "$include\n$b 1\n")], "a.qc");
    assert_eq!(r.diags(), ["E0202 a.qc:1:1 `$include` without a file name"]);
    assert_eq!(r.shown(), ["a.qc:2:1 ^$b", "a.qc:2:4 1"]);
}

#[test]
fn include_cycle_is_an_error_not_a_stack_overflow() {
    let r = run(
        &[
            ("m/main.qc", "$include \"a.qci\"\n$end\n"),
            ("m/a.qci", "$a\n$include \"b.qci\"\n"),
            ("m/b.qci", "$b\n$include \"A.QCI\"\n$b2\n"),
        ],
        "m/main.qc",
    );
    assert_eq!(
        r.diags(),
        [
            // `A.QCI` is found in another case first, then recognised as `a.qci`
            "W0200 m/b.qci:2:10 file found in another case: `a.qci`",
            "E0204 m/b.qci:2:1 `m/a.qci` includes itself",
        ]
    );
    assert!(r.diags[1]
        .notes
        .contains(&"include chain: `m/main.qc` → `m/a.qci` → `m/b.qci` → `m/a.qci`".to_string()));
    assert_eq!(
        r.shown(),
        [
            "m/a.qci:1:1 ^$a",
            "m/b.qci:1:1 ^$b",
            "m/b.qci:3:1 ^$b2",
            "m/main.qc:2:1 ^$end"
        ]
    );
}

#[test]
fn a_file_including_itself_directly() {
    let r = run(&[("a.qc", "x $include a.qc y\n")], "a.qc");
    assert_eq!(r.diags(), ["E0204 a.qc:1:3 `a.qc` includes itself"]);
    assert_eq!(r.shown(), ["a.qc:1:1 ^x", "a.qc:1:17 y"]);
}

#[test]
fn include_depth_is_limited_to_16_files() {
    let mut files: Vec<(String, String)> = Vec::new();
    for i in 0..20 {
        files.push((
            format!("f{i}.qci"),
            format!("$in{i}\n$include f{}.qci\n", i + 1),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let r = run(&refs, "f0.qci");
    // f0 is the main file; f15 is the 16th open file, so its `$include` is refused.
    assert_eq!(
        r.diags(),
        ["E0205 f15.qci:2:1 includes nested more than 16 deep"]
    );
    assert_eq!(r.tokens.len(), 16);
    assert_eq!(r.tokens[15].text, "$in15");
}

#[test]
fn a_file_included_twice_is_read_once() {
    let r = run(
        &[
            ("main.qc", "$include p.qci\n$include p.qci\n"),
            ("p.qci", "$p\n"),
        ],
        "main.qc",
    );
    assert!(r.diags.is_empty());
    assert_eq!(r.shown(), ["p.qci:1:1 ^$p", "p.qci:1:1 ^$p"]);
    assert_eq!(r.sources.len(), 2);
}

#[test]
fn unreadable_main_file() {
    let r = run(&[], "nope.qc");
    assert!(r.tokens.is_empty());
    assert_eq!(r.diags.len(), 1);
    assert_eq!(r.diags[0].code, Code::FileUnreadable);
    assert_eq!(r.diags[0].file_name.as_deref(), Some("nope.qc"));
}

#[test]
fn included_file_that_is_not_text() {
    let mut fs = MemFs::new();
    fs.add("a.qc", "$include b.qci\n$c\n")
        .add("b.qci", b"$x\0\n".to_vec());
    let r = run_fs(&fs, "a.qc");
    assert_eq!(r.diags.len(), 1);
    assert_eq!(r.diags[0].code, Code::NotText);
    assert_eq!(r.shown(), ["a.qc:2:1 ^$c"]);
}

// --- $definemacro ---------------------------------------------------------------------------

#[test]
fn macro_definition_and_invocation() {
    let r = run_fs(&fixture_fs("macros"), "macros/weapons.qc");
    let f = "macros/weapons.qc";
    // the word after the arguments continues the expansion's last command, with a warning
    assert_eq!(
        r.diags(),
        [format!(
            "W0206 {f}:7:33 `extra` follows the 3 arguments of macro `SDKWeaponIdle` on its line: it continues the macro's last command"
        )]
    );
    let body = |name: &str, file: &str, frame: &str| {
        vec![
            format!("{f}:3:1 ^$sequence"),
            format!("{f}:3:11 {name}"),
            format!("{f}:3:18 {file}"),
            format!("{f}:3:29 frame"),
            format!("{f}:3:35 {frame}"),
            format!("{f}:3:43 {frame}"),
            format!("{f}:4:2 ^fps"),
            format!("{f}:4:6 30"),
            format!("{f}:4:9 loop"),
            format!("{f}:4:14 activity"),
            // `$name$` inside a word
            format!("{f}:4:23 ACT_IDLE_{name}"),
            format!("{f}:4:39 1"),
        ]
    };
    let mut want = body("idle", "\"anims/idle\"", "5");
    // the macro name is matched without regard to case
    want.extend(body("fire", "fire_anim", "7"));
    // a token after the arguments, on the invocation's line, continues the last command
    // of the expansion (issue 16: real QCs write `$GenericShoot … match "idle"`)
    want.push(format!("{f}:7:33 extra"));
    assert_eq!(r.shown(), want);
}

#[test]
fn macro_with_too_few_arguments() {
    let text = "$definemacro m name frame filename \\\\\n$sequence $name$ $filename$ \\\\\nframe $frame$\n\n$M idle\n5 x\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(
        r.diags(),
        ["E0207 a.qc:5:1 macro `m` takes 3 arguments, but 1 was given"]
    );
    let label = &r.diags[0].labels[0].message;
    assert_eq!(label, "missing `frame` and `filename`");
    // Not expanded; the next line is read as usual.
    assert_eq!(r.shown(), ["a.qc:6:1 ^5", "a.qc:6:3 x"]);
}

#[test]
fn parameters_are_not_replaced_inside_quotes_but_variables_are() {
    let text = "$definevariable dir anims\n$definemacro m p \\\\\n$x \"$p$\" \"$dir$/$p$\" a$p$b$p$\n$m Q\n";
    let r = run(&[("a.qc", text)], "a.qc");
    // Each quoted token holding the parameter gets W0205 (where the macro is defined).
    assert_eq!(
        r.diags(),
        [
            "W0205 a.qc:3:4 macro parameter `$p$` inside quotes is not replaced",
            "W0205 a.qc:3:10 macro parameter `$p$` inside quotes is not replaced",
        ]
    );
    assert_eq!(
        r.shown(),
        [
            "a.qc:3:1 ^$x",
            "a.qc:3:4 \"$p$\"",
            "a.qc:3:10 \"anims/$p$\"",
            "a.qc:3:22 aQbQ",
        ]
    );
}

#[test]
fn unknown_macro_parameter() {
    let text = "$definemacro m name \\\\\n$sequence $nmae$ x\n$m a\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(
        r.diags(),
        ["E0208 a.qc:2:11 unknown macro parameter `$nmae$`"]
    );
    assert!(r.diags[0]
        .notes
        .contains(&"help: did you mean `$name$`?".to_string()));
    // Still defined and expanded; the unknown word is left as written.
    assert_eq!(
        r.shown(),
        ["a.qc:2:1 ^$sequence", "a.qc:2:11 $nmae$", "a.qc:2:18 x"]
    );
}

#[test]
fn macro_without_backslashes_has_an_empty_body() {
    let r = run(
        &[("a.qc", "$definemacro empty\n$a\n$empty x\n$b\n")],
        "a.qc",
    );
    assert_eq!(
        r.diags(),
        ["W0201 a.qc:1:14 macro `empty` has an empty body"]
    );
    // `x` follows an (empty) expansion: it starts a line.
    assert_eq!(r.shown(), ["a.qc:2:1 ^$a", "a.qc:3:8 ^x", "a.qc:4:1 ^$b"]);
}

#[test]
fn recursive_macro() {
    let text = "$definemacro r \\\\\n$x $r\n\n$r\n$after\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(r.diags(), ["E0209 a.qc:2:4 macro `r` invokes itself"]);
    assert_eq!(r.shown(), ["a.qc:2:1 ^$x", "a.qc:5:1 ^$after"]);
}

#[test]
fn macro_redefined_keeps_the_first() {
    let text = "$definemacro m \\\\\nfirst\n$definemacro m \\\\\nsecond\n$m\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(r.diags(), ["W0202 a.qc:3:14 macro `m` is defined again"]);
    assert_eq!(r.shown(), ["a.qc:2:1 ^first"]);
}

#[test]
fn definemacro_without_a_name() {
    let r = run(&[("a.qc", "$definemacro \\\\\nbody\n$after\n")], "a.qc");
    assert_eq!(
        r.diags(),
        ["E0206 a.qc:1:1 `$definemacro` without a macro name"]
    );
    // the body lines are consumed with the definition
    assert_eq!(r.shown(), ["a.qc:3:1 ^$after"]);
}

#[test]
fn include_inside_a_macro_body() {
    let text = "$definemacro inc f \\\\\n{ $include $f$ }\n\n$inc \"parts/b.qci\"\n";
    let r = run(&[("q/a.qc", text), ("q/parts/b.qci", "$b 1\n")], "q/a.qc");
    assert!(r.diags.is_empty(), "{}", r.rendered());
    assert_eq!(
        r.shown(),
        [
            "q/a.qc:2:1 ^{",
            "q/parts/b.qci:1:1 ^$b",
            "q/parts/b.qci:1:4 1",
            "q/a.qc:2:16 ^}",
        ]
    );
}

#[test]
fn definemacro_inside_a_macro_body_is_an_error() {
    let text = "$definemacro outer \\\\\n$definemacro inner x\n$outer\n$z\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(
        r.diags(),
        ["E0210 a.qc:2:1 `$definemacro` inside a macro body"]
    );
    assert_eq!(r.shown(), ["a.qc:4:1 ^$z"]);
}

// --- $definevariable ------------------------------------------------------------------------

#[test]
fn variables_are_replaced_in_unquoted_and_quoted_tokens() {
    let text = "$definevariable base \"fighter1\"\n\
                $sequence attack $base$_Attack\n\
                $sequence run \"$BASE$_run.smd\"\n\
                $x $$base$ $other$\n\
                $definevariable base other\n\
                $y $base$\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(
        r.diags(),
        ["W0202 a.qc:5:17 variable `base` is defined again"]
    );
    assert_eq!(
        r.shown(),
        [
            "a.qc:2:1 ^$sequence",
            "a.qc:2:11 attack",
            "a.qc:2:18 fighter1_Attack",
            "a.qc:3:1 ^$sequence",
            "a.qc:3:11 run",
            "a.qc:3:15 \"fighter1_run.smd\"",
            "a.qc:4:1 ^$x",
            "a.qc:4:4 $fighter1",
            // not a variable: plain text outside macro bodies
            "a.qc:4:12 $other$",
            "a.qc:6:1 ^$y",
            "a.qc:6:4 fighter1",
        ]
    );
}

#[test]
fn definevariable_without_a_value() {
    let r = run(
        &[("a.qc", "$definevariable v\n$definevariable\n$a\n")],
        "a.qc",
    );
    assert_eq!(
        r.diags(),
        [
            "E0206 a.qc:1:17 variable `v` has no value",
            "E0206 a.qc:2:1 `$definevariable` without a name",
        ]
    );
    assert_eq!(r.shown(), ["a.qc:3:1 ^$a"]);
}

// --- the development corpus -----------------------------------------------------------------

fn qc_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            qc_files(&p, out);
        } else if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("qc")) {
            out.push(p);
        }
    }
}

fn tokenize_real(path: &Path) -> (Sources, Vec<QcToken>, Vec<Diagnostic>) {
    let mut sources = Sources::new();
    let mut diags = Vec::new();
    let tokens = tokenize(path, &RealFs, &mut sources, &mut diags);
    (sources, tokens, diags)
}

#[test]
fn every_corpus_qc_tokenizes_without_error() {
    let Some(dir) = corpus_dir() else { return };
    let mut files = Vec::new();
    qc_files(&dir, &mut files);
    // QUIRKS/SOURCES: 42 HL1 QCs, gs-man, gs-chrome-sphere and 13 Source QCs (57 `.qc`).
    assert!(files.len() >= 57, "only {} QC files", files.len());
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut tokens_total = 0;
    for f in &files {
        let (sources, tokens, diags) = tokenize_real(f);
        assert!(!tokens.is_empty(), "{}: no tokens", f.display());
        tokens_total += tokens.len();
        // The directives never reach the command parser.
        assert!(
            !tokens
                .iter()
                .any(|t| t.is("$include") || t.is("$definemacro") || t.is("$definevariable")),
            "{}",
            f.display()
        );
        for d in &diags {
            let text = render_plain(&sources, d);
            match d.severity {
                Severity::Error => errors.push(text),
                _ => warnings.push(text),
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    eprintln!(
        "{} QC files, {tokens_total} tokens, {} warnings:\n{}",
        files.len(),
        warnings.len(),
        warnings.join("")
    );
}

#[test]
fn gman_tokens_follow_its_includes() {
    let Some(dir) = corpus_dir() else { return };
    let qc = dir.join("goldsrc-hl1/modelsrc/models/gman/gman_ld.qc");
    let (sources, tokens, diags) = tokenize_real(&qc);
    assert!(diags.is_empty());
    let texts: Vec<&str> = tokens.iter().take(8).map(|t| t.text.as_str()).collect();
    // gman_ld.qc: the header is a block comment; `$modelname "gman_ld.mdl"`, `$cd "./"`, then
    // `$include "includes/common/ld/common.qci"`, whose first line includes
    // `../shared/includes/common/gman/ld/texturepath.qci` (relative to gman/, the main QC's
    // folder), which holds `$cdtexture "../../textures/gman"`; then `$scale 1.0`.
    assert_eq!(
        texts,
        [
            "$modelname",
            "gman_ld.mdl",
            "$cd",
            "./",
            "$cdtexture",
            "../../textures/gman",
            "$scale",
            "1.0"
        ]
    );
    assert!(tokens[0].line_start && tokens[1].quoted && tokens[4].line_start);
    assert!(sources
        .name(tokens[4].span.file)
        .ends_with("models/shared/includes/common/gman/ld/texturepath.qci"));
    // 18 `$sequence` lines in gman_ld.qc ("// 18 animation sequence(s)").
    assert_eq!(tokens.iter().filter(|t| t.is("$sequence")).count(), 18);
    // The walk sequence's events: `{ event 1004 3 "common/npc_step1.wav" }` twice.
    assert_eq!(tokens.iter().filter(|t| t.is("event")).count(), 2);
}

#[test]
fn male06_reads_includes_inside_blocks_and_in_other_case() {
    let Some(dir) = corpus_dir() else { return };
    let qc =
        dir.join("sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk/male_sdk/male_06_sdk.qc");
    let (sources, tokens, diags) = tokenize_real(&qc);
    // `male_shared_XSI_sdk.qci` and `WeaponAnims_shared_sdk.qci` exist only in lower case.
    let warned: Vec<String> = diags
        .iter()
        .map(|d| {
            assert_eq!(d.code, Code::QcIncludeCase, "{}", render_plain(&sources, d));
            sources.text(d.primary().unwrap().file)[d.primary().unwrap().span.range()].to_string()
        })
        .collect();
    assert_eq!(
        warned,
        [
            "\"../male_animations_sdk/male_shared_XSI_sdk.qci\"",
            "\"../male_animations_sdk/WeaponAnims_shared_sdk.qci\""
        ]
    );
    // `$sequence` outside comments: male_shared_xsi_sdk.qci 16, body_poses_lean.qci 6 (19 more
    // are commented out with `//`), weaponanims_shared_sdk.qci 36, ragdoll.qci 1.
    assert_eq!(tokens.iter().filter(|t| t.is("$sequence")).count(), 59);
    // lowesthumanskeleton.qci is included 4 times (in the four `$lod` blocks), each time read.
    let lods = tokens
        .iter()
        .filter(|t| {
            t.line_start
                && sources
                    .name(t.span.file)
                    .ends_with("lowesthumanskeleton.qci")
        })
        .count();
    let per_file = {
        let f =
            std::fs::read_to_string(dir.join(
                "sdk-male06/sourcesdk_content/hl2/modelsrc/humans_sdk/lowesthumanskeleton.qci",
            ))
            .unwrap();
        let (_, t, _) = {
            let mut fs = MemFs::new();
            fs.add("x.qci", f);
            let mut s = Sources::new();
            let mut d = Vec::new();
            let t = tokenize(Path::new("x.qci"), &fs, &mut s, &mut d);
            (s, t, d)
        };
        t.iter().filter(|t| t.line_start).count()
    };
    assert!(per_file > 0);
    assert_eq!(lods, 4 * per_file);
}

// --- fuzzing --------------------------------------------------------------------------------

const DICTIONARY: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b" ",
    b"\"",
    b"/*",
    b"*/",
    b"//",
    b"#",
    b";",
    b"{",
    b"}",
    b"\\\\",
    b"\\\\\n",
    b"$",
    b"$include ",
    b"$include \"b.qci\"\n",
    b"$include a.qc\n",
    b"$definemacro ",
    b"$definemacro m p \\\\\n",
    b"$definevariable v x\n",
    b"$m ",
    b"$p$",
    b"$v$",
    b"$$",
    b"\xc3\xa9",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\0",
];

#[test]
fn mutated_fixtures_do_not_panic() {
    let seeds: Vec<Vec<u8>> = vec![
        std::fs::read(Path::new(ROOT).join("testdata/qc/tokens/basic.qc")).unwrap(),
        std::fs::read(Path::new(ROOT).join("testdata/qc/tokens/comments.qc")).unwrap(),
        std::fs::read(Path::new(ROOT).join("testdata/qc/tokens/macros/weapons.qc")).unwrap(),
        std::fs::read(Path::new(ROOT).join("testdata/qc/tokens/include/main.qc")).unwrap(),
        b"$definevariable v \"q\"\n$definemacro m p \\\\\n$a $p$ $v$ \"$v$\" \\\\\n$include b.qci\n\n$m 1\n".to_vec(),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut runs = 0;
    for seed in &seeds {
        for _ in 0..600 {
            let mut main = seed.clone();
            mutate(&mut rng, &mut main, DICTIONARY, false);
            let mut inc = b"$b 1\n$include a.qc\n$m x\n".to_vec();
            mutate(&mut rng, &mut inc, DICTIONARY, false);
            let mut fs = MemFs::new();
            fs.add("a.qc", main).add("b.qci", inc);
            // run_fs checks every span.
            let r = run_fs(&fs, "a.qc");
            for d in &r.diags {
                let _ = render_plain(&r.sources, d);
            }
            runs += 1;
        }
    }
    assert!(runs >= 3000);
}

#[test]
fn exponential_macro_expansion_is_stopped() {
    // m0 expands to 10 invocations of m1, … : 10^8 tokens if nothing stopped it.
    let mut text = String::new();
    for i in 0..8 {
        text.push_str(&format!("$definemacro m{i} \\\\\n"));
        text.push_str(&format!(
            "$m{} $m{} $m{} $m{} $m{} \\\\\n",
            i + 1,
            i + 1,
            i + 1,
            i + 1,
            i + 1
        ));
        text.push_str(&format!(
            "$m{} $m{} $m{} $m{} $m{}\n",
            i + 1,
            i + 1,
            i + 1,
            i + 1,
            i + 1
        ));
    }
    text.push_str("$definemacro m8 \\\\\nx\n$m0\n$m0\n$after\n");
    let r = run(&[("a.qc", &text)], "a.qc");
    assert_eq!(r.diags.len(), 1, "{}", r.rendered());
    assert_eq!(r.diags[0].code, Code::QcNestingTooDeep);
    assert!(r.tokens.len() <= mdlc::qc::tokens::MAX_EXPANDED);
    assert_eq!(r.tokens.last().unwrap().text, "$after");
}

#[test]
fn macro_parameter_inside_quotes_is_kept_and_warned_about() {
    // qc-source.md §1.5: parameters are not replaced inside quoted tokens.
    let text =
        "$definemacro seq name file \\\\\n$sequence $name$ \"$file$\"\n$seq idle idle_anim\n";
    let r = run(&[("a.qc", text)], "a.qc");
    assert_eq!(
        r.diags(),
        ["W0205 a.qc:2:18 macro parameter `$file$` inside quotes is not replaced"]
    );
    assert_eq!(
        r.shown(),
        [
            "a.qc:2:1 ^$sequence",
            "a.qc:2:11 idle",
            "a.qc:2:18 \"$file$\""
        ]
    );
}
