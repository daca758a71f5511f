//! Reading the face records of an MDL v48 back (for `mdlc inspect`): flex descriptions,
//! controllers, controller UI, rules (decoded from their operation stacks into readable
//! expressions), mouths and eyeballs. Offsets are bounds-checked like the rest of the reader.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::records::*;

pub struct RController {
    pub name: String,
    pub group: String,
    pub local_to_global: i32,
    pub min: f32,
    pub max: f32,
}

pub struct RUi {
    pub name: String,
    /// Controller indices the three offsets point at (`None` for 0).
    pub index: [Option<i64>; 3],
    pub remaptype: u8,
    pub stereo: bool,
}

pub struct RRule {
    pub flex: i32,
    /// (op, payload) as stored.
    pub ops: Vec<(i32, i32)>,
}

pub struct RMouth {
    pub bone: i32,
    pub forward: [f32; 3],
    pub flexdesc: i32,
}

#[derive(Default)]
pub struct RFace {
    pub flex_descs: Vec<String>,
    pub controllers: Vec<RController>,
    pub ui: Vec<RUi>,
    pub rules: Vec<RRule>,
    pub mouths: Vec<RMouth>,
    /// Per model (body parts in order, their models in order): its eyeballs.
    pub eyeballs: Vec<Vec<StudioEyeball>>,
    /// Per model, per mesh: its flexes (`mstudioflex_t` with their vertex animations).
    pub flexes: Vec<Vec<Vec<RFlex>>>,
}

/// One `mstudioflex_t` and its `mstudiovertanim_t` (deltas as stored: half floats).
pub struct RFlex {
    pub flexdesc: i32,
    pub targets: [f32; 4],
    pub flexpair: i32,
    pub vertanimtype: u8,
    /// The mesh's vertex count (for the checks).
    pub mesh_vertices: i32,
    pub anims: Vec<RVertAnim>,
}

pub struct RVertAnim {
    pub index: u16,
    pub speed: u8,
    pub side: u8,
    pub delta: [u16; 3],
    pub ndelta: [u16; 3],
}

fn count(n: i32, max: i32, what: &str) -> Result<usize, String> {
    if n < 0 || n > max {
        return Err(format!("{what} count {n} is out of range"));
    }
    Ok(n as usize)
}

