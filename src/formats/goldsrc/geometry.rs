//! GoldSrc geometry (stub; being written).

use crate::diag::{Diagnostic, Sources};
use crate::ir::model::Model;
use crate::project::files::Fs;

use super::model::{GsBodyPart, GsTexture};

/// Body parts, textures and skins of a GoldSrc model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Geometry {
    pub body_parts: Vec<GsBodyPart>,
    pub textures: Vec<GsTexture>,
    pub skins: Vec<Vec<i16>>,
}

/// Builds the body parts, textures and skin table (`goldsrc.md` §8.1-8.3, §8.8).
pub fn build_geometry(
    _model: &Model,
    _fs: &dyn Fs,
    _sources: &mut Sources,
    _diags: &mut Vec<Diagnostic>,
) -> Option<Geometry> {
    None
}
