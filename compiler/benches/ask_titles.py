#!/usr/bin/env python3
"""`knowledge ask` on questions made of a corpus's chapter titles ("what is linkage"), as a reader checks what
an answer shows: no judged set is needed to see an answer quoting a page's attribution line, a sentence said
twice, a sentence that only sends the reader elsewhere, one ending in a colon whose code or list is not shown, or
an answer that opens with a command line alone or with a sentence sending the reader elsewhere (tldr's pages).

    python3 compiler/benches/ask_titles.py CORPUS_DIR BINARY [BINARY...]

For each binary: a fresh copy of CORPUS_DIR's Markdown files (the corpus is never written) with a `kc.toml` that
includes them, a build (keyword search: no embeddings), then `ask` for "what is TITLE" of every file's first
heading (`ASK_TITLES_LIMIT=N`: the first N titles in order). Prints, per binary, how many answers were found
and the counts above; with two binaries or more, how many answers differ from the first binary's, and the first
few that do, to read.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ATTRIBUTION = re.compile(r"(^|\] )(\*\*[^*]+\*\*, lines \d+–\d+|From [^.]+\.) \[\d+\]")
# `wiki::sends_elsewhere`'s openings.
ELSEWHERE = re.compile(r"(?i)^(see |for more|more information|refer to|check out|consult )")
# A sentence that is one inline code span alone: a command line, no answer by itself (tldr's examples).
CODE_ALONE = re.compile(r"^`[^`]+`$")
# A sentence's citation not followed by the block it introduces.
DANGLING = re.compile(r": \[\d+\](?!\n\n)")


def questions(corpus: Path) -> list[str]:
    titles = set()
    for path in sorted(corpus.rglob("*.md")):
        for line in path.read_text(errors="replace").splitlines():
            heading = re.match(r"#+ (.+)", line)
            if heading:
                title = re.sub(r"[`*_\[\]]", "", heading.group(1)).strip().lower()
                if 2 < len(title) < 60:
                    titles.add(f"what is {title}")
                break
    return sorted(titles)


def sentences(answer: str) -> list[str]:
    return [part.strip() for part in re.split(r" \[\d+\]\s*", answer) if part.strip()]


def answers(binary: str, corpus: Path, work: Path, asked: list[str]) -> list[dict]:
    project = work / Path(binary).name
    for path in corpus.rglob("*.md"):
        target = project / "corpus" / path.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (project / "kc.toml").write_text('version = 1\n[sources]\ninclude = ["corpus/**/*.md"]\n')
    subprocess.run([binary, "-C", str(project), "build"], check=True, capture_output=True)
    out = []
    for question in asked:
        run = subprocess.run([binary, "-C", str(project), "ask", question, "--json"], capture_output=True, text=True)
        out.append(json.loads(run.stdout))
    return out


def tally(found: list[dict]) -> str:
    answered = [a for a in found if a["found"]]
    attributions = sum(len(ATTRIBUTION.findall(a["answer"])) for a in answered)
    twice = sum(len(s) - len(set(s)) for s in (sentences(a["answer"]) for a in answered))
    elsewhere = sum(any(ELSEWHERE.match(s) for s in sentences(a["answer"])) for a in answered)
    dangling = sum(len(DANGLING.findall(a["answer"])) for a in answered)
    firsts = [(sentences(a["answer"]) or [""])[0] for a in answered]
    code_first = sum(bool(CODE_ALONE.match(first)) for first in firsts)
    elsewhere_first = sum(bool(ELSEWHERE.match(first)) for first in firsts)
    return (
        f"found {len(answered)} of {len(found)}; attribution lines {attributions}, sentences said twice {twice}, "
        f"answers sending the reader elsewhere {elsewhere}, colon sentences without their block {dangling}, "
        f"answers opening with code alone {code_first}, "
        f"answers opening by sending the reader elsewhere {elsewhere_first}"
    )


# How many differing answers are printed (`ASK_TITLES_SHOW`, default 5; each is read by a person).
SHOWN = int(os.environ.get("ASK_TITLES_SHOW", "5"))


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    corpus, binaries = Path(sys.argv[1]), sys.argv[2:]
    asked = questions(corpus)
    if os.environ.get("ASK_TITLES_LIMIT"):
        asked = asked[: int(os.environ["ASK_TITLES_LIMIT"])]
    work = Path(tempfile.mkdtemp(prefix="knowledge-ask-titles-"))
    print(f"corpus {corpus.name}: {len(asked)} questions; projects under {work}")
    results = []
    for binary in binaries:
        results.append(answers(binary, corpus, work, asked))
        print(f"{binary}: {tally(results[-1])}")
    for binary, found in zip(binaries[1:], results[1:]):
        changed = [(q, a, b) for q, a, b in zip(asked, results[0], found) if a["answer"] != b["answer"]]
        print(f"\n{binary} against {binaries[0]}: {len(changed)} answers differ")
        for question, before, after in changed[:SHOWN]:
            print(f"\n== {question}\n  before: {before['answer'][:300]}\n  after:  {after['answer'][:300]}")


if __name__ == "__main__":
    main()