/// Reads the face records; `models` are the file offsets and records of every model.
pub fn read_face(
    b: &[u8],
    hdr: &StudioHdr,
    models: &[(i64, &StudioModel)],
) -> Result<RFace, String> {
    let mut f = RFace::default();
    for i in 0..count(hdr.numflexdesc, 4096, "flex description")? {
        let at = hdr.flexdescindex as i64 + 4 * i as i64;
        let rel: i32 = read(b, at, "flex description")?;
        f.flex_descs.push(read_cstr(b, at + rel as i64)?);
    }
    for i in 0..count(hdr.numflexcontrollers, 4096, "flex controller")? {
        let at = hdr.flexcontrollerindex as i64 + 20 * i as i64;
        let ty: i32 = read(b, at, "flex controller")?;
        let name: i32 = read(b, at + 4, "flex controller")?;
        f.controllers.push(RController {
            group: read_cstr(b, at + ty as i64)?,
            name: read_cstr(b, at + name as i64)?,
            local_to_global: read(b, at + 8, "flex controller")?,
            min: read(b, at + 12, "flex controller")?,
            max: read(b, at + 16, "flex controller")?,
        });
    }
    for i in 0..count(hdr.numflexcontrollerui, 4096, "flex controller UI")? {
        let at = hdr.flexcontrolleruiindex as i64 + 20 * i as i64;
        let name: i32 = read(b, at, "flex controller UI")?;
        let mut index = [None; 3];
        for (k, slot) in index.iter_mut().enumerate() {
            let off: i32 = read(b, at + 4 + 4 * k as i64, "flex controller UI")?;
            if off != 0 {
                let rel = at + off as i64 - hdr.flexcontrollerindex as i64;
                if rel % 20 != 0 || rel < 0 || rel / 20 >= f.controllers.len() as i64 {
                    return Err(format!(
                        "flex controller UI record {i} points at offset {} , which is not a controller",
                        at + off as i64
                    ));
                }
                *slot = Some(rel / 20);
            }
        }
        let flags = bytes(b, at + 16, 2)?;
        f.ui.push(RUi {
            name: read_cstr(b, at + name as i64)?,
            index,
            remaptype: flags[0],
            stereo: flags[1] != 0,
        });
    }
    for i in 0..count(hdr.numflexrules, 4096, "flex rule")? {
        let at = hdr.flexruleindex as i64 + 12 * i as i64;
        let flex: i32 = read(b, at, "flex rule")?;
        let n = count(read(b, at + 4, "flex rule")?, 4096, "flex operation")?;
        let opindex: i32 = read(b, at + 8, "flex rule")?;
        let mut ops = Vec::with_capacity(n);
        for k in 0..n {
            let o = at + opindex as i64 + 8 * k as i64;
            ops.push((
                read(b, o, "flex operation")?,
                read(b, o + 4, "flex operation")?,
            ));
        }
        f.rules.push(RRule { flex, ops });
    }
    for i in 0..count(hdr.nummouths, 256, "mouth")? {
        let at = hdr.mouthindex as i64 + 20 * i as i64;
        f.mouths.push(RMouth {
            bone: read(b, at, "mouth")?,
            forward: read(b, at + 4, "mouth")?,
            flexdesc: read(b, at + 16, "mouth")?,
        });
    }
    for (at, m) in models {
        let mut meshes = Vec::new();
        for k in 0..count(m.nummeshes, 65536, "mesh")? {
            let mat = at + m.meshindex as i64 + (k * StudioMesh::SIZE) as i64;
            let mesh: StudioMesh = read(b, mat, "mesh")?;
            let mut flexes = Vec::new();
            for i in 0..count(mesh.numflexes, 4096, "flex")? {
                let fa = mat + mesh.flexindex as i64 + 60 * i as i64;
                let n = count(read(b, fa + 20, "flex")?, 65536, "vertex animation")?;
                let vi: i32 = read(b, fa + 24, "flex")?;
                let kind = bytes(b, fa + 32, 1)?[0];
                let size = if kind == 1 { 18 } else { 16 };
                let mut anims = Vec::with_capacity(n);
                for j in 0..n {
                    let va = fa + vi as i64 + (size * j) as i64;
                    let head = bytes(b, va, 4)?;
                    anims.push(RVertAnim {
                        index: u16::from_le_bytes([head[0], head[1]]),
                        speed: head[2],
                        side: head[3],
                        delta: read(b, va + 4, "vertex animation")?,
                        ndelta: read(b, va + 10, "vertex animation")?,
                    });
                }
                flexes.push(RFlex {
                    flexdesc: read(b, fa, "flex")?,
                    targets: read(b, fa + 4, "flex")?,
                    flexpair: read(b, fa + 28, "flex")?,
                    vertanimtype: kind,
                    mesh_vertices: mesh.numvertices,
                    anims,
                });
            }
            meshes.push(flexes);
        }
        f.flexes.push(meshes);
        let mut eyes = Vec::new();
        for i in 0..count(m.numeyeballs, 256, "eyeball")? {
            eyes.push(read::<StudioEyeball>(
                b,
                at + m.eyeballindex as i64 + (i * StudioEyeball::SIZE) as i64,
                "eyeball",
            )?);
        }
        f.eyeballs.push(eyes);
    }
    Ok(f)
}

fn bytes(b: &[u8], at: i64, n: usize) -> Result<&[u8], String> {
    usize::try_from(at)
        .ok()
        .and_then(|s| b.get(s..s.checked_add(n)?))
        .ok_or_else(|| format!("offset {at} is outside the file"))
}

