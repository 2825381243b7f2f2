#!/usr/bin/env python3
"""Code entities on real repositories: counts, build times, and the plans to check by hand.

    python3 compiler/benches/code.py BINARY [ROUNDS] [OUT_DIR]

Compiles the sources of crates nobody here wrote (salsa, rusqlite and tokio, as `cargo fetch` leaves
them under the cargo registry's `src/` folder) and this repository itself (its tracked files), each in
a copy with a `kc.toml` that includes its Markdown and turns `[code]` on. For each it reports entity
counts by type and edge counts by relation (`knowledge entity stats`), and medians of ROUNDS whole-process
builds: cold (output folder removed), no-op, and a one-function edit (a comment line inserted into a
different function's body each round; the build's `entities` counters say what changed). The same cold
and no-op builds with `[code]` off, the same files indexed as text, are the floor the entity work is
measured against. It times entity reads and searches (with and without `--kind entity`) as whole
processes, then writes `entity impact` and `entity test-plan` answers for the slugs in PLANS to OUT_DIR,
for reading.
"""

import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Entities whose plans are checked by hand (docs/performance.md says what they were checked against).
PLANS = {
    "salsa": ["component/salsa", "symbol/src/database.rs#Database::synthetic_write"],
    "rusqlite": ["symbol/src/lib.rs#Connection::execute"],
    "tokio": ["symbol/src/sync/mutex.rs#Mutex::lock"],
    "knowledge": ["component/knowledge-queries"],
}


def registry_crate(name):
    found = glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{name}-[0-9]*"))
    if not found:
        sys.exit(f"no {name} under ~/.cargo/registry/src: run `cargo fetch` first")
    return sorted(found)[-1]


