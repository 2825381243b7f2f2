#!/usr/bin/env python3
"""Scale test on the Postgres store: PROJECTS projects, each a copy of the shared corpora (about 69,000
chunks each) with 384-dim vectors from the `fake` provider, built and published to one store. Reports each
publish (rows/s into Postgres), the database size, a one-file edit, and search latency p50/p95 per mode
across all projects (whole processes, like scale.py).

    python3 compiler/benches/postgres_scale.py BINARY CORPORA_DIR POSTGRES_URL [PROJECTS] [QUERIES]

Project i's texts carry the tag of copy i (scale.py's rule), so no two projects hold the same chunk text.
With PSQL naming a psql binary, the database's size is printed too. With SEARCH_ONLY=1, nothing is built:
the searches run against the projects scale-0 … scale-(PROJECTS-1) already in the store.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from scale import WORDS, copy_corpora  # noqa: E402


def timed(binary, root, args, env):
    start = time.perf_counter()
    result = subprocess.run([binary, "-C", root, *args], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {result.stderr}")
    return (time.perf_counter() - start) * 1000, result.stdout


def searches(binary, root, names, queries, env):
    selected = [argument for name in names for argument in ("--project", name)]
    for mode in ["keyword", "semantic", "hybrid"]:
        samples = []
        for n in range(queries):
            query = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 7 + 3) % len(WORDS)]}"
            ms, _ = timed(binary, root, ["search", query, "--mode", mode, "--json", *selected], env)
            samples.append(ms)
        samples.sort()
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        print(f"search {mode} across {len(names)} projects: p50 {statistics.median(samples):.1f} ms, "
              f"p95 {p95:.1f} ms (process, {queries} queries)", flush=True)


def main():
    binary, corpora, url = sys.argv[1], sys.argv[2], sys.argv[3]
    projects = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    queries = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    env = dict(os.environ, KNOWLEDGE_STORE_URL=url)
    work = tempfile.mkdtemp(prefix="knowledge-pgscale-")
    if os.environ.get("SEARCH_ONLY"):
        with open(os.path.join(work, "kc.toml"), "w") as config:
            config.write("version = 1\n")
        searches(binary, work, [f"scale-{n}" for n in range(projects)], queries, env)
        shutil.rmtree(work)
        return
    names, chunks_total, publish_ms, local_ms = [], 0, 0, 0
    for number in range(projects):
        root = os.path.join(work, f"p{number}")
        copy_corpora(corpora, root, 1, first=number)
        with open(os.path.join(root, "kc.toml"), "w") as config:
            config.write(f'version = 1\n[project]\nname = "scale-{number}"\n[sources]\ninclude = ["corpus/**/*.md"]\n'
                         '[wiki]\nenabled = false\n[embeddings]\nprovider = "fake"\ndimensions = 384\n')
        ms, out = timed(binary, root, ["build", "--json"], env)
        summary = json.loads(out)
        store = summary["store"]
        chunks_total += store["chunks_written"]
        publish_ms += store["ms"]
        local_ms += ms - store["ms"]
        names.append(f"scale-{number}")
        print(f"project {number}: {store['chunks_written']:,} chunks, {store['vectors_written']:,} vectors, "
              f"local build {(ms - store['ms']) / 1000:.1f} s, publish {store['ms'] / 1000:.1f} s "
              f"({store['chunks_written'] / max(store['ms'], 1) * 1000:,.0f} chunks/s); "
              f"{chunks_total:,} chunks in the store", flush=True)
        # Only the first project is kept whole (it is edited below); the others' trees can go.
        if number > 0:
            shutil.rmtree(os.path.join(root, "corpus"))
    print(f"cold: {chunks_total:,} chunks, local builds {local_ms / 1000:.0f} s, publishing {publish_ms / 1000:.0f} s "
          f"({chunks_total / (publish_ms / 1000):,.0f} chunks/s with their vectors)")
    if os.environ.get("PSQL"):
        sizes = subprocess.run([os.environ["PSQL"], url, "-At", "-c",
                                "SELECT pg_size_pretty(pg_database_size(current_database())), "
                                "pg_size_pretty(pg_total_relation_size('knowledge_chunks')), "
                                "pg_size_pretty(pg_total_relation_size('knowledge_vectors'))"],
                               capture_output=True, text=True).stdout.strip().split("|")
        print(f"database {sizes[0]} (chunks with their GIN index {sizes[1]}, vectors with HNSW {sizes[2]})")
    first = os.path.join(work, "p0")
    noop, out = timed(binary, first, ["build", "--json"], env)
    print(f"no-op build {noop:.0f} ms (publish {json.loads(out)['store']['ms']} ms)")
    edited = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(first, "corpus")) for f in fs)[1000]
    with open(edited, "a") as file:
        file.write("\nAn appended line for the Postgres scale benchmark.\n")
    time.sleep(0.03)
    edit, out = timed(binary, first, ["build", "--json"], env)
    store = json.loads(out)["store"]
    print(f"one-file edit {edit:.0f} ms (publish {store['ms']} ms: {store['sources_written']} source, "
          f"{store['chunks_written']} chunks)")
    searches(binary, first, names, queries, env)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
