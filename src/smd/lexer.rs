//! Tokens of one SMD line.
//!
//! SMD is read a line at a time (line ends matter: a vertex is exactly one line), so the parser
//! splits the text into lines and lexes each line on its own; a problem never spills into the
//! next line, and resynchronising after an error is simply going on with the next line. Material
//! lines are not lexed at all: Valve's readers take the whole line as the name.

use logos::Logos;

/// One token of a line. Carriage returns and other blanks between tokens are skipped, so CRLF
/// files read like LF files.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\x0B\x0C]+")]
pub enum Token {
    /// A decimal integer, optionally signed: `12`, `-1`.
    #[regex(r"[-+]?[0-9]+", priority = 6)]
    Int,
    /// A decimal number with a fraction or exponent: `-0.000000`, `.5`, `2.`, `1e-05`.
    #[regex(
        r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?",
        priority = 5
    )]
    Float,
    /// A double-quoted name; it may contain spaces.
    #[regex(r#""[^"\n]*""#)]
    Quoted,
    /// A double quote with no closing quote on the line.
    #[regex(r#""[^"\n]*"#, allow_greedy = true)]
    UnclosedQuote,
    /// `// …`, `# …` or `; …` up to the end of the line.
    #[regex(r"(//|#|;)[^\n]*", priority = 10, allow_greedy = true)]
    Comment,
    /// Anything else up to the next blank: a keyword, or a malformed value such as `1,5`.
    #[regex(r#"[^ \t\r\n\x0B\x0C"]+"#, priority = 1)]
    Word,
}

/// A token and its byte range in the whole file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tok {
    pub kind: Token,
    pub start: u32,
    pub end: u32,
}

/// Lexes `line` (which starts at byte `base` of the file) into `out`, dropping a trailing
/// comment. Returns the comment token if there was one.
pub fn lex_line(line: &str, base: u32, out: &mut Vec<Tok>) -> Option<Tok> {
    out.clear();
    let mut lex = Token::lexer(line);
    while let Some(t) = lex.next() {
        let span = lex.span();
        // Every byte sequence matches `Word` or a blank, so a lexer error cannot happen; should
        // it ever, the text is kept as a word and reported by whoever expected something else.
        let kind = t.unwrap_or(Token::Word);
        let tok = Tok {
            kind,
            start: base + span.start as u32,
            end: base + span.end as u32,
        };
        if kind == Token::Comment {
            return Some(tok);
        }
        out.push(tok);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Token, &str)> {
        let mut v = Vec::new();
        let c = lex_line(s, 0, &mut v);
        let mut out: Vec<(Token, &str)> = v
            .iter()
            .map(|t| (t.kind, &s[t.start as usize..t.end as usize]))
            .collect();
        if let Some(c) = c {
            out.push((c.kind, &s[c.start as usize..c.end as usize]));
        }
        out
    }

    #[test]
    fn numbers() {
        use Token::*;
        assert_eq!(
            kinds("0 -1 +2 -0.000000 .5 2. 1e-05 -1.5E+3\r"),
            vec![
                (Int, "0"),
                (Int, "-1"),
                (Int, "+2"),
                (Float, "-0.000000"),
                (Float, ".5"),
                (Float, "2."),
                (Float, "1e-05"),
                (Float, "-1.5E+3"),
            ]
        );
    }

    #[test]
    fn malformed_numbers_are_single_words() {
        use Token::*;
        assert_eq!(
            kinds("1,5 1.2.3 --1 nan inf 1e 1#"),
            vec![
                (Word, "1,5"),
                (Word, "1.2.3"),
                (Word, "--1"),
                (Word, "nan"),
                (Word, "inf"),
                (Word, "1e"),
                (Word, "1#")
            ]
        );
    }

    #[test]
    fn quoted_names_and_comments() {
        use Token::*;
        assert_eq!(
            kinds("  0 \"Bip01 L Leg1\"\t-1 // note"),
            vec![
                (Int, "0"),
                (Quoted, "\"Bip01 L Leg1\""),
                (Int, "-1"),
                (Comment, "// note")
            ]
        );
        assert_eq!(
            kinds("time 1 # Key 1"),
            vec![(Word, "time"), (Int, "1"), (Comment, "# Key 1")]
        );
        assert_eq!(
            kinds("0 \"open -1"),
            vec![(Int, "0"), (UnclosedQuote, "\"open -1")]
        );
        assert_eq!(kinds(""), vec![]);
    }
}
