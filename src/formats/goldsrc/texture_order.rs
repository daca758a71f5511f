//! The order of the texture list as Valve's HL1 studiomdl builds it (`goldsrc.md` §8.2, §6.2
//! `$texrendermode`, §8.3 skin families).
//!
//! Valve's tool adds a texture to its list the first time anything names it, in the order the
//! QC is read: a `$body`/`$bodygroup` names its meshes' textures when it is parsed, a
//! `$texrendermode` names its texture where it stands, every `$texturegroup` names its
//! textures row by row (the first one also fixes `numskinref` at the count so far;
//! `Cmd_TextureGroup`). The model this back end receives lists mesh materials first, then those
//! only named by `$texrendermode`, then those only named by the texture groups — Valve's order
//! whenever the `$texrendermode` lines follow every body and precede the texture groups, as they
//! usually do. Otherwise the two orders differ, and this module reorders: the commands'
//! positions are compared as the QC is read, an included file's commands where its `$include`
//! stands ([`Sources::reading_order`]). Commands written inside a `$definemacro` body count
//! where the macro is defined, not where it is used.

use crate::diag::Sources;
use crate::ir::model::{BodyOption, Model};

/// A permutation of the model's materials and the resulting skin-reference count.
pub struct TextureOrder {
    /// `order[new] = old`: the material at each position of Valve's list.
    pub order: Vec<usize>,
    /// `rank[old] = new`.
    pub rank: Vec<usize>,
    /// Textures listed before the first `$texturegroup` (`numskinref`), in the new order.
    pub num_ref: usize,
}

impl TextureOrder {
    fn identity(n: usize, num_ref: usize) -> TextureOrder {
        TextureOrder {
            order: (0..n).collect(),
            rank: (0..n).collect(),
            num_ref,
        }
    }

    /// The new index of model material `old` (itself when out of range).
    pub fn new_index(&self, old: usize) -> usize {
        self.rank.get(old).copied().unwrap_or(old)
    }

    /// The skin table in the new order, as Valve's `SetSkinValues` builds it from the first
    /// `$texturegroup` (`goldsrc.md` §8.3): `numskinfamilies` is one more than the row of the
    /// last texture the group names, and in each family `i`, for each position `j` below the
    /// length of that last row, entry `group[0][j]` becomes `group[i][j]`, where a position a
    /// row does not have is texture 0 (`Cmd_TextureGroup` fills a zeroed table). Rows of equal
    /// length replace position by position; unequal ones (warning `W0408`) give what Valve's
    /// tool gives. Entries are `num_ref` wide; a replacement of a texture beyond them is
    /// dropped, as Valve's table only covers those. Without a group: one family, unchanged.
    pub fn skins(&self, model: &Model) -> Vec<Vec<i16>> {
        let identity: Vec<usize> = (0..self.num_ref).collect();
        let first = model.skins.span.and(model.skins.groups.first());
        let rows = first.map_or(&[][..], |g| &g.rows[..]);
        let families = match rows.iter().rposition(|r| !r.is_empty()) {
            None => vec![identity],
            Some(last) => {
                let reps = rows.get(last).map_or(0, Vec::len);
                let texture = |i: usize, j: usize| {
                    rows.get(i)
                        .and_then(|r| r.get(j))
                        .map_or(0, |m| self.new_index(m.index()))
                };
                (0..=last)
                    .map(|i| {
                        let mut out = identity.clone();
                        for j in 0..reps {
                            if let Some(slot) = out.get_mut(texture(0, j)) {
                                *slot = texture(i, j);
                            }
                        }
                        out
                    })
                    .collect()
            }
        };
        families
            .into_iter()
            .map(|f| {
                f.into_iter()
                    .map(|m| i16::try_from(m).unwrap_or(i16::MAX))
                    .collect()
            })
            .collect()
    }
}

/// What names textures, at which position of the QC as it is read.
enum Event {
    Body(usize),
    RenderMode(usize),
    /// A `$texturegroup`: index in `model.skins.groups`.
    Group(usize),
}

