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

/// The blanks the lexer skips between tokens.
pub fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | 0x0B | 0x0C)
}

/// The token the lexer makes of `t`, a whole run of bytes between blanks, when every byte is
/// one of `0-9 + - . e E`: `Int` or `Float` when the whole run matches that pattern (the
/// longest match wins), otherwise `Word`. `None` when `t` has another byte. (With only these
/// bytes, no comment or quote can start, so this is exactly the lexer's choice; the parser's
/// fast path uses it to read number lines without the lexer.)
pub fn number_kind(t: &[u8]) -> Option<Token> {
    if !t
        .iter()
        .all(|&c| c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.' | b'e' | b'E'))
    {
        return None;
    }
    let mut i = usize::from(matches!(t.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let s = *i;
        while t.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - s
    };
    let int_digits = digits(&mut i);
    if i == t.len() {
        return Some(if int_digits > 0 {
            Token::Int
        } else {
            Token::Word
        });
    }
    let mut mantissa_digits = int_digits;
    if t.get(i) == Some(&b'.') {
        i += 1;
        mantissa_digits += digits(&mut i);
    }
    if mantissa_digits == 0 {
        return Some(Token::Word);
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Some(Token::Word);
        }
    }
    Some(if i == t.len() {
        Token::Float
    } else {
        Token::Word
    })
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
    fn number_kind_is_the_lexers_choice() {
        const ALPHABET: &[u8] = b"0123456789-+.eE";
        let mut state = 0x9E3779B97F4A7C15u64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let mut toks = Vec::new();
        for _ in 0..300_000 {
            let len = 1 + next(10) as usize;
            let t: String = (0..len)
                .map(|_| char::from(ALPHABET[next(ALPHABET.len() as u64) as usize]))
                .collect();
            assert!(lex_line(&t, 0, &mut toks).is_none());
            let want = (toks.len() == 1).then(|| toks[0].kind);
            let got = number_kind(t.as_bytes());
            // A run the lexer splits is never read by the fast path: it must say `Word` there.
            match want {
                Some(k) => assert_eq!(got, Some(k), "{t:?}"),
                None => assert_eq!(got, Some(Token::Word), "{t:?} splits into {toks:?}"),
            }
        }
        assert_eq!(number_kind(b"1a"), None);
        // `read_number` is `number_kind` then `parse_f32`.
        for _ in 0..300_000 {
            let len = 1 + next(12) as usize;
            let t: String = (0..len)
                .map(|_| char::from(ALPHABET[next(ALPHABET.len() as u64) as usize]))
                .collect();
            let want = match number_kind(t.as_bytes()) {
                Some(Token::Word) | None => None,
                Some(k) => Some((k, parse_f32(&t).map(f32::to_bits))),
            };
            let got = read_number(&t).map(|(k, v)| (k, v.map(f32::to_bits)));
            assert_eq!(got, want, "{t:?}");
        }
        for t in [
            "1.5",
            "-0",
            "123456789012345678901",
            ".",
            "-.",
            "1e5",
            "3.4028236e38",
            "99999999999999999999.9",
        ] {
            let want = match number_kind(t.as_bytes()) {
                Some(Token::Word) | None => None,
                Some(k) => Some((k, parse_f32(t).map(f32::to_bits))),
            };
            assert_eq!(
                read_number(t).map(|(k, v)| (k, v.map(f32::to_bits))),
                want,
                "{t:?}"
            );
        }
        assert_eq!(number_kind(b"#1"), None);
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

/// Powers of ten that are exact in `f64`.
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parses a number token (`Int` or `Float`) the way C's `strtof` does: correctly rounded.
///
/// Most SMD numbers are short decimals (`-12.345678`): when the digits fit in 53 bits and
/// there are at most 22 decimals, both the digits and the power of ten are exact `f64`s, so one
/// IEEE division gives the correctly rounded double (Clinger's fast path); rounding that to
/// `f32` is exact too unless the double lies exactly halfway between two `f32`s, which is
/// checked. Everything else goes to the standard library's parser. Returns `None` for a result
/// that is not finite.
pub fn parse_f32(s: &str) -> Option<f32> {
    let b = s.as_bytes();
    let (neg, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let mut m: u64 = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        m = m.wrapping_mul(10).wrapping_add(u64::from(b[i] - b'0'));
        i += 1;
    }
    let mut digits = i - int_start;
    let mut frac = 0usize;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            m = m.wrapping_mul(10).wrapping_add(u64::from(b[i] - b'0'));
            i += 1;
        }
        frac = i - frac_start;
        digits += frac;
    }
    // An exponent goes the slow way.
    if i == b.len() {
        if let Some(v) = decimal(neg, m, digits, frac) {
            return Some(v);
        }
    }
    s.parse::<f32>().ok().filter(|v| v.is_finite())
}

/// 10^0 … 10^10: every one an exact `f32` (5^10 < 2^24).
const POW10_F32: [f32; 11] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// The fast path of [`parse_f32`]: the `f32` nearest to `±m / 10^frac`, where `m` was read from
/// `digits` decimal digits (wrapping: checked here). `None` when the fast path cannot decide
/// (the caller then uses the standard parser).
#[inline]
pub(crate) fn decimal(neg: bool, m: u64, digits: usize, frac: usize) -> Option<f32> {
    // A whole number below 2^24 is an exact f32 (bone numbers, link counts, `0`, `1`); so
    // is 10^frac up to 10^10, and IEEE division rounds the exact quotient of two exact
    // values correctly: `m / 10^frac` is then the nearest f32 in one step (`-1.570796`).
    if digits <= 18 && m < 1 << 24 && frac < POW10_F32.len() {
        let v = if frac == 0 {
            m as f32
        } else {
            m as f32 / POW10_F32[frac]
        };
        return Some(if neg { -v } else { v });
    }
    // At most 18 digits cannot overflow the u64.
    if digits <= 18 && m < 1 << 53 && frac < POW10_F64.len() {
        // `m` and 10^frac (up to 10^22) are exact doubles, so their quotient is the double
        // nearest the exact value. Rounding that double to f32 gives the f32 nearest the exact
        // value unless the double lies exactly halfway between two f32s (its 29 bits below
        // f32 precision are 1000…0): the exact value may then lie on either side, and the
        // standard parser decides.
        let x = m as f64 / POW10_F64[frac];
        if x.to_bits() & ((1 << 29) - 1) == 1 << 28 {
            return None;
        }
        let v = x as f32;
        return Some(if neg { -v } else { v });
    }
    None
}

/// The ASCII digits of `b` from `i` on, appended to `m` (`m·10 + digit`, wrapping): where they
/// end, and `m`.
#[inline(always)]
pub(crate) fn take_digits(b: &[u8], mut i: usize, mut m: u64) -> (usize, u64) {
    while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        m = m.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        i += 1;
    }
    (i, m)
}

