"""Drives `knowledge serve` over stdio with the official MCP Python SDK, as an agent would.

Usage: client.py KNOWLEDGE_BINARY PROJECT_DIR [stdio|http]

The project must already be built. Over `http`, the script starts `knowledge serve --http 127.0.0.1:0` and
connects to the address it reports; over `stdio` (the default) the SDK spawns `knowledge serve`. The script checks every tool and resource against the index, sends bad
requests and checks that they come back as errors while the server keeps serving, runs a build while the
server is serving and checks that the next answer sees it, and checks that the server never wrote the index.
It prints one line per check and exits non-zero when any check fails.
"""

import asyncio
import collections
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import contextlib
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

BINARY, PROJECT = sys.argv[1], Path(sys.argv[2])
TRANSPORT = sys.argv[3] if len(sys.argv) > 3 else "stdio"
INDEX = PROJECT / ".hasna" / "knowledge" / "knowledge.db"
EXPECTED_TOOLS = {
    "knowledge_search",
    "knowledge_get",
    "knowledge_list",
    "knowledge_recent_changes",
    "knowledge_stats",
    "knowledge_lint",
    "knowledge_context_pack",
    "knowledge_ask",
    "knowledge_run_status",
    "knowledge_resolve_source",
    "knowledge_storage",
    "knowledge_get_entity",
    "knowledge_list_entities",
    "knowledge_resolve_dependency",
    "knowledge_impact_plan",
    "knowledge_test_plan",
    "knowledge_coverage_for",
    "knowledge_which_pr_introduced",
    "knowledge_recent_entity_changes",
    "knowledge_web_search",
    "knowledge_introduced",
    "knowledge_proposals_context",
    "ok_search",
    "ok_web_search",
    "ok_resolve_source",
    "ok_reindex_status",
}

passed, failed = 0, 0
# Every answer the server gave, as text: no answer may carry what the principal cannot read.
answers = []
SECRET = "xenomorphic"


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def call(session, tool, arguments):
    result = await session.call_tool(tool, arguments)
    answers.append(json.dumps(result.structured_content) + " ".join(c.text for c in result.content if hasattr(c, "text")))
    return result, result.structured_content


async def read_resource_text(session, uri):
    text = (await session.read_resource(uri)).contents[0].text
    answers.append(text)
    return text


async def expect_error(session, name, tool, arguments, needle):
    """A bad call must come back as an error result (or a protocol error) that says what was wrong."""
    try:
        result = await session.call_tool(tool, arguments)
        text = result.content[0].text if result.content else ""
        check(name, result.is_error and needle in text, f"is_error={result.is_error} text={text!r}")
    except MCPError as error:
        check(name, needle in str(error), f"error={error}")
    # The server keeps serving after any bad request.
    _, answer = await call(session, "knowledge_stats", {})
    check(f"{name}: server still answers", answer is not None and answer["sources"] > 0)


@contextlib.asynccontextmanager
async def connect():
    """The (read, write) streams of a session with `knowledge serve` over the chosen transport."""
    if TRANSPORT == "stdio":
        params = StdioServerParameters(command=BINARY, args=["serve", "--dir", str(PROJECT)])
        async with stdio_client(params) as (read, write):
            yield read, write
        return
    server = subprocess.Popen(
        [BINARY, "serve", "--dir", str(PROJECT), "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True
    )
    try:
        line = server.stderr.readline()
        url = line.strip().rsplit(" ", 1)[-1]
        check("the HTTP server reports its address", url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), line)
        check_rebinding_refused(url)
        async with streamable_http_client(url) as (read, write):
            yield read, write
    finally:
        server.terminate()
        server.wait(timeout=10)


