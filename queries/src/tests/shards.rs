//! Index shards as queries: what a page row's change re-derives.

use super::*;
use crate::wiki::{
    IndexedPage, PageIndex, Section, ShardRow, Templates, llms_stamp, llms_text, root_artifact, root_markdown,
    shard_artifact, shard_entries, shard_json, shard_json_artifact, shard_json_text, shard_markdown, shard_rows_hash,
};

fn row(slug: &str, title: &str) -> ShardRow {
    ShardRow::new(slug.to_string(), title.to_string(), Vec::new(), format!("wiki/{slug}.md"), 2, String::new())
}

/// Sets a page row's fields as the driver does when the row or its page's hash changed.
fn set_page(db: &mut TestDb, page: IndexedPage, row: ShardRow, hash: &str) {
    page.set_digest(db).to(row.digest());
    page.set_json(db).to(row.json(hash));
    page.set_row(db).to(Some(row));
}

#[test]
fn a_sections_json_joined_from_its_rows_is_the_file_serde_writes() {
    let mut aliased = row("install", "Install \"it\"");
    aliased.aliases = vec!["setup".to_string(), "getting started".to_string()];
    aliased.summary = "Line one.\nLine two.".to_string();
    let rows = [(aliased, "h1"), (row("upgrade", "Upgrade"), "h2")];
    let joined: Vec<String> = rows.iter().map(|(row, hash)| row.json(hash)).collect();
    let pages: Vec<serde_json::Value> = rows
        .iter()
        .map(|(row, hash)| {
            serde_json::json!({"aliases": row.aliases, "hash": hash, "href": row.href, "path": row.path,
                "slug": row.slug, "sources": row.sources, "summary": row.summary, "title": row.title})
        })
        .collect();
    let file = serde_json::json!({"pages": pages, "schema": crate::wiki::SCHEMA_VERSION, "section": "guides"});
    assert_eq!(
        shard_json_text("guides", joined.iter().map(String::as_str)),
        format!("{}\n", serde_json::to_string_pretty(&file).unwrap())
    );
    let empty = serde_json::json!({"pages": [], "schema": crate::wiki::SCHEMA_VERSION, "section": "a \"b\""});
    assert_eq!(
        shard_json_text("a \"b\"", std::iter::empty()),
        format!("{}\n", serde_json::to_string_pretty(&empty).unwrap())
    );
}

#[test]
fn a_sections_json_is_sized_before_it_is_filled() {
    // Rows longer than any fixed guess per row: the buffer must still be allocated once, not doubled.
    let rows: Vec<String> = (0..500).map(|n| row(&format!("page-{n}"), &"Long title ".repeat(40)).json("h")).collect();
    let text = shard_json_text("guides", rows.iter().map(String::as_str));
    assert!(text.len() > 500 * 400, "each row is longer than 400 bytes");
    // Sized from its parts: the one byte to spare is the separator counted for the first row, which has none.
    assert!(text.capacity() - text.len() <= 1, "{} bytes allocated for {}", text.capacity(), text.len());
}

/// Derives every section's Markdown, entries and JSON, and the root, as the driver asks for them.
fn derive_all(db: &TestDb, index: PageIndex) {
    for name in ["guides", "reference"] {
        let section = Section::new(db, name.to_string());
        shard_rows_hash(db, index, section);
        shard_markdown(db, index, section).as_ref().unwrap();
        shard_entries(db, index, section);
        shard_json(db, index, section);
        shard_artifact(db, index, section).as_ref().unwrap();
        shard_json_artifact(db, index, section);
    }
    root_markdown(db, index).as_ref().unwrap();
    root_artifact(db, index).as_ref().unwrap();
}

