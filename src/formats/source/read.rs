//! A reader for MDL v48 + VVD + VTX, used by `mdlc inspect` and the tests: every offset is
//! bounds-checked, so any bytes give a clean error, never a panic.

use super::records::*;

pub struct RMesh {
    pub rec: StudioMesh,
}

pub struct RModel {
    pub rec: StudioModel,
    pub meshes: Vec<RMesh>,
}

pub struct RBodyPart {
    pub name: String,
    pub rec: BodyParts,
    pub models: Vec<RModel>,
}

pub struct RBone {
    pub name: String,
    pub rec: Bone,
}

pub struct RAttachment {
    pub name: String,
    pub rec: Attachment,
}

pub struct RHitboxSet {
    pub name: String,
    pub boxes: Vec<(String, BBox)>,
}

pub struct Mdl {
    pub hdr: StudioHdr,
    pub hdr2: StudioHdr2,
    pub file_len: usize,
    pub bones: Vec<RBone>,
    pub attachments: Vec<RAttachment>,
    pub hitbox_sets: Vec<RHitboxSet>,
    pub textures: Vec<String>,
    pub cd_materials: Vec<String>,
    pub skins: Vec<Vec<i16>>,
    pub body_parts: Vec<RBodyPart>,
    pub sequences: Vec<String>,
    /// The texture records, in the order of `textures`.
    pub texture_recs: Vec<Texture>,
    /// Every sequence: label, activity name, record.
    pub seq_recs: Vec<(String, String, SeqDesc)>,
    /// Every local animation: name, record.
    pub anims: Vec<(String, AnimDesc)>,
    pub surfaceprop: String,
    pub keyvalues: String,
    /// The model name stored behind `studiohdr2.sznameindex` (empty when there is none).
    pub hdr2_name: String,
}

fn count(n: i32, max: i32, what: &str) -> Result<usize, String> {
    if n < 0 || n > max {
        return Err(format!("{what} count {n} is out of range"));
    }
    Ok(n as usize)
}

fn name_at(b: &[u8], base: usize, rel: i32) -> Result<String, String> {
    read_cstr(b, base as i64 + rel as i64)
}

