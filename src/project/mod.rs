//! Project files: the engine-neutral [`ProjectSpec`](spec::ProjectSpec) that both front ends
//! produce (the TOML project format here, QC in `crate::qc`).

pub mod face;
pub mod spec;
pub mod toml;
pub mod write;

pub use spec::{ProjectSpec, Target};
