//! The engine-neutral intermediate representation.
//!
//! Rules every stage after lowering may rely on:
//! * Full `f32` precision; no quantisation and no engine limit is applied here (those belong to
//!   a target's passes and writers).
//! * Bones are addressed by [`BoneId`], an index into [`Skeleton::bones`]; every `BoneId` stored
//!   anywhere in a model is in range, and a bone's parent is another bone of the same skeleton.
//! * Every item keeps the [`FileSpan`](crate::diag::FileSpan) of the text it came from, so a
//!   problem found by a later pass still points at the SMD line.
//! * Vertex weights are merged per bone, free of zero weights, and add up to 1.

pub mod anim;
pub mod face;

pub mod mesh;
pub mod model;
pub mod skeleton;
pub mod written;

pub use anim::{Animation, FillRule, Pose, VertexAnimation};

pub use mesh::{Corner, Mesh, Triangle, Weight};
pub use skeleton::{Bone, BoneId, Skeleton};
