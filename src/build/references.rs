//! Bone references (step 8): every bone a command names (attachments, hit boxes, controllers,
//! `$root`, weight lists, LOD bone replacements, …) resolved on the merged skeleton, with the
//! nearest name when one is not found.

use crate::diag::{Code, Diagnostic, FileSpan, Spanned};
use crate::ir::model::*;
use crate::ir::skeleton::BoneId;
use crate::project::spec::Target;
use crate::suggest::nearest;

use super::meshes::BodyMeshes;
use super::{loc, Builder};

/// Every bone (and body mesh) the commands name, on the merged skeleton.
pub(super) struct References {
    pub attachments: Vec<Attachment>,
    pub hitbox_sets: Vec<HitboxSet>,
    pub hit_groups: Vec<(i32, BoneId, FileSpan)>,
    pub controllers: Vec<Controller>,
    pub mirror_bones: Vec<(BoneId, FileSpan)>,
    pub always_collapse: Vec<(BoneId, FileSpan)>,
    pub limit_rotations: Vec<(BoneId, bool, FileSpan)>,
    pub force_realign: Vec<(BoneId, [f32; 3], FileSpan)>,
    pub screen_align: Vec<(BoneId, i32, FileSpan)>,
    pub bone_merge: Vec<(BoneId, FileSpan)>,
    pub root_bone: Option<(BoneId, FileSpan)>,
    pub pivots: Vec<(i32, Option<BoneId>, FileSpan)>,
    pub weight_lists: Vec<WeightList>,
    pub lods: Vec<Lod>,
    pub ik_chains: Vec<IkChain>,
    pub ik_autoplay_locks: Vec<(usize, f32, f32)>,
}

