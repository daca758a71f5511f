//! mdlc: a compiler from SMD/QC model sources to GoldSrc (MDL v10) and Source (MDL v48, VVD,
//! VTX) models.
//!
//! # The pipeline
//!
//! ```text
//! inputs (*.smd, *.vta; later model.toml, *.qc, *.bmp)
//!   -> front ends  smd::parse            text -> syntax tree (every item with its span)
//!   -> lowering    ir::lower             syntax tree -> engine-neutral IR (full f32)
//!   -> validation, passes, back ends     (later issues)
//!   -> driver      driver                the one recipe that calls the stages; with the CLI,
//!                                        the only code that touches files
//! ```
//!
//! Every stage reports problems as [`diag::Diagnostic`]s and goes on, so one run shows every
//! independent problem. Nothing in the library panics on input, whatever the bytes.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod build;
pub mod diag;
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
