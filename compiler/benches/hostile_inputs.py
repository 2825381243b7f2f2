#!/usr/bin/env python3
"""Inputs whose cost once grew with the square of their size, and a flood of MCP sessions (issue 40).

    python3 compiler/benches/hostile_inputs.py BINARY

Three measurements, each in a temporary project it makes and removes:
- link-dense builds: a cold `knowledge build` of one file holding one paragraph of N mentions
  (`[link number i](doc-i.md) and [[note i]]`), for N = 4,000, 16,000 and 64,000 pairs, then of one
  paragraph of N phrases each emphasized once and used three times (issue 41's terms), and of plain text
  of about the largest size; wall time of each whole process;
- huge queries: `knowledge serve` over stdio on the largest index, one `tools/call` of `knowledge_search`,
  `knowledge_context_pack` and `knowledge_ask` with 10,000, 40,000 and 100,000 distinct words;
- a session flood: `knowledge serve --http 127.0.0.1:0`, 3,000 `initialize` requests from one client, the
  server's resident memory (`/proc/PID/status`) along the way.
Prints one line per measurement; docs/performance.md ("Inputs that could be quadratic") records a run.
"""

import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def project(folder, name, text):
    os.makedirs(os.path.join(folder, "docs"), exist_ok=True)
    with open(os.path.join(folder, "kc.toml"), "w") as config:
        config.write("version = 1\n[project]\nname = \"hostile\"\n")
    with open(os.path.join(folder, "docs", name), "w") as source:
        source.write(text)


def timed_build(binary, folder):
    started = time.perf_counter()
    subprocess.run([binary, "-C", folder, "build"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def link_dense(binary, work):
    largest = None
    for pairs in (4_000, 16_000, 64_000):
        folder = os.path.join(work, f"links-{pairs}")
        text = "# Links\n\n" + " ".join(f"[link number {i}](doc-{i}.md) and [[note {i}]]" for i in range(pairs)) + "\n"
        project(folder, "links.md", text)
        seconds = timed_build(binary, folder)
        print(f"build, {2 * pairs} mentions in one paragraph, {len(text) / 1e6:.2f} MB: {seconds:.2f} s")
        largest = (folder, len(text))
    # Issue 41's terms: every phrase emphasized once and used again, so each is an introduced term and a
    # repeated one; then a file of distinct words, each a term candidate counted once.
    for terms in (4_000, 16_000, 64_000):
        folder_terms = os.path.join(work, f"terms-{terms}")
        text = "# Terms\n\n" + " ".join(f"*topic{i} word* and topic{i} word again, topic{i} word." for i in range(terms)) + "\n"
        project(folder_terms, "terms.md", text)
        seconds = timed_build(binary, folder_terms)
        print(f"build, {terms} emphasized phrases used three times, {len(text) / 1e6:.2f} MB: {seconds:.2f} s")
    folder = os.path.join(work, "plain")
    words = largest[1] // 14
    text = "# Plain\n\n" + " ".join(f"plain{i} text" for i in range(words)) + "\n"
    project(folder, "plain.md", text)
    print(f"build, plain text, {len(text) / 1e6:.2f} MB: {timed_build(binary, folder):.2f} s")
    return largest[0]


def huge_queries(binary, folder):
    server = subprocess.Popen([binary, "-C", folder, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)

    def send(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    server.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for words in (10_000, 40_000, 100_000):
        query = " ".join(f"word{i}" for i in range(words))
        for tool, arguments in (("knowledge_search", {"query": query}), ("knowledge_context_pack", {"query": query}),
                                ("knowledge_ask", {"question": query})):
            started = time.perf_counter()
            send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
            answer = json.loads(server.stdout.readline())
            outcome = "error" if "error" in answer else "answered"
            print(f"{tool}, {words} words ({len(query) / 1e3:.0f} KB): {time.perf_counter() - started:.3f} s, {outcome}")
    server.stdin.close()
    server.wait()


def session_flood(binary, folder):
    server = subprocess.Popen([binary, "-C", folder, "serve", "--http", "127.0.0.1:0"], stderr=subprocess.PIPE)
    port = int(re.search(r":(\d+)/mcp", server.stderr.readline().decode()).group(1))
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})

    def resident_kb():
        with open(f"/proc/{server.pid}/status") as status:
            return int(status.read().split("VmRSS:")[1].split()[0])

    started = time.perf_counter()
    for n in range(1, 3_001):
        connection = http.client.HTTPConnection("127.0.0.1", port)
        connection.request("POST", "/mcp", initialize,
                           {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        connection.getresponse().read()
        connection.close()
        if n in (1, 256, 1_000, 2_000, 3_000):
            print(f"sessions opened: {n}, server RSS {resident_kb() / 1024:.1f} MB, {time.perf_counter() - started:.1f} s")
    server.kill()
    server.wait()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        largest = link_dense(binary, work)
        huge_queries(binary, largest)
        session_flood(binary, largest)


if __name__ == "__main__":
    main()