def copy_tree(source, target, files=None):
    if files is None:
        files = []
        for folder, subfolders, names in os.walk(source):
            subfolders[:] = [d for d in subfolders if d not in ("target", ".git", "node_modules")]
            files.extend(os.path.relpath(os.path.join(folder, n), source) for n in names)
    for relative in files:
        path = os.path.join(source, relative)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        destination = os.path.join(target, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copy(path, destination)


def configure(root, name, code):
    """With `code`, `[code]` on; without, the same Rust files and manifests indexed as text only (the floor)."""
    with open(os.path.join(root, "kc.toml"), "w") as config:
        config.write(f'version = 1\n[project]\nname = "{name}"\n[sources]\n')
        if code:
            config.write('include = ["**/*.md"]\n[code]\nenabled = true\ninclude = ["**/Cargo.toml", "**/*.rs"]\n')
        else:
            config.write('include = ["**/*.md", "**/Cargo.toml", "**/*.rs"]\n')


def run(binary, root, *args):
    result = subprocess.run([binary, "-C", root, *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"`knowledge {' '.join(args)}` failed in {root}: {result.stderr}")
    return result.stdout


def build(binary, root):
    start = time.perf_counter()
    summary = json.loads(run(binary, root, "build", "--json"))
    return (time.perf_counter() - start) * 1000, summary


def cold(binary, root, rounds):
    times = []
    for _ in range(rounds):
        shutil.rmtree(os.path.join(root, ".hasna"), ignore_errors=True)
        times.append(build(binary, root)[0])
    return times


def noop(binary, root, rounds):
    return [build(binary, root)[0] for _ in range(rounds)]


FUNCTION = re.compile(r"^(\s*)(pub(\([^)]*\))? )?(async )?fn \w+[^;]*\{\s*$")


def function_lines(root):
    """(file, line) of function headers whose body starts on the next line, across the copy's Rust files."""
    found = []
    for path in sorted(glob.glob("**/*.rs", root_dir=root, recursive=True)):
        if "/tests/" in f"/{path}" or path.startswith(".hasna"):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as file:
            for number, line in enumerate(file):
                if FUNCTION.match(line):
                    found.append((path, number))
    return found


def edits(binary, root, rounds):
    candidates = function_lines(root)
    step = max(1, len(candidates) // rounds)
    times, counters = [], []
    for n in range(rounds):
        path, number = candidates[(n * step + step // 2) % len(candidates)]
        full = os.path.join(root, path)
        with open(full, encoding="utf-8") as file:
            lines = file.readlines()
        indent = FUNCTION.match(lines[number]).group(1)
        lines.insert(number + 1, f"{indent}    // benchmark edit {n}\n")
        with open(full, "w", encoding="utf-8") as file:
            file.writelines(lines)
        time.sleep(0.03)  # past the racy-stat window, as a later edit would be
        elapsed, summary = build(binary, root)
        times.append(elapsed)
        counters.append((path, summary["entities"], summary["queries"]["by_query"].get("entities", 0)))
    return times, counters


# Searches an agent might send a repository's index, timed with and without `--kind entity`.
SEARCHES = ["lock", "spawn blocking task", "database connection", "parse query"]


def latencies(binary, root, plans, rounds):
    """p50 of whole-process entity reads and searches, as an agent's CLI calls would see them."""
    commands = [(f"entity {c} {slug}", ["entity", c, slug]) for slug in plans[:1] for c in ("get", "impact", "test-plan")]
    commands.append(("entity stats", ["entity", "stats"]))
    for query in SEARCHES:
        commands.append((f"search {query!r}", ["search", query, "--json"]))
        commands.append((f"search {query!r} --kind entity", ["search", query, "--kind", "entity", "--json"]))
    timings = []
    for label, args in commands:
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            run(binary, root, *args)
            samples.append((time.perf_counter() - start) * 1000)
        timings.append((label, median(samples)))
    return timings


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    binary = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    out = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="knowledge-code-plans-")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="knowledge-code-")
    tracked = subprocess.run(["git", "-C", REPOSITORY, "ls-files"], capture_output=True, text=True).stdout.split()
    repositories = {
        "salsa": (registry_crate("salsa"), None),
        "rusqlite": (registry_crate("rusqlite"), None),
        "tokio": (registry_crate("tokio"), None),
        "knowledge": (REPOSITORY, tracked),
    }
    for name, (source, files) in repositories.items():
        root = os.path.join(work, name)
        copy_tree(source, root, files)
        rust_files = len(glob.glob("**/*.rs", root_dir=root, recursive=True))
        configure(root, name, code=False)
        build(binary, root)
        text_cold, text_noop = median(cold(binary, root, rounds)), median(noop(binary, root, rounds))
        configure(root, name, code=True)
        build(binary, root)
        code_cold, code_noop = median(cold(binary, root, rounds)), median(noop(binary, root, rounds))
        edit_times, counters = edits(binary, root, rounds)
        stats = json.loads(run(binary, root, "entity", "stats", "--json"))
        print(f"## {name} ({os.path.basename(source)}, {rust_files} .rs files)")
        print(f"entities: {json.dumps(stats['entities'])}")
        print(f"edges: {json.dumps(stats['edges'])}, external dependencies {stats['external_dependencies']}")
        print(f"cold: {code_cold:.0f} ms with [code], {text_cold:.0f} ms as text ({code_cold / text_cold:.2f}x)")
        print(f"no-op: {code_noop:.0f} ms with [code], {text_noop:.0f} ms as text ({code_noop / text_noop:.2f}x)")
        print(f"one-function edit: {median(edit_times):.0f} ms ({median(edit_times) / code_noop:.2f}x the no-op)")
        print(f"  samples {[round(t) for t in edit_times]}")
        for path, entities, executed in counters:
            print(f"  {path}: entities {entities}, `entities` executed {executed}x")
        for label, p50 in latencies(binary, root, PLANS.get(name, []), rounds):
            print(f"  {label}: p50 {p50:.0f} ms")
        for slug in PLANS.get(name, []):
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", slug)
            for command in ("impact", "test-plan"):
                answer = subprocess.run([binary, "-C", root, "entity", command, slug], capture_output=True, text=True)
                text = answer.stdout + answer.stderr
                with open(os.path.join(out, f"{name}-{command}-{safe}.txt"), "w") as file:
                    file.write(text)
        print()
    print(f"plans written to {out}")


if __name__ == "__main__":
    main()