/// Valve's texture order for `model` (see the module documentation). Only a QC has an order
/// of commands; a project read from TOML (`sources` names its file) keeps the model's order.
pub fn texture_order(model: &Model, sources: &Sources) -> TextureOrder {
    let n = model.materials.len();
    let keep = TextureOrder::identity(n, model.skins.num_ref);
    let mut events: Vec<(Vec<u32>, Event)> = Vec::new();
    let mut files = Vec::new();
    for (i, bp) in model.body_parts.iter().enumerate() {
        files.push(bp.span.file);
        events.push((sources.reading_order(bp.span), Event::Body(i)));
    }
    for (i, m) in model.materials.iter().enumerate() {
        if let Some(rm) = m.render_modes.first() {
            let at = rm.span.span();
            files.push(at.file);
            events.push((sources.reading_order(at), Event::RenderMode(i)));
        }
    }
    for (i, g) in model.skins.groups.iter().enumerate() {
        files.push(g.span.file);
        events.push((sources.reading_order(g.span), Event::Group(i)));
    }
    let Some(&file) = files.first() else {
        return keep;
    };
    let is_toml = std::path::Path::new(sources.name(file))
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if is_toml {
        return keep;
    }
    // stable: two events at one position keep the order above
    events.sort_by(|a, b| a.0.cmp(&b.0));

    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let add = |m: usize, seen: &mut [bool], order: &mut Vec<usize>| {
        if let Some(s) = seen.get_mut(m) {
            if !*s {
                *s = true;
                order.push(m);
            }
        }
    };
    let mut num_ref = None;
    // `lookup_texture` on every texture of every row of group `g`, in the order written; the
    // first group read fixes `numskinref` (the model's first group is the first in the QC:
    // groups are kept in reading order)
    let group =
        |g: usize, seen: &mut [bool], order: &mut Vec<usize>, num_ref: &mut Option<usize>| {
            if num_ref.is_none() && model.skins.span.is_some() {
                *num_ref = Some(order.len());
            }
            let rows = model.skins.groups.get(g).map_or(&[][..], |t| &t.rows[..]);
            for m in rows.iter().flatten() {
                add(m.index(), seen, order);
            }
        };
    // A group read before any texture is known stops Valve's tool ("texturegroups must follow
    // model loading", warning W0411 in `ir::build`): mdlc reads it after the last `$body`.
    let last_body = events
        .iter()
        .rposition(|(_, e)| matches!(e, Event::Body(_)));
    let mut early: Vec<usize> = Vec::new();
    for (i, (_, e)) in events.iter().enumerate() {
        match *e {
            Event::Body(b) => {
                let Some(bp) = model.body_parts.get(b) else {
                    continue;
                };
                for opt in &bp.options {
                    let BodyOption::Mesh(id) = opt else { continue };
                    for m in model.mesh(*id).map_or(&[][..], |m| &m.materials[..]) {
                        add(m.index(), &mut seen, &mut order);
                    }
                }
            }
            Event::RenderMode(m) => add(m, &mut seen, &mut order),
            Event::Group(g) => {
                if order.is_empty() && last_body.is_some_and(|b| i < b) {
                    early.push(g);
                } else {
                    group(g, &mut seen, &mut order, &mut num_ref);
                }
            }
        }
        if Some(i) == last_body {
            for g in early.drain(..) {
                group(g, &mut seen, &mut order, &mut num_ref);
            }
        }
    }
    for m in 0..n {
        add(m, &mut seen, &mut order);
    }
    let num_ref = num_ref.unwrap_or(n);
    if order.iter().copied().eq(0..n) && num_ref == model.skins.num_ref {
        return keep;
    }
    let mut rank = vec![0usize; n];
    for (new, &old) in order.iter().enumerate() {
        if let Some(r) = rank.get_mut(old) {
            *r = new;
        }
    }
    TextureOrder {
        order,
        rank,
        num_ref,
    }
}
