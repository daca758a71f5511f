//! Triangles with their materials and bone weights.

use crate::diag::FileSpan;

use super::skeleton::BoneId;

/// One bone's share of a vertex.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weight {
    pub bone: BoneId,
    pub weight: f32,
}

/// A triangle corner in model space (rest pose).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Corner {
    pub pos: [f32; 3],
    pub normal: [f32; 3],
    /// Texture coordinates as written: `v` measured up from the bottom of the image.
    pub uv: [f32; 2],
    /// The bone in the vertex line's first column. HL1 compilers attach the vertex to it alone.
    pub bone: BoneId,
    /// `(first, count)` in [`Mesh::weights`]; never empty, adds up to 1.
    pub weights: (u32, u32),
    /// The vertex line.
    pub span: FileSpan,
}

/// A triangle: three corners in SMD order and a material.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Triangle {
    /// Index into [`Mesh::materials`].
    pub material: u32,
    pub corners: [Corner; 3],
    /// The material line.
    pub span: FileSpan,
}

/// The triangles of one reference SMD.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Material names as written (trimmed), in order of first use.
    pub materials: Vec<String>,
    pub triangles: Vec<Triangle>,
    pub weights: Vec<Weight>,
}

impl Mesh {
    /// The weights of a corner.
    pub fn weights_of(&self, c: &Corner) -> &[Weight] {
        self.weights
            .get(c.weights.0 as usize..(c.weights.0 + c.weights.1) as usize)
            .unwrap_or(&[])
    }
}
