//! Animations (step 6): each `$animation` (and the animations `$sequence`s imply) mapped onto
//! the merged skeleton by bone name, its frames filled by the target's rule and cut to its
//! `frames` range; the root transform is kept as parameters for the back ends.

use crate::ir::anim;
use crate::ir::written::Target;
use std::sync::Arc;

use crate::diag::{Code, Diagnostic};
use crate::ir::anim::{FillRule, UsesLeft};
use crate::ir::model::*;
use crate::project::spec;
use crate::smd::SmdModel;

use super::skeleton::illegal_parent;
use super::{loc, Builder};

impl Builder<'_> {
    /// Loads the animations' files (Source: the scale of a file's first use is its scale).
    pub(super) fn load_animations(&mut self) -> Vec<Option<usize>> {
        let spec = self.spec;
        let mut anim_files: Vec<Option<usize>> = Vec::new();
        for a in &spec.animations {
            let i = self.load(&a.file, "animation");
            if let Some(i) = i {
                self.first_scale.entry(i).or_insert(a.scale);
            }
            anim_files.push(i);
        }
        anim_files
    }

    /// Makes every animation; a file's frames are let go once its last animation is made.
    pub(super) fn make_animations(
        &mut self,
        anim_files: &[Option<usize>],
        bones: &[ModelBone],
    ) -> (Vec<Anim>, Vec<Option<AnimId>>) {
        let spec = self.spec;
        let mut animations = Vec::new();
        let mut anim_ids: Vec<Option<AnimId>> = Vec::new();
        // Nothing reads a file's frames after its last animation is made: they are let go
        // then, so that a large model does not hold them beside the animations made of them.
        let mut uses = UsesLeft::count(
            self.loader.files.len(),
            anim_files.iter().flatten().copied(),
        );
        for (a, f) in spec.animations.iter().zip(anim_files) {
            let made = f.and_then(|f| self.make_anim(a, f, bones));
            if let Some(f) = *f {
                if let (true, Some(l)) = (uses.used(f), self.loader.files.get_mut(f)) {
                    // (`make_mut` copies nothing when no other project holds the file: it
                    // only cuts the batch table's weak reference, `super::shared`)
                    match Arc::strong_count(&l.smd) {
                        1 => Arc::make_mut(&mut l.smd).animation.release_frames(),
                        // Another project of the batch holds the file too: this one lets go
                        // of its hold on the frames (the last holder frees them), keeping the
                        // rest of the file.
                        _ => {
                            let s = &l.smd;
                            l.smd = Arc::new(SmdModel {
                                file: s.file,
                                skeleton: s.skeleton.clone(),
                                mesh: s.mesh.clone(),
                                animation: s.animation.without_frames(),
                                flex: s.flex.clone(),
                                shapes: s.shapes.clone(),
                                negative_time: s.negative_time,
                            });
                        }
                    }
                }
            }
            match made {
                Some(anim) => {
                    animations.push(anim);
                    anim_ids.push(Some(AnimId(animations.len() as u32 - 1)));
                }
                None => anim_ids.push(None),
            }
        }

        (animations, anim_ids)
    }

    pub(super) fn make_anim(
        &mut self,
        a: &spec::Animation,
        f: usize,
        bones: &[ModelBone],
    ) -> Option<Anim> {
        let gold = self.target == Target::GoldSrc;
        let l = self.loader.files.get(f)?;
        let map = self.bone_map(l, bones);
        let file_bones: Vec<AnimBone> = l
            .smd
            .skeleton
            .bones
            .iter()
            .zip(&map)
            .map(|(b, m)| AnimBone {
                name: b.name.clone(),
                parent: b.parent.map(|p| p.0),
                bone: *m,
            })
            .collect();
        let mut errs = Vec::new();
        if gold {
            // `goldsrc.md` §8.4: a matched bone whose parent differs from the model's.
            for (b, m) in l.smd.skeleton.bones.iter().zip(&map) {
                let Some(m) = m.and_then(|m| bones.get(m.index())) else {
                    continue;
                };
                let file_parent = b
                    .parent
                    .and_then(|p| l.smd.skeleton.get(p))
                    .map(|p| p.name.as_str());
                let model_parent = m
                    .parent
                    .and_then(|p| bones.get(p.index()))
                    .map(|p| p.name.as_str());
                if file_parent != model_parent {
                    errs.push(illegal_parent(
                        b,
                        file_parent,
                        model_parent,
                        m.span,
                        "animation",
                    ));
                }
            }
        }
        let anim = &l.smd.animation;
        let rule = if gold {
            FillRule::Zero
        } else {
            FillRule::HoldPrevious
        };
        let resolved = anim.resolve(rule);
        let nb = anim.num_bones;
        let first = anim.first_time as i64;
        let last = first + anim.num_frames as i64 - 1;
        let file_name = self.sources.name(l.file).to_string();
        let (lo, hi) = if gold {
            let Some(range) = self.gold_frame_range(a, anim, &file_name, &mut errs) else {
                self.diags.extend(errs);
                return None;
            };
            range
        } else {
            let (mut lo, mut hi) = (first, last);
            if let Some((s, e)) = a.frames {
                let (s, e) = (s as i64, e as i64);
                if s > e || e < first || s > last {
                    errs.push(bad_frame_range(a, s, e, &file_name, first, last));
                    self.diags.extend(errs);
                    return None;
                }
                if s < first || e > last {
                    let used = (s.max(first), e.min(last));
                    errs.push(frame_range_clamped(
                        a,
                        s,
                        e,
                        &file_name,
                        (first, last),
                        Some(used),
                    ));
                }
                lo = s.max(first);
                hi = e.min(last);
            }
            (lo, hi)
        };
        let from = (lo - first) as usize * nb;
        let to = (hi - first + 1) as usize * nb;
        // The kept range, cut out of `resolved` in place (no copy of the whole animation).
        let frames = if from <= to && to <= resolved.len() {
            let mut v = resolved;
            v.truncate(to);
            v.drain(..from);
            v
        } else {
            Vec::new()
        };
        let num_frames = frames
            .len()
            .checked_div(nb)
            .unwrap_or((hi - lo + 1) as usize);
        let given = (from..to)
            .map(|i| anim.poses.get(i).is_some_and(Option::is_some))
            .collect();
        let scale = if gold {
            a.scale
        } else {
            self.first_scale.get(&f).copied().unwrap_or(a.scale)
        };
        let out = Anim {
            name: a.name.clone(),
            path: l.path.clone(),
            file: l.file,
            file_bones,
            frames,
            given,
            num_frames,
            first_time: lo as i32,
            fps: a.fps,
            looping: a.looping,
            origin: a.origin,
            rotation: a.rotation,
            scale,
            motion: a.motion.clone(),
            start_loop: a.start_loop,
            flags: a.flags.clone(),
            commands: a.commands.clone(),
            span: loc(a.span),
        };
        self.diags.extend(errs);
        Some(out)
    }

    /// The SMD times a GoldSrc animation keeps, as Valve's HL1 `Grab_Animation` reads them: a
    /// bone line counts when its time is within the `frame` range (default 0 to 2047, the
    /// frames `MAXSTUDIOANIMATIONS` holds), and the animation runs from the smallest to the
    /// largest such time that has a bone line (`goldsrc.md` §7). Times below 0 or above 2047
    /// are not read (Valve's tool ignores them without a `frame` range, and writes outside its
    /// arrays with one): a warning says which. An empty range (`hi < lo`) when no frame is
    /// left; `None` after an error (a `frame` range outside the file).
    pub(super) fn gold_frame_range(
        &self,
        a: &spec::Animation,
        anim: &anim::Animation,
        file_name: &str,
        errs: &mut Vec<Diagnostic>,
    ) -> Option<(i64, i64)> {
        const LAST_FRAME: i64 = 2047;
        let nb = anim.num_bones;
        let first = anim.first_time as i64;
        let last = first + anim.num_frames as i64 - 1;
        // a time with a bone line (a file without nodes: a `time` line)
        let has_data = |t: i64| {
            let f = (t - first) as usize;
            if nb == 0 {
                return anim.present.get(f).copied().unwrap_or(false);
            }
            (0..nb).any(|b| anim.get(f, b).is_some())
        };
        let data: Vec<i64> = (first..=last).filter(|&t| has_data(t)).collect();
        let (data_lo, data_hi) = match (data.first(), data.last()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (first, last),
        };
        // the times asked for (all without a `frame` range)
        let (s, e) = match a.frames {
            Some((s, e)) => {
                let (s, e) = (s as i64, e as i64);
                if s > e || e < first || s > last {
                    errs.push(bad_frame_range(a, s, e, file_name, first, last));
                    return None;
                }
                (s, e)
            }
            None => (i64::MIN, i64::MAX),
        };
        let (win_lo, win_hi) = (s.max(0), e.min(LAST_FRAME));
        let short = std::path::Path::new(file_name).file_name().map_or_else(
            || file_name.to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let outside: Vec<i64> = data
            .iter()
            .copied()
            .filter(|&t| (s..=e).contains(&t) && !(0..=LAST_FRAME).contains(&t))
            .collect();
        let kept: Vec<i64> = data
            .iter()
            .copied()
            .filter(|&t| (win_lo..=win_hi).contains(&t))
            .collect();
        if let (Some(&o_lo), Some(&o_hi)) = (outside.first(), outside.last()) {
            let what = if o_hi < 0 {
                "below 0".to_string()
            } else if o_lo > LAST_FRAME {
                "above 2047".to_string()
            } else {
                "below 0 and above 2047".to_string()
            };
            let mut d = Diagnostic::new(
                Code::BuildFramesNotRead,
                format!("`{short}` has frames at times {what}, which GoldSrc does not read"),
                loc(a.span),
                "in this animation",
            )
            .with_note(format!(
                "its bone values are at times {data_lo} to {data_hi}; Valve's HL1 compiler reads times 0 to 2047 only{}",
                if a.frames.is_some() {
                    " (with a `frame` range reaching past them, it writes outside its arrays)"
                } else {
                    ""
                }
            ));
            d = match (kept.first(), kept.last()) {
                (Some(k_lo), Some(k_hi)) => {
                    d.with_note(format!("frames {k_lo} to {k_hi} are used"))
                }
                _ => d,
            };
            errs.push(d);
        }
        let used = kept.first().copied().zip(kept.last().copied());
        if a.frames.is_some() && (s < first || e > last) {
            errs.push(frame_range_clamped(a, s, e, file_name, (first, last), used));
        }
        match used {
            Some(range) => Some(range),
            // No frame left: an empty animation starting at the file's first time, which the
            // back end reports (`E0526`; Valve's tool crashes on it).
            None => Some((data_lo, data_lo - 1)),
        }
    }
}

