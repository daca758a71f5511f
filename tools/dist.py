#!/usr/bin/env python3
"""Builds the Linux binary to ship: `target/<host>/dist/mdlc` (`x86_64-unknown-linux-gnu` on a PC).

    python3 tools/dist.py [--corpus ../shared/corpus] [--no-order]

The binary is the `dist` profile (fat LTO, one codegen unit), linked fully static and not
position-independent (no dynamic loader, no relocations to apply at start-up), with its functions
laid out in the order a set of training builds first runs them. A run maps the pages of the binary
it touches, and the kernel maps the cached pages around each one it faults in (64 KiB by default),
so code scattered over the 4.4 MB binary costs memory and page faults at every start: for a small
model, most of what a process costs (issue 17). Laid out, the code the smallest models run lies
together at the front.

Steps:
1. build with symbols (`cargo build --profile dist`, static, non-PIE);
2. run that binary under valgrind's callgrind on the training builds (the bundled example for
   both engines, and with `--corpus` the Half-Life corpus's QCs that Valve's tool built and every
   other QC of the corpus), which lists the functions each build runs;
3. write the order: builds from the fewest instructions to the most, each one's functions not yet
   placed in the order it first ran them (so the smallest builds' code comes first), every name of
   a function at the same address together;
4. link again with that order (`--symbol-ordering-file`, lld's, the linker Rust uses on
   x86_64 Linux) and without symbols;
5. check: every training build gives byte-identical files with the laid-out binary and the first.

Needs valgrind and binutils (`nm`, `readelf`); without them (or with `--no-order`, or a linker
other than lld) it stops after a static, non-PIE build without the layout, and says so. The layout changes where code lies, never
what it does: step 5 checks that on every training build.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUSTFLAGS = "-C target-feature=+crt-static -C relocation-model=static"


def host_triple():
    """The target rustc builds for by default (`host:` of `rustc -vV`)."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("host:"):
            return line.split(":", 1)[1].strip()
    return ""


def cargo(args, strip):
    env = dict(os.environ, RUSTFLAGS=RUSTFLAGS, CARGO_PROFILE_DIST_STRIP="true" if strip else "false")
    subprocess.run(["cargo"] + args, cwd=ROOT, env=env, check=True)


def training_builds(corpus):
    """(folder, arguments) of each training build: mdlc is run from the folder."""
    example = os.path.join(ROOT, "testdata", "models", "creature")
    runs = [
        (example, ["build", "model.toml"]),
        (example, ["build", "model.toml", "--target", "goldsrc"]),
        (example, ["check", "model.toml"]),
    ]
    if corpus:
        hl1 = os.path.join(corpus, "goldsrc-hl1")
        # the models Valve's tool built: expected/<folder>/<qc name>.mdl
        expected = {
            n[:-4].lower()
            for _, _, names in os.walk(os.path.join(hl1, "expected"))
            for n in names
            if n.lower().endswith(".mdl")
        }
        qcs = []
        for d, _, files in os.walk(corpus):
            for f in files:
                if not f.lower().endswith(".qc"):
                    continue
                name = f[:-3]
                in_hl1 = os.path.commonpath([hl1, d]) == hl1
                # the Half-Life models Valve's tool built (their expected/ folder), and every
                # QC outside that corpus
                if (in_hl1 and name.lower() in expected) or not in_hl1:
                    qcs.append((d, f))
        for d, f in sorted(qcs):
            runs.append((d, ["build", f]))
    return runs


