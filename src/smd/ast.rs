//! The SMD syntax tree: exactly what the text says, each item with the [`Span`] of its line (and
//! of the tokens later stages point at). No meaning is applied here: frames stay in file order,
//! bone numbers stay as written, weights are not normalised. `crate::ir::lower` gives meaning.
//!
//! Format: `spec/seeds/smd-format.txt`; readers: `goldsrc.md` §7 (HL1 studiomdl) and
//! `source-animation.md` §2.1 (Source studiomdl).

use indexmap::IndexSet;

use crate::diag::Span;

/// A parsed SMD or VTA file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SmdFile {
    /// The `version` line's number and the span of that number.
    pub version: Option<(i32, Span)>,
    pub nodes: Option<NodesSection>,
    pub skeleton: Option<SkeletonSection>,
    pub triangles: Option<TrianglesSection>,
    pub vertex_animation: Option<VertexAnimationSection>,
}

/// `nodes` … `end`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodesSection {
    /// The `nodes` keyword.
    pub keyword: Span,
    pub nodes: Vec<Node>,
}

/// `index "name" parent`.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub index: i32,
    pub name: String,
    pub parent: i32,
    pub line: Span,
    pub index_span: Span,
    /// The name with its quotes.
    pub name_span: Span,
    pub parent_span: Span,
}

/// `skeleton` … `end`: frames in file order, as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkeletonSection {
    pub keyword: Span,
    pub frames: Vec<FrameBlock>,
}

/// One `time N` line and the bone lines after it.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameBlock {
    pub time: i32,
    /// The number after `time`.
    pub time_span: Span,
    /// The text of a `# comment` after the number (VTA shape names), trimmed.
    pub comment: Option<String>,
    pub bones: Vec<BonePose>,
}

/// `bone px py pz rx ry rz`: position relative to the parent, rotation as Euler radians.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BonePose {
    pub bone: i32,
    pub pos: [f32; 3],
    pub rot: [f32; 3],
    pub line: Span,
}

/// `triangles` … `end`.
///
/// The triangles come in runs, in file order: the earlier ones in `runs`, the last one in
/// `triangles`, `vertices` and `links`. A section read at once is one run; a long section read
/// in pieces (`smd::parse_split`) keeps each piece's run as it was read instead of copying them
/// together, so that lowering can let each go once it is lowered. Only the runs' boundaries
/// differ between the two readings ([`TrianglesSection::joined`] removes them).
///
/// A vertex line is kept once per run and material: a line that repeats, byte for byte, one
/// read earlier in the same run for a triangle of the same material (as exporters write a
/// vertex shared by several triangles) is not read again, and its corner indexes the vertex
/// read first (issue 17: an SMD repeats a closed mesh's vertex lines about six times). Each
/// corner keeps where its own line starts ([`Triangle::line`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrianglesSection {
    pub keyword: Span,
    /// Distinct material lines, trimmed, in order of first appearance.
    pub materials: IndexSet<String>,
    /// The runs before the last.
    pub runs: Vec<TriangleRun>,
    /// The last run's triangles.
    pub triangles: Vec<Triangle>,
    /// The last run's vertices, indexed by its triangles' [`Triangle::vertices`].
    pub vertices: Vec<Vertex>,
    /// The last run's links, referenced by its vertices' [`Vertex::links`].
    pub links: Vec<Link>,
}

/// A run of triangles with the vertices and links they reference (see [`TrianglesSection`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriangleRun {
    pub triangles: Vec<Triangle>,
    pub vertices: Vec<Vertex>,
    pub links: Vec<Link>,
}

/// One run's triangles, vertices and links, borrowed.
pub type RunRef<'a> = (&'a [Triangle], &'a [Vertex], &'a [Link]);

/// The links of a vertex among its run's `links` (empty for an HL1-style vertex with nine
/// values).
pub fn links_in<'a>(links: &'a [Link], v: &Vertex) -> &'a [Link] {
    links
        .get(v.links.0 as usize..(v.links.0 as usize + v.links.1 as usize))
        .unwrap_or(&[])
}

