#!/usr/bin/env python3
"""What a reader finds in a corpus's generated wiki, counted: the mechanical half of docs/wiki.md's read.

    python3 compiler/benches/wiki_read.py BINARY CORPUS_DIR [CONCEPTS_TSV] [--keep DIR] [--sample N]

Copies CORPUS_DIR's Markdown files (the corpus is never written) into a temporary project, builds it with
BINARY, and prints, over every generated page:

- pages: how many;
- restating: pages that restate one source: titled with a source's own title (its first heading, front
  matter title or file name) and quoting at most one source besides it, so that a reader learns little the
  source's first screen does not say (the issue's "titled with one source file's own first heading and open
  by quoting that chapter's first paragraph");
- titled by a source: pages whose title is some source's own title, whatever else they quote (a vault's
  note is its concept, so this alone is no fault);
- raw markup: pages whose quotes, as rendered, hold an HTML comment, a reference-style link
  (`[text][label]`), a reference definition line or an unresolved `{{placeholder}}`;
- one source only: pages that quote no source but the one that defines them.

With CONCEPTS_TSV (lines `concept<TAB>chapter[,chapter...]`, `#` comments), each concept is looked up as a
page (by title, alias or slug, case and plural folded) and counted as covered when its page cites at least
three sources, one of them a chapter the line names (the chapter that teaches it).

`--sample N` prints N page slugs drawn with `random.seed(7)`, for reading by hand.
"""

import glob
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from ab_build import copy_corpus  # the same copy of a corpus's Markdown files and kc.toml

REFERENCE_LINK = re.compile(r"\[[^\]\n]+\]\[[^\]\n]*\]")
REFERENCE_DEFINITION = re.compile(r"^>\s*\[[^\]\n]+\]:\s+\S", re.M)
PLACEHOLDER = re.compile(r"\{\{[^}\n]*\}\}")


def fold(name):
    """A name as the concept list and page titles are compared: lowercase words, a plural's `s` dropped."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def quoted_lines(markdown):
    """The page's block-quoted lines: what it quotes from its sources."""
    return "\n".join(line for line in markdown.splitlines() if line.startswith(">"))


def main():
    args = sys.argv[1:]
    keep = sample = None
    if "--keep" in args:
        at = args.index("--keep")
        keep = args[at + 1]
        del args[at : at + 2]
    if "--sample" in args:
        at = args.index("--sample")
        sample = int(args[at + 1])
        del args[at : at + 2]
    binary, corpus = args[0], args[1]
    concepts = args[2] if len(args) > 2 else None
    root = keep or tempfile.mkdtemp(prefix="knowledge-wiki-read-")
    if keep and os.path.exists(keep):
        shutil.rmtree(keep)
    copy_corpus(corpus, root)
    result = subprocess.run([binary, "-C", root, "build"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"build failed: {result.stderr}")
    db = sqlite3.connect(os.path.join(root, ".hasna", "knowledge", "knowledge.db"))
    own_titles = {}
    for path, title in db.execute("SELECT path, title FROM sources WHERE path NOT LIKE 'knowledge://%'"):
        own_titles[path] = title.strip().lower()
    titles = set(own_titles.values())
    pages = db.execute("SELECT slug, title, aliases, markdown FROM wiki_pages ORDER BY slug").fetchall()
    cited = {}
    for page, path in db.execute("SELECT DISTINCT page, path FROM citations"):
        cited.setdefault(page, set()).add(path)
    listed = {}
    for page, path in db.execute("SELECT DISTINCT page, path FROM page_sources"):
        listed.setdefault(page, set()).add(path)

    restating, titled, markup, single = [], [], [], []
    for slug, title, _aliases, markdown in pages:
        sources = cited.get(slug, set())
        owners = {path for path in sources if own_titles.get(path) == title.strip().lower()}
        if title.strip().lower() in titles:
            titled.append(slug)
        if owners and len(sources - owners) <= 1:
            restating.append(slug)
        quotes = quoted_lines(markdown)
        if "<!--" in quotes or REFERENCE_LINK.search(quotes) or REFERENCE_DEFINITION.search(quotes) or PLACEHOLDER.search(quotes):
            markup.append(slug)
        if len(sources) <= 1:
            single.append(slug)

    total = len(pages)
    share = lambda n: f"{n} ({100 * n / total:.0f} %)" if total else "0"
    print(f"pages: {total}")
    print(f"restating one source: {share(len(restating))}")
    print(f"titled by a source: {share(len(titled))}")
    print(f"quoting raw markup: {share(len(markup))}  {markup[:8]}")
    print(f"quoting one source only: {share(len(single))}")

    if concepts:
        by_name = {}
        for slug, title, aliases, _ in pages:
            for name in [title, slug.replace("-", " ")] + [a for a in __import__("json").loads(aliases)]:
                by_name.setdefault(fold(name), slug)
        covered, lines = 0, 0
        for line in open(concepts):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            lines += 1
            concept, chapters = line.split("\t")[:2]
            chapters = [c.strip() for c in chapters.split(",")]
            slug = by_name.get(fold(concept))
            sources = cited.get(slug, set()) if slug else set()
            teaches = any(path.endswith("/" + chapter) for path in sources for chapter in chapters)
            ok = slug is not None and len(sources) >= 3 and teaches
            covered += ok
            print(f"  {'ok  ' if ok else 'MISS'} {concept}: page {slug}, {len(sources)} sources cited, teaching chapter {'cited' if teaches else 'not cited'}")
        print(f"central concepts covered: {covered} of {lines} ({100 * covered / max(lines, 1):.0f} %)")

    if sample:
        random.seed(7)
        print("sample:", " ".join(random.sample([p[0] for p in pages], min(sample, total))))
    if not keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
