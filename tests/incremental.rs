//! In-process incrementality: one `Compiler` kept across builds, as a watch mode or server would keep it.
//! The summary's query counter comes from salsa's `WillExecute` events.

use knowledge::build::{BuildSummary, Compiler, Silent};
use knowledge::config::Project;

fn project(dir: &std::path::Path) -> Project {
    Project::load(&dir.join("kc.toml")).unwrap()
}

fn build(compiler: &mut Compiler, dir: &std::path::Path) -> BuildSummary {
    compiler.build(&project(dir), &Silent).unwrap()
}

/// A project in a new folder: its `kc.toml` and files.
fn fixture(config: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kc.toml"), config).unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    dir
}

#[test]
fn a_kept_compiler_reruns_only_the_edited_files_queries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kc.toml"), "version = 1\n").unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(root.join(format!("{name}.md")), format!("# {name}\n\nText of {name}.\n")).unwrap();
    }
    let mut compiler = Compiler::new();
    let first = build(&mut compiler, root);
    assert_eq!(
        first.queries.executed, 28,
        "parse, outline, chunks, lint_facts and concept_signals of three files, the catalog's parts, the \
         folders its files share and each held part's entries and what the plan reads of them alone (parts, \
         shared_folders, part_entries, part_sources: two parts, as the three paths hash), the plan, the \
         root of the index and its catalog row (sections, root_model, root_markdown, root_artifact) and \
         `llms.txt` (llms_stamp, llms_text): no concept has a page"
    );
    assert_eq!(first.sources.added, 3);

    let second = build(&mut compiler, root);
    assert_eq!(second.queries.executed, 0);
    assert!(!second.wrote);

    std::fs::write(root.join("b.md"), "# b\n\nText of b, edited.\n").unwrap();
    let third = build(&mut compiler, root);
    assert_eq!(
        third.queries.by_query,
        queries(&[("chunks", 1), ("concept_signals", 1), ("lint_facts", 1), ("outline", 1), ("parse", 1),]),
        "b's queries only: its signals' texts are unchanged, so the plan does not run again"
    );
    assert_eq!(third.sources.changed, 1);

    // A chunking change re-derives every source's rows; the kept database re-runs only `chunks`, since no
    // text changed and `parse` and `outline` do not read the settings.
    std::fs::write(root.join("kc.toml"), "version = 1\n[chunking]\ntarget_bytes = 100\noverlap_bytes = 10\n").unwrap();
    let fourth = build(&mut compiler, root);
    assert!(fourth.full_rebuild);
    assert_eq!(fourth.sources.changed, 3);
    assert_eq!(
        fourth.queries.by_query,
        queries(&[("chunks", 3)]),
        "chunks of a, b and c; each still fits one chunk, so their signals are not re-derived"
    );
}

/// Three sources: Alpha and Beta are linked from another source, so each gets a page; Gamma is not.
fn write_linked_sources(root: &std::path::Path) {
    std::fs::write(root.join("a.md"), "# Alpha\n\nAlpha leans on [[Beta]].\n").unwrap();
    std::fs::write(root.join("b.md"), "# Beta\n\nBeta stands alone.\n").unwrap();
    std::fs::write(root.join("c.md"), "# Gamma\n\nGamma cites [[Beta]] and [[Alpha]].\n").unwrap();
}

/// A project in a new folder with `config` as its `kc.toml` and the three linked sources.
fn linked_project(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kc.toml"), config).unwrap();
    write_linked_sources(dir.path());
    dir
}

/// What an edit inside b.md's body re-runs in a warm compiler: b.md's queries, the model and rendering of
/// the one page that quotes it (Beta's, which is parsed and chunked as a source), and the one shard that
/// lists Beta (its row shows the page's new summary); not the plan, not the root.
const BETA_BODY_EDIT: &[(&str, u64)] = &[
    ("chunks", 2),
    ("concept_signals", 1),
    ("lint_facts", 1),
    // Beta's summary is its first sentence, so `llms.txt`'s stamp (its rows' digests), its entry for Beta and
    // its list change too.
    ("llms_entry", 1),
    ("llms_stamp", 1),
    ("llms_text", 1),
    ("outline", 2),
    ("page_artifact", 1),
    ("page_model", 1),
    ("page_model_hash", 1),
    ("page_text_hash", 1),
    ("parse", 2),
    ("render_page", 1),
    ("shard_artifact", 1),
    ("shard_entries", 1),
    ("shard_json", 1),
    ("shard_json_artifact", 1),
    ("shard_markdown", 1),
    ("shard_rows", 1),
    ("shard_rows_hash", 1),
];

