#!/usr/bin/env python3
"""The floor of a one-file edit, against what the binary spends on the same edit.

    python3 compiler/benches/edit_floor.py BINARY CORPUS_DIR FILE [ROUNDS]

FILE is a Markdown file of CORPUS_DIR (relative to it) that generated pages quote. Two copies of the corpus's
Markdown files, each built once by BINARY. Each round appends a sentence of one new word (so no term's count,
and so no plan input, changes: the edit reaches only the pages that quote FILE) to FILE in both copies; in the
first, BINARY runs a no-op build, then the edit's build; in the second, the floor does only the writes that
edit cannot avoid, in process:

- read and hash the file; in one transaction update its source row, its last chunk and that chunk's keyword
  (FTS5) entry, and for each page quoting it the page row (markdown and hash) and its citation rows (the new
  revision), the page's text being the stored one with the revision replaced;
- commit with the index's settings (WAL, synchronous=NORMAL), checkpoint, close;
- write each page's file as the build does (a temporary file exchanged into place, `renameat2`).

No parsing, chunking, planning, modelling or rendering. Prints the medians of the no-op, the edit and the floor
work, and the floor as a build (the no-op plus the floor work) against the no-op and against the edit.
"""

import ctypes
import hashlib
import os
import random
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import time

from ab_build import copy_corpus  # the same two copies of the corpus as the A/B

LIBC = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2


def build(binary, root):
    start = time.perf_counter()
    subprocess.run([binary, "-C", root, "build"], capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def exchange(temporary, target):
    """Puts `temporary` in `target`'s place as the build does, then removes the old text."""
    if LIBC.renameat2(AT_FDCWD, temporary.encode(), AT_FDCWD, target.encode(), RENAME_EXCHANGE) == 0:
        os.remove(temporary)
    else:
        os.replace(temporary, target)


def floor_work(root, path, appended):
    """Milliseconds of the writes the edit cannot avoid, and the number of pages written."""
    output = os.path.join(root, ".hasna", "knowledge")
    start = time.perf_counter()
    text = open(os.path.join(root, path), "rb").read()
    revision = hashlib.sha256(text).hexdigest()
    conn = sqlite3.connect(os.path.join(output, "knowledge.db"), isolation_level=None)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    source_id, old = conn.execute("SELECT id, revision FROM sources WHERE path = ?", (path,)).fetchone()
    conn.execute("UPDATE sources SET revision = ?, size = ? WHERE id = ?", (revision, len(text), source_id))
    seq, title, chunk, identifiers = conn.execute(
        "SELECT seq, title, text, identifiers FROM chunks WHERE source_id = ? ORDER BY ordinal DESC LIMIT 1",
        (source_id,),
    ).fetchone()
    conn.execute(
        "INSERT INTO chunks_fts (chunks_fts, rowid, title, text, identifiers) VALUES ('delete', ?, ?, ?, ?)",
        (seq, title, chunk, identifiers),
    )
    chunk += appended
    conn.execute(
        "UPDATE chunks SET text = ?, revision = ?, hash = ? WHERE seq = ?",
        (chunk, revision, hashlib.sha256(chunk.encode()).hexdigest(), seq),
    )
    conn.execute(
        "INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (?, ?, ?, ?)", (seq, title, chunk, identifiers)
    )
    files = []
    for slug, page_path, markdown in conn.execute(
        "SELECT slug, path, markdown FROM wiki_pages WHERE slug IN (SELECT page FROM citations WHERE path = ?)", (path,)
    ).fetchall():
        markdown = markdown.replace(old[:12], revision[:12])
        conn.execute(
            "UPDATE wiki_pages SET markdown = ?, hash = ? WHERE slug = ?",
            (markdown, hashlib.sha256(markdown.encode()).hexdigest(), slug),
        )
        conn.execute("UPDATE citations SET revision = ? WHERE page = ? AND path = ?", (revision, slug, path))
        files.append((page_path, markdown))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    conn.close()
    for page_path, markdown in files:
        target = os.path.join(output, page_path)
        with open(target + ".tmp", "w") as file:
            file.write(markdown)
        exchange(target + ".tmp", target)
    return (time.perf_counter() - start) * 1000, len(files)


def main():
    binary, corpus, path = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.join("corpus", sys.argv[3])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 12
    words = random.Random(5)
    with tempfile.TemporaryDirectory() as work:
        roots = [os.path.join(work, "build"), os.path.join(work, "floor")]
        for root in roots:
            copy_corpus(corpus, root)
            build(binary, root)
        noop, edit, floor = [], [], []
        for _ in range(rounds):
            noop.append(build(binary, roots[0]))
            word = "".join(words.choice(string.ascii_lowercase) for _ in range(9)).capitalize()
            appended = f"\n{word}.\n"
            for root in roots:
                with open(os.path.join(root, path), "a") as file:
                    file.write(appended)
            edit.append(build(binary, roots[0]))
            spent, pages = floor_work(roots[1], path, appended.rstrip("\n"))
            floor.append(spent)
    median = statistics.median
    as_build = median(noop) + median(floor)
    print(f"{path}: {pages} pages quote it; {rounds} rounds")
    print(f"no-op {median(noop):.1f} ms, edit {median(edit):.1f} ms ({median(edit) / median(noop):.2f}x the no-op)")
    print(f"floor work {median(floor):.1f} ms; as a build, no-op + floor work {as_build:.1f} ms")
    print(f"floor / no-op {as_build / median(noop):.2f}x; edit / floor {median(edit) / as_build:.2f}x")
    print("no-op", [round(x, 1) for x in noop])
    print("edit", [round(x, 1) for x in edit])
    print("floor work", [round(x, 1) for x in floor])


if __name__ == "__main__":
    main()
