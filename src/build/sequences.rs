//! Sequences (step 7): animation names resolved (a sequence's name stands for its first
//! animation), blend grids checked (Source), events, transitions and options carried.

use crate::diag::{Code, Diagnostic};
use crate::ir::model::*;
use crate::ir::written::DECLARED;
use crate::project::spec::Target;
use crate::suggest::nearest;

use super::{loc, Builder};

impl Builder<'_> {
    pub(super) fn make_sequences(&mut self, anim_ids: &[Option<AnimId>]) -> Vec<Seq> {
        let spec = self.spec;
        let anim_by_name = |name: &str| -> Option<usize> {
            spec.animations
                .iter()
                .position(|a| a.name.value.eq_ignore_ascii_case(name))
        };
        let seq_by_name = |name: &str| -> Option<usize> {
            spec.sequences
                .iter()
                .position(|s| s.name.value.eq_ignore_ascii_case(name))
        };
        let from_qc = spec
            .source
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("qc"));
        let mut out = Vec::new();
        let mut errs = Vec::new();
        for (si, s) in spec.sequences.iter().enumerate() {
            // Duplicate names. The QC front end reports them itself (with the animation names
            // that share the namespace in QC), so only other projects are checked here.
            if let Some(first) = seq_by_name(&s.name.value).filter(|&f| f < si && !from_qc) {
                let first_span = spec
                    .sequences
                    .get(first)
                    .map_or(loc(s.name.span), |f| loc(f.name.span));
                let d = match self.target {
                    Target::GoldSrc => Diagnostic::new(
                        Code::BuildDuplicateSequenceGoldSrc,
                        format!("a second sequence is named `{}`", s.name.value),
                        loc(s.name.span),
                        "name used before",
                    )
                    .with_secondary(first_span, "first sequence of this name")
                    .with_note(
                        "Valve's HL1 compiler keeps both; the game finds only the first by name",
                    ),
                    Target::Source => Diagnostic::new(
                        Code::BuildDuplicateSequence,
                        format!("a second sequence is named `{}`", s.name.value),
                        loc(s.name.span),
                        "name used before",
                    )
                    .with_secondary(first_span, "first sequence of this name")
                    .with_note("sequence names are unique in a Source model; rename one of them"),
                };
                errs.push(d);
            }
            let mut ids = Vec::new();
            let mut broken = false;
            for r in &s.animations {
                let resolved = anim_by_name(&r.value).or_else(|| {
                    seq_by_name(&r.value)
                        .and_then(|q| spec.sequences.get(q))
                        .and_then(|q| q.animations.first())
                        .and_then(|first| anim_by_name(&first.value))
                });
                match resolved {
                    Some(k) => match anim_ids.get(k).copied().flatten() {
                        Some(id) => ids.push(id),
                        // Its file failed to load: already reported.
                        None => broken = true,
                    },
                    None => {
                        let names = spec
                            .animations
                            .iter()
                            .map(|a| a.name.value.as_str())
                            .filter(|n| !n.starts_with('@'))
                            .chain(spec.sequences.iter().map(|s| s.name.value.as_str()));
                        let mut d = Diagnostic::new(
                            Code::BuildUnknownAnimation,
                            format!(
                                "sequence `{}` uses animation `{}`, which does not exist",
                                s.name.value, r.value
                            ),
                            loc(r.span),
                            "no animation or sequence of this name",
                        );
                        if let Some(n) = nearest(&r.value, names) {
                            d = d.with_note(format!("help: did you mean `{n}`?"));
                        }
                        errs.push(d);
                        broken = true;
                    }
                }
            }
            let n = s.animations.len();
            let declared = s.flags.iter().any(|f| f.value == DECLARED);
            // (`$declaresequence`: a name another model fills, no animation of its own)
            if n == 0 && !declared {
                errs.push(
                    Diagnostic::new(
                        Code::BuildNoAnimation,
                        format!("sequence `{}` has no animation", s.name.value),
                        loc(s.name.span),
                        "this sequence",
                    )
                    .with_note("a sequence plays at least one animation"),
                );
                continue;
            }
            let mut width = n;
            if self.target == Target::Source {
                match &s.blend_width {
                    Some(w) if w.value <= 0 || n % (w.value as usize) != 0 => {
                        errs.push(
                            Diagnostic::new(
                                Code::BuildBlendGrid,
                                format!("sequence `{}` has {n} animations, not a whole number of rows of {}", s.name.value, w.value),
                                loc(w.span),
                                "blend width",
                            )
                            .with_note("with `blendwidth w` the number of animations is a multiple of w (rows of w, row by row)"),
                        );
                        broken = true;
                    }
                    Some(w) => width = w.value as usize,
                    None if n < 4 => {}
                    None => {
                        let r = (n as f64).sqrt().round() as usize;
                        if r * r == n {
                            width = r;
                        } else {
                            errs.push(
                                Diagnostic::new(
                                    Code::BuildBlendGrid,
                                    format!("sequence `{}` has {n} animations, which is not a square grid", s.name.value),
                                    loc(s.name.span),
                                    "this sequence",
                                )
                                .with_note("without `blendwidth`, 4 or more animations make a square grid")
                                .with_note("help: give `blendwidth` the number of animations per row"),
                            );
                            broken = true;
                        }
                    }
                }
            }
            if broken {
                continue;
            }
            out.push(Seq {
                name: s.name.clone(),
                animations: ids,
                blend_width: width,
                blends: s.blends.clone(),
                activity: s.activity.clone(),
                events: s.events.clone(),
                pivots: s.pivots.clone(),
                node: s.node.clone(),
                transition: s.transition.clone(),
                fade_in: s.fade_in,
                fade_out: s.fade_out,
                exit_phase: s.exit_phase,
                flags: s.flags.clone(),
                extras: s.extras.clone(),
                group: s.group,
                span: loc(s.span),
            });
        }
        self.diags.extend(errs);
        out
    }
}
