//! Writes a [`ProjectSpec`] as `model.toml` text (`mdlc import-qc`).
//!
//! The output follows `docs/project-format.md`: `[model]` first, then the other tables in a
//! fixed order; values equal to their default are left out; paths are written relative to the
//! folder the TOML will live in. [`super::toml::parse_toml`] reads the text back into a spec
//! equal to the one written, except for what TOML does not carry (documented there): the
//! project file's path, a QC-inferred target (written as `target`, read back as given), and the
//! `not_carried` commands, which become comments at the top.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use crate::project::spec::{
    resolve_path, AnimCommand, Animation, BodyOption, FileRef, ProjectSpec, Sequence, Spanned,
    TargetChoice, DEFAULT_FPS, DEFAULT_ROTATION,
};
use crate::project::toml::deg_to_rad;

/// Writes `spec` as model.toml text for a file that will live in `toml_dir`: paths are written
/// relative to it.
pub fn write_toml(spec: &ProjectSpec, toml_dir: &Path) -> String {
    let mut w = Writer {
        out: String::new(),
        dir: toml_dir,
    };
    w.header(spec);
    w.model(spec);
    w.skeleton(spec);
    w.sequence_settings(spec);
    w.texture_groups(spec);
    w.bodies(spec);
    w.lods(spec);
    w.define_bones(spec);
    w.controllers(spec);
    w.attachments(spec);
    w.hitbox_sets(spec);
    w.animations_and_sequences(spec);
    w.pose_parameters(spec);
    w.weight_lists(spec);
    w.ik(spec);
    w.jiggle(spec);
    w.collision(spec);
    w.out
}

struct Writer<'a> {
    out: String,
    dir: &'a Path,
}

// --- values --------------------------------------------------------------------------------

/// A TOML basic string, escaped.
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A block of text (flex data, `$keyvalues`): a multi-line literal string when the text allows
/// it, else a basic string.
fn block(s: &str) -> String {
    let literal_ok = s.contains('\n')
        && !s.contains("'''")
        && !s.ends_with('\'')
        && s.chars()
            .all(|c| c == '\n' || c == '\t' || ((c as u32) >= 0x20 && c as u32 != 0x7f));
    if literal_ok {
        // The newline right after the opening delimiter is not part of the string.
        format!("'''\n{s}'''")
    } else {
        quote(s)
    }
}

/// An `f32` with the fewest digits that read back as the same `f32`.
fn num(x: f32) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}

/// An angle stored in radians, written in degrees: the shortest `f32` spelling of the degrees
/// when it converts back to the same radians (`deg_to_rad`), else the exact `f64` degrees.
fn degrees(r: f32) -> String {
    if !r.is_finite() {
        return num(r);
    }
    let d = f64::from(r).to_degrees();
    let short = format!("{:?}", d as f32);
    if short
        .parse::<f64>()
        .is_ok_and(|s| deg_to_rad(s).to_bits() == r.to_bits())
    {
        return short;
    }
    format!("{d:?}")
}

fn vec(xs: &[f32]) -> String {
    list(xs.iter().map(|&x| num(x)))
}

fn deg_vec(xs: &[f32; 3]) -> String {
    list(xs.iter().map(|&x| degrees(x)))
}

fn strs<'s>(xs: impl IntoIterator<Item = &'s Spanned<String>>) -> String {
    list(xs.into_iter().map(|s| quote(&s.value)))
}

/// An array on one line, or one element per line when it is long.
fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    let len: usize = items.iter().map(|i| i.len() + 2).sum();
    if len <= 80 && !items.iter().any(|i| i.contains('\n')) {
        format!("[{}]", items.join(", "))
    } else {
        let mut o = String::from("[\n");
        for i in items {
            let _ = writeln!(o, "    {i},");
        }
        o.push(']');
        o
    }
}

/// An inline table from `key = value` parts.
fn inline(parts: &[(&str, String)]) -> String {
    let body: Vec<String> = parts.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!("{{ {} }}", body.join(", "))
}

fn pair_list(xs: &[(Spanned<String>, Spanned<String>)], a: &str, b: &str) -> String {
    list(
        xs.iter()
            .map(|(x, y)| inline(&[(a, quote(&x.value)), (b, quote(&y.value))])),
    )
}

