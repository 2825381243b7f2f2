//! Query-level tests: chunking behaviour and incrementality, observed through salsa's `WillExecute` events.

use std::sync::{Arc, Mutex};

use salsa::plumbing::AsId;
use salsa::{Database, Durability, Setter};

use crate::{ChunkingSettings, Db, SourceFile, chunks, outline};

/// A database that records which queries executed, by query name and key.
#[salsa::db]
#[derive(Clone)]
struct TestDb {
    storage: salsa::Storage<Self>,
    executed: Arc<Mutex<Vec<salsa::DatabaseKeyIndex>>>,
}

#[salsa::db]
impl salsa::Database for TestDb {}

#[salsa::db]
impl Db for TestDb {}

impl TestDb {
    fn new(target_bytes: u32, overlap_bytes: u32) -> Self {
        let executed = Arc::new(Mutex::new(Vec::new()));
        let log = executed.clone();
        let db = TestDb {
            storage: salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
                if let salsa::EventKind::WillExecute { database_key } = event.kind {
                    log.lock().unwrap().push(database_key);
                }
            }))),
            executed,
        };
        let _settings = ChunkingSettings::builder(target_bytes, overlap_bytes).durability(Durability::HIGH).new(&db);
        db
    }

    fn file(&self, path: &str, text: &str) -> SourceFile {
        SourceFile::new(self, path.to_string(), crate::content_hash(text.as_bytes()), text.to_string())
    }

    /// The queries that executed since the last call, as `name(path)`, sorted.
    fn take_executed(&self, files: &[SourceFile]) -> Vec<String> {
        self.take_executed_by(|id| files.iter().find(|f| f.as_id() == id).map(|f| f.path(self).clone()))
    }

    /// The queries that executed since the last call, as `name(key)` where `key_name` names the key, or
    /// `name` alone, sorted.
    fn take_executed_by(&self, key_name: impl Fn(salsa::Id) -> Option<String>) -> Vec<String> {
        let keys = std::mem::take(&mut *self.executed.lock().unwrap());
        let mut names: Vec<String> = keys
            .into_iter()
            .map(|key| {
                let name = self.ingredient_debug_name(key.ingredient_index()).to_string();
                match key_name(key.key_index()) {
                    Some(key) => format!("{name}({key})"),
                    None => name,
                }
            })
            .collect();
        names.sort();
        names
    }
}

fn edit(db: &mut TestDb, file: SourceFile, text: &str) {
    file.set_revision(db).to(crate::content_hash(text.as_bytes()));
    file.set_text(db).to(text.to_string());
}

/// The text of each chunk, with its heading path.
fn chunk_texts(db: &TestDb, file: SourceFile) -> Vec<(String, String)> {
    let text = file.text(db);
    chunks(db, file)
        .iter()
        .map(|c| (c.heading_path.join(" > "), text[c.start as usize..c.end as usize].to_string()))
        .collect()
}

#[test]
fn chunks_split_at_headings_and_carry_the_heading_path() {
    let db = TestDb::new(1000, 0);
    let text = "# Guide\n\nIntro text.\n\n## Install\n\nRun it.\n\n### Linux\n\nUse apt.\n\n## Use\n\nCall it.\n";
    let file = db.file("guide.md", text);
    assert_eq!(
        chunk_texts(&db, file),
        vec![
            ("Guide".to_string(), "# Guide\n\nIntro text.".to_string()),
            ("Guide > Install".to_string(), "## Install\n\nRun it.".to_string()),
            ("Guide > Install > Linux".to_string(), "### Linux\n\nUse apt.".to_string()),
            ("Guide > Use".to_string(), "## Use\n\nCall it.".to_string()),
        ]
    );
}

