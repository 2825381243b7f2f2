#!/usr/bin/env python3
"""A/B of two `knowledge` binaries as whole processes on one corpus: no-op, one-file edit and cold builds.

    python3 compiler/benches/ab_build.py OLD_BINARY NEW_BINARY CORPUS_DIR [ROUNDS]

Each binary gets its own copy of CORPUS_DIR's Markdown files (the corpus is never written) and a
`kc.toml` that includes them. After two warm-up builds, each round runs a no-op build, appends a line
to one file (a different file each round, the same file for both binaries) and builds again; the two
binaries alternate which goes first. Then ROUNDS cold builds each (the output folder removed first),
alternating too. Prints medians and every sample, since this machine is shared and noisy.

`AB_EDIT=quoted` edits only files a generated page quotes (the issue's "a line appended to a file a page
quotes"), read from the first binary's index after the warm-up builds; by default any Markdown file is edited,
including ones no page quotes, whose first line of body text can change what the planner reads.

`AB_EXTRA_CONFIG` is appended to both `kc.toml` files, for example `$'[lint]\non_build = true\n'`.
"""

import glob
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def copy_corpus(corpus, root):
    for path in glob.glob(os.path.join(corpus, "**/*.md"), recursive=True):
        target = os.path.join(root, "corpus", os.path.relpath(path, corpus))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(path, target)
    with open(os.path.join(root, "kc.toml"), "w") as config:
        config.write('version = 1\n[sources]\ninclude = ["corpus/**/*.md"]\n')
        config.write(os.environ.get("AB_EXTRA_CONFIG", ""))


def build(binary, root):
    start = time.perf_counter()
    result = subprocess.run([binary, "-C", root, "build"], capture_output=True)
    if result.returncode != 0:
        sys.exit(f"{binary} failed: {result.stderr.decode()}")
    return (time.perf_counter() - start) * 1000


def main():
    old, new, corpus = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 6
    work = tempfile.mkdtemp(prefix="knowledge-ab-")
    binaries = {"old": old, "new": new}
    roots = {tag: os.path.join(work, tag) for tag in binaries}
    for root in roots.values():
        copy_corpus(corpus, root)
    for tag, binary in binaries.items():
        build(binary, roots[tag])
        build(binary, roots[tag])
    files = sorted(glob.glob("corpus/**/*.md", root_dir=roots["old"], recursive=True))
    if os.environ.get("AB_EDIT") == "quoted":
        index = os.path.join(roots["old"], ".hasna", "knowledge", "knowledge.db")
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
            files = sorted(path for (path,) in conn.execute("SELECT DISTINCT path FROM citations"))
    step = max(1, len(files) // rounds)
    times = {tag: {"no-op": [], "edit": [], "cold": []} for tag in binaries}
    for n in range(rounds):
        edited = files[(n * step + step // 2) % len(files)]
        for tag in ("old", "new") if n % 2 == 0 else ("new", "old"):
            times[tag]["no-op"].append(build(binaries[tag], roots[tag]))
            with open(os.path.join(roots[tag], edited), "a") as file:
                file.write("\nAn appended line for the benchmark.\n")
            time.sleep(0.03)  # past the racy-stat window, as a later edit would be
            times[tag]["edit"].append(build(binaries[tag], roots[tag]))
    for n in range(rounds):
        for tag in ("old", "new") if n % 2 == 0 else ("new", "old"):
            shutil.rmtree(os.path.join(roots[tag], ".hasna"), ignore_errors=True)
            times[tag]["cold"].append(build(binaries[tag], roots[tag]))
    for tag in binaries:
        medians = {kind: statistics.median(samples) for kind, samples in times[tag].items()}
        print(
            f"{tag}: no-op {medians['no-op']:.1f} ms, edit {medians['edit']:.1f} ms "
            f"({medians['edit'] / medians['no-op']:.2f}x), cold {medians['cold']:.0f} ms; "
            + "; ".join(f"{kind} {[round(s, 1) for s in samples]}" for kind, samples in times[tag].items())
        )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