pub fn read_mdl(b: &[u8]) -> Result<Mdl, String> {
    let hdr: StudioHdr = read(b, 0, "studiohdr_t")?;
    if hdr.id != i32::from_le_bytes(*b"IDST") {
        return Err("not an MDL file (no IDST)".into());
    }
    if hdr.version != 48 {
        return Err(format!("MDL version {} (expected 48)", hdr.version));
    }
    let hdr2: StudioHdr2 = if hdr.studiohdr2index != 0 {
        read(b, hdr.studiohdr2index as i64, "studiohdr2_t")?
    } else {
        StudioHdr2::default()
    };
    let mut bones = Vec::new();
    for i in 0..count(hdr.numbones, 256, "bone")? {
        let at = hdr.boneindex as i64 + (i * Bone::SIZE) as i64;
        let rec: Bone = read(b, at, "bone")?;
        bones.push(RBone {
            name: read_cstr(b, at + rec.sznameindex as i64)?,
            rec,
        });
    }
    let mut attachments = Vec::new();
    for i in 0..count(hdr.numlocalattachments, 4096, "attachment")? {
        let at = hdr.localattachmentindex as i64 + (i * Attachment::SIZE) as i64;
        let rec: Attachment = read(b, at, "attachment")?;
        attachments.push(RAttachment {
            name: read_cstr(b, at + rec.sznameindex as i64)?,
            rec,
        });
    }
    let mut hitbox_sets = Vec::new();
    for i in 0..count(hdr.numhitboxsets, 256, "hitbox set")? {
        let at = hdr.hitboxsetindex as i64 + (i * HitboxSet::SIZE) as i64;
        let s: HitboxSet = read(b, at, "hitbox set")?;
        let mut boxes = Vec::new();
        for k in 0..count(s.numhitboxes, 4096, "hitbox")? {
            let bat = at + s.hitboxindex as i64 + (k * BBox::SIZE) as i64;
            let bb: BBox = read(b, bat, "hitbox")?;
            let name = if bb.szhitboxnameindex == 0 {
                String::new()
            } else {
                read_cstr(b, bat + bb.szhitboxnameindex as i64)?
            };
            boxes.push((name, bb));
        }
        hitbox_sets.push(RHitboxSet {
            name: read_cstr(b, at + s.sznameindex as i64)?,
            boxes,
        });
    }
    let mut textures = Vec::new();
    let mut texture_recs = Vec::new();
    for i in 0..count(hdr.numtextures, 4096, "texture")? {
        let at = hdr.textureindex as i64 + (i * Texture::SIZE) as i64;
        let t: Texture = read(b, at, "texture")?;
        textures.push(read_cstr(b, at + t.sznameindex as i64)?);
        texture_recs.push(t);
    }
    let mut cd_materials = Vec::new();
    for i in 0..count(hdr.numcdtextures, 4096, "cd texture")? {
        let off: i32 = read(
            b,
            hdr.cdtextureindex as i64 + 4 * i as i64,
            "cd texture offset",
        )?;
        cd_materials.push(read_cstr(b, off as i64)?);
    }
    let mut skins = Vec::new();
    let nref = count(hdr.numskinref, 4096, "skin ref")?;
    for f in 0..count(hdr.numskinfamilies, 4096, "skin family")? {
        let mut row = Vec::new();
        for r in 0..nref {
            row.push(read::<i16>(
                b,
                hdr.skinindex as i64 + 2 * (f * nref + r) as i64,
                "skin table",
            )?);
        }
        skins.push(row);
    }
    let mut body_parts = Vec::new();
    for i in 0..count(hdr.numbodyparts, 4096, "body part")? {
        let at = hdr.bodypartindex as i64 + (i * BodyParts::SIZE) as i64;
        let bp: BodyParts = read(b, at, "body part")?;
        let mut models = Vec::new();
        for m in 0..count(bp.nummodels, 4096, "model")? {
            let mat = at + bp.modelindex as i64 + (m * StudioModel::SIZE) as i64;
            let mr: StudioModel = read(b, mat, "model")?;
            let mut meshes = Vec::new();
            for k in 0..count(mr.nummeshes, 65536, "mesh")? {
                let meat = mat + mr.meshindex as i64 + (k * StudioMesh::SIZE) as i64;
                meshes.push(RMesh {
                    rec: read(b, meat, "mesh")?,
                });
            }
            models.push(RModel { rec: mr, meshes });
        }
        body_parts.push(RBodyPart {
            name: name_at(b, at as usize, bp.sznameindex)?,
            rec: bp,
            models,
        });
    }
    let mut sequences = Vec::new();
    let mut seq_recs = Vec::new();
    for i in 0..count(hdr.numlocalseq, 65536, "sequence")? {
        let at = hdr.localseqindex as i64 + (i * SeqDesc::SIZE) as i64;
        let s: SeqDesc = read(b, at, "sequence")?;
        let label = read_cstr(b, at + s.szlabelindex as i64)?;
        let activity = if s.szactivitynameindex == 0 {
            String::new()
        } else {
            read_cstr(b, at + s.szactivitynameindex as i64)?
        };
        sequences.push(label.clone());
        seq_recs.push((label, activity, s));
    }
    let mut anims = Vec::new();
    for i in 0..count(hdr.numlocalanim, 65536, "animation")? {
        let at = hdr.localanimindex as i64 + (i * AnimDesc::SIZE) as i64;
        let a: AnimDesc = read(b, at, "animdesc")?;
        anims.push((read_cstr(b, at + a.sznameindex as i64)?, a));
    }
    let opt_str = |at: i32| -> Result<String, String> {
        if at == 0 {
            Ok(String::new())
        } else {
            read_cstr(b, at as i64)
        }
    };
    let surfaceprop = opt_str(hdr.surfacepropindex)?;
    let keyvalues = if hdr.keyvaluesize > 0 {
        opt_str(hdr.keyvalueindex)?
    } else {
        String::new()
    };
    let hdr2_name = if hdr.studiohdr2index != 0 && hdr2.sznameindex != 0 {
        read_cstr(b, hdr.studiohdr2index as i64 + hdr2.sznameindex as i64)?
    } else {
        String::new()
    };
    Ok(Mdl {
        hdr,
        hdr2,
        file_len: b.len(),
        bones,
        attachments,
        hitbox_sets,
        textures,
        cd_materials,
        skins,
        body_parts,
        sequences,
        texture_recs,
        seq_recs,
        anims,
        surfaceprop,
        keyvalues,
        hdr2_name,
    })
}