def check_rebinding_refused(url):
    """The same request is refused with a foreign Host (what a DNS-rebinding web page sends) and accepted
    with the loopback host."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
    }

    def post(host):
        request = urllib.request.Request(
            url,
            data=json.dumps(initialize).encode(),
            headers={"Host": host, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, ""
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    status, body = post("evil.example")
    check("a foreign Host header is refused", status == 403 and "Host" in body, (status, body))
    status, _ = post(url.split("/")[2])
    check("the loopback Host is accepted", status == 200, status)


async def main():
    async with connect() as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("initialize names the server", init.server_info.name == "knowledge", init.server_info)

            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            check("list_tools offers every tool", set(tools) == EXPECTED_TOOLS, sorted(tools))
            for name, tool in tools.items():
                check(f"{name} is read-only", tool.annotations is not None and tool.annotations.read_only_hint)
                check(f"{name} has input and output schemas", bool(tool.input_schema) and bool(tool.output_schema))

            resources = {r.uri for r in (await session.list_resources()).resources}
            check(
                "list_resources offers the project resources",
                {f"knowledge://project/{n}" for n in ["config", "storage", "schema", "sources", "runs", "wiki/pages", "indexes", "open-files", "decisions"]}
                <= resources,
                resources,
            )
            templates = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
            check(
                "resource templates",
                {"knowledge://source/{path}", "knowledge://wiki/{slug}", "knowledge://index/{section}", "knowledge://run/{id}",
                 "knowledge://item/{id}", "knowledge://decision/{run_id}"}
                <= templates,
                templates,
            )

            # Search: answers are lean by default (the snippet is the excerpt, no whole chunk, and the text
            # block is a list of titles and refs, not a second copy of the JSON); with include_text, the
            # provenance resolves to the source bytes.
            result, lean = await call(session, "knowledge_search", {"query": "ownership rules", "mode": "keyword"})
            check("a default answer carries no chunk text", lean and all("text" not in hit for hit in lean["results"]), lean)
            check("every hit has a snippet", lean and all(hit["snippet"] for hit in lean["results"]), lean)
            summary = " ".join(c.text for c in result.content if hasattr(c, "text"))
            check("the text block lists the results, not the JSON", summary.startswith("1. ") and "{" not in summary, summary)
            result, answer = await call(
                session, "knowledge_search", {"query": "ownership rules", "mode": "keyword", "include_text": True}
            )
            hits = answer["results"] if answer else []
            check("include_text adds the text and changes nothing else",
                  [h["id"] for h in hits] == [h["id"] for h in lean["results"]])
            check("search finds results", not result.is_error and len(hits) > 0, answer)
            check("keyword mode is not degraded", answer and answer["degraded"] is False)
            for hit in hits:
                uri = hit["source"]["uri"]
                # A generated page's or shard's text is its resource; a source's is its file.
                if uri.startswith(("knowledge://wiki/", "knowledge://index/")):
                    data = (await read_resource_text(session, uri)).encode()
                else:
                    data = (PROJECT / hit["source"]["path"]).read_bytes()
                c = hit["citation"]
                cited = data[c["start_offset"] : c["end_offset"]].decode()
                check(f"search hit {hit['id'][:8]} text is the cited bytes", cited == hit["text"])
                revision = hit["source"]["revision"]
                check(
                    f"search hit {hit['id'][:8]} names its revision",
                    len(revision) == 32 and (uri.startswith("file://") or hit["kind"] in ("wiki_page", "index_entry")),
                )
            check("best hit is the rules section", hits and hits[0]["title"].endswith("Ownership Rules"), hits[:1])

            _, hybrid = await call(session, "knowledge_search", {"query": "ownership"})
            check("hybrid without embeddings says it is degraded", hybrid["degraded"] is True and "embeddings" in hybrid["degraded_reason"])
            _, unlimited = await call(session, "knowledge_search", {"query": "ownership", "mode": "keyword"})
            _, limited = await call(session, "knowledge_search", {"query": "ownership", "mode": "keyword", "limit": 1})
            check("limit caps the results", len(unlimited["results"]) > 1 and len(limited["results"]) == 1, len(unlimited["results"]))
            _, none = await call(session, "knowledge_search", {"query": "NEAR( \"unbalanced * OR", "mode": "keyword"})
            check("FTS syntax in a query is safe", none is not None and isinstance(none["results"], list))

            # Get: a chunk, a source by ref and by path; never anything unindexed.
            chunk_id = hits[0]["id"]
            _, got = await call(session, "knowledge_get", {"ref": chunk_id})
            check("get resolves a chunk id", got["kind"] == "chunk" and got["chunk"]["text"] == hits[0]["text"])
            check("a chunk carries provenance", got["chunk"]["provenance"]["source_ref"] == hits[0]["source"]["uri"])
            _, by_ref = await call(session, "knowledge_get", {"ref": hits[0]["source"]["uri"]})
            check("get resolves a file:// ref", by_ref["kind"] == "source" and chunk_id in [c["id"] for c in by_ref["source"]["chunks"]])
            _, by_path = await call(session, "knowledge_get", {"ref": "book/ownership.md"})
            check("get resolves a path", by_path["source"]["title"] == "Understanding Ownership")
            await expect_error(session, "get refuses a path outside the project", "knowledge_get", {"ref": "../../etc/passwd"}, "no chunk or source")
            await expect_error(session, "get refuses an unindexed file", "knowledge_get", {"ref": "kc.toml"}, "no chunk or source")

            # List: pagination visits every source once.
            seen, cursor = [], None
            while True:
                args = {"kind": "sources", "limit": 1}
                if cursor:
                    args["cursor"] = cursor
                _, page = await call(session, "knowledge_list", args)
                seen += [s["path"] for s in page["sources"]]
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            _, stats = await call(session, "knowledge_stats", {})
            _, listed_notes = await call(session, "knowledge_list", {"kind": "notes"})
            notes = [note["path"] for note in listed_notes["sources"]]
            check("list pages through every source once", len(seen) == len(set(seen)) == stats["sources"] - len(notes), seen)
            _, runs = await call(session, "knowledge_list", {"kind": "runs"})
            check("list runs", len(runs["runs"]) == stats["runs"] >= 1)

            _, changes = await call(session, "knowledge_recent_changes", {"runs": 1})
            events = changes["changes"][0]["events"]
            check(
                "a first build records one index_rebuilt event, then the pages it generated",
                [e["kind"] for e in events] == ["index_rebuilt", "page_added"]
                and events[1]["path"] == "knowledge://wiki/understanding-ownership",
                events,
            )

            # A context pack within its budget.
            _, pack = await call(session, "knowledge_context_pack", {"query": "ownership rules memory", "max_tokens": 120})
            check("context pack has its schema", pack["schema"] == "knowledge-agent-context-pack" and pack["schema_version"] == 2)
            check("context pack keeps to its budget", 0 < pack["budget"]["used_tokens"] <= 120, pack["budget"])
            check(
                "context pack items cite their source (a file, or a generated page by its own ref)",
                all(
                    (i["ref"].startswith("file://") and not i["ref"].startswith("file://knowledge://"))
                    or i["ref"].startswith("knowledge://")
                    for i in pack["items"]
                ),
                [i["ref"] for i in pack["items"]],
            )

            # An extractive answer, each sentence cited; a question nothing answers is not found. The server
            # records nothing (the index is checked unwritten at the end).
            _, answer = await call(session, "knowledge_ask", {"question": "what are the ownership rules?"})
            check("ask answers with cited sentences", answer["found"] and "[1]" in answer["answer"], answer)
            resolved = [(await call(session, "knowledge_get", {"ref": c["ref"]}))[1] for c in answer["citations"]]
            check(
                "ask's citations resolve to what the index holds",
                answer["citations"] and all(r.get("kind") in ("chunk", "source") for r in resolved),
                answer["citations"],
            )
            check("ask records no run from the server", answer["run_id"] is None, answer["run_id"])
            _, unanswered = await call(session, "knowledge_ask", {"question": "what is the capital of France?"})
            check("ask says not found", not unanswered["found"], unanswered)

            # The run ledger: the last build, and a recorded purpose decision by its id.
            _, last = await call(session, "knowledge_run_status", {})
            check("run status defaults to the last build", last["kind"] == "build" and last["id"] == runs["runs"][0]["id"], last)
            decisions = json.loads(await read_resource_text(session, "knowledge://project/decisions"))
            check(
                "the decisions resource lists the recorded decision",
                [(d["path"], d["status"], d["detail"]["purpose"]) for d in decisions]
                == [("book/ownership.md", "allowed", "knowledge_answer")],
                decisions,
            )
            _, decided = await call(session, "knowledge_run_status", {"run_id": decisions[0]["run_id"]})
            check("run status reads a decision's run", decided["kind"] == "resolve" and decided["events"][0]["kind"] == "source_resolved", decided)
            await expect_error(session, "unknown run", "knowledge_run_status", {"run_id": "nope"}, "no chunk or source matches `nope`")
            decision = json.loads(await read_resource_text(session, f"knowledge://decision/{decisions[0]['run_id']}"))
            check("one decision by its run id", decision == decisions[0], decision)
            try:
                await session.read_resource("knowledge://decision/nope")
                check("an unknown decision is not found", False)
            except MCPError as error:
                check("an unknown decision is not found", "no decision `nope`" in str(error), error)

            # A note by its id: the note `knowledge add` wrote before the build.
            check("the note is listed", len(notes) == 1 and notes[0].startswith("knowledge://item/"), notes)
            item = json.loads(await read_resource_text(session, notes[0]))
            check("a note's resource is its indexed source", item["path"] == notes[0] and item["chunks"], item)

            # Code entities: the catalog, one entity, plans, coverage, dependencies and the delta log. The
            # decision record is internal: no answer names it or says it governs the crate.
            _, components = await call(session, "knowledge_list_entities", {"type": "component"})
            check("list_entities lists the crate", [e["slug"] for e in components["entities"]] == ["component/turbine"], components)
            _, decisions_seen = await call(session, "knowledge_list_entities", {"type": "decision"})
            check("an unreadable decision is not listed", decisions_seen["entities"] == [], decisions_seen)
            _, crate = await call(session, "knowledge_get_entity", {"slug": "component/turbine"})
            relations = sorted({(e["relation"], e["direction"]) for e in crate["relationships"]})
            check(
                "get_entity gives the crate's payload, anchor and relationships",
                crate["payload"]["ecosystem"] == "cargo" and crate["anchor"]["source_ref"].startswith("file://Cargo.toml@")
                and relations == [("covers", "incoming"), ("depends_on", "outgoing"), ("implemented_by", "outgoing")],
                crate,
            )
            _, capped = await call(session, "knowledge_get_entity", {"slug": "component/turbine", "limit": 1})
            kept = collections.Counter(f"{e['relation']} {e['direction']}" for e in capped["relationships"])
            check(
                "get_entity keeps at most `limit` of each relation and counts the rest",
                max(kept.values()) == 1 and sum(kept.values()) + sum(capped.get("omitted", {}).values()) == len(crate["relationships"])
                and capped.get("omitted", {}).get("implemented_by outgoing", 0) >= 1,
                capped,
            )
            _, plan = await call(session, "knowledge_test_plan", {"slug": "symbol/src/lib.rs#spin"})
            check(
                "test_plan names the gap, where to add its test and the command",
                plan["gaps"] == ["symbol/src/lib.rs#spin"] and plan["targets"][0]["command"] == "cargo test -p turbine",
                plan,
            )
            _, impact = await call(session, "knowledge_impact_plan", {"slug": "symbol/src/lib.rs#balance"})
            check(
                "impact_plan: a covered function and its crate; an unmapped dependency is not the function's",
                impact["covered_by"] == ["test/src/lib.rs#tests::balances_half"]
                and [a["slug"] for a in impact["affected"]] == ["component/turbine"]
                and impact["outbound"] == [],
                impact,
            )
            _, impact = await call(session, "knowledge_impact_plan", {"slug": "component/turbine"})
            check(
                "impact_plan of a crate lists its outbound dependency",
                [o["coordinate"] for o in impact["outbound"]] == ["crates.io:serde@1"],
                impact,
            )
            _, coverage = await call(session, "knowledge_coverage_for", {"component": "component/turbine"})
            check("coverage_for counts covered public symbols", (coverage["public_symbols"], coverage["covered_public_symbols"]) == (2, 1), coverage)
            _, dependency = await call(session, "knowledge_resolve_dependency", {"coordinate": "crates.io:serde@1"})
            check("resolve_dependency says external", dependency["status"] == "external", dependency)
            _, introduced = await call(session, "knowledge_which_pr_introduced", {"slug": "component/turbine"})
            check("which_pr_introduced names the build", introduced["introduced"]["change"] == "added", introduced)
            _, entity_changes = await call(session, "knowledge_recent_entity_changes", {"limit": 1000})
            check(
                "recent entity changes list the crate and leave out the unreadable decision",
                any(c["slug"] == "component/turbine" for c in entity_changes["changes"])
                and not any(c["type"] == "decision" for c in entity_changes["changes"]),
                entity_changes,
            )
            _, found = await call(session, "knowledge_search", {"query": "turbine", "entity_types": ["component", "decision"], "include_text": True})
            check(
                "search returns entities of the asked types, each citing its own bytes, and never the unreadable decision",
                [r["entity"]["slug"] for r in found["results"]] == ["component/turbine"]
                and found["results"][0]["kind"] == "entity"
                and found["results"][0]["source"]["path"] == "Cargo.toml"
                and found["results"][0]["text"].startswith("[package]"),
                found,
            )
            await expect_error(session, "an unknown entity type in search", "knowledge_search", {"query": "x", "entity_types": ["class"]}, "unknown variant")
            await expect_error(session, "an unreadable entity", "knowledge_get_entity", {"slug": "decision/0001-turbine-plan"}, "no entity")
            await expect_error(session, "an unknown entity type", "knowledge_list_entities", {"type": "class"}, "unknown entity type")
            await expect_error(session, "entity arguments are strict", "knowledge_impact_plan", {"slug": "x", "depth": 2}, "unknown field `depth`")

            # Resolving a source for a purpose: its provenance, and nothing recorded by the server.
            _, resolved_source = await call(session, "knowledge_resolve_source", {"ref": "file://book/ownership.md"})
            provenance = resolved_source["provenance"]
            check(
                "resolve_source allows an unlabelled source, with its provenance",
                resolved_source["allowed"] and provenance["resolver"] == "project" and provenance["stale_status"] == "current"
                and provenance["source_owner"] == "mcp-fixture" and provenance["citation_required"],
                resolved_source,
            )
            _, memo = await call(session, "knowledge_resolve_source", {"ref": "open-files://memo", "purpose": "knowledge_index"})
            check(
                "resolve_source tells an ingested source's resolver, owner and upstream revision",
                (memo["provenance"]["resolver"], memo["provenance"]["source_owner"], memo["provenance"]["revision_id"])
                == ("open-files", "ops-drive", "r1"),
                memo,
            )
            await expect_error(session, "resolve an unreadable source", "knowledge_resolve_source", {"ref": "secret/plan.md"}, "no chunk or source matches")
            await expect_error(session, "resolve for an unknown purpose", "knowledge_resolve_source", {"ref": "book/ownership.md", "purpose": "gossip"}, "unknown purpose")

            # The design's other names: the compatibility tools answer as the tools they name, and web search
            # is off unless the server's operator allowed it.
            _, compat = await call(session, "ok_resolve_source", {"ref": "file://book/ownership.md"})
            check("ok_resolve_source answers as knowledge_resolve_source", compat == resolved_source, compat)
            _, ours = await call(session, "knowledge_search", {"query": "ownership rules", "mode": "keyword"})
            _, theirs = await call(session, "ok_search", {"query": "ownership rules", "mode": "keyword"})
            check("ok_search answers as knowledge_search", theirs == ours, theirs)
            _, reindex = await call(session, "ok_reindex_status", {})
            check("ok_reindex_status: no generation without embeddings", reindex == {"generations": []}, reindex)
            _, origin = await call(session, "knowledge_introduced", {"passage": "book/ownership.md#L3"})
            check(
                "introduced names the build that first held a line",
                origin["passages"][0]["introduced"]["run_id"] == runs["runs"][-1]["id"]
                and origin["passages"][0]["text"].startswith("Ownership is a set of rules"),
                origin,
            )
            _, loops = await call(session, "knowledge_proposals_context", {"topic": "ownership"})
            check("a loop's pack has the pack schema, and the server recorded no answer to show", loops["schema"] == "knowledge-agent-context-pack" and loops["items"] == [], loops)
            _, from_sources = await call(session, "knowledge_proposals_context", {"topic": "ownership rules", "from": "sources"})
            check("from sources it is the context pack", len(from_sources["items"]) > 0 and from_sources["items"][0]["ref"].startswith("file://book/ownership.md"), from_sources)
            await expect_error(session, "introduced never finds what the principal may not read", "knowledge_introduced", {"passage": "xenomorphic memory plan"}, "no source you may read holds the text")
            await expect_error(session, "web search is the operator's choice", "knowledge_web_search", {"query": "rust"}, "web search is off on this server")
            await expect_error(session, "ok_web_search keeps the same gate", "ok_web_search", {"query": "rust"}, "web search is off on this server")

            # Storage: the index and the artifacts, the same as the storage resource.
            _, stored = await call(session, "knowledge_storage", {})
            kinds = {k["kind"]: k["count"] for k in stored["artifacts"]}
            check("storage lists the artifacts by kind", kinds.get("page") == 1 and stored["size_bytes"] > 0, stored)
            check("storage objects carry their hashes", all(len(o["hash"]) == 32 for o in stored["objects"]), stored["objects"][:1])

            # The open-files manifest: what is ingested and indexed, without what no reader here may see.
            open_files = json.loads(await read_resource_text(session, "knowledge://project/open-files"))
            statuses = {f["id"]: f["status"] for f in open_files["files"]}
            check("open files tell ingested from not", statuses == {"memo": "indexed", "draft": "not_ingested"}, open_files)

            # Lint results stored by the build.
            _, linted = await call(session, "knowledge_lint", {})
            found = [(f["path"], f["line"], f["code"]) for f in linted["findings"]]
            check("lint results come from the last build", ("notes/broken.md", 3, "broken_link") in found, linted)
            check("lint results name the build that computed them", linted["run_id"] == runs["runs"][0]["id"], linted["run_id"])
            _, filtered = await call(session, "knowledge_lint", {"paths": ["book"], "severity": "error"})
            check("lint results filter by path and severity", filtered["findings"] == [], filtered)
            await expect_error(session, "bad severity", "knowledge_lint", {"severity": "catastrophic"}, "unknown variant")

            # Resources.
            config = await read_resource_text(session, "knowledge://project/config")
            check("config resource is the kc.toml", config == (PROJECT / "kc.toml").read_text())
            schema = await read_resource_text(session, "knowledge://project/schema")
            check("schema resource", "CREATE TABLE chunks" in schema)
            storage = json.loads(await read_resource_text(session, "knowledge://project/storage"))
            check("storage resource", storage["size_bytes"] > 0 and "wiki" in storage["layout"])
            listed = json.loads(await read_resource_text(session, "knowledge://project/sources"))
            check("sources resource", len(listed["sources"]) == stats["sources"] - len(notes))
            source = json.loads(await read_resource_text(session, "knowledge://source/book/ownership.md"))
            runs_resource = await read_resource_text(session, "knowledge://project/runs")
            check("the runs resource lists builds", "events" in runs_resource)
            check("source template", source["path"] == "book/ownership.md" and source["chunks"])
            run_id = runs["runs"][0]["id"]
            run = json.loads(await read_resource_text(session, f"knowledge://run/{run_id}"))
            check("run template", run["run"]["id"] == run_id and run["events"])
            # The wiki: pages and shards as listings, resources and get.
            _, pages = await call(session, "knowledge_list", {"kind": "pages"})
            slugs = [p["slug"] for p in pages["pages"]]
            check("list pages", slugs == ["understanding-ownership"] and stats["pages"] == 1, pages)
            _, indexes = await call(session, "knowledge_list", {"kind": "indexes"})
            check("list indexes", [i["section"] for i in indexes["indexes"]] == ["", "book"], indexes)
            pages_resource = json.loads(await read_resource_text(session, "knowledge://project/wiki/pages"))
            check("wiki pages resource", [p["slug"] for p in pages_resource["pages"]] == slugs, pages_resource)
            indexes_resource = json.loads(await read_resource_text(session, "knowledge://project/indexes"))
            check("indexes resource", len(indexes_resource["indexes"]) == 2, indexes_resource)
            page_text = await read_resource_text(session, "knowledge://wiki/understanding-ownership")
            check(
                "page template: the page's Markdown, citing its sources",
                "generated: true" in page_text and "file://book/borrowing.md" in page_text,
                page_text,
            )
            shard_text = await read_resource_text(session, "knowledge://index/book")
            check("index template: the section's shard", "Understanding Ownership" in shard_text, shard_text)
            root_text = await read_resource_text(session, "knowledge://index/root")
            check("index template: the root", "book" in root_text, root_text)
            listed = {r.uri: r for r in (await session.list_resources()).resources}
            check("list_resources offers llms.txt and the schema", {"knowledge://llms.txt", "knowledge://schema/v1"} <= set(listed), listed)
            check("llms.txt is plain text", listed["knowledge://llms.txt"].mime_type == "text/plain", listed["knowledge://llms.txt"])
            check(
                "list_resources offers each section's shards as their kinds say",
                listed["knowledge://index/book"].mime_type == "text/markdown"
                and listed["knowledge://index/book.json"].mime_type == "application/json",
                listed,
            )
            shard_json = json.loads(await read_resource_text(session, "knowledge://index/book.json"))
            check(
                "a section's JSON shard, joined from its pages' rows",
                shard_json["section"] == "book" and [p["slug"] for p in shard_json["pages"]] == slugs,
                shard_json,
            )
            llms_text = await read_resource_text(session, "knowledge://llms.txt")
            check(
                "llms.txt lists the page by section, with its file",
                "## book" in llms_text and "[Understanding Ownership](wiki/book/understanding-ownership.md)" in llms_text,
                llms_text,
            )
            _, got = await call(session, "knowledge_get", {"ref": "understanding-ownership"})
            check(
                "get a page by slug, with its backlinks",
                got["source"]["uri"] == "knowledge://wiki/understanding-ownership"
                and any(b["from_ref"] == "file://book/borrowing.md" for b in got["source"]["backlinks"]),
                got,
            )
            _, quoted = await call(session, "knowledge_get", {"ref": "file://book/ownership.md"})
            check("get a source names the pages that quote it", quoted["source"]["cited_by"] == ["knowledge://wiki/understanding-ownership"], quoted)

            try:
                await session.read_resource("knowledge://source/missing.md")
                check("a missing resource is an error", False)
            except MCPError as error:
                check("a missing resource is an error", "missing.md" in str(error), error)

            # Bad requests are errors, and the server keeps serving.
            await expect_error(session, "missing argument", "knowledge_search", {}, "missing field `query`")
            await expect_error(session, "wrong type", "knowledge_search", {"query": "x", "limit": "ten"}, "invalid type")
            await expect_error(session, "unknown argument", "knowledge_search", {"query": "x", "frobnicate": 1}, "unknown field `frobnicate`")
            await expect_error(session, "unknown enum value", "knowledge_list", {"kind": "everything"}, "unknown variant")
            await expect_error(session, "bad cursor", "knowledge_list", {"kind": "runs", "cursor": "nonsense"}, "invalid cursor")
            await expect_error(session, "unknown tool", "knowledge_frobnicate", {}, "not found")

            # Many requests at once.
            queries = ["ownership", "borrowing", "memory", "value", "reference", "scope", "rules", "stack"] * 3
            concurrent = await asyncio.gather(*(call(session, "knowledge_search", {"query": q, "mode": "keyword"}) for q in queries))
            check("concurrent searches all succeed", all(not r.is_error and a["results"] for r, a in concurrent))

            # A build while the server serves: the next answer sees it, without a restart.
            _, before = await call(session, "knowledge_search", {"query": "zyzzyva", "mode": "keyword"})
            check("the new word is not indexed yet", before["results"] == [])
            missing, _ = await call(session, "knowledge_get_entity", {"slug": "symbol/src/lib.rs#stall"})
            check("the new function is not an entity yet", missing.is_error, missing)
            (PROJECT / "book" / "new.md").write_text("# New chapter\n\nA zyzzyva is a weevil.\n")
            lib = PROJECT / "src" / "lib.rs"
            lib.write_text(lib.read_text() + "\npub fn stall() {}\n")
            build = subprocess.run([BINARY, "-C", str(PROJECT), "build", "--json"], capture_output=True, text=True)
            check("a build runs while the server serves", build.returncode == 0, build.stderr)
            _, after = await call(session, "knowledge_search", {"query": "zyzzyva", "mode": "keyword"})
            check("the next answer sees the new build", [h["source"]["path"] for h in after["results"]] == ["book/new.md"], after)
            _, changes = await call(session, "knowledge_recent_changes", {"runs": 1})
            check("recent changes show the new build", changes["changes"][0]["events"][0]["path"] == "book/new.md")
            # The server keeps one entity graph per build: the next entity answer is the new build's.
            _, stall = await call(session, "knowledge_get_entity", {"slug": "symbol/src/lib.rs#stall"})
            check("the next entity answer sees the new build", stall and stall["anchor"]["path"] == "src/lib.rs", stall)

            # The output folder deleted and rebuilt: a new index file, which the server must read from now on.
            shutil.rmtree(PROJECT / ".hasna")
            (PROJECT / "book" / "newer.md").write_text("# Newer chapter\n\nA quetzal is a bird.\n")
            rebuilt = subprocess.run([BINARY, "-C", str(PROJECT), "build", "--json"], capture_output=True, text=True)
            check("the index is rebuilt from scratch while serving", rebuilt.returncode == 0, rebuilt.stderr)
            _, fresh = await call(session, "knowledge_search", {"query": "quetzal", "mode": "keyword"})
            check("the server reads the new index file", [h["source"]["path"] for h in fresh["results"]] == ["book/newer.md"], fresh)

            index_digest, index_mtime = digest(INDEX), INDEX.stat().st_mtime_ns
            for query in queries:
                await call(session, "knowledge_search", {"query": query})
            await call(session, "knowledge_stats", {})
            await call(session, "knowledge_ask", {"question": "what is the memory plan for the ownership rules?"})
            await session.read_resource("knowledge://project/sources")

    leaks = [answer for answer in answers if SECRET in answer.lower() or "secret/plan.md" in answer]
    check(f"no answer ({len(answers)} checked) carries an unreadable source", not leaks and len(answers) > 50, leaks[:1])
    check("the server never wrote the index", digest(INDEX) == index_digest and INDEX.stat().st_mtime_ns == index_mtime)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(asyncio.run(main()))
