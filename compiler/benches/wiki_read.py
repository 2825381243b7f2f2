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
  (`[text][label]`, or a shortcut `[text]` outside inline code), a reference definition line or an
  unresolved `{{placeholder}}`;
- one source only: pages that quote no source but the one that defines them.

With CONCEPTS_TSV (lines `concept<TAB>chapter[,chapter...]`, `#` comments), each concept is looked up as a
page (by title, alias or slug, case and plural folded) and counted as covered when its page cites at least
three sources, one of them a chapter the line names (the chapter that teaches it).

`--sample N` prints N page slugs drawn with `random.seed(7)`, for reading by hand; `--digest` prints each
sampled page as a reader skims it: title, summary, and each quote's source with its opening words.
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
# A shortcut reference (`[registries]`) outside inline code: two letters or more, not a wikilink, a link or a
# definition.
SHORTCUT_LINK = re.compile(r"(?<![\[!`])\[(?=[^\]\n]*[A-Za-z][^\]\n]*[A-Za-z])[^\]\[\n`]+\](?![\(\[:\]])")
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
    digest = "--digest" in args
    if digest:
        args.remove("--digest")
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
        prose = re.sub(r"`[^`\n]*`", "", quotes)
        if "<!--" in quotes or REFERENCE_LINK.search(quotes) or SHORTCUT_LINK.search(prose) or REFERENCE_DEFINITION.search(quotes) or PLACEHOLDER.search(quotes):
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
        drawn = random.sample([p[0] for p in pages], min(sample, total))
        print("sample:", " ".join(drawn))
        markdown_of = {slug: markdown for slug, _title, _aliases, markdown in pages}
        for slug in drawn if digest else []:
            print_digest(slug, markdown_of[slug])
    if not keep:
        shutil.rmtree(root)


def print_digest(slug, markdown):
    """A page as a reader skims it: its title, summary, each quote's source and opening words, and how many
    sources it lists without a quote."""
    body = markdown.split("\n---\n", 1)[-1]
    lines = body.splitlines()
    title = next((line[2:] for line in lines if line.startswith("# ")), slug)
    print(f"\n=== {slug}: {title}")
    at = lines.index(f"# {title}") + 1 if f"# {title}" in lines else 0
    for line in lines[at:]:
        if line.startswith(">") or line.startswith("#"):
            break
        if line.strip():
            print(f"  summary: {line.strip()[:300]}")
    source = None
    quote = []
    for line in lines + [""]:
        if line.startswith("**[") or line.startswith("From ["):
            source = re.sub(r"\]\([^)]*\)", "]", line)[:120]
        if line.startswith(">"):
            quote.append(line.lstrip("> ").strip())
        elif quote:
            text = " ".join(quote)
            print(f"  quote ({source or 'lead'}): {text[:220]}{' …' if len(text) > 220 else ''}")
            quote = []
    also = body.split("## Also mentioned in", 1)
    if len(also) == 2:
        print(f"  also mentioned in: {also[1].split('##', 1)[0].count('- [')} sources")


if __name__ == "__main__":
    main()
