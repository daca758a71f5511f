//! Materials and skin families (step 5): the global list in order of first use, then
//! `$texrendermode` names, then texture group names; the first texture group becomes the skin
//! table. GoldSrc materials get their BMP textures ([`load_texture`]).

use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic, Sources, Spanned};
use crate::ir::model::*;
use crate::load::bmp::read_bmp;
use crate::load::{find, Fs, Lookup};
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
                            texture: None,
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

/// Finds and reads a GoldSrc material's BMP texture: in each `$cdtexture` folder in order (or,
/// without one, the folder of the file that first names the material), as written and then, for
/// a name without an extension, with `.bmp` added (with a warning: Valve's tool stops there).
pub(super) fn load_texture(
    m: &Material,
    texture_dirs: &[Spanned<PathBuf>],
    fs: &dyn Fs,
    sources: &Sources,
) -> Texture {
    let mut diags = Vec::new();
    let image = find_texture(m, texture_dirs, fs, sources, &mut diags);
    Texture {
        image,
        diagnostics: diags,
    }
}

fn find_texture(
    m: &Material,
    texture_dirs: &[Spanned<PathBuf>],
    fs: &dyn Fs,
    sources: &Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<Image> {
    let rel = m.name.replace('\\', "/");
    let dirs: Vec<PathBuf> = if texture_dirs.is_empty() {
        // Valve's tool looks in `$cd` then; the IR does not keep it, so the folder of the file
        // that first names the texture stands in for it.
        vec![Path::new(sources.name(m.span.file))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()]
    } else {
        texture_dirs.iter().map(|d| d.value.clone()).collect()
    };
    let mut nearest: Option<PathBuf> = None;
    let mut found: Option<PathBuf> = None;
    // A name without an extension (what SMDs made for Source have: material names) is also
    // looked up as `NAME.bmp`, where Valve's tool fails; a warning says so.
    let mut names = vec![rel.clone()];
    if Path::new(&rel).extension().is_none() {
        names.push(format!("{rel}.bmp"));
    }
    'search: for (k, name) in names.iter().enumerate() {
        for d in &dirs {
            match find(fs, &d.join(name)) {
                Lookup::Exact(p) => {
                    found = Some(p);
                }
                Lookup::OtherCase(p) => {
                    diags.push(
                        Diagnostic::new(
                            Code::GsTextureOtherCase,
                            format!("texture `{}` exists only as `{}`", m.name, p.display()),
                            m.span,
                            "the case of this name differs from the file's",
                        )
                        .with_note(format!(
                            "the file `{}` is used; the model only builds as written on a file system that ignores case",
                            p.display()
                        )),
                    );
                    found = Some(p);
                }
                Lookup::Missing { nearest: n } => {
                    if nearest.is_none() {
                        nearest = n;
                    }
                    continue;
                }
            }
            if k > 0 {
                if let Some(p) = &found {
                    diags.push(
                        Diagnostic::new(
                            Code::GsTextureAddedExtension,
                            format!("texture `{}` is read from `{}`", m.name, p.display()),
                            m.span,
                            "a material name without `.bmp`",
                        )
                        .with_note(
                            "Valve's HL1 compiler opens the name as written and stops when there is no such file",
                        )
                        .with_note(format!("help: write `{name}` to build with Valve's tool too")),
                    );
                }
            }
            break 'search;
        }
    }
    let Some(path) = found else {
        let searched: Vec<String> = dirs
            .iter()
            .map(|d| {
                if d.as_os_str().is_empty() {
                    "`.`".to_string()
                } else {
                    format!("`{}`", d.display())
                }
            })
            .collect();
        let mut d = Diagnostic::new(
            Code::GsTextureNotFound,
            format!("texture `{}` not found", m.name),
            m.span,
            "no BMP file of this name",
        )
        .with_note(format!("searched {}", searched.join(", ")));
        if let Some(dir) = texture_dirs.first() {
            d = d.with_secondary(dir.span.span(), "texture folder given here");
        }
        if let Some(n) = nearest {
            d = d.with_note(format!("help: did you mean `{}`?", n.display()));
        }
        diags.push(d);
        return None;
    };
    let is_bmp = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("bmp"));
    if !is_bmp {
        diags.push(
            Diagnostic::new(
                Code::GsTextureNotBmp,
                format!("texture `{}` is not a `.bmp` file", m.name),
                m.span,
                "GoldSrc textures are 8-bit BMP files",
            )
            .with_note(
                "Valve's HL1 compiler reads only `.bmp` textures (\"unknown graphics type\")",
            )
            .with_note("help: convert the image to an 8-bit (256-colour) BMP and name it `….bmp`"),
        );
        return None;
    }
    let bytes = match fs.read(&path) {
        Ok(b) => b,
        Err(e) => {
            diags.push(Diagnostic::new(
                Code::GsBmpUnreadable,
                format!("cannot read texture `{}`: {e}", path.display()),
                m.span,
                "texture named here",
            ));
            return None;
        }
    };
    match read_bmp(&bytes) {
        Ok(b) => Some(b),
        Err(e) => {
            use crate::load::bmp::BmpError as B;
            let (code, help) = match e {
                B::FileHeaderTruncated { .. }
                | B::ReservedNotZero
                | B::InfoHeaderTruncated { .. }
                | B::InfoHeader { .. } => (
                    Code::GsBmpHeader,
                    "save the image again as a Windows BMP (BITMAPINFOHEADER, 40 bytes)",
                ),
                B::BitCount(_) => (
                    Code::GsBmpNot8Bit,
                    "convert the image to 256 colours (8 bits per pixel, indexed)",
                ),
                B::Compressed(_) => (
                    Code::GsBmpCompressed,
                    "save the BMP without RLE compression",
                ),
                B::PaletteTooLarge(_) | B::PaletteTruncated { .. } => (
                    Code::GsBmpPalette,
                    "save the image again with a palette of at most 256 colours",
                ),
                B::Dimensions { .. } | B::PixelRange { .. } | B::PixelsShort { .. } => (
                    Code::GsBmpPixels,
                    "save the image again; the file is truncated or its size fields are wrong",
                ),
            };
            diags.push(
                Diagnostic::new(
                    code,
                    format!("texture `{}` cannot be used: {e}", path.display()),
                    m.span,
                    "texture named here",
                )
                .with_note(format!(
                    "Valve's HL1 compiler stops with \"error {} reading BMP image\"",
                    e.valve_code()
                ))
                .with_note(format!("help: {help}")),
            );
            None
        }
    }
}
