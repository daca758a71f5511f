//! DMX, Valve's DataModel exchange format, as a source of meshes, skeletons and animations
//! (later Source compilers read it beside SMD; Blender Source Tools writes it).
//!
//! Two layers:
//! - [`read`]: the container, a flat list of typed elements with named, typed attributes, from
//!   the binary encodings 1–5 or the `keyvalues2` text encoding;
//! - [`model`]: the `model` schema (`DmeModel`, `DmeJoint`, `DmeMesh`, `DmeVertexData`,
//!   `DmeFaceSet`, `DmeChannelsClip`) made into the same IR pieces an SMD gives
//!   ([`crate::smd::SmdModel`]), so that everything after loading is shared.
//!
//! The layouts come from the public description of the binary encoding (Valve Developer
//! Community, "DMX/Binary"), the attribute types of `public/datamodel/dmattributetypes.h`
//! (source-sdk-2013), the element and attribute names of `public/movieobjects/*.h` (same SDK),
//! and files that Blender Source Tools wrote and Valve's compiler built (the comparison is in
//! the notes of issue 16). Every file is checked against `srctools`' reader in the tests.

pub mod model;
pub mod read;

pub use model::lower_dmx;
pub use read::{parse, Dmx, Element, Value};

/// Whether `name` is a DMX file by its extension.
pub fn is_dmx_name(name: &str) -> bool {
    std::path::Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("dmx"))
}
