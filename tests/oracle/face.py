"""Face oracle for mdlc's Source output: reads an MDL's flex descriptions, flex controllers,
controller UI records, flex rules (with their operations), eyeballs, eyeball meshes, mouths and
every mesh's flexes with valvemdl, and prints one JSON object. A flex's vertex animations are
decoded as the engine reads the legacy format: `delta`/`ndelta` are IEEE half floats, `speed`
and `side` bytes over 255; each is given with the position of the vertex it moves (from the
VVD, in the order the model's `vertexindex` and the mesh's `vertexoffset` address). Mouths, which valvemdl does not read, are read
straight from the header's `nummouths`/`mouthindex` with the layout of `mstudiomouth_t`
(`public/studio.h`: int bone, Vector forward, int flexdesc). The UI records' controller
offsets (relative to the record) are turned into controller indices. valvemdl's validate()
problems are listed under "problems".

Usage: face.py path/to/model.mdl
"""
import json
import struct
import sys
import warnings

warnings.filterwarnings("ignore")


def half(raw):
    """A stored Int16 read back as the IEEE half float it holds."""
    return struct.unpack("<e", struct.pack("<h", raw))[0]


def vec(v):
    return [v.x, v.y, v.z]


def main(path):
    import valvemdl

    mdl = valvemdl.Mdl(path)
    h = mdl.header
    data = open(path, "rb").read()
    out = {"problems": list(mdl.validate())}
    out["header"] = {k: h[k] for k in (
        "flexdescindex", "flexcontrollerindex", "flexruleindex", "flexcontrolleruiindex",
        "ikchainindex", "mouthindex", "localposeparamindex", "numlocalposeparameters")}
    out["header"]["flMaxEyeDeflection"] = struct.unpack_from("<f", data, h.studiohdr2index + 12)[0]
    out["flexdescs"] = [d.name for d in mdl.flexdescs]
    out["controllers"] = [
        {"name": c.name, "type": c.type, "min": c.min, "max": c.max,
         "localToGlobal": c.localToGlobal}
        for c in mdl.flexcontrollers
    ]
    ui = []
    for i, u in enumerate(mdl.flexcontrollerui):
        at = h.flexcontrolleruiindex + 20 * i

        def ctrl(off):
            if off == 0:
                return None
            rel = at + off - h.flexcontrollerindex
            return rel // 20 if rel % 20 == 0 else "bad offset %d" % off

        ui.append({"name": u.name, "stereo": bool(u.stereo), "remaptype": u.remaptype,
                   "index0": ctrl(u.szindex0), "index1": ctrl(u.szindex1),
                   "index2": ctrl(u.szindex2)})
    out["ui"] = ui
    rules = []
    for r in mdl.flexrules:
        ops = []
        for o in r.ops:
            value = struct.unpack("<f", struct.pack("<i", o.d))[0] if o.op == 1 else None
            ops.append({"op": o.op, "d": o.d, "value": value})
        rules.append({"flex": r.flex, "ops": ops})
    out["rules"] = rules
    eyeballs = []
    meshes = []
    for bp in mdl.bodyparts:
        for mo in bp.models:
            for e in mo.eyeballs:
                eyeballs.append({
                    "model": mo.name, "bone": e.bone, "org": vec(e.org), "zoffset": e.zoffset,
                    "radius": e.radius, "up": vec(e.up), "forward": vec(e.forward),
                    "iris_scale": e.iris_scale, "upperflexdesc": list(e.upperflexdesc),
                    "lowerflexdesc": list(e.lowerflexdesc),
                    "uppertarget": list(e.uppertarget), "lowertarget": list(e.lowertarget),
                    "upperlidflexdesc": e.upperlidflexdesc,
                    "lowerlidflexdesc": e.lowerlidflexdesc,
                })
            for me in mo.meshes:
                meshes.append({"model": mo.name, "material": me.material,
                               "materialtype": me.materialtype,
                               "materialparam": me.materialparam,
                               "numflexes": me.numflexes})
    out["eyeballs"] = eyeballs
    out["meshes"] = meshes
    vvd_path = path[:-4] + ".vvd"
    flexes = []
    try:
        pool = valvemdl.Vvd(vvd_path).mesh_vertices()
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        pool = None
        out["problems"].append("vvd: %r" % (e,))
    for bp in mdl.bodyparts:
        for mo in bp.models:
            first = mo.vertexindex // 48
            for me in mo.meshes:
                mesh_flexes = []
                for fl in me.flexes:
                    verts = []
                    for va in fl.vertanims:
                        g = first + me.vertexoffset + va.index
                        pos = None
                        if pool is not None and 0 <= va.index < me.numvertices and g < len(pool):
                            pos = vec(pool[g].m_vecPosition)
                        else:
                            out["problems"].append("a vertex animation names vertex %d of a mesh of %d" % (va.index, me.numvertices))
                        verts.append({"index": va.index, "pos": pos,
                                      "delta": [half(d) for d in va.delta],
                                      "ndelta": [half(d) for d in va.ndelta],
                                      "speed": va.speed / 255.0, "side": va.side / 255.0})
                    mesh_flexes.append({"flexdesc": fl.flexdesc,
                                        "targets": [fl.target0, fl.target1, fl.target2, fl.target3],
                                        "flexpair": fl.flexpair, "vertanimtype": fl.vertanimtype,
                                        "verts": verts})
                flexes.append(mesh_flexes)
    out["flexes"] = flexes
    mouths = []
    for i in range(h.nummouths):
        at = h.mouthindex + 20 * i
        bone, fx, fy, fz, flexdesc = struct.unpack_from("<ifffi", data, at)
        mouths.append({"bone": bone, "forward": [fx, fy, fz], "flexdesc": flexdesc})
    out["mouths"] = mouths
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