/// Checks what the engine relies on: rule targets and operands in range, every rule leaving one
/// value on a stack of the engine's depth, mouth and eyeball flexes in range.
pub fn problems(f: &RFace, nbones: usize) -> Vec<String> {
    let mut out = Vec::new();
    let nd = f.flex_descs.len() as i32;
    let nc = f.controllers.len() as i32;
    for (i, r) in f.rules.iter().enumerate() {
        if r.flex < 0 || r.flex >= nd {
            out.push(format!("flex rule {i} is for flex {} of {nd}", r.flex));
        }
        let mut depth: i32 = 0;
        for &(op, d) in &r.ops {
            let (pops, ok) = match op {
                1 => (0, true),
                2 => (0, d >= 0 && d < nc),
                3 => (0, d >= 0 && d < nd),
                8 => (1, true),
                4..=7 | 13 | 14 => (2, true),
                _ => (0, false),
            };
            if !ok {
                out.push(format!(
                    "flex rule {i}: operation {op} {d} is not valid here"
                ));
            }
            if depth < pops {
                out.push(format!("flex rule {i}: operation {op} needs {pops} values"));
                break;
            }
            depth = depth - pops + 1;
        }
        if depth != 1 {
            out.push(format!("flex rule {i} leaves {depth} values, not 1"));
        }
    }
    for (k, meshes) in f.flexes.iter().enumerate() {
        for (m, flexes) in meshes.iter().enumerate() {
            for fl in flexes {
                if fl.flexdesc < 0
                    || fl.flexdesc >= nd
                    || fl.flexpair < 0
                    || fl.flexpair >= nd.max(1)
                {
                    out.push(format!(
                        "model {k} mesh {m}: a flex names flex {} (pair {}) of {nd}",
                        fl.flexdesc, fl.flexpair
                    ));
                }
                if let Some(a) = fl
                    .anims
                    .iter()
                    .find(|a| i32::from(a.index) >= fl.mesh_vertices)
                {
                    out.push(format!(
                        "model {k} mesh {m}: flex {} moves vertex {} of a mesh of {}",
                        fl.flexdesc, a.index, fl.mesh_vertices
                    ));
                }
            }
        }
    }
    for (i, m) in f.mouths.iter().enumerate() {
        if m.bone < 0 || m.bone as usize >= nbones || m.flexdesc < 0 || m.flexdesc >= nd {
            out.push(format!(
                "mouth {i}: bone {} or flex {} out of range",
                m.bone, m.flexdesc
            ));
        }
    }
    for (k, eyes) in f.eyeballs.iter().enumerate() {
        for (i, e) in eyes.iter().enumerate() {
            let descs = e
                .upperflexdesc
                .iter()
                .chain(&e.lowerflexdesc)
                .chain([&e.upperlidflexdesc, &e.lowerlidflexdesc]);
            if e.bone < 0
                || e.bone as usize >= nbones
                || descs.clone().any(|&d| d < 0 || (d >= nd && d != 0))
            {
                out.push(format!(
                    "model {k} eyeball {i}: bone or lid flex out of range"
                ));
            }
        }
    }
    out
}

/// A rule as a readable expression, decoded from its stack program (each operation applied to
/// the texts on the stack; parentheses where an operand of lower precedence needs them).
pub fn rule_text(f: &RFace, r: &RRule) -> String {
    // (text, precedence: 3 atom, 2 product, 1 sum)
    let mut stack: Vec<(String, u8)> = Vec::new();
    for &(op, d) in &r.ops {
        match op {
            1 => {
                let v = f32::from_bits(d as u32);
                stack.push((super::dump::f(v), if v < 0.0 { 2 } else { 3 }));
            }
            2 => stack.push((
                f.controllers
                    .get(d as usize)
                    .map_or(format!("controller#{d}"), |c| c.name.clone()),
                3,
            )),
            3 => stack.push((
                format!(
                    "%{}",
                    f.flex_descs
                        .get(d as usize)
                        .map_or(format!("#{d}"), String::clone)
                ),
                3,
            )),
            8 => {
                let (a, p) = stack.pop().unwrap_or(("?".into(), 3));
                let a = if p < 3 { format!("({a})") } else { a };
                stack.push((format!("-{a}"), 2));
            }
            13 | 14 => {
                let (b, _) = stack.pop().unwrap_or(("?".into(), 3));
                let (a, _) = stack.pop().unwrap_or(("?".into(), 3));
                let name = if op == 13 { "max" } else { "min" };
                stack.push((format!("{name}({a}, {b})"), 3));
            }
            4..=7 => {
                let (b, pb) = stack.pop().unwrap_or(("?".into(), 3));
                let (a, pa) = stack.pop().unwrap_or(("?".into(), 3));
                let (sym, p) = match op {
                    4 => ("+", 1),
                    5 => ("-", 1),
                    6 => ("*", 2),
                    _ => ("/", 2),
                };
                let a = if pa < p { format!("({a})") } else { a };
                // the right operand of - and / (and of * after a sum) keeps its grouping
                let b = if pb < p || (pb == p && (op == 5 || op == 7)) {
                    format!("({b})")
                } else {
                    b
                };
                stack.push((format!("{a} {sym} {b}"), p));
            }
            _ => stack.push((format!("op{op}({d})"), 3)),
        }
    }
    let rest: Vec<String> = stack.into_iter().map(|(t, _)| t).collect();
    rest.join(" ; ")
}

