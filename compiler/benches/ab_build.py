#!/usr/bin/env python3
"""A/B of two `knowledge` binaries as whole processes on one corpus: no-op, one-file edit and cold builds.

    python3 compiler/benches/ab_build.py OLD_BINARY NEW_BINARY CORPUS_DIR [ROUNDS]

Two copies of CORPUS_DIR's Markdown files (the corpus is never written), each with a `kc.toml` that includes
them. Each round runs a no-op build, appends a line to one file (a different file each round, the same file
for both binaries) and builds again; the two binaries alternate which goes first. The binaries trade copies
every four rounds (two warm-up builds after each trade): one copy of a project can be steadily slower than
another on this machine (an A/A run of one binary measured 1.4 ms more per no-op and 3–4 ms more per edit on
one of two copies), and trading cancels that. Then ROUNDS cold builds each (the output folder removed first),
alternating too. Prints medians of wall and CPU (user + system) time, the median of each round's edit over
its own no-op (which cancels the machine's drift between rounds), the median of each round's paired
difference (new − old), and every sample, since this machine is shared and noisy.

`AB_EDIT=quoted` edits only files a generated page quotes (the issue's "a line appended to a file a page
quotes"), read from the index of a first build of the old binary; by default any Markdown file is edited,
including ones no page quotes, whose first line of body text can change what the planner reads.

`AB_EDIT=title` puts a new first heading on the edited file instead: its title changes, which changes what
the planner reads, so the edit plans every page again.

`AB_EDIT=paragraph` appends a paragraph of prose taken from another file of the corpus (its middle one that
opens with a letter): what an author adds, whose new words and phrases may or may not change what the
planner reads.

`AB_EXTRA_CONFIG` is appended to both `kc.toml` files, for example `$'[lint]\non_build = true\n'`.
"""

import glob
import os
import resource
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
    """Wall and CPU milliseconds of one build."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([binary, "-C", root, "build"], capture_output=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{binary} failed: {result.stderr.decode()}")
    return wall, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


def roots_of_round(n, copies, binaries):
    """The copy each binary builds in round `n`: they trade copies every four rounds, each building its new
    copy twice first (once to re-derive the other binary's index, once to settle)."""
    traded = (n // 4) % 2
    roots = {"old": copies[traded], "new": copies[1 - traded]}
    if n % 4 == 0:
        for tag in binaries:
            build(binaries[tag], roots[tag])
            build(binaries[tag], roots[tag])
    return roots


def prose_paragraph(path):
    """The middle paragraph of `path` that opens with a letter (prose: not a heading, list, table or code)."""
    with open(path) as file:
        paragraphs = [p.strip() for p in file.read().split("\n\n")]
    prose = [p for p in paragraphs if p[:1].isalpha() and "```" not in p]
    return prose[len(prose) // 2] if prose else "An appended paragraph for the benchmark."


def main():
    old, new, corpus = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 6
    work = tempfile.mkdtemp(prefix="knowledge-ab-")
    binaries = {"old": old, "new": new}
    copies = [os.path.join(work, name) for name in ("a", "b")]
    for root in copies:
        copy_corpus(corpus, root)
    build(old, copies[0])
    files = sorted(glob.glob("corpus/**/*.md", root_dir=copies[0], recursive=True))
    if os.environ.get("AB_EDIT") == "quoted":
        index = os.path.join(copies[0], ".hasna", "knowledge", "knowledge.db")
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
            files = sorted(path for (path,) in conn.execute("SELECT DISTINCT path FROM citations"))
    step = max(1, len(files) // rounds)
    times = {tag: {"no-op": [], "edit": [], "cold": []} for tag in binaries}
    for n in range(rounds):
        roots = roots_of_round(n, copies, binaries)
        edited = files[(n * step + step // 2) % len(files)]
        for tag in ("old", "new") if n % 2 == 0 else ("new", "old"):
            times[tag]["no-op"].append(build(binaries[tag], roots[tag]))
            path = os.path.join(roots[tag], edited)
            if os.environ.get("AB_EDIT") == "title":
                with open(path) as file:
                    text = file.read()
                with open(path, "w") as file:
                    file.write(f"# A retitled document {n}\n\n{text}")
            elif os.environ.get("AB_EDIT") == "paragraph":
                donor = files[(n * step + step // 2 + len(files) // 2) % len(files)]
                with open(path, "a") as file:
                    file.write(f"\n{prose_paragraph(os.path.join(roots[tag], donor))}\n")
            else:
                with open(path, "a") as file:
                    file.write("\nAn appended line for the benchmark.\n")
            time.sleep(0.03)  # past the racy-stat window, as a later edit would be
            times[tag]["edit"].append(build(binaries[tag], roots[tag]))
    for n in range(rounds):
        roots = {"old": copies[n % 2], "new": copies[1 - n % 2]}
        for tag in ("old", "new") if n % 2 == 0 else ("new", "old"):
            shutil.rmtree(os.path.join(roots[tag], ".hasna"), ignore_errors=True)
            times[tag]["cold"].append(build(binaries[tag], roots[tag]))
    median = statistics.median
    for tag in binaries:
        wall = {kind: median(s[0] for s in samples) for kind, samples in times[tag].items()}
        cpu = {kind: median(s[1] for s in samples) for kind, samples in times[tag].items()}
        print(
            f"{tag}: no-op {wall['no-op']:.1f} ms (CPU {cpu['no-op']:.1f}), edit {wall['edit']:.1f} ms "
            f"(CPU {cpu['edit']:.1f}; {wall['edit'] / wall['no-op']:.2f}x), cold {wall['cold']:.0f} ms; "
            + "; ".join(f"{kind} {[round(s[0], 1) for s in samples]}" for kind, samples in times[tag].items())
        )
    for tag in binaries:
        ratios = [edit[0] / noop[0] for noop, edit in zip(times[tag]["no-op"], times[tag]["edit"])]
        print(f"{tag}: edit / no-op of the same round, median {median(ratios):.2f}x")
    for kind in ("no-op", "edit", "cold"):
        pairs = list(zip(times["old"][kind], times["new"][kind]))
        print(
            f"paired {kind}, new - old: wall {median(b[0] - a[0] for a, b in pairs):+.2f} ms, "
            f"CPU {median(b[1] - a[1] for a, b in pairs):+.2f} ms"
        )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
