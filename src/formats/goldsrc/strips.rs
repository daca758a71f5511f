//! Triangle commands: Valve's greedy strip/fan builder (`goldsrc.md` §8.8, steps 1-5).
//!
//! A pure function over one mesh's triangles. The result is the `int16` command list of
//! `goldsrc.md` §4.15: a count (`+n` strip, `−n` fan), then `n` corners of four values
//! (vertex, normal, s, t), repeated, and a final 0.

/// One triangle corner as the strip builder sees it.
///
/// Two corners are the same for adjacency only when *every* field is identical, the float
/// texture coordinates bit for bit (Valve's tool compares the whole record with `memcmp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StripCorner {
    pub vert: i32,
    pub norm: i32,
    pub s: i32,
    pub t: i32,
    /// The texture coordinates after clamping and packing (`goldsrc.md` §8.3).
    pub u: f32,
    pub v: f32,
}

impl StripCorner {
    fn same(&self, o: &StripCorner) -> bool {
        self.vert == o.vert
            && self.norm == o.norm
            && self.s == o.s
            && self.t == o.t
            && self.u.to_bits() == o.u.to_bits()
            && self.v.to_bits() == o.v.to_bits()
    }
}

/// The longest strip or fan Valve's tool emits (longer ones are skipped as candidates).
pub const MAX_RUN: usize = 127;

