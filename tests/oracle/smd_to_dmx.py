# Test oracle: convert a text SMD file into a DMX file ("model" format, version 1).
#
# Usage: smd_to_dmx.py IN.smd OUT.dmx ENCODING VERSION
#   ENCODING is "binary" (VERSION 0-5) or "keyvalues2" (VERSION 1).
#
# The element layout mirrors what Blender Source Tools writes for model-1 DMX
# files (DmeModel / DmeJoint / DmeDag / DmeMesh / DmeVertexData / DmeFaceSet,
# and DmeAnimationList / DmeChannelsClip for animation-only SMDs). Encoding is
# done entirely through srctools.dmx's public API (Element.export_binary and
# Element.export_kv2). Exits with status 3 if srctools cannot write the
# requested encoding/version, status 2 on bad arguments or unreadable input.
import math
import os
import re
import sys

from srctools.dmx import Attribute, Element, Quaternion, ValueType, Vec2
from srctools.math import Vec

TICKS_PER_SEC = 10000
FPS = 30
NODE_RE = re.compile(r'^(-?\d+)\s+"([^"]*)"\s+(-?\d+)')


def parse_smd(path):
    """Return (nodes, frames, triangles).

    nodes: list of (index, name, parent); frames: list of (time, {bone: (pos, rot)});
    triangles: list of (material, [corner x3]), corner = (bone, pos, nrm, uv, links).
    """
    nodes, frames, tris, corners = [], [], [], []
    section = material = None
    with open(path, encoding='latin-1') as f:
        for raw in f:
            line = raw.split('//', 1)[0].strip()
            if not line:
                continue
            if section is None or line == 'end':  # "version 1" and unknown headers skipped
                section = line if line in ('nodes', 'skeleton', 'triangles') else None
                continue
            if section == 'nodes':
                m = NODE_RE.match(line)
                if m:
                    nodes.append((int(m.group(1)), m.group(2), int(m.group(3))))
            elif section == 'skeleton':
                parts = line.split()
                if parts[0] == 'time':
                    frames.append((int(parts[1]), {}))
                elif frames and len(parts) >= 7:
                    vals = [float(p) for p in parts[1:7]]
                    frames[-1][1][int(parts[0])] = (tuple(vals[:3]), tuple(vals[3:6]))
            elif section == 'triangles':
                parts = line.split()
                if material is None or len(parts) < 9:
                    material, corners = line, []
                    continue
                bone = int(parts[0])
                nums = [float(p) for p in parts[1:9]]
                count = int(parts[9]) if len(parts) > 9 else 0
                links = [(int(parts[10 + 2 * i]), float(parts[11 + 2 * i])) for i in range(count)]
                corners.append((bone, tuple(nums[0:3]), tuple(nums[3:6]), tuple(nums[6:8]), links))
                if len(corners) == 3:
                    tris.append((material, corners))
                    material, corners = None, []
    return nodes, frames, tris