impl TrianglesSection {
    /// Every run in file order: its triangles, vertices and links.
    pub fn runs(&self) -> impl Iterator<Item = RunRef<'_>> {
        self.runs
            .iter()
            .map(|r| {
                (
                    r.triangles.as_slice(),
                    r.vertices.as_slice(),
                    r.links.as_slice(),
                )
            })
            .chain(std::iter::once((
                self.triangles.as_slice(),
                self.vertices.as_slice(),
                self.links.as_slice(),
            )))
    }

    /// The runs, taken: each is let go when the caller is done with it.
    pub fn into_runs(self) -> impl Iterator<Item = TriangleRun> {
        self.runs.into_iter().chain(std::iter::once(TriangleRun {
            triangles: self.triangles,
            vertices: self.vertices,
            links: self.links,
        }))
    }

    /// How many triangles all the runs hold.
    pub fn triangle_count(&self) -> usize {
        self.runs().map(|r| r.0.len()).sum()
    }

    /// How many vertices all the runs hold.
    pub fn vertex_count(&self) -> usize {
        self.runs().map(|r| r.1.len()).sum()
    }

    /// The section as one run with a vertex of its own for every corner, each with its own
    /// line, and links renumbered as a reading without shared lines numbers them (a vertex with
    /// a link count, even 0, points past the links read before it). Two readings of the same
    /// text join to the same section however their runs were cut and lines shared.
    pub fn joined(&self) -> TrianglesSection {
        let mut out = TrianglesSection {
            keyword: self.keyword,
            materials: self.materials.clone(),
            ..TrianglesSection::default()
        };
        for (tris, verts, links) in self.runs() {
            for t in tris {
                let mut ids = [0u32; 3];
                for (k, id) in ids.iter_mut().enumerate() {
                    let mut v = t.vertex(verts, k).copied().unwrap_or_default();
                    v.line = t.line(k, &v);
                    if v.has_link_count {
                        let own = links_in(links, &v);
                        v.links.0 = out.links.len() as u32;
                        out.links.extend_from_slice(own);
                    }
                    *id = out.vertices.len() as u32;
                    out.vertices.push(v);
                }
                out.triangles.push(Triangle {
                    vertices: ids,
                    lines: t.lines,
                    ..*t
                });
            }
        }
        out
    }

    pub fn material_name(&self, t: &Triangle) -> &str {
        self.materials
            .get_index(t.material as usize)
            .map_or("", |s| s.as_str())
    }
}

/// A material line and three vertex lines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Triangle {
    /// Index into [`TrianglesSection::materials`].
    pub material: u32,
    pub material_span: Span,
    /// Indices into its run's vertices.
    pub vertices: [u32; 3],
    /// Where each corner's own line starts (its vertex may have been read from an earlier
    /// line with the same text).
    pub lines: [u32; 3],
}

impl Triangle {
    /// Corner `k`'s vertex among its run's `vertices`.
    pub fn vertex<'a>(&self, vertices: &'a [Vertex], k: usize) -> Option<&'a Vertex> {
        self.vertices.get(k).and_then(|&i| vertices.get(i as usize))
    }

    /// Corner `k`'s own line, given its vertex `v` (read from a line of the same text, so of
    /// the same length).
    pub fn line(&self, k: usize, v: &Vertex) -> Span {
        let start = self.lines.get(k).copied().unwrap_or(v.line.start);
        Span::new(start, start + (v.line.end - v.line.start))
    }
}

/// `bone x y z nx ny nz u v [links bone weight …]`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Vertex {
    pub bone: i32,
    pub pos: [f32; 3],
    pub normal: [f32; 3],
    pub uv: [f32; 2],
    /// `(first, count)` in [`TrianglesSection::links`].
    pub links: (u32, u32),
    /// Whether the line had the link count (ten or more values), even `0`.
    pub has_link_count: bool,
    pub line: Span,
}

/// One `bone weight` pair of a vertex.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    pub bone: i32,
    pub weight: f32,
}

/// `vertexanimation` … `end` (VTA files).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexAnimationSection {
    pub keyword: Span,
    pub frames: Vec<VertexFrame>,
}

/// One `time N` block of vertex animation.
#[derive(Clone, Debug, PartialEq)]
pub struct VertexFrame {
    pub time: i32,
    pub time_span: Span,
    pub vertices: Vec<VertexDelta>,
}

/// `index x y z nx ny nz`: a corner of the reference mesh (counted over triangle corners in
/// file order, not unique vertices; QUIRKS.md §2.11) and its position and normal in this shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VertexDelta {
    pub index: u32,
    pub pos: [f32; 3],
    pub normal: [f32; 3],
    pub line: Span,
}
