#!/usr/bin/env python3
"""Several `knowledge serve` replicas on one Postgres store, under concurrent MCP clients, while a build
commits: searches per second and latency p50/p95 through the official MCP Python SDK (streamable HTTP).

    python3 compiler/benches/replicas.py BINARY PROJECT_DIR POSTGRES_URL [REPLICAS] [CLIENTS] [SECONDS]

PROJECT_DIR is a project already built and published to the store (its kc.toml names it). REPLICAS servers
(default 4) answer `knowledge_search` from the store; CLIENTS sessions (default 16) are spread over them and
search back to back (hybrid, the MCP default, 10 results) for SECONDS (default 30), while one file of the
project is edited and built (and published) again and again. Every client, the servers, Postgres and the
builds share this machine's cores. Also prints where the machine's CPU went over the run: the clients' own
process (the SDK), the servers, Postgres's processes, and the rest (the builds, the kernel), from /proc.

Two floors bound what this machine can reach: the harness itself, with POSTGRES_URL "" and a project of a few
files (the servers then answer from its local index in well under a millisecond, so the SDK clients' own
process is what limits), and Postgres doing only the searches' SQL, `compiler/benches/postgres_floor.sql`
under pgbench (its header says how).
"""

import asyncio
import glob
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, os.path.dirname(__file__))
from proc_cpu import cpu_seconds, machine_busy_seconds, processes  # noqa: E402
from scale import WORDS  # noqa: E402


def builds(binary, project, env, stop, done):
    files = sorted(glob.glob(os.path.join(project, "**", "*.md"), recursive=True))
    target = files[len(files) // 3]
    n = 0
    while not stop.is_set():
        with open(target, "a") as file:
            file.write(f"\nReplica benchmark edit {n}.\n")
        n += 1
        start = time.perf_counter()
        result = subprocess.run([binary, "-C", project, "build", "--json"], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            sys.exit(f"build failed: {result.stderr}")
        published = json.loads(result.stdout).get("store") or {}
        done.append(((time.perf_counter() - start) * 1000, published.get("ms", 0)))
        stop.wait(1.0)


async def client(url, number, deadline, latencies, errors):
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            n = number
            while time.perf_counter() < deadline:
                query = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 7 + 3) % len(WORDS)]}"
                n += 1
                start = time.perf_counter()
                result = await session.call_tool("knowledge_search", {"query": query, "limit": 10})
                latencies.append(time.perf_counter() - start)
                if result.is_error:
                    errors.append(str(result.content))


def postgres_seconds():
    seconds = 0.0
    for pid in processes():
        try:
            with open(f"/proc/{pid}/comm") as comm:
                if comm.read().strip() == "postgres":
                    seconds += cpu_seconds(pid)
        except OSError:
            pass
    return seconds


async def main():
    binary, project, url = sys.argv[1], sys.argv[2], sys.argv[3]
    replicas = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    clients = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 30
    env = dict(os.environ, KNOWLEDGE_STORE_URL=url)
    servers, urls = [], []
    for _ in range(replicas):
        server = subprocess.Popen([binary, "serve", "--dir", project, "--http", "127.0.0.1:0"], env=env,
                                  stderr=subprocess.PIPE, text=True)
        servers.append(server)
        urls.append(server.stderr.readline().strip().rsplit(" ", 1)[-1])
    stop, done = threading.Event(), []
    builder = threading.Thread(target=builds, args=(binary, project, env, stop, done))
    latencies, errors = [], []
    try:
        builder.start()
        deadline = time.perf_counter() + seconds
        start = time.perf_counter()
        before = (os.times(), sum(cpu_seconds(s.pid) for s in servers), postgres_seconds(), machine_busy_seconds())
        await asyncio.gather(*(client(urls[i % replicas], i, deadline, latencies, errors) for i in range(clients)))
        after = (os.times(), sum(cpu_seconds(s.pid) for s in servers), postgres_seconds(), machine_busy_seconds())
        elapsed = time.perf_counter() - start
    finally:
        stop.set()
        builder.join()
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, len(latencies) * 95 // 100)]
    print(f"{replicas} replicas, {clients} clients, {elapsed:.0f} s: {len(latencies)} searches, "
          f"{len(latencies) / elapsed:.1f} searches/s, p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms, {len(errors)} errors")
    client_s = (after[0].user + after[0].system) - (before[0].user + before[0].system)
    servers_s, postgres_s, machine_s = (after[n] - before[n] for n in (1, 2, 3))
    per = 1000 / max(1, len(latencies))
    print(f"CPU per search: clients {client_s * per:.2f} ms, servers {servers_s * per:.2f} ms, "
          f"Postgres {postgres_s * per:.2f} ms (long-lived backends), the rest {(machine_s - client_s - servers_s - postgres_s) * per:.2f} ms; "
          f"machine busy {machine_s / elapsed:.2f} of {os.cpu_count()} cores")
    if done:
        print(f"{len(done)} builds committed and published meanwhile: build p50 {statistics.median(d[0] for d in done):.0f} ms, "
              f"publish p50 {statistics.median(d[1] for d in done):.0f} ms")
    for error in errors[:3]:
        print("error:", error)


asyncio.run(main())
