//! The skeleton: `$renamebone` applied to every loaded file (step 2), then the files' bones
//! merged into one skeleton by each engine's rules (step 3): GoldSrc keeps the used bones by
//! exact name, Source by case-insensitive name with `$definebone` and `$hierarchy`.

use crate::ir::written::Target;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::diag::{Code, Diagnostic, FileSpan, Spanned};
use crate::ir::anim::Pose;
use crate::ir::model::*;
use crate::ir::skeleton::{Bone, BoneId};
use crate::load::LoadedSmd;
use crate::smd::SmdModel;
use crate::suggest::nearest;

use super::meshes::PendingMesh;
use super::references::unknown_bone;
use super::{loc, Builder};

/// The merged skeleton while it is built.
struct Table {
    pub bones: Vec<ModelBone>,
    /// Parent names of `$definebone` bones, resolved after the merge.
    pub define_parents: Vec<(usize, Spanned<String>)>,
}

impl Builder<'_> {
    pub(super) fn apply_renames(&mut self) {
        let renames = &self.spec.rename_bones;
        let gold = self.target == Target::GoldSrc;
        let mut used = vec![false; renames.len()];
        let hit = |name: &str| {
            renames.iter().position(|(from, _)| {
                if gold {
                    from.value == name
                } else {
                    from.value.eq_ignore_ascii_case(name)
                }
            })
        };
        for l in &mut self.loader.files {
            // (a file shared with other projects is copied only when a bone of it is renamed)
            if !l.smd.skeleton.bones.iter().any(|b| hit(&b.name).is_some()) {
                continue;
            }
            for b in &mut Arc::make_mut(&mut l.smd).skeleton.bones {
                let hit = hit(&b.name);
                if let Some(k) = hit {
                    if let (Some((_, to)), Some(u)) = (renames.get(k), used.get_mut(k)) {
                        b.name = to.value.clone();
                        *u = true;
                    }
                }
            }
        }
        let mut out = Vec::new();
        for ((from, _), u) in renames.iter().zip(&used) {
            if !u {
                let mut d = Diagnostic::new(
                    Code::BuildUnusedBoneName,
                    format!(
                        "`$renamebone` names bone \"{}\", which no loaded file has",
                        from.value
                    ),
                    loc(from.span),
                    "no bone of this name",
                )
                .with_note("the rename is ignored");
                let all = self
                    .loader
                    .files
                    .iter()
                    .flat_map(|l| l.smd.skeleton.bones.iter().map(|b| b.name.as_str()));
                if let Some(n) = nearest(&from.value, all) {
                    d = d.with_note(format!("help: did you mean \"{n}\"?"));
                }
                out.push(d);
            }
        }
        self.diags.extend(out);
    }

    /// For each `$mirrorbone` (GoldSrc), the name of the bone it mirrors after `$renamebone`;
    /// `None` (with a warning) when no loaded file has a bone of that exact name. Valve's HL1
    /// tool marks a node mirrored while reading each SMD (`Grab_Nodes`, `strcmp` against every
    /// `$mirrorbone` name), long before `SimplifyModel` renames bones, so the name is matched
    /// as the files spell it, with case, and then follows its rename (the first
    /// `$renamebone` from that name, as `apply_renames` does). Source: the names as written.
    pub(super) fn mirror_names(&mut self) -> Vec<Option<Spanned<String>>> {
        let spec = self.spec;
        if self.target != Target::GoldSrc {
            return spec.mirror_bones.iter().cloned().map(Some).collect();
        }
        let mut out = Vec::with_capacity(spec.mirror_bones.len());
        let mut warns = Vec::new();
        for m in &spec.mirror_bones {
            let names = || {
                self.loader
                    .files
                    .iter()
                    .flat_map(|l| l.smd.skeleton.bones.iter().map(|b| b.name.as_str()))
            };
            if names().any(|n| n == m.value) {
                // Valve's tool marks nodes while it reads each SMD, at its `$body` or
                // `$sequence`: a `$mirrorbone` after them reaches none of those files.
                let (before, after) = self.reads_around(m.span, true);
                if before > 0 {
                    let mut d = Diagnostic::new(
                        Code::BuildMirrorAfterFiles,
                        format!(
                            "`$mirrorbone \"{}\"` comes after {before} SMD file{} {} read",
                            m.value,
                            if before == 1 { "" } else { "s" },
                            if before == 1 { "is" } else { "are" }
                        ),
                        loc(m.span),
                        "after those files are read",
                    )
                    .with_note("Valve's HL1 compiler marks a bone mirrored while it reads each SMD file, at its `$body` or `$sequence`, with the `$mirrorbone` commands read so far");
                    if after == 0 {
                        d = d.with_note("it comes after every SMD file, so it mirrors nothing, and mdlc ignores it too");
                    } else {
                        d = d.with_note(format!(
                            "Valve's tool would mirror the bone only in the {after} SMD file{} read after it; mdlc mirrors it in every file",
                            if after == 1 { "" } else { "s" }
                        ));
                    }
                    warns.push(d.with_note(
                        "help: put `$mirrorbone` before the `$body` and `$sequence` commands",
                    ));
                    if after == 0 {
                        out.push(None);
                        continue;
                    }
                }
                let to = spec
                    .rename_bones
                    .iter()
                    .find(|(from, _)| from.value == m.value)
                    .map_or_else(|| m.value.clone(), |(_, to)| to.value.clone());
                out.push(Some(Spanned {
                    value: to,
                    span: m.span,
                }));
                continue;
            }
            out.push(None);
            let mut d = Diagnostic::new(
                Code::BuildUnusedBoneName,
                format!(
                    "`$mirrorbone` names bone \"{}\", which no loaded file has",
                    m.value
                ),
                loc(m.span),
                "no bone of this name",
            )
            .with_note("it is ignored: Valve's HL1 compiler compares `$mirrorbone` with the bone names of each SMD file as written (with case), before any `$renamebone`");
            let renamed_from: Vec<&str> = spec
                .rename_bones
                .iter()
                .filter(|(from, to)| to.value == m.value && names().any(|n| n == from.value))
                .map(|(from, _)| from.value.as_str())
                .collect();
            if let Some(from) = renamed_from.first() {
                d = d.with_note(format!(
                    "help: `$renamebone` gives this name to \"{from}\"; write `$mirrorbone \"{from}\"` to mirror it"
                ));
            } else if let Some(n) = nearest(&m.value, names()) {
                d = d.with_note(format!("help: did you mean \"{n}\"?"));
            }
            warns.push(d);
        }
        self.diags.extend(warns);
        out
    }

    /// Bone names (lower case) that commands name. `always`: bones Source counts as referenced
    /// in every file that has them (`$attachment`, `$bonemerge`; `source-animation.md` §2.2).
    /// `keep`: bones kept only when no file uses them otherwise — GoldSrc attachments,
    /// controllers, hit boxes and hit groups (Valve's HL1 tool drops such bones and then fails;
    /// mdlc keeps them), Source controllers, hit boxes and hit groups.
    pub(super) fn named_bones(&self) -> (Vec<String>, Vec<String>) {
        let s = self.spec;
        let lower = |b: &Spanned<String>| b.value.to_ascii_lowercase();
        let mut always: Vec<String> = Vec::new();
        let mut keep: Vec<String> = Vec::new();
        let attachments = s.attachments.iter().map(|a| lower(&a.bone));
        match self.target {
            Target::GoldSrc => keep.extend(attachments),
            Target::Source => {
                always.extend(attachments);
                always.extend(s.bone_merge.iter().map(lower));
            }
        }
        keep.extend(s.controllers.iter().map(|c| lower(&c.bone)));
        keep.extend(
            s.hitbox_sets
                .iter()
                .flat_map(|h| &h.boxes)
                .map(|b| lower(&b.bone)),
        );
        keep.extend(s.hit_groups.iter().map(|(_, b)| lower(b)));
        for v in [&mut always, &mut keep] {
            v.sort();
            v.dedup();
        }
        (always, keep)
    }

    /// The bones a file's vertices use: GoldSrc the first column (Valve's HL1 tool ignores
    /// weights), Source every weighted bone.
    pub(super) fn vertex_bones(&self, smd: &SmdModel) -> Vec<BoneId> {
        let mut out: Vec<BoneId> = Vec::new();
        let Some(m) = &smd.mesh else { return out };
        let mut seen = vec![false; smd.skeleton.bones.len()];
        let mut add = |b: BoneId| {
            if let Some(s) = seen.get_mut(b.index()) {
                if !*s {
                    *s = true;
                    out.push(b);
                }
            }
        };
        for t in &m.triangles {
            for c in &m.corners_of(t) {
                match self.target {
                    Target::GoldSrc => add(c.bone),
                    Target::Source => m.weights_of(c).iter().for_each(|w| add(w.bone)),
                }
            }
        }
        out
    }

    /// Marks the used bones of one file: `seed` bones and every ancestor of them.
    pub(super) fn used_bones(smd: &SmdModel, seed: impl Iterator<Item = BoneId>) -> Vec<bool> {
        let n = smd.skeleton.bones.len();
        let mut used = vec![false; n];
        for b in seed {
            let mut cur = Some(b);
            let mut steps = 0;
            while let Some(c) = cur {
                match used.get_mut(c.index()) {
                    Some(u) if !*u => *u = true,
                    _ => break,
                }
                steps += 1;
                if steps > n {
                    break;
                }
                cur = smd.skeleton.get(c).and_then(|b| b.parent);
            }
        }
        used
    }

    /// The used bones of each of `files` (in load order): vertex bones, `always` names in every
    /// file that has them, then each `keep` name no file uses yet in the first file that has it;
    /// with their ancestors.
    /// `skins(f)`: whether the vertices of file `f` count.
    pub(super) fn used_per_file(
        &self,
        files: &[usize],
        skins: impl Fn(usize) -> bool,
    ) -> HashMap<usize, Vec<bool>> {
        let (always, keep) = self.named_bones();
        let mut seeds: HashMap<usize, Vec<BoneId>> = HashMap::new();
        for &f in files {
            let Some(l) = self.loader.files.get(f) else {
                continue;
            };
            let mut v = if skins(f) {
                self.vertex_bones(&l.smd)
            } else {
                Vec::new()
            };
            v.extend(always.iter().filter_map(|n| l.smd.skeleton.find(n)));
            seeds.insert(f, v);
        }
        let used_now = |seeds: &HashMap<usize, Vec<BoneId>>, f: usize| -> Vec<bool> {
            match (self.loader.files.get(f), seeds.get(&f)) {
                (Some(l), Some(s)) => Self::used_bones(&l.smd, s.iter().copied()),
                _ => Vec::new(),
            }
        };
        for name in &keep {
            let covered = files.iter().any(|&f| {
                let used = used_now(&seeds, f);
                self.loader.files.get(f).is_some_and(|l| {
                    l.smd
                        .skeleton
                        .bones
                        .iter()
                        .zip(&used)
                        .any(|(b, u)| *u && b.name.eq_ignore_ascii_case(name))
                })
            });
            if covered {
                continue;
            }
            for &f in files {
                let Some(l) = self.loader.files.get(f) else {
                    continue;
                };
                if let Some(b) = l.smd.skeleton.find(name) {
                    seeds.entry(f).or_default().push(b);
                    break;
                }
            }
        }
        files.iter().map(|&f| (f, used_now(&seeds, f))).collect()
    }

    /// The rest pose a file gives a bone, scaled. GoldSrc takes the last value the reference
    /// skeleton writes (`time` lines are ignored there, so the last frame wins); Source frame 0.
    pub(super) fn rest_of(&self, l: &LoadedSmd, b: usize, scale: f32) -> Pose {
        let a = &l.smd.animation;
        let mut p = match self.target {
            Target::GoldSrc => (0..a.num_frames)
                .rev()
                .find_map(|f| a.get(f, b))
                .unwrap_or_default(),
            Target::Source => l
                .smd
                .skeleton
                .bones
                .get(b)
                .map(|b| b.rest)
                .unwrap_or_default(),
        };
        for c in &mut p.pos {
            *c *= scale;
        }
        p
    }

    /// GoldSrc (`goldsrc.md` §8.4): models in body order, nodes in file order, used bones only,
    /// exact names; a known bone given another parent is "illegal parent bone replacement".
    pub(super) fn merge_goldsrc(&mut self, pending: &[PendingMesh]) -> Vec<ModelBone> {
        let files: Vec<usize> = pending.iter().map(|p| p.loaded).collect();
        let used_of = self.used_per_file(&files, |_| true);
        let mut bones: Vec<ModelBone> = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        let mut errs = Vec::new();
        for p in pending {
            if done.contains(&p.loaded) {
                continue;
            }
            done.push(p.loaded);
            let Some(l) = self.loader.files.get(p.loaded) else {
                continue;
            };
            let used = used_of.get(&p.loaded).cloned().unwrap_or_default();
            for (i, b) in l.smd.skeleton.bones.iter().enumerate() {
                if !used.get(i).copied().unwrap_or(false) {
                    continue;
                }
                let file_parent = b.parent.and_then(|p| l.smd.skeleton.get(p));
                if let Some(existing) = bones.iter().find(|x| x.name == b.name) {
                    let old_parent = existing
                        .parent
                        .and_then(|p| bones.get(p.index()))
                        .map(|x| x.name.as_str());
                    let new_parent = file_parent.map(|x| x.name.as_str());
                    if old_parent != new_parent {
                        errs.push(illegal_parent(
                            b,
                            new_parent,
                            old_parent,
                            existing.span,
                            "model",
                        ));
                    }
                    continue;
                }
                let parent = file_parent
                    .and_then(|fp| bones.iter().position(|x| x.name == fp.name))
                    .map(|i| BoneId(i as u32));
                bones.push(ModelBone {
                    name: b.name.clone(),
                    parent,
                    rest: self.rest_of(l, i, p.scale),
                    rest_parent: parent,
                    fixup: None,
                    defined: false,
                    span: b.span,
                });
            }
        }
        self.diags.extend(errs);
        bones
    }

    /// Source (`source-animation.md` §2.2): `$definebone` first, then the referenced bones of
    /// every loaded file in load order (meshes, LOD meshes, animations), names without regard
    /// to case; `$hierarchy` re-parents, then the table is reordered so parents come first.
    pub(super) fn merge_source(
        &mut self,
        pending: &[PendingMesh],
        body_meshes: usize,
        anim_files: &[Option<usize>],
    ) -> Vec<ModelBone> {
        let mut table = Table {
            bones: Vec::new(),
            define_parents: Vec::new(),
        };
        for d in &self.spec.define_bones {
            if table
                .bones
                .iter()
                .any(|b| b.name.eq_ignore_ascii_case(&d.name.value))
            {
                continue;
            }
            let [p, y, r] = d.rotation_deg;
            if let Some(parent) = &d.parent {
                if !parent.value.is_empty() {
                    table
                        .define_parents
                        .push((table.bones.len(), parent.clone()));
                }
            }
            table.bones.push(ModelBone {
                name: d.name.value.clone(),
                parent: None,
                rest: Pose {
                    pos: d.position,
                    rot: [r.to_radians(), p.to_radians(), y.to_radians()],
                },
                rest_parent: None,
                fixup: d.fixup,
                defined: true,
                span: loc(d.span),
            });
        }
        // Load order: every mesh (body parts, then LODs), then animation files.
        let mut order: Vec<(usize, f32)> = Vec::new();
        for p in pending {
            if !order.iter().any(|(f, _)| *f == p.loaded) {
                order.push((
                    p.loaded,
                    self.first_scale.get(&p.loaded).copied().unwrap_or(p.scale),
                ));
            }
        }
        for &f in anim_files.iter().flatten() {
            if !order.iter().any(|(g, _)| *g == f) {
                order.push((f, self.first_scale.get(&f).copied().unwrap_or(1.0)));
            }
        }
        let files: Vec<usize> = order.iter().map(|(f, _)| *f).collect();
        // Only the body parts' meshes skin bones in (§2.2 "a vertex of a reference mesh"): a
        // file loaded only as an LOD's replacement adds a bone only by name (the 2006 SDK loads
        // those files as not active models, whose vertices `TagUsedBones` skips), and its
        // vertices take their links from LOD 0.
        let body: HashSet<usize> = pending[..body_meshes.min(pending.len())]
            .iter()
            .map(|p| p.loaded)
            .collect();
        let used_of = self.used_per_file(&files, |f| body.contains(&f));
        for &(f, scale) in &order {
            let Some(l) = self.loader.files.get(f) else {
                continue;
            };
            let used = used_of.get(&f).cloned().unwrap_or_default();
            for (i, b) in l.smd.skeleton.bones.iter().enumerate() {
                if !used.get(i).copied().unwrap_or(false)
                    || table
                        .bones
                        .iter()
                        .any(|x| x.name.eq_ignore_ascii_case(&b.name))
                {
                    continue;
                }
                let parent = b
                    .parent
                    .and_then(|p| l.smd.skeleton.get(p))
                    .and_then(|fp| {
                        table
                            .bones
                            .iter()
                            .position(|x| x.name.eq_ignore_ascii_case(&fp.name))
                    })
                    .map(|i| BoneId(i as u32));
                let rest = self.rest_of(l, i, scale);
                table.bones.push(ModelBone {
                    name: b.name.clone(),
                    parent,
                    rest,
                    rest_parent: parent,
                    fixup: None,
                    defined: false,
                    span: b.span,
                });
            }
        }
        let mut bones = table.bones;
        let lookup = |bones: &[ModelBone], name: &str| {
            bones
                .iter()
                .position(|x| x.name.eq_ignore_ascii_case(name))
                .map(|i| BoneId(i as u32))
        };
        // `$definebone` parents, then `$hierarchy`.
        let mut errs = Vec::new();
        let mut links: Vec<(usize, Option<BoneId>, FileSpan, &'static str)> = Vec::new();
        for (child, parent) in &table.define_parents {
            match lookup(&bones, &parent.value) {
                Some(p) => links.push((*child, Some(p), loc(parent.span), "$definebone")),
                None => errs.push(unknown_bone(parent, "$definebone parent", &bones)),
            }
        }
        for (child, parent) in &self.spec.hierarchy {
            let c = lookup(&bones, &child.value);
            let p = if parent.value.is_empty() {
                Some(None)
            } else {
                lookup(&bones, &parent.value).map(Some)
            };
            if c.is_none() {
                errs.push(unknown_bone(child, "$hierarchy", &bones));
            }
            if p.is_none() {
                errs.push(unknown_bone(parent, "$hierarchy parent", &bones));
            }
            if let (Some(c), Some(p)) = (c, p) {
                links.push((c.index(), p, loc(parent.span), "$hierarchy"));
            }
        }
        for (child, parent, at, what) in links {
            if let Some(p) = parent {
                // The new parent must not be the bone or one of its descendants.
                let mut cur = Some(p);
                let mut steps = 0;
                let mut cycle = false;
                while let Some(c) = cur {
                    if c.index() == child {
                        cycle = true;
                        break;
                    }
                    steps += 1;
                    if steps > bones.len() {
                        break;
                    }
                    cur = bones.get(c.index()).and_then(|b| b.parent);
                }
                if cycle {
                    let name = bones.get(child).map_or("", |b| b.name.as_str());
                    let pname = bones.get(p.index()).map_or("", |b| b.name.as_str());
                    errs.push(
                        Diagnostic::new(
                            Code::BuildBoneCycle,
                            format!("`{what}` makes bone \"{name}\" its own ancestor"),
                            at,
                            format!("\"{pname}\" descends from \"{name}\""),
                        )
                        .with_note("this parent is ignored"),
                    );
                    continue;
                }
            }
            if let Some(b) = bones.get_mut(child) {
                b.parent = parent;
                if b.defined {
                    b.rest_parent = parent;
                }
            }
        }
        self.diags.extend(errs);
        reorder_parents_first(&mut bones);
        bones
    }
}

