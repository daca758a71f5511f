//! `$proceduralbones file` (Source): helper bones the engine poses from other bones, read as
//! the 2006 SDK's compiler reads them (alliedmodders/hl2sdk, branch episode1,
//! `utils/studiomdl/studiomdl.cpp`: `Load_ProceduralBones`, `Grab_QuatInterpBones`,
//! `Grab_AimAtBones`, `Grab_AxisInterpBones`; `simplify.cpp`: `TagProceduralBones`,
//! `RemapProceduralBones`).
//!
//! A `.vrd` file holds, one per line:
//! - `<helper> bone parent controlparent control`: a quaternion-interpolated bone
//!   (`mstudioquatinterpbone_t`), followed by `<display> sx sy sz distance` (the control bone's
//!   rest offset times `distance`/100 is added to every trigger's position), `<basepos> x y z`
//!   and `<trigger> tolerance tx ty tz ax ay az px py pz` lines (degrees: the control bone's
//!   local rotation that fully triggers, the helper's rotation and, added to `basepos`, its
//!   position then);
//! - `<aimconstraint> bone parent aim` with `<aimvector>`, `<upvector>` (made unit length) and
//!   `<basepos>` lines: a bone that turns to aim at an attachment or bone (`mstudioaimatbone_t`).
//!
//! Any other file is the older axis-interpolation text (`version 1`, `proceduralbones`, then
//! `bone "name" "…" "control" "…" axis`, `basepos x y z` and `axis n px py pz a b c` lines until
//! `end`; `mstudioaxisinterpbone_t`).
//!
//! Bone names are found as written or, as Valve's compiler finds them, as the part of a model
//! bone's name after its last `.` (`Bip01_L_Elbow` is `ValveBiped.Bip01_L_Elbow`). A missing file
//! is skipped with `W0414`, as Valve's compiler skips it silently; a rule whose own bone is not
//! in the model is dropped with `W0415` (Valve's compiler prints "… unused").

use crate::diag::{Code, Diagnostic, FileId, FileSpan, Span};
use crate::ir::anim::euler_quat;
use crate::ir::model::{AimTarget, ModelBone, ProcBone, ProcRule, QuatTrigger};
use crate::ir::BoneId;
use crate::load::fs::{find, Lookup};
use crate::project::spec::FileRef;

use super::{loc, Builder};

/// A rule as the file says it, names unresolved.
enum Raw {
    Quat {
        names: [(String, FileSpan); 4],
        percentage: f32,
        triggers: Vec<QuatTrigger>,
    },
    Aim {
        names: [(String, FileSpan); 3],
        aim_vector: [f32; 3],
        up_vector: [f32; 3],
        base_pos: [f32; 3],
    },
    Axis {
        names: [(String, FileSpan); 2],
        axis: i32,
        pos: [[f32; 3]; 6],
        quat: [[f32; 4]; 6],
    },
}

