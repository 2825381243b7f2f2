//! What a build reports: the counters of `knowledge build --json`, which the index also stores with its run.

use std::path::PathBuf;

use serde::Serialize;

use crate::sources::Skipped;
use crate::wiki::ArtifactCounters;

/// What a build did, with the counters that prove it. Printed by `knowledge build --json`.
#[derive(Debug, Clone, Serialize)]
pub struct BuildSummary {
    /// The run recorded in the index, or `None` when nothing changed and nothing was written.
    pub run_id: Option<String>,
    pub index: PathBuf,
    /// Every source was re-derived: a new index, another format, or another pipeline fingerprint.
    pub full_rebuild: bool,
    pub wrote: bool,
    pub sources: SourceCounters,
    pub chunks: ChunkCounters,
    /// Code entities the build added, changed and removed (`[code]`), as the run's delta log records them.
    pub entities: EntityCounters,
    pub queries: QueryCounters,
    pub skipped: Vec<Skipped>,
    /// Generated concept pages: rendered this build, files written or already equal, pages removed.
    pub pages: ArtifactCounters,
    /// Index shards (a Markdown and a JSON file per section), counted like pages.
    pub shards: ArtifactCounters,
    /// Every other kind of generated file (the declared kinds: the root index, `llms.txt`, the schema
    /// document), counted like pages, by kind.
    pub artifacts: std::collections::BTreeMap<String, ArtifactCounters>,
    /// What the `[wiki] writer`'s provider wrote, when one is configured and the build compared pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wiki_writer: Option<crate::wiki::WriterCounters>,
    /// What the build did to the embeddings generation, when a provider is configured and the build wrote.
    pub embeddings: Option<crate::embeddings::EmbeddingCounters>,
    /// The findings the build's lint stored, when it ran one (`[lint] on_build`, and something was written).
    pub lint: Option<LintCounts>,
    /// Generated files the build did not write because a file it did not generate is in their place
    /// (relative to the output folder). The build never overwrites a file of the user's.
    pub blocked: Vec<String>,
    /// What the build put in object storage (`[output] artifacts`), when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_artifacts: Option<super::remote::RemoteSync>,
    /// What the build published to the Postgres store (`[store] url`), when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::store::postgres::PublishReport>,
    /// Wall time per stage, in milliseconds.
    pub stages_ms: StageTimes,
    pub wall_ms: u64,
}

impl BuildSummary {
    /// A build's summary before it writes: what the scan counted, nothing written yet.
    #[must_use]
    pub fn started(
        index: std::path::PathBuf,
        full_rebuild: bool,
        wrote: bool,
        sources: SourceCounters,
        chunks: ChunkCounters,
        skipped: Vec<Skipped>,
    ) -> BuildSummary {
        BuildSummary {
            run_id: None,
            index,
            full_rebuild,
            wrote,
            sources,
            chunks,
            entities: EntityCounters::default(),
            queries: QueryCounters::default(),
            skipped,
            pages: ArtifactCounters::default(),
            shards: ArtifactCounters::default(),
            artifacts: std::collections::BTreeMap::new(),
            wiki_writer: None,
            embeddings: None,
            lint: None,
            blocked: Vec::new(),
            remote_artifacts: None,
            store: None,
            stages_ms: StageTimes::default(),
            wall_ms: 0,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTimes {
    /// Opening the index and reading what it holds.
    pub open: u64,
    /// Walking the tree and checking stats.
    pub scan: u64,
    /// Reading and hashing files whose stats moved.
    pub read: u64,
    /// Running the queries for changed sources while their rows are inserted (the two overlap).
    pub compile: u64,
    /// What follows the last row: a fresh index's secondary indexes, lint when it runs, the run record and
    /// the commit.
    pub write: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SourceCounters {
    /// Files the include globs selected, skipped ones among them.
    pub scanned: u64,
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
    pub skipped: u64,
    pub unchanged: u64,
    /// Files that were read and hashed because their size or mtime moved.
    pub hashed: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ChunkCounters {
    /// Chunks whose id did not exist before this build.
    pub computed: u64,
    /// Chunks that existed before and still do, unchanged.
    pub reused: u64,
    pub deleted: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EntityCounters {
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct QueryCounters {
    /// Tracked-function executions (salsa `WillExecute` events) during this build.
    pub executed: u64,
    /// The same, per query, for the queries that ran.
    pub by_query: std::collections::BTreeMap<String, u64>,
}

/// Findings by severity.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct LintCounts {
    pub errors: u64,
    pub warnings: u64,
    pub info: u64,
}

impl LintCounts {
    pub(super) fn of(findings: &[crate::lint::Diagnostic]) -> LintCounts {
        let count = |severity| findings.iter().filter(|d| d.severity == severity).count() as u64;
        LintCounts {
            errors: count(crate::lint::Severity::Error),
            warnings: count(crate::lint::Severity::Warning),
            info: count(crate::lint::Severity::Info),
        }
    }
}