pub struct Vvd {
    pub hdr: VertexFileHeader,
    pub fixups: Vec<VertexFileFixup>,
    /// In final (mesh) order, after replaying the fix-ups for root LOD 0.
    pub vertices: Vec<StudioVertex>,
    pub tangents: Vec<[f32; 4]>,
}

pub fn read_vvd(b: &[u8]) -> Result<Vvd, String> {
    let hdr: VertexFileHeader = read(b, 0, "vertexFileHeader_t")?;
    if hdr.id != i32::from_le_bytes(*b"IDSV") || hdr.version != 4 {
        return Err("not a VVD v4 file".into());
    }
    let n = count(hdr.num_lod_vertexes[0], 1 << 24, "vertex")?;
    let mut raw = Vec::with_capacity(n);
    let mut tan = Vec::with_capacity(n);
    for i in 0..n {
        raw.push(read::<StudioVertex>(
            b,
            hdr.vertex_data_start as i64 + 48 * i as i64,
            "vertex",
        )?);
        tan.push(read::<[f32; 4]>(
            b,
            hdr.tangent_data_start as i64 + 16 * i as i64,
            "tangent",
        )?);
    }
    let mut fixups = Vec::new();
    for i in 0..count(hdr.num_fixups, 1 << 20, "fixup")? {
        fixups.push(read::<VertexFileFixup>(
            b,
            hdr.fixup_table_start as i64 + 12 * i as i64,
            "fixup",
        )?);
    }
    let (vertices, tangents) = if fixups.is_empty() {
        (raw, tan)
    } else {
        let mut v = Vec::with_capacity(n);
        let mut t = Vec::with_capacity(n);
        for f in &fixups {
            let s = f.source_vertex_id;
            let e = s as i64 + f.num_vertexes as i64;
            if s < 0
                || f.num_vertexes < 0
                || e > n as i64
                || v.len() as i64 + f.num_vertexes as i64 > n as i64
            {
                return Err(format!("fix-up {:?} runs outside the {n} vertices", f));
            }
            v.extend_from_slice(&raw[s as usize..e as usize]);
            t.extend_from_slice(&tan[s as usize..e as usize]);
        }
        (v, t)
    };
    Ok(Vvd {
        hdr,
        fixups,
        vertices,
        tangents,
    })
}

pub struct RStrip {
    pub rec: VtxStrip,
    pub changes: Vec<VtxBoneStateChange>,
}

pub struct RGroup {
    pub rec: VtxStripGroup,
    pub verts: Vec<VtxVertex>,
    pub indices: Vec<u16>,
    pub strips: Vec<RStrip>,
}

pub struct RVtxMesh {
    pub groups: Vec<RGroup>,
}

pub struct RVtxLod {
    pub switch_point: f32,
    pub meshes: Vec<RVtxMesh>,
}

pub struct Vtx {
    pub hdr: VtxFileHeader,
    /// [body part][model][lod]
    pub body_parts: Vec<Vec<Vec<RVtxLod>>>,
}

