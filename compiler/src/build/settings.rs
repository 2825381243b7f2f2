//! What a build must do besides its sources (the pipeline fingerprint, the `[lint]` and `[wiki]` settings,
//! embeddings), decided once for `knowledge build` and `knowledge build --check`; and `--check` itself.

use std::path::PathBuf;

use knowledge_queries::content_hash;
use serde::Serialize;

use super::{BuildError, OUTPUT_LAYOUT, Silent, Walking, scan};
use crate::config::Project;
use crate::sources::{self, Skipped};
use crate::store::{self, DB_FILE, LOCK_FILE, Prior, StoreError};
use crate::wiki::{self, TemplateSet};

const SOURCE_HASH: &str = env!("KNOWLEDGE_SOURCE_HASH");

/// What `knowledge build --check` found.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub up_to_date: bool,
    /// Why every source would be re-derived, when one would be.
    pub reason: Option<String>,
    /// What else the build would do with no source changed: settings, templates, embeddings.
    pub work: Vec<String>,
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
    pub skipped: Vec<Skipped>,
    /// Generated files that are missing or differ from what the index says (edited by hand, deleted).
    pub artifacts: Vec<wiki::Drift>,
    /// What the `[wiki] writer`'s provider would be asked, when one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writing: Option<WritingCheck>,
}

/// What a build would ask the `[wiki] writer`'s provider: at most `pages` writings (the pages it owes,
/// every page when the wiki is planned again, and the pages that list a changed source, within
/// `max_pages`; a page whose quotes did not change finds its writing in the cache and costs nothing), and
/// what they would cost at the mean usage of the writings the index holds (1,500 input and 200 output
/// tokens a page before there are any), by the provider's prices.
#[derive(Debug, Clone, Serialize)]
pub struct WritingCheck {
    pub writer: String,
    pub owed: u64,
    pub pages: u64,
    pub estimated_cost_usd: Option<f64>,
}

/// Input and output tokens a page's writing is estimated at before the index holds one.
const WRITING_TOKENS_GUESS: (f64, f64) = (1_500.0, 200.0);

/// [`WritingCheck`] for a build that re-plans the wiki (`replan`) or changes `touched` sources.
fn writing_check(
    project: &Project,
    conn: &rusqlite::Connection,
    replan: bool,
    touched: &[String],
) -> rusqlite::Result<Option<WritingCheck>> {
    let Some(writer) = wiki::Writer::configured(project) else { return Ok(None) };
    let (owed, total) = store::owed_writings(conn)?;
    let mut pages = if replan { total } else { owed + store::pages_listing(conn, touched)? };
    if let Some(most) = project.config.wiki.max_pages {
        pages = pages.min(u64::from(most));
    }
    let (input, output) = store::mean_writing_tokens(conn, writer.name())?.unwrap_or(WRITING_TOKENS_GUESS);
    let estimated_cost_usd =
        writer.cost(input.round() as u64, output.round() as u64).map(|each| (each * pages as f64 * 1e6).round() / 1e6);
    Ok(Some(WritingCheck { writer: writer.name().to_string(), owed, pages, estimated_cost_usd }))
}

/// Whether an index's rows were derived by this binary with these settings, so they can be reused.
pub(crate) fn trusts(prior: &Prior, fingerprint: &str) -> bool {
    !prior.needs_schema && prior.fingerprint.as_deref() == Some(fingerprint)
}

/// What a build must do with no source changed, decided the same way for `knowledge build` and for
/// `knowledge build --check`, so the check answers exactly whether a build would change anything.
pub(crate) struct SettingsWork {
    /// The pipeline fingerprint and the `[lint]` and `[wiki]` settings' hashes this binary and `kc.toml`
    /// give, as the index stores them.
    pub(crate) fingerprint: String,
    pub(crate) lint_config: String,
    pub(crate) wiki_config: String,
    /// Every source is re-derived: no index in this format, or another pipeline fingerprint.
    pub(crate) full_rebuild: bool,
    /// The `[lint]` settings changed: the stored facts are linted again.
    pub(crate) relint: bool,
    /// The `[wiki]` settings or templates changed: the wiki is planned and rendered again.
    pub(crate) rewiki: bool,
    /// Why the embedding stage must run (another model, pending or queued work).
    pub(crate) reembed: Option<String>,
    /// Pages the `[wiki] writer` owes a writing (a budget or a failure stopped the last build): the wiki is
    /// compared again so that they are written. `None` with the extractive writer.
    pub(crate) rewrite: Option<u64>,
}

impl SettingsWork {
    /// Whether the settings alone make the build write, whatever changed in the sources.
    pub(crate) fn must_write(&self) -> bool {
        self.full_rebuild || self.relint || self.rewiki || self.rewrite.is_some() || self.reembed.is_some()
    }

