#!/usr/bin/env python3
"""A/B of two `knowledge` binaries under `build --watch`: the watch bench's p50 and CPU per edit, paired.

    python3 compiler/benches/ab_watch.py OLD_BINARY NEW_BINARY [PAIRS] [CORPUS...]

Runs `cargo bench -p knowledge --bench watch -- CORPUS...` (default rust-rfcs and dendron-vault) PAIRS times
(default 3) for each binary through `KNOWLEDGE_BENCH_BINARY`, the two alternating and taking turns to go
first, so that the machine's drift falls on both. Each run makes the same 20 edits of seven kinds. Prints
every run's write-to-index p50 and the watching process's CPU per edit, then per corpus the median of the
pairs' differences (new − old): on this shared machine a single run's p50 moves by 10 ms between runs of one
binary, the CPU per edit by about 5 ms, and only paired differences over several pairs say which is faster.
"""

import os
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^\| (?P<corpus>[\w-]+) \| \d+ \| \d+ \| (?P<p50>[\d.]+) ms \|.*\| (?P<cpu>[\d.]+ ms|n/a) \| [a-z, ]+ \|$")


def run(binary, corpora):
    """One run of the watch bench on `binary`: {corpus: (p50 ms, CPU ms per edit)}."""
    env = dict(os.environ, KNOWLEDGE_BENCH_BINARY=binary)
    command = ["cargo", "bench", "-q", "-p", "knowledge", "--bench", "watch", "--", *corpora]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        match = ROW.match(line.strip())
        if match:
            if match["cpu"] == "n/a":
                sys.exit("the watch bench reads its CPU from /proc: run it on Linux")
            rows[match["corpus"]] = (float(match["p50"]), float(match["cpu"].removesuffix(" ms")))
    missing = set(corpora) - set(rows)
    if missing:
        sys.exit(f"the watch bench printed no row for {sorted(missing)}:\n{out}")
    return rows


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    corpora = sys.argv[4:] or ["rust-rfcs", "dendron-vault"]
    results = {"old": [], "new": []}
    for pair in range(pairs):
        order = [("old", old), ("new", new)] if pair % 2 == 0 else [("new", new), ("old", old)]
        for name, binary in order:
            rows = run(binary, corpora)
            results[name].append(rows)
            shown = ", ".join(f"{corpus} p50 {p50:.1f} ms, CPU {cpu:.1f} ms" for corpus, (p50, cpu) in rows.items())
            print(f"pair {pair + 1} {name}: {shown}", flush=True)
    for corpus in corpora:
        p50 = [n[corpus][0] - o[corpus][0] for o, n in zip(results["old"], results["new"])]
        cpu = [n[corpus][1] - o[corpus][1] for o, n in zip(results["old"], results["new"])]
        print(
            f"{corpus}: paired new − old, median of {pairs}: p50 {statistics.median(p50):+.1f} ms "
            f"({', '.join(f'{d:+.1f}' for d in p50)}), CPU per edit {statistics.median(cpu):+.1f} ms "
            f"({', '.join(f'{d:+.1f}' for d in cpu)})"
        )


if __name__ == "__main__":
    main()
