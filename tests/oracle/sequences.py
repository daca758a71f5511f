"""Sequence oracle for mdlc's Source output: reads the sequences, animations and pose
parameters of an MDL with two independent readers, valvemdl and srctools, and prints one JSON
object:

{"valvemdl": {"sequences": [...], "animations": [...], "poseparameters": [...]} or null,
 "srctools": {"sequences": [...]} or null,
 "errors": {"valvemdl": [problems...], "srctools": [problems...]}}

valvemdl's own validate() problems count as errors. Every float is printed as Python reads it
(a double holding the file's f32), so the caller compares with a tolerance.

Usage: sequences.py path/to/model.mdl
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")


def as_list(v):
    """construct ListContainers (and nested ones) as plain lists."""
    if isinstance(v, (list, tuple)):
        return [as_list(x) for x in v]
    return v


def valvemdl_side(path, errors):
    import valvemdl

    mdl = valvemdl.Mdl(path)
    errors.extend("validate: %s" % p for p in mdl.validate())
    sequences = []
    for s in mdl.sequences:
        sequences.append(
            {
                "label": s.label,
                "activityname": s.activityname,
                "actweight": s.actweight,
                "flags": s.flags,
                "numblends": s.numblends,
                "groupsize": as_list(s.groupsize),
                "paramindex": as_list(s.paramindex),
                "paramstart": as_list(s.paramstart),
                "paramend": as_list(s.paramend),
                "fadeintime": s.fadeintime,
                "fadeouttime": s.fadeouttime,
                "localentrynode": s.localentrynode,
                "localexitnode": s.localexitnode,
                "nodeflags": s.nodeflags,
                # animindices is [groupsize[1]][groupsize[0]]; flattened row by row it is the
                # file's order (entry (x, y) at y * groupsize[0] + x).
                "animindices": [i for row in as_list(s.animindices) for i in row],
                "events": [
                    {
                        "cycle": e.cycle,
                        "event": e.event,
                        "type": e.type,
                        "options": e.options,
                        "name": e.name,
                    }
                    for e in s.events
                ],
                "autolayers": [
                    {
                        "sequence": a.iSequence,
                        "pose": a.iPose,
                        "flags": a.flags,
                        "start": a.start,
                        "peak": a.peak,
                        "tail": a.tail,
                        "end": a.end,
                    }
                    for a in s.autolayers
                ],
                "numiklocks": s.numiklocks,
                "iklocks": [
                    [k.chain, k.flPosWeight, k.flLocalQWeight] for k in s.iklocks
                ],
                "keyvaluesize": s.keyvaluesize,
            }
        )
    animations = [
        {
            "name": a.name,
            "fps": a.fps,
            "numframes": a.numframes,
            "flags": a.flags,
            "nummovements": a.nummovements,
            "sectionframes": a.sectionframes,
        }
        for a in mdl.animations
    ]
    poseparameters = [
        {
            "name": p.name,
            "flags": p.flags,
            "start": p.start,
            "end": p.end,
            "loop": p.loop,
        }
        for p in mdl.poseparameters
    ]
    return {
        "sequences": sequences,
        "animations": animations,
        "poseparameters": poseparameters,
    }


def event_id(t):
    """srctools gives an event's type as an AnimEvents member (known ids and names) or a str
    (unknown names, or unknown numbers as decimal text): (number or None, name or None)."""
    if isinstance(t, str):
        return (int(t), None) if t.lstrip("-").isdigit() else (None, t)
    return int(t.value), t.name


def srctools_side(path):
    from srctools.filesys import RawFileSystem
    from srctools.mdl import Model

    root = os.path.dirname(os.path.abspath(path))
    fsys = RawFileSystem(root)
    with fsys:
        m = Model(fsys, fsys[os.path.basename(path)])
    sequences = []
    for s in m.sequences:
        events = []
        for e in s.events:
            number, name = event_id(e.type)
            events.append(
                {"cycle": e.cycle, "number": number, "name": name, "options": e.options}
            )
        sequences.append(
            {
                "label": s.label,
                "act_name": s.act_name,
                "act_weight": s.act_weight,
                "flags": s.flags,
                "events": events,
                "keyvalues": s.keyvalues,
                "bbox_min": [s.bbox_min.x, s.bbox_min.y, s.bbox_min.z],
                "bbox_max": [s.bbox_max.x, s.bbox_max.y, s.bbox_max.z],
            }
        )
    return {"sequences": sequences}


def main(path):
    out = {"valvemdl": None, "srctools": None, "errors": {"valvemdl": [], "srctools": []}}
    try:
        out["valvemdl"] = valvemdl_side(path, out["errors"]["valvemdl"])
    except Exception as e:  # any failure to read is a problem
        out["errors"]["valvemdl"].append("valvemdl failed to read: %r" % (e,))
    try:
        out["srctools"] = srctools_side(path)
    except Exception as e:
        out["errors"]["srctools"].append("srctools failed to read: %r" % (e,))
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
