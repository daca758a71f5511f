"""An independent reader of Source collision models (.phy), written for mdlc's tests from the
public layout (source-sdk-2013 public/phyfile.h: the 16-byte header; the open readers
REDxEYE/SourceIO and misyltoad/VPhysics-Jolt: the "VPHY" collide header, the IVP compact
surface, its ledge tree and compact ledges), sharing no code with mdlc. Prints one JSON object:

{"checksum": int, "solids": [{"pieces": [{"points": n, "triangles": n}], "bounds": [[x,y,z],[x,y,z]]}],
 "names": [the `name` of each `solid` block of the text section],
 "problems": [what breaks the layout's rules: sizes, edge links, winding, tree spheres]}

The checks are this reader's own: every edge's opposite link lands on an edge that runs back
between the same two points and links back; every triangle faces away from the centre
of its piece (counter-clockwise seen from outside); each tree node's sphere holds its subtree's points; the
solid's size is 28 + the compact surface's, whose header repeats its size.

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
    problems = []
    for si in range(count):
        solid_size = struct.unpack_from("<i", b, at)[0]
        assert b[at + 4:at + 8] == b"VPHY", "no VPHY"
        surface = at + 4 + 28
        surface_size = struct.unpack_from("<i", b, at + 12)[0]
        if solid_size != 28 + surface_size:
            problems.append("solid %d: size %d is not 28 + %d" % (si, solid_size, surface_size))
        word = struct.unpack_from("<I", b, surface + 28)[0]
        if word >> 8 != surface_size:
            problems.append("solid %d: surface header says %d bytes" % (si, word >> 8))
        root = struct.unpack_from("<i", b, surface + 32)[0]

        def subtree_points(node, depth=0):
            right, ledge = struct.unpack_from("<ii", b, node)
            if right == 0:
                return ledge_points(node + ledge)
            return subtree_points(node + 28, depth + 1) + subtree_points(node + right, depth + 1)

        def ledge_points(ledge):
            po = struct.unpack_from("<i", b, ledge)[0]
            n = struct.unpack_from("<h", b, ledge + 12)[0]
            out = []
            for t in range(n):
                for k in range(3):
                    i = struct.unpack_from("<I", b, ledge + 16 + 16 * t + 4 + 4 * k)[0] & 0xFFFF
                    out.append(struct.unpack_from("<3f", b, ledge + po + 16 * i))
            return out

        def check_nodes(node, depth=0):
            right, _ = struct.unpack_from("<ii", b, node)
            c = struct.unpack_from("<3f", b, node + 8)
            r = struct.unpack_from("<f", b, node + 20)[0]
            for p in subtree_points(node):
                d = sum((p[k] - c[k]) ** 2 for k in range(3)) ** 0.5
                if d > r * 1.0001 + 1e-6:
                    problems.append("solid %d: a point lies %g outside its node's sphere %g" % (si, d, r))
                    break
            if right != 0:
                check_nodes(node + 28, depth + 1)
                check_nodes(node + right, depth + 1)

        check_nodes(surface + root)
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
            own = ledge_points(ledge)
            centre = [sum(q[k] for q in own) / len(own) for k in range(3)] if own else [0, 0, 0]
            for t in range(n):
                starts = []
                for k in range(3):
                    at_edge = ledge + 16 + 16 * t + 4 + 4 * k
                    edge = struct.unpack_from("<I", b, at_edge)[0]
                    used.add(edge & 0xFFFF)
                    starts.append(edge & 0xFFFF)
                    link = (edge >> 16) & 0x7FFF
                    if link & 0x4000:
                        link -= 0x8000
                    other = at_edge + 4 * link
                    # the opposite edge starts where this one ends, and links back
                    nxt = struct.unpack_from("<I", b, ledge + 16 + 16 * t + 4 + 4 * ((k + 1) % 3))[0] & 0xFFFF
                    o = struct.unpack_from("<I", b, other)[0]
                    o_link = (o >> 16) & 0x7FFF
                    if o_link & 0x4000:
                        o_link -= 0x8000
                    if (o & 0xFFFF) != nxt or other + 4 * o_link != at_edge:
                        problems.append("solid %d: triangle %d edge %d has a broken opposite link" % (si, t, k))
                p = [struct.unpack_from("<3f", b, ledge + point_offset + 16 * i) for i in starts]
                u = [p[1][k] - p[0][k] for k in range(3)]
                v = [p[2][k] - p[0][k] for k in range(3)]
                nrm = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
                if sum(nrm[k] * (p[0][k] - centre[k]) for k in range(3)) <= 0:
                    problems.append("solid %d: triangle %d faces inward" % (si, t))
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
    print(json.dumps({"checksum": checksum, "solids": solids, "names": names, "problems": problems}))


if __name__ == "__main__":
    main(sys.argv[1])
