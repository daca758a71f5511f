#!/usr/bin/env python3
"""Differential check of mdlc's GoldSrc back end against Valve's HL1 studiomdl.

Every QC of the Half-Life corpus that has a Valve model under `expected/` is changed in one way
(a variant), then compiled by both tools; the .mdl files must be byte-identical, and a QC that
Valve's tool refuses (it prints ERROR) must be refused by mdlc too. The variants push the
sources off the path the corpus's own files take: moved or scaled models, random small changes
to vertex positions, normals, texture coordinates or bone poses (which change welding, normal
merging, texture-coordinate rounding and the animation encoding), fractional frame rates, and
textures of other sizes.

Valve's tool is not part of mdlc and not in CI: build it from ValveSoftware/halflife
(`utils/studiomdl`) for this machine, with portability fixes only (README.md, "Benchmark"), and
check first that it writes the corpus's `expected/` models byte for byte.

Usage: goldsrc_differential.py VALVE_STUDIOMDL MDLC [VARIANT ...]
  (corpus: ../shared/corpus/goldsrc-hl1 beside the checkout, or MDLC_CORPUS/goldsrc-hl1;
   work folder: MDLC_DIFF_DIR, default /tmp/mdlc-differential; the random changes' seed:
   MDLC_DIFF_SEED, default 7)
Variants: origin scale positions normals uvs poses fps textures, and gamma externaltextures
groups eyes flags cliptotextures (one QC command each, see COMMANDS) (default: all). `fps` gives
every whole frame rate a fraction (`fps 30` -> `fps 30.37`); `textures` crops every 8-bit BMP by
a few columns and rows (odd widths, other texture-coordinate scales). Exit status 1 on any
difference.
"""

import filecmp
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

# QC commands each put after `$modelname` by a variant of its own
COMMANDS = {
    "origin": "$origin 3 -2 5",
    "scale": "$scale 0.75",
    "gamma": "$gamma 1.6",
    "externaltextures": "$externaltextures",
    "groups": "$sequencegroupsize 64",
    "eyes": "$eyeposition 1.5 -2.25 60.125",
    "flags": "$flags 8",
    "cliptotextures": "$cliptotextures",
}
# SMD values each moved a little by a variant of its own (see `change_smd`)
JITTERS = ["positions", "normals", "uvs", "poses"]
VARIANTS = ["origin", "scale", *JITTERS, "fps", "textures",
            *[c for c in COMMANDS if c not in ("origin", "scale")]]
INT = re.compile(r"^-?\d+$")


def corpus_dir() -> Path:
    base = os.environ.get("MDLC_CORPUS")
    root = Path(base) if base else Path(__file__).resolve().parents[2] / "shared" / "corpus"
    return root / "goldsrc-hl1"


def valve_qcs(corpus: Path) -> list[Path]:
    """The corpus QCs whose model Valve's tool made (a file of that name under expected/)."""
    expected = {p.name.lower() for p in (corpus / "expected").rglob("*.mdl")}
    return sorted(
        q for q in (corpus / "modelsrc").rglob("*.qc") if (q.stem + ".mdl").lower() in expected
    )


def change_smd(path: Path, variant: str, rng: random.Random, moved: dict) -> None:
    """Moves each value the variant changes by a small random amount, six decimals kept;
    `moved` keeps what each vertex value became, for the whole tree (each file is changed
    once)."""
    lines = path.read_text(encoding="latin-1").splitlines(keepends=True)
    out, section = [], None
    for line in lines:
        words = line.split()
        if words and words[0] in ("nodes", "skeleton", "triangles"):
            section = words[0]
        elif words and words[0] == "end":
            section = None
        elif section == "triangles" and len(words) >= 9 and INT.match(words[0]):
            span, size = {"positions": (1, 0.05), "normals": (4, 0.05), "uvs": (7, 0.003)}.get(
                variant, (None, 0)
            )
            if span is not None:
                count = 2 if variant == "uvs" else 3
                # the same values move the same way, so shared vertices stay shared (a model
                # keeps its vertex count) while every value takes another rounding
                key = tuple(words[span: span + count])
                if key not in moved:
                    moved[key] = ["%.6f" % (float(w) + rng.uniform(-size, size)) for w in key]
                words[span: span + count] = moved[key]
                line = " ".join(words) + "\n"
        elif section == "skeleton" and variant == "poses" and len(words) == 7 and INT.match(words[0]):
            values = ["%.6f" % (float(v) + rng.uniform(-0.02, 0.02)) for v in words[1:]]
            line = words[0] + " " + " ".join(values) + "\n"
        out.append(line)
    path.write_text("".join(out), encoding="latin-1")