/// The same edit in a new process, which sets every page row as an input: the sections, the one section's
/// pages and count, the root (a declared artifact: its Markdown and catalog row, whose hash is compared with
/// the stored one) and each of the three pages' `llms.txt` entries are derived too.
fn beta_body_edit_in_a_new_process() -> std::collections::BTreeMap<String, u64> {
    let mut counts = queries(BETA_BODY_EDIT);
    counts.extend(queries(&[
        ("llms_entry", 3),
        ("root_model", 1),
        ("root_markdown", 1),
        ("root_artifact", 1),
        ("sections", 1),
        ("section_pages", 1),
        ("shard_page_count", 1),
    ]));
    counts
}

fn queries(counts: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    counts.iter().map(|(name, n)| ((*name).to_string(), *n)).collect()
}

#[test]
fn a_kept_compiler_rerenders_only_the_pages_an_edit_touches() {
    let dir = linked_project("version = 1\n[wiki]\ntemplates_dir = \"my-templates\"\n");
    let root = dir.path();
    let mut compiler = Compiler::new();
    let first = build(&mut compiler, root);
    assert_eq!(first.pages.rendered, 2, "Alpha and Beta are linked from another source; Gamma is not");
    assert_eq!(first.queries.by_query["render_page"], 2);

    // Beta's body changes: only the page that quotes b.md is rendered again; b.md and the page are parsed
    // and chunked, nothing else.
    std::fs::write(root.join("b.md"), "# Beta\n\nBeta stands alone, mostly.\n").unwrap();
    let second = build(&mut compiler, root);
    assert_eq!(
        second.queries.by_query,
        queries(BETA_BODY_EDIT),
        "b.md's queries, and the model and rendering of the one page that quotes it; not the plan"
    );
    assert_eq!(second.pages.rendered, 1);
    assert_eq!((second.pages.written, second.pages.unchanged), (1, 1));

    // A line below the quote: the page changes only in the revision it cites, so it is written, its text
    // the stored one with the revision replaced: not rendered, parsed or chunked again (its source row is the
    // stored one, restamped).
    std::fs::write(root.join("b.md"), "# Beta\n\nBeta stands alone, mostly.\n\nA line below.\n").unwrap();
    let below = build(&mut compiler, root);
    assert_eq!((below.pages.rendered, below.pages.written), (1, 1));
    let ran = |query: &str| below.queries.by_query.get(query).copied().unwrap_or(0);
    assert_eq!(
        (ran("parse"), ran("chunks"), ran("render_page")),
        (1, 1, 0),
        "b.md's alone: {:?}",
        below.queries.by_query
    );
    let page = std::fs::read_to_string(root.join(".hasna/knowledge/wiki/general/beta.md")).unwrap();
    let revision = knowledge_queries::content_hash(&std::fs::read(root.join("b.md")).unwrap());
    assert!(page.contains(&revision), "the page cites b.md's new revision:\n{page}");

    // A template edit renders every page again and re-derives no source.
    std::fs::create_dir_all(root.join("my-templates")).unwrap();
    std::fs::write(root.join("my-templates/page.md.j2"), "---\ngenerated: true\n---\n# {{ title }}\n").unwrap();
    let third = build(&mut compiler, root);
    assert!(!third.full_rebuild);
    assert_eq!(third.sources.changed + third.sources.added, 0);
    assert_eq!(third.chunks.computed, 0, "no source chunk is computed again");
    assert_eq!(third.pages.rendered, 2);
    // Both pages are derived ahead of their stores, across the cores, and each store finds its page
    // rendered and its own source row's chunks made: each once.
    assert_eq!(third.queries.by_query["render_page"], 2);
    assert_eq!(third.queries.by_query["chunks"], 2, "{:?}", third.queries.by_query);
    assert!(!third.queries.by_query.contains_key("concept_signals"), "{:?}", third.queries.by_query);
    let page = std::fs::read_to_string(root.join(".hasna/knowledge/wiki/general/beta.md")).unwrap();
    assert_eq!(page, "---\ngenerated: true\n---\n# Beta\n");
}

