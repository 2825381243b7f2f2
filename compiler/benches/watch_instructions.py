#!/usr/bin/env python3
"""Instructions the watching process executes over the watch bench's edits, counted by valgrind's callgrind:
what a timed `ab_watch.py` run cannot see on this shared machine in an hour whose p50 moves by 10 ms.

    python3 compiler/benches/watch_instructions.py CORPUS BINARY [BINARY...]

For each binary: `cargo bench -p knowledge --bench watch -- CORPUS` (the same 20 edits of seven kinds)
with the `build --watch` process under `valgrind --tool=callgrind` (`KNOWLEDGE_BENCH_WATCH_PREFIX`), which
the bench stops with SIGTERM once its edits are done, before it removes the project (a watch left running
would build again as the project is removed, and count it). Prints each binary's total and
the inclusive instructions of the stages docs/performance.md names (the plan, the pages written and
compared, the declared kinds, the commit, FTS5's flushes and merges). The bench's timings under valgrind
mean nothing. The profiles stay in a temporary folder (`callgrind_annotate --inclusive=yes FILE`). Needs
valgrind (`apt-get install valgrind`).
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Each stage by the functions that may hold it, the first one the profile names (inlining differs from one
# build to the next: a page's store is its own function in one binary and inside the driver's in another).
STAGES = [
    ("the plan", ["knowledge_queries::wiki::graph::planned_pages"]),
    (
        "pages compared (the plan within)",
        ["<knowledge::wiki::Pages as knowledge::wiki::driver::ArtifactKindDriver>::compare"],
    ),
    (
        # Only the calling thread's share: the summaries, renders and chunks it hands to rayon's workers are
        # counted under those threads (`render_page`, `chunks`, `lead_summary` inclusive hold them all).
        "pages readied (this thread)",
        ["<knowledge::wiki::Pages as knowledge::wiki::driver::ArtifactKindDriver>::ready"],
    ),
    ("pages rendered (every thread)", ["knowledge_queries::wiki::render::render_page"]),
    (
        "pages written",
        [
            "<knowledge::wiki::Pages as knowledge::wiki::driver::ArtifactKindDriver>::store",
            "knowledge::wiki::store_changed_page",
        ],
    ),
    (
        "declared kinds written",
        ["<knowledge::wiki::declared::Declared as knowledge::wiki::driver::ArtifactKindDriver>::store"],
    ),
    ("the commit (held keyword writes within)", ["knowledge::store::BuildTransaction::commit"]),
    ("FTS5 flushes", ["fts5IndexFlush"]),
    ("FTS5 merges", ["fts5IndexMerge"]),
]

def profile(corpus, binary, folder):
    """Runs the watch bench on `binary` under callgrind; returns the profile's path."""
    out = folder / f"{Path(binary).name}.callgrind"
    env = dict(
        os.environ,
        KNOWLEDGE_BENCH_BINARY=os.path.abspath(binary),
        KNOWLEDGE_BENCH_WATCH_PREFIX=f"valgrind --tool=callgrind --callgrind-out-file={out}",
    )
    command = ["cargo", "bench", "-q", "-p", "knowledge", "--bench", "watch", "--", corpus]
    subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    if not out.exists():
        sys.exit(f"callgrind wrote no profile for {binary} at {out}")
    return out


def inclusive(profile_path):
    """{function: inclusive instructions}, and the program's total."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(profile_path)],
                          capture_output=True, text=True, check=True).stdout
    counts = {}
    total = 0
    for line in text.splitlines():
        match = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not match:
            continue
        count = int(match[1].replace(",", ""))
        where = match[2]
        if where.startswith("PROGRAM TOTALS"):
            total = count
            continue
        function = where.split(":", 1)[1] if ":" in where else where
        function = function.rsplit(" [", 1)[0]
        counts[function] = max(counts.get(function, 0), count)
    return counts, total


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    corpus, binaries = sys.argv[1], sys.argv[2:]
    folder = Path(tempfile.mkdtemp(prefix="knowledge-watch-instructions-"))
    print(f"corpus {corpus}, the watch bench's edits; profiles under {folder}\n")
    print("| binary | total | " + " | ".join(label for label, _ in STAGES) + " |")
    print("|---" * (len(STAGES) + 2) + "|")
    for binary in binaries:
        counts, total = inclusive(profile(corpus, binary, folder))
        found = [next((counts[name] for name in names if name in counts), 0) for _, names in STAGES]
        cells = [f"{count / 1e6:,.1f} M" for count in found]
        print(f"| {Path(binary).name} | {total / 1e6:,.1f} M | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
