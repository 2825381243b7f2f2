"""MCP latency through the official Python SDK:
`python3 compiler/benches/mcp_latency.py BINARY PROJECT [N] [stdio|http] [TOOL ARGUMENTS_JSON]`.

PROJECT must be built. Measures the time from spawning `knowledge serve` to the first `knowledge_search`
answer (initialize included), then N (default 200) sequential `knowledge_search` calls with queries made
from the index's own section titles, and prints p50 and p95, and the server's CPU time per call (its
process's user and system time over the calls, from /proc; clock ticks of 10 ms, so N of a few hundred). With TOOL (`knowledge_impact_plan '{"slug":
"component/tokio"}'`), the N calls are of that tool with those arguments instead. See docs/performance.md.
"""

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, os.path.dirname(__file__))
from proc_cpu import cpu_seconds, processes, stat_fields  # noqa: E402

BINARY, PROJECT = sys.argv[1], Path(sys.argv[2])
COUNT = int(sys.argv[3]) if len(sys.argv) > 3 else 200
TRANSPORT = sys.argv[4] if len(sys.argv) > 4 else "stdio"
TOOL = sys.argv[5] if len(sys.argv) > 5 else None
TOOL_ARGUMENTS = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}


@contextlib.asynccontextmanager
async def connect():
    if TRANSPORT == "stdio":
        params = StdioServerParameters(command=BINARY, args=["serve", "--dir", str(PROJECT)])
        async with stdio_client(params) as (read, write):
            yield read, write
        return
    server = subprocess.Popen(
        [BINARY, "serve", "--dir", str(PROJECT), "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True
    )
    try:
        url = server.stderr.readline().strip().rsplit(" ", 1)[-1]
        async with streamable_http_client(url) as (read, write):
            yield read, write
    finally:
        server.terminate()
        server.wait(timeout=10)


def server_cpu_seconds():
    """User and system CPU seconds of the `knowledge` processes this script started (its children), all
    their threads included, from /proc."""
    children = [pid for pid in processes() if (stat_fields(pid) or ["", "0"])[1] == str(os.getpid())]
    return sum(cpu_seconds(pid) for pid in children)


def queries():
    db = sqlite3.connect(f"file:{PROJECT / '.hasna/knowledge/knowledge.db'}?mode=ro", uri=True)
    titles = [row[0].split(" > ")[-1] for row in db.execute("SELECT DISTINCT title FROM chunks ORDER BY hash")]
    return [titles[i % len(titles)] for i in range(COUNT)]


async def main():
    asked = queries()
    start = time.perf_counter()
    async with connect() as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("knowledge_search", {"query": asked[0], "mode": "keyword"})
            first_answer = time.perf_counter() - start
            assert not first.is_error
            times = []
            cpu_before = server_cpu_seconds()
            for query in asked:
                t = time.perf_counter()
                if TOOL:
                    result = await session.call_tool(TOOL, TOOL_ARGUMENTS)
                else:
                    result = await session.call_tool("knowledge_search", {"query": query, "mode": "keyword", "limit": 10})
                times.append(time.perf_counter() - t)
                assert not result.is_error, result
            cpu = server_cpu_seconds() - cpu_before
    times.sort()
    p50 = times[len(times) // 2]
    p95 = times[min(len(times) - 1, len(times) * 95 // 100)]
    print(f"{TRANSPORT}: start to first answer: {first_answer * 1000:.1f} ms")
    print(f"{TOOL or 'knowledge_search'} over {COUNT} calls: p50 {p50 * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms, mean {statistics.mean(times) * 1000:.2f} ms")
    print(f"server CPU (user + system, every thread) per call: {cpu / COUNT * 1000:.2f} ms")


asyncio.run(main())
