//! `knowledge lint` over a project: the command. It reuses the build's incremental work (the scan, the
//! stored facts of every source whose size and mtime match the index, the queries for the rest, in memory)
//! and hands the facts to the rules in `lint`. It sits above the build; `lint` itself sits below it, since
//! a build runs the rules on what it commits.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use crate::build::{self, Compiler, Silent};
use crate::config::Project;
use crate::lint::{
    Body, ChunkText, FileFacts, LintReport, LintSummary, Severity, compares_near_duplicates, diagnose, generated_files,
    is_at_or_under, names, signature, stored_file,
};
use crate::store::{self, DB_FILE, Prior};

/// The facts and chunk texts of the sources lint parsed, added to those of the sources it reused.
fn add_derived(
    pending: &[build::Pending],
    derived: Vec<(knowledge_queries::Outline, knowledge_queries::LintFacts, Vec<knowledge_queries::Chunk>)>,
    files: &mut Vec<FileFacts>,
    chunks: &mut Vec<ChunkText>,
) {
    for (item, (outline, facts, file_chunks)) in pending.iter().zip(derived) {
        chunks.extend(file_chunks.iter().map(|chunk| {
            let text = &item.text[chunk.start as usize..chunk.end as usize];
            ChunkText {
                path: item.found.path.clone(),
                revision: item.revision.clone(),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                signature: signature(text),
                body: Body::Text(text.to_string()),
            }
        }));
        let front_matter = serde_json::to_value(&outline.front_matter).unwrap_or_default();
        files.push(FileFacts {
            path: item.found.path.clone(),
            size: item.found.size,
            revision: item.revision.clone(),
            names: names(&item.found.path, &outline.title, &front_matter),
            facts,
        });
    }
}

/// Lints the project. `only` limits the reported findings to sources at or under these project-relative
/// paths (empty: every source); links are resolved against the whole project either way.
pub fn lint(compiler: &mut Compiler, project: &Project, only: &[String]) -> LintReport {
    let index = project.output_dir().join(DB_FILE);
    // No index, one in another format or one that cannot be read: every file is parsed here. A cache makes
    // lint faster, never different.
    let conn = store::open_read_only(&index).ok();
    let (prior, mut stored, page_citations) = conn
        .as_ref()
        .and_then(|conn| {
            let citations = store::read_page_citations(conn).unwrap_or_default();
            Some((store::read_prior(conn).ok()?, store::read_facts(conn).ok()?, citations))
        })
        .unwrap_or_else(|| (Prior { needs_schema: true, ..Prior::default() }, HashMap::new(), Vec::new()));
    let near = compares_near_duplicates(project);
    let trusted = build::trusts(&prior, &build::fingerprint(project));
    let mut scan = build::scan(project, &prior, !trusted, &Silent, build::Walking::Walk);

    // The stored facts of every source that did not change, parsed on rayon's threads; one that cannot be
    // read spoils them all (below).
    let unchanged: Vec<(&String, Option<store::StoredFacts>)> = scan
        .unchanged
        .iter()
        .chain(scan.stats.iter().map(|s| &s.path))
        .map(|path| (path, stored.remove(path)))
        .collect();
    let parsed: Vec<Option<FileFacts>> =
        unchanged.into_par_iter().map(|(path, facts)| facts.and_then(|facts| stored_file(path, facts))).collect();
    let intact = parsed.iter().all(Option::is_some);
    let mut files: Vec<FileFacts> = parsed.into_iter().flatten().collect();
    if !intact {
        // A row whose facts cannot be read: trust none of them, and parse every file as without an index.
        files.clear();
        scan = build::scan(project, &prior, true, &Silent, build::Walking::Walk);
    }
    let reused = files.len();
    // Chunks: the index's for sources that did not change, the queries' for those that did.
    let mut chunks: Vec<ChunkText> = Vec::new();
    if near && let Some(conn) = conn.as_ref().filter(|_| trusted && intact) {
        let changed: HashSet<String> = scan.pending.iter().map(|item| item.found.path.clone()).collect();
        chunks =
            store::read_chunk_texts(conn, &changed).unwrap_or_default().into_iter().map(ChunkText::stored).collect();
    }
    let derived = compiler.derive_facts(project, &scan.pending, near);
    add_derived(&scan.pending, derived, &mut files, &mut chunks);
    let reported = |path: &str| only.is_empty() || only.iter().any(|prefix| is_at_or_under(path, prefix));
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    // The generated files as the index lists them; without an index, the disk decides.
    let generated = conn.as_ref().and_then(|conn| generated_files(project, conn).ok());
    compiler.lint.set_all(&mut compiler.db, project, files, generated);
    let chunks: Vec<&ChunkText> = chunks.iter().collect();
    let mut diagnostics = diagnose(project, &compiler.db, &compiler.lint, &page_citations, &chunks, conn.as_ref());
    diagnostics.retain(|d| reported(&d.path));

    let count = |severity| diagnostics.iter().filter(|d| d.severity == severity).count();
    let summary = LintSummary {
        files: paths.iter().filter(|path| reported(path)).count(),
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        info: count(Severity::Info),
        reused,
        parsed: scan.pending.len(),
    };
    let unlinted = only
        .iter()
        .filter(|prefix| {
            !paths.iter().any(|path| is_at_or_under(path, prefix))
                && !scan.skipped.iter().any(|s| is_at_or_under(&s.path, prefix))
        })
        .cloned()
        .collect();
    LintReport { diagnostics, summary, skipped: scan.skipped, unlinted }
}
