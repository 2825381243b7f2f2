//! The build's embedding stage: what the committed index lacks vectors for (`EmbeddingPlan`, asked of the query
//! graph over `EmbeddingInputs`, then of the vector cache), the provider
//! calls with no transaction open (`embed`), and the vectors written in a transaction of their own (`apply`).

use std::collections::{HashMap, HashSet};

use knowledge_queries::embeddings::{
    EmbeddingNeed, EmbeddingScope, EmbeddingSource, IndexedChunk, ReadyEntry, generation_needs,
};
use salsa::Setter;

use rusqlite::Connection;
use serde::Serialize;

use super::*;
use crate::sources::db::KnowledgeDb;
use crate::store;

/// What a build did to the embeddings of its generation. Printed in `knowledge build --json`.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EmbeddingCounters {
    pub model: String,
    pub provider: &'static str,
    /// Vectors the provider computed this build.
    pub computed: u64,
    /// Chunks that got a vector another chunk (or an earlier build) had computed for the same text.
    pub reused: u64,
    /// Chunks left without a vector because the provider failed; the next build retries them.
    pub pending: u64,
    /// Entries of chunks that no longer exist.
    pub deleted: u64,
    /// Chunks whose entry the stage checked: those of the sources the build derived when the generation was
    /// complete before it, otherwise every chunk.
    pub checked: u64,
    /// Why the generation is incomplete, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    /// The vectors are the `fake` provider's: fine for tests, meaningless for search quality.
    pub fake: bool,
    /// Wall time spent in the provider this build; `computed` over it is the provider's speed.
    pub ms: u64,
}

/// Why a build must run the embedding stage even with no source changed (another model, a provider turned
/// off, pending entries to retry, or a queued job), or `None` when it need not. `model` is the configured
/// generation's id, known without loading a model.
pub fn needs_stage(conn: &Connection, model: Option<&str>) -> rusqlite::Result<Option<String>> {
    let stored = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let Some(model) = model else {
        return Ok(
            stored.map(|stored| format!("the provider was turned off: the vectors of `{stored}` would be dropped"))
        );
    };
    if stored.as_deref() != Some(model) {
        return Ok(Some(match stored {
            Some(stored) => format!("the embedding model changed from `{stored}` to `{model}`"),
            None => format!("nothing is embedded with `{model}` yet"),
        }));
    }
    // The embedding stage commits after the build: a build stopped in between left chunks without vectors.
    if crate::store::meta(conn, "embedded_run")? != crate::store::meta(conn, "last_run")? {
        return Ok(Some("the last build's embedding stage did not finish".to_string()));
    }
    let (pending, queued) = store::generation_backlog(conn, model)?;
    Ok(if pending {
        Some("chunks a provider failed on are pending".to_string())
    } else if queued {
        Some("a reindex job is queued".to_string())
    } else {
        None
    })
}

/// Drops the vectors of an index whose provider was turned off; inside the build's transaction (no
/// provider is called).
pub fn drop_if_turned_off(conn: &Connection) -> rusqlite::Result<()> {
    if crate::store::meta(conn, "embeddings_model")?.is_some_and(|model| !model.is_empty()) {
        store::drop_every_generation(conn)?;
    }
    Ok(())
}

/// A chunk whose current revision has no ready entry in the generation, as the graph says, and its source.
struct Missing {
    source_ref: String,
    need: EmbeddingNeed,
}

/// What the embedding stage must do, read from the committed index: the chunks without a ready entry for
/// their current revision and offsets (a chunk re-cut by a `[chunking]` change may keep its id and move),
/// and which of their texts have no vector yet.
pub struct EmbeddingPlan {
    model: String,
    /// A queued full reindex: the generation is dropped and every chunk embedded again.
    full: bool,
    /// The run whose derived sources are the only ones that can lack a vector: the generation was complete
    /// when the build began, so only the chunks it wrote (`sources.indexed_run`) and deleted
    /// (`temp.gone_chunks`) are looked at. `None`: every chunk and entry is.
    derived_by: Option<String>,
    missing: Vec<Missing>,
    /// Indexes into `missing` of the texts to send to the provider (one per distinct text).
    to_embed: Vec<usize>,
    /// The dimensions of the vectors already stored, when any are reused.
    known_dimensions: Option<usize>,
    reused: u64,
    checked: u64,
}

/// The embedding graph's inputs (`knowledge_queries::embeddings`), kept for the life of a `Compiler`: one
/// `EmbeddingSource` per source ref a stage has looked at, each field set only when its value changed, and
/// the scope.
#[derive(Default)]
pub struct EmbeddingInputs {
    sources: HashMap<String, EmbeddingSource>,
    scope: Option<EmbeddingScope>,
}