/// [`Code::BuildBadFrameRange`]: the `frame` range `s`..`e` of `a` is empty or misses its
/// file's frames `first`..`last`.
fn bad_frame_range(
    a: &spec::Animation,
    s: i64,
    e: i64,
    file_name: &str,
    first: i64,
    last: i64,
) -> Diagnostic {
    Diagnostic::new(
        Code::BuildBadFrameRange,
        if s > e {
            format!(
                "frame range {s} to {e} of animation `{}` is empty",
                a.name.value
            )
        } else {
            format!(
                "frame range {s} to {e} of animation `{}` is outside its file",
                a.name.value
            )
        },
        loc(a.span),
        "in this animation",
    )
    .with_note(format!("`{file_name}` has frames {first} to {last}"))
}

/// [`Code::BuildFrameRangeClamped`]: the `frame` range `s`..`e` of `a` reaches past its file's
/// frames `first`..`last`; `used` is what is kept of them (none: an error follows).
fn frame_range_clamped(
    a: &spec::Animation,
    s: i64,
    e: i64,
    file_name: &str,
    (first, last): (i64, i64),
    used: Option<(i64, i64)>,
) -> Diagnostic {
    Diagnostic::new(
        Code::BuildFrameRangeClamped,
        format!(
            "frame range {s} to {e} of animation `{}` reaches past its file",
            a.name.value
        ),
        loc(a.span),
        "in this animation",
    )
    .with_note(match used {
        Some((lo, hi)) => {
            format!("`{file_name}` has frames {first} to {last}; frames {lo} to {hi} are used")
        }
        None => format!("`{file_name}` has frames {first} to {last}; none of them is used"),
    })
}