pub(super) fn illegal_parent(
    b: &Bone,
    new_parent: Option<&str>,
    old_parent: Option<&str>,
    earlier: FileSpan,
    what: &str,
) -> Diagnostic {
    let show = |p: Option<&str>| p.map_or("no parent".to_string(), |p| format!("parent \"{p}\""));
    Diagnostic::new(
        Code::BuildIllegalParent,
        format!(
            "illegal parent bone replacement: bone \"{}\" has {} in this {what}",
            b.name,
            show(new_parent)
        ),
        b.span,
        format!("{} here", show(new_parent)),
    )
    .with_secondary(
        earlier,
        format!("{} in the model's skeleton", show(old_parent)),
    )
    .with_note("GoldSrc merges bones by name; every file must give a bone the same parent")
}

/// Reorders bones until every parent comes before its children, by repeated swaps of a bone
/// with a parent that follows it (`source-animation.md` §2.2 item 5); every handle is remapped.
fn reorder_parents_first(bones: &mut Vec<ModelBone>) {
    let n = bones.len();
    // order[pos] = old index; pos_of[old] = pos.
    let mut order: Vec<usize> = (0..n).collect();
    let mut pos_of: Vec<usize> = (0..n).collect();
    let parent_of = |old: usize| bones.get(old).and_then(|b| b.parent).map(BoneId::index);
    let mut guard = 0usize;
    let limit = n.saturating_mul(n).saturating_add(n);
    loop {
        let bad = (0..n).find_map(|pos| {
            let old = *order.get(pos)?;
            let p = parent_of(old)?;
            let pp = *pos_of.get(p)?;
            (pp > pos).then_some((pos, pp))
        });
        let Some((a, b)) = bad else { break };
        guard += 1;
        if guard > limit {
            break;
        }
        order.swap(a, b);
        if let (Some(&oa), Some(&ob)) = (order.get(a), order.get(b)) {
            if let Some(x) = pos_of.get_mut(oa) {
                *x = a;
            }
            if let Some(x) = pos_of.get_mut(ob) {
                *x = b;
            }
        }
    }
    if order.iter().enumerate().all(|(i, &o)| i == o) {
        return;
    }
    let remap = |id: Option<BoneId>| -> Option<BoneId> {
        id.and_then(|p| pos_of.get(p.index()).map(|&q| BoneId(q as u32)))
    };
    let old = std::mem::take(bones);
    for &o in &order {
        if let Some(b) = old.get(o) {
            let mut b = b.clone();
            b.parent = remap(b.parent);
            b.rest_parent = remap(b.rest_parent);
            bones.push(b);
        }
    }
}
