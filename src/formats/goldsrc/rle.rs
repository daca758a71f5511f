//! The run-length code of GoldSrc animation channels (`goldsrc.md` §4.11, §8.7).
//!
//! A channel is a list of 16-bit words: a span header (`valid` in the low byte, `total` in the
//! high byte, since the file stores the `valid` byte first) followed by `valid` values; spans
//! repeat until they cover every frame. Frame *f* of a span is value *f* when *f* < `valid`,
//! else the span's last value. These are pure functions; the tests below check the exact rules
//! of Valve's encoder, which must be copied for byte-identical output.

/// Longest span: `total` is one byte.
pub const MAX_SPAN: u16 = 255;

/// A span header word: `valid | total << 8`.
pub fn header(valid: u8, total: u8) -> u16 {
    u16::from(valid) | (u16::from(total) << 8)
}

/// Encodes one channel's quantised values (one per frame) as Valve's HL1 studiomdl does, or
/// `None` when the channel is omitted (offset 0): a single span holding the single value 0.
/// An empty input gives `None` too (Valve's tool refuses it earlier).
pub fn encode(values: &[i16]) -> Option<Vec<u16>> {
    encode_with(values, &mut Vec::new())
}

/// [`encode`] building the words in `scratch` (a buffer reused from call to call), then
/// returned in a vector of their exact length.
///
/// Valve's encoder looks at one value at a time; frames that only lengthen the current span
/// (a value equal to the previous one while the span is on its run) change nothing but the
/// span's `total`, so a stretch of them is taken at once, as far as the span's 255 frames allow.
/// The tests compare this with the value-by-value loop.
pub fn encode_with(values: &[i16], scratch: &mut Vec<u16>) -> Option<Vec<u16>> {
    let (&first, rest) = values.split_first()?;
    // A constant channel that fits one span: `valid` 1, `total` n (omitted when 0).
    if values.len() <= usize::from(MAX_SPAN) && rest.iter().all(|&v| v == first) {
        return (first != 0).then(|| vec![header(1, values.len() as u8), first as u16]);
    }
    // out[h] is the current span header; valid/total are kept apart until the span closes.
    let out = scratch;
    out.clear();
    out.extend_from_slice(&[0, first as u16]);
    let mut h = 0usize;
    let mut valid: u16 = 1;
    let mut total: u16 = 1;
    let close = |out: &mut Vec<u16>, h: usize, valid: u16, total: u16| {
        if let Some(w) = out.get_mut(h) {
            *w = (valid & 0xff) | ((total & 0xff) << 8);
        }
    };
    // value m is `v`, `prev` is value m - 1
    let mut prev = first;
    let mut m = 1usize;
    while let Some(&v) = values.get(m) {
        if total == MAX_SPAN {
            // Too many frames in one span: a new span starts with this value.
            close(out, h, valid, total);
            h = out.len();
            out.push(0);
            valid = 1;
            total = 1;
            out.push(v as u16);
            prev = v;
            m += 1;
            continue;
        }
        let on_run = total != valid;
        if v == prev && on_run {
            // The run goes on: only `total` grows, up to the span's limit.
            let room = usize::from(MAX_SPAN - total);
            let same = values
                .get(m..)
                .unwrap_or(&[])
                .iter()
                .take(room)
                .take_while(|&&x| x == v)
                .count();
            total += same as u16;
            m += same;
            continue;
        }
        let next_differs = values.get(m + 1).is_some_and(|&x| x != v);
        if v != prev || (!on_run && next_differs) {
            if on_run {
                close(out, h, valid, total);
                h = out.len();
                out.push(0);
                valid = 0;
                total = 0;
            }
            valid += 1;
            out.push(v as u16);
        }
        total += 1;
        prev = v;
        m += 1;
    }
    close(out, h, valid, total);
    if out.len() == 2 && first == 0 {
        return None;
    }
    Some(out.clone())
}

/// Decodes `frames` values from a channel (the run-time rule, `goldsrc.md` §9); `None` when the
/// words do not cover that many frames or a span is malformed.
pub fn decode(words: &[u16], frames: usize) -> Option<Vec<i16>> {
    let mut out = Vec::with_capacity(frames);
    let mut pos = 0usize;
    while out.len() < frames {
        let h = *words.get(pos)?;
        let valid = usize::from(h & 0xff);
        let total = usize::from(h >> 8);
        if valid == 0 || total < valid {
            return None;
        }
        let vals = words.get(pos + 1..pos + 1 + valid)?;
        for f in 0..total {
            if out.len() == frames {
                break;
            }
            let v = vals.get(f.min(valid - 1)).copied()?;
            out.push(v as i16);
        }
        pos += 1 + valid;
    }
    Some(out)
}