#[test]
fn a_warmed_up_compiler_starts_an_edit_as_warm_as_the_one_that_built() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kc.toml"), "version = 1\n").unwrap();
    write_linked_sources(root);
    // Delta's page shares no source with the others.
    std::fs::create_dir(root.join("other")).unwrap();
    std::fs::write(root.join("other/d.md"), "# Delta\n\nDelta keeps to itself.\n").unwrap();
    std::fs::write(root.join("other/e.md"), "# Epsilon\n\nEpsilon reads [[Delta]].\n").unwrap();
    build(&mut Compiler::new(), root);

    // A new process (as `--watch` starting on a built index): its first build is a no-op, and reads
    // nothing of the wiki; warming up reads the catalog then, not during the next edit.
    let mut compiler = Compiler::new();
    assert!(!build(&mut compiler, root).wrote);
    compiler.warm_up(&project(root)).unwrap();
    std::fs::write(root.join("b.md"), "# Beta\n\nBeta stands alone, mostly.\n").unwrap();
    let edit = build(&mut compiler, root);
    assert_eq!(
        edit.queries.by_query,
        queries(BETA_BODY_EDIT),
        "b.md's queries and Beta's page, as in the compiler that built the index: no plan"
    );

    // Without the warm-up the same edit, which leaves the plan as it was, does not plan either: the page
    // that quotes b.md is modelled from the view the index stores.
    std::fs::write(root.join("b.md"), "# Beta\n\nBeta stands alone, at last.\n").unwrap();
    let edit = build(&mut Compiler::new(), root);
    assert_eq!(edit.queries.by_query, beta_body_edit_in_a_new_process(), "a new process: no plan");
    assert_eq!(edit.pages.rendered, 1);

    // An edit below the quote, which leaves the page's index row as it was (its summary is the first
    // sentence): a new process makes the section's JSON again from the stored rows' parts, and reads no row
    // to render the section's Markdown; `llms.txt`'s stamp, made of the rows' digests, is as it was, so no
    // page's entry is read and the list is not made. The page's model differs from the stored one only in the
    // revision it cites, so its text is the stored one with that revision replaced (not rendered) and its
    // source row the stored one restamped (not parsed or chunked).
    std::fs::write(
        root.join("b.md"),
        "# Beta

Beta stands alone, at last.

A second paragraph.
",
    )
    .unwrap();
    let edit = build(&mut Compiler::new(), root);
    let mut expected = beta_body_edit_in_a_new_process();
    for rendered in ["shard_artifact", "shard_entries", "shard_markdown", "shard_rows", "llms_entry", "llms_text"] {
        expected.remove(rendered);
    }
    expected.extend(queries(&[("parse", 1), ("outline", 1), ("chunks", 1)]));
    expected.remove("render_page");
    expected.remove("page_artifact");
    assert_eq!(edit.queries.by_query, expected, "a new process: the JSON, not the Markdown");
    assert_eq!((edit.pages.rendered, edit.shards.rendered), (1, 1), "one shard file made again: the JSON");

    // An edit that changes what the planner reads (a new wikilink) reads the catalog and plans.
    std::fs::write(root.join("b.md"), "# Beta\n\nBeta stands alone, unlike [[Gamma]].\n").unwrap();
    let edit = build(&mut Compiler::new(), root);
    assert_eq!(edit.queries.by_query.get("planned_pages"), Some(&1), "{:?}", edit.queries.by_query);
    // The plan changed, but Delta's page has the view the index stores and names no changed source: it is
    // taken as unchanged without hashing its model (Alpha's, Beta's and the new Gamma's are hashed).
    assert_eq!(edit.queries.by_query.get("page_model_hash"), Some(&3), "{:?}", edit.queries.by_query);
    assert_eq!((edit.pages.rendered, edit.pages.unchanged), (3, 1));
}

#[test]
fn a_replan_remakes_what_it_reads_of_the_edited_sources_part_alone() {
    let dir = linked_project("version = 1\n");
    let root = dir.path();
    let mut compiler = Compiler::new();
    build(&mut compiler, root);
    let ran = |summary: &BuildSummary, query: &str| summary.queries.by_query.get(query).copied().unwrap_or(0);
    let keyed = |summary: &BuildSummary| {
        (
            ran(summary, "parts"),
            ran(summary, "part_entries") > 0,
            ran(summary, "part_sources"),
            ran(summary, "planned_pages"),
        )
    };

    // A new wikilink plans again and makes the keys of a.md's part alone.
    std::fs::write(root.join("a.md"), "# Alpha\n\nAlpha leans on [[Beta]] and [[Gamma]].\n").unwrap();
    let link = build(&mut compiler, root);
    assert_eq!(keyed(&link), (0, false, 1, 1), "{:?}", link.queries.by_query);
    let gamma = std::fs::read_to_string(root.join(".hasna/knowledge/wiki/general/gamma.md")).unwrap();
    assert!(gamma.contains("a.md"), "Gamma's page, new, cites the source that links it:\n{gamma}");

    // A new title is a new name a wikilink may use: still only b.md's part's keys are made again, and the
    // plan looks the others' up against the new names.
    std::fs::write(root.join("b.md"), "# Bravo\n\nBeta stands alone.\n").unwrap();
    let title = build(&mut compiler, root);
    assert_eq!(keyed(&title), (0, false, 1, 1), "{:?}", title.queries.by_query);

    // A new file changes the parts: each held part's entries are listed again, and only the part that gains
    // the file makes its keys.
    std::fs::write(root.join("d.md"), "# Delta\n\nDelta reads [[Alpha]].\n").unwrap();
    let added = build(&mut compiler, root);
    assert_eq!(keyed(&added), (1, true, 1, 1), "{:?}", added.queries.by_query);
}