/// An MDX source is read as MDX reads it: its imports open no chunk, a tab's indented paragraph is prose and its
/// indented fence one code block, its indented heading a heading; the same text as `.md` is indented code.
/// Each chunk is still the source's own text at its offsets.
#[test]
fn an_mdx_sources_indented_children_are_prose_and_its_imports_no_text() {
    let db = TestDb::new(80, 0);
    let text = "---\ntitle: Notes\n---\n\nimport { Tabs, TabItem } from '@astrojs/starlight/components';\n\n<Tabs>\n  <TabItem label=\"npm\">\n\n    Use your package manager to add it:\n\n    ```sh\n    npm add notes\n    ```\n\n  </TabItem>\n</Tabs>\n\n    ## Usage\n\n    Send one.\n";
    let blocks = |path: &str| {
        let file = db.file(path, text);
        let doc = crate::parse(&db, file);
        let kinds: Vec<String> = doc
            .blocks
            .iter()
            .map(|b| format!("{:?}: {}", b.kind, text[b.start as usize..b.end as usize].trim()))
            .collect();
        (kinds, doc.headings.iter().map(|h| h.text.clone()).collect::<Vec<_>>(), chunk_texts(&db, file))
    };
    let (mdx, headings, chunks) = blocks("docs/notes.mdx");
    assert_eq!(
        mdx,
        [
            "Other: Use your package manager to add it:",
            "Code: ```sh\n    npm add notes\n    ```",
            "Heading(0): ## Usage",
            "Other: Send one.",
        ]
    );
    assert_eq!(headings, ["Usage"]);
    assert!(chunks.iter().all(|(_, chunk)| !chunk.contains("import")), "{chunks:?}");
    assert_eq!(chunks.last().map(|(path, _)| path.as_str()), Some("Usage"));
    let (md, headings, _) = blocks("docs/notes.md");
    assert!(md.iter().any(|block| block.starts_with("Code: Use your package manager")), "{md:?}");
    assert!(headings.is_empty());
}

#[test]
fn a_heading_without_content_joins_the_next_chunk() {
    let db = TestDb::new(1000, 0);
    let file = db.file("a.md", "# Title\n\n## Part\n\nBody.\n");
    assert_eq!(chunk_texts(&db, file), vec![("Title > Part".to_string(), "# Title\n\n## Part\n\nBody.".to_string())]);
}

#[test]
fn a_heading_stays_with_its_first_block_even_past_the_target() {
    let db = TestDb::new(80, 0);
    // One paragraph far over the target: it splits into pieces of about the target each.
    let paragraph: String = (1..=20).map(|n| format!("word{n} ")).collect();
    let text = format!("# Page\n\nIntro.\n\n## Backlinks\n\n{paragraph}\n");
    let file = db.file("page.md", &text);
    let texts = chunk_texts(&db, file);
    assert!(texts.iter().all(|(_, t)| t.trim() != "## Backlinks"), "no chunk is a bare heading: {texts:#?}");
    let first = texts.iter().find(|(path, _)| path == "Page > Backlinks").unwrap();
    assert!(first.1.starts_with("## Backlinks\n\nword1 "), "{texts:#?}");
}

#[test]
fn code_fences_stay_whole_even_when_larger_than_the_target() {
    let db = TestDb::new(60, 0);
    let fence = format!("```rust\n{}```", "let x = 1;\n".repeat(20));
    let text = format!("# Code\n\nBefore the fence.\n\n{fence}\n\nAfter the fence.\n");
    let file = db.file("code.md", &text);
    let texts: Vec<String> = chunk_texts(&db, file).into_iter().map(|(_, t)| t).collect();
    assert!(texts.contains(&fence), "the fence is one chunk: {texts:#?}");
    assert!(texts.iter().all(|t| !t.contains("```") || t == &fence), "no chunk holds part of the fence");
}

#[test]
fn overlap_never_starts_inside_a_code_block() {
    let db = TestDb::new(120, 50);
    let text = "# Code\n\nIntro line.\n\n```toml\n[chunking]\ntarget_bytes = 1600\noverlap_bytes = 160\n```\n\nA paragraph after the fence that is long enough to need its own chunk, and more.\n";
    let file = db.file("code.md", text);
    for (_, chunk_text) in chunk_texts(&db, file) {
        let fences = chunk_text.matches("```").count();
        assert!(fences == 0 || fences == 2, "a chunk holds a whole fence or none of it: {chunk_text:?}");
        assert!(!chunk_text.starts_with("[chunking]"), "{chunk_text:?}");
    }
}

/// The byte ranges of `text`'s fenced code, each from its opening fence to its closing fence
/// line's end, read as a Markdown reader reads a list's or a quote's code (without indentation and `>`).
fn fenced_code(text: &str) -> Vec<(usize, usize)> {
    let (mut fences, mut ranges, mut open, mut at) = (crate::Fences::default(), Vec::new(), None, 0);
    for line in text.split_inclusive('\n') {
        let bare = line.trim_start_matches(|c: char| c == '>' || c.is_whitespace() || c.is_ascii_digit() || c == '.');
        match (open, fences.is_code(bare)) {
            (None, true) => open = Some(at + line.len() - bare.len()),
            (Some(from), false) => {
                ranges.push((from, text[..at].trim_end().len()));
                open = None;
            }
            _ => {}
        }
        at += line.len();
    }
    ranges.extend(open.map(|from| (from, text.len())));
    ranges
}