impl Builder<'_> {
    /// Resolves the bones commands name. `mirror_names`: `$mirrorbone` names as the files
    /// spelled them before renaming (GoldSrc compares them with case).
    pub(super) fn resolve_references(
        &mut self,
        bones: &[ModelBone],
        mirror_names: &[Option<Spanned<String>>],
        parts: &BodyMeshes,
    ) -> References {
        let spec = self.spec;
        // `$staticprop` (Source) merges every bone into one named `static_prop`, which will be
        // bone 0; commands may name it before that pass has run.
        let static_prop = self.target == Target::Source && spec.static_prop;
        let find = |name: &str| -> Option<BoneId> {
            bones
                .iter()
                .position(|b| b.name.eq_ignore_ascii_case(name))
                .map(|i| BoneId(i as u32))
                .or_else(|| {
                    (static_prop && !bones.is_empty() && name.eq_ignore_ascii_case("static_prop"))
                        .then_some(BoneId(0))
                })
        };
        let bone_names: Vec<String> = bones.iter().map(|b| b.name.clone()).collect();
        let mut r = Resolver {
            find: &find,
            names: &bone_names,
            diags: Vec::new(),
        };
        let attachments: Vec<Attachment> = spec
            .attachments
            .iter()
            .filter_map(|a| {
                let bone = if self.target == Target::Source
                    && a.bone.value.is_empty()
                    && !bones.is_empty()
                {
                    r.diags.push(
                        Diagnostic::new(
                            Code::BuildAttachmentNoBone,
                            format!(
                                "attachment `{}` names no bone; mdlc attaches it to the root bone \"{}\"",
                                a.name.value, bones[0].name
                            ),
                            loc(a.bone.span),
                            "empty bone name",
                        )
                        .with_note("the 2006 SDK's compiler stops here (\"unknown attachment link\"); QC files written for later compilers have this form, mostly static props with `absolute` attachments, whose one bone never moves")
                        .with_note("help: name the bone the attachment follows"),
                    );
                    BoneId(0)
                } else {
                    r.must(&a.bone, "attachment")?
                };
                Some(Attachment {
                    name: a.name.clone(),
                    bone,
                    position: a.position,
                    flags: a.flags.clone(),
                    rotate_deg: a.rotate_deg,
                    x_and_z_axes: a.x_and_z_axes,
                    span: loc(a.span),
                })
            })
            .collect();
        let hitbox_sets = spec
            .hitbox_sets
            .iter()
            .map(|s| HitboxSet {
                name: s.name.clone(),
                boxes: s
                    .boxes
                    .iter()
                    .filter_map(|h| {
                        Some(Hitbox {
                            group: h.group,
                            bone: r.must(&h.bone, "hit box")?,
                            min: h.min,
                            max: h.max,
                            name: h.name.clone(),
                            span: loc(h.span),
                        })
                    })
                    .collect(),
            })
            .collect();
        let hit_groups = spec
            .hit_groups
            .iter()
            .filter_map(|(g, b)| Some((g.value, r.must(b, "hit group")?, loc(g.span))))
            .collect();
        let controllers = spec
            .controllers
            .iter()
            .filter_map(|c| {
                Some(Controller {
                    index: c.index.value,
                    bone: r.must(&c.bone, "bone controller")?,
                    axis: c.axis.clone(),
                    start: c.start,
                    end: c.end,
                    span: loc(c.span),
                })
            })
            .collect();
        let gold = self.target == Target::GoldSrc;
        let mirror_bones = spec
            .mirror_bones
            .iter()
            .zip(mirror_names)
            .filter_map(|(b, renamed)| {
                if !gold {
                    return Some((r.may(b, "$mirrorbone")?, loc(b.span)));
                }
                // GoldSrc bone names are compared with case (`findNode`)
                let renamed = renamed.as_ref()?;
                match bones.iter().position(|x| x.name == renamed.value) {
                    Some(i) => Some((BoneId(i as u32), loc(b.span))),
                    None => {
                        let d = bone_not_found(
                            Code::BuildUnusedBoneName,
                            renamed,
                            "$mirrorbone",
                            bones.iter().map(|x| x.name.as_str()),
                            Some("it is ignored, as in Valve's compilers"),
                            None,
                        );
                        r.diags.push(d);
                        None
                    }
                }
            })
            .collect();
        let always_collapse = spec
            .always_collapse
            .iter()
            .filter_map(|b| Some((r.may(b, "$alwayscollapse")?, loc(b.span))))
            .collect();
        let limit_rotations = spec
            .limit_rotations
            .iter()
            .filter_map(|(b, seqs)| {
                Some((r.must(b, "$limitrotation")?, !seqs.is_empty(), loc(b.span)))
            })
            .collect();
        // 2006 SDK `Cmd_ForceRealign`: `DEG2RAD` of each angle, `AngleMatrix(RadianEuler)`
        let force_realign = spec
            .force_realign
            .iter()
            .filter_map(|(b, deg)| {
                let rad = deg.map(|d| f64::from(d).to_radians() as f32);
                Some((r.must(b, "$forcerealign")?, rad, loc(b.span)))
            })
            .collect();
        // 2006 SDK `TagScreenAlignedBones`: an unknown bone stops Valve's compiler too
        let screen_align = spec
            .screen_align
            .iter()
            .filter_map(|(b, cyl)| {
                let flag = if *cyl { 0x10 } else { 0x08 };
                Some((r.must(b, "$screenalign")?, flag, loc(b.span)))
            })
            .collect();
        // A `$bonemerge` bone the model does not have is skipped: the 2006 SDK only flags the
        // bones of the table that match (`TagUsedBones`), and shared `.qci` files list bones
        // for several models (a Garry's Mod arms model names 17 it does not have).
        let bone_merge = spec
            .bone_merge
            .iter()
            .filter_map(|b| Some((r.may(b, "$bonemerge")?, loc(b.span))))
            .collect();
        let root_bone = spec.root_bone.as_ref().and_then(|b| {
            let id = if gold {
                r.may(b, "$root")
            } else {
                r.must(b, "$root")
            };
            Some((id?, loc(b.span)))
        });
        let pivots = spec
            .pivots
            .iter()
            .map(|(i, b)| (i.value, r.may(b, "$pivot"), loc(i.span)))
            .collect();
        let weight_lists = spec
            .weight_lists
            .iter()
            .map(|w| WeightList {
                name: w.name.clone(),
                weights: w
                    .weights
                    .iter()
                    .filter_map(|bw| {
                        Some((r.may(&bw.bone, "weight list")?, bw.weight, bw.pos_weight))
                    })
                    .collect(),
            })
            .collect();
        let mut lods = Vec::new();
        for (lod, reps) in spec.lods.iter().zip(&parts.lod_replacements) {
            let replace_models = reps
                .iter()
                .filter_map(|&(f, t, s)| Some((f?, t?, s)))
                .collect();
            let remove_models = lod
                .remove_models
                .iter()
                .filter_map(|m| {
                    Some((
                        self.find_body_mesh(&parts.pending[..parts.body_meshes], m)?,
                        loc(m.span),
                    ))
                })
                .collect();
            let replace_bones = lod
                .replace_bones
                .iter()
                .filter_map(|(a, b)| {
                    Some((
                        r.may(a, "replacebone")?,
                        r.may(b, "replacebone")?,
                        loc(a.span),
                    ))
                })
                .collect();
            let bone_tree_collapse = lod
                .bone_tree_collapse
                .iter()
                .filter_map(|b| Some((r.may(b, "bonetreecollapse")?, loc(b.span))))
                .collect();
            lods.push(Lod {
                distance: lod.distance.clone(),
                replace_models,
                remove_models,
                replace_materials: lod.replace_materials.clone(),
                remove_meshes: lod.remove_meshes.clone(),
                replace_bones,
                bone_tree_collapse,
                facial: lod.facial,
                use_shadowlod_materials: lod.use_shadowlod_materials,
                span: loc(lod.span),
            });
        }
        // `$ikchain`: the named bone ends the chain; its parent and grandparent are the other
        // links (2006 SDK `simplify.cpp`, `LinkIKChains`, which refuses a chain without them).
        let mut ik_chains = Vec::new();
        for c in &spec.ik_chains {
            let Some(end) = r.must(&c.bone, "$ikchain") else {
                continue;
            };
            let parent = |b: BoneId| bones.get(b.index()).and_then(|m| m.parent);
            let Some((mid, first)) = parent(end).and_then(|m| Some((m, parent(m)?))) else {
                r.diags.push(
                    Diagnostic::new(
                        Code::BuildIkChainShort,
                        format!(
                            "IK chain `{}` ends at bone \"{}\", which has no {}",
                            c.name.value,
                            c.bone.value,
                            if parent(end).is_none() { "parent" } else { "grandparent" }
                        ),
                        loc(c.bone.span),
                        "this bone",
                    )
                    .with_note("an IK chain has three bones: the named one, its parent (knee, elbow) and their parent (hip, shoulder)"),
                );
                continue;
            };
            ik_chains.push(IkChain {
                name: c.name.value.clone(),
                bones: [first, mid, end],
                knee: c.knee,
                height: c.height,
                radius: c.radius,
                floor: c.floor,
                center: c.center,
                span: loc(c.name.span),
            });
        }
        let ik_autoplay_locks = spec
            .ik_autoplay_locks
            .iter()
            .filter_map(|l| {
                match ik_chains
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&l.chain.value))
                {
                    Some(i) => Some((i, l.pos_weight, l.local_q_weight)),
                    // a chain the QC declares but an error above dropped (its bone is
                    // missing or too short): that error is the one to read
                    None if spec
                        .ik_chains
                        .iter()
                        .any(|c| c.name.value.eq_ignore_ascii_case(&l.chain.value)) =>
                    {
                        None
                    }
                    None => {
                        let names: Vec<&str> = ik_chains.iter().map(|c| c.name.as_str()).collect();
                        let mut d = Diagnostic::new(
                            Code::BuildUnknownIkChain,
                            format!("`$ikautoplaylock` names IK chain `{}`, which no `$ikchain` defines", l.chain.value),
                            loc(l.chain.span),
                            "no IK chain of this name",
                        );
                        if let Some(n) = nearest(&l.chain.value, names.iter().copied()) {
                            d = d.with_note(format!("help: did you mean `{n}`?"));
                        }
                        r.diags.push(d);
                        None
                    }
                }
            })
            .collect();
        let resolver_diags = std::mem::take(&mut r.diags);
        self.diags.extend(resolver_diags);

        References {
            ik_chains,
            ik_autoplay_locks,
            attachments,
            hitbox_sets,
            hit_groups,
            controllers,
            mirror_bones,
            always_collapse,
            limit_rotations,
            force_realign,
            screen_align,
            bone_merge,
            root_bone,
            pivots,
            weight_lists,
            lods,
        }
    }
}