/// With `[lint] on_build`, lint is part of the graph: an edit re-checks its own file, and the files that link
/// what it changed (a title a wikilink names), not the rest.
#[test]
fn a_kept_compiler_relints_only_what_an_edit_reaches() {
    let dir = fixture(
        "version = 1\n[wiki]\nenabled = false\n[lint]\non_build = true\n",
        &[
            ("a.md", "# Alpha\n\nSee [[Beta]] and [its setup](b.md#setup).\n"),
            ("b.md", "# Beta\n\n## Setup\n\nSteps.\n"),
            ("c.md", "# Gamma\n\nSee [[Delta]].\n"),
            ("d.md", "# Delta\n\nAlone.\n"),
        ],
    );
    let root = dir.path();
    let mut compiler = Compiler::new();
    let first = build(&mut compiler, root);
    assert_eq!(first.queries.by_query["file_lint"], 4);
    assert_eq!(first.lint.as_ref().map(|l| (l.errors, l.warnings)), Some((0, 0)));

    std::fs::write(root.join("b.md"), "# Beta\n\n## Setup\n\nSteps, edited.\n").unwrap();
    let edited = build(&mut compiler, root);
    assert_eq!(edited.queries.by_query.get("file_lint"), None, "b's facts are unchanged: nothing to check");

    std::fs::write(root.join("b.md"), "# Beta\n\n## Setup\n\nSteps, see [Delta](d.md).\n").unwrap();
    let linked = build(&mut compiler, root);
    assert_eq!(linked.queries.by_query["file_lint"], 1, "b only: what a links in b is unchanged");

    std::fs::write(root.join("b.md"), "# Bravo\n\n## Setup\n\nSteps, see [Delta](d.md).\n").unwrap();
    let renamed = build(&mut compiler, root);
    assert_eq!(renamed.queries.by_query["file_lint"], 2, "b, and a, whose [[Beta]] no longer resolves; not c or d");
    assert_eq!(renamed.lint.as_ref().map(|l| l.warnings), Some(1));
}

#[test]
fn a_kept_compiler_embeds_only_what_an_edit_derived() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = |dimensions: u32| {
        format!("version = 1\n[wiki]\nenabled = false\n[embeddings]\nprovider = \"fake\"\ndimensions = {dimensions}\n")
    };
    std::fs::write(root.join("kc.toml"), config(8)).unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(root.join(format!("{name}.md")), format!("# {name}\n\nText of {name}.\n")).unwrap();
    }
    let mut compiler = Compiler::new();
    let first = build(&mut compiler, root);
    assert_eq!(first.queries.by_query["source_needs"], 3);
    assert_eq!(first.embeddings.as_ref().map(|e| (e.computed, e.checked)), Some((3, 3)));

    std::fs::write(root.join("b.md"), "# b\n\nText of b, edited.\n").unwrap();
    let edited = build(&mut compiler, root);
    assert_eq!(edited.queries.by_query["source_needs"], 1, "b only: the generation was complete before the build");
    assert_eq!(edited.embeddings.as_ref().map(|e| (e.computed, e.checked)), Some((1, 1)));

    // A copy of a: its chunk needs an entry, and a's vector serves it.
    std::fs::write(root.join("d.md"), "# a\n\nText of a.\n").unwrap();
    let copied = build(&mut compiler, root);
    assert_eq!(copied.queries.by_query["source_needs"], 1);
    assert_eq!(copied.embeddings.as_ref().map(|e| (e.computed, e.reused)), Some((0, 1)));

    assert!(!build(&mut compiler, root).queries.by_query.contains_key("source_needs"), "a no-op embeds nothing");

    // Another generation: every source is in scope and lacks an entry. d's inputs are as the last stage
    // read them (its chunk, no ready entry), so its needs are not derived again.
    std::fs::write(root.join("kc.toml"), config(16)).unwrap();
    let regenerated = build(&mut compiler, root);
    assert_eq!(regenerated.queries.by_query["source_needs"], 3);
    assert_eq!(regenerated.embeddings.as_ref().map(|e| (e.computed, e.reused, e.checked)), Some((3, 1, 4)));
}