impl EmbeddingInputs {
    /// Sets the inputs to the committed index's chunks and ready entries of the sources in scope: those
    /// `derived_by` derived, or every source. A source that left the scope keeps its input with no data.
    fn sync(
        &mut self,
        conn: &Connection,
        db: &mut KnowledgeDb,
        model: &str,
        full: bool,
        derived_by: Option<&str>,
    ) -> rusqlite::Result<EmbeddingScope> {
        let chunks = store::scoped_chunks(conn, derived_by)?;
        // A full reindex drops the generation: it holds no entry.
        let mut ready = if full { HashMap::new() } else { store::scoped_ready_entries(conn, model, derived_by)? };
        let mut in_scope: Vec<EmbeddingSource> = Vec::with_capacity(chunks.len());
        for (uri, chunks) in chunks {
            let mut entries = ready.remove(&uri).unwrap_or_default();
            entries.sort_unstable();
            let source = match self.sources.get(&uri) {
                Some(&source) => {
                    set_if_changed(db, source, chunks, entries);
                    source
                }
                None => {
                    let source = EmbeddingSource::new(db, uri.clone(), chunks, entries);
                    self.sources.insert(uri, source);
                    source
                }
            };
            in_scope.push(source);
        }
        if self.sources.len() > in_scope.len() {
            let scoped: HashSet<EmbeddingSource> = in_scope.iter().copied().collect();
            for &source in self.sources.values().filter(|source| !scoped.contains(source)) {
                set_if_changed(db, source, Vec::new(), Vec::new());
            }
        }
        Ok(match self.scope {
            Some(scope) => {
                if scope.sources(db) != &in_scope {
                    scope.set_sources(db).to(in_scope);
                }
                scope
            }
            None => *self.scope.insert(EmbeddingScope::new(db, in_scope)),
        })
    }
}

fn set_if_changed(db: &mut KnowledgeDb, source: EmbeddingSource, chunks: Vec<IndexedChunk>, ready: Vec<ReadyEntry>) {
    if source.chunks(db) != &chunks {
        source.set_chunks(db).to(chunks);
    }
    if source.ready(db) != &ready {
        source.set_ready(db).to(ready);
    }
}

impl EmbeddingPlan {
    /// What the stage must do for `model`: the graph's needs over the committed index's sources in scope
    /// (those `derived_by` derived, when the generation was complete before the build, see
    /// [`EmbeddingPlan::derived_by`]; every source otherwise), and which of their texts the vector cache
    /// lacks.
    pub fn read(
        conn: &Connection,
        db: &mut KnowledgeDb,
        inputs: &mut EmbeddingInputs,
        model: &str,
        derived_by: Option<&str>,
    ) -> rusqlite::Result<EmbeddingPlan> {
        let full = store::full_reindex_queued(conn, model)?;
        let scope = inputs.sync(conn, db, model, full, derived_by)?;
        let needs = generation_needs(db, scope);
        let mut plan = EmbeddingPlan {
            model: model.to_string(),
            full,
            derived_by: derived_by.map(str::to_string),
            missing: Vec::new(),
            to_embed: Vec::new(),
            known_dimensions: None,
            reused: 0,
            checked: needs.checked,
        };
        plan.missing = needs
            .entries
            .iter()
            .map(|at| Missing { source_ref: at.source.source_ref(db).clone(), need: at.get(db).clone() })
            .collect();
        for &first in &needs.first_of_text {
            // A full reindex embeds every text again, as if no vector existed.
            let stored =
                if full { None } else { store::stored_vector_dimensions(conn, model, &plan.missing[first].need.hash)? };
            match stored {
                Some(dimensions) => plan.known_dimensions = usize::try_from(dimensions).ok(),
                None => plan.to_embed.push(first),
            }
        }
        // Every entry whose vector is not computed this build reuses one: stored, or another entry's.
        plan.reused = (plan.missing.len() - plan.to_embed.len()) as u64;
        Ok(plan)
    }
}

/// The provider's answers for a plan: computed with no transaction open, so a slow or failing provider
/// never holds the index's write lock.
pub struct Embedded {
    vectors: Vec<(String, Vec<f32>)>,
    failed: HashSet<String>,
    degraded: Option<String>,
    /// Wall time spent in the provider.
    ms: u64,
}

impl EmbeddingPlan {
    /// Texts the provider will be asked for.
    #[must_use]
    pub fn texts(&self) -> usize {
        self.to_embed.len()
    }
}