def run_build(binary, folder, args, out, wrap=()):
    # (a build writes its up-to-date record as build scripts run it: that code is laid out too)
    extra = ["--force", "-o", out] if args[0] == "build" else []
    cmd = list(wrap) + [binary] + args + extra
    return subprocess.run(cmd, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def callgrind_functions(path, binary_name):
    """The instruction count of a callgrind profile and the functions of `binary_name` it ran,
    in the order the profile first names them.

    The format (valgrind's "Callgrind Format Specification"): `ob=`/`fn=` name the object and
    function of the costs that follow, `cob=`/`cfn=` those of the function the next `calls=` line
    calls (the caller's object when `cob=` is not given); a name is written once as `(id) name`
    and then as `(id)`, objects and functions each with ids of their own."""
    total, order, seen = 0, [], set()
    tables = {"ob": {}, "fn": {}}
    ob = cob = None
    for line in open(path, errors="replace"):
        if line.startswith(("totals:", "summary:")):
            total = int(line.split()[1])
            continue
        if line.startswith("calls="):
            cob = None
            continue
        m = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        called, kind, i, written = m.groups()
        if written:
            tables[kind][i] = written
        name = tables[kind].get(i)
        if kind == "ob":
            if called:
                cob = name
            else:
                ob = name
            continue
        owner = (cob or ob) if called else ob
        if name and owner and os.path.basename(owner) == binary_name and name not in seen:
            seen.add(name)
            order.append(name)
    return total, order


def symbol_order(binary, profiles):
    ranked = sorted(callgrind_functions(p, os.path.basename(binary)) for p in profiles)
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    at, names_at = {}, collections.defaultdict(list)
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwWiI":
            at[parts[2]] = parts[0]
            names_at[parts[0]].append(parts[2])
    out, placed = [], set()
    for _, functions in ranked:
        for name in functions:
            addr = at.get(name)
            if addr is not None and addr not in placed:
                placed.add(addr)
                out.extend(names_at[addr])
    return out, len(placed)


def outputs(folder):
    """The files a build wrote under `folder`, but for its record (`.mdlc/`, which holds times)."""
    files = {}
    for d, dirs, names in os.walk(folder):
        dirs[:] = [x for x in dirs if x != ".mdlc"]
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, folder)] = f.read()
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_corpus = os.path.join(os.path.dirname(ROOT), "shared", "corpus")
    ap.add_argument("--corpus", default=default_corpus if os.path.isdir(default_corpus) else None,
                    help="model sources to train on besides the bundled example (default: ../shared/corpus when present)")
    ap.add_argument("--no-order", action="store_true", help="a static, non-PIE build without the layout")
    a = ap.parse_args()

    # the machine's own target, named explicitly so that the static flags stay off build scripts
    # and proc-macros; a static glibc binary is a Linux (GNU) thing
    host = host_triple()
    if not host.endswith("-linux-gnu"):
        print(f"tools/dist.py builds Linux (GNU) binaries; this machine is {host or 'unknown'}: use `cargo build --profile dist`", file=sys.stderr)
        return 1
    profile = ["--profile", "dist", "--target", host]
    build = ["build"] + profile
    binary = os.path.join(ROOT, "target", host, "dist", "mdlc")
    missing = [t for t in ("valgrind", "nm", "readelf") if not shutil.which(t)]
    if a.no_order or missing:
        cargo(build, strip=True)
        why = "--no-order" if a.no_order else f"{', '.join(missing)} not installed"
        print(f"{binary}: static, not laid out ({why})")
        return 0
    cargo(build, strip=False)
    comment = subprocess.run(["readelf", "-p", ".comment", binary], capture_output=True, text=True).stdout
    if "LLD" not in comment:
        cargo(build, strip=True)
        print(f"{binary}: static, not laid out (linked by a linker other than lld)")
        return 0

    runs = training_builds(a.corpus)
    with tempfile.TemporaryDirectory(prefix="mdlc-dist-") as tmp:
        trained = os.path.join(tmp, "trained")
        shutil.copy2(binary, trained)
        profiles = []
        for k, (folder, args) in enumerate(runs):
            prof = os.path.join(tmp, f"callgrind.{k}")
            wrap = ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={prof}"]
            run_build(trained, folder, args, os.path.join(tmp, "out"), wrap)
            if os.path.exists(prof):
                profiles.append(prof)
        order, placed = symbol_order(trained, profiles)
        order_file = os.path.join(tmp, "order.txt")
        with open(order_file, "w") as f:
            f.write("\n".join(order) + "\n")
        link = [f"--symbol-ordering-file={order_file}", "--no-warn-symbol-ordering"]
        # (the profile's `strip` stays as in step 1, or cargo would build every crate again)
        flags = [x for opt in link for x in ("-C", f"link-arg=-Wl,{opt}")] + ["-C", "strip=symbols"]
        cargo(["rustc"] + profile + ["--bin", "mdlc", "--"] + flags, strip=False)

        # the laid-out binary must write what the first one wrote, byte for byte (the first is run
        # again natively: its outputs under valgrind are not the reference)
        bad = []
        for k, (folder, args) in enumerate(runs):
            if args[0] != "build":
                continue
            got = []
            for tag, b in (("a", trained), ("b", binary)):
                out = os.path.join(tmp, f"check-{tag}-{k}")
                rc = run_build(b, folder, args, out)
                got.append((rc, outputs(out) if os.path.isdir(out) else {}))
            if got[0] != got[1]:
                bad.append(" ".join(args) + " in " + folder)
    if bad:
        os.remove(binary)
        print("the laid-out binary writes other files than the first build (removed):", *bad, sep="\n  ", file=sys.stderr)
        return 1
    print(f"{binary}: static, {placed} functions laid out from {len(profiles)} training builds; "
          f"all {sum(1 for _, r in runs if r[0] == 'build')} training builds write the same files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
