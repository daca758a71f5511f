//! Sequence groups (`goldsrc.md` §8.11, §4.10) and the transition graph (§8.10, §4.17).

use crate::formats::goldsrc::model::GsSeqGroup;

/// `models\<base>NN.mdl` for group `group` (1-based) of a model named `model_name`: the name
/// loses its extension (the last `.xxx` after the last `/`), `NN.mdl` is appended, then the
/// folders and everything from the first `.` of the file name are dropped (`ExtractFileBase`).
pub fn group_file_name(model_name: &str, group: usize) -> String {
    let mut name = model_name.to_string();
    // StripExtension
    let bytes = name.as_bytes();
    let mut i = bytes.len().saturating_sub(1);
    let mut cut = None;
    while i > 0 {
        if bytes.get(i) == Some(&b'.') {
            cut = Some(i);
            break;
        }
        i -= 1;
        if bytes.get(i) == Some(&b'/') {
            break;
        }
    }
    if let Some(c) = cut {
        name.truncate(c);
    }
    let full = format!("{name}{group:02}.mdl");
    // ExtractFileBase
    let start = full.rfind(['/', '\\']).map_or(0, |p| p + 1);
    let file = full.get(start..).unwrap_or("");
    let base = file.split('.').next().unwrap_or("");
    format!("models\\{base}.mdl")
}

/// The group records: `default` first, then the explicit labels or empty labels for automatic
/// groups, each named after its file.
pub fn group_records(labels: &[String], model_name: &str) -> Vec<GsSeqGroup> {
    let mut out = vec![GsSeqGroup {
        label: "default".to_string(),
        name: String::new(),
    }];
    for (i, l) in labels.iter().enumerate() {
        out.push(GsSeqGroup {
            label: l.clone(),
            name: group_file_name(model_name, i + 1),
        });
    }
    out
}

/// Automatic grouping: sequences with an activity stay in group 0; the others fill groups 1,
/// 2, … in order while the running size stays within `limit` bytes (a sequence larger than the
/// limit gets a group of its own). `sizes[i]` is sequence i's animation size in bytes. Returns
/// each sequence's group and the number of groups (at least 2).
pub fn auto_groups(activities: &[i32], sizes: &[i64], limit: i64) -> (Vec<i32>, usize) {
    let mut groups = 2usize;
    let mut current: i64 = 0;
    let mut out = Vec::with_capacity(activities.len());
    for (i, &act) in activities.iter().enumerate() {
        if act != 0 {
            out.push(0);
            continue;
        }
        let accum = sizes.get(i).copied().unwrap_or(0);
        if current != 0 && current + accum > limit {
            groups += 1;
            current = accum;
        } else {
            current += accum;
        }
        out.push(groups as i32 - 1);
    }
    (out, groups)
}

/// `MakeTransitions`: `nodes` are (entry, exit, reversible) per sequence, each in 0..=100 with
/// entry and exit both non-zero when they differ. Returns the N×N matrix, N = the largest entry
/// node.
pub fn transitions(nodes: &[(i32, i32, bool)]) -> Vec<Vec<u8>> {
    const MAX: usize = 100;
    let mut x = vec![[0i32; MAX]; MAX];
    let mut n = 0usize;
    let at = |v: i32| usize::try_from(v).ok().and_then(|v| v.checked_sub(1));
    for &(entry, exit, rev) in nodes {
        if entry != exit {
            if let (Some(e), Some(f)) = (at(entry), at(exit)) {
                if let Some(c) = x.get_mut(e).and_then(|r| r.get_mut(f)) {
                    *c = exit;
                }
                if rev {
                    if let Some(c) = x.get_mut(f).and_then(|r| r.get_mut(e)) {
                        *c = entry;
                    }
                }
            }
        }
        if let Ok(e) = usize::try_from(entry) {
            n = n.max(e.min(MAX));
        }
    }
    let get = |x: &Vec<[i32; MAX]>, i: usize, j: usize| x.get(i).and_then(|r| r.get(j)).copied();
    loop {
        let mut hit = false;
        for i in 0..n {
            for j in 0..n {
                if i == j || get(&x, i, j) != Some(0) {
                    continue;
                }
                // k = 1 .. N-1 (1-based), i.e. 0 .. n-2.
                for k in 0..n.saturating_sub(1) {
                    let kj = get(&x, k, j).unwrap_or(0);
                    let ik = get(&x, i, k).unwrap_or(0);
                    if kj > 0 && ik > 0 {
                        if let Some(c) = x.get_mut(i).and_then(|r| r.get_mut(j)) {
                            *c = -ik;
                        }
                        hit = true;
                        break;
                    }
                }
            }
        }
        for row in x.iter_mut().take(n) {
            for c in row.iter_mut().take(n) {
                *c = c.abs();
            }
        }
        if !hit {
            break;
        }
    }
    x.iter()
        .take(n)
        .map(|r| r.iter().take(n).map(|&v| v as u8).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names() {
        assert_eq!(
            group_file_name("../../compiled_models/man.mdl", 1),
            "models\\man01.mdl"
        );
        assert_eq!(group_file_name("headcrab", 2), "models\\headcrab02.mdl");
        assert_eq!(group_file_name("a.b/c.d.mdl", 3), "models\\c.mdl");
    }

    #[test]
    fn automatic_groups() {
        // limit 100: 60 | 60 (new group) | 30 (fits: 90) | 200 (new group, alone).
        let (g, n) = auto_groups(&[0, 0, 0, 1, 0], &[60, 60, 30, 5, 200], 100);
        assert_eq!(g, vec![1, 2, 2, 0, 3]);
        assert_eq!(n, 4);
        let (g, n) = auto_groups(&[1], &[10], 100);
        assert_eq!(g, vec![0]);
        assert_eq!(n, 2);
    }

    #[test]
    fn transition_graph() {
        // 1 -> 2, 2 <-> 3: from 1, node 3 is reached through 2.
        let m = transitions(&[(1, 2, false), (2, 3, true), (3, 3, false)]);
        assert_eq!(m, vec![vec![0, 2, 2], vec![0, 0, 3], vec![0, 2, 0]]);
    }
}
