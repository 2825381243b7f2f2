"""MCP latency over raw JSON-RPC, without an SDK:
`python3 compiler/benches/mcp_raw.py BINARY PROJECT [N] [TOOL ARGUMENT]`.

PROJECT must be built. Starts `knowledge serve --dir PROJECT` (stdio), initializes it with newline-delimited
JSON-RPC messages written by hand, then sends N (default 300) `knowledge_search` calls one at a time, with
queries made from the index's own section titles (as `mcp_latency.py` makes them), and times each from the
write of the request to the read of its answer's line. Prints p50 and p95, and the server's CPU time per call
(user and system time of the process over the calls, from /proc). Issue 44's target is the p50 of this
bench: ≤ 1.5 ms on rust-rfcs. The SDK's own cost is what `mcp_latency.py` adds on top. With TOOL and
ARGUMENT (`knowledge_context_pack query`, `knowledge_ask question`), each call is of that tool with the query
as that argument instead. With `MCP_RAW_SAVE=FILE`, every call's result is written to FILE (one JSON line
a call), so that two binaries' answers to the same calls can be compared (`cmp`).
"""

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from proc_cpu import cpu_seconds  # noqa: E402

BINARY, PROJECT = sys.argv[1], Path(sys.argv[2])
COUNT = int(sys.argv[3]) if len(sys.argv) > 3 else 300
TOOL, ARGUMENT = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else ("knowledge_search", "query")


def queries():
    db = sqlite3.connect(f"file:{PROJECT / '.hasna/knowledge/knowledge.db'}?mode=ro", uri=True)
    titles = [row[0].split(" > ")[-1] for row in db.execute("SELECT DISTINCT title FROM chunks ORDER BY hash")]
    return [titles[i % len(titles)] for i in range(COUNT)]


def main():
    asked = queries()
    server = subprocess.Popen(
        [BINARY, "serve", "--dir", str(PROJECT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    lines = server.stdout

    def send(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        # Buffered both ways: an unbuffered pipe's `readline` reads one byte per system call.
        server.stdin.flush()

    def answer(expected_id):
        while True:
            message = json.loads(lines.readline())
            if message.get("id") == expected_id:
                return message

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp_raw", "version": "1"}}})
    answer(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    samples = []
    saved = []
    cpu_before = cpu_seconds(server.pid)
    for n, query in enumerate(asked, start=1):
        request = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                   "params": {"name": TOOL, "arguments": {ARGUMENT: query}}}
        start = time.perf_counter()
        send(request)
        reply = answer(n)
        samples.append((time.perf_counter() - start) * 1000)
        if "error" in reply or reply["result"].get("isError"):
            sys.exit(f"`{query}` failed: {reply}")
        saved.append(reply["result"])
    cpu = cpu_seconds(server.pid) - cpu_before
    server.stdin.close()
    server.wait(timeout=10)
    if os.environ.get("MCP_RAW_SAVE"):
        with open(os.environ["MCP_RAW_SAVE"], "w") as out:
            out.writelines(json.dumps(result, sort_keys=True) + "\n" for result in saved)
    samples.sort()
    print(f"raw JSON-RPC {TOOL} over {COUNT} calls: p50 {statistics.median(samples):.2f} ms, "
          f"p95 {samples[int(len(samples) * 0.95)]:.2f} ms, mean {statistics.mean(samples):.2f} ms")
    print(f"server CPU (user + system, every thread) per call: {cpu * 1000 / COUNT:.2f} ms")


main()
