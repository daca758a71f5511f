//! `$sequence` (both dialects), `$animation`, `$append`/`$continue`/`$prepend`, `$cmdlist`
//! (`goldsrc.md` §6.3-6.4, `qc-source.md` §4).
//!
//! Animations a `$sequence` implies by naming a file are named `@<sequence>` (the first) and
//! `@<sequence>_<i>` (the one at position `i` of the sequence's list, counting from 0); when a
//! name is taken (HL1 QCs repeat sequence names), `#2`, `#3`, … is appended.

use crate::diag::{Code, Diagnostic};
use crate::project::spec::{
    Activity, AnimCommand, Animation, Blend, Event, Loc, Sequence, Spanned, Transition, DEFAULT_FPS,
};
use crate::qc::QcToken;

use super::{
    float_prefix, hl1_rotation, is_close, is_open, lower, rad, sp, Dialect, Parser, StyleA,
};

/// HL1 activities 1..=76 (`goldsrc.md` §6.4).
const HL1_ACTIVITIES: &[&str] = &[
    "act_idle",
    "act_guard",
    "act_walk",
    "act_run",
    "act_fly",
    "act_swim",
    "act_hop",
    "act_leap",
    "act_fall",
    "act_land",
    "act_strafe_left",
    "act_strafe_right",
    "act_roll_left",
    "act_roll_right",
    "act_turn_left",
    "act_turn_right",
    "act_crouch",
    "act_crouchidle",
    "act_stand",
    "act_use",
    "act_signal1",
    "act_signal2",
    "act_signal3",
    "act_twitch",
    "act_cower",
    "act_small_flinch",
    "act_big_flinch",
    "act_range_attack1",
    "act_range_attack2",
    "act_melee_attack1",
    "act_melee_attack2",
    "act_reload",
    "act_arm",
    "act_disarm",
    "act_eat",
    "act_diesimple",
    "act_diebackward",
    "act_dieforward",
    "act_dieviolent",
    "act_barnacle_hit",
    "act_barnacle_pull",
    "act_barnacle_chomp",
    "act_barnacle_chew",
    "act_sleep",
    "act_inspect_floor",
    "act_inspect_wall",
    "act_idle_angry",
    "act_walk_hurt",
    "act_run_hurt",
    "act_hover",
    "act_glide",
    "act_fly_left",
    "act_fly_right",
    "act_detect_scent",
    "act_sniff",
    "act_bite",
    "act_threat_display",
    "act_fear_display",
    "act_excited",
    "act_special_attack1",
    "act_special_attack2",
    "act_combat_idle",
    "act_walk_scared",
    "act_run_scared",
    "act_victory_dance",
    "act_die_headshot",
    "act_die_chestshot",
    "act_die_gutshot",
    "act_die_backshot",
    "act_flinch_head",
    "act_flinch_chest",
    "act_flinch_stomach",
    "act_flinch_leftarm",
    "act_flinch_rightarm",
    "act_flinch_leftleg",
    "act_flinch_rightleg",
];

/// Source sequence option keywords (`qc-source.md` §4.2), for suggestions.
const SOURCE_SEQ_OPTIONS: &[&str] = &[
    "event",
    "activity",
    "snap",
    "blendwidth",
    "blend",
    "calcblend",
    "blendref",
    "blendcomp",
    "blendcenter",
    "node",
    "transition",
    "rtransition",
    "exitphase",
    "delta",
    "predelta",
    "post",
    "worldspace",
    "autoplay",
    "realtime",
    "hidden",
    "fadein",
    "fadeout",
    "addlayer",
    "blendlayer",
    "iklock",
    "keyvalues",
];

/// Animation options and commands (`qc-source.md` §4.3-4.4), for suggestions.
const ANIM_KEYWORDS: &[&str] = &[
    "fps",
    "loop",
    "startloop",
    "fudgeloop",
    "snap",
    "frames",
    "origin",
    "rotate",
    "angles",
    "scale",
    "post",
    "noautoik",
    "autoik",
    "cmdlist",
    "if",
    "fixuploop",
    "weightlist",
    "subtract",
    "presubtract",
    "alignto",
    "align",
    "alignboneto",
    "match",
    "matchblend",
    "worldspaceblend",
    "worldspaceblendloop",
    "rotateto",
    "ikrule",
    "ikfixup",
    "walkframe",
    "walkalignto",
    "walkalign",
    "derivative",
    "noanimation",
    "lineardelta",
    "splinedelta",
    "compress",
    "numframes",
    "counterrotate",
    "counterrotateto",
];

/// One change an animation option makes.
enum AnimChange {
    Fps(f32),
    Loop,
    StartLoop(i32),
    Flag(Spanned<String>, bool),
    Frames(i32, i32),
    Origin([f32; 3]),
    RotateZ(f32),
    Angles([f32; 3]),
    Scale(f32),
    Motion(Spanned<String>),
    Commands(Vec<AnimCommand>),
    Nothing,
}

/// What reading one item did.
enum Item {
    /// Read (or reported and recovered).
    Done,
    /// Reported; the rest of the line is skipped.
    Failed,
    /// Not an item of this kind; the token was not consumed beyond itself.
    NotMine,
}

/// Which command amends an existing sequence or animation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Amend {
    Append,
    Continue,
    Prepend,
}