/// The sources the index file alone holds, without its write-ahead log: what a copy of `knowledge.db`
/// made without the log would hold.
fn sources_in_the_file_alone(index: &std::path::Path) -> i64 {
    let copy = tempfile::tempdir().unwrap();
    let alone = copy.path().join("knowledge.db");
    std::fs::copy(index, &alone).unwrap();
    let conn = rusqlite::Connection::open(&alone).unwrap();
    match conn.query_row("SELECT count(*) FROM sources WHERE path NOT LIKE '%://%'", [], |row| row.get(0)) {
        Ok(count) => count,
        // The file of a first build whose commit is still all in the log holds no tables yet.
        Err(error) if error.to_string().contains("no such table") => 0,
        Err(error) => panic!("{error}"),
    }
}

#[test]
fn a_watch_compiler_checkpoints_after_its_build_and_a_plain_one_at_its_close() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kc.toml"), "version = 1\n").unwrap();
    std::fs::write(root.join("a.md"), "# Alpha\n\nText of alpha.\n").unwrap();
    let index = root.join(".hasna/knowledge/knowledge.db");

    let mut watching = Compiler::watching();
    build(&mut watching, root);
    // Committed, so every reader sees it, but still in the log: the file alone does not hold it yet.
    let reader = knowledge::store::open_read_only(&index).unwrap();
    let seen: i64 = reader.query_row("SELECT count(*) FROM sources WHERE path = 'a.md'", [], |r| r.get(0)).unwrap();
    assert_eq!(seen, 1);
    drop(reader);
    assert_eq!(sources_in_the_file_alone(&index), 0);
    watching.checkpoint(&project(root)).unwrap();
    assert_eq!(sources_in_the_file_alone(&index), 1, "the checkpoint copied the build into the file");

    // The watch compiler keeps its connection to the index between builds; a plain build's close
    // checkpoints once it is the last connection.
    drop(watching);
    std::fs::write(root.join("b.md"), "# Beta\n\nText of beta.\n").unwrap();
    build(&mut Compiler::new(), root);
    assert_eq!(sources_in_the_file_alone(&index), 2, "a plain build's close checkpoints");
    // A plain compiler has no checkpoint of its own to run: it does not even open the index, which a
    // watch compiler's checkpoint needs.
    std::fs::remove_dir_all(root.join(".hasna")).unwrap();
    Compiler::new().checkpoint(&project(root)).unwrap();
    assert!(Compiler::watching().checkpoint(&project(root)).is_err(), "no index to checkpoint");
}

#[test]
fn a_watch_compiler_opens_an_index_put_in_place_of_the_one_it_kept() {
    let alpha = ("a.md", "# Alpha\n\nText of alpha.\n");
    let dir = fixture("version = 1\n", &[alpha, ("b.md", "# Beta\n\nText of beta.\n")]);
    let root = dir.path();
    let output = root.join(".hasna/knowledge");
    let mut watching = Compiler::watching();
    assert_eq!(build(&mut watching, root).sources.added, 2);
    assert_eq!(build(&mut watching, root).sources.unchanged, 2, "a second build over the kept connection");

    // The index removed (its log too) while the watch runs: the next build makes a new one, whole.
    for file in ["knowledge.db", "knowledge.db-wal", "knowledge.db-shm"] {
        let _ = std::fs::remove_file(output.join(file));
    }
    let rebuilt = build(&mut watching, root);
    assert_eq!((rebuilt.sources.added, rebuilt.sources.unchanged), (2, 0));

    // An index from elsewhere put in its place (as `knowledge pull` does): the build reads that one.
    let elsewhere = fixture("version = 1\n", &[alpha]);
    build(&mut Compiler::new(), elsewhere.path());
    std::fs::copy(elsewhere.path().join(".hasna/knowledge/knowledge.db"), output.join("knowledge.db.new")).unwrap();
    for file in ["knowledge.db-wal", "knowledge.db-shm"] {
        let _ = std::fs::remove_file(output.join(file));
    }
    std::fs::rename(output.join("knowledge.db.new"), output.join("knowledge.db")).unwrap();
    let over = build(&mut watching, root);
    assert_eq!((over.sources.added, over.sources.unchanged), (1, 1), "b.md is new to that index, a.md is not");
    let reader = knowledge::store::open_read_only(&output.join("knowledge.db")).unwrap();
    let sources: i64 =
        reader.query_row("SELECT count(*) FROM sources WHERE path IN ('a.md', 'b.md')", [], |r| r.get(0)).unwrap();
    assert_eq!(sources, 2);
}