pub(super) fn unknown_bone(name: &Spanned<String>, what: &str, bones: &[ModelBone]) -> Diagnostic {
    bone_not_found(
        Code::BuildUnknownBone,
        name,
        what,
        bones.iter().map(|b| b.name.as_str()),
        None,
        Some("the skeleton holds the bones that vertices use, their parents, and bones named by attachments, hit boxes and controllers"),
    )
}

/// "`what` names bone "x", which is not in the skeleton", with `lead` as the first note, then
/// "did you mean" when a bone name is close, else `fallback`.
fn bone_not_found<'n>(
    code: Code,
    name: &Spanned<String>,
    what: &str,
    candidates: impl IntoIterator<Item = &'n str>,
    lead: Option<&str>,
    fallback: Option<&str>,
) -> Diagnostic {
    let mut d = Diagnostic::new(
        code,
        format!(
            "{what} names bone \"{}\", which is not in the skeleton",
            name.value
        ),
        loc(name.span),
        "no bone of this name",
    );
    if let Some(l) = lead {
        d = d.with_note(l);
    }
    match (nearest(&name.value, candidates), fallback) {
        (Some(n), _) => d.with_note(format!("help: did you mean \"{n}\"?")),
        (None, Some(f)) => d.with_note(f),
        (None, None) => d,
    }
}

/// Resolves bone names of commands against the finished skeleton.
struct Resolver<'a> {
    find: &'a dyn Fn(&str) -> Option<BoneId>,
    names: &'a [String],
    diags: Vec<Diagnostic>,
}

impl Resolver<'_> {
    /// A bone the command cannot do without: an error when it is missing.
    pub(super) fn must(&mut self, name: &Spanned<String>, what: &str) -> Option<BoneId> {
        let found = (self.find)(&name.value);
        if found.is_none() {
            let names = self.names.iter().map(String::as_str);
            let fallback = Some("no loaded mesh file has a bone of this name");
            let d = bone_not_found(Code::BuildUnknownBone, name, what, names, None, fallback);
            self.diags.push(d);
        }
        found
    }

    /// A bone the command can do without: a warning, and the item is dropped.
    pub(super) fn may(&mut self, name: &Spanned<String>, what: &str) -> Option<BoneId> {
        let found = (self.find)(&name.value);
        if found.is_none() {
            let names = self.names.iter().map(String::as_str);
            let lead = Some("it is ignored, as in Valve's compilers");
            let d = bone_not_found(Code::BuildUnusedBoneName, name, what, names, lead, None);
            self.diags.push(d);
        }
        found
    }
}
