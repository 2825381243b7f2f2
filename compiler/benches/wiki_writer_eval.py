#!/usr/bin/env python3
"""The `[wiki] writer` measured against a real model: what it writes, how much of it holds up, what it costs.

    python3 compiler/benches/wiki_writer_eval.py BINARY CORPUS_DIR BASE_URL [--max-pages N] [--keep DIR]
        [--judge FILE] [--sentences N]

BASE_URL is an OpenAI-compatible server (`compiler/benches/local_model.py` serves Qwen2.5-Coder on
loopback). The corpus's Markdown files are copied into a temporary project (the corpus is never written),
built once with the extractive wiki, then again with `[wiki] writer` naming the server and `max_pages = N`
(the pages that gather the most sources are written first). Printed, as JSON:

- pages: how many the wiki has, how many were written (a summary shown), refused (too few sentences held
  up: the extractive summary stays), owed (the budget);
- sentences: how many the model wrote, how many held up (cite an excerpt that holds most of their words),
  and the rate;
- wall seconds of the writing build and per call.

The calls a no-op build and a one-file edit make are the fake-provider tests' (tests/cli/wiki_writer.rs):
with a budget, the next build goes on writing the pages owed, so it is no no-op here.

`--judge FILE` writes N (`--sentences`, default 30) supported sentences drawn with `random.seed(7)`, each
with the quotes it cites as the page shows them, for judging citation precision by hand: does the cited
quote say what the sentence says?
"""

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

from ab_build import copy_corpus


def build(binary, root):
    start = time.perf_counter()
    result = subprocess.run([binary, "-C", root, "build", "--json"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{binary} failed: {result.stderr}")
    if result.stderr.strip():
        print(result.stderr.strip(), file=sys.stderr)
    return json.loads(result.stdout), seconds


def option(args, name, default):
    if name in args:
        at = args.index(name)
        value = args[at + 1]
        del args[at : at + 2]
        return value
    return default


def main():
    args = sys.argv[1:]
    max_pages = int(option(args, "--max-pages", "12"))
    keep = option(args, "--keep", None)
    judge = option(args, "--judge", None)
    sample = int(option(args, "--sentences", "30"))
    binary, corpus, base_url = (os.path.abspath(args[0]), args[1], args[2])
    root = keep or tempfile.mkdtemp(prefix="wiki-writer-")
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        os.makedirs(keep)
    try:
        copy_corpus(corpus, root)
        build(binary, root)
        with open(os.path.join(root, "kc.toml"), "a") as config:
            config.write(
                f'[wiki]\nwriter = "local"\nmax_pages = {max_pages}\n'
                f'[providers.local]\nkind = "openai-compatible"\nbase_url = "{base_url}"\n'
                'model = "qwen2.5-coder-instruct"\ntimeout_seconds = 600\nmax_retries = 0\n'
            )
        written, seconds = build(binary, root)
        writer = written.get("wiki_writer") or {}
        report = {
            "corpus": os.path.basename(os.path.normpath(corpus)),
            "max_pages": max_pages,
            "writer": writer,
            "wall_seconds": round(seconds, 1),
            "seconds_per_call": round(seconds / max(writer.get("calls", 0), 1), 1),
        }
        conn = sqlite3.connect(os.path.join(root, ".hasna/knowledge/knowledge.db"))
        report["pages"] = conn.execute("SELECT count(*) FROM wiki_pages").fetchone()[0]
        sentences = []
        for key, sentences_json, accepted in conn.execute("SELECT key, sentences, accepted FROM page_writings"):
            slug = conn.execute("SELECT slug FROM wiki_pages WHERE writing = ?", (key,)).fetchone()[0]
            for sentence in json.loads(sentences_json):
                sentences.append((slug, accepted, sentence))
        supported = [s for s in sentences if s[2]["problem"] is None]
        report["sentences"] = {
            "written": len(sentences),
            "supported": len(supported),
            "rate": round(len(supported) / max(len(sentences), 1), 3),
            "problems": sorted({s[2]["problem"].split(" hold only")[0] for s in sentences if s[2]["problem"]}),
        }
        if judge:
            random.seed(7)
            drawn = random.sample(supported, min(sample, len(supported)))
            with open(judge, "w") as out:
                for number, (slug, _, sentence) in enumerate(drawn, 1):
                    out.write(f"## {number}. {slug}\n\n{sentence['text']} {sentence['notes']}\n\n")
                    for note in sentence["notes"]:
                        row = conn.execute(
                            "SELECT path, start_offset, end_offset FROM citations WHERE page = ? AND note = ?",
                            (slug, note),
                        ).fetchone()
                        if row:
                            with open(os.path.join(root, row[0]), "rb") as source:
                                text = source.read()[row[1] : row[2]].decode("utf-8", "replace")
                            quoted = "\n".join("> " + line for line in text.strip().splitlines())
                            out.write(f"[{note}] {row[0]}\n{quoted}\n\n")
                    out.write("Verdict: \n\n")
        print(json.dumps(report, indent=2))
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
