//! SMD front end: `logos` lexer per line, line-oriented parser into a syntax tree ([`ast`]),
//! lowered into IR pieces ([`lower`]: skeleton, mesh, frames, vertex animation).
//!
//! `parse` never fails: it returns the tree it could build and every diagnostic.

pub mod ast;
pub mod lexer;
pub mod lower;
pub mod parser;

pub use ast::SmdFile;
pub use lower::{lower_smd, lower_smd_owned, SmdModel};
pub use parser::{parse, parse_split, parse_streamed, Parsed, ReadBlocks};
