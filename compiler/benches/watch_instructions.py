#!/usr/bin/env python3
"""Instructions the watching process executes over the watch bench's edits, counted by valgrind's callgrind:
what a timed `ab_watch.py` run cannot see on this shared machine in an hour whose p50 moves by 10 ms.

    python3 compiler/benches/watch_instructions.py CORPUS BINARY [BINARY...]

For each binary: `cargo bench -p knowledge --bench watch -- CORPUS` (the same 20 edits of seven kinds)
with `KNOWLEDGE_BENCH_BINARY` naming a wrapper that runs the `build --watch` process under
`valgrind --tool=callgrind` (every other invocation runs the binary itself); once the bench is done the
watching process is stopped with SIGINT and callgrind writes its profile. Prints each binary's total and
the inclusive instructions of the stages docs/performance.md names (the plan, the pages written and
compared, the declared kinds, the commit, FTS5's flushes and merges). The bench's timings under valgrind
mean nothing. The profiles stay in a temporary folder (`callgrind_annotate --inclusive=yes FILE`). Needs
valgrind (`apt-get install valgrind`).
"""

import os
import re
import stat
import subprocess
import sys
import tempfile
import time
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

WRAPPER = """#!/bin/sh
for argument in "$@"; do
  if [ "$argument" = "--watch" ]; then
    valgrind --tool=callgrind --callgrind-out-file="{profile}" "{binary}" "$@" 2>/dev/null &
    wait $!
    exit
  fi
done
exec "{binary}" "$@"
"""


def profile(corpus, binary, folder):
    """Runs the watch bench on `binary` under callgrind; returns the profile's path."""
    name = Path(binary).name
    out = folder / f"{name}.callgrind"
    wrapper = folder / f"{name}.sh"
    wrapper.write_text(WRAPPER.format(profile=out, binary=os.path.abspath(binary)))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, KNOWLEDGE_BENCH_BINARY=str(wrapper))
    command = ["cargo", "bench", "-q", "-p", "knowledge", "--bench", "watch", "--", corpus]
    subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    # The bench kills the process it started, the wrapper, which leaves valgrind running (killed, it would
    # write no profile): SIGINT ends the watch, and callgrind writes the profile as it exits.
    subprocess.run(["pkill", "-INT", "-f", f"callgrind-out-file={out}"], check=False)
    for _ in range(120):
        if out.exists() and subprocess.run(["pgrep", "-f", f"callgrind-out-file={out}"],
                                           capture_output=True).returncode != 0:
            return out
        time.sleep(0.5)
    sys.exit(f"callgrind wrote no profile for {binary} at {out}")


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