/// A watch compiler reads what the index holds of every source between builds (`warm_up`), and the next
/// build starts from it; a commit of another connection in between (another process's build) makes that
/// build read it again, so the index stays the record whoever wrote it.
#[test]
fn a_watch_compiler_reads_the_index_again_after_another_process_wrote_it() {
    let dir =
        fixture("version = 1\n", &[("a.md", "# Alpha\n\nText of alpha.\n"), ("b.md", "# Beta\n\nText of beta.\n")]);
    let root = dir.path();
    let mut watching = Compiler::watching();
    assert_eq!(build(&mut watching, root).sources.added, 2);
    watching.warm_up(&project(root)).unwrap();
    let again = build(&mut watching, root);
    assert_eq!((again.sources.unchanged, again.wrote), (2, false), "from the state read ahead");

    watching.warm_up(&project(root)).unwrap();
    // Another process indexes an edit of b.md after the watch read the index ahead.
    std::fs::write(root.join("b.md"), "# Beta\n\nText of beta, edited.\n").unwrap();
    assert_eq!(build(&mut Compiler::new(), root).sources.changed, 1);
    let after = build(&mut watching, root);
    assert_eq!(
        (after.sources.changed, after.sources.unchanged, after.wrote),
        (0, 2, false),
        "the other process's edit is in the index: nothing is left to write"
    );
}

/// A fresh process whose edit leaves the plan as it was reads, of the sources its pages name, only the
/// signals their views name (`store::named_sources`): each must be the signal a whole read of the catalog
/// makes, ranked by place among all of its source's signals as the planner ranks it.
#[test]
fn the_signals_a_seeded_edit_reads_equal_a_whole_reads() {
    // Signals out of place order: the title and the alias come first, a term used often stands at its
    // first use, links and headings in between.
    let text = "---\naliases: [Heap]\n---\n# Memory\n\nThe **allocator** hands out memory. See [arenas](arenas.md).\n\n\
                ## Arenas\n\nAn *arena* frees at once. The allocator, the allocator, the allocator again.\n\n\
                ## Pools\n\nA **pool** keeps blocks of one size. [[arenas]] compare.\n";
    let dir = fixture(
        "version = 1\n",
        &[("memory.md", text), ("arenas.md", "# Arenas\n\nAn **arena** frees everything at once.\n")],
    );
    build(&mut Compiler::new(), dir.path());
    let conn =
        knowledge::store::open_read_only(&project(dir.path()).output_dir().join(knowledge::store::DB_FILE)).unwrap();

    let whole = knowledge::store::catalog_rows(&conn, None, None).unwrap();
    let memory = whole.into_iter().find(|row| row.path == "memory.md").unwrap();
    let (plan_signals, excerpts) = memory.signals;
    let count = plan_signals.len() as u32;
    assert!(count >= 6, "the fixture gives signals to pick from: {plan_signals:?}");
    let revision = memory.revision.clone();
    // Every stored place is the planner's own ranking of the whole source's signals by excerpt start.
    assert!(plan_signals.iter().enumerate().any(|(at, s)| s.order != at as u32), "places differ from indexes");
    let ranks = knowledge_queries::wiki::place_ranks(excerpts.iter().map(|excerpt| excerpt.start));
    assert_eq!(plan_signals.iter().map(|s| s.order).collect::<Vec<_>>(), ranks, "the stored places");
    for signal in &plan_signals {
        let (key, folded) = knowledge_queries::wiki::concept_keys(signal.label());
        assert_eq!(
            (signal.key(), signal.folded()),
            (key.as_str(), folded.as_str()),
            "the keys of {:?}",
            signal.label()
        );
    }
    let picked: std::collections::BTreeSet<u32> = [1, 3, count - 1].into();
    let past_the_end = picked.iter().copied().chain([count]).collect();
    let wanted = [("memory.md".to_string(), past_the_end), ("arenas.md".to_string(), Default::default())].into();

    let named = knowledge::store::named_sources(&conn, None, &wanted).unwrap();
    assert_eq!(named.len(), 2);
    let listed = named.iter().find(|source| source.row.path == "arenas.md").unwrap();
    assert!(listed.signals.is_empty(), "a source only listed reads no signal");
    let quoted = named.into_iter().find(|source| source.row.path == "memory.md").unwrap();
    assert_eq!(quoted.row.revision, revision);
    let read: std::collections::BTreeSet<u32> = quoted.signals.iter().map(|(at, ..)| *at).collect();
    assert_eq!(read, picked, "the signals asked for, and none past the last");
    for (at, plan, excerpt) in quoted.signals {
        assert_eq!((&plan, &excerpt), (&plan_signals[at as usize], &excerpts[at as usize]), "signal {at}");
    }
}