/// A whole token read as a number in one pass, exactly as [`number_kind`] then [`parse_f32`]
/// read it: `Some((kind, value))` when the token is `Int` or `Float` (the value `None` when
/// `parse_f32` rejects it), `None` when it is a `Word` or has a byte [`number_kind`] refuses.
pub fn read_number(t: &str) -> Option<(Token, Option<f32>)> {
    let b = t.as_bytes();
    let (neg, mut i) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let mut m: u64 = 0;
    let int_start = i;
    (i, m) = take_digits(b, i, m);
    let mut digits = i - int_start;
    let mut frac = 0usize;
    let mut point = false;
    if b.get(i) == Some(&b'.') {
        point = true;
        i += 1;
        let frac_start = i;
        (i, m) = take_digits(b, i, m);
        frac = i - frac_start;
        digits += frac;
    }
    if i == b.len() && digits > 0 {
        // `[-+]?[0-9]+` is an `Int`; with a point and a digit, a `Float`.
        let kind = if point { Token::Float } else { Token::Int };
        let v = decimal(neg, m, digits, frac).or_else(|| parse_f32(t));
        return Some((kind, v));
    }
    match number_kind(b)? {
        Token::Word => None,
        kind => Some((kind, parse_f32(t))),
    }
}

#[cfg(test)]
mod number_tests {
    use super::parse_f32;