    /// `index`: the index `prior` was read from; `None` when there is none (then `prior` needs a schema).
    pub(crate) fn decide(
        project: &Project,
        templates: &TemplateSet,
        prior: &Prior,
        index: Option<&rusqlite::Connection>,
        embedder: Option<&dyn crate::embeddings::Embedder>,
    ) -> rusqlite::Result<SettingsWork> {
        let model = embedder.map(crate::embeddings::Embedder::model);
        let reembed = match index.filter(|_| !prior.needs_schema) {
            Some(conn) => crate::embeddings::needs_stage(conn, model)?,
            None => model.map(|model| format!("nothing is embedded with `{model}` yet")),
        };
        let (fingerprint, lint_config) = (fingerprint(project), lint_fingerprint(project));
        let wiki_config = wiki::fingerprint(project, templates);
        let writes = project.config.wiki.writer.get_ref() != crate::config::EXTRACTIVE_WRITER;
        let rewrite = match index.filter(|_| writes && !prior.needs_schema) {
            Some(conn) => Some(store::owed_writings(conn)?.0).filter(|&owed| owed > 0),
            None => None,
        };
        Ok(SettingsWork {
            full_rebuild: !trusts(prior, &fingerprint),
            relint: prior.lint_config.as_deref() != Some(lint_config.as_str()),
            rewiki: prior.wiki_config.as_deref() != Some(wiki_config.as_str()),
            fingerprint,
            lint_config,
            wiki_config,
            reembed,
            rewrite,
        })
    }
}

/// A build refuses an output folder that holds sources (say `[output] dir = "docs"`): it would hide them
/// from the walk and put generated files among them. Hand-written pages in its `wiki/` are sources by
/// design, and the other folders of the layout are the tool's.
pub(super) fn check_output_folder(project: &Project) -> Result<(), crate::config::ConfigError> {
    let output_dir = project.output_dir();
    let Ok(entries) = std::fs::read_dir(&output_dir) else { return Ok(()) };
    let sources = &project.config.sources;
    let include = sources::glob_set(sources.include.iter().map(|g| g.get_ref().as_str()));
    let exclude = sources::glob_set(sources.exclude.iter().map(|g| g.get_ref().as_str()));
    let prefix = project.config.output.dir.get_ref().trim_matches('/').trim_start_matches("./").to_string();
    let mut folders: Vec<(PathBuf, String)> = Vec::new();
    // The tool's own files: the index and its journal, the stat cache, the lock, the notes, the ingested
    // sources, a declared artifact's file (`llms.txt`), temporary files.
    let own = |name: &str| {
        use crate::sources::ingested::{INGESTED_DIR, INGESTED_FILE};
        name.starts_with(DB_FILE)
            || [
                wiki::STAT_CACHE,
                LOCK_FILE,
                crate::sources::notes::NOTES_FILE,
                crate::sources::notes::LOCK_FILE,
                INGESTED_FILE,
                INGESTED_DIR,
                crate::sources::ingested::LOCK_FILE,
            ]
            .contains(&name)
            || knowledge_queries::wiki::declared_kind_at(name).is_some()
            || name.starts_with('.')
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !OUTPUT_LAYOUT.contains(&name.as_str()) && !own(&name) {
            folders.push((entry.path(), format!("{prefix}/{name}")));
        }
    }
    while let Some((path, relative)) = folders.pop() {
        let Ok(kind) = std::fs::symlink_metadata(&path).map(|m| m.file_type()) else { continue };
        if kind.is_dir() {
            for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                folders.push((entry.path(), format!("{relative}/{}", entry.file_name().to_string_lossy())));
            }
        } else if include.is_match(&relative) && !exclude.is_match(&relative) {
            return Err(project.invalid_output(format!(
                "`[output] dir` = {:?} holds sources (`{}`); the output needs a folder of its own (the default is \".hasna/knowledge\")",
                project.config.output.dir.get_ref(),
                crate::escape(&relative),
            )));
        }
    }
    Ok(())
}

