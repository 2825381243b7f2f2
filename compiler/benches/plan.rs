//! The wiki planner on the shared corpora: `cargo bench -p knowledge --bench plan [CORPUS...]`.
//!
//! A build re-plans from every source's signals whenever an edit changes what the planner reads (a title,
//! a link, a file added or removed), in `--watch` as in a new process, so the planner's time is part of
//! such an edit's latency. For each corpus this reads its Markdown files, derives each one's plan signals
//! through the query graph as a build does (with the default `[wiki]` settings), makes what resolving each
//! one's links needs of it alone (as the graph keeps it between plans), then times the plan alone,
//! 30 runs, and prints the median and the fastest, with the counts a reader compares corpora by.

use std::path::Path;
use std::time::{Duration, Instant};

use knowledge::config::WikiConfig;
use knowledge::sources::db::KnowledgeDb;
use knowledge_queries::wiki::{
    CatalogSource, PlanSettings, PlanSignal, SourceLinks, plan, source_links, split_signals,
};
use knowledge_queries::{ChunkingSettings, SourceFile, concept_signals, content_hash, outline};
use salsa::Durability;

// The planner reads the files where they are: the copying the other benches share goes unused.
#[allow(dead_code)]
#[path = "support/corpus.rs"]
mod corpus;
use corpus::walk_files;

fn main() {
    println!("{}\n", corpus::provenance());
    println!("| corpus | sources | signals | pages | plan p50 | fastest |");
    println!("|---|---|---|---|---|---|");
    for (name, source) in corpus::selected(&corpus::BUILD_CORPORA) {
        bench_corpus(name, &source);
    }
}

fn bench_corpus(name: &str, root: &Path) {
    let db = KnowledgeDb::default();
    let _chunking = ChunkingSettings::builder(1000, 0).durability(Durability::HIGH).new(&db);
    let mut files: Vec<(String, String)> = walk_files(root)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            (format!("corpus/{relative}"), std::fs::read_to_string(&path).unwrap_or_default())
        })
        .collect();
    files.sort();
    let catalog: Vec<(String, String, Vec<PlanSignal>)> = files
        .iter()
        .map(|(path, text)| {
            let file = SourceFile::new(&db, path.clone(), content_hash(text.as_bytes()), text.clone());
            let (signals, _) = split_signals(concept_signals(&db, file).clone());
            (path.clone(), outline(&db, file).title.clone(), signals)
        })
        .collect();
    // What resolving each source's links needs of it alone is made once, as the query graph keeps it per part
    // of the catalog (`part_sources`): a re-plan makes it again only for an edited source's part.
    let links: Vec<SourceLinks> =
        catalog.iter().map(|(path, title, signals)| source_links(path, title, signals)).collect();
    let sources: Vec<CatalogSource<'_>> = catalog
        .iter()
        .zip(&links)
        .map(|((path, title, signals), links)| CatalogSource {
            path,
            title,
            section: "general".to_string(),
            handwritten: false,
            signals,
            links,
        })
        .collect();
    let wiki = WikiConfig::default();
    let settings = PlanSettings {
        min_sources: *wiki.min_sources.get_ref() as usize,
        max_places: *wiki.max_quotes.get_ref() as usize,
        max_related: wiki.max_related as usize,
    };
    let mut times: Vec<Duration> = Vec::new();
    let mut pages = 0;
    for _ in 0..30 {
        let start = Instant::now();
        let planned = plan(&sources, settings);
        times.push(start.elapsed());
        pages = planned.pages.len();
    }
    times.sort();
    let signals: usize = sources.iter().map(|source| source.signals.len()).sum();
    println!(
        "| {name} | {} | {signals} | {pages} | {} | {} |",
        sources.len(),
        ms(times[times.len() / 2]),
        ms(times[0])
    );
}

fn ms(time: Duration) -> String {
    format!("{:.1} ms", time.as_secs_f64() * 1000.0)
}
