//! Back ends: binary writers (and readers, for `mdlc inspect` and tests) per engine.

pub mod goldsrc;
pub mod hash;
pub mod source;
