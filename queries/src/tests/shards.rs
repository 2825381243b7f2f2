//! Index shards as queries: what a page row's change re-derives.

use super::*;
use crate::wiki::{
    IndexedPage, PageIndex, Section, ShardRow, Templates, root_artifact, root_markdown, shard_artifact, shard_entries,
    shard_json, shard_json_artifact, shard_markdown,
};

fn row(slug: &str, title: &str) -> ShardRow {
    ShardRow {
        slug: slug.to_string(),
        title: title.to_string(),
        aliases: Vec::new(),
        path: format!("wiki/{slug}.md"),
        href: format!("../wiki/{slug}.md"),
        sources: 2,
        summary: String::new(),
    }
}

/// Derives every section's Markdown, entries and JSON, and the root, as the driver asks for them.
fn derive_all(db: &TestDb, index: PageIndex) {
    for name in ["guides", "reference"] {
        let section = Section::new(db, name.to_string());
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
        IndexedPage::new(db, section.to_string(), row(slug, title), format!("hash-{slug}"))
    };
    let install = page(&db, "guides", "install", "Install");
    let pages = vec![install, page(&db, "guides", "upgrade", "Upgrade"), page(&db, "reference", "api", "API")];
    let index = PageIndex::new(&db, pages.clone(), "templates".to_string());
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
    install.set_hash(&mut db).to("hash-install-2".to_string());
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
    install.set_row(&mut db).to(row("install", "Installing"));
    derive_all(&db, index);
    assert_eq!(
        db.take_executed(&[]),
        ["shard_artifact", "shard_entries", "shard_json", "shard_json_artifact", "shard_markdown", "shard_rows"]
    );

    // A page added to the reference: the list of sections is made again, so both sections' rows and JSON
    // are looked at again (the guides' come out equal), but only the reference's Markdown and entries are
    // made again, and the root, whose page counts changed.
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
            "sections",
            "shard_artifact",
            "shard_entries",
            "shard_json",
            "shard_json",
            "shard_json_artifact",
            "shard_markdown",
            "shard_rows",
            "shard_rows"
        ]
    );
    let root = root_artifact(&db, index).as_ref().unwrap();
    assert_eq!(
        (root.uri.as_str(), root.kind, root.metadata.as_str()),
        ("knowledge://index/root", "root", r#"{"pages":4,"section":""}"#)
    );
}
