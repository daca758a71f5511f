#!/usr/bin/env python3
"""Generated the creature SMD files in this directory (creature_reference.smd,
creature_horns.smd, creature_idle.smd, creature_walk.smd) and the 8-bit BMP textures of its
GoldSrc build (creature_skin.bmp, creature_skin_albino.bmp, creature_eyes.bmp,
creature_horn.bmp).

The SMDs are the deliverable and are committed as text; this script only documents how they
were made. Run it from anywhere: `python3 generate.py` rewrites the four files next to it, byte for
byte the same. It uses only the standard library.

Conventions (Source): Z is up, the creature faces +X, its left is +Y. Units are inches-scale; the
creature is about 52 units tall. Every rest rotation is zero, so a bone's model-space position is
the sum of the offsets along its parent chain.
"""

import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# (index, name, parent, offset from parent in the rest pose)
BONES = [
    (0, "root", -1, (0.0, 0.0, 0.0)),
    (1, "Bip01 Pelvis", 0, (0.0, 0.0, 20.0)),
    (2, "Bip01 Spine", 1, (0.0, 0.0, 4.0)),
    (3, "Bip01 Head", 2, (0.0, 0.0, 14.0)),
    (4, "Bip01 L Leg", 1, (0.0, 4.0, -3.0)),
    (5, "Bip01 R Leg", 1, (0.0, -4.0, -3.0)),
    (6, "Bip01 Tail", 1, (-4.0, 0.0, 0.0)),
]
ROOT, PELVIS, SPINE, HEAD, LLEG, RLEG, TAIL = range(7)


def fmt(x):
    s = f"{x:.6f}"
    return "0.000000" if s == "-0.000000" else s


def header():
    out = ["version 1", "nodes"]
    for i, name, parent, _ in BONES:
        out.append(f'{i} "{name}" {parent}')
    out.append("end")
    return out


def frame(time, poses):
    out = [f"time {time}"]
    for i, (pos, rot) in enumerate(poses):
        out.append(f"{i} " + " ".join(fmt(v) for v in (*pos, *rot)))
    return out


def rest_poses():
    return [(list(off), [0.0, 0.0, 0.0]) for _, _, _, off in BONES]


def sub(a, b):
    return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def unit(a):
    n = math.sqrt(dot(a, a))
    return [a[0] / n, a[1] / n, a[2] / n]


class Mesh:
    def __init__(self):
        self.lines = []
        self.count = 0

    def tri(self, material, corners, center):
        """corners: three (pos, uv, links) in counter-clockwise order seen from outside."""
        (a, _, _), (b, _, _), (c, _, _) = corners
        n = unit(cross(sub(b, a), sub(c, a)))
        # The flat normal must point away from the part's centre (outward winding).
        centroid = [(a[k] + b[k] + c[k]) / 3 for k in range(3)]
        assert dot(n, sub(centroid, center)) > 0, (material, corners)
        self.lines.append(material)
        for pos, uv, links in corners:
            assert all(0.0 <= t <= 1.0 for t in uv)
            assert abs(sum(w for _, w in links) - 1.0) < 1e-9
            first = links[0][0]
            link_text = " ".join(f"{b} {w:.6f}" for b, w in links)
            self.lines.append(
                f"{first} "
                + " ".join(fmt(v) for v in (*pos, *n, *uv))
                + f" {len(links)} {link_text}"
            )
        self.count += 1

    def quad(self, material, p, uvs, links, center):
        """p: four corners counter-clockwise from outside; split along p0-p2."""
        self.tri(material, [(p[0], uvs[0], links[0]), (p[1], uvs[1], links[1]), (p[2], uvs[2], links[2])], center)
        self.tri(material, [(p[0], uvs[0], links[0]), (p[2], uvs[2], links[2]), (p[3], uvs[3], links[3])], center)