#[test]
fn a_fence_inside_a_list_item_is_never_cut_nor_overlapped() {
    // A list item's code, as RFCs and guides nest it, in a list far over the target: the list splits at
    // line ends, but around its fences, and no overlap starts inside one.
    let json: String = (0..12).map(|n| format!("      \"field{n}\": {n},\n")).collect();
    let item = |n: usize| {
        format!(
            "- Item {n} says what the example shows, in a sentence of prose.\n\n  ```json\n  {{\n{json}  }}\n  ```\n\n"
        )
    };
    // And code that opens a list item, as EIPs number their test cases.
    let numbered = format!("3. ```\n{json}   ```\n\n");
    let text = format!("# Registry\n\n{}{}{numbered}After the list, a paragraph.\n", item(1), item(2));
    for (target, overlap) in [(120, 40), (200, 60), (400, 100)] {
        let db = TestDb::new(target, overlap);
        let file = db.file("registry.md", &text);
        let found = chunks(&db, file);
        assert!(found.len() >= 2, "the list splits: {found:#?}");
        let code = fenced_code(&text);
        assert_eq!(code.len(), 3);
        for chunk in found.iter() {
            let (start, end) = (chunk.start as usize, chunk.end as usize);
            let inside = |at: usize| code.iter().any(|&(open, close)| open < at && at < close);
            assert!(
                !inside(start) && !inside(end),
                "a chunk starts and ends outside code ({target}, {overlap}): {:?}",
                &text[start..end]
            );
        }
        // Every line of the text is in some chunk.
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            assert!(found.iter().any(|c| text[c.start as usize..c.end as usize].contains(line.trim())), "{line:?}");
        }
    }
}

#[test]
fn long_sections_split_within_the_target_with_overlap() {
    let db = TestDb::new(200, 60);
    let paragraphs: Vec<String> =
        (0..12).map(|i| format!("Paragraph {i} says something. It has a second sentence here.")).collect();
    let text = format!("# Long\n\n{}\n", paragraphs.join("\n\n"));
    let file = db.file("long.md", &text);
    let found = chunks(&db, file);
    assert!(found.len() > 3, "a long section makes several chunks");
    for chunk in found.iter() {
        assert!(chunk.end - chunk.start <= 200, "chunk within target: {chunk:?}");
        assert_eq!(chunk.heading_path, vec!["Long".to_string()]);
    }
    for pair in found.windows(2) {
        assert!(pair[1].start < pair[0].end, "consecutive chunks overlap: {pair:?}");
        assert!(pair[0].end - pair[1].start <= 60, "overlap within its limit: {pair:?}");
    }
    // Every paragraph is whole in some chunk.
    for paragraph in &paragraphs {
        assert!(found.iter().any(|c| text[c.start as usize..c.end as usize].contains(paragraph.as_str())));
    }
}

/// A paragraph wrapped at a fixed width (the Rust book's) has line starts inside its sentences: a chunk's
/// overlap starts at a sentence, never at such a line, so no chunk begins with a sentence's tail.
#[test]
fn an_overlap_in_a_wrapped_paragraph_starts_at_a_sentence() {
    let db = TestDb::new(200, 80);
    let paragraph =
        |i: usize| format!("Paragraph {i} opens here and goes\non across a line. Then it says\nmore, and ends here.");
    let text = format!("# Wrapped\n\n{}\n", (0..8).map(paragraph).collect::<Vec<_>>().join("\n\n"));
    let file = db.file("wrapped.md", &text);
    let found = chunks(&db, file);
    assert!(found.len() > 3, "several chunks");
    assert!(found.windows(2).any(|pair| pair[1].start < pair[0].end), "chunks still overlap");
    for chunk in &found[1..] {
        let start = &text[chunk.start as usize..];
        assert!(start.starts_with(['P', 'T']), "a chunk starts at a sentence: {:?}", &start[..30]);
    }
}

