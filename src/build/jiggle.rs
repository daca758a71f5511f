//! `$jigglebone` (Source): a bone the game's client moves as a spring around its animated pose
//! (source-sdk-2013 `public/jigglebones.cpp`, `CJiggleBones::BuildJiggleTransformations`;
//! `game/client/c_baseanimating.cpp` runs it for a bone with `BONE_ALWAYS_PROCEDURAL` and
//! `proctype` `STUDIO_PROC_JIGGLE`). Each group of the QC block sets its flag and the record's
//! values it names (`mstudiojigglebone_t`, source-sdk-2013 `public/studio.h`):
//!
//! - `is_flexible`, `is_rigid`: `JIGGLE_IS_FLEXIBLE`/`JIGGLE_IS_RIGID` and
//!   `JIGGLE_HAS_LENGTH_CONSTRAINT` (the tip stays `length` from the base: `jigglebones.cpp`
//!   projects it back every step when the flag is set, and only `allow_length_flex` clears it,
//!   which lets `along_stiffness`/`along_damping` act instead). `angle_constraint`,
//!   `yaw_constraint min max` and `pitch_constraint min max` set their flags; they are written
//!   in degrees and stored in radians.
//! - `has_base_spring`: `JIGGLE_HAS_BASE_SPRING`; its ranges are distances (no conversion).
//! - `is_boing`: `JIGGLE_IS_BOING`. The engine compares `boingImpactAngle` with the dot product
//!   of two unit velocities, so the QC's angle (degrees) is stored as its cosine. That is read
//!   from the engine, not from a compiler: unverified against a Valve build.
//!
//! A property the block leaves out keeps its value from [`DEFAULTS`].

use crate::diag::{Code, Diagnostic};
use crate::ir::model::{jiggle_flag as flag, JiggleParams, ModelBone, ProcBone, ProcRule};
use crate::project::spec::{JiggleGroup, JiggleKind};

use super::procedural::find_bone;
use super::Builder;

/// The record's values before any property is read (indices as in
/// [`JIGGLE_FIELDS`](crate::ir::model::JIGGLE_FIELDS)), whichever groups the block has.
///
/// Established from Valve builds (the Gmod compiler's v48 `.mdl` files committed beside their
/// QCs in TURB0000/Gmod-models: Cortana at 222a676, Mahiro at b02a488): `alongStiffness` 100
/// and `alongDamping` 0 when `is_flexible` leaves them out; the base spring's stiffness 100,
/// ranges ±100 and mass, damping and frictions 0 without `has_base_spring`; yaw and pitch ranges,
/// frictions and bounces 0; every boing value 0 without `is_boing`.
///
/// Not established (no Valve build of a block that leaves them out was found): the yaw and
/// pitch springs take the stiffness 100 and damping 0 of the two springs that are established;
/// `tip_mass` takes 0, the base's mass; `length` takes 10, and a tip group without `length`
/// gets `W0419`, since a length the engine would aim from is the one value a tip cannot do
/// without.
pub(crate) const DEFAULTS: [f32; 34] = [
    10.0, 0.0, // length, tipMass
    100.0, 0.0, 100.0, 0.0, 100.0, 0.0, // yaw, pitch, along springs
    0.0, // angleLimit
    0.0, 0.0, 0.0, 0.0, // yaw range, friction, bounce
    0.0, 0.0, 0.0, 0.0, // pitch range, friction, bounce
    0.0, 100.0, 0.0, // baseMass, baseStiffness, baseDamping
    -100.0, 100.0, 0.0, // left range, friction
    -100.0, 100.0, 0.0, // up
    -100.0, 100.0, 0.0, // forward
    0.0, 0.0, 0.0, 0.0, 0.0, // boing
];

/// The value `length` takes when a tip group leaves it out (see [`DEFAULTS`]).
pub(crate) const DEFAULT_LENGTH: f32 = DEFAULTS[0];

/// How a property's numbers are stored.
#[derive(Clone, Copy)]
enum Unit {
    /// As written.
    Plain,
    /// Degrees, stored in radians.
    Degrees,
    /// Degrees, stored as the cosine of the angle.
    Cosine,
}

/// Where a property goes: the record fields its numbers fill, their unit, and the flag it sets.
fn target(name: &str) -> Option<(&'static [usize], Unit, i32)> {
    use Unit::*;
    Some(match name {
        "length" => (&[0], Plain, 0),
        "tip_mass" => (&[1], Plain, 0),
        "yaw_stiffness" => (&[2], Plain, 0),
        "yaw_damping" => (&[3], Plain, 0),
        "pitch_stiffness" => (&[4], Plain, 0),
        "pitch_damping" => (&[5], Plain, 0),
        "along_stiffness" => (&[6], Plain, 0),
        "along_damping" => (&[7], Plain, 0),
        "angle_constraint" => (&[8], Degrees, flag::HAS_ANGLE_CONSTRAINT),
        "yaw_constraint" => (&[9, 10], Degrees, flag::HAS_YAW_CONSTRAINT),
        "yaw_friction" => (&[11], Plain, 0),
        "yaw_bounce" => (&[12], Plain, 0),
        "pitch_constraint" => (&[13, 14], Degrees, flag::HAS_PITCH_CONSTRAINT),
        "pitch_friction" => (&[15], Plain, 0),
        "pitch_bounce" => (&[16], Plain, 0),
        "base_mass" => (&[17], Plain, 0),
        "stiffness" => (&[18], Plain, 0),
        "damping" => (&[19], Plain, 0),
        "left_constraint" => (&[20, 21], Plain, 0),
        "left_friction" => (&[22], Plain, 0),
        "up_constraint" => (&[23, 24], Plain, 0),
        "up_friction" => (&[25], Plain, 0),
        "forward_constraint" => (&[26, 27], Plain, 0),
        "forward_friction" => (&[28], Plain, 0),
        "impact_speed" => (&[29], Plain, 0),
        "impact_angle" => (&[30], Cosine, 0),
        "damping_rate" => (&[31], Plain, 0),
        "frequency" => (&[32], Plain, 0),
        "amplitude" => (&[33], Plain, 0),
        _ => return None,
    })
}

