"""Procedural bone oracle for mdlc's Source output: reads every bone's procedural record with
valvemdl (which follows source-sdk-2013 studio.h: proctype picks the structure, procindex
reaches it, a quatinterp record's triggers follow its triggerindex; a jiggle record's fields
are given by their studio.h names). Written for mdlc's tests;
shares no code with mdlc. Prints one JSON object:

{"bones": [{"name", "flags", "proctype", "procedural": {...} or null, "q_alignment"}],
 "problems": [...]}

Usage: procedural.py path/to/model.mdl
"""
import json
import sys
import warnings

warnings.filterwarnings("ignore")


def vec(v):
    return [v.x, v.y, v.z] + ([v.w] if hasattr(v, "w") else [])


def main(path):
    import valvemdl

    mdl = valvemdl.Mdl(path)
    out = {"bones": [], "problems": list(mdl.validate())}
    for b in mdl.bones:
        p = getattr(b, "procedural", None)
        rec = None
        if p is not None and b.proctype == 2:
            rec = {
                "control": p.control,
                "triggers": [
                    {
                        "inv_tolerance": t.inv_tolerance,
                        "trigger": vec(t.trigger),
                        "pos": vec(t.pos),
                        "quat": vec(t.quat),
                    }
                    for t in p.triggers
                ],
            }
        elif p is not None and b.proctype in (3, 4):
            rec = {
                "parent": p.parent,
                "aim": p.aim,
                "aimvector": vec(p.aimvector),
                "upvector": vec(p.upvector),
                "basepos": vec(p.basepos),
            }
        elif p is not None and b.proctype == 5:
            # mstudiojigglebone_t: every field by its studio.h name
            rec = {k: v for k, v in p.items() if not k.startswith("_")}
        elif p is not None and b.proctype == 1:
            rec = {
                "control": p.control,
                "axis": p.axis,
                "pos": [vec(v) for v in p.pos],
                "quat": [vec(q) for q in p.quat],
            }
        out["bones"].append(
            {
                "name": b.name,
                "flags": b.flags["_raw"],
                "proctype": b.proctype,
                "procedural": rec,
                "q_alignment": vec(b.qAlignment),
            }
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
