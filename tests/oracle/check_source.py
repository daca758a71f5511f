"""Oracle for mdlc's Source output: reads an MDL (with its .vvd/.vtx siblings) with two
independent readers, valvemdl and srctools, and prints one JSON object:
{"valvemdl": [problems...], "srctools": [problems...], "summary": {...}}.

Usage: check_source.py path/to/model.mdl
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")


def main(path):
    out = {"valvemdl": [], "srctools": [], "summary": {}}
    try:
        import valvemdl

        mdl = valvemdl.Mdl(path)
        out["valvemdl"] = [str(p) for p in mdl.validate()]
        vvd = mdl.vvd
        out["summary"]["vvd_vertices"] = len(vvd.vertices) if hasattr(vvd, "vertices") else None
        for ext in (".dx90.vtx", ".dx80.vtx", ".sw.vtx"):
            vtx = mdl.get_vtx(ext)
            if hasattr(vtx, "validate"):
                out["valvemdl"] += ["%s: %s" % (ext, p) for p in vtx.validate()]
        if hasattr(vvd, "validate"):
            out["valvemdl"] += ["vvd: %s" % p for p in vvd.validate()]
        out["summary"]["bones"] = [b.name if hasattr(b, "name") else None for b in mdl.bones]
        out["summary"]["include_models"] = [str(i.name) for i in (mdl.includemodels or [])]
    except Exception as e:  # any failure to read is a problem
        out["valvemdl"].append("valvemdl failed to read: %r" % (e,))
    try:
        from srctools.mdl import Model
        from srctools.filesys import RawFileSystem

        root = os.path.dirname(os.path.abspath(path))
        fsys = RawFileSystem(root)
        with fsys:
            m = Model(fsys, fsys[os.path.basename(path)])
        out["summary"]["srctools_textures"] = [t[0] if isinstance(t, tuple) else str(t) for t in m.iter_textures()]
        out["summary"]["srctools_checksum"] = m.checksum if hasattr(m, "checksum") else None
        out["summary"]["srctools_name"] = m.name
        out["summary"]["srctools_flags"] = int(m.flags.value) if hasattr(m.flags, "value") else str(m.flags)
        out["summary"]["srctools_sequences"] = [s.label for s in m.sequences]
        out["summary"]["srctools_skins"] = len(m.skins)
    except Exception as e:
        out["srctools"].append("srctools failed to read: %r" % (e,))
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
