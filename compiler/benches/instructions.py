#!/usr/bin/env python3
"""Instructions a build executes, counted by valgrind's callgrind: a measure this shared, noisy machine does
not move, so two binaries' cold builds, no-ops and one-file edits compare to a tenth of a percent where their
timings spread ±20 %.

    python3 compiler/benches/instructions.py CORPUS_DIR FILE BINARY [BINARY...]

For each binary: a fresh copy of CORPUS_DIR's Markdown files (the corpus is never written) with a `kc.toml`
that includes them, a cold build, a no-op, then two edits of FILE (a path relative to CORPUS_DIR, a line
appended each time; `INSTRUCTIONS_APPEND` gives its text instead, `{round}` standing for 1 and 2: a link to another
file, say, makes each edit plan every page again), each build a whole process under `valgrind --tool=callgrind`. Prints each build's
instructions (every thread, user space only: the kernel's share of I/O and the disk's waits are not counted,
so read a cold build's count beside a timed A/B, `ab_build.py`). The profiles stay in the copy's folder
(`callgrind_annotate --inclusive=yes FILE.cg` names where the instructions went). A binary is named by its
path; needs valgrind (`apt-get install valgrind`).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def copy_corpus(source: Path, target: Path):
    for path in source.rglob("*.md"):
        destination = target / "corpus" / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    (target / "kc.toml").write_text('version = 1\n[sources]\ninclude = ["corpus/**/*.md"]\n')


def instructions(binary: str, project: Path, name: str) -> int:
    profile = project / f"{name}.cg"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", "-q", binary, "-C", str(project), "build"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for line in profile.read_text(errors="replace").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise SystemExit(f"{profile}: no summary line")


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    corpus, edited, binaries = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    work = Path(tempfile.mkdtemp(prefix="knowledge-instructions-"))
    print(f"corpus {corpus.name}, edits of {edited}; profiles under {work}")
    print("| binary | cold | no-op | edit 1 | edit 2 |")
    print("|---|---|---|---|---|")
    for index, binary in enumerate(binaries):
        project = work / str(index)
        copy_corpus(corpus, project)
        counts = [instructions(binary, project, "cold"), instructions(binary, project, "noop")]
        for round in (1, 2):
            with open(project / "corpus" / edited, "a") as file:
                text = os.environ.get("INSTRUCTIONS_APPEND", "A line appended in round {round}.")
                file.write("\n" + text.replace("{round}", str(round)) + "\n")
            counts.append(instructions(binary, project, f"edit{round}"))
        print(f"| {os.path.basename(binary)} | " + " | ".join(f"{count / 1e6:,.1f} M" for count in counts) + " |")


if __name__ == "__main__":
    main()