#[test]
fn a_page_row_rederives_only_its_own_sections_shard() {
    let mut db = TestDb::new(1000, 0);
    Templates::new(
        &db,
        String::new(),
        "# {{ section }}\n{% for p in pages %}- [{{ p.title }}]({{ p.href }})\n{% endfor %}".to_string(),
        "{% for s in sections %}- {{ s.section }}: {{ s.pages }}\n{% endfor %}".to_string(),
    );
    let page = |db: &TestDb, section: &str, slug: &str, title: &str| {
        let row = row(slug, title);
        IndexedPage::new(db, section.to_string(), row.digest(), row.json(&format!("hash-{slug}")), Some(row))
    };
    let install = page(&db, "guides", "install", "Install");
    let pages = vec![install, page(&db, "guides", "upgrade", "Upgrade"), page(&db, "reference", "api", "API")];
    let index = PageIndex::new(&db, pages.clone(), "templates".to_string(), "fixture".to_string());
    derive_all(&db, index);
    let guides = Section::new(&db, "guides".to_string());
    assert_eq!(
        shard_entries(&db, index, guides).iter().map(|e| (e.slug.as_str(), e.line)).collect::<Vec<_>>(),
        [("install", 2), ("upgrade", 3)],
        "an entry is the line that lists its page"
    );
    db.take_executed(&[]);

    // The page's text changed, its row did not: only its section's JSON, which holds the hash, and the
    // JSON's catalog row.
    install.set_json(&mut db).to(row("install", "Install").json("hash-install-2"));
    derive_all(&db, index);
    assert_eq!(db.take_executed(&[]), ["shard_json", "shard_json_artifact"]);
    let guides = Section::new(&db, "guides".to_string());
    let json = shard_json_artifact(&db, index, guides);
    assert_eq!(
        (json.uri.as_str(), json.kind, json.path.as_str()),
        ("knowledge://index/guides.json", "shard_json", "indexes/machine/guides.json")
    );
    assert_eq!(json.hash, crate::content_hash(shard_json(&db, index, guides).as_bytes()));
    assert_eq!(json.metadata, r#"{"pages":2,"section":"guides"}"#);

    // Its title changed: its section's rows, Markdown and entries; not the other section's, not the root.
    set_page(&mut db, install, row("install", "Installing"), "hash-install-3");
    derive_all(&db, index);
    assert_eq!(
        db.take_executed(&[]),
        [
            "shard_artifact",
            "shard_entries",
            "shard_json",
            "shard_json_artifact",
            "shard_markdown",
            "shard_rows",
            "shard_rows_hash"
        ]
    );

    // A page added to the reference: the list of sections is made again, so both sections' pages are looked
    // at again (the guides' come out equal, and nothing of theirs runs again), and only the reference's
    // count, rows, JSON, Markdown and entries are made again, and the root, whose page counts changed.
    let mut more = pages;
    more.push(page(&db, "reference", "errors", "Errors"));
    index.set_pages(&mut db).to(more);
    derive_all(&db, index);
    assert_eq!(
        db.take_executed(&[]),
        [
            "root_artifact",
            "root_markdown",
            "root_model",
            "section_pages",
            "section_pages",
            "sections",
            "shard_artifact",
            "shard_entries",
            "shard_json",
            "shard_json_artifact",
            "shard_markdown",
            "shard_page_count",
            "shard_rows",
            "shard_rows_hash"
        ]
    );
    let root = root_artifact(&db, index).as_ref().unwrap();
    assert_eq!(
        (root.uri.as_str(), root.kind, root.metadata.as_str()),
        ("knowledge://index/root", "root", r#"{"pages":4,"section":""}"#)
    );

    // A fresh process reads rows only to render Markdown: with them unread, a section's rows hash and
    // JSON are what they were with them read.
    let reference = Section::new(&db, "reference".to_string());
    let (rows_hash, json) = (shard_rows_hash(&db, index, reference).clone(), shard_json(&db, index, reference).clone());
    for page in index.pages(&db).clone() {
        page.set_row(&mut db).to(None);
    }
    let reference = Section::new(&db, "reference".to_string());
    assert_eq!(shard_rows_hash(&db, index, reference), &rows_hash);
    assert_eq!(shard_json(&db, index, reference), &json);
}

#[test]
fn a_sections_rows_hash_follows_what_its_markdown_shows() {
    // `PageIndex` is a singleton: a database for each.
    let hash_of = |rows: &[ShardRow], template_hash: &str| {
        let db = TestDb::new(1000, 0);
        let pages = rows
            .iter()
            .map(|row| IndexedPage::new(&db, "guides".to_string(), row.digest(), row.json("h"), None))
            .collect();
        let index = PageIndex::new(&db, pages, template_hash.to_string(), "fixture".to_string());
        shard_rows_hash(&db, index, Section::new(&db, "guides".to_string())).clone()
    };
    let rows = [row("install", "Install"), row("upgrade", "Upgrade")];
    let before = hash_of(&rows, "templates");
    assert_eq!(hash_of(&rows, "templates"), before);
    assert_ne!(hash_of(&rows, "other templates"), before);
    assert_ne!(hash_of(&[row("install", "Installing"), row("upgrade", "Upgrade")], "templates"), before);
    assert_ne!(hash_of(&rows[..1], "templates"), before);
    let mut summarized = rows.clone();
    summarized[1].summary = "Upgrade it.".to_string();
    assert_ne!(hash_of(&summarized, "templates"), before);
}

/// A page of `section` in the page index, its row's JSON with a file hash of its own.
fn indexed_page(db: &TestDb, section: &str, row: &ShardRow) -> IndexedPage {
    IndexedPage::new(db, section.to_string(), row.digest(), row.json(&format!("hash-{}", row.slug)), None)
}

#[test]
fn llms_txt_follows_titles_summaries_and_sections_not_a_pages_text() {
    let mut db = TestDb::new(1000, 0);
    let mut install = row("install", "Install");
    install.summary = "Run the installer.".to_string();
    let first = indexed_page(&db, "guides", &install);
    let pages = vec![first, indexed_page(&db, "reference", &row("api", "API"))];
    let index = PageIndex::new(&db, pages.clone(), "templates".to_string(), "Garden tools".to_string());
    assert_eq!(
        llms_text(&db, index),
        "# Garden tools\n\n> The compiled wiki of Garden tools: 2 concept pages in 2 sections, each gathered from the \
         project's documents, every quote cited by source ref, revision and lines.\n\nThe index is \
         [indexes/root.md](indexes/root.md); the page and index formats are described in [schemas/v1.md](schemas/v1.md).\n\
         \n## guides\n\n- [Install](wiki/install.md): Run the installer.\n\n## reference\n\n- [API](wiki/api.md)\n"
    );
    db.take_executed(&[]);

    // The page's text changed (its file's hash), not what the list shows: the entry is read again and
    // comes out equal, so the list is not made again.
    first.set_json(&mut db).to(install.json("hash-install-2"));
    llms_text(&db, index);
    assert_eq!(db.take_executed(&[]), ["llms_entry"]);

    // Its summary changed: the list is made again.
    install.summary = "Run the new installer.".to_string();
    first.set_json(&mut db).to(install.json("hash-install-3"));
    assert!(llms_text(&db, index).contains("- [Install](wiki/install.md): Run the new installer.\n"));
    assert_eq!(db.take_executed(&[]), ["llms_entry", "llms_text"]);
}

/// A fresh process stamps `llms.txt` from the rows' digests: no page's row is read and the list is not made
/// to learn that an edit of a page's text left it as it was; what the list shows changes the stamp.
#[test]
fn llms_txt_is_stamped_by_what_it_shows_without_reading_a_row() {
    let mut db = TestDb::new(1000, 0);
    let mut install = row("install", "Install");
    let first = indexed_page(&db, "guides", &install);
    let pages = vec![first, indexed_page(&db, "reference", &row("api", "API"))];
    let index = PageIndex::new(&db, pages.clone(), "templates".to_string(), "Garden tools".to_string());
    let stamp = llms_stamp(&db, index).clone();
    assert_eq!(db.take_executed(&[]), ["llms_stamp", "sections"], "no entry read, no list made");

    // The page's text changed (its file's hash, in its row's JSON), not what the list shows.
    first.set_json(&mut db).to(install.json("hash-install-2"));
    assert_eq!(llms_stamp(&db, index), &stamp);
    assert_eq!(db.take_executed(&[]), Vec::<String>::new());

    // What the list shows changed: a summary, a title, the project's name, a page's section.
    install.summary = "Run the new installer.".to_string();
    first.set_digest(&mut db).to(install.digest());
    let summarized = llms_stamp(&db, index).clone();
    assert_ne!(summarized, stamp);
    index.set_project_name(&mut db).to("Tools".to_string());
    assert_ne!(llms_stamp(&db, index), &summarized);
    let renamed = llms_stamp(&db, index).clone();
    first.set_section(&mut db).to("reference".to_string());
    assert_ne!(llms_stamp(&db, index), &renamed);
}

#[test]
fn llms_txt_keeps_each_page_on_its_line_whatever_its_title_holds() {
    let db = TestDb::new(1000, 0);
    let mut hostile = row("x", "Evil](https://example.com) [\n# Heading\u{1b}[2J");
    hostile.summary = "First line.\r\n- a forged item\u{7}".to_string();
    let page = IndexedPage::new(&db, "guides".to_string(), hostile.digest(), hostile.json("h"), None);
    let index = PageIndex::new(&db, vec![page], "templates".to_string(), "name\n# forged".to_string());
    let text = llms_text(&db, index);
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    assert!(text.starts_with("# name # forged\n\n> The compiled wiki of name # forged: "), "{text}");
    let item = text.lines().find(|line| line.starts_with("- ")).unwrap();
    assert_eq!(
        item, r"- [Evil\](https://example.com) \[ # Heading \[2J](wiki/x.md): First line. - a forged item",
        "{text}"
    );
    assert_eq!(text.lines().filter(|line| line.starts_with("- ")).count(), 1, "{text}");
    assert_eq!(text.lines().filter(|line| line.starts_with("# ")).count(), 1, "{text}");

    // A project `kc.toml` does not name is headed `Wiki`: an index must not depend on its folder's name.
    let db = TestDb::new(1000, 0);
    let index = PageIndex::new(&db, Vec::new(), "templates".to_string(), String::new());
    assert!(llms_text(&db, index).starts_with("# Wiki\n\n> The compiled wiki: 0 concept pages in 0 sections"));
}