/// The command list of one mesh, ending with its 0, and the number of strips and fans in it.
pub fn build_commands(tris: &[[StripCorner; 3]]) -> (Vec<i16>, usize) {
    let n = tris.len();
    let corner = |t: usize, c: usize| -> Option<&StripCorner> { tris.get(t)?.get(c % 3) };

    // Step 1-2: adjacency. `nb[t][e]` = (neighbour triangle, its edge) across edge e of t.
    let mut nb: Vec<[Option<(usize, usize)>; 3]> = vec![[None; 3]; n];
    let mut linked: Vec<u8> = vec![0; n];
    for i in 0..n {
        for k in 0..3 {
            if linked.get(i).is_some_and(|&m| m & (1 << k) != 0) {
                continue;
            }
            let (Some(m1), Some(m2)) = (corner(i, k + 1), corner(i, k)) else {
                continue;
            };
            'scan: for j in i + 1..n {
                if linked.get(j).copied() == Some(7) {
                    continue;
                }
                for e in 0..3 {
                    let (Some(a), Some(b)) = (corner(j, e), corner(j, e + 1)) else {
                        continue;
                    };
                    if a.same(m1) && b.same(m2) {
                        if let Some(x) = nb.get_mut(i).and_then(|x| x.get_mut(k)) {
                            *x = Some((j, e));
                        }
                        if let Some(x) = nb.get_mut(j).and_then(|x| x.get_mut(e)) {
                            *x = Some((i, k));
                        }
                        if let Some(x) = linked.get_mut(i) {
                            *x |= 1 << k;
                        }
                        if let Some(x) = linked.get_mut(j) {
                            *x |= 1 << e;
                        }
                        break 'scan;
                    }
                }
            }
        }
    }

    // Steps 3-4: the run from (start triangle, start corner), strip or fan.
    // `used`: 0 free, 1 emitted, 2 in the run being measured.
    let mut used: Vec<u8> = vec![0; n];
    let run = |used: &mut Vec<u8>, start: usize, c0: usize, fan: bool| -> Vec<(usize, usize)> {
        let mut out = vec![
            (start, c0 % 3),
            (start, (c0 + 1) % 3),
            (start, (c0 + 2) % 3),
        ];
        if let Some(u) = used.get_mut(start) {
            *u = 2;
        }
        let (mut t, mut c) = (start, c0);
        loop {
            let edge = if !fan && out.len() % 2 == 1 {
                (c + 1) % 3
            } else {
                (c + 2) % 3
            };
            let Some((j, e)) = nb.get(t).and_then(|x| x.get(edge)).copied().flatten() else {
                break;
            };
            if used.get(j).is_none_or(|&u| u != 0) {
                break;
            }
            out.push((j, (e + 2) % 3));
            if let Some(u) = used.get_mut(j) {
                *u = 2;
            }
            t = j;
            c = e;
        }
        for u in used.iter_mut() {
            if *u == 2 {
                *u = 0;
            }
        }
        out
    };

    // Step 5: greedy selection.
    let mut commands: Vec<i16> = Vec::new();
    let mut runs = 0usize;
    let mut peak: Vec<usize> = vec![n; n];
    let mut i = 0;
    while i < n {
        if used.get(i).is_some_and(|&u| u != 0) {
            i += 1;
            continue;
        }
        let mut best: Vec<(usize, usize)> = Vec::new();
        let mut best_fan = false;
        let mut k = i;
        while k < n && best.len() < MAX_RUN {
            if used.get(k).is_some_and(|&u| u != 0) || peak.get(k).is_some_and(|&p| p <= best.len())
            {
                k += 1;
                continue;
            }
            let mut local_peak = 0;
            for fan in [false, true] {
                for c in 0..3 {
                    let r = run(&mut used, k, c, fan);
                    if r.len() <= MAX_RUN && r.len() > best.len() {
                        best = r.clone();
                        best_fan = fan;
                    }
                    local_peak = local_peak.max(r.len());
                }
            }
            if let Some(p) = peak.get_mut(k) {
                *p = local_peak;
            }
            k += 1;
        }
        for &(t, _) in &best {
            if let Some(u) = used.get_mut(t) {
                *u = 1;
            }
        }
        let len = best.len() as i16;
        commands.push(if best_fan { -len } else { len });
        for &(t, c) in &best {
            if let Some(sc) = corner(t, c) {
                commands.extend_from_slice(&[
                    sc.vert as i16,
                    sc.norm as i16,
                    sc.s as i16,
                    sc.t as i16,
                ]);
            }
        }
        runs += 1;
        if best.is_empty() {
            // Every candidate was longer than 127 (Valve's tool would emit a 0 here and loop
            // forever); emit the triangle on its own so the list stays complete.
            commands.pop();
            if let Some(tri) = tris.get(i) {
                commands.push(3);
                for sc in tri {
                    commands.extend_from_slice(&[
                        sc.vert as i16,
                        sc.norm as i16,
                        sc.s as i16,
                        sc.t as i16,
                    ]);
                }
            }
            if let Some(u) = used.get_mut(i) {
                *u = 1;
            }
        }
    }
    commands.push(0);
    (commands, runs)
}

/// Decodes a command list back into triangles of corners `(vert, norm, s, t)`, in the winding
/// the renderer uses (strips alternate; fans pivot on their first corner). `None` when the list
/// is malformed (a count running past the end, or no final 0).
pub fn decode_commands(cmds: &[i16]) -> Option<Vec<[[i16; 4]; 3]>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let c = *cmds.get(at)?;
        at += 1;
        if c == 0 {
            return (at == cmds.len()).then_some(out);
        }
        let fan = c < 0;
        let len = c.unsigned_abs() as usize;
        let mut corners = Vec::with_capacity(len);
        for _ in 0..len {
            let v = cmds.get(at..at + 4)?;
            corners.push([*v.first()?, *v.get(1)?, *v.get(2)?, *v.get(3)?]);
            at += 4;
        }
        for j in 2..len {
            let (a, b, c) = if fan {
                (corners.first()?, corners.get(j - 1)?, corners.get(j)?)
            } else if j % 2 == 0 {
                (corners.get(j - 2)?, corners.get(j - 1)?, corners.get(j)?)
            } else {
                (corners.get(j - 1)?, corners.get(j - 2)?, corners.get(j)?)
            };
            out.push([*a, *b, *c]);
        }
    }
}