/// A page that comes to one section leaves the other sections' shards alone: each section's count, hash and
/// JSON are made again only for the section whose pages changed.
#[test]
fn a_page_added_to_one_section_leaves_the_others_shards_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kc.toml"), "version = 1\n").unwrap();
    for (folder, concept) in [("alpha", "Foo"), ("beta", "Bar")] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        for n in 1..=2 {
            let note = format!("# {folder} {n}\n\nSee [[{concept}]].\n");
            std::fs::write(root.join(format!("{folder}/{n}.md")), note).unwrap();
        }
    }
    let mut compiler = Compiler::new();
    let first = build(&mut compiler, root);
    assert_eq!(first.queries.by_query["shard_json"], 2, "two sections: {:?}", first.queries.by_query);

    for n in 3..=4 {
        std::fs::write(root.join(format!("alpha/{n}.md")), format!("# alpha {n}\n\nSee [[Qux]].\n")).unwrap();
    }
    let second = build(&mut compiler, root);
    assert_eq!(second.pages.rendered, 1, "the page Qux, in alpha");
    for query in ["shard_json", "shard_page_count", "shard_rows_hash"] {
        assert_eq!(second.queries.by_query.get(query), Some(&1), "alpha's only: {:?}", second.queries.by_query);
    }
}

/// A quote that holds the revision another quote on its page cites (a note naming a file's hash): when that
/// file is edited below its quote, the page is rendered again rather than kept with the revision replaced,
/// which would also rewrite the quoted words; the page equals a clean build's.
#[test]
fn a_quote_that_holds_a_cited_revision_keeps_its_words_when_the_revision_changes() {
    let beta = "# Beta\n\nBeta stands alone.\n";
    let old = knowledge_queries::content_hash(beta.as_bytes());
    let files = [
        ("a.md", format!("# Alpha\n\nAlpha leans on [[Beta]], whose file hashes to {old}.\n")),
        ("b.md", beta.to_string()),
        ("c.md", "# Gamma\n\nGamma cites [[Beta]] and [[Alpha]].\n".to_string()),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(path, text)| (*path, text.as_str())).collect();
    let dir = fixture("version = 1\n", &files);
    let page_path = dir.path().join(".hasna/knowledge/wiki/general/beta.md");
    build(&mut Compiler::new(), dir.path());
    let before = std::fs::read_to_string(&page_path).unwrap();
    assert!(before.contains(&format!("whose file hashes to {old}")), "the page quotes the hash:\n{before}");

    let edited = format!("{beta}\nA line below.\n");
    std::fs::write(dir.path().join("b.md"), &edited).unwrap();
    let edit = build(&mut Compiler::new(), dir.path());
    assert_eq!(edit.queries.by_query.get("render_page"), Some(&1), "rendered, not kept: {:?}", edit.queries.by_query);
    let after = std::fs::read_to_string(&page_path).unwrap();
    let new = knowledge_queries::content_hash(edited.as_bytes());
    assert!(after.contains(&format!("whose file hashes to {old}")), "the quoted words as written:\n{after}");
    assert!(after.contains(&format!("at revision `{new}`")), "b.md's footnote cites its new revision:\n{after}");

    let clean = fixture("version = 1\n", &[("a.md", files[0].1), ("b.md", &edited), ("c.md", files[2].1)]);
    build(&mut Compiler::new(), clean.path());
    let clean_page = std::fs::read_to_string(clean.path().join(".hasna/knowledge/wiki/general/beta.md")).unwrap();
    assert_eq!(after, clean_page);
}

