#!/usr/bin/env python3
"""A/B of two `knowledge` binaries' no-op builds as whole processes: wall time and CPU time.

    python3 compiler/benches/noop_ab.py OLD_BINARY NEW_BINARY ROUNDS PROJECT...

Each PROJECT is a folder with a `kc.toml` and a `corpus/` (as `ab_build.py` makes them). Each binary gets its
own copy (a binary's index is not the other's: the pipeline fingerprint differs), built twice first; then
ROUNDS no-op builds each, alternating which goes first. Prints the medians of wall and CPU (user + system)
time. CPU time is steadier than wall time on a shared machine.
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def build(binary, root):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([binary, "-C", root, "build"], capture_output=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{binary} failed: {result.stderr.decode()}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu


def main():
    old, new, rounds, projects = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    work = tempfile.mkdtemp(prefix="knowledge-noop-ab-")
    for project in projects:
        roots = {}
        for tag, binary in (("old", old), ("new", new)):
            root = os.path.join(work, tag)
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(os.path.join(project, "corpus"), os.path.join(root, "corpus"), symlinks=True)
            shutil.copy(os.path.join(project, "kc.toml"), os.path.join(root, "kc.toml"))
            build(binary, root)
            build(binary, root)
            roots[tag] = (binary, root)
        samples = {"old": [], "new": []}
        for n in range(rounds):
            for tag in ("old", "new") if n % 2 == 0 else ("new", "old"):
                samples[tag].append(build(*roots[tag]))
        line = []
        for tag in ("old", "new"):
            wall = statistics.median(s[0] for s in samples[tag])
            cpu = statistics.median(s[1] for s in samples[tag])
            line.append(f"{tag} wall {wall:.1f} ms, cpu {cpu:.1f} ms")
        print(f"{project}: " + "; ".join(line))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
