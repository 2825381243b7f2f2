//! The driver's salsa database: the concrete `Db`, with a counter of executed queries that the build
//! reports, so the summary itself proves how much work a build did.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The salsa database the driver owns. Clones share storage and are handed to rayon workers.
#[salsa::db]
#[derive(Clone)]
pub struct KnowledgeDb {
    storage: salsa::Storage<Self>,
    executed: Arc<AtomicU64>,
}

impl Default for KnowledgeDb {
    fn default() -> Self {
        let executed = Arc::new(AtomicU64::new(0));
        let counter = executed.clone();
        KnowledgeDb {
            storage: salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
                if let salsa::EventKind::WillExecute { .. } = event.kind {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }))),
            executed,
        }
    }
}

impl KnowledgeDb {
    /// How many tracked-function executions this database has run.
    #[must_use]
    pub fn executed_queries(&self) -> u64 {
        self.executed.load(Ordering::Relaxed)
    }
}

#[salsa::db]
impl salsa::Database for KnowledgeDb {}

#[salsa::db]
impl knowledge_queries::Db for KnowledgeDb {}
