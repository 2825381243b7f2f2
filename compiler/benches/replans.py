#!/usr/bin/env python3
"""How often an author's edit makes a new process plan the wiki again, per binary.

    python3 compiler/benches/replans.py CORPUS_DIR BINARY [BINARY...]

For each binary: a fresh copy of CORPUS_DIR's Markdown files with a `kc.toml` that includes them (the corpus is
never written), a cold build, then 30 edits, each appending to one file a paragraph of prose taken from another
(`ab_build.py`'s `AB_EDIT=paragraph`: the same files and paragraphs for every binary), each followed by
`build --json`. Prints how many of the 30 builds ran the planner (`planned_pages` among the queries executed)
and the builds' median wall and CPU time. Time a pair of binaries with `AB_EDIT=paragraph ab_build.py`.
"""

import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ab_build import copy_corpus, prose_paragraph

EDITS = 30


def edits(binary, corpus, work):
    root = os.path.join(work, os.path.basename(binary))
    copy_corpus(corpus, root)
    subprocess.run([binary, "-C", root, "build"], check=True, capture_output=True)
    files = sorted(glob.glob("corpus/**/*.md", root_dir=root, recursive=True))
    step = max(1, len(files) // EDITS)
    for n in range(EDITS):
        edited = files[(n * step + step // 2) % len(files)]
        donor = files[(n * step + step // 2 + len(files) // 2) % len(files)]
        with open(os.path.join(root, edited), "a") as file:
            file.write(f"\n{prose_paragraph(os.path.join(root, donor))}\n")
        time.sleep(0.03)  # past the racy-stat window, as a later edit would be
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        built = subprocess.run([binary, "-C", root, "build", "--json"], check=True, capture_output=True, text=True)
        wall = (time.perf_counter() - start) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
        planned = "planned_pages" in json.loads(built.stdout)["queries"]["by_query"]
        yield planned, wall, cpu


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    corpus, binaries = sys.argv[1], sys.argv[2:]
    work = tempfile.mkdtemp(prefix="knowledge-replans-")
    for binary in binaries:
        runs = list(edits(binary, corpus, work))
        print(
            f"{os.path.basename(binary)}: planned again in {sum(planned for planned, _, _ in runs)} of {len(runs)} "
            f"edits; median wall {statistics.median(w for _, w, _ in runs):.1f} ms, "
            f"CPU {statistics.median(c for _, _, c in runs):.1f} ms"
        )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
