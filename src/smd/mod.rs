//! SMD front end: `logos` lexer per line, line-oriented parser into a syntax tree ([`ast`]).
//!
//! `parse` never fails: it returns the tree it could build and every diagnostic.

pub mod ast;
pub mod lexer;
pub mod parser;

pub use ast::SmdFile;
pub use parser::{parse, Parsed};