impl<'t> Parser<'t, '_> {
    pub(super) fn new_sequence(&self, name: &QcToken, cmd: &QcToken) -> Sequence {
        Sequence {
            name: sp(name.text.clone(), name),
            animations: Vec::new(),
            blend_width: None,
            blends: Vec::new(),
            activity: None,
            events: Vec::new(),
            pivots: Vec::new(),
            node: None,
            transition: None,
            fade_in: None,
            fade_out: None,
            exit_phase: None,
            flags: Vec::new(),
            extras: Vec::new(),
            group: self.spec.sequence_groups.len() as i32,
            span: Loc(cmd.span),
        }
    }

    /// A new animation with the defaults in force (`$origin`, `$upaxis`, `$scale`).
    fn new_animation(&mut self, name: Spanned<String>, file: &QcToken, span: &QcToken) -> usize {
        let a = Animation {
            name,
            file: self.file_ref(file, "smd"),
            fps: DEFAULT_FPS,
            looping: false,
            frames: None,
            origin: self.origin,
            rotation: self.rotation,
            scale: self.scale,
            motion: Vec::new(),
            start_loop: None,
            flags: Vec::new(),
            commands: Vec::new(),
            span: Loc(span.span),
        };
        self.spec.animations.push(a);
        self.anim_base_scale.push(self.scale);
        self.spec.animations.len() - 1
    }

    /// A name for an implied animation that no animation has yet.
    fn implied_name(&self, seq: &str, index: usize) -> String {
        let base = if index == 0 {
            format!("@{seq}")
        } else {
            format!("@{seq}_{index}")
        };
        let taken = |n: &str| {
            self.spec
                .animations
                .iter()
                .any(|a| a.name.value.eq_ignore_ascii_case(n))
        };
        if !taken(&base) {
            return base;
        }
        (2..)
            .map(|k| format!("{base}#{k}"))
            .find(|n| !taken(n))
            .unwrap_or(base)
    }

    /// Reports a sequence or animation name already used (Source: error; HL1: warning).
    fn check_duplicate(&mut self, name: &QcToken, what: &str) {
        let prev_seq = self
            .spec
            .sequences
            .iter()
            .find(|s| s.name.value.eq_ignore_ascii_case(&name.text))
            .map(|s| (s.name.span.span(), "sequence"));
        let prev_anim = self
            .spec
            .animations
            .iter()
            .find(|a| {
                !a.name.value.starts_with('@') && a.name.value.eq_ignore_ascii_case(&name.text)
            })
            .map(|a| (a.name.span.span(), "animation"));
        let Some((prev, kind)) = prev_seq.or(prev_anim) else {
            return;
        };
        let d = match self.dialect {
            Dialect::Hl1 => Diagnostic::new(
                Code::QcDuplicateSequenceHl1,
                format!("sequence `{}` is defined twice", name.text),
                name.span,
                "second sequence with this name",
            )
            .with_secondary(prev, "first defined here")
            .with_note("Valve's HL1 compiler keeps both; the game finds only the first by name"),
            Dialect::Source => Diagnostic::new(
                Code::QcDuplicateName,
                format!("duplicate {what} name `{}`", name.text),
                name.span,
                format!("already the name of a {kind}"),
            )
            .with_secondary(prev, format!("the {kind} is defined here"))
            .with_note("sequence and animation names share one namespace and must be unique"),
        };
        self.push(d);
    }

    // --- HL1 ------------------------------------------------------------------------------

    pub(super) fn hl1_sequence(&mut self, t: &'t QcToken) -> Option<()> {
        self.usage = "$sequence name file… [options] [{ event … }]";
        let name = self.arg("a sequence name")?;
        self.check_duplicate(name, "sequence");
        let mut seq = self.new_sequence(name, t);
        // each sequence starts from the `$origin`/`$scale` defaults (goldsrc.md §6.3)
        let mut origin = self.origin;
        let mut rotation = self.rotation;
        let mut scale = self.scale;
        let mut fps = DEFAULT_FPS;
        let mut frames = None;
        let mut motion: Vec<Spanned<String>> = Vec::new();
        let mut files: Vec<&'t QcToken> = Vec::new();
        let mut b = StyleA::new();
        while let Some(o) = self.item(&mut b) {
            // Valve's tokenizer drops quotes, so `"loop"` or `"fps" "15"` are options like
            // their bare spellings (`scriplib.c` `GetToken`, `studiomdl.c` `Cmd_Sequence`).
            let l = lower(o);
            self.option_by_prefix(o, &l);
            let r: Option<()> = (|| {
                match l.as_str() {
                    "deform" => {}
                    "event" => {
                        let e = self.event()?;
                        seq.events.push(e);
                    }
                    "pivot" => {
                        let p = [
                            self.int("a pivot index")?,
                            self.int("a start frame")?,
                            self.int("an end frame")?,
                        ];
                        seq.pivots.push(p);
                    }
                    "fps" => fps = self.fps()?,
                    "origin" => origin = self.vec3("a coordinate")?,
                    "rotate" => {
                        let t = self.arg("an angle in degrees")?;
                        rotation[2] = hl1_rotation(self.read_f64(t, "an angle in degrees"));
                    }
                    "scale" => scale = self.num("a scale factor")?,
                    _ if l.starts_with("loop") => {
                        if !seq.flags.iter().any(|f| f.value == "loop") {
                            seq.flags.push(sp("loop".to_string(), o));
                        }
                    }
                    _ if l.starts_with("frame") => frames = Some(self.frames()?),
                    _ if l.starts_with("blend") => {
                        let param = self.motion("a motion type")?;
                        let min = self.num("a start value")?;
                        let max = self.num("an end value")?;
                        if let Some(prev) = seq.blends.first() {
                            self.push(
                                Diagnostic::new(
                                    Code::QcBlendReplaced,
                                    "a second `blend` replaces the first in a Half-Life sequence",
                                    o.span,
                                    "replaces the earlier blend",
                                )
                                .with_secondary(prev.param.span.span(), "earlier blend")
                                .with_note(
                                    "Valve's HL1 compiler keeps one blend axis per sequence",
                                ),
                            );
                        }
                        seq.blends = vec![Blend { param, min, max }];
                    }
                    // Valve's tool keeps one entry and one exit node, each option overwriting
                    // both, and `rtransition` sets a flag no later option clears
                    // (`studiomdl.c` `Cmd_Sequence`): a `node` after a transition becomes a
                    // transition from the node to itself that keeps the flag.
                    _ if l.starts_with("node") => {
                        let n = self.name("a node")?;
                        match &mut seq.transition {
                            Some(t) => {
                                t.entry = n.clone();
                                t.exit = n;
                            }
                            None => seq.node = Some(n),
                        }
                    }
                    _ if l.starts_with("tran") || l.starts_with("rtra") => {
                        let entry = self.name("an entry node")?;
                        let exit = self.name("an exit node")?;
                        let sticky = seq.transition.as_ref().is_some_and(|t| t.reversible);
                        seq.transition = Some(Transition {
                            entry,
                            exit,
                            reversible: sticky || l.starts_with('r'),
                        });
                    }
                    "animation" => files.push(self.arg("an animation file")?),
                    _ => {
                        if let Some(m) = self.motion_word(o) {
                            motion.push(sp(m, o));
                        } else if let Some(act) = self.hl1_activity(o) {
                            if act {
                                let w = self.int("an activity weight")?;
                                seq.activity = Some(Activity {
                                    name: sp(o.text.clone(), o),
                                    weight: w,
                                });
                            }
                        } else {
                            files.push(o);
                        }
                    }
                }
                Some(())
            })();
            if r.is_none() {
                self.skip_line();
            }
        }
        if files.is_empty() {
            self.no_animation(name);
        }
        for (i, f) in files.iter().enumerate() {
            let an = self.implied_name(&name.text, i);
            let idx = self.new_animation(Spanned::new(an.clone(), f.span), f, f);
            if let Some(a) = self.spec.animations.get_mut(idx) {
                a.fps = fps;
                a.origin = origin;
                a.rotation = rotation;
                a.scale = scale;
                a.motion = motion.clone();
                a.frames = frames;
            }
            seq.animations.push(Spanned::new(an, f.span));
        }
        self.hl1_offset = origin;
        self.spec.sequences.push(seq);
        Some(())
    }

    /// `Some(true)`: an HL1 activity; `None`: not an activity word (an SMD name). An `ACT_…`
    /// word that is no activity is reported (`Some(false)`), as Valve's tool would take it for
    /// a file.
    fn hl1_activity(&mut self, o: &QcToken) -> Option<bool> {
        let l = lower(o);
        if HL1_ACTIVITIES.contains(&l.as_str()) {
            return Some(true);
        }
        let rest = l.strip_prefix("act_")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let significant = digits.trim_start_matches('0');
        if significant.len() > 10 || significant.parse::<i64>().is_ok_and(|n| n > 2147483647) {
            // `lookupActivity` reads the number with C `atoi`, whose result is undefined past
            // a 32-bit int: the stored activity would be anything.
            self.push(
                Diagnostic::new(
                    Code::QcBadValue,
                    format!("activity number `{}` does not fit a 32-bit int", o.text),
                    o.span,
                    "at most ACT_2147483647",
                )
                .with_note("the sequence stores its activity as a 32-bit int; Valve's HL1 compiler reads the number with C `atoi`, whose result is undefined beyond that range")
                .with_note("help: use a number from 1 to 2147483647; the game code looks activities up by the numbers of `dlls/activity.h`"),
            );
            self.skip_activity_weight();
            return Some(false);
        }
        if !significant.is_empty() {
            return Some(true);
        }
        if !digits.is_empty() {
            return None; // ACT_0…: taken as a file, as Valve's tool does
        }
        let upper: Vec<String> = HL1_ACTIVITIES
            .iter()
            .map(|a| a.to_ascii_uppercase())
            .collect();
        let refs: Vec<&str> = upper.iter().map(String::as_str).collect();
        let mut d = Diagnostic::new(
            Code::QcUnknownKeyword,
            format!("unknown activity `{}`", o.text),
            o.span,
            "not a Half-Life activity",
        );
        if let Some(s) = crate::suggest::suggest(&l, HL1_ACTIVITIES) {
            let s = refs
                .iter()
                .find(|r| r.eq_ignore_ascii_case(s))
                .copied()
                .unwrap_or(s);
            d = d.with_note(format!("help: did you mean `{s}`?"));
        }
        d = d.with_note("Half-Life knows the activities of `dlls/activity.h` (ACT_IDLE … ACT_FLINCH_RIGHTLEG) and `ACT_<number>`; Valve's HL1 compiler would read this word as a file name");
        self.push(d);
        self.skip_activity_weight();
        Some(false)
    }

    /// Consumes the weight after a rejected activity, so that it does not become a file name.
    fn skip_activity_weight(&mut self) {
        if self
            .same_line()
            .is_some_and(|w| float_prefix(&w.text).is_some())
        {
            self.pos += 1;
        }
    }

    fn no_animation(&mut self, name: &QcToken) {
        self.push(
            Diagnostic::new(
                Code::QcNoAnimation,
                format!("sequence `{}` has no animation", name.text),
                name.span,
                "no animation file or `$animation` named",
            )
            .with_note("a sequence names at least one SMD file or `$animation`"),
        );
    }

    // --- pieces shared by both dialects ---------------------------------------------------

    fn fps(&mut self) -> Option<f32> {
        let t = self.arg("a frame rate")?;
        let v = self.read_f32(t, "a frame rate");
        if v <= 0.0 {
            self.push(Diagnostic::new(
                Code::QcBadValue,
                format!("frame rate {v} is not positive"),
                t.span,
                "must be more than 0",
            ));
            return Some(DEFAULT_FPS);
        }
        Some(v)
    }

    fn frames(&mut self) -> Option<(i32, i32)> {
        let a = self.int("a start frame")?;
        let bt = self.arg("an end frame")?;
        let b = self.read_i32(bt, "an end frame");
        if b < a {
            self.push(Diagnostic::new(
                Code::QcBadValue,
                format!("end frame {b} is before start frame {a}"),
                bt.span,
                "before the start frame",
            ));
        }
        Some((a, b))
    }

    /// `event id frame [options]`; an options token `}` is left to close the block.
    fn event(&mut self) -> Option<Event> {
        let id = self.name("an event id")?;
        let frame = self.int("a frame number")?;
        let options = match self.same_line() {
            Some(o) if !is_close(o) => {
                self.pos += 1;
                Some(o.text.clone())
            }
            _ => None,
        };
        Some(Event { id, frame, options })
    }

    // --- Source ---------------------------------------------------------------------------

    pub(super) fn source_sequence(&mut self, t: &'t QcToken) -> Option<()> {
        self.usage = "$sequence name animation… [options] [{ … }]";
        let name = self.arg("a sequence name")?;
        self.check_duplicate(name, "sequence");
        let mut seq = self.new_sequence(name, t);
        let mut first: Option<usize> = None;
        let mut implied: Vec<usize> = Vec::new();
        let mut b = StyleA::new();
        while let Some(o) = self.item(&mut b) {
            match self.sequence_option(o, &mut seq) {
                Item::Done => continue,
                Item::Failed => {
                    self.skip_line();
                    continue;
                }
                Item::NotMine => {}
            }
            if let Some(idx) = first {
                match self.anim_item(o, idx, false) {
                    Item::Done => continue,
                    Item::Failed => {
                        self.skip_line();
                        continue;
                    }
                    Item::NotMine => {}
                }
            }
            if self.misspelled_option(o) {
                self.skip_line();
                continue;
            }
            // an animation reference: an earlier `$animation`, else a file
            let named = if o.quoted && o.text.is_empty() {
                None
            } else {
                self.spec.animations.iter().position(|a| {
                    !a.name.value.starts_with('@') && a.name.value.eq_ignore_ascii_case(&o.text)
                })
            };
            let idx = match named {
                Some(i) => i,
                None => {
                    let an = self.implied_name(&name.text, seq.animations.len());
                    let i = self.new_animation(Spanned::new(an, o.span), o, o);
                    if first.is_some() {
                        implied.push(i);
                    }
                    i
                }
            };
            let anim_name = self
                .spec
                .animations
                .get(idx)
                .map(|a| a.name.value.clone())
                .unwrap_or_default();
            seq.animations.push(sp(anim_name, o));
            first.get_or_insert(idx);
        }
        if seq.animations.is_empty() {
            self.no_animation(name);
        }
        self.check_blend_grid(&seq);
        // implied animations 2…n take the first one's settings (qc-source.md §4.1)
        if let Some(src) = first.and_then(|i| self.spec.animations.get(i)).cloned() {
            for i in implied {
                if let Some(a) = self.spec.animations.get_mut(i) {
                    a.fps = src.fps;
                    a.origin = src.origin;
                    a.rotation = src.rotation;
                    a.scale = src.scale;
                    a.motion = src.motion.clone();
                    a.commands = src.commands.clone();
                }
            }
        }
        self.declare_named_pose_parameters(&seq);
        self.spec.sequences.push(seq);
        Some(())
    }

    /// Pose parameters the sequence names (`blend`, a layer's `poseparameter`)
    /// that no `$poseparameter` declared before it: Valve's compiler makes each one where it
    /// is first named, with the range 0 to 0, which the blends then widen (2006 SDK
    /// `studiomdl.cpp`, `LookupPoseParameter`), so the parameters keep that order.
    fn declare_named_pose_parameters(&mut self, seq: &Sequence) {
        let mut named: Vec<&Spanned<String>> = Vec::new();
        for b in &seq.blends {
            named.push(&b.param);
        }
        // (`calcblend` makes one too; its range is measured from an attachment when the model
        // is built)
        for c in seq
            .extras
            .iter()
            .filter(|c| c.keyword.value.eq_ignore_ascii_case("calcblend"))
        {
            named.extend(c.args.first());
        }
        for c in seq
            .extras
            .iter()
            .filter(|c| c.keyword.value.eq_ignore_ascii_case("blendlayer"))
        {
            let mut args = c.args.iter();
            while let Some(a) = args.next() {
                if a.value.eq_ignore_ascii_case("poseparameter") {
                    named.extend(args.next());
                }
            }
        }
        for n in named {
            if self
                .spec
                .pose_parameters
                .iter()
                .any(|p| p.name.value.eq_ignore_ascii_case(&n.value))
            {
                continue;
            }
            // reported at the end of the QC unless a `$poseparameter` declares it by then
            let known: Vec<&str> = self
                .spec
                .pose_parameters
                .iter()
                .map(|p| p.name.value.as_str())
                .collect();
            let near = crate::suggest::nearest(&n.value, known.iter().copied())
                .map(|s| format!("help: did you mean `{s}`?"));
            let mut d = Diagnostic::new(
                Code::QcPoseParameterUndeclared,
                format!(
                    "sequence `{}` names pose parameter `{}`, which no `$poseparameter` declares",
                    seq.name.value, n.value
                ),
                n.span.span(),
                "the pose parameter is made here",
            )
            .with_note(
                "its range is that of the blends on it, from 0 to 0 if none, as Valve's compiler makes it; declare it with `$poseparameter name min max` to give the range",
            );
            if let Some(near) = near {
                d = d.with_note(near);
            }
            self.implicit_pose
                .push((self.spec.pose_parameters.len(), d));
            let made =
                crate::project::spec::PoseParameter::new(n.clone(), self.spec.sequences.len());
            self.spec.pose_parameters.push(made);
        }
    }

    fn check_blend_grid(&mut self, seq: &Sequence) {
        let n = seq.animations.len();
        if n == 0 {
            return;
        }
        match &seq.blend_width {
            Some(w) if w.value <= 0 => self.push(Diagnostic::new(
                Code::QcBadValue,
                format!("blend width {} is not positive", w.value),
                w.span.span(),
                "must be 1 or more",
            )),
            Some(w) if n % (w.value as usize) != 0 => self.push(
                Diagnostic::new(
                    Code::QcBadValue,
                    format!(
                        "sequence `{}` has {n} animations, not a multiple of its blend width {}",
                        seq.name.value, w.value
                    ),
                    w.span.span(),
                    "blend width",
                )
                .with_note("the animations fill a grid row by row; every row must be full"),
            ),
            Some(_) => {}
            None if n >= 4 && (n as f64).sqrt().fract() != 0.0 => self.push(
                Diagnostic::new(
                    Code::QcBadValue,
                    format!(
                        "sequence `{}` has {n} animations: not a square number, and no `blendwidth`",
                        seq.name.value
                    ),
                    seq.name.span.span(),
                    "non-square blend grid",
                )
                .with_note("with 4 or more animations, give `blendwidth n` or a square number of them"),
            ),
            None => {}
        }
    }

    /// Sequence options (`qc-source.md` §4.2).
    fn sequence_option(&mut self, o: &'t QcToken, seq: &mut Sequence) -> Item {
        let l = lower(o);
        // Valve's reader drops the quotes before it looks at a word, and takes any word that
        // starts with `ACT_` for an activity (2006 SDK `ParseSequence`); other quoted words are
        // left to be file or animation names.
        if o.quoted && !l.starts_with("act_") {
            return Item::NotMine;
        }
        let r: Option<()> = (|| {
            match l.as_str() {
                "event" => {
                    let e = self.event()?;
                    seq.events.push(e);
                }
                "activity" => {
                    let n = self.name("an activity name")?;
                    let w = self.int("an activity weight")?;
                    seq.activity = Some(Activity { name: n, weight: w });
                }
                _ if l.starts_with("act_") => {
                    let w = self.int("an activity weight")?;
                    seq.activity = Some(Activity {
                        name: sp(o.text.clone(), o),
                        weight: w,
                    });
                }
                "snap" | "delta" | "predelta" | "post" | "worldspace" | "autoplay" | "realtime"
                | "hidden" => seq.flags.push(sp(l.clone(), o)),
                "blendwidth" => {
                    let t = self.arg("a blend width")?;
                    let v = self.read_i32(t, "a blend width");
                    seq.blend_width = Some(sp(v, t));
                }
                "blend" => {
                    let param = self.name("a pose parameter")?;
                    let min = self.num("a minimum")?;
                    let max = self.num("a maximum")?;
                    seq.blends.push(Blend { param, min, max });
                }
                "calcblend" => {
                    let c = self.command_args(o, "ww1")?;
                    seq.extras.push(c);
                }
                "blendref" | "blendcomp" | "blendcenter" | "addlayer" => {
                    let c = self.command_args(o, "w")?;
                    seq.extras.push(c);
                }
                "iklock" => {
                    let c = self.command_args(o, "wnn")?;
                    seq.extras.push(c);
                }
                "blendlayer" => {
                    let mut c = self.command_args(o, "wnnnn")?;
                    while let Some(w) = self.same_line() {
                        let wl = lower(w);
                        match wl.as_str() {
                            "xfade" | "spline" | "noblend" | "local" => {
                                self.pos += 1;
                                c.args.push(sp(w.text.clone(), w));
                            }
                            "poseparameter" => {
                                self.pos += 1;
                                c.args.push(sp(w.text.clone(), w));
                                c.args.push(self.name("a pose parameter")?);
                            }
                            _ => break,
                        }
                    }
                    seq.extras.push(c);
                }
                "node" => seq.node = Some(self.name("a node name")?),
                "transition" | "rtransition" => {
                    let entry = self.name("an entry node")?;
                    let exit = self.name("an exit node")?;
                    seq.transition = Some(Transition {
                        entry,
                        exit,
                        reversible: l == "rtransition",
                    });
                }
                "exitphase" => seq.exit_phase = Some(self.num("an exit phase")?),
                "fadein" => seq.fade_in = Some(self.num("a time in seconds")?),
                "fadeout" => seq.fade_out = Some(self.num("a time in seconds")?),
                "keyvalues" => {
                    let open = match self.peek() {
                        Some(b) if is_open(b) => b,
                        _ => {
                            self.missing("`{`");
                            return None;
                        }
                    };
                    self.pos += 1;
                    let text = self.capture_block(open.span)?;
                    seq.extras.push(AnimCommand {
                        keyword: sp(l.clone(), o),
                        args: vec![Spanned::new(text, open.span)],
                    });
                }
                _ => return None, // not a sequence option (told apart below)
            }
            Some(())
        })();
        match r {
            Some(()) => Item::Done,
            None if self.is_sequence_option(&l) => Item::Failed,
            None => Item::NotMine,
        }
    }

    /// `fsp 30` in a `$sequence`: a bare word close to an option keyword and followed on its
    /// line by a number is a misspelled option, not a file called `fsp` (Valve's compiler reads
    /// it as a file and fails with "could not load file"). Reports it and returns true.
    fn misspelled_option(&mut self, o: &QcToken) -> bool {
        if o.quoted
            || self
                .spec
                .animations
                .iter()
                .any(|a| a.name.value.eq_ignore_ascii_case(&o.text))
        {
            return false;
        }
        let number_follows = self.same_line().is_some_and(|n| {
            n.text
                .starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
        });
        if !number_follows {
            return false;
        }
        let keywords: Vec<&str> = SOURCE_SEQ_OPTIONS
            .iter()
            .chain(ANIM_KEYWORDS)
            .copied()
            .collect();
        let Some(k) = crate::suggest::suggest(&o.text, &keywords) else {
            return false;
        };
        self.push(
            Diagnostic::new(
                Code::QcUnknownOption,
                format!("unknown sequence option `{}`", o.text),
                o.span,
                "not an option",
            )
            .with_note(format!("help: did you mean `{k}`?"))
            .with_note("a word that is not an option names an animation file; a file name followed by a number is almost certainly a misspelled option")
            .with_note("the rest of this line is skipped"),
        );
        true
    }

    fn is_sequence_option(&self, l: &str) -> bool {
        SOURCE_SEQ_OPTIONS.contains(&l) || l.starts_with("act_")
    }

    /// A command kept as written. `spec`: `w` a word, `n` a number, `m` motion words (any
    /// number), `1` exactly one motion word.
    fn command_args(&mut self, kw: &QcToken, spec: &str) -> Option<AnimCommand> {
        let mut c = AnimCommand {
            keyword: sp(lower(kw), kw),
            args: Vec::new(),
        };
        for k in spec.chars() {
            match k {
                'w' => c.args.push(self.name("a name")?),
                'n' => {
                    let t = self.arg("a number")?;
                    self.read_f32(t, "a number");
                    c.args.push(sp(t.text.clone(), t));
                }
                '1' => c.args.push(self.motion("a motion type")?),
                _ => {
                    while let Some(m) = self.same_line() {
                        let Some(mw) = self.motion_word(m) else { break };
                        self.pos += 1;
                        c.args.push(sp(mw, m));
                    }
                }
            }
        }
        Some(c)
    }

    /// An animation option or command applied to animation `idx`.
    fn anim_item(&mut self, o: &'t QcToken, idx: usize, commands_only: bool) -> Item {
        match self.anim_change(o, commands_only) {
            Some(Some(change)) => {
                self.apply(idx, change, o);
                Item::Done
            }
            Some(None) => Item::NotMine,
            None => Item::Failed,
        }
    }

    fn apply(&mut self, idx: usize, change: AnimChange, o: &QcToken) {
        let base = self.anim_base_scale.get(idx).copied().unwrap_or(1.0);
        let Some(a) = self.spec.animations.get_mut(idx) else {
            return;
        };
        match change {
            AnimChange::Fps(v) => a.fps = v,
            AnimChange::Loop => a.looping = true,
            AnimChange::StartLoop(n) => {
                a.start_loop = Some(n);
                a.looping = true;
            }
            AnimChange::Flag(f, looping) => {
                a.looping |= looping;
                if !a.flags.iter().any(|g| g.value == f.value) {
                    a.flags.push(f);
                }
            }
            AnimChange::Frames(s, e) => a.frames = Some((s, e)),
            AnimChange::Origin(v) => a.origin = v,
            AnimChange::RotateZ(z) => a.rotation[2] = z,
            AnimChange::Angles(v) => a.rotation = v,
            AnimChange::Scale(s) => a.scale = base * s,
            AnimChange::Motion(m) => {
                if !a.motion.iter().any(|x| x.value == m.value) {
                    a.motion.push(m);
                }
            }
            AnimChange::Commands(c) => a.commands.extend(c),
            AnimChange::Nothing => {}
        }
        let _ = o;
    }

    /// `Some(Some(change))`: read; `Some(None)`: not an animation keyword; `None`: reported.
    fn anim_change(&mut self, o: &'t QcToken, commands_only: bool) -> Option<Option<AnimChange>> {
        if o.quoted {
            return Some(None);
        }
        let l = lower(o);
        if !commands_only {
            let change = match l.as_str() {
                "fps" => Some(AnimChange::Fps(self.fps()?)),
                _ if l.starts_with("loop") => Some(AnimChange::Loop),
                _ if l.starts_with("start") => {
                    Some(AnimChange::StartLoop(self.int("a loop start frame")?))
                }
                "fudgeloop" => Some(AnimChange::Flag(sp(l.clone(), o), true)),
                _ if l.starts_with("snap") => {
                    Some(AnimChange::Flag(sp("snap".to_string(), o), false))
                }
                _ if l.starts_with("frame") => {
                    let (a, b) = self.frames()?;
                    Some(AnimChange::Frames(a, b))
                }
                "origin" => Some(AnimChange::Origin(self.vec3("a coordinate")?)),
                "rotate" => Some(AnimChange::RotateZ(rad(
                    self.num("an angle in degrees")? + 90.0
                ))),
                "angles" => {
                    let v = self.vec3("an angle in degrees")?;
                    Some(AnimChange::Angles([rad(v[0]), rad(v[1]), rad(v[2] + 90.0)]))
                }
                "scale" => Some(AnimChange::Scale(self.num("a scale factor")?)),
                "post" | "noautoik" | "autoik" => Some(AnimChange::Flag(sp(l.clone(), o), false)),
                "cmdlist" => {
                    let n = self.arg("a command list name")?;
                    match self.cmdlists.get(&n.text.to_ascii_lowercase()) {
                        Some(c) => Some(AnimChange::Commands(c.clone())),
                        None => {
                            self.push(
                                Diagnostic::new(
                                    Code::QcUnknownName,
                                    format!("unknown command list `{}`", n.text),
                                    n.span,
                                    "no `$cmdlist` of this name before here",
                                )
                                .with_note("define it with `$cmdlist name { … }` before using it"),
                            );
                            Some(AnimChange::Nothing)
                        }
                    }
                }
                "if" => {
                    let v = self.arg("a value")?;
                    let skip = !v.text.eq_ignore_ascii_case("true")
                        && float_prefix(&v.text).map_or(0.0, |x| x.0) as i64 == 0;
                    if skip {
                        if let Some(b) = self.same_line().filter(|b| is_open(b)) {
                            self.pos += 1;
                            let _ = self.capture_block(b.span);
                        }
                    }
                    Some(AnimChange::Nothing)
                }
                _ => self.motion_word(o).map(|m| AnimChange::Motion(sp(m, o))),
            };
            if change.is_some() {
                return Some(change);
            }
        }
        let spec = match l.as_str() {
            "fixuploop" => "nn",
            _ if l.starts_with("weight") => "w",
            "subtract" | "presubtract" => "wn",
            "alignto" | "match" | "worldspaceblend" | "counterrotate" => "w",
            "align" => "wmnn",
            "alignboneto" => "ww",
            "matchblend" => "wnnnn",
            "worldspaceblendloop" => "wn",
            "rotateto" | "derivative" | "compress" | "numframes" => "n",
            "walkframe" => "nm",
            "walkalignto" => "nwm",
            // Valve's compiler stops without a motion type ("missing controls on walkalign")
            "walkalign" => "nw1mnn",
            "noanimation" | "lineardelta" | "splinedelta" => "",
            "counterrotateto" => "nnnw",
            "ikrule" | "ikfixup" => return Some(Some(AnimChange::Commands(vec![self.ikrule(o)?]))),
            _ => return Some(None),
        };
        let mut c = self.command_args(o, spec)?;
        if l.starts_with("weight") {
            c.keyword.value = "weightlist".to_string();
        }
        Some(Some(AnimChange::Commands(vec![c])))
    }

    /// `ikrule chain type [options…]` (`qc-source.md` §4.5); the first unknown word ends it.
    fn ikrule(&mut self, kw: &QcToken) -> Option<AnimCommand> {
        let mut c = AnimCommand {
            keyword: sp(lower(kw), kw),
            args: vec![self.name("an IK chain name")?],
        };
        // the type: Valve's `Option_IKRule` takes the next word as the type whatever it is
        // (an unknown one leaves the rule typeless, W0623 when the model is built)
        if let Some(ty) = self.same_line() {
            self.pos += 1;
            c.args.push(sp(lower(ty), ty));
            if matches!(lower(ty).as_str(), "touch" | "attachment") {
                c.args.push(self.name("a name")?);
            }
        }
        while let Some(w) = self.same_line() {
            let n = match lower(w).as_str() {
                "height" | "target" | "floor" | "pad" | "radius" | "contact" => 1,
                "range" => 4,
                "fakeorigin" | "fakerotate" => 3,
                "usesequence" | "usesource" => 0,
                // Valve's compiler stores the word `bone` itself and leaves the name to be
                // misread (`qc-source.md` §4.5); mdlc reads the name, which is what it means
                "bone" => 1,
                _ => break,
            };
            self.pos += 1;
            c.args.push(sp(lower(w), w));
            for _ in 0..n {
                let t = self.arg("a value")?;
                c.args.push(sp(t.text.clone(), t));
            }
        }
        Some(c)
    }

    pub(super) fn animation(&mut self, t: &'t QcToken) -> Option<()> {
        self.usage = "$animation name file [options] [{ … }]";
        let name = self.arg("an animation name")?;
        self.check_duplicate(name, "animation");
        let file = self.arg("an animation file")?;
        let idx = self.new_animation(sp(name.text.clone(), name), file, t);
        let mut b = StyleA::new();
        while let Some(o) = self.item(&mut b) {
            match self.anim_item(o, idx, false) {
                Item::Done => {}
                Item::Failed => self.skip_line(),
                Item::NotMine => {
                    self.unknown_anim_option(o, "animation option");
                    self.skip_line();
                }
            }
        }
        Some(())
    }

    fn unknown_anim_option(&mut self, o: &QcToken, what: &str) {
        let mut all: Vec<&str> = ANIM_KEYWORDS.to_vec();
        all.extend(self.motion_list());
        let mut d = Diagnostic::new(
            Code::QcUnknownOption,
            format!("unknown {what} `{}`", o.text),
            o.span,
            format!("not an {what}"),
        );
        if let Some(s) = crate::suggest::suggest(&o.text, &all) {
            d = d.with_note(format!("help: did you mean `{s}`?"));
        }
        if SOURCE_SEQ_OPTIONS.contains(&lower(o).as_str()) || lower(o).starts_with("act_") {
            d = d.with_note(
                "this is a sequence option: put it on a `$sequence` that uses the animation",
            );
        }
        self.push(d);
    }

    pub(super) fn cmdlist(&mut self, _t: &'t QcToken) -> Option<()> {
        self.usage = "$cmdlist name { command … }";
        let name = self.arg("a command list name")?;
        let mut cmds = Vec::new();
        let mut b = StyleA::new();
        while let Some(o) = self.item(&mut b) {
            match self.anim_change(o, true) {
                Some(Some(AnimChange::Commands(c))) => cmds.extend(c),
                Some(Some(_)) => {}
                Some(None) => {
                    self.unknown_anim_option(o, "animation command");
                    self.skip_line();
                }
                None => self.skip_line(),
            }
        }
        self.cmdlists.insert(name.text.to_ascii_lowercase(), cmds);
        Some(())
    }

    /// `$append`, `$continue`, `$prepend name options…` (`qc-source.md` §4.6).
    pub(super) fn amend(&mut self, t: &'t QcToken, cmd: &str) -> Option<()> {
        let kind = match cmd {
            "$continue" => Amend::Continue,
            "$prepend" => Amend::Prepend,
            _ => Amend::Append,
        };
        self.usage = "$append sequence|animation options…";
        let target = self.arg("a sequence or animation name")?;
        let seq_idx = self
            .spec
            .sequences
            .iter()
            .rposition(|s| s.name.value.eq_ignore_ascii_case(&target.text));
        let anim_idx = match seq_idx {
            Some(si) => {
                let first = self
                    .spec
                    .sequences
                    .get(si)
                    .and_then(|s| s.animations.first())
                    .map(|a| a.value.clone());
                first.and_then(|n| {
                    self.spec
                        .animations
                        .iter()
                        .position(|a| a.name.value.eq_ignore_ascii_case(&n))
                })
            }
            None => self
                .spec
                .animations
                .iter()
                .position(|a| a.name.value.eq_ignore_ascii_case(&target.text)),
        };
        if seq_idx.is_none() && anim_idx.is_none() {
            self.push(
                Diagnostic::new(
                    Code::QcUnknownName,
                    format!("`{}` names no sequence or animation", target.text),
                    target.span,
                    "not defined before here",
                )
                .with_note(format!(
                    "`{}` amends a `$sequence` or `$animation` defined earlier",
                    t.text
                )),
            );
            let mut b = StyleA::new();
            b.brace_may_follow = kind == Amend::Continue;
            while self.item(&mut b).is_some() {}
            return Some(());
        }
        let before = anim_idx
            .and_then(|i| self.spec.animations.get(i))
            .map_or(0, |a| a.commands.len());
        let mut seq = seq_idx.map(|i| self.spec.sequences.remove(i));
        let mut b = StyleA::new();
        b.brace_may_follow = kind == Amend::Continue;
        while let Some(o) = self.item(&mut b) {
            if let Some(s) = seq.as_mut() {
                match self.sequence_option(o, s) {
                    Item::Done => continue,
                    Item::Failed => {
                        self.skip_line();
                        continue;
                    }
                    Item::NotMine => {}
                }
            }
            if let Some(i) = anim_idx {
                match self.anim_item(o, i, false) {
                    Item::Done => continue,
                    Item::Failed => {
                        self.skip_line();
                        continue;
                    }
                    Item::NotMine => {}
                }
            }
            self.push(
                Diagnostic::new(
                    Code::QcOptionNotAllowed,
                    format!("`{}` cannot add the animation `{}`", t.text, o.text),
                    o.span,
                    "not an option; animations cannot be added here",
                )
                .with_note(
                    "only options and animation commands can be appended to an existing sequence",
                ),
            );
            self.skip_line();
        }
        if let (Some(i), Some(s)) = (seq_idx, seq) {
            self.spec.sequences.insert(i, s);
        }
        if kind == Amend::Prepend {
            let moved = anim_idx
                .and_then(|i| self.spec.animations.get_mut(i))
                .and_then(|a| {
                    (a.commands.len() > before).then(|| {
                        if let Some(c) = a.commands.pop() {
                            a.commands.insert(0, c);
                        }
                    })
                });
            if moved.is_none() {
                self.push(
                    Diagnostic::new(
                        Code::QcOptionNotAllowed,
                        "`$prepend` adds no animation command",
                        t.span,
                        "nothing to put first",
                    )
                    .with_note("`$prepend` moves the animation command it adds to the front; use `$append` for options"),
                );
            }
        }
        let _ = (is_open, is_close);
        Some(())
    }
}