pub fn read_vtx(b: &[u8]) -> Result<Vtx, String> {
    let hdr: VtxFileHeader = read(b, 0, "FileHeader_t")?;
    if hdr.version != 7 {
        return Err(format!("VTX version {} (expected 7)", hdr.version));
    }
    let mut bps = Vec::new();
    for i in 0..count(hdr.num_body_parts, 4096, "body part")? {
        let at = hdr.body_part_offset as i64 + 8 * i as i64;
        let bp: VtxBodyPart = read(b, at, "BodyPartHeader_t")?;
        let mut models = Vec::new();
        for m in 0..count(bp.num_models, 4096, "model")? {
            let mat = at + bp.model_offset as i64 + 8 * m as i64;
            let mr: VtxModel = read(b, mat, "ModelHeader_t")?;
            let mut lods = Vec::new();
            for l in 0..count(mr.num_lods, 8, "LOD")? {
                let lat = mat + mr.lod_offset as i64 + 12 * l as i64;
                let lr: VtxModelLod = read(b, lat, "ModelLODHeader_t")?;
                let mut meshes = Vec::new();
                for k in 0..count(lr.num_meshes, 65536, "mesh")? {
                    let meat = lat + lr.mesh_offset as i64 + 9 * k as i64;
                    let me: VtxMesh = read(b, meat, "MeshHeader_t")?;
                    let mut groups = Vec::new();
                    for g in 0..count(me.num_strip_groups, 64, "strip group")? {
                        let gat = meat + me.strip_group_header_offset as i64 + 25 * g as i64;
                        let gr: VtxStripGroup = read(b, gat, "StripGroupHeader_t")?;
                        let nv = count(gr.num_verts, 1 << 20, "vertex")?;
                        let ni = count(gr.num_indices, 1 << 22, "index")?;
                        let mut verts = Vec::with_capacity(nv);
                        for v in 0..nv {
                            verts.push(read::<VtxVertex>(
                                b,
                                gat + gr.vert_offset as i64 + 9 * v as i64,
                                "Vertex_t",
                            )?);
                        }
                        let mut indices = Vec::with_capacity(ni);
                        for v in 0..ni {
                            indices.push(read::<u16>(
                                b,
                                gat + gr.index_offset as i64 + 2 * v as i64,
                                "index",
                            )?);
                        }
                        let mut strips = Vec::new();
                        for s in 0..count(gr.num_strips, 1 << 16, "strip")? {
                            let sat = gat + gr.strip_offset as i64 + 27 * s as i64;
                            let sr: VtxStrip = read(b, sat, "StripHeader_t")?;
                            let mut changes = Vec::new();
                            for c in 0..count(sr.num_bone_state_changes, 512, "bone state change")?
                            {
                                changes.push(read::<VtxBoneStateChange>(
                                    b,
                                    sat + sr.bone_state_change_offset as i64 + 8 * c as i64,
                                    "BoneStateChangeHeader_t",
                                )?);
                            }
                            strips.push(RStrip { rec: sr, changes });
                        }
                        groups.push(RGroup {
                            rec: gr,
                            verts,
                            indices,
                            strips,
                        });
                    }
                    meshes.push(RVtxMesh { groups });
                }
                lods.push(RVtxLod {
                    switch_point: lr.switch_point,
                    meshes,
                });
            }
            models.push(lods);
        }
        bps.push(models);
    }
    Ok(Vtx {
        hdr,
        body_parts: bps,
    })
}

/// The triangles of one mesh at one LOD, as model-relative VVD vertex numbers.
pub fn mesh_triangles(lod: &RVtxMesh, vertexoffset: i32) -> Result<Vec<[usize; 3]>, String> {
    let mut out = Vec::new();
    for g in &lod.groups {
        for s in &g.strips {
            let start = s.rec.index_offset.max(0) as usize;
            let n = s.rec.num_indices.max(0) as usize;
            let idx = g
                .indices
                .get(start..start + n)
                .ok_or_else(|| "strip indices run past the strip group".to_string())?;
            for t in idx.chunks_exact(3) {
                let mut tri = [0usize; 3];
                for k in 0..3 {
                    let v = g.verts.get(t[k] as usize).ok_or_else(|| {
                        format!(
                            "index {} is past the strip group's {} vertices",
                            t[k],
                            g.verts.len()
                        )
                    })?;
                    tri[k] = (vertexoffset.max(0) as usize) + v.orig_mesh_vert_id as usize;
                }
                out.push(tri);
            }
        }
    }
    Ok(out)
}
