//! GoldSrc skeleton values and animations (stub; being written).

use crate::diag::Diagnostic;
use crate::ir::model::Model;

use super::geometry::Geometry;
use super::model::{GsBone, GsHitbox, GsSeqGroup, GsSequence};

/// Bones, sequences and what depends on them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Animation {
    pub bones: Vec<GsBone>,
    pub sequences: Vec<GsSequence>,
    pub seq_groups: Vec<GsSeqGroup>,
    pub transitions: Vec<Vec<u8>>,
    pub hitboxes: Vec<GsHitbox>,
}

/// Builds bones, sequences, groups, transitions and hit boxes (`goldsrc.md` §8.4-8.7, §8.9-8.11).
pub fn build_animation(
    _model: &Model,
    _geometry: &Geometry,
    _diags: &mut Vec<Diagnostic>,
) -> Option<Animation> {
    None
}