def angle_quaternion(x, y, z):
    sr, cr = math.sin(x / 2), math.cos(x / 2)
    sp, cp = math.sin(y / 2), math.cos(y / 2)
    sy, cy = math.sin(z / 2), math.cos(z / 2)
    return Quaternion(sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
                      cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


def elem_array(name, elems):
    return Attribute.array(name, ValueType.ELEMENT, elems)


def put_array(elem, name, val_type, values):
    elem[name] = Attribute.array(name, val_type, values)


def make_transform(name, pos=(0.0, 0.0, 0.0), quat=Quaternion(0.0, 0.0, 0.0, 1.0)):
    t = Element(name, 'DmeTransform')
    t['position'] = Attribute.vec3('position', *pos)
    t['orientation'] = Attribute.quaternion('orientation', *quat)
    return t


def build_mesh(stem, tris, node_pos):
    """node_pos maps SMD node index -> index into jointTransforms."""
    joint_count = max([1] + [len(c[4]) for _, cs in tris for c in cs])
    pos_map, pos_list, pos_idx, weights, indices = {}, [], [], [], []
    nrm_map, nrm_list, nrm_idx = {}, [], []
    uv_map, uv_list, uv_idx = {}, [], []
    face_sets = {}  # material -> faces list (insertion order = first use)
    corner = 0
    for material, cs in tris:
        faces = face_sets.setdefault(material, [])
        for bone, pos, nrm, uv, links in cs:
            if not links:
                links = [(bone, 1.0)]
            links = [(node_pos.get(b, 0), w) for b, w in links]
            links += [(0, 0.0)] * (joint_count - len(links))
            w = tuple(l[1] for l in links)
            j = tuple(l[0] for l in links)
            key = (pos, w, j)
            if key not in pos_map:
                pos_map[key] = len(pos_list)
                pos_list.append(pos)
                weights.extend(w)
                indices.extend(j)
            pos_idx.append(pos_map[key])
            for val, mp, lst, idx in ((nrm, nrm_map, nrm_list, nrm_idx), (uv, uv_map, uv_list, uv_idx)):
                if val not in mp:
                    mp[val] = len(lst)
                    lst.append(val)
                idx.append(mp[val])
            faces.append(corner)
            corner += 1
        faces.append(-1)

    vd = Element('bind', 'DmeVertexData')
    fmt = ['positions', 'normals', 'textureCoordinates', 'jointWeights', 'jointIndices']
    put_array(vd, 'vertexFormat', ValueType.STRING, fmt)
    vd['flipVCoordinates'] = Attribute.bool('flipVCoordinates', True)
    vd['jointCount'] = Attribute.int('jointCount', joint_count)
    put_array(vd, 'positions', ValueType.VEC3, [Vec(*p) for p in pos_list])
    put_array(vd, 'positionsIndices', ValueType.INTEGER, pos_idx)
    put_array(vd, 'normals', ValueType.VEC3, [Vec(*n) for n in nrm_list])
    put_array(vd, 'normalsIndices', ValueType.INTEGER, nrm_idx)
    put_array(vd, 'textureCoordinates', ValueType.VEC2, [Vec2(*t) for t in uv_list])
    put_array(vd, 'textureCoordinatesIndices', ValueType.INTEGER, uv_idx)
    put_array(vd, 'jointWeights', ValueType.FLOAT, weights)
    put_array(vd, 'jointIndices', ValueType.INTEGER, indices)

    mesh = Element(stem, 'DmeMesh')
    mesh['visible'] = Attribute.bool('visible', True)
    mesh['bindState'] = vd
    mesh['currentState'] = vd
    mesh['baseStates'] = elem_array('baseStates', [vd])
    sets = []
    for material, faces in face_sets.items():
        mat = Element(material, 'DmeMaterial')
        mat['mtlName'] = Attribute.string('mtlName', material)
        fs = Element(material, 'DmeFaceSet')
        fs['material'] = mat
        put_array(fs, 'faces', ValueType.INTEGER, faces)
        sets.append(fs)
    mesh['faceSets'] = elem_array('faceSets', sets)

    dag = Element(stem, 'DmeDag')
    dag['transform'] = make_transform(stem)
    dag['shape'] = mesh
    return dag


def build_anim(stem, nodes, frames, transforms):
    first = frames[0][0]
    last = max(t for t, _ in frames)
    ticks = lambda n: int(round(n * TICKS_PER_SEC / FPS))
    channels = []
    for node_i, (idx, name, _parent) in enumerate(nodes):
        keys = [(t - first, bones[idx]) for t, bones in frames if idx in bones]
        for suffix, attr, log_t, layer_t, vtype, conv in (
                ('_p', 'position', 'DmeVector3Log', 'DmeVector3LogLayer', ValueType.VEC3,
                 lambda pr: Vec(*pr[0])),
                ('_o', 'orientation', 'DmeQuaternionLog', 'DmeQuaternionLogLayer',
                 ValueType.QUATERNION, lambda pr: angle_quaternion(*pr[1]))):
            layer = Element('', layer_t)
            put_array(layer, 'times', ValueType.INTEGER, [ticks(k) for k, _ in keys])
            put_array(layer, 'values', vtype, [conv(v) for _, v in keys])
            log = Element('Vector3 log' if suffix == '_p' else 'Quaternion log', log_t)
            log['layers'] = elem_array('layers', [layer])
            ch = Element(name + suffix, 'DmeChannel')
            ch['toElement'] = transforms[node_i]
            ch['toAttribute'] = Attribute.string('toAttribute', attr)
            ch['mode'] = Attribute.int('mode', 1)
            ch['log'] = log
            channels.append(ch)
    tf = Element('timeFrame', 'DmeTimeFrame')
    tf['durationTime'] = Attribute.int('durationTime', ticks(last - first))
    tf['scale'] = Attribute.float('scale', 1.0)
    clip = Element(stem, 'DmeChannelsClip')
    clip['timeFrame'] = tf
    clip['frameRate'] = Attribute.int('frameRate', FPS)
    clip['channels'] = elem_array('channels', channels)
    alist = Element(stem, 'DmeAnimationList')
    alist['animations'] = elem_array('animations', [clip])
    return alist


def build(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    nodes, frames, tris = parse_smd(path)
    node_pos = {idx: i for i, (idx, _n, _p) in enumerate(nodes)}
    joints, transforms = [], []
    for idx, name, _parent in nodes:
        pos, rot = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        for _t, bones in frames:  # first frame where this bone appears
            if idx in bones:
                pos, rot = bones[idx]
                break
        t = make_transform(name, pos, angle_quaternion(*rot))
        j = Element(name, 'DmeJoint')
        j['transform'] = t
        j['children'] = elem_array('children', [])
        joints.append(j)
        transforms.append(t)
    roots = []
    for i, (_idx, _name, parent) in enumerate(nodes):
        if parent in node_pos:
            joints[node_pos[parent]]['children'].append(joints[i])
        else:
            roots.append(joints[i])

    model = Element(stem, 'DmeModel')
    model['children'] = elem_array('children', roots)
    model['transform'] = make_transform('')
    all_t = list(transforms)
    if tris:
        dag = build_mesh(stem, tris, node_pos)
        model['children'].append(dag)
        all_t.append(dag['transform'].val_elem)
    model['jointTransforms'] = elem_array('jointTransforms', all_t)
    base = Element('base', 'DmeTransformList')
    base['transforms'] = elem_array('transforms', all_t)
    model['baseStates'] = elem_array('baseStates', [base])

    root = Element('Collection', 'DmElement')
    root['skeleton'] = model
    if tris:
        root['model'] = model
    elif frames:
        root['animationList'] = build_anim(stem, nodes, frames, transforms)
    return root


def main(argv):
    if len(argv) != 5 or not argv[4].lstrip('-').isdigit():
        print('usage: smd_to_dmx.py IN.smd OUT.dmx binary|keyvalues2 VERSION', file=sys.stderr)
        return 2
    src, dst, encoding, version = argv[1], argv[2], argv[3], int(argv[4])
    # srctools.dmx writes binary encodings 0-5 and keyvalues2 encoding 1 only.
    if not ((encoding == 'binary' and 0 <= version <= 5)
            or (encoding == 'keyvalues2' and version == 1)):
        print(f'srctools cannot write DMX encoding {encoding} {version}', file=sys.stderr)
        return 3
    try:
        root = build(src)
    except (OSError, ValueError, IndexError) as exc:
        print(f'cannot read {src}: {exc}', file=sys.stderr)
        return 2
    try:
        with open(dst, 'wb') as f:
            if encoding == 'binary':
                root.export_binary(f, version=version, fmt_name='model', fmt_ver=1)
            else:
                root.export_kv2(f, fmt_name='model', fmt_ver=1)
    except ValueError as exc:  # e.g. non-ASCII names, which the ascii mode rejects
        os.remove(dst)
        print(f'srctools cannot write {encoding} {version}: {exc}', file=sys.stderr)
        return 3
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