fn commands(xs: &[AnimCommand]) -> String {
    list(
        xs.iter()
            .map(|c| strs(std::iter::once(&c.keyword).chain(c.args.iter()))),
    )
}

/// `path` relative to `base` when possible (`..` where needed); otherwise as it is. The result
/// always resolves back to `path` with [`resolve_path`].
fn relative(path: &Path, base: &Path) -> String {
    let as_is = slashes(path);
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let candidate = if b
        .iter()
        .skip(common)
        .all(|c| matches!(c, Component::Normal(_)))
        && path.is_absolute() == base.is_absolute()
    {
        let mut r = PathBuf::new();
        for _ in common..b.len() {
            r.push("..");
        }
        for c in p.iter().skip(common) {
            r.push(c.as_os_str());
        }
        slashes(&r)
    } else {
        as_is.clone()
    };
    if !candidate.is_empty() && resolve_path(base, &candidate) == path {
        candidate
    } else {
        as_is
    }
}

fn slashes(p: &Path) -> String {
    let mut root = String::new();
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Prefix(x) => root.push_str(&x.as_os_str().to_string_lossy()),
            Component::RootDir => root.push('/'),
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    format!("{root}{}", parts.join("/"))
}

// --- sections ------------------------------------------------------------------------------

impl Writer<'_> {
    fn kv(&mut self, key: &str, value: impl AsRef<str>) {
        let _ = writeln!(self.out, "{key} = {}", value.as_ref());
    }

    fn section(&mut self, header: &str) {
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
        let _ = writeln!(self.out, "{header}");
    }

    fn file(&self, f: &FileRef) -> String {
        quote(&relative(&f.path, self.dir))
    }

    fn header(&mut self, spec: &ProjectSpec) {
        let from = spec
            .source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _ = writeln!(
            self.out,
            "# model.toml written by `mdlc import-qc` from `{from}`"
        );
        for n in &spec.not_carried {
            let text = n.value.trim().replace('\r', "").replace('\n', "\n#     ");
            let _ = writeln!(self.out, "# not carried over: {text}");
        }
        self.out.push('\n');
    }

    fn model(&mut self, s: &ProjectSpec) {
        self.section("[model]");
        if let Some(n) = &s.name {
            self.kv("name", quote(&n.value));
        }
        match &s.target {
            TargetChoice::Default(crate::project::Target::Source) => {}
            other => self.kv("target", quote(other.target().as_str())),
        }
        if !s.material_dirs.is_empty() {
            self.kv("materials", strs(&s.material_dirs));
        }
        if !s.texture_dirs.is_empty() {
            let dirs = list(
                s.texture_dirs
                    .iter()
                    .map(|d| quote(&relative(&d.value, self.dir))),
            );
            self.kv("textures", dirs);
        }
        if !s.texture_render_modes.is_empty() {
            let modes = list(s.texture_render_modes.iter().map(|m| {
                inline(&[
                    ("texture", quote(&m.texture.value)),
                    ("mode", quote(&m.mode.value)),
                ])
            }));
            self.kv("texture_render_modes", modes);
        }
        if !s.rename_materials.is_empty() {
            self.kv(
                "rename_materials",
                pair_list(&s.rename_materials, "from", "to"),
            );
        }
        if let Some(g) = &s.gamma {
            self.kv("gamma", num(g.value));
        }
        if s.external_textures {
            self.kv("external_textures", "true");
        }
        if let Some(p) = &s.surface_prop {
            self.kv("surfaceprop", quote(&p.value));
        }
        if !s.contents.is_empty() {
            self.kv("contents", strs(&s.contents));
        }
        if s.static_prop {
            self.kv("static_prop", "true");
        }
        if let Some(p) = &s.eye_position {
            self.kv("eye_position", vec(&p.value));
        }
        if let Some(p) = &s.illum_position {
            self.kv("illum_position", vec(&p.value));
        }
        if let Some(d) = &s.max_eye_deflection {
            self.kv("max_eye_deflection", num(d.value));
        }
        if let Some(b) = &s.bbox {
            self.kv("bbox", list(b.value.iter().map(|v| vec(v))));
        }
        if let Some(b) = &s.cbox {
            self.kv("cbox", list(b.value.iter().map(|v| vec(v))));
        }
        if let Some(f) = &s.flags {
            self.kv("flags", f.value.to_string());
        }
        if !s.header_flags.is_empty() {
            self.kv("header_flags", strs(&s.header_flags));
        }
        if !s.include_models.is_empty() {
            self.kv("include_models", strs(&s.include_models));
        }
        if let Some(k) = &s.keyvalues {
            self.kv("keyvalues", block(&k.value));
        }
    }

    fn skeleton(&mut self, s: &ProjectSpec) {
        let any = s.root_bone.is_some()
            || !s.hierarchy.is_empty()
            || !s.joint_surface_props.is_empty()
            || !s.rename_bones.is_empty()
            || !s.mirror_bones.is_empty()
            || !s.always_collapse.is_empty()
            || s.collapse_bones
            || s.lock_bone_lengths
            || s.realign_bones
            || !s.screen_align.is_empty()
            || !s.force_realign.is_empty()
            || !s.bone_merge.is_empty()
            || !s.procedural_bones.is_empty()
            || !s.limit_rotations.is_empty()
            || !s.pivots.is_empty()
            || !s.hit_groups.is_empty();
        if !any {
            return;
        }
        self.section("[skeleton]");
        if let Some(r) = &s.root_bone {
            self.kv("root", quote(&r.value));
        }
        if !s.hierarchy.is_empty() {
            self.kv("hierarchy", pair_list(&s.hierarchy, "bone", "parent"));
        }
        if !s.joint_surface_props.is_empty() {
            self.kv(
                "surfaceprops",
                pair_list(&s.joint_surface_props, "bone", "surfaceprop"),
            );
        }
        if !s.rename_bones.is_empty() {
            self.kv("rename_bones", pair_list(&s.rename_bones, "from", "to"));
        }
        if !s.mirror_bones.is_empty() {
            self.kv("mirror_bones", strs(&s.mirror_bones));
        }
        if !s.always_collapse.is_empty() {
            self.kv("always_collapse", strs(&s.always_collapse));
        }
        if s.collapse_bones {
            self.kv("collapse_bones", "true");
        }
        if s.lock_bone_lengths {
            self.kv("lock_bone_lengths", "true");
        }
        if s.realign_bones {
            self.kv("realign_bones", "true");
        }
        if !s.screen_align.is_empty() {
            let v = list(s.screen_align.iter().map(|(b, cyl)| {
                let mut kv = vec![("bone", quote(&b.value))];
                if *cyl {
                    kv.push(("mode", quote("cylinder")));
                }
                inline(&kv)
            }));
            self.kv("screen_align", v);
        }
        if !s.force_realign.is_empty() {
            let v = list(
                s.force_realign
                    .iter()
                    .map(|(b, r)| inline(&[("bone", quote(&b.value)), ("rotation", vec(r))])),
            );
            self.kv("force_realign", v);
        }
        if !s.bone_merge.is_empty() {
            self.kv("bone_merge", strs(&s.bone_merge));
        }
        if !s.limit_rotations.is_empty() {
            let v = list(s.limit_rotations.iter().map(|(b, seqs)| {
                let mut kv = vec![("bone", quote(&b.value))];
                if !seqs.is_empty() {
                    kv.push(("sequences", strs(seqs)));
                }
                inline(&kv)
            }));
            self.kv("limit_rotation", v);
        }
        if !s.procedural_bones.is_empty() {
            let files: Vec<String> = s.procedural_bones.iter().map(|f| self.file(f)).collect();
            self.kv("procedural_bones", format!("[{}]", files.join(", ")));
        }
        if !s.pivots.is_empty() {
            let v = list(s.pivots.iter().map(|(i, b)| {
                inline(&[("index", i.value.to_string()), ("bone", quote(&b.value))])
            }));
            self.kv("pivots", v);
        }
        if !s.hit_groups.is_empty() {
            let v = list(s.hit_groups.iter().map(|(g, b)| {
                inline(&[("group", g.value.to_string()), ("bone", quote(&b.value))])
            }));
            self.kv("hit_groups", v);
        }
    }

    fn sequence_settings(&mut self, s: &ProjectSpec) {
        let any = !s.sequence_groups.is_empty()
            || s.sequence_group_size.is_some()
            || !s.skip_transitions.is_empty()
            || s.section_frames.is_some()
            || s.anim_block_size.is_some()
            || !s.bone_save_frames.is_empty();
        if !any {
            return;
        }
        self.section("[sequence_settings]");
        if !s.sequence_groups.is_empty() {
            self.kv("groups", strs(&s.sequence_groups));
        }
        if let Some(g) = &s.sequence_group_size {
            self.kv("group_size_kb", g.value.to_string());
        }
        if !s.skip_transitions.is_empty() {
            self.kv(
                "skip_transitions",
                list(s.skip_transitions.iter().map(strs)),
            );
        }
        if let Some(f) = &s.section_frames {
            let (a, b) = f.value;
            self.kv(
                "section_frames",
                inline(&[("frames", a.to_string()), ("min_frames", b.to_string())]),
            );
        }
        if let Some(n) = &s.anim_block_size {
            self.kv("anim_block_size", n.value.to_string());
        }
        if !s.bone_save_frames.is_empty() {
            let v = list(s.bone_save_frames.iter().map(|f| {
                inline(&[
                    ("bone", quote(&f.bone.value)),
                    ("position", f.position.to_string()),
                    ("rotation", f.rotation.to_string()),
                ])
            }));
            self.kv("bone_save_frames", v);
        }
    }

    fn texture_groups(&mut self, s: &ProjectSpec) {
        for g in &s.texture_groups {
            self.section("[[texture_group]]");
            self.kv("name", quote(&g.name.value));
            let rows = list(g.skins.iter().map(strs));
            self.kv("skins", rows);
        }
    }

    fn bodies(&mut self, s: &ProjectSpec) {
        for b in &s.body_parts {
            self.section("[[body]]");
            self.kv("name", quote(&b.name.value));
            let options = list(b.options.iter().map(|o| match o {
                BodyOption::Blank(_) => quote("blank"),
                BodyOption::Model(m) => {
                    let file = self.file(&m.file);
                    let default_name = relative(&m.file.path, self.dir);
                    let plain = m.name == default_name
                        && !m.reverse
                        && m.scale == 1.0
                        && m.origin_offset == [0.0; 3]
                        && m.flex_block.is_none()
                        && file != quote("blank");
                    if plain {
                        file
                    } else {
                        let mut parts = vec![("file", file)];
                        if m.name != default_name {
                            parts.push(("name", quote(&m.name)));
                        }
                        if m.reverse {
                            parts.push(("reverse", "true".into()));
                        }
                        if m.scale != 1.0 {
                            parts.push(("scale", num(m.scale)));
                        }
                        if m.origin_offset != [0.0; 3] {
                            parts.push(("origin_offset", vec(&m.origin_offset)));
                        }
                        if let Some(f) = &m.flex_block {
                            parts.push(("flex", block(&f.value)));
                        }
                        // the face's VTA names are relative to the QC's folder
                        if let Some(face) = m.face.as_ref().filter(|f| f.base != self.dir) {
                            parts.push(("flex_dir", quote(&relative(&face.base, self.dir))));
                        }
                        inline(&parts)
                    }
                }
            }));
            self.kv("options", options);
        }
    }

    fn lods(&mut self, s: &ProjectSpec) {
        for l in &s.lods {
            self.section("[[lod]]");
            match &l.distance {
                Some(d) => self.kv("distance", num(d.value)),
                None => self.kv("shadow", "true"),
            }
            if !l.replace_models.is_empty() {
                let v = list(l.replace_models.iter().map(|r| {
                    let mut parts = vec![("from", quote(&r.from.value)), ("to", self.file(&r.to))];
                    if r.name != relative(&r.to.path, self.dir) {
                        parts.push(("name", quote(&r.name)));
                    }
                    if r.reverse {
                        parts.push(("reverse", "true".into()));
                    }
                    if r.scale != 1.0 {
                        parts.push(("scale", num(r.scale)));
                    }
                    inline(&parts)
                }));
                self.kv("replace_models", v);
            }
            if !l.remove_models.is_empty() {
                self.kv("remove_models", strs(&l.remove_models));
            }
            if !l.replace_materials.is_empty() {
                self.kv(
                    "replace_materials",
                    pair_list(&l.replace_materials, "from", "to"),
                );
            }
            if !l.remove_meshes.is_empty() {
                self.kv("remove_meshes", strs(&l.remove_meshes));
            }
            if !l.replace_bones.is_empty() {
                self.kv("replace_bones", pair_list(&l.replace_bones, "from", "to"));
            }
            if !l.bone_tree_collapse.is_empty() {
                self.kv("bone_tree_collapse", strs(&l.bone_tree_collapse));
            }
            if let Some(f) = l.facial {
                self.kv("facial", f.to_string());
            }
            if l.use_shadowlod_materials {
                self.kv("use_shadowlod_materials", "true");
            }
        }
    }

    fn define_bones(&mut self, s: &ProjectSpec) {
        for b in &s.define_bones {
            self.section("[[define_bone]]");
            self.kv("name", quote(&b.name.value));
            if let Some(p) = &b.parent {
                self.kv("parent", quote(&p.value));
            }
            self.kv("position", vec(&b.position));
            self.kv("rotation", vec(&b.rotation_deg));
            if let Some((p, r)) = &b.fixup {
                self.kv(
                    "fixup",
                    inline(&[("position", vec(p)), ("rotation", vec(r))]),
                );
            }
        }
    }

    fn controllers(&mut self, s: &ProjectSpec) {
        for c in &s.controllers {
            self.section("[[controller]]");
            self.kv("index", c.index.value.to_string());
            self.kv("bone", quote(&c.bone.value));
            self.kv("axis", quote(&c.axis.value));
            self.kv("start", num(c.start));
            self.kv("end", num(c.end));
        }
    }

    fn attachments(&mut self, s: &ProjectSpec) {
        for a in &s.attachments {
            self.section("[[attachment]]");
            self.kv("name", quote(&a.name.value));
            self.kv("bone", quote(&a.bone.value));
            self.kv("position", vec(&a.position));
            if !a.flags.is_empty() {
                self.kv("flags", strs(&a.flags));
            }
            if let Some(r) = &a.rotate_deg {
                self.kv("rotate", vec(r));
            }
            if let Some(x) = &a.x_and_z_axes {
                self.kv("x_and_z_axes", vec(x));
            }
        }
    }

    fn hitbox_sets(&mut self, s: &ProjectSpec) {
        for set in &s.hitbox_sets {
            self.section("[[hitbox_set]]");
            self.kv("name", quote(&set.name.value));
            let boxes = list(set.boxes.iter().map(|b| {
                let mut parts = vec![
                    ("group", b.group.to_string()),
                    ("bone", quote(&b.bone.value)),
                    ("min", vec(&b.min)),
                    ("max", vec(&b.max)),
                ];
                if let Some(n) = &b.name {
                    parts.push(("name", quote(&n.value)));
                }
                inline(&parts)
            }));
            self.kv("boxes", boxes);
        }
    }

    /// The keys of an animation (after `name` and `file`), with `flags_key` for its flags.
    fn animation_keys(&mut self, a: &Animation, flags_key: &str) {
        if a.fps != DEFAULT_FPS {
            self.kv("fps", num(a.fps));
        }
        if a.looping {
            self.kv("loop", "true");
        }
        if let Some((x, y)) = a.frames {
            self.kv("frames", format!("[{x}, {y}]"));
        }
        if a.origin != [0.0; 3] {
            self.kv("origin", vec(&a.origin));
        }
        if a.rotation != DEFAULT_ROTATION {
            self.kv("rotation", deg_vec(&a.rotation));
        }
        if a.scale != 1.0 {
            self.kv("scale", num(a.scale));
        }
        if !a.motion.is_empty() {
            self.kv("motion", strs(&a.motion));
        }
        if let Some(n) = a.start_loop {
            self.kv("start_loop", n.to_string());
        }
        if !a.flags.is_empty() {
            self.kv(flags_key, strs(&a.flags));
        }
        if !a.commands.is_empty() {
            self.kv("commands", commands(&a.commands));
        }
    }

    fn animations_and_sequences(&mut self, s: &ProjectSpec) {
        // Which animations can be written as the `file` of their sequence: `@<name>` played by
        // that sequence alone, the name unique, and the order of `animations` kept (the reader
        // orders animations by the position of their tables).
        let mut inlined: Vec<Option<usize>> = vec![None; s.animations.len()];
        let mut taken = vec![false; s.sequences.len()];
        let mut last_seq: Option<usize> = None;
        for (i, a) in s.animations.iter().enumerate() {
            let unique = s
                .animations
                .iter()
                .filter(|b| b.name.value == a.name.value)
                .count()
                == 1;
            if !unique {
                continue;
            }
            let found = s.sequences.iter().enumerate().position(|(k, q)| {
                !taken[k]
                    && format!("@{}", q.name.value) == a.name.value
                    && q.animations.len() == 1
                    && q.animations
                        .first()
                        .is_some_and(|n| n.value == a.name.value)
            });
            if let Some(k) = found {
                if last_seq.is_none_or(|l| k > l) {
                    inlined[i] = Some(k);
                    taken[k] = true;
                    last_seq = Some(k);
                }
            }
        }
        let mut next_seq = 0;
        for (i, a) in s.animations.iter().enumerate() {
            match inlined[i] {
                Some(k) => {
                    while next_seq < k {
                        if let Some(q) = s.sequences.get(next_seq) {
                            self.sequence(q, None);
                        }
                        next_seq += 1;
                    }
                    if let Some(q) = s.sequences.get(k) {
                        self.sequence(q, Some(a));
                    }
                    next_seq = k + 1;
                }
                None => {
                    self.section("[[animation]]");
                    self.kv("name", quote(&a.name.value));
                    let f = self.file(&a.file);
                    self.kv("file", f);
                    self.animation_keys(a, "flags");
                }
            }
        }
        while let Some(q) = s.sequences.get(next_seq) {
            self.sequence(q, None);
            next_seq += 1;
        }
    }

    fn sequence(&mut self, q: &Sequence, implied: Option<&Animation>) {
        self.section("[[sequence]]");
        self.kv("name", quote(&q.name.value));
        match implied {
            Some(a) => {
                let f = self.file(&a.file);
                self.kv("file", f);
                self.animation_keys(a, "animation_flags");
            }
            None => self.kv("animations", strs(&q.animations)),
        }
        if let Some(act) = &q.activity {
            self.kv("activity", quote(&act.name.value));
            if act.weight != 1 {
                self.kv("activity_weight", act.weight.to_string());
            }
        }
        if let Some(b) = &q.blend_width {
            self.kv("blend_width", b.value.to_string());
        }
        if !q.blends.is_empty() {
            let v = list(q.blends.iter().map(|b| {
                inline(&[
                    ("param", quote(&b.param.value)),
                    ("min", num(b.min)),
                    ("max", num(b.max)),
                ])
            }));
            self.kv("blends", v);
        }
        if !q.events.is_empty() {
            let v = list(q.events.iter().map(|e| {
                let id = match e.id.value.parse::<i64>() {
                    Ok(n) if n.to_string() == e.id.value => n.to_string(),
                    _ => quote(&e.id.value),
                };
                let mut parts = vec![("frame", e.frame.to_string()), ("event", id)];
                if let Some(o) = &e.options {
                    parts.push(("options", quote(o)));
                }
                inline(&parts)
            }));
            self.kv("events", v);
        }
        if !q.pivots.is_empty() {
            let v = list(
                q.pivots
                    .iter()
                    .map(|p| format!("[{}, {}, {}]", p[0], p[1], p[2])),
            );
            self.kv("pivots", v);
        }
        if let Some(n) = &q.node {
            self.kv("node", quote(&n.value));
        }
        if let Some(t) = &q.transition {
            let mut parts = vec![
                ("entry", quote(&t.entry.value)),
                ("exit", quote(&t.exit.value)),
            ];
            if t.reversible {
                parts.push(("reversible", "true".into()));
            }
            self.kv("transition", inline(&parts));
        }
        if let Some(x) = q.fade_in {
            self.kv("fade_in", num(x));
        }
        if let Some(x) = q.fade_out {
            self.kv("fade_out", num(x));
        }
        if let Some(x) = q.exit_phase {
            self.kv("exit_phase", num(x));
        }
        if !q.flags.is_empty() {
            self.kv("flags", strs(&q.flags));
        }
        if !q.extras.is_empty() {
            self.kv("extras", commands(&q.extras));
        }
        if q.group != 0 {
            self.kv("group", q.group.to_string());
        }
    }

    fn ik(&mut self, s: &ProjectSpec) {
        for c in &s.ik_chains {
            self.section("[[ik_chain]]");
            self.kv("name", quote(&c.name.value));
            self.kv("bone", quote(&c.bone.value));
            if c.knee != [0.0; 3] {
                self.kv("knee", vec(&c.knee));
            }
            if c.height != 18.0 {
                self.kv("height", num(c.height));
            }
            if c.radius != 0.0 {
                self.kv("pad", num(c.radius * 2.0));
            }
            if c.floor != 0.0 {
                self.kv("floor", num(c.floor));
            }
            if c.center != [0.0; 3] {
                self.kv("center", vec(&c.center));
            }
        }
        for l in &s.ik_autoplay_locks {
            self.section("[[ik_autoplay_lock]]");
            self.kv("chain", quote(&l.chain.value));
            self.kv("pos_weight", num(l.pos_weight));
            self.kv("local_q_weight", num(l.local_q_weight));
        }
    }

    /// `[[jiggle_bone]]`: each group one inline table (the spec holds one group per kind, each
    /// property once: `JiggleBone::new`).
    fn jiggle(&mut self, s: &ProjectSpec) {
        for j in &s.jiggle_bones {
            self.section("[[jiggle_bone]]");
            self.kv("bone", quote(&j.bone.value));
            for g in &j.groups {
                let items: Vec<String> = g
                    .props
                    .iter()
                    .map(|p| {
                        let v = match p.values.as_slice() {
                            [] => "true".to_string(),
                            [x] => num(*x),
                            xs => format!(
                                "[{}]",
                                xs.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ")
                            ),
                        };
                        format!("{} = {v}", p.name.value)
                    })
                    .collect();
                self.kv(g.kind.value.word(), format!("{{ {} }}", items.join(", ")));
            }
        }
    }

    fn pose_parameters(&mut self, s: &ProjectSpec) {
        for p in &s.pose_parameters {
            self.section("[[pose_parameter]]");
            self.kv("name", quote(&p.name.value));
            self.kv("min", num(p.min));
            self.kv("max", num(p.max));
            if p.wrap {
                self.kv("wrap", "true");
            }
            if let Some(l) = p.loop_range {
                self.kv("loop", num(l));
            }
            if p.widened_from > 0 {
                self.kv("widened_from", p.widened_from.to_string());
            }
        }
    }

    fn weight_lists(&mut self, s: &ProjectSpec) {
        for l in &s.weight_lists {
            self.section("[[weight_list]]");
            self.kv("name", quote(&l.name.value));
            let v = list(l.weights.iter().map(|b| {
                let mut parts = vec![("bone", quote(&b.bone.value)), ("weight", num(b.weight))];
                if let Some(p) = b.pos_weight {
                    parts.push(("pos_weight", num(p)));
                }
                inline(&parts)
            }));
            self.kv("weights", v);
        }
    }

    fn collision(&mut self, s: &ProjectSpec) {
        if let Some(c) = &s.collision {
            self.section("[collision]");
            let f = self.file(&c.file);
            self.kv("file", f);
            if c.joints {
                self.kv("joints", "true");
            }
            if c.scale != 1.0 {
                self.kv("scale", num(c.scale));
            }
            if !c.commands.is_empty() {
                self.kv("commands", commands(&c.commands));
            }
            if !s.collision_text.is_empty() {
                self.kv("text", quote(&s.collision_text));
            }
        }
    }
}