/// What a build would change in the index or the generated files, without writing anything: `knowledge
/// build --check`. Sources whose content is unchanged count as up to date even when their mtime moved
/// (a build would only refresh its stat cache).
pub fn check(project: &Project) -> Result<Check, BuildError> {
    check_output_folder(project)?;
    let templates = TemplateSet::load(project)?;
    let index = project.output_dir().join(DB_FILE);
    let conn = store::open_read_only(&index).ok();
    let prior = conn
        .as_ref()
        .and_then(|conn| store::read_prior(conn).ok())
        .unwrap_or(Prior { needs_schema: true, ..Prior::default() });
    let embedder = crate::embeddings::configured(project).map_err(BuildError::Embeddings)?;
    let settings = SettingsWork::decide(project, &templates, &prior, conn.as_ref(), embedder.as_deref())
        .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
    let scan = scan(project, &prior, settings.full_rebuild, &Silent, Walking::Walk);
    let mut check = Check {
        up_to_date: true,
        reason: None,
        work: Vec::new(),
        added: Vec::new(),
        changed: Vec::new(),
        removed: scan.removed,
        skipped: scan.skipped,
        artifacts: Vec::new(),
        writing: None,
    };
    if let Some(conn) = conn.as_ref().filter(|_| !prior.needs_schema) {
        check.artifacts = wiki::drift(conn, &project.output_dir(), &wiki::output_prefix(project))
            .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
        if let Some(reason) = crate::embeddings::vector_drift(conn, &index).map_err(BuildError::VectorFile)? {
            check.work.push(format!("vector files: {reason}"));
        }
    }
    if prior.needs_schema {
        check.reason = Some("no index in this binary's format".to_string());
    } else if settings.full_rebuild {
        check.reason = Some("the index was built by another binary or with other settings".to_string());
    }
    if !settings.full_rebuild {
        if settings.relint {
            check.work.push("the [lint] settings changed: lint would run again on the stored facts".to_string());
        }
        if settings.rewiki {
            check.work.push("the [wiki] settings or templates changed: the wiki would be planned again".to_string());
        }
    }
    if let Some(reason) = settings.reembed {
        check.work.push(format!("embeddings: {reason}"));
    }
    for item in scan.pending {
        if item.prior.is_some() {
            check.changed.push(item.found.path);
        } else {
            check.added.push(item.found.path);
        }
    }
    if let Some(conn) = conn.as_ref().filter(|_| !prior.needs_schema) {
        let touched: Vec<String> = check.changed.iter().chain(&check.removed).cloned().collect();
        let replan = settings.full_rebuild || settings.rewiki;
        check.writing = writing_check(project, conn, replan, &touched)
            .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
    }
    if let Some(owed) = settings.rewrite {
        check.work.push(format!("the wiki writer owes {owed} pages a written summary"));
    }
    check.up_to_date = check.reason.is_none()
        && check.work.is_empty()
        && check.added.is_empty()
        && check.changed.is_empty()
        && check.removed.is_empty()
        && check.artifacts.is_empty();
    Ok(check)
}

/// What the stored lint results depend on besides the facts: every `[lint]` setting.
fn lint_fingerprint(project: &Project) -> String {
    let lint = &project.config.lint;
    let codes = |list: &[toml::Spanned<String>]| list.iter().map(|c| c.get_ref().clone()).collect::<Vec<_>>();
    let severities: Vec<(String, &str)> =
        lint.severity.iter().map(|(c, s)| (c.get_ref().clone(), s.as_str())).collect();
    let material = format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{}\n{}\n{:?}\n{}\n",
        codes(&lint.enable),
        codes(&lint.disable),
        severities,
        lint.contradiction_patterns,
        lint.new_article_min_sources,
        lint.near_duplicate_threshold.get_ref(),
        codes(&lint.ignore_links),
        lint.on_build,
    );
    content_hash(material.as_bytes())
}

/// Everything the derived rows depend on besides the sources themselves. Nothing about where the tree sits
/// (its folder, the project's default name) is part of it, so a clone elsewhere trusts the same index.
pub(crate) fn fingerprint(project: &Project) -> String {
    let chunking = &project.config.chunking;
    let material = format!(
        "knowledge {}\nformat {}\nsource {}\nchunking {} {}\ncontradiction patterns {:?}\npermissions {:?} {:?} {:?}\nwiki folder {}\ncode {} {:?}\n",
        env!("CARGO_PKG_VERSION"),
        store::FORMAT_VERSION,
        SOURCE_HASH,
        chunking.target_bytes.get_ref(),
        chunking.overlap_bytes.get_ref(),
        project.config.lint.contradiction_patterns,
        project.config.permissions.rules.iter().map(|r| (r.path.get_ref(), &r.labels)).collect::<Vec<_>>(),
        project.config.permissions.principals,
        project
            .config
            .permissions
            .purposes
            .iter()
            .map(|(name, p)| (name.get_ref(), &p.deny_labels))
            .collect::<Vec<_>>(),
        wiki::wiki_folder(project),
        project.config.code.enabled,
        project.config.code.decisions.iter().map(|glob| glob.get_ref()).collect::<Vec<_>>(),
    );
    content_hash(material.as_bytes())
}
