"""IK rule oracle for mdlc's Source output: reads every animation's IK rules with valvemdl
(which follows source-sdk-2013 studio.h) and decodes each compressed error on its own, from the
engine's description of mstudiocompressedikerror_t (six f32 scales, six i16 offsets from the
struct to run-length mstudioanimvalue_t streams: a byte `valid`, a byte `total`, then `valid`
i16 values; frame k of a run past the valid ones repeats the last valid one). Written for
mdlc's tests; shares no code with mdlc. Prints one JSON object:

{"animations": [{"name", "numframes", "rules": [{type, chain, bone, slot, height, radius, floor,
  pos, q, iStart, start, peak, tail, end, contact, attachment, scales, error: [[x, y, z, ax, ay,
  az] per frame] or null}]}], "sequences": [{"label", "numikrules"}], "problems": [...]}

Usage: ikrules.py path/to/model.mdl
"""
import json
import struct
import sys
import warnings

warnings.filterwarnings("ignore")


def stream_value(data, at, frame):
    """Frame `frame` of the run-length stream at byte `at`."""
    k = frame
    while True:
        valid, total = data[at], data[at + 1]
        if total == 0:
            raise ValueError("run of zero frames at %d" % at)
        if k < total:
            i = min(k, valid - 1)
            return struct.unpack_from("<h", data, at + 2 + 2 * i)[0]
        k -= total
        at += 2 + 2 * valid


def main(path):
    import valvemdl

    mdl = valvemdl.Mdl(path)
    data = open(path, "rb").read()
    out = {"animations": [], "sequences": [], "problems": list(mdl.validate())}
    for a in mdl.animations:
        rules = []
        for r in a.ikrules:
            error = None
            scales = None
            if r.compressedikerrorindex:
                base = r._offset + r.compressedikerrorindex
                fields = struct.unpack_from("<6f6h", data, base)
                scales, offsets = list(fields[:6]), fields[6:]
                last = max(a.numframes - 1, 0)
                s, e = round(r.start * last), round(r.end * last)
                n = e - s + 1 + (2 if e > last else 0)
                error = [
                    [stream_value(data, base + offsets[c], f) * scales[c] for c in range(6)]
                    for f in range(n)
                ]
            rules.append(
                {
                    "index": r.index,
                    "type": r.type,
                    "chain": r.chain,
                    "bone": r.bone,
                    "slot": r.slot,
                    "height": r.height,
                    "radius": r.radius,
                    "floor": r.floor,
                    "pos": [r.pos.x, r.pos.y, r.pos.z],
                    "q": [r.q.x, r.q.y, r.q.z, r.q.w],
                    "iStart": r.iStart,
                    "start": r.start,
                    "peak": r.peak,
                    "tail": r.tail,
                    "end": r.end,
                    "contact": r.contact,
                    "attachment": r.attachment,
                    "scales": scales,
                    "error": error,
                }
            )
        out["animations"].append({"name": a.name, "numframes": a.numframes, "rules": rules})
    for s in mdl.sequences:
        out["sequences"].append({"label": s.label, "numikrules": s.numikrules})
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
