//! The embedding stage's queries: which chunks lack an entry, which texts are embedded, and what an edit
//! re-derives.

use super::*;
use crate::embeddings::{EmbeddingScope, EmbeddingSource, IndexedChunk, ReadyEntry, generation_needs, source_needs};

fn chunk(id: &str, title: &str, text: &str, revision: &str, start: u32) -> IndexedChunk {
    IndexedChunk {
        id: id.to_string(),
        title: title.to_string(),
        text: text.to_string(),
        revision: revision.to_string(),
        start,
        end: start + u32::try_from(text.len()).unwrap(),
    }
}

/// The ready entry of a chunk of a Markdown source, as the stage writes it.
fn ready(chunk: &IndexedChunk) -> ReadyEntry {
    ReadyEntry {
        chunk_id: chunk.id.clone(),
        revision: chunk.revision.clone(),
        start: chunk.start,
        end: chunk.end,
        text_hash: crate::content_hash(crate::embeddings::embedded_text("file://guide.md", chunk).as_bytes()),
    }
}

/// The chunk ids of the entries the generation lacks, and the texts it embeds, as the driver reads them.
fn needs(db: &TestDb, scope: EmbeddingScope) -> (Vec<String>, Vec<String>) {
    let needs = generation_needs(db, scope);
    (
        needs.entries.iter().map(|at| at.get(db).chunk_id.clone()).collect(),
        needs.first_of_text.iter().map(|&first| needs.entries[first].get(db).text.to_string()).collect(),
    )
}

#[test]
fn a_chunk_needs_an_entry_for_its_revision_and_offsets_and_a_shared_text_is_embedded_once() {
    let db = TestDb::new(1000, 0);
    let intro = chunk("a1", "Guide", "Install it.", "rev-a", 0);
    let moved = chunk("a2", "Guide > Use", "Run it.", "rev-a", 20);
    let mut stale = moved.clone();
    stale.start = 12;
    let guide = EmbeddingSource::new(
        &db,
        "file://guide.md".to_string(),
        vec![intro.clone(), moved],
        vec![ready(&intro), ready(&stale)],
    );
    // Another file with the same title and text: its chunk needs its own entry, and shares the vector.
    let copy = chunk("b1", "Guide > Use", "Run it.", "rev-b", 0);
    let other = EmbeddingSource::new(&db, "file://copy.md".to_string(), vec![copy], Vec::new());
    let scope = EmbeddingScope::new(&db, vec![guide, other]);

    let (entries, texts) = needs(&db, scope);
    assert_eq!(entries, ["a2", "b1"], "a ready entry at other offsets does not count; the copy has none");
    assert_eq!(texts, ["Guide > Use\n\nRun it."], "the title is embedded with the text, and one text once");
    assert_eq!(generation_needs(&db, scope).checked, 3);
    let need = &source_needs(&db, guide)[0];
    assert_eq!(need.hash, crate::content_hash(need.text.as_bytes()));
    assert_eq!((need.start, need.end), (20, 27));
}

#[test]
fn an_edit_rederives_only_the_needs_of_its_source() {
    let mut db = TestDb::new(1000, 0);
    let first = chunk("a1", "A", "Alpha.", "rev-a", 0);
    let second = chunk("b1", "B", "Beta.", "rev-b", 0);
    let a = EmbeddingSource::new(&db, "file://a.md".to_string(), vec![first.clone()], vec![ready(&first)]);
    let b = EmbeddingSource::new(&db, "file://b.md".to_string(), vec![second.clone()], vec![ready(&second)]);
    let scope = EmbeddingScope::new(&db, vec![a, b]);
    let name = |db: &TestDb, id: salsa::Id| {
        [a, b].into_iter().find(|source| source.as_id() == id).map(|source| source.source_ref(db).clone())
    };
    assert_eq!(needs(&db, scope), (Vec::new(), Vec::new()), "every chunk has its entry");
    db.take_executed_by(|id| name(&db, id));

    // b's file changed: its chunk has a new revision, so it lacks an entry; a's needs are not looked at.
    b.set_chunks(&mut db).to(vec![chunk("b1", "B", "Beta, edited.", "rev-b2", 0)]);
    assert_eq!(needs(&db, scope).0, ["b1"]);
    assert_eq!(db.take_executed_by(|id| name(&db, id)), ["generation_needs", "source_needs(file://b.md)"]);

    // Its new entry is written: b lacks nothing again.
    let edited = chunk("b1", "B", "Beta, edited.", "rev-b2", 0);
    b.set_ready(&mut db).to(vec![ready(&edited)]);
    assert_eq!(needs(&db, scope), (Vec::new(), Vec::new()));
    assert_eq!(db.take_executed_by(|id| name(&db, id)), ["generation_needs", "source_needs(file://b.md)"]);
}

/// A Markdown chunk is embedded without MDX's markup lines (`import` lines, `{/* */}` comments, components'
/// tags but for their attributes' quoted values, a tab's label) outside its code; code as written. An entry that embedded another text for the same chunk (the
/// markup, before this rule) is no longer ready: the chunk is embedded again, as is no other.
#[test]
fn markup_is_not_embedded_and_an_entry_of_another_text_is_embedded_again() {
    let db = TestDb::new(1000, 0);
    let text = "import { Tabs } from '@astrojs/starlight/components';\n\n{/* prettier-ignore */}\n<Tabs>\n<TabItem label=\"macOS\">\n\
                Launch your app at startup.\n</TabItem>\n</Tabs>\n\n```js\nimport { enable } from '@tauri-apps/plugin-autostart';\n```";
    let page = chunk("a1", "Autostart", text, "rev-a", 0);
    let plain = chunk("a2", "Autostart > Usage", "Call enable().", "rev-a", 200);
    let code = chunk("c1", "lib.rs", "import { Tabs } from '@astrojs/starlight/components';", "rev-c", 0);
    let mut stale = ready(&page);
    stale.text_hash = crate::content_hash(format!("{}\n\n{}", page.title, page.text).as_bytes());
    let mdx = EmbeddingSource::new(
        &db,
        "file://autostart.mdx".to_string(),
        vec![page.clone(), plain.clone()],
        vec![stale, ready(&plain)],
    );
    let lib = EmbeddingSource::new(&db, "file://src/lib.rs".to_string(), vec![code], Vec::new());
    let scope = EmbeddingScope::new(&db, vec![mdx, lib]);
    let (entries, texts) = needs(&db, scope);
    assert_eq!(entries, ["a1", "c1"], "the entry of the markup's text is stale; the plain chunk's stands");
    assert_eq!(
        texts,
        [
            "Autostart\n\nmacOS\nLaunch your app at startup.\n\n```js\nimport { enable } from '@tauri-apps/plugin-autostart';\n```",
            "lib.rs\n\nimport { Tabs } from '@astrojs/starlight/components';"
        ]
    );
}
