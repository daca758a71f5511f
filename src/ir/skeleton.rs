//! Bones and their rest pose.

use crate::diag::FileSpan;

use super::anim::Pose;

/// Index of a bone in [`Skeleton::bones`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoneId(pub u32);

impl BoneId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A bone: name, parent and rest pose (relative to the parent, as in the SMD).
#[derive(Clone, Debug, PartialEq)]
pub struct Bone {
    pub name: String,
    pub parent: Option<BoneId>,
    pub rest: Pose,
    /// The bone's line in `nodes`.
    pub span: FileSpan,
}

/// The bones of one source file, in `nodes` order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skeleton {
    pub bones: Vec<Bone>,
}

impl Skeleton {
    /// Finds a bone by name without regard to case (QC files name bones in any case;
    /// QUIRKS.md §2.10).
    pub fn find(&self, name: &str) -> Option<BoneId> {
        self.bones
            .iter()
            .position(|b| b.name.eq_ignore_ascii_case(name))
            .map(|i| BoneId(i as u32))
    }

    pub fn get(&self, id: BoneId) -> Option<&Bone> {
        self.bones.get(id.index())
    }

    pub fn len(&self) -> usize {
        self.bones.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bones.is_empty()
    }
}