impl<'t> Parser<'t, '_> {
    /// W0231 when a Half-Life `$sequence` word is taken for an option only because it starts
    /// like one: Valve's `Cmd_Sequence` compares `loop`, `node`, `transition` and
    /// `rtransition` by their first 4 letters and `frame` and `blend` by 5, so a file named
    /// `loop_idle` is the `loop` flag there, and here.
    fn option_by_prefix(&mut self, o: &QcToken, l: &str) {
        const OPTIONS: [(&str, usize); 6] = [
            ("loop", 4),
            ("frame", 5),
            ("blend", 5),
            ("node", 4),
            ("transition", 4),
            ("rtransition", 4),
        ];
        // earlier tests of `Cmd_Sequence` win (`fps`, `origin`, … are compared whole)
        if matches!(
            l,
            "deform" | "event" | "pivot" | "fps" | "origin" | "rotate" | "scale"
        ) {
            return;
        }
        let Some((word, _)) = OPTIONS
            .iter()
            .find(|(w, n)| l.get(..*n).is_some_and(|p| w.starts_with(p)))
        else {
            return;
        };
        if l == *word || (l == "frames" && *word == "frame") || (l == "looping" && *word == "loop")
        {
            return;
        }
        self.push(
            Diagnostic::new(
                Code::QcOptionByPrefix,
                format!("`{}` is read as the option `{word}`", o.text),
                o.span,
                format!("starts like `{word}`"),
            )
            .with_note("Valve's HL1 compiler compares `loop`, `node`, `transition` and `rtransition` by their first 4 letters, `frame` and `blend` by 5; mdlc does the same")
            .with_note(format!("help: if `{}` is an animation file, write `animation \"{}\"`", o.text, o.text)),
        );
    }
}
