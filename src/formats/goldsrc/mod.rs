//! GoldSrc (Half-Life 1) back end: MDL v10 exactly as Valve's HL1 studiomdl writes it
//! (`goldsrc.md`), with its `T.mdl` and `NN.mdl` companions.
//!
//! Stages, in the order `compile` runs them:
//! 1. [`geometry`]: vertices and normals in bone space with Valve's precision rules, meshes,
//!    textures from 8-bit BMPs (cropped to the used texels), skin families, triangle commands
//!    from Valve's greedy strip/fan builder ([`strips`]); the BMP images come in the IR, read by
//!    the model builder (`crate::load::bmp`).
//! 2. [`animation`]: bone defaults, quantisation scales, run-length streams ([`rle`]),
//!    sequences with events, pivots, blends, motion extraction, sequence groups, transitions,
//!    sequence bounding boxes, hit boxes (given or generated).
//! 3. [`compile`]: IR model → [`model::GsModel`], header values, controllers, attachments,
//!    limits and name lengths (errors with spans).
//! 4. [`write`]: layout (`goldsrc.md` §3) → the files' bytes. [`read`] parses them back for
//!    `mdlc inspect` and the tests.

pub mod animation;
pub mod compile;
pub mod geometry;
pub mod model;
pub mod read;
pub mod rle;
pub mod strips;
pub mod texture_order;
pub mod write;