/// The number of words [`decode`] reads for `frames` frames (the channel's length in a file).
pub fn encoded_len(words: &[u16], frames: usize) -> Option<usize> {
    let mut covered = 0usize;
    let mut pos = 0usize;
    while covered < frames {
        let h = *words.get(pos)?;
        let valid = usize::from(h & 0xff);
        let total = usize::from(h >> 8);
        if valid == 0 || total < valid {
            return None;
        }
        covered += total;
        pos += 1 + valid;
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(valid: u8, total: u8) -> u16 {
        header(valid, total)
    }

    #[test]
    fn constant_zero_is_omitted() {
        assert_eq!(encode(&[0]), None);
        assert_eq!(encode(&[0; 255]), None);
        assert_eq!(encode(&[]), None);
    }

    #[test]
    fn constant_non_zero_is_stored() {
        assert_eq!(encode(&[5]), Some(vec![h(1, 1), 5]));
        assert_eq!(encode(&[5, 5, 5]), Some(vec![h(1, 3), 5]));
    }

    #[test]
    fn constant_zero_longer_than_a_span_is_stored() {
        // 256 frames need two spans: 255 + 1.
        assert_eq!(encode(&[0; 256]), Some(vec![h(1, 255), 0, h(1, 1), 0]));
    }

    #[test]
    fn span_limit_starts_a_new_span_with_total_255() {
        let v: Vec<i16> = (0..300).map(|i| i as i16).collect();
        let e = encode(&v).unwrap();
        assert_eq!(e[0], h(255, 255));
        assert_eq!(e[256], h(45, 45));
        assert_eq!(e.len(), 1 + 255 + 1 + 45);
        assert_eq!(decode(&e, 300).unwrap(), v);
    }

    #[test]
    fn a_run_after_changing_values() {
        // 1 2 3 3 3: values 1,2,3 are explicit, then the run of 3 is the tail.
        assert_eq!(encode(&[1, 2, 3, 3, 3]), Some(vec![h(3, 5), 1, 2, 3]));
    }

    #[test]
    fn not_on_a_run_stores_a_repeat_when_the_next_differs() {
        // 1 1 2: at m=1 the value repeats, the span is not on a run and v[2] differs from v[1],
        // so the second 1 is stored explicitly.
        assert_eq!(encode(&[1, 1, 2]), Some(vec![h(3, 3), 1, 1, 2]));
        // 1 1 1 2: m=1 repeats and the next is equal: a run starts (valid 1, total 2); m=2 is
        // equal to the previous: total 3; m=3 differs while on a run: a new span.
        assert_eq!(encode(&[1, 1, 1, 2]), Some(vec![h(1, 3), 1, h(1, 1), 2]));
    }

    #[test]
    fn the_last_frame_repeating_joins_the_run() {
        // m = n-1 has no next value, so an equal last value extends the span as a run.
        assert_eq!(encode(&[4, 7, 7]), Some(vec![h(2, 3), 4, 7]));
    }

    #[test]
    fn zero_then_other_values_is_stored() {
        assert_eq!(encode(&[0, 0, 1]), Some(vec![h(3, 3), 0, 0, 1]));
    }

    #[test]
    fn decode_round_trips() {
        let cases: Vec<Vec<i16>> = vec![
            vec![1, 2, 3, 3, 3, -4, -4, 9],
            vec![7; 600],
            (0..700).map(|i| ((i / 3) % 5) as i16).collect(),
            vec![-32768, 32767, 0, 0, 0, 0, 1],
        ];
        for c in cases {
            let e = encode(&c).unwrap();
            assert_eq!(decode(&e, c.len()).unwrap(), c);
            assert_eq!(encoded_len(&e, c.len()), Some(e.len()));
        }
    }

    /// The value-by-value loop [`encode_with`] was first written as (Valve's loop).
    fn encode_reference(values: &[i16], scratch: &mut Vec<u16>) -> Option<Vec<u16>> {
        let (&first, rest) = values.split_first()?;
        let n = values.len();
        // out[h] is the current span header; valid/total are kept apart until the span closes.
        let out = scratch;
        out.clear();
        out.extend_from_slice(&[0, first as u16]);
        let mut h = 0usize;
        let mut valid: u16 = 1;
        let mut total: u16 = 1;
        let close = |out: &mut Vec<u16>, h: usize, valid: u16, total: u16| {
            if let Some(w) = out.get_mut(h) {
                *w = (valid & 0xff) | ((total & 0xff) << 8);
            }
        };
        for (i, &v) in rest.iter().enumerate() {
            let m = i + 1;
            let prev = values.get(m - 1).copied().unwrap_or(v);
            if total == MAX_SPAN {
                // Too many frames in one span: a new span starts with this value.
                close(out, h, valid, total);
                h = out.len();
                out.push(0);
                valid = 1;
                total = 0;
                out.push(v as u16);
            } else {
                let on_run = total != valid;
                let next_differs = m + 1 < n && values.get(m + 1).is_some_and(|&x| x != v);
                if v != prev || (!on_run && next_differs) {
                    if on_run {
                        close(out, h, valid, total);
                        h = out.len();
                        out.push(0);
                        valid = 0;
                        total = 0;
                    }
                    valid += 1;
                    out.push(v as u16);
                }
            }
            total += 1;
        }
        close(out, h, valid, total);
        if out.len() == 2 && first == 0 {
            return None;
        }
        Some(out.clone())
    }

    #[test]
    fn encoder_equals_the_value_by_value_loop() {
        let mut state = 0x9E3779B97F4A7C15u64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let mut scratch = Vec::new();
        for round in 0..20000 {
            let n = match round % 4 {
                0 => next(8) as usize,
                1 => next(300) as usize,
                _ => next(1200) as usize,
            };
            let alphabet = 1 + next(4);
            let run = 1 + next(if round % 3 == 0 { 400 } else { 6 });
            let mut v: Vec<i16> = Vec::with_capacity(n);
            while v.len() < n {
                let x = next(alphabet) as i16 - 1;
                let len = 1 + next(run) as usize;
                v.extend(std::iter::repeat_n(x, len.min(n - v.len())));
            }
            let want = encode_reference(&v, &mut Vec::new());
            assert_eq!(encode_with(&v, &mut scratch), want, "{v:?}");
        }
    }

    #[test]
    fn decode_rejects_short_input() {
        assert_eq!(decode(&[h(2, 5), 1], 5), None);
        assert_eq!(decode(&[h(0, 5)], 5), None);
    }
}