#[test]
fn an_oversized_paragraph_splits_at_whitespace_on_char_boundaries() {
    let db = TestDb::new(50, 0);
    let text = "ünïcödé wörds ".repeat(30);
    let file = db.file("notes.txt", &text);
    let found = chunks(&db, file);
    assert!(found.len() > 5);
    let mut covered = String::new();
    for chunk in found.iter() {
        assert!(chunk.end - chunk.start <= 50);
        covered.push_str(&text[chunk.start as usize..chunk.end as usize]);
        covered.push(' ');
    }
    assert_eq!(covered.split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
}

#[test]
fn offsets_and_lines_resolve_to_the_source() {
    let db = TestDb::new(1000, 0);
    let text = "---\ntitle: Front\ntags: [a, b]\n---\n# Heading\n\nLine one.\nLine two.\n\n## Next\n\nMore.\n";
    let file = db.file("doc.md", text);
    let found = chunks(&db, file);
    assert_eq!(found.len(), 2);
    assert_eq!(&text[found[0].start as usize..found[0].end as usize], "# Heading\n\nLine one.\nLine two.");
    assert_eq!((found[0].start_line, found[0].end_line), (5, 8));
    assert_eq!((found[1].start_line, found[1].end_line), (10, 12));
    assert_eq!(found[0].hash, crate::content_hash(b"# Heading\n\nLine one.\nLine two."));
    let outline = outline(&db, file);
    assert_eq!(outline.title, "Front", "front matter title wins over the first heading");
    let fm = outline.front_matter.as_ref().unwrap();
    assert_eq!(fm.fields["tags"], crate::FrontMatterValue::List(vec!["a".into(), "b".into()]));
}

#[test]
fn plain_text_splits_on_paragraphs() {
    let db = TestDb::new(40, 0);
    let file = db.file("notes.txt", "First paragraph here.\n\nSecond paragraph here.\n\n\nThird one.\n");
    let texts: Vec<String> = chunk_texts(&db, file).into_iter().map(|(_, t)| t).collect();
    assert_eq!(texts, vec!["First paragraph here.", "Second paragraph here.\n\n\nThird one."]);
}

#[test]
fn chunk_ids_survive_edits_elsewhere_in_the_file() {
    let mut db = TestDb::new(1000, 0);
    let file = db.file("a.md", "# A\n\nAlpha.\n\n# B\n\nBeta.\n");
    let before = chunks(&db, file);
    edit(&mut db, file, "# A\n\nAlpha, edited.\n\n# B\n\nBeta.\n");
    let after = chunks(&db, file);
    assert_ne!(before[0].id, after[0].id, "the edited chunk has a new id");
    assert_eq!(before[1].id, after[1].id, "the untouched chunk keeps its id");
    assert_ne!(before[1].start, after[1].start, "even though its offsets moved");
}

#[test]
fn editing_one_file_reruns_only_that_files_queries() {
    let mut db = TestDb::new(1000, 100);
    let a = db.file("a.md", "# A\n\nAlpha.\n");
    let b = db.file("b.md", "# B\n\nBeta.\n");
    let files = [a, b];
    for file in files {
        chunks(&db, file);
        outline(&db, file);
    }
    assert_eq!(
        db.take_executed(&files),
        ["chunks(a.md)", "chunks(b.md)", "outline(a.md)", "outline(b.md)", "parse(a.md)", "parse(b.md)"]
    );

    edit(&mut db, a, "# A\n\nAlpha, edited.\n");
    for file in files {
        chunks(&db, file);
        outline(&db, file);
    }
    assert_eq!(db.take_executed(&files), ["chunks(a.md)", "outline(a.md)", "parse(a.md)"]);
}

#[test]
fn changing_chunking_settings_rechunks_without_reparsing() {
    let mut db = TestDb::new(1000, 100);
    let a = db.file("a.md", "# A\n\nAlpha.\n");
    let b = db.file("b.md", "# B\n\nBeta.\n");
    let files = [a, b];
    for file in files {
        chunks(&db, file);
    }
    db.take_executed(&files);
    ChunkingSettings::get(&db).set_target_bytes(&mut db).with_durability(Durability::HIGH).to(500);
    for file in files {
        chunks(&db, file);
    }
    assert_eq!(db.take_executed(&files), ["chunks(a.md)", "chunks(b.md)"]);
}

/// A stand-in for the cross-file queries to come (concepts, link graph): it reads only outlines.
#[salsa::tracked(returns(copy))]
fn link_count(db: &dyn Db, file: SourceFile) -> usize {
    outline(db, file).links.len()
}

#[test]
fn a_body_edit_that_keeps_the_outline_does_not_rerun_outline_readers() {
    let mut db = TestDb::new(1000, 100);
    let a = db.file("a.md", "# A\n\nAlpha [link](b.md).\n\n## Part\n");
    assert_eq!(link_count(&db, a), 1);
    db.take_executed(&[a]);
    edit(&mut db, a, "# A\n\nAlpha, edited\nover two lines [link](b.md).\n\n## Part\n");
    assert_eq!(link_count(&db, a), 1);
    assert_eq!(db.take_executed(&[a]), ["outline(a.md)", "parse(a.md)"], "outline backdates");

    edit(&mut db, a, "# A\n\nAlpha [link](b.md) and [another](c.md).\n\n## Part\n");
    assert_eq!(link_count(&db, a), 2);
    assert_eq!(db.take_executed(&[a]), ["link_count(a.md)", "outline(a.md)", "parse(a.md)"]);
}

mod embeddings;
mod facts;
mod lint;
mod shards;
mod wiki;