/// The generated files under a project's output folder (pages, shards, the root, `llms.txt`), by path: not
/// the index, the build log, the lock or the stat cache, which hold runs and times.
fn outputs(root: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    fn walk(
        folder: &std::path::Path,
        output: &std::path::Path,
        files: &mut std::collections::BTreeMap<String, String>,
    ) {
        for entry in std::fs::read_dir(folder).unwrap().map(Result::unwrap) {
            let path = entry.path();
            let name = path.strip_prefix(output).unwrap().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                if name != "logs" {
                    walk(&path, output, files);
                }
            } else if ["md", "json", "txt"].iter().any(|e| path.extension().is_some_and(|x| x == *e)) {
                files.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let output = root.join(".hasna/knowledge");
    let mut files = std::collections::BTreeMap::new();
    walk(&output, &output, &mut files);
    files
}

#[test]
fn a_phrase_whose_concept_nothing_names_leaves_the_plan_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kc.toml"), "version = 1\n").unwrap();
    write_linked_sources(dir.path());
    build(&mut Compiler::new(), dir.path());
    let index = dir.path().join(".hasna/knowledge/knowledge.db");
    let copy = tempfile::tempdir().unwrap();

    // A phrase used twice is a term of b.md, its concept named by no source: a new process seeds the pages
    // that list b.md from their stored views instead of planning again.
    let phrase = "\nThe zorblax ledger grows. The zorblax ledger shrinks.\n";
    let edited = format!("# Beta\n\nBeta stands alone.\n{phrase}");
    std::fs::write(dir.path().join("b.md"), &edited).unwrap();
    for name in ["kc.toml", "a.md", "b.md", "c.md"] {
        std::fs::copy(dir.path().join(name), copy.path().join(name)).unwrap();
    }
    std::fs::create_dir_all(copy.path().join(".hasna/knowledge")).unwrap();
    std::fs::copy(&index, copy.path().join(".hasna/knowledge/knowledge.db")).unwrap();
    let edit = build(&mut Compiler::new(), dir.path());
    assert_eq!(edit.queries.by_query.get("planned_pages"), None, "not planned again: {:?}", edit.queries.by_query);
    assert_eq!(edit.queries.by_query.get("concept_signals"), Some(&1));

    // Without the stored plan's named keys the same edit plans again: the phrase is a new signal.
    let conn = rusqlite::Connection::open(copy.path().join(".hasna/knowledge/knowledge.db")).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'plan_named_keys'", []).unwrap();
    drop(conn);
    let unknown = build(&mut Compiler::new(), copy.path());
    assert_eq!(unknown.queries.by_query.get("planned_pages"), Some(&1), "{:?}", unknown.queries.by_query);

    let clean = fixture(
        "version = 1\n",
        &[
            ("a.md", "# Alpha\n\nAlpha leans on [[Beta]].\n"),
            ("b.md", &edited),
            ("c.md", "# Gamma\n\nGamma cites [[Beta]] and [[Alpha]].\n"),
        ],
    );
    build(&mut Compiler::new(), clean.path());
    assert_eq!(outputs(dir.path()), outputs(clean.path()));
    assert_eq!(outputs(copy.path()), outputs(clean.path()));

    // A term whose concept a source names (Alpha, a title) is read by the plan: it plans again.
    std::fs::write(dir.path().join("b.md"), format!("{edited}\nAlpha, alpha and alpha again.\n")).unwrap();
    let named = build(&mut Compiler::new(), dir.path());
    assert_eq!(named.queries.by_query.get("planned_pages"), Some(&1), "{:?}", named.queries.by_query);
}

#[test]
fn a_term_the_plan_reads_that_moved_in_its_list_is_quoted_where_it_went() {
    // b.md uses "alpha" three times, a term of a concept a.md's title names: Alpha's page quotes it there.
    let alpha = "# Alpha\n\nAlpha leans on [[Beta]].\n";
    let gamma = "# Gamma\n\nGamma cites [[Beta]] and [[Alpha]].\n";
    let beta = "# Beta\n\nBeta stands alone.\n\nThe alpha part, the alpha piece, the alpha bit.\n";
    let dir = fixture("version = 1\n", &[("a.md", alpha), ("b.md", beta), ("c.md", gamma)]);
    build(&mut Compiler::new(), dir.path());
    let page = dir.path().join(".hasna/knowledge/wiki/general/alpha.md");
    assert!(std::fs::read_to_string(&page).unwrap().contains("the alpha piece"), "b.md is quoted on Alpha's page");

    // A word used more often than "alpha", whose concept nothing names, comes first in b.md's terms: the
    // plan reads the same signals, "alpha" one place further down the list.
    let edited = format!("{beta}\nZorblax, zorblax, zorblax and zorblax again.\n");
    std::fs::write(dir.path().join("b.md"), &edited).unwrap();
    let edit = build(&mut Compiler::new(), dir.path());
    assert_eq!(edit.queries.by_query.get("planned_pages"), None, "not planned again: {:?}", edit.queries.by_query);
    assert_eq!(edit.queries.by_query.get("render_page"), Some(&1), "Alpha's view names the moved term anew");

    let clean = fixture("version = 1\n", &[("a.md", alpha), ("b.md", &edited), ("c.md", gamma)]);
    build(&mut Compiler::new(), clean.path());
    assert_eq!(outputs(dir.path()), outputs(clean.path()));
}