/// Calls the provider for the plan's texts, `batch_size` at a time, telling `done` how many texts each
/// batch held (a progress bar's steps). A failure leaves the rest of the texts failed too (they become
/// `pending` entries the next build retries).
#[must_use]
pub fn embed(plan: &EmbeddingPlan, embedder: &dyn Embedder, batch_size: usize, done: &dyn Fn(usize)) -> Embedded {
    let clock = std::time::Instant::now();
    let mut embedded = Embedded { vectors: Vec::new(), failed: HashSet::new(), degraded: None, ms: 0 };
    for batch in plan.to_embed.chunks(batch_size.max(1)) {
        let items: Vec<&EmbeddingNeed> = batch.iter().map(|&i| &plan.missing[i].need).collect();
        if embedded.degraded.is_some() {
            embedded.failed.extend(items.iter().map(|item| item.hash.clone()));
            continue;
        }
        let texts: Vec<&str> = items.iter().map(|item| &*item.text).collect();
        match embedder.embed(&texts) {
            Ok(vectors) if vectors.len() == items.len() => {
                embedded.vectors.extend(items.iter().map(|item| item.hash.clone()).zip(vectors));
            }
            Ok(vectors) => {
                embedded.degraded =
                    Some(format!("the provider returned {} vectors for {} texts", vectors.len(), items.len()));
                embedded.failed.extend(items.iter().map(|item| item.hash.clone()));
            }
            Err(error) => {
                embedded.degraded = Some(format!("the provider failed: {error}"));
                embedded.failed.extend(items.iter().map(|item| item.hash.clone()));
            }
        }
        done(batch.len());
    }
    embedded.ms = crate::elapsed_ms(clock);
    embedded
}

/// Writes a plan's vectors and entries, in the stage's own transaction: drops the generation for a full
/// reindex, marks queued jobs done, removes entries of chunks that are gone and vectors no entry uses, and
/// records the generation (`embeddings_model`, `embeddings_settings`) and the run whose chunks it covers
/// (`embedded_run`).
pub fn apply(
    conn: &Connection,
    embedder: &dyn Embedder,
    plan: &EmbeddingPlan,
    embedded: &Embedded,
    run_id: &str,
) -> rusqlite::Result<EmbeddingCounters> {
    let model = plan.model.as_str();
    if plan.full {
        store::drop_generation(conn, model)?;
    }
    store::finish_queued_jobs(conn, model, run_id)?;
    let mut counters = EmbeddingCounters {
        model: model.to_string(),
        provider: embedder.provider(),
        fake: embedder.provider() == "fake",
        reused: plan.reused,
        checked: plan.checked,
        degraded: embedded.degraded.clone(),
        ms: embedded.ms,
        ..EmbeddingCounters::default()
    };
    // Other generations are kept (a model switch builds beside them), but not for chunks that are gone.
    // The texts of the entries dropped or replaced, whose vectors may now be unused.
    let mut freed: HashSet<(String, String)> = HashSet::new();
    if plan.derived_by.is_some() {
        for entry in store::delete_entries_of_gone_chunks(conn)? {
            counters.deleted += u64::from(entry.0 == model);
            freed.insert(entry);
        }
    } else {
        counters.deleted = store::delete_entries_of_missing_chunks(conn, model)?;
    }

    // An endpoint may choose the dimensions; the vectors say what they are.
    let mut dimensions = plan.known_dimensions.unwrap_or_else(|| embedder.dimensions());
    for (hash, vector) in &embedded.vectors {
        store::insert_vector(conn, model, hash, vector, run_id)?;
        counters.computed += 1;
        dimensions = vector.len();
    }
    for Missing { source_ref, need: item } in &plan.missing {
        // A scan below finds unused vectors otherwise.
        if plan.derived_by.is_some()
            && let Some(old) = store::entry_text_hash(conn, &item.chunk_id, model)?
        {
            freed.insert((model.to_string(), old));
        }
        let status = if embedded.failed.contains(&item.hash) { "pending" } else { "ready" };
        if status == "pending" {
            counters.pending += 1;
        }
        store::upsert_entry(
            conn,
            &store::VectorEntry {
                chunk_id: &item.chunk_id,
                model,
                provider: embedder.provider(),
                dimensions,
                source_ref,
                revision: &item.revision,
                text_hash: &item.hash,
                start: item.start,
                end: item.end,
                status,
                run_id,
            },
        )?;
    }
    // Vectors no entry uses any more: the text is gone from every chunk.
    if plan.derived_by.is_some() {
        for (model, hash) in &freed {
            store::delete_vector_if_unused(conn, model, hash)?;
        }
    } else {
        store::delete_unused_vectors(conn)?;
    }
    store::record_generation(conn, model, &embedder.settings().to_string(), run_id)?;
    Ok(counters)
}