pub fn text(s: &mut String, f: &RFace, bone_name: &dyn Fn(i32) -> String) {
    if f.flex_descs.is_empty() && f.controllers.is_empty() && f.eyeballs.iter().all(Vec::is_empty) {
        return;
    }
    let _ = writeln!(s, "Flex descriptions ({}):", f.flex_descs.len());
    for (i, d) in f.flex_descs.iter().enumerate() {
        let _ = writeln!(s, "  [{i}] {d}");
    }
    let _ = writeln!(s, "Flex controllers ({}):", f.controllers.len());
    for (i, c) in f.controllers.iter().enumerate() {
        let _ = writeln!(
            s,
            "  [{i}] {}  group {}  range {} .. {}",
            c.name,
            c.group,
            super::dump::f(c.min),
            super::dump::f(c.max)
        );
    }
    let _ = writeln!(s, "Flex controller UI ({}):", f.ui.len());
    for (i, u) in f.ui.iter().enumerate() {
        let name = |k: Option<i64>| {
            k.and_then(|k| f.controllers.get(k as usize))
                .map_or("-".to_string(), |c| c.name.clone())
        };
        if u.stereo {
            let _ = writeln!(
                s,
                "  [{i}] {}  stereo  left {}  right {}",
                u.name,
                name(u.index[0]),
                name(u.index[1])
            );
        } else {
            let _ = writeln!(s, "  [{i}] {}  {}", u.name, name(u.index[0]));
        }
    }
    let _ = writeln!(s, "Flex rules ({}):", f.rules.len());
    for (i, r) in f.rules.iter().enumerate() {
        let target = f
            .flex_descs
            .get(r.flex as usize)
            .map_or("?", String::as_str);
        let _ = writeln!(s, "  [{i}] %{target} = {}", rule_text(f, r));
    }
    if !f.mouths.is_empty() {
        let _ = writeln!(s, "Mouths ({}):", f.mouths.len());
        for (i, m) in f.mouths.iter().enumerate() {
            let _ = writeln!(
                s,
                "  [{i}] bone {} ({})  forward {}  flex %{}",
                m.bone,
                bone_name(m.bone),
                super::dump::fv(&m.forward),
                f.flex_descs
                    .get(m.flexdesc as usize)
                    .map_or("?", String::as_str)
            );
        }
    }
    for (k, eyes) in f.eyeballs.iter().enumerate() {
        for (i, e) in eyes.iter().enumerate() {
            let d = |x: i32| {
                f.flex_descs
                    .get(x as usize)
                    .map_or("?", String::as_str)
                    .to_string()
            };
            let _ = writeln!(
                s,
                "Eyeball [{i}] of model {k}: bone {} ({})  origin {}  radius {}  zoffset {}  iris_scale {}",
                e.bone,
                bone_name(e.bone),
                super::dump::fv(&e.org),
                super::dump::f(e.radius),
                super::dump::f(e.zoffset),
                super::dump::f(e.iris_scale),
            );
            let _ = writeln!(
                s,
                "  up {}  forward {}",
                super::dump::fv(&e.up),
                super::dump::fv(&e.forward)
            );
            let lids = [
                ("upper", e.upperlidflexdesc, e.upperflexdesc, e.uppertarget),
                ("lower", e.lowerlidflexdesc, e.lowerflexdesc, e.lowertarget),
            ];
            for (which, lid, descs, targets) in lids {
                if lid == 0 && descs == [0; 3] {
                    let _ = writeln!(s, "  {which} lid: none");
                } else {
                    let _ = writeln!(
                        s,
                        "  {which} lid %{}: {} {} {} at {}",
                        d(lid),
                        d(descs[0]),
                        d(descs[1]),
                        d(descs[2]),
                        super::dump::fv(&targets)
                    );
                }
            }
        }
    }
}