/// The record a `$jigglebone`'s groups make.
pub(crate) fn params(groups: &[JiggleGroup]) -> JiggleParams {
    let mut p = JiggleParams {
        flags: 0,
        values: DEFAULTS,
    };
    let mut length_flex = false;
    for g in groups {
        p.flags |= match g.kind.value {
            JiggleKind::Flexible => flag::IS_FLEXIBLE | flag::HAS_LENGTH_CONSTRAINT,
            JiggleKind::Rigid => flag::IS_RIGID | flag::HAS_LENGTH_CONSTRAINT,
            JiggleKind::BaseSpring => flag::HAS_BASE_SPRING,
            JiggleKind::Boing => flag::IS_BOING,
        };
        for prop in &g.props {
            if prop.name.value == "allow_length_flex" {
                length_flex = true;
                continue;
            }
            let Some((fields, unit, f)) = target(&prop.name.value) else {
                continue;
            };
            p.flags |= f;
            for (&i, &v) in fields.iter().zip(&prop.values) {
                let v = match unit {
                    Unit::Plain => v,
                    Unit::Degrees => f64::from(v).to_radians() as f32,
                    Unit::Cosine => f64::from(v).to_radians().cos() as f32,
                };
                if let Some(slot) = p.values.get_mut(i) {
                    *slot = v;
                }
            }
        }
    }
    // wherever it is written: the groups of one bone are one record
    if length_flex {
        p.flags &= !flag::HAS_LENGTH_CONSTRAINT;
    }
    p
}

impl Builder<'_> {
    /// Every `$jigglebone`, resolved against the skeleton, added to the procedural bones. A
    /// bone not in the model is dropped with `W0416`; a bone that already has a procedural
    /// rule takes the jiggle rule instead, with `W0417` (one bone has one `proctype`).
    pub(super) fn jiggle_bones(&mut self, bones: &[ModelBone], procedural: &mut Vec<ProcBone>) {
        for j in &self.spec.jiggle_bones {
            let Some(bone) = find_bone(bones, &j.bone.value) else {
                self.diags.push(
                    Diagnostic::new(
                        Code::BuildJiggleUnused,
                        format!(
                            "jiggle bone `{}` is not in the model; its `$jigglebone` is dropped",
                            j.bone.value
                        ),
                        j.bone.span.span(),
                        "no bone of this name",
                    )
                    .with_note(
                        "a bone is in the model when a mesh, animation or `$definebone` has it",
                    ),
                );
                continue;
            };
            let has = |k: JiggleKind| j.groups.iter().find(|g| g.kind.value == k);
            for (a, b, wins) in [
                (
                    JiggleKind::Rigid,
                    JiggleKind::Flexible,
                    "`is_flexible` group",
                ),
                (JiggleKind::Boing, JiggleKind::BaseSpring, "base spring"),
            ] {
                if let (Some(ga), Some(_)) = (has(a), has(b)) {
                    self.diags.push(
                        Diagnostic::new(
                            Code::BuildJiggleConflict,
                            format!("`{}` and `{}` in one `$jigglebone`", a.word(), b.word()),
                            ga.kind.span.span(),
                            "not used with the other",
                        )
                        .with_note(format!(
                            "both are written; the engine simulates the bone with the {wins} only (source-sdk-2013 `jigglebones.cpp`)"
                        )),
                    );
                }
            }
            for g in &j.groups {
                let tip = matches!(g.kind.value, JiggleKind::Flexible | JiggleKind::Rigid);
                if tip
                    && !j
                        .groups
                        .iter()
                        .flat_map(|g| &g.props)
                        .any(|p| p.name.value == "length")
                {
                    self.diags.push(
                        Diagnostic::new(
                            Code::BuildJiggleNoLength,
                            format!("`{}` of `{}` has no `length`", g.kind.value.word(), j.bone.value),
                            g.kind.span.span(),
                            format!("mdlc writes length {DEFAULT_LENGTH}"),
                        )
                        .with_note("the tip's distance from the bone along its Z axis; the value Valve's compiler writes without it is not known"),
                    );
                    break;
                }
            }
            if let Some(old) = procedural.iter().position(|p| p.bone == bone) {
                let what = match procedural[old].rule {
                    ProcRule::Jiggle(_) => "an earlier `$jigglebone`",
                    _ => "a `$proceduralbones` rule",
                };
                self.diags.push(
                    Diagnostic::new(
                        Code::BuildJiggleReplaces,
                        format!(
                            "`{}` already has {what}; this `$jigglebone` replaces it",
                            j.bone.value
                        ),
                        j.bone.span.span(),
                        "replaces the bone's procedural rule",
                    )
                    .with_note("a bone has one procedural rule in the model; the last one given is written"),
                );
                procedural.remove(old);
            }
            procedural.push(ProcBone {
                bone,
                rule: ProcRule::Jiggle(params(&j.groups)),
                span: j.bone.span.span(),
            });
        }
    }
}