def box(mesh, material, lo, hi, axis, segments, weights_at, uv_rect):
    """An axis-aligned box split into `segments` slices along `axis` (0, 1 or 2).

    weights_at(t) gives the links of a vertex at parameter t in 0..1 along the axis (from lo to
    hi). uv_rect = (u0, v0, u1, v1) is the part of the texture the box uses.
    """
    center = [(lo[k] + hi[k]) / 2 for k in range(3)]
    u0, v0, u1, v1 = uv_rect
    a1, a2 = [k for k in range(3) if k != axis]

    def point(t, s1, s2):
        p = [0.0, 0.0, 0.0]
        p[axis] = lo[axis] + (hi[axis] - lo[axis]) * t
        p[a1] = lo[a1] if s1 == 0 else hi[a1]
        p[a2] = lo[a2] if s2 == 0 else hi[a2]
        return p

    def uv(fu, fv):
        return (u0 + (u1 - u0) * fu, v0 + (v1 - v0) * fv)

    # The four sides around the axis, walking the rectangle (a1, a2) counter-clockwise.
    ring = [(0, 0), (1, 0), (1, 1), (0, 1)]
    for seg in range(segments):
        t0, t1 = seg / segments, (seg + 1) / segments
        for side in range(4):
            s, e = ring[side], ring[(side + 1) % 4]
            quad = [point(t0, *s), point(t0, *e), point(t1, *e), point(t1, *s)]
            fu0, fu1 = side / 4, (side + 1) / 4
            uvs = [uv(fu0, t0), uv(fu1, t0), uv(fu1, t1), uv(fu0, t1)]
            links = [weights_at(t0), weights_at(t0), weights_at(t1), weights_at(t1)]
            # Winding depends on the handedness of (a1, a2, axis); fix it by the outward test.
            n = cross(sub(quad[1], quad[0]), sub(quad[2], quad[0]))
            mid = [(quad[0][k] + quad[2][k]) / 2 for k in range(3)]
            if dot(n, sub(mid, center)) < 0:
                quad.reverse()
                uvs.reverse()
                links.reverse()
            mesh.quad(material, quad, uvs, links, center)
    # The two caps.
    for t in (0.0, 1.0):
        quad = [point(t, *c) for c in ring]
        uvs = [uv(*c) for c in ring]
        links = [weights_at(t)] * 4
        n = cross(sub(quad[1], quad[0]), sub(quad[2], quad[0]))
        mid = [(quad[0][k] + quad[2][k]) / 2 for k in range(3)]
        if dot(n, sub(mid, center)) < 0:
            quad.reverse()
            uvs.reverse()
            links.reverse()
        mesh.quad(material, quad, uvs, links, center)


def rigid(bone):
    return lambda t: [(bone, 1.0)]


def blend_at_start(bone, parent):
    """Vertices at t = 0 (the joint) are shared half and half with the parent."""
    return lambda t: [(bone, 0.5), (parent, 0.5)] if t == 0.0 else [(bone, 1.0)]


def blend_at_end(bone, child):
    """Vertices at t = 1 are shared 60/40 with the child (the joint is at the top)."""
    return lambda t: [(bone, 0.6), (child, 0.4)] if t == 1.0 else [(bone, 1.0)]


def reference():
    m = Mesh()
    skin, eyes = "creature_skin", "creature_eyes"
    # Pelvis: z 17..24.
    box(m, skin, [-4, -5, 17], [4, 5, 24], 2, 1, rigid(PELVIS), (0.0, 0.5, 0.5, 0.75))
    # Torso (spine): z 24..37, the bottom ring shared with the pelvis, the top ring with the head.
    box(
        m, skin, [-4, -4.5, 24], [4, 4.5, 37], 2, 3,
        lambda t: [(SPINE, 0.5), (PELVIS, 0.5)] if t == 0.0 else blend_at_end(SPINE, HEAD)(t),
        (0.0, 0.75, 0.5, 1.0),
    )
    # Head: z 38..50, snout towards +X.
    box(m, skin, [-4, -4, 38], [6, 4, 50], 2, 2, rigid(HEAD), (0.5, 0.75, 1.0, 1.0))
    # Legs: z 0..17 (the hip joint at z 17), the top ring shared with the pelvis.
    for bone, y in ((LLEG, 4.0), (RLEG, -4.0)):
        w = blend_at_end(bone, PELVIS)
        box(m, skin, [-1.5, y - 1.5, 0], [1.5, y + 1.5, 17], 2, 3, w, (0.0, 0.0, 0.5, 0.5))
    # Tail: x -16..-4 at z 19..21, the joint at x = -4 (t = 1 along +X) shared with the pelvis.
    box(m, skin, [-16, -1, 19], [-4, 1, 21], 0, 3, blend_at_end(TAIL, PELVIS), (0.5, 0.0, 1.0, 0.5))
    # Eyes: two small boxes on the front of the head.
    for y in (2.0, -2.0):
        box(m, eyes, [5.5, y - 1, 45], [6.5, y + 1, 47], 0, 1, rigid(HEAD), (0.0, 0.0, 1.0, 1.0))
    return m


def horns():
    m = Mesh()
    mat = "creature_horn"
    for y in (2.5, -2.5):
        box(m, mat, [-1, y - 0.75, 50], [0.5, y + 0.75, 55], 2, 2, rigid(HEAD), (0.0, 0.0, 1.0, 1.0))
    return m


def reference_file(mesh):
    out = header() + ["skeleton"] + frame(0, rest_poses()) + ["end", "triangles"]
    out += mesh.lines
    out.append("end")
    return out