pub fn json(f: &RFace) -> Value {
    json!({
        "flex_descs": f.flex_descs,
        "flex_controllers": f.controllers.iter().map(|c| json!({
            "name": c.name, "group": c.group, "min": c.min, "max": c.max,
            "local_to_global": c.local_to_global,
        })).collect::<Vec<_>>(),
        "flex_controller_ui": f.ui.iter().map(|u| json!({
            "name": u.name, "stereo": u.stereo, "remaptype": u.remaptype,
            "controllers": u.index,
        })).collect::<Vec<_>>(),
        "flex_rules": f.rules.iter().map(|r| json!({
            "flex": r.flex,
            "expression": rule_text(f, r),
            "ops": r.ops.iter().map(|&(op, d)| json!([op, d])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "mouths": f.mouths.iter().map(|m| json!({
            "bone": m.bone, "forward": m.forward, "flex": m.flexdesc,
        })).collect::<Vec<_>>(),
        "eyeballs": f.eyeballs.iter().map(|eyes| eyes.iter().map(|e| json!({
            "bone": e.bone, "org": e.org, "zoffset": e.zoffset, "radius": e.radius,
            "up": e.up, "forward": e.forward, "iris_scale": e.iris_scale,
            "upperflexdesc": e.upperflexdesc, "lowerflexdesc": e.lowerflexdesc,
            "uppertarget": e.uppertarget, "lowertarget": e.lowertarget,
            "upperlidflexdesc": e.upperlidflexdesc, "lowerlidflexdesc": e.lowerlidflexdesc,
        })).collect::<Vec<_>>()).collect::<Vec<_>>(),
    })
}

/// `mdlc inspect --flex NAME`: every vertex the flex moves, per mesh: the mesh-local vertex, its
/// position (from the VVD when `positions` has it, indexed model-first), the position and normal
/// deltas decoded from half floats, speed and side over 255. `Err` names the flexes when the
/// model has none of that name.
pub fn flex_report(
    f: &RFace,
    name: &str,
    positions: &dyn Fn(usize, usize, u16) -> Option<[f32; 3]>,
    json: bool,
) -> Result<String, Vec<String>> {
    let Some(desc) = f
        .flex_descs
        .iter()
        .position(|d| d.eq_ignore_ascii_case(name))
    else {
        return Err(f.flex_descs.clone());
    };
    let h = |v: [u16; 3]| v.map(super::face::half_to_f32);
    let mut rows = Vec::new();
    let mut s = String::new();
    let _ = writeln!(s, "flex [{desc}] {}", f.flex_descs[desc]);
    for (k, meshes) in f.flexes.iter().enumerate() {
        for (m, flexes) in meshes.iter().enumerate() {
            for fl in flexes.iter().filter(|fl| fl.flexdesc == desc as i32) {
                let _ = writeln!(
                    s,
                    "  model {k} mesh {m}: targets {} {} {} {}  pair {}  {} vertices",
                    super::dump::f(fl.targets[0]),
                    super::dump::f(fl.targets[1]),
                    super::dump::f(fl.targets[2]),
                    super::dump::f(fl.targets[3]),
                    fl.flexpair,
                    fl.anims.len()
                );
                for a in &fl.anims {
                    let pos = positions(k, m, a.index);
                    let (d, n) = (h(a.delta), h(a.ndelta));
                    let _ = writeln!(
                        s,
                        "    [{}] at {}  delta {}  normal {}  speed {}  side {}",
                        a.index,
                        pos.map_or("?".to_string(), |p| super::dump::fv(&p)),
                        super::dump::fv(&d),
                        super::dump::fv(&n),
                        super::dump::f(f32::from(a.speed) / 255.0),
                        super::dump::f(f32::from(a.side) / 255.0)
                    );
                    rows.push(json!({
                        "model": k, "mesh": m, "index": a.index, "pos": pos, "delta": d,
                        "ndelta": n, "speed": f32::from(a.speed) / 255.0,
                        "side": f32::from(a.side) / 255.0, "targets": fl.targets,
                        "flexpair": fl.flexpair,
                    }));
                }
            }
        }
    }
    if json {
        let mut t =
            json!({"flex": f.flex_descs[desc], "index": desc, "vertices": rows}).to_string();
        t.push('\n');
        Ok(t)
    } else {
        Ok(s)
    }
}
