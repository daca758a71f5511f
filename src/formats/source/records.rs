//! On-disk records of MDL v48, VVD v4 and VTX v7: one Rust struct per Valve struct, with the
//! field names of `studio.h` / `optimize.h` (Source SDK 2013), little-endian, 32-bit layout,
//! no padding (the VTX is `pack(1)`; the MDL/VVD records have no implicit padding either).
//! Sizes are checked against `source-geometry.md` by the tests at the end.

/// A value with a fixed little-endian encoding.
pub trait Le: Sized + Copy + Default {
    const SIZE: usize;
    fn put(&self, out: &mut Vec<u8>);
    /// Reads from the start of `b`, which holds at least `SIZE` bytes.
    fn get(b: &[u8]) -> Self;
}

macro_rules! le_prim {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
le_prim!(u8, i8, u16, i16, u32, i32, f32);

impl<T: Le, const N: usize> Le for [T; N]
where
    [T; N]: Default,
{
    const SIZE: usize = T::SIZE * N;
    fn put(&self, out: &mut Vec<u8>) {
        for v in self {
            v.put(out);
        }
    }
    fn get(b: &[u8]) -> Self {
        let mut a: [T; N] = Default::default();
        for (i, v) in a.iter_mut().enumerate() {
            *v = T::get(&b[i * T::SIZE..]);
        }
        a
    }
}

/// A fixed 64-byte text field (`char name[64]`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Name64(pub [u8; 64]);

impl Default for Name64 {
    fn default() -> Self {
        Name64([0; 64])
    }
}

impl std::fmt::Debug for Name64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl Name64 {
    /// The text, cut at 63 bytes so a NUL always ends it.
    pub fn new(s: &str) -> Self {
        let mut a = [0u8; 64];
        let b = s.as_bytes();
        let n = b.len().min(63);
        a[..n].copy_from_slice(&b[..n]);
        Name64(a)
    }

    pub fn as_str(&self) -> String {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }
}

impl Le for Name64 {
    const SIZE: usize = 64;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
    fn get(b: &[u8]) -> Self {
        let mut a = [0u8; 64];
        a.copy_from_slice(&b[..64]);
        Name64(a)
    }
}

/// Options (`char options[64]`) of `mstudioevent_t` are the same shape.
pub type Vector = [f32; 3];
pub type Quaternion = [f32; 4];
pub type Matrix3x4 = [[f32; 4]; 3];

macro_rules! record {
    ($(#[doc = $doc:literal])* $name:ident = $size:literal { $( $(#[doc = $fdoc:literal])* $f:ident : $t:ty ),* $(,)? }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name { $( $(#[doc = $fdoc])* pub $f: $t, )* }

        impl $name {
            /// Size on disk, as the spec gives it.
            pub const DISK_SIZE: usize = $size;
        }

        impl Le for $name {
            const SIZE: usize = 0 $( + <$t as Le>::SIZE )*;
            fn put(&self, out: &mut Vec<u8>) {
                $( self.$f.put(out); )*
            }
            #[allow(unused_assignments)]
            fn get(b: &[u8]) -> Self {
                let mut at = 0usize;
                $(
                    let $f = <$t as Le>::get(&b[at..]);
                    at += <$t as Le>::SIZE;
                )*
                $name { $( $f, )* }
            }
        }
    };
}

// --- MDL --------------------------------------------------------------------------------------

record!(
    /// `studiohdr_t`, at file offset 0.
    StudioHdr = 408 {
        id: i32, version: i32, checksum: i32, name: Name64, length: i32,
        eyeposition: Vector, illumposition: Vector, hull_min: Vector, hull_max: Vector,
        view_bbmin: Vector, view_bbmax: Vector, flags: i32,
        numbones: i32, boneindex: i32, numbonecontrollers: i32, bonecontrollerindex: i32,
        numhitboxsets: i32, hitboxsetindex: i32, numlocalanim: i32, localanimindex: i32,
        numlocalseq: i32, localseqindex: i32, activitylistversion: i32, eventsindexed: i32,
        numtextures: i32, textureindex: i32, numcdtextures: i32, cdtextureindex: i32,
        numskinref: i32, numskinfamilies: i32, skinindex: i32,
        numbodyparts: i32, bodypartindex: i32, numlocalattachments: i32, localattachmentindex: i32,
        numlocalnodes: i32, localnodeindex: i32, localnodenameindex: i32,
        numflexdesc: i32, flexdescindex: i32, numflexcontrollers: i32, flexcontrollerindex: i32,
        numflexrules: i32, flexruleindex: i32, numikchains: i32, ikchainindex: i32,
        nummouths: i32, mouthindex: i32, numlocalposeparameters: i32, localposeparamindex: i32,
        surfacepropindex: i32, keyvalueindex: i32, keyvaluesize: i32,
        numlocalikautoplaylocks: i32, localikautoplaylockindex: i32,
        mass: f32, contents: i32, numincludemodels: i32, includemodelindex: i32,
        virtual_model: i32, szanimblocknameindex: i32, numanimblocks: i32, animblockindex: i32,
        animblock_model: i32, bonetablebynameindex: i32, p_vertex_base: i32, p_index_base: i32,
        constdirectionallightdot: u8, root_lod: u8, num_allowed_root_lods: u8, unused: u8,
        unused4: i32, numflexcontrollerui: i32, flexcontrolleruiindex: i32,
        fl_vert_anim_fixed_point_scale: f32, unused3: i32, studiohdr2index: i32, unused2: i32,
    }
);

record!(
    /// `studiohdr2_t`, right after the header.
    StudioHdr2 = 256 {
        numsrcbonetransform: i32, srcbonetransformindex: i32, illumpositionattachmentindex: i32,
        fl_max_eye_deflection: f32, linearboneindex: i32, sznameindex: i32,
        m_n_bone_flex_driver_count: i32, m_n_bone_flex_driver_index: i32,
        reserved: [[i32; 8]; 7],
    }
);

record!(
    /// `mstudiobone_t`.
    Bone = 216 {
        sznameindex: i32, parent: i32, bonecontroller: [i32; 6],
        pos: Vector, quat: Quaternion, rot: Vector, posscale: Vector, rotscale: Vector,
        pose_to_bone: Matrix3x4, q_alignment: Quaternion, flags: i32, proctype: i32,
        procindex: i32, physicsbone: i32, surfacepropidx: i32, contents: i32, unused: [i32; 8],
    }
);

record!(
    /// `mstudioattachment_t`.
    Attachment = 92 {
        sznameindex: i32, flags: u32, localbone: i32, local: Matrix3x4, unused: [i32; 8],
    }
);

record!(
    /// `mstudiohitboxset_t`.
    HitboxSet = 12 { sznameindex: i32, numhitboxes: i32, hitboxindex: i32 }
);

record!(
    /// `mstudiobbox_t`.
    BBox = 68 {
        bone: i32, group: i32, bbmin: Vector, bbmax: Vector, szhitboxnameindex: i32,
        unused: [i32; 8],
    }
);

record!(
    /// `mstudioanimdesc_t`.
    AnimDesc = 100 {
        baseptr: i32, sznameindex: i32, fps: f32, flags: i32, numframes: i32,
        nummovements: i32, movementindex: i32, unused1: [i32; 6], animblock: i32,
        animindex: i32, numikrules: i32, ikruleindex: i32, animblockikruleindex: i32,
        numlocalhierarchy: i32, localhierarchyindex: i32, sectionindex: i32,
        sectionframes: i32, zeroframespan: i16, zeroframecount: i16, zeroframeindex: i32,
        zeroframestalltime: f32,
    }
);

record!(
    /// `mstudioseqdesc_t`.
    SeqDesc = 212 {
        baseptr: i32, szlabelindex: i32, szactivitynameindex: i32, flags: i32, activity: i32,
        actweight: i32, numevents: i32, eventindex: i32, bbmin: Vector, bbmax: Vector,
        numblends: i32, animindexindex: i32, movementindex: i32, groupsize: [i32; 2],
        paramindex: [i32; 2], paramstart: [f32; 2], paramend: [f32; 2], paramparent: i32,
        fadeintime: f32, fadeouttime: f32, localentrynode: i32, localexitnode: i32,
        nodeflags: i32, entryphase: f32, exitphase: f32, lastframe: f32, nextseq: i32,
        pose: i32, numikrules: i32, numautolayers: i32, autolayerindex: i32,
        weightlistindex: i32, posekeyindex: i32, numiklocks: i32, iklockindex: i32,
        keyvalueindex: i32, keyvaluesize: i32, cycleposeindex: i32,
        activitymodifierindex: i32, numactivitymodifiers: i32, unused: [i32; 5],
    }
);

record!(
    /// `mstudiomovement_t` (`source-animation.md` 3.3): one piece of an animation's root motion.
    Movement = 44 {
        endframe: i32, motionflags: i32, v0: f32, v1: f32, angle: f32, vector: Vector,
        position: Vector,
    }
);

record!(
    /// `mstudioanimsections_t` (3.2): where one section's record chain is.
    AnimSection = 8 { animblock: i32, animindex: i32 }
);

record!(
    /// `mstudioanimblock_t` (source-sdk-2013 `public/studio.h`): where one block of the `.ani`
    /// file is (byte offsets into that file; entry 0, the MDL itself, is unused).
    AnimBlock = 8 { datastart: i32, dataend: i32 }
);

record!(
    /// `mstudioevent_t` (6.3).
    Event = 80 { cycle: f32, event: i32, r#type: i32, options: Name64, szeventindex: i32 }
);

record!(
    /// `mstudioautolayer_t` (6.7).
    AutoLayer = 24 {
        i_sequence: i16, i_pose: i16, flags: i32, start: f32, peak: f32, tail: f32, end: f32,
    }
);

record!(
    /// `mstudioiklock_t` (3.4).
    IkLock = 32 {
        chain: i32, fl_pos_weight: f32, fl_local_q_weight: f32, flags: i32, unused: [i32; 4],
    }
);

record!(
    /// `mstudioquatinterpbone_t` (source-sdk-2013 `studio.h`): control bone, triggers.
    QuatInterpBone = 12 { control: i32, numtriggers: i32, triggerindex: i32 }
);

record!(
    /// `mstudioquatinterpinfo_t`: one trigger of a quaternion-interpolated bone.
    QuatInterpInfo = 48 { inv_tolerance: f32, trigger: Quaternion, pos: Vector, quat: Quaternion }
);

record!(
    /// `mstudioaimatbone_t`: parent, aim (attachment or bone), aim and up vectors, base position.
    AimAtBone = 44 { parent: i32, aim: i32, aimvector: Vector, upvector: Vector, basepos: Vector }
);

record!(
    /// `mstudiojigglebone_t` (source-sdk-2013 `public/studio.h`): the `JIGGLE_*` flags, then
    /// the tip's 17 values (`length` … `pitchBounce`), the base spring's 12 (`baseMass` …
    /// `baseForwardFriction`) and the boing's 5 (`boingImpactSpeed` … `boingAmplitude`), in
    /// the order of `crate::ir::model::JIGGLE_FIELDS`. `source-geometry.md` §9.1 row 4 leaves
    /// its size open; the 2013 header gives 140 bytes (the boing's 5 values came last, after
    /// 2007, and an engine that predates them reads only the first 120).
    JiggleBone = 140 { flags: i32, tip: [f32; 17], base: [f32; 12], boing: [f32; 5] }
);

impl JiggleBone {
    /// The record's floats in `JIGGLE_FIELDS` order.
    pub fn values(&self) -> [f32; 34] {
        let mut v = [0.0; 34];
        for (o, i) in v
            .iter_mut()
            .zip(self.tip.iter().chain(&self.base).chain(&self.boing))
        {
            *o = *i;
        }
        v
    }

    /// The record of the flags and floats in `JIGGLE_FIELDS` order.
    pub fn from_values(flags: i32, v: &[f32; 34]) -> Self {
        let mut r = JiggleBone {
            flags,
            ..Default::default()
        };
        for (o, i) in r
            .tip
            .iter_mut()
            .chain(&mut r.base)
            .chain(&mut r.boing)
            .zip(v)
        {
            *o = *i;
        }
        r
    }
}

record!(
    /// `mstudioaxisinterpbone_t`: control bone, axis, six poses.
    AxisInterpBone = 176 { control: i32, axis: i32, pos: [Vector; 6], quat: [Quaternion; 6] }
);

record!(
    /// `mstudioikrule_t` (`source-animation.md` 3.4): one IK rule of an animation; its frames
    /// as cycles, its error data relative to the record.
    IkRule = 152 {
        index: i32, r#type: i32, chain: i32, bone: i32, slot: i32, height: f32, radius: f32,
        floor: f32, pos: Vector, q: Quaternion, compressedikerrorindex: i32, unused2: i32,
        i_start: i32, ikerrorindex: i32, start: f32, peak: f32, tail: f32, end: f32,
        unused3: f32, contact: f32, drop: f32, top: f32, unused6: i32, unused7: i32,
        unused8: i32, szattachmentindex: i32, unused: [i32; 7],
    }
);

record!(
    /// `mstudiocompressedikerror_t` (3.4): six scales, then six offsets (from this record) of
    /// the run-length streams of x, y, z and the Euler angles.
    CompressedIkError = 36 { scale: [f32; 6], offset: [i16; 6] }
);

record!(
    /// `mstudioikchain_t` (source-sdk-2013 `public/studio.h`): name, link type, links.
    IkChainRec = 16 { sznameindex: i32, linktype: i32, numlinks: i32, linkindex: i32 }
);

record!(
    /// `mstudioiklink_t` (source-sdk-2013 `public/studio.h`): bone, knee direction, unused.
    IkLink = 28 { bone: i32, knee_dir: [f32; 3], unused0: [f32; 3] }
);

record!(
    /// `mstudioposeparamdesc_t` (6.5).
    PoseParamDesc = 20 { sznameindex: i32, flags: i32, start: f32, end: f32, r#loop: f32 }
);

record!(
    /// `mstudiobonecontroller_t` (8.1).
    BoneController = 56 {
        bone: i32, r#type: i32, start: f32, end: f32, rest: i32, inputfield: i32,
        unused: [i32; 8],
    }
);

record!(
    /// `mstudiobodyparts_t`.
    BodyParts = 16 { sznameindex: i32, nummodels: i32, base: i32, modelindex: i32 }
);

record!(
    /// `mstudiomodel_t`.
    StudioModel = 148 {
        name: Name64, r#type: i32, boundingradius: f32, nummeshes: i32, meshindex: i32,
        numvertices: i32, vertexindex: i32, tangentsindex: i32, numattachments: i32,
        attachmentindex: i32, numeyeballs: i32, eyeballindex: i32, vertexdata: [i32; 2],
        unused: [i32; 8],
    }
);

record!(
    /// `mstudiomesh_t` (with its `mstudio_meshvertexdata_t`).
    StudioMesh = 116 {
        material: i32, modelindex: i32, numvertices: i32, vertexoffset: i32, numflexes: i32,
        flexindex: i32, materialtype: i32, materialparam: i32, meshid: i32, center: Vector,
        modelvertexdata: i32, num_lod_vertexes: [i32; 8], unused: [i32; 8],
    }
);

record!(
    /// `mstudioeyeball_t` (`public/studio.h`; v48 layout: the name offset, then the eyeball in
    /// its bone's space, the lid flexes and targets; `texture` and the unused fields 0 as in
    /// Valve's later builds).
    StudioEyeball = 172 {
        sznameindex: i32, bone: i32, org: Vector, zoffset: f32, radius: f32, up: Vector,
        forward: Vector, texture: i32, unused1: i32, iris_scale: f32, unused2: i32,
        upperflexdesc: [i32; 3], lowerflexdesc: [i32; 3], uppertarget: [f32; 3],
        lowertarget: [f32; 3], upperlidflexdesc: i32, lowerlidflexdesc: i32, unused: [i32; 4],
        nonfacs_and_unused3: i32, unused4: [i32; 7],
    }
);

record!(
    /// `mstudiotexture_t`.
    Texture = 64 {
        sznameindex: i32, flags: i32, used: i32, unused1: i32, material: i32,
        clientmaterial: i32, unused: [i32; 10],
    }
);

// --- VVD --------------------------------------------------------------------------------------

record!(
    /// `vertexFileHeader_t`.
    VertexFileHeader = 64 {
        id: i32, version: i32, checksum: i32, num_lods: i32, num_lod_vertexes: [i32; 8],
        num_fixups: i32, fixup_table_start: i32, vertex_data_start: i32,
        tangent_data_start: i32,
    }
);

record!(
    /// `vertexFileFixup_t`.
    VertexFileFixup = 12 { lod: i32, source_vertex_id: i32, num_vertexes: i32 }
);

record!(
    /// `mstudiovertex_t` (with `mstudioboneweight_t`).
    StudioVertex = 48 {
        weight: [f32; 3], bone: [i8; 3], numbones: u8, vec_position: Vector,
        vec_normal: Vector, vec_tex_coord: [f32; 2],
    }
);

// --- VTX (pack(1)) ----------------------------------------------------------------------------

record!(
    /// `FileHeader_t`.
    VtxFileHeader = 36 {
        version: i32, vert_cache_size: i32, max_bones_per_strip: u16, max_bones_per_tri: u16,
        max_bones_per_vert: i32, check_sum: i32, num_lods: i32,
        material_replacement_list_offset: i32, num_body_parts: i32, body_part_offset: i32,
    }
);

record!(
    /// `BodyPartHeader_t`.
    VtxBodyPart = 8 { num_models: i32, model_offset: i32 }
);

record!(
    /// `ModelHeader_t`.
    VtxModel = 8 { num_lods: i32, lod_offset: i32 }
);

record!(
    /// `ModelLODHeader_t`.
    VtxModelLod = 12 { num_meshes: i32, mesh_offset: i32, switch_point: f32 }
);

record!(
    /// `MeshHeader_t`.
    VtxMesh = 9 { num_strip_groups: i32, strip_group_header_offset: i32, flags: u8 }
);

record!(
    /// `StripGroupHeader_t` (25 bytes in SDK 2013).
    VtxStripGroup = 25 {
        num_verts: i32, vert_offset: i32, num_indices: i32, index_offset: i32,
        num_strips: i32, strip_offset: i32, flags: u8,
    }
);

record!(
    /// `StripHeader_t` (27 bytes in SDK 2013).
    VtxStrip = 27 {
        num_indices: i32, index_offset: i32, num_verts: i32, vert_offset: i32,
        num_bones: i16, flags: u8, num_bone_state_changes: i32, bone_state_change_offset: i32,
    }
);

record!(
    /// `Vertex_t`.
    VtxVertex = 9 {
        bone_weight_index: [u8; 3], num_bones: u8, orig_mesh_vert_id: u16, bone_id: [i8; 3],
    }
);

record!(
    /// `BoneStateChangeHeader_t`.
    VtxBoneStateChange = 8 { hardware_id: i32, new_bone_id: i32 }
);

record!(
    /// `MaterialReplacementListHeader_t`.
    VtxMaterialReplacementList = 8 { num_replacements: i32, replacement_offset: i32 }
);

// --- writing and reading ----------------------------------------------------------------------

/// A growing little-endian image with placeholders patched later.
#[derive(Default)]
pub struct Out {
    pub bytes: Vec<u8>,
}

impl Out {
    /// An image with room for `n` bytes (its size when known, so that it is not grown).
    pub fn with_capacity(n: usize) -> Self {
        Out {
            bytes: Vec::with_capacity(n),
        }
    }

    pub fn pos(&self) -> usize {
        self.bytes.len()
    }

    pub fn put<T: Le>(&mut self, v: &T) -> usize {
        let at = self.pos();
        v.put(&mut self.bytes);
        at
    }

    /// Writes `T` at `at`, which was reserved earlier.
    pub fn put_at<T: Le>(&mut self, at: usize, v: &T) {
        let mut tmp = Vec::with_capacity(T::SIZE);
        v.put(&mut tmp);
        if let Some(dst) = self.bytes.get_mut(at..at + T::SIZE) {
            dst.copy_from_slice(&tmp);
        }
    }

    pub fn zeros(&mut self, n: usize) -> usize {
        let at = self.pos();
        self.bytes.resize(at + n, 0);
        at
    }

    pub fn align(&mut self, a: usize) {
        while self.bytes.len() % a != 0 {
            self.bytes.push(0);
        }
    }
}

/// Reads record `T` at `at` in `b`, or says why it cannot.
pub fn read<T: Le>(b: &[u8], at: i64, what: &str) -> Result<T, String> {
    if at < 0 || (at as u64).saturating_add(T::SIZE as u64) > b.len() as u64 {
        return Err(format!(
            "{what} at offset {at} ({} bytes) runs past the end of the file ({} bytes)",
            T::SIZE,
            b.len()
        ));
    }
    Ok(T::get(&b[at as usize..]))
}

/// The NUL-terminated string at `at`.
pub fn read_cstr(b: &[u8], at: i64) -> Result<String, String> {
    if at < 0 || at as u64 >= b.len() as u64 {
        return Err(format!("string at offset {at} is outside the file"));
    }
    let s = &b[at as usize..];
    let end = s
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| format!("string at offset {at} has no terminating NUL"))?;
    Ok(String::from_utf8_lossy(&s[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! sizes {
        ($($t:ty),*) => {$(
            assert_eq!(<$t as Le>::SIZE, <$t>::DISK_SIZE, stringify!($t));
            let mut v = Vec::new();
            <$t>::default().put(&mut v);
            assert_eq!(v.len(), <$t>::DISK_SIZE, stringify!($t));
        )*};
    }

    #[test]
    fn record_sizes_match_the_spec() {
        sizes!(
            StudioHdr,
            StudioHdr2,
            Bone,
            Attachment,
            HitboxSet,
            BBox,
            AnimDesc,
            SeqDesc,
            Movement,
            AnimSection,
            AnimBlock,
            Event,
            AutoLayer,
            IkLock,
            IkRule,
            CompressedIkError,
            QuatInterpBone,
            QuatInterpInfo,
            AimAtBone,
            JiggleBone,
            AxisInterpBone,
            PoseParamDesc,
            BoneController,
            BodyParts,
            StudioModel,
            StudioMesh,
            StudioEyeball,
            Texture,
            VertexFileHeader,
            VertexFileFixup,
            StudioVertex,
            VtxFileHeader,
            VtxBodyPart,
            VtxModel,
            VtxModelLod,
            VtxMesh,
            VtxStripGroup,
            VtxStrip,
            VtxVertex,
            VtxBoneStateChange,
            VtxMaterialReplacementList
        );
    }

    #[test]
    fn fields_sit_at_their_studio_h_offsets() {
        let h = StudioHdr {
            studiohdr2index: 0x1234_5678,
            num_allowed_root_lods: 7,
            mass: 1.0,
            ..Default::default()
        };
        let mut v = Vec::new();
        h.put(&mut v);
        assert_eq!(&v[400..404], &0x1234_5678i32.to_le_bytes());
        assert_eq!(v[378], 7);
        assert_eq!(&v[328..332], &1.0f32.to_le_bytes());
        let s = VtxStrip {
            num_bone_state_changes: 5,
            flags: 1,
            ..Default::default()
        };
        let mut v = Vec::new();
        s.put(&mut v);
        assert_eq!(v[18], 1);
        assert_eq!(&v[19..23], &5i32.to_le_bytes());
        assert_eq!(VtxStrip::get(&v), s);
    }
}
