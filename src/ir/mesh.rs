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
    /// Indices into [`Mesh::corners`], in SMD order.
    pub corners: [u32; 3],
    /// The material line.
    pub span: FileSpan,
}

/// The triangles of one reference SMD.
///
/// Corners are kept once in [`Mesh::corners`] and the triangles index them: an SMD repeats a
/// shared vertex's line for every triangle that uses it (about six times in a closed mesh), and
/// the reader keeps one corner per distinct vertex line of a material, so a large mesh is
/// about a third of the memory it would be with a copy per triangle corner (issue 17). Two
/// triangles sharing a corner index have corners equal in every field, so code that reads a
/// triangle's corners by value ([`Mesh::corners_of`]) sees what a copy per corner would give.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Material names as written (trimmed), in order of first use.
    pub materials: Vec<String>,
    pub triangles: Vec<Triangle>,
    /// The corners the triangles index.
    pub corners: Vec<Corner>,
    pub weights: Vec<Weight>,
}

impl Mesh {
    /// A triangle's three corners, by value.
    #[inline]
    pub fn corners_of(&self, t: &Triangle) -> [Corner; 3] {
        t.corners.map(|i| self.corners[i as usize])
    }

    /// Every triangle's corners, in order (a corner shared by several triangles comes once
    /// for each).
    pub fn triangle_corners(&self) -> impl Iterator<Item = (&Triangle, [Corner; 3])> + '_ {
        self.triangles.iter().map(|t| (t, self.corners_of(t)))
    }

    /// Adds a triangle with corners of its own (not shared with any other triangle).
    pub fn push_triangle(&mut self, material: u32, corners: [Corner; 3], span: FileSpan) {
        let first = self.corners.len() as u32;
        self.corners.extend_from_slice(&corners);
        self.triangles.push(Triangle {
            material,
            corners: [first, first + 1, first + 2],
            span,
        });
    }

    /// The weights of a corner.
    pub fn weights_of(&self, c: &Corner) -> &[Weight] {
        self.weights
            .get(c.weights.0 as usize..(c.weights.0 + c.weights.1) as usize)
            .unwrap_or(&[])
    }
}
