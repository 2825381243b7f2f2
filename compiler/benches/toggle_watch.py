#!/usr/bin/env python3
"""One re-planning edit, toggled, under two binaries' `build --watch`: the wall time from the write to the
build's line and the build's write stage, medians over every toggle.

    python3 compiler/benches/toggle_watch.py PROJECT FILE OLD_BINARY NEW_BINARY [TOGGLES]

PROJECT is a folder with a `kc.toml` (copied for each session, never written); FILE a Markdown path in it.
Each session builds a copy, starts `build --watch --json`, then TOGGLES times (default 16) appends a line of
two wikilinks to FILE or takes it away again, so every edit plans again and renders the same few pages.
Two sessions per binary, alternating which goes first. Where `ab_watch.py` mixes seven kinds of edit over
20 files, this repeats one, so a change of about a millisecond to what a re-planning edit costs shows.
"""

import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LINE = "\nSee [[Overview]] and [[Lookup]].\n"


def session(binary, project, file, toggles):
    """One watch of `binary` over a copy of `project`: [(wall ms, write-stage ms, pages rendered)]."""
    with tempfile.TemporaryDirectory(prefix="knowledge-toggle-") as work:
        root = os.path.join(work, "project")
        shutil.copytree(project, root, symlinks=True, ignore=shutil.ignore_patterns(".hasna"))
        subprocess.run([binary, "-C", root, "build"], capture_output=True, check=True)
        watch = subprocess.Popen([binary, "-C", root, "build", "--watch", "--json"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in watch.stdout], daemon=True).start()
        lines.get(timeout=60)
        time.sleep(0.5)
        while not lines.empty():
            lines.get()
        path = os.path.join(root, file)
        original = open(path, encoding="utf-8").read()
        rows = []
        for toggle in range(toggles):
            start = time.perf_counter()
            with open(path, "w", encoding="utf-8") as out:
                out.write(original + LINE if toggle % 2 == 0 else original)
            summary = json.loads(lines.get(timeout=60))
            rows.append(((time.perf_counter() - start) * 1000, summary["stages_ms"]["write"],
                         summary["pages"]["rendered"]))
            # The next edit starts on a quiet tree.
            time.sleep(0.3)
            while not lines.empty():
                lines.get()
        watch.terminate()
        watch.wait()
        return rows


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    project, file, old, new = sys.argv[1:5]
    toggles = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    results = {old: [], new: []}
    for turn in range(2):
        for binary in (old, new) if turn == 0 else (new, old):
            results[binary] += session(binary, project, file, toggles)
    for binary, rows in results.items():
        print(f"{binary}: wall p50 {statistics.median(r[0] for r in rows):.1f} ms, write stage p50 "
              f"{statistics.median(r[1] for r in rows):.1f} ms, pages rendered {sorted({r[2] for r in rows})}")


if __name__ == "__main__":
    main()
