//! The rules over the wiki: hand-written pages' citations and orphans (`missing_citation`, `orphan_page`),
//! source refs in pages, and generated pages' citations against the sources they quote.

use super::*;

/// A folder's landing page (`README.md`, `index.md`): it introduces the folder rather than making claims, and
/// nothing needs to link to it.
pub(super) fn is_landing_page(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    matches!(name.as_str(), "readme.md" | "index.md")
}

/// `missing_citation` and `orphan_page`: hand-written pages in the output folder's `wiki/`.
pub(super) fn check_wiki_pages(project: &Project, files: &[FileFacts]) -> Vec<Diagnostic> {
    let pages: Vec<&FileFacts> =
        files.iter().filter(|f| crate::wiki::in_wiki_folder(project, &f.path) && !is_landing_page(&f.path)).collect();
    if pages.is_empty() {
        return Vec::new();
    }
    let mut diagnostics = Vec::new();
    for page in &pages {
        for section in &page.facts.uncited_sections {
            let what = if section.value.is_empty() {
                "the text before the first heading".to_string()
            } else {
                format!("section `{}`", section.value)
            };
            diagnostics.push(Diagnostic {
                path: page.path.clone(),
                line: section.line,
                column: section.column,
                severity: Severity::Warning,
                code: "missing_citation",
                message: format!("{what} makes claims but cites nothing: link, wikilink or footnote its sources"),
            });
        }
    }
    // Which files other files link to, by path or by a wikilink name.
    let paths: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let mut by_name: HashMap<&str, Vec<&str>> = HashMap::new();
    for file in files {
        for name in &file.names {
            by_name.entry(name.as_str()).or_default().push(file.path.as_str());
        }
    }
    let mut linked: HashSet<&str> = HashSet::new();
    for file in files {
        for link in &file.facts.links {
            let Some(resolved) = knowledge_queries::links::link_path(&file.path, &link.value) else { continue };
            if let Some(target) = link_candidates(&resolved).into_iter().flatten().find_map(|p| paths.get(p.as_str()))
                && *target != file.path
            {
                linked.insert(target);
            }
        }
        for wikilink in &file.facts.wikilinks {
            for side in std::iter::once(&wikilink.first).chain(wikilink.second.as_ref()) {
                let Some(key) = wikilink_key(&file.path, side) else { continue };
                for target in by_name.get(key.as_str()).into_iter().flatten() {
                    if *target != file.path {
                        linked.insert(target);
                    }
                }
            }
        }
    }
    for page in pages.iter().filter(|page| !linked.contains(page.path.as_str())) {
        diagnostics.push(Diagnostic {
            path: page.path.clone(),
            line: 1,
            column: 1,
            severity: Severity::Info,
            code: "orphan_page",
            message: "no other document links to this wiki page".to_string(),
        });
    }
    diagnostics
}

/// `stale_citation` and `unresolved_source_ref` for `file://PATH@REV` refs written in any source.
pub(super) fn check_source_refs(files: &[FileFacts]) -> Vec<Diagnostic> {
    let revisions: HashMap<&str, &str> = files.iter().map(|f| (f.path.as_str(), f.revision.as_str())).collect();
    let mut diagnostics = Vec::new();
    for file in files {
        for reference in &file.facts.source_refs {
            let Some((path, revision)) = SourceRef::from_uri(&reference.value).name().split_once('@') else {
                continue;
            };
            let revision = revision.split(['#', '?']).next().unwrap_or_default();
            let path = percent_decode(path);
            // A revision is hex; anything else after `@` is not a citation this rule understands.
            if revision.len() < 6 || !revision.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let finding = match revisions.get(path.as_str()) {
                None => Some((
                    "unresolved_source_ref",
                    Severity::Error,
                    format!("cites `{path}`, which is not a source of this project"),
                )),
                Some(current) if !current.starts_with(&revision.to_ascii_lowercase()) => Some((
                    "stale_citation",
                    Severity::Warning,
                    format!(
                        "cites `{path}` at revision {revision}, but the source is now at {}: check the claim and update the ref",
                        &current[..12.min(current.len())]
                    ),
                )),
                Some(_) => None,
            };
            if let Some((code, severity, message)) = finding {
                diagnostics.push(Diagnostic {
                    path: file.path.clone(),
                    line: reference.line,
                    column: reference.column,
                    severity,
                    code,
                    message,
                });
            }
        }
    }
    diagnostics
}

/// `stale_citation` and `unresolved_source_ref` for generated pages: the index records what each quote
/// cites; a source edited or deleted since the last build leaves the page behind until the next one.
pub(super) fn check_page_citations(
    project: &Project,
    files: &[FileFacts],
    citations: &[store::PageCitation],
) -> Vec<Diagnostic> {
    let revisions: HashMap<&str, &str> = files.iter().map(|f| (f.path.as_str(), f.revision.as_str())).collect();
    let mut diagnostics = Vec::new();
    for citation in citations {
        let page_file = crate::wiki::project_path_of_artifact(project, &citation.page_path);
        let finding = match revisions.get(citation.source_path.as_str()) {
            None => Some((
                "unresolved_source_ref",
                Severity::Error,
                format!(
                    "quotes `{}`, which is no longer a source: run `knowledge build` to update the wiki",
                    citation.source_path
                ),
            )),
            Some(current) if *current != citation.revision => Some((
                "stale_citation",
                Severity::Warning,
                format!(
                    "quotes `{}` at revision {}, but the source changed since: run `knowledge build` to update the wiki",
                    citation.source_path,
                    &citation.revision[..12.min(citation.revision.len())]
                ),
            )),
            Some(_) => None,
        };
        if let Some((code, severity, message)) = finding {
            diagnostics.push(Diagnostic {
                path: page_file,
                line: citation.note_line,
                column: 1,
                severity,
                code,
                message,
            });
        }
    }
    diagnostics
}
