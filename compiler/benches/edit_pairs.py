#!/usr/bin/env python3
"""Edits of one file, paired: two binaries' builds of the same edits, whole processes.

    N=30 python3 compiler/benches/edit_pairs.py PROJECT FILE OLD_BINARY NEW_BINARY

PROJECT is a folder with a `kc.toml` (it is copied twice and never written); FILE a path in it. Each of N
iterations appends a line of one new word to FILE in both copies (so no term's count, and so no plan input,
changes), builds each copy with its binary (the order alternating), then runs a no-op build of each. Prints
each binary's median edit and no-op (wall and CPU) and their ratio, then the paired differences (new − old):
where `ab_build.py` edits a different file each round, this repeats one edit, so a change to what each page
quoting FILE costs shows in every pair.
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
    """One build: (wall ms, CPU ms)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([binary, "-C", root, "build"], capture_output=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    project, edited, old, new = sys.argv[1:5]
    rounds = int(os.environ.get("N", "30"))
    binaries = [old, new]
    work = tempfile.mkdtemp(prefix="knowledge-edit-pairs-")
    copies = {}
    for index, binary in enumerate(binaries):
        copy = os.path.join(work, str(index))
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns(".hasna"))
        copies[binary] = copy
        build(binary, copy)
        build(binary, copy)
    edits = {binary: [] for binary in binaries}
    noops = {binary: [] for binary in binaries}
    for n in range(rounds):
        order = binaries if n % 2 == 0 else binaries[::-1]
        for binary in order:
            with open(os.path.join(copies[binary], edited), "a") as file:
                file.write(f"\nZqy{n}.\n")
        time.sleep(0.03)  # past the racy-stat window, as a later edit would be
        for binary in order:
            edits[binary].append(build(binary, copies[binary]))
        for binary in order:
            noops[binary].append(build(binary, copies[binary]))
    median = statistics.median
    for binary in binaries:
        edit_wall, noop_wall = median(e[0] for e in edits[binary]), median(n[0] for n in noops[binary])
        print(
            f"{os.path.basename(binary)}: edit {edit_wall:.1f} ms (CPU {median(e[1] for e in edits[binary]):.1f}), "
            f"no-op {noop_wall:.1f} ms (CPU {median(n[1] for n in noops[binary]):.1f}), "
            f"edit / no-op {edit_wall / noop_wall:.2f}x"
        )
    for kind, samples in (("edit", edits), ("no-op", noops)):
        walls = [b[0] - a[0] for a, b in zip(samples[old], samples[new])]
        cpus = [b[1] - a[1] for a, b in zip(samples[old], samples[new])]
        print(
            f"paired {kind}, new - old: wall {median(walls):+.2f} ms ({sum(d < 0 for d in walls)} of {len(walls)} "
            f"lower), CPU {median(cpus):+.2f} ms ({sum(d < 0 for d in cpus)} of {len(cpus)} lower)"
        )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
