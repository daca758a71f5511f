//! "Did you mean": the one place that decides whether a word is a likely typo of another.

/// The candidate nearest to `word`, compared without regard to ASCII case, when it is close
/// enough to be a likely typo: at most a third of the candidate's length in edits (at least
/// one), where swapping two neighbouring letters counts as one edit (`fsp` → `fps`). A
/// candidate spelled exactly like `word` is never suggested; one differing only in case is.
pub fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    nearest(word, candidates.iter().copied())
}

/// [`suggest`] over any iterator of candidates.
pub fn nearest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let w = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (edit_distance(&w, &c.to_ascii_lowercase()), c))
        .filter(|&(d, c)| d <= (c.len() / 3).max(1))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance over bytes: insertions, deletions, substitutions and
/// swaps of two neighbouring bytes each count one.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let w = b.len() + 1;
    // Three rows: two back (for swaps), one back, current.
    let mut prev2 = vec![0usize; w];
    let mut prev: Vec<usize> = (0..w).collect();
    let mut cur = vec![0usize; w];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..w {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[w - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("fsp", "fps"), 1);
        assert_eq!(edit_distance("trianlges", "triangles"), 1);
        assert_eq!(edit_distance("ca", "abc"), 3);
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("fsp", &["fps", "loop"]), Some("fps"));
        assert_eq!(
            suggest("trianlges", &["nodes", "triangles"]),
            Some("triangles")
        );
        assert_eq!(suggest("Bip01", &["bip01"]), Some("bip01"));
        assert_eq!(suggest("bip01", &["bip01"]), None);
        assert_eq!(suggest("walk", &["idle", "run"]), None);
    }
}