def idle():
    period = 29  # frames 0..29; frame 29 repeats frame 0 so the loop closes.
    out = header() + ["skeleton"]
    for f in range(period + 1):
        ph = 2 * math.pi * (f % period) / period
        s = math.sin(ph)
        p = rest_poses()
        p[PELVIS][0][2] += 0.25 * s  # the body rises a little as it breathes in
        p[SPINE][1][1] = -0.03 * s  # chest leans back slightly
        p[HEAD][1][1] = 0.03 * s  # the head keeps level
        p[TAIL][1][2] = 0.15 * math.sin(ph + 0.5)  # slow tail sway
        out += frame(f, p)
    out.append("end")
    return out


STRIDE = 24.0


def walk():
    period = 23  # frames 0..23; frame 23 repeats frame 0 except the root, one stride ahead.
    out = header() + ["skeleton"]
    for f in range(period + 1):
        ph = 2 * math.pi * (f % period) / period
        s = math.sin(ph)
        p = rest_poses()
        p[ROOT][0][0] = STRIDE * f / period  # moving forward along +X
        p[PELVIS][0][2] += 0.5 * math.cos(2 * ph)  # bob twice per cycle
        p[PELVIS][1][0] = 0.05 * s  # hip roll
        p[SPINE][1][0] = -0.04 * s
        p[HEAD][1][1] = 0.05 * math.cos(2 * ph)
        p[LLEG][1][1] = 0.5 * s  # legs swing about Y, in opposite phase
        p[RLEG][1][1] = -0.5 * s
        p[TAIL][1][2] = 0.25 * s
        out += frame(f, p)
    out.append("end")
    return out


def write(name, lines):
    with open(os.path.join(HERE, name), "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def bmp(width, height, palette, pixel):
    """An uncompressed 8-bit BMP (the format GoldSrc textures use): `palette` is 256 (r, g, b)
    entries, `pixel(x, y)` the palette index at column x of row y (row 0 at the top)."""
    stride = (width + 3) // 4 * 4
    rows = b""
    for y in reversed(range(height)):  # BMP rows run bottom-up
        row = bytes(pixel(x, y) for x in range(width))
        rows += row + b"\0" * (stride - width)
    pal = b"".join(bytes((b, g, r, 0)) for r, g, b in palette)
    offset = 14 + 40 + len(pal)
    head = b"BM" + (offset + len(rows)).to_bytes(4, "little") + b"\0\0\0\0"
    head += offset.to_bytes(4, "little")
    info = (40).to_bytes(4, "little") + width.to_bytes(4, "little") + height.to_bytes(4, "little")
    info += (1).to_bytes(2, "little") + (8).to_bytes(2, "little") + b"\0" * 4
    info += len(rows).to_bytes(4, "little") + b"\0" * 8 + (256).to_bytes(4, "little") + b"\0" * 4
    return head + info + pal + rows


def ramp(dark, light):
    """256 colours from `dark` to `light`."""
    return [tuple(round(d + (l - d) * i / 255) for d, l in zip(dark, light)) for i in range(256)]


def textures():
    """The GoldSrc textures (8-bit BMPs named after the SMD materials): a scaled skin, its albino
    version, the eyes and the horns. Source builds use materials (VMT) instead and ignore them."""
    def scales(x, y):
        # a pattern of scales: bright centres, dark rims
        cx, cy = x % 8 - 3.5, (y + (x // 8) * 4) % 8 - 3.5
        return max(0, min(255, round(230 - 14 * (cx * cx + cy * cy))))

    def eye(x, y):
        d = math.hypot(x - 7.5, y - 7.5)
        return 0 if d < 3 else (120 if d < 6 else 255)

    def horn(x, y):
        return max(0, min(255, round(255 - y * 7 + 20 * math.sin(x * 0.8))))

    return {
        "creature_skin.bmp": bmp(64, 64, ramp((40, 70, 30), (150, 190, 90)), scales),
        "creature_skin_albino.bmp": bmp(64, 64, ramp((150, 140, 140), (255, 250, 245)), scales),
        "creature_eyes.bmp": bmp(16, 16, ramp((10, 10, 10), (250, 200, 40)), eye),
        "creature_horn.bmp": bmp(16, 32, ramp((60, 50, 40), (235, 225, 200)), horn),
    }


def main():
    for name, data in textures().items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    ref = reference()
    write("creature_reference.smd", reference_file(ref))
    write("creature_horns.smd", reference_file(horns()))
    write("creature_idle.smd", idle())
    write("creature_walk.smd", walk())
    print(f"reference: {ref.count} triangles; horns: {horns().count} triangles")


if __name__ == "__main__":
    main()