    /// The xorshift step of the tests' number generator.
    fn next(state: &mut u64) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
    }

    /// `parse_f32` gives the standard parser's value, bit for bit.
    fn agrees(s: &str) {
        assert_eq!(
            parse_f32(s).map(f32::to_bits),
            s.parse::<f32>().ok().map(f32::to_bits),
            "{s}"
        );
    }

    #[test]
    fn fast_path_agrees_with_the_standard_parser() {
        let mut state = 0x2545F4914F6CDD1Du64;
        for _ in 0..200_000 {
            next(&mut state);
            let int = (state >> 40) % 100_000;
            let dec = (state >> 8) % 10_000_000;
            let places = (state % 8) as usize;
            let sign = if state & 0x10 != 0 { "-" } else { "" };
            let s = format!(
                "{sign}{int}.{:0width$}",
                dec % 10u64.pow(places as u32),
                width = places
            );
            agrees(&s);
        }
        // Whole numbers on both sides of 2^24 (above it not every one is an f32), signed,
        // with leading zeros, with and without a point.
        for _ in 0..200_000 {
            next(&mut state);
            let v = (state >> 20) % (1 << 26);
            let sign = ["", "-", "+"][(state % 3) as usize];
            let zeros = "0".repeat((state >> 4) as usize % 4);
            let point = if state & 0x100 != 0 { "." } else { "" };
            let s = format!("{sign}{zeros}{v}{point}");
            agrees(&s);
        }
        for s in [
            "0",
            "-0",
            "+0",
            "16777215",
            "16777216",
            "16777217",
            "-16777217",
            "000000000000000000016777217",
            "1.6777215",
            "0.0000000001",
            "-0.0000000000",
            "16777.215",
            "0.1",
            "0.3",
            "2.7182818",
        ] {
            agrees(s);
        }
        // Below 2^24 as digits with up to ten places (one f32 division), and with eleven
        // (the double path).
        for _ in 0..200_000 {
            next(&mut state);
            let m = (state >> 30) % (1 << 24);
            let places = (state % 12) as usize;
            let digits = format!("{m:0width$}", width = places + 1);
            let (int, frac) = digits.split_at(digits.len() - places);
            let sign = if state & 0x20 != 0 { "-" } else { "" };
            let s = format!("{sign}{int}.{frac}");
            agrees(&s);
        }
        // Long digit strings with the point anywhere, near f32 halfway points and beyond 2^53.
        for _ in 0..200_000 {
            next(&mut state);
            let len = 1 + (state % 19) as usize;
            let digits: String = (0..len)
                .map(|k| char::from(b'0' + ((state >> (k * 3 % 60)) % 10) as u8))
                .collect();
            let point = ((state >> 32) as usize) % (len + 1);
            let s = format!("{}.{}", &digits[..point], &digits[point..]);
            agrees(&s);
        }
        // Exactly halfway between two f32s (1 + 2^-24), and just beside it.
        for s in [
            "1.000000059604644775390625",
            "1.00000005960464477539",
            "1.0000000596046448",
            "16777217",
            "16777217.0",
        ] {
            agrees(s);
        }
        for s in [
            "0",
            "-0",
            "-0.000000",
            "1.",
            ".5",
            "+3",
            "16777217",
            "0.1",
            "1e-05",
            "3.4028235e38",
            "123456789.123456789",
        ] {
            agrees(s);
        }
        assert_eq!(parse_f32("1e999"), None);
        assert_eq!(parse_f32("-1e999"), None);
    }
}
