//! Materials and skin families (step 5): the global list in order of first use, then
//! `$texrendermode` names, then texture group names; the first texture group becomes the skin
//! table.

use crate::diag::{Code, Diagnostic, Spanned};
use crate::ir::model::*;
use crate::project::spec::{self, Target};
use crate::suggest::nearest;

use super::{loc, Builder};

impl Builder<'_> {
    pub(super) fn materials_and_skins(&mut self, materials: &mut Vec<Material>) -> SkinTable {
        let target = self.target;
        let find_or_add =
            |materials: &mut Vec<Material>, name: &Spanned<String>| -> (usize, bool) {
                match materials.iter().position(|m| {
                    material_key(target, &m.name) == material_key(target, &name.value)
                }) {
                    Some(k) => (k, false),
                    None => {
                        materials.push(Material {
                            name: name.value.clone(),
                            render_modes: Vec::new(),
                            used: false,
                            span: loc(name.span),
                        });
                        (materials.len() - 1, true)
                    }
                }
            };
        for rm in &self.spec.texture_render_modes {
            let (k, _) = find_or_add(materials, &rm.texture);
            if let Some(m) = materials.get_mut(k) {
                m.render_modes.push(rm.mode.clone());
            }
        }
        let num_ref = materials.len();
        let mut table = SkinTable {
            num_ref,
            families: vec![(0..num_ref as u32).map(MaterialId).collect()],
            span: None,
            groups: Vec::new(),
        };
        let mut warns = Vec::new();
        // Every group names its materials in QC order (GoldSrc: Valve's `Cmd_TextureGroup` runs
        // `lookup_texture` on each, so a later group's new textures are written too); Source
        // keeps the first group only.
        let kept = match target {
            Target::GoldSrc => self.spec.texture_groups.len(),
            Target::Source => 1,
        };
        for g in self.spec.texture_groups.iter().take(kept) {
            let rows = g
                .skins
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|name| MaterialId(find_or_add(materials, name).0 as u32))
                        .collect()
                })
                .collect();
            table.groups.push(TextureGroupRows {
                rows,
                span: loc(g.name.span),
            });
        }
        for g in self.spec.texture_groups.iter().skip(1) {
            let d = Diagnostic::new(
                Code::BuildExtraTextureGroup,
                format!("texture group `{}` makes no skins", g.name.value),
                loc(g.name.span),
                "a second texture group",
            )
            .with_note("only the first texture group makes skins, in both of Valve's compilers");
            warns.push(match target {
                Target::GoldSrc => d.with_note("its textures are still written (loaded from their BMPs, after those named before it), as Valve's HL1 compiler does"),
                Target::Source => d,
            });
        }
        if let Some(g) = self.spec.texture_groups.first() {
            table.span = Some(loc(g.name.span));
            if target == Target::GoldSrc {
                self.texture_group_too_early(g, &mut warns);
            }
            let mut rows: Vec<Vec<usize>> = Vec::new();
            for (ri, row) in g.skins.iter().enumerate() {
                let mut ids = Vec::new();
                for name in row {
                    let (k, _) = find_or_add(materials, name);
                    let used = materials.get(k).is_some_and(|m| m.used);
                    if ri == 0 && !used {
                        let candidates: Vec<&str> = materials
                            .iter()
                            .filter(|m| m.used)
                            .map(|m| m.name.as_str())
                            .collect();
                        let mut d = Diagnostic::new(
                            Code::BuildUnusedGroupMaterial,
                            format!("texture group material `{}` is not used by any mesh", name.value),
                            loc(name.span),
                            "no triangle has this material",
                        )
                        .with_note("the first row of a texture group lists materials of the meshes, which the other rows replace");
                        if let Some(n) = nearest(&name.value, candidates) {
                            d = d.with_note(format!("help: did you mean `{n}`?"));
                        }
                        warns.push(d);
                    }
                    ids.push(k);
                }
                rows.push(ids);
            }
            let width = rows.first().map_or(0, Vec::len);
            for (ri, row) in g.skins.iter().enumerate().skip(1) {
                if row.len() != width {
                    let at = row.first().map_or(loc(g.name.span), |n| loc(n.span));
                    warns.push(
                        Diagnostic::new(
                            Code::BuildTextureGroupRows,
                            format!("skin {ri} of texture group `{}` has {} materials, the first has {width}", g.name.value, row.len()),
                            at,
                            format!("{} materials here", row.len()),
                        )
                        .with_note(match target {
                            Target::GoldSrc => "Valve's HL1 compiler replaces as many positions as the last row has, taking the model's first texture where a row has no material (mdlc does the same)",
                            Target::Source => "materials are replaced position by position; the extra positions are ignored",
                        }),
                    );
                }
            }
            let base = rows.first().cloned().unwrap_or_default();
            table.families = rows
                .iter()
                .map(|row| {
                    let mut fam: Vec<MaterialId> = (0..num_ref as u32).map(MaterialId).collect();
                    for (&from, &to) in base.iter().zip(row) {
                        if let Some(slot) = fam.get_mut(from) {
                            *slot = MaterialId(to as u32);
                        }
                    }
                    fam
                })
                .collect();
            if table.families.is_empty() {
                table.families = vec![(0..num_ref as u32).map(MaterialId).collect()];
            }
        }
        self.diags.extend(warns);
        table
    }

    /// W0411 when the first texture group of a QC comes before every `$body` (and every
    /// `$texrendermode`): Valve's HL1 compiler stops there, as no texture is known yet
    /// ("texturegroups must follow model loading"); mdlc reads the group after the last `$body`
    /// (`formats::goldsrc::texture_order`).
    pub(super) fn texture_group_too_early(
        &self,
        g: &spec::TextureGroup,
        warns: &mut Vec<Diagnostic>,
    ) {
        let (before, after) = self.reads_around(g.name.span, false);
        let key = self.sources.reading_order(loc(g.name.span));
        let mode_before = self
            .spec
            .texture_render_modes
            .iter()
            .any(|rm| self.sources.reading_order(loc(rm.texture.span)) < key);
        if before > 0 || after == 0 || mode_before {
            return;
        }
        warns.push(
            Diagnostic::new(
                Code::BuildTextureGroupFirst,
                format!("texture group `{}` comes before every `$body`", g.name.value),
                loc(g.name.span),
                "no texture is known here yet",
            )
            .with_note("Valve's HL1 compiler stops here (\"texturegroups must follow model loading\"): a texture group replaces the textures the bodies read before it")
            .with_note("mdlc reads the group as if it came after the last `$body`")
            .with_note("help: move `$texturegroup` after the `$body` and `$bodygroup` commands"),
        );
    }
}

/// The key materials are matched by: lower case, `/` separators, and for Source without the
/// extension (Source material names carry none; SMDs often say `skin.bmp`).
pub(super) fn material_key(target: Target, name: &str) -> String {
    let s = name.replace('\\', "/").to_ascii_lowercase();
    match target {
        Target::GoldSrc => s,
        Target::Source => {
            let cut = s.rfind('.').filter(|&i| !s[i..].contains('/'));
            match cut {
                Some(i) => s.get(..i).unwrap_or(&s).to_string(),
                None => s,
            }
        }
    }
}