/// The words of a line with their byte ranges in the file.
fn words(line: &str, at: usize) -> Vec<(&str, Span)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line
        .char_indices()
        .chain(std::iter::once((line.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((&line[s..i], Span::new((at + s) as u32, (at + i) as u32)));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

/// The lines of a file that are not blank: where each starts, where its last word ends, its
/// text and its words.
fn lines(text: &str) -> impl Iterator<Item = (usize, usize, &str, Vec<(&str, Span)>)> {
    let mut at = 0usize;
    text.split_inclusive('\n').filter_map(move |line| {
        let start = at;
        at += line.len();
        let w = words(line, start);
        let end = w.last().map_or(start, |l| l.1.end as usize);
        (!w.is_empty()).then_some((start, end, line, w))
    })
}

fn numbers(w: &[(&str, Span)], from: usize, n: usize) -> Option<Vec<f32>> {
    let v: Vec<f32> = w
        .get(from..from + n)?
        .iter()
        .map(|(t, _)| t.parse::<f32>().ok().filter(|x| x.is_finite()))
        .collect::<Option<_>>()?;
    Some(v)
}

fn deg(v: [f32; 3]) -> [f32; 3] {
    v.map(f32::to_radians)
}

fn unit(v: [f32; 3]) -> [f32; 3] {
    let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if l > 0.0 {
        v.map(|c| c / l)
    } else {
        v
    }
}

fn syntax(file: FileId, span: Span, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::BuildProceduralSyntax,
        format!("cannot read this procedural bone line: {what}"),
        FileSpan { file, span },
        "here",
    )
    .with_note("Valve's compiler stops here too (\"Unable to parse procedural bone data\")")
}

/// The rules of a `.vrd` file (`Grab_QuatInterpBones`, `Grab_AimAtBones`).
fn read_vrd(text: &str, file: FileId, diags: &mut Vec<Diagnostic>) -> Vec<Raw> {
    let mut out: Vec<Raw> = Vec::new();
    let mut base = [0.0f32; 3];
    // what `<basepos>`, `<display>`, `<trigger>`, `<aimvector>`… lines belong to
    let mut current: Option<usize> = None;
    for (_, end, _, w) in lines(text) {
        let (cmd, cmd_span) = w[0];
        let fs = |s: Span| FileSpan { file, span: s };
        let lower = cmd.to_ascii_lowercase();
        if lower == "end" {
            break;
        }
        let bad = |what: &str, diags: &mut Vec<Diagnostic>| {
            diags.push(syntax(file, Span::new(cmd_span.start, end as u32), what));
        };
        match lower.as_str() {
            "<helper>" if w.len() >= 5 => {
                let n = |k: usize| (w[k].0.to_string(), fs(w[k].1));
                out.push(Raw::Quat {
                    names: [n(1), n(2), n(3), n(4)],
                    percentage: 0.0,
                    triggers: Vec::new(),
                });
                current = Some(out.len() - 1);
            }
            "<aimconstraint>" if w.len() >= 4 => {
                let n = |k: usize| (w[k].0.to_string(), fs(w[k].1));
                out.push(Raw::Aim {
                    names: [n(1), n(2), n(3)],
                    aim_vector: [0.0; 3],
                    up_vector: [0.0; 3],
                    base_pos: [0.0; 3],
                });
                current = Some(out.len() - 1);
            }
            "<display>" => match (numbers(&w, 1, 4), current.and_then(|c| out.get_mut(c))) {
                (Some(v), Some(Raw::Quat { percentage, .. })) => *percentage = v[3] / 100.0,
                (Some(_), _) => bad("`<display>` outside a `<helper>`", diags),
                (None, _) => bad("`<display>` takes three sizes and a distance", diags),
            },
            "<basepos>" => match (numbers(&w, 1, 3), current.and_then(|c| out.get_mut(c))) {
                (Some(v), Some(Raw::Aim { base_pos, .. })) => *base_pos = [v[0], v[1], v[2]],
                (Some(v), _) => base = [v[0], v[1], v[2]],
                (None, _) => bad("`<basepos>` takes three numbers", diags),
            },
            "<aimvector>" | "<upvector>" => {
                match (numbers(&w, 1, 3), current.and_then(|c| out.get_mut(c))) {
                    (
                        Some(v),
                        Some(Raw::Aim {
                            aim_vector,
                            up_vector,
                            ..
                        }),
                    ) => {
                        let v = unit([v[0], v[1], v[2]]);
                        if lower == "<aimvector>" {
                            *aim_vector = v;
                        } else {
                            *up_vector = v;
                        }
                    }
                    (Some(_), _) => bad("outside an `<aimconstraint>`", diags),
                    (None, _) => bad("takes three numbers", diags),
                }
            }
            "<trigger>" => match (numbers(&w, 1, 10), current.and_then(|c| out.get_mut(c))) {
                (Some(v), Some(Raw::Quat { triggers, .. })) => triggers.push(QuatTrigger {
                    tolerance: v[0].to_radians(),
                    trigger: euler_quat(deg([v[1], v[2], v[3]])),
                    quat: euler_quat(deg([v[4], v[5], v[6]])),
                    pos: [base[0] + v[7], base[1] + v[8], base[2] + v[9]],
                }),
                (Some(_), _) => bad("`<trigger>` outside a `<helper>`", diags),
                (None, _) => bad(
                    "`<trigger>` takes a tolerance, three trigger angles, three angles and a position",
                    diags,
                ),
            },
            _ => bad("not `<helper>`, `<display>`, `<basepos>`, `<trigger>`, `<aimconstraint>`, `<aimvector>` or `<upvector>`", diags),
        }
    }
    out
}

/// The rules of an axis-interpolation file (`Grab_AxisInterpBones`).
fn read_axis(text: &str, file: FileId, diags: &mut Vec<Diagnostic>) -> Vec<Raw> {
    let mut out: Vec<Raw> = Vec::new();
    let mut base = [0.0f32; 3];
    let mut in_block = false;
    for (start, _, line, w) in lines(text) {
        let (cmd, cmd_span) = w[0];
        let lower = cmd.to_ascii_lowercase();
        if !in_block {
            match lower.as_str() {
                "proceduralbones" => in_block = true,
                "version" if w.get(1).is_some_and(|v| v.0 != "1") => diags.push(syntax(
                    file,
                    cmd_span,
                    "only version 1 is known (Valve's compiler: \"bad version\")",
                )),
                _ => {}
            }
            continue;
        }
        match lower.as_str() {
            "end" => in_block = false,
            "bone" => {
                // `bone "name" "…" "control" "…" axis` (MAX numbers the axes 1..3)
                let quoted: Vec<(String, FileSpan)> = quoted_words(line, start, file);
                let axis = line
                    .rsplit('"')
                    .next()
                    .and_then(|t| t.trim().parse::<i32>().ok());
                match (quoted.len() >= 4, axis) {
                    (true, Some(axis)) => out.push(Raw::Axis {
                        names: [quoted[0].clone(), quoted[2].clone()],
                        axis: axis.saturating_sub(1),
                        pos: [[0.0; 3]; 6],
                        quat: [[0.0; 4]; 6],
                    }),
                    _ => diags.push(syntax(
                        file,
                        cmd_span,
                        "`bone` takes four quoted names and an axis",
                    )),
                }
            }
            "display" | "type" => {}
            "basepos" => match numbers(&w, 1, 3) {
                Some(v) => base = [v[0], v[1], v[2]],
                None => diags.push(syntax(file, cmd_span, "`basepos` takes three numbers")),
            },
            "axis" => {
                let j = w.get(1).and_then(|t| t.0.parse::<usize>().ok());
                match (j, numbers(&w, 2, 6), out.last_mut()) {
                    (Some(j), Some(v), Some(Raw::Axis { pos, quat, .. })) if j < 6 => {
                        pos[j] = [base[0] + v[0], base[1] + v[1], base[2] + v[2]];
                        // `axis n px py pz a b c`: a is the roll, b the pitch, c the yaw
                        quat[j] = euler_quat(deg([v[3], v[4], v[5]]));
                    }
                    _ => diags.push(syntax(
                        file,
                        cmd_span,
                        "`axis` takes an index 0..5, a position and three angles, after a `bone`",
                    )),
                }
            }
            _ => {}
        }
    }
    out
}

/// The `"…"` parts of a line with their spans.
fn quoted_words(line: &str, at: usize, file: FileId) -> Vec<(String, FileSpan)> {
    let mut out = Vec::new();
    let mut rest = line;
    let mut off = 0;
    while let Some(a) = rest.find('"') {
        let Some(b) = rest[a + 1..].find('"') else {
            break;
        };
        let s = at + off + a + 1;
        out.push((
            rest[a + 1..a + 1 + b].to_string(),
            FileSpan {
                file,
                span: Span::new(s as u32, (s + b) as u32),
            },
        ));
        off += a + b + 2;
        rest = &rest[a + b + 2..];
    }
    out
}

/// A model bone by a procedural file's name: as written (without regard to case), or as the
/// part after the last `.` of its name (`IsGlobalBoneXSI`).
pub(super) fn find_bone(bones: &[ModelBone], name: &str) -> Option<BoneId> {
    let exact = bones.iter().position(|b| b.name.eq_ignore_ascii_case(name));
    let xsi = || {
        bones.iter().position(|b| {
            b.name.len() > name.len() + 1
                && b.name.as_bytes()[b.name.len() - name.len() - 1] == b'.'
                && b.name[b.name.len() - name.len()..].eq_ignore_ascii_case(name)
        })
    };
    exact.or_else(xsi).map(|i| BoneId(i as u32))
}

impl Builder<'_> {
    /// Reads every `$proceduralbones` file and resolves its rules against the skeleton.
    pub(super) fn procedural_bones(
        &mut self,
        bones: &[ModelBone],
        attachments: &[String],
    ) -> Vec<ProcBone> {
        let mut out = Vec::new();
        for fr in &self.spec.procedural_bones {
            let Some((file, raws)) = self.read_procedural(fr) else {
                continue;
            };
            for raw in raws {
                if let Some(p) = self.resolve_procedural(raw, bones, attachments, file) {
                    // a second rule for a bone replaces the first (Valve's compiler writes
                    // both, and the bone points at the one written last)
                    out.retain(|o: &ProcBone| o.bone != p.bone);
                    out.push(p);
                }
            }
        }
        out
    }

    fn read_procedural(&mut self, fr: &FileRef) -> Option<(FileId, Vec<Raw>)> {
        let fs = self.loader.fs();
        let found = match find(fs, &fr.path) {
            Lookup::Exact(p) | Lookup::OtherCase(p) => p,
            Lookup::Missing { .. } => {
                self.push(
                    Diagnostic::new(
                        Code::BuildProceduralMissing,
                        format!("procedural bones file `{}` not found; the model is built without it", fr.written),
                        loc(fr.span),
                        format!("no file at `{}`", fr.path.display()),
                    )
                    .with_note("Valve's compiler skips a missing `$proceduralbones` file without a word; mdlc does the same, with this warning"),
                );
                return None;
            }
        };
        let bytes = match fs.read(&found) {
            Ok(b) => b,
            Err(e) => {
                self.push(Diagnostic::unreadable_at(
                    &found,
                    e,
                    loc(fr.span),
                    "named here",
                ));
                return None;
            }
        };
        let (id, ok) = crate::load::text::add_text(
            self.sources,
            &found.display().to_string(),
            bytes,
            self.diags,
        );
        if !ok {
            return None;
        }
        let text = self.sources.text(id).to_string();
        let vrd = found
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("vrd"));
        let raws = if vrd {
            read_vrd(&text, id, self.diags)
        } else {
            read_axis(&text, id, self.diags)
        };
        Some((id, raws))
    }

    fn resolve_procedural(
        &mut self,
        raw: Raw,
        bones: &[ModelBone],
        attachments: &[String],
        _file: FileId,
    ) -> Option<ProcBone> {
        let (own, span) = match &raw {
            Raw::Quat { names, .. } => names[0].clone(),
            Raw::Aim { names, .. } => names[0].clone(),
            Raw::Axis { names, .. } => names[0].clone(),
        };
        let Some(bone) = find_bone(bones, &own) else {
            self.push(
                Diagnostic::new(
                    Code::BuildProceduralUnused,
                    format!("procedural bone `{own}` is not in the model; its rule is dropped"),
                    span,
                    "no bone of this name",
                )
                .with_note("Valve's compiler drops it the same way (\"… unused\")"),
            );
            return None;
        };
        let mut ok = true;
        let mut need = |name: &(String, FileSpan), what: &str, this: &mut Self| -> Option<BoneId> {
            let b = find_bone(bones, &name.0);
            if b.is_none() {
                ok = false;
                let mut d = Diagnostic::new(
                    Code::BuildProceduralBone,
                    format!(
                        "the {what} `{}` of procedural bone `{own}` is not in the model",
                        name.0
                    ),
                    name.1,
                    "no bone of this name",
                );
                // the files name bones without their `Prefix.`: suggest both spellings
                let names = bones.iter().flat_map(|b| {
                    let short = b.name.rsplit('.').next().unwrap_or(&b.name);
                    [b.name.as_str(), short]
                });
                if let Some(n) = crate::suggest::nearest(&name.0, names) {
                    d = d.with_note(format!("help: did you mean `{n}`?"));
                }
                this.push(d);
            }
            b
        };
        let parent_is = |child: BoneId, parent: Option<BoneId>| {
            bones.get(child.index()).and_then(|b| b.parent) == parent
        };
        let rule = match raw {
            Raw::Quat {
                names,
                percentage,
                triggers,
            } => {
                let parent = need(&names[1], "parent", self);
                let control_parent = need(&names[2], "control's parent", self);
                let control = need(&names[3], "control bone", self);
                let (Some(parent), Some(control_parent), Some(control)) =
                    (parent, control_parent, control)
                else {
                    return None;
                };
                // `RemapProceduralBones`: the file's hierarchy must be the model's
                if !parent_is(bone, Some(parent)) || !parent_is(control, Some(control_parent)) {
                    let (name, what) = if !parent_is(bone, Some(parent)) {
                        (&names[1], format!("`{own}`"))
                    } else {
                        (&names[2], format!("the control bone `{}`", names[3].0))
                    };
                    self.push(Diagnostic::new(
                        Code::BuildProceduralBone,
                        format!("procedural bone `{own}`: {what} does not have `{}` as its parent in the model", name.0),
                        name.1,
                        "not the parent",
                    ).with_note("Valve's compiler stops the same way (\"parent remapping error\")"));
                    return None;
                }
                if triggers.is_empty() {
                    self.push(
                        Diagnostic::new(
                            Code::BuildProceduralSyntax,
                            format!("procedural bone `{own}` has no `<trigger>`"),
                            span,
                            "this helper",
                        )
                        .with_note("the engine poses a helper from its triggers; one is needed"),
                    );
                    return None;
                }
                ProcRule::QuatInterp {
                    control,
                    percentage,
                    triggers,
                }
            }
            Raw::Aim {
                names,
                aim_vector,
                up_vector,
                base_pos,
            } => {
                let parent = need(&names[1], "parent", self);
                // the aim: an attachment (compared exactly, as Valve's compiler does), else a bone
                let aim = match attachments.iter().position(|a| *a == names[2].0) {
                    Some(_) => Some(AimTarget::Attachment(names[2].0.clone())),
                    None => need(&names[2], "aim attachment or bone", self).map(AimTarget::Bone),
                };
                let (Some(parent), Some(aim)) = (parent, aim) else {
                    return None;
                };
                ProcRule::AimAt {
                    parent,
                    aim,
                    aim_vector,
                    up_vector,
                    base_pos,
                }
            }
            Raw::Axis {
                names,
                axis,
                pos,
                quat,
            } => {
                let control = need(&names[1], "control bone", self)?;
                ProcRule::AxisInterp {
                    control,
                    axis,
                    pos,
                    quat,
                }
            }
        };
        ok.then_some(ProcBone { bone, rule, span })
    }
}