def crop_bmp(path: Path, rng: random.Random) -> None:
    """An 8-bit uncompressed BMP cropped by 1-3 columns and 0-2 rows (palette kept); other
    files are left as they are."""
    data = path.read_bytes()
    if len(data) < 54 or data[:2] != b"BM":
        return
    offset = int.from_bytes(data[10:14], "little")
    width = int.from_bytes(data[18:22], "little", signed=True)
    height = int.from_bytes(data[22:26], "little", signed=True)
    bits = int.from_bytes(data[28:30], "little")
    compression = int.from_bytes(data[30:34], "little")
    if bits != 8 or compression != 0 or width < 8 or height < 8:
        return
    new_w, new_h = width - rng.randint(1, 3), abs(height) - rng.randint(0, 2)
    stride, new_stride = (width + 3) & ~3, (new_w + 3) & ~3
    rows = [data[offset + r * stride: offset + r * stride + width] for r in range(abs(height))]
    # bottom-up rows (positive height): the first rows in the file are the image's last
    kept = rows[abs(height) - new_h:] if height > 0 else rows[:new_h]
    pixels = b"".join(r[:new_w] + bytes(new_stride - new_w) for r in kept)
    header = bytearray(data[:offset])
    header[18:22] = new_w.to_bytes(4, "little", signed=True)
    header[22:26] = (new_h if height > 0 else -new_h).to_bytes(4, "little", signed=True)
    header[34:38] = len(pixels).to_bytes(4, "little")
    header[2:6] = (offset + len(pixels)).to_bytes(4, "little")
    path.write_bytes(bytes(header) + pixels)


def change_qc(path: Path, command: str) -> None:
    """Puts `command` on the line after `$modelname`."""
    text = path.read_text(encoding="latin-1")
    text = re.sub(r"(\$modelname[^\n]*\n)", lambda m: m.group(1) + command + "\n", text, count=1,
                  flags=re.I)
    path.write_text(text, encoding="latin-1")


def run_variant(valve: Path, mdlc: Path, corpus: Path, work: Path, variant: str) -> dict:
    tree = work / variant
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(corpus / "modelsrc", tree, ignore=shutil.ignore_patterns("*.mdl"))
    rng = random.Random(int(os.environ.get("MDLC_DIFF_SEED", "7")))
    counts = {"identical": 0, "different": 0, "both refuse": 0, "one refuses": 0}
    # the tree's files change once, before any QC is built (several QCs share their files)
    moved: dict = {}
    for path in sorted(tree.rglob("*")):
        suffix = path.suffix.lower()
        if variant in JITTERS and suffix == ".smd":
            change_smd(path, variant, rng, moved)
        elif variant == "textures" and suffix == ".bmp":
            crop_bmp(path, rng)
    for qc in valve_qcs(corpus):
        copy = tree / qc.relative_to(corpus / "modelsrc")
        folder = copy.parent
        if variant in COMMANDS:
            change_qc(copy, COMMANDS[variant])
        elif variant == "fps":
            text = copy.read_text(encoding="latin-1")
            text = re.sub(r"(\bfps\s+)(\d+)(?![\d.])", r"\g<1>\g<2>.37", text, flags=re.I)
            copy.write_text(text, encoding="latin-1")
        before = set(folder.glob("*.mdl"))
        v = subprocess.run([str(valve), copy.name], cwd=folder, capture_output=True)
        valve_ok = b"ERROR" not in v.stdout + v.stderr
        valve_out = sorted(set(folder.glob("*.mdl")) - before)
        out = work / (variant + "-mdlc") / copy.stem
        m = subprocess.run(
            [str(mdlc), "build", "--force", "--no-record", copy.name, "-o", str(out)],
            cwd=folder,
            capture_output=True,
        )
        mdlc_ok = m.returncode == 0
        if not valve_ok and not mdlc_ok:
            counts["both refuse"] += 1
            continue
        if valve_ok != mdlc_ok or not valve_out:
            counts["one refuses"] += 1
            print(f"{variant}: {copy.name}: Valve's tool {'builds' if valve_ok else 'refuses'}, "
                  f"mdlc {'builds' if mdlc_ok else 'refuses'}")
            continue
        same = True
        for made in valve_out:
            ours = [p for p in out.rglob("*.mdl") if p.name.lower() == made.name.lower()]
            if not ours or not filecmp.cmp(made, ours[0], shallow=False):
                same = False
                a = made.read_bytes()
                b = ours[0].read_bytes() if ours else b""
                first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
                print(f"{variant}: {copy.name}: {made.name} differs "
                      f"({len(a)} against {len(b)} bytes, first at {first})")
        counts["identical" if same else "different"] += 1
    return counts


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    valve, mdlc = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    variants = sys.argv[3:] or VARIANTS
    corpus = corpus_dir()
    if not (corpus / "expected").is_dir():
        print(f"no corpus at {corpus}")
        return 2
    work = Path(os.environ.get("MDLC_DIFF_DIR", "/tmp/mdlc-differential"))
    bad = 0
    for variant in variants:
        if variant not in VARIANTS:
            print(f"unknown variant {variant}; known: {' '.join(VARIANTS)}")
            return 2
        counts = run_variant(valve, mdlc, corpus, work, variant)
        bad += counts["different"] + counts["one refuses"]
        print(variant, counts)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
