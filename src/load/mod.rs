//! The load stage: every file a build reads goes through here.
//!
//! * [`fs`]: the file system seen through a small trait (tests use an in-memory tree), and the
//!   lookup that falls back to another case, as QC projects written on Windows need;
//! * [`text`]: bytes made into text (UTF-8, Latin-1 with a warning, size limits);
//! * [`smd`]: SMD/VTA files found, read, parsed and lowered once per project, in parallel;
//! * [`shared`]: SMD files parsed once for all the projects of one run;
//! * [`bmp`]: the 8-bit BMP textures of GoldSrc models.
//!
//! Front ends (QC includes, the TOML file) and the model builder (`crate::build`) read through
//! it; nothing here knows a project format or an engine's file layout.

pub mod bmp;
pub mod fs;
pub mod shared;
pub mod smd;
pub mod text;

pub use fs::{find, Fs, Lookup, MemFs, RealFs};
pub use smd::{
    check_dmx, check_lone_smd, check_lone_smd_streamed, check_smd, check_smd_text, LoadedSmd,
    SmdLoader, SmdRef,
};
pub use text::{add_text, prepare_text};
