#!/usr/bin/env python3
"""Scale test on the SQLite index: a project of about N chunks made from the shared corpora, with 384-dim
vectors from the `fake` provider. Reports the cold build, rows/s, the database size, a one-file edit, and
search latency p50/p95 per mode (whole processes).

    python3 compiler/benches/scale.py BINARY CORPORA_DIR [COPIES] [QUERIES]

Every corpus is copied COPIES times (default 1) into one project, each copy under its own folder; a copy
after the first has every paragraph tagged with its copy number, so its chunks are new texts rather than
duplicates the index stores once. The build runs without the wiki (a 100,000-chunk wiki measures the
wiki, not the store). With SCALE_KEEP=1 the project is kept (its folder printed) for more measurements.
"""

import glob
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

WORDS = ["build", "memory", "ownership", "network", "error handling", "proposal", "install", "parser",
         "lifetime", "token", "archive", "compress", "thread", "vector search", "permission", "directory"]


def copy_corpora(corpora, root, copies, first=0):
    for corpus in sorted(os.listdir(corpora)):
        source = os.path.join(corpora, corpus)
        if not os.path.isdir(source):
            continue
        for copy in range(first, first + copies):
            for path in glob.glob(os.path.join(source, "**/*.md"), recursive=True):
                target = os.path.join(root, "corpus", f"{corpus}-{copy}", os.path.relpath(path, source))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if copy == 0:
                    shutil.copy(path, target)
                    continue
                with open(path, encoding="utf-8", errors="replace") as file:
                    text = file.read()
                # A tag on every paragraph: new chunk texts, the same shape.
                text = re.sub(r"\n\n(?=[A-Za-z])", f"\n\nCopy {copy}: ", text)
                with open(target, "w", encoding="utf-8") as file:
                    file.write(text)


def run(binary, root, *args):
    start = time.perf_counter()
    result = subprocess.run([binary, "-C", root, *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {result.stderr}")
    return (time.perf_counter() - start) * 1000, result.stdout


def main():
    binary, corpora = sys.argv[1], sys.argv[2]
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    queries = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    root = tempfile.mkdtemp(prefix="knowledge-scale-")
    copy_corpora(corpora, root, copies)
    with open(os.path.join(root, "kc.toml"), "w") as config:
        config.write('version = 1\n[sources]\ninclude = ["corpus/**/*.md"]\n'
                     '[wiki]\nenabled = false\n[embeddings]\nprovider = "fake"\ndimensions = 384\n')
    cold, _ = run(binary, root, "build")
    index = os.path.join(root, ".hasna", "knowledge", "knowledge.db")
    conn = sqlite3.connect(index)
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    sources = conn.execute("SELECT count(*) FROM sources").fetchone()[0]
    conn.close()
    size = os.path.getsize(index)
    noop, _ = run(binary, root, "build")
    files = sorted(glob.glob(os.path.join(root, "corpus", "**", "*.md"), recursive=True))
    edited = files[len(files) // 2]
    with open(edited, "a") as file:
        file.write("\nAn appended line for the scale benchmark.\n")
    time.sleep(0.03)
    edit, _ = run(binary, root, "build")
    print(f"{sources} sources, {chunks} chunks, index {size / 1e6:.0f} MB")
    print(f"cold build {cold / 1000:.1f} s ({chunks / (cold / 1000):,.0f} chunks/s), no-op {noop:.0f} ms, "
          f"one-file edit {edit:.0f} ms")
    for mode in ["keyword", "semantic", "hybrid"]:
        samples = []
        for n in range(queries):
            query = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 7 + 3) % len(WORDS)]}"
            ms, _ = run(binary, root, "search", query, "--mode", mode, "--json")
            samples.append(ms)
        samples.sort()
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        print(f"search {mode}: p50 {statistics.median(samples):.1f} ms, p95 {p95:.1f} ms (process, {queries} queries)")
    if os.environ.get("SCALE_KEEP"):
        print(f"kept: {root}")
    else:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
