"""An independent reader of Source collision models (.phy), written for mdlc's tests from the
public layout (source-sdk-2013 public/phyfile.h: the 16-byte header; the open readers
REDxEYE/SourceIO and misyltoad/VPhysics-Jolt: the "VPHY" collide header, the IVP compact
surface, its ledge tree and compact ledges), sharing no code with mdlc. Prints one JSON object:

{"checksum": int, "solids": [{"pieces": [{"points": n, "triangles": n}], "bounds": [[x,y,z],[x,y,z]]}],
 "names": [the `name` of each `solid` block of the text section]}

Bounds are in inches with Source's axes, as VPhysics-Jolt converts a point: (x, z, -y) / 0.0254.

Usage: phy.py path/to/model.phy
"""
import json
import struct
import sys


def main(path):
    b = open(path, "rb").read()
    size, ident, count, checksum = struct.unpack_from("<iiii", b, 0)
    at = size
    solids = []
    for _ in range(count):
        solid_size = struct.unpack_from("<i", b, at)[0]
        assert b[at + 4:at + 8] == b"VPHY", "no VPHY"
        surface = at + 4 + 28
        root = struct.unpack_from("<i", b, surface + 32)[0]
        pieces = []
        points_all = []

        def leaves(node, depth=0):
            assert depth < 64
            right, ledge = struct.unpack_from("<ii", b, node)
            if right == 0:
                yield node + ledge
            else:
                yield from leaves(node + 28, depth + 1)
                yield from leaves(node + right, depth + 1)

        for ledge in leaves(surface + root):
            point_offset = struct.unpack_from("<i", b, ledge)[0]
            n = struct.unpack_from("<h", b, ledge + 12)[0]
            used = set()
            for t in range(n):
                for k in range(3):
                    edge = struct.unpack_from("<I", b, ledge + 16 + 16 * t + 4 + 4 * k)[0]
                    used.add(edge & 0xFFFF)
            for i in used:
                x, y, z = struct.unpack_from("<3f", b, ledge + point_offset + 16 * i)
                points_all.append((x / 0.0254, z / 0.0254, -y / 0.0254))
            pieces.append({"points": len(used), "triangles": n})
        lo = [min(p[k] for p in points_all) for k in range(3)]
        hi = [max(p[k] for p in points_all) for k in range(3)]
        solids.append({"pieces": pieces, "bounds": [lo, hi]})
        at += 4 + solid_size
    text = b[at:].split(b"\0")[0].decode("latin-1")
    names = []
    block = None
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("{"):
            block = line[:-1].strip()
        elif block == "solid" and line.startswith('"name"'):
            names.append(line.split('"')[3])
    print(json.dumps({"checksum": checksum, "solids": solids, "names": names}))


if __name__ == "__main__":
    main(sys.argv[1])
