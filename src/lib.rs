//! mdlc: a compiler from SMD/QC model sources to GoldSrc (MDL v10) and Source (MDL v48, VVD,
//! VTX) models.
//!
//! # The pipeline
//!
//! ```text
//! inputs (model.toml | *.qc, *.smd, *.vta, *.dmx, *.bmp)
//!   -> load        load             files found (case-insensitive fallback), read, made text;
//!                                   SMD files parsed once per run, in parallel
//!   -> front ends  smd, dmx, qc,     text or DMX bytes -> syntax -> IR pieces / ProjectSpec
//!                  project
//!   -> build       build            ProjectSpec + files -> ir::Model (engine-neutral, full f32)
//!   -> back ends   formats          ir::Model -> GsModel / SourceModel -> bytes
//!   -> outputs     output           paths, atomic writes;  inspect: reads compiled models back
//!   driver                          the recipe that calls the stages; nothing else
//! ```
//!
//! Imports go one way (docs/design.md; `tests/layers.rs` checks it): no stage uses the driver,
//! the back ends see the front ends only through the IR.
//!
//! Every stage reports problems as [`diag::Diagnostic`]s and goes on, so one run shows every
//! independent problem. Nothing in the library panics on input, whatever the bytes.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod build;
pub mod buildsys;
pub mod diag;
pub mod dmx;
pub mod driver;
pub mod formats;
pub mod fuzzing;
pub mod inspect;
pub mod ir;
pub mod load;
pub mod output;
#[cfg(test)]
mod pipeline_tests;
pub mod project;
pub mod qc;
pub mod smd;
pub mod suggest;
pub mod threads;
