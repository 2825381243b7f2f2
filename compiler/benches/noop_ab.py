#!/usr/bin/env python3
"""A/B of two `knowledge` binaries' no-op builds as whole processes: wall time and CPU time.

    python3 compiler/benches/noop_ab.py OLD_BINARY NEW_BINARY ROUNDS PROJECT...

Each PROJECT is a folder with a `kc.toml` and a `corpus/` (as `ab_build.py` makes them). It is copied twice,
and the binaries trade the copies every four rounds, as in `ab_build.py` (one copy of a project can be
steadily slower than another), with two warm-up builds after each trade (a binary's index is not the other's:
the pipeline fingerprint differs). Each round runs a no-op build of each binary, alternating which goes
first. Prints the medians of wall and CPU (user + system) time. CPU time is steadier than wall time on a
shared machine.
"""

import os
import shutil
import statistics
import sys
import tempfile

from ab_build import build, roots_of_round


def main():
    old, new, rounds, projects = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    work = tempfile.mkdtemp(prefix="knowledge-noop-ab-")
    for project in projects:
        copies = [os.path.join(work, name) for name in ("a", "b")]
        for root in copies:
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(os.path.join(project, "corpus"), os.path.join(root, "corpus"), symlinks=True)
            shutil.copy(os.path.join(project, "kc.toml"), os.path.join(root, "kc.toml"))
        binaries = {"old": old, "new": new}
        samples = {"old": [], "new": []}
        for n in range(rounds):
            roots = roots_of_round(n, copies, binaries)
            for tag in ("old", "new") if n % 2 == 0 else ("new", "old"):
                samples[tag].append(build(binaries[tag], roots[tag]))
        line = []
        for tag in ("old", "new"):
            wall = statistics.median(s[0] for s in samples[tag])
            cpu = statistics.median(s[1] for s in samples[tag])
            line.append(f"{tag} wall {wall:.1f} ms, cpu {cpu:.1f} ms")
        print(f"{project}: " + "; ".join(line))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
