//! The driver's salsa database: the concrete `Db`, with a counter of executed queries that the build
//! reports, so the summary itself proves how much work a build did.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use salsa::Database as _;

/// The salsa database the driver owns. Clones share storage and are handed to rayon workers.
#[salsa::db]
#[derive(Clone)]
pub struct KnowledgeDb {
    storage: salsa::Storage<Self>,
    executed: Arc<AtomicU64>,
    /// Executions per query (by ingredient), for the summary's per-query counts.
    by_query: Arc<Mutex<HashMap<salsa::plumbing::IngredientIndex, u64>>>,
}

impl Default for KnowledgeDb {
    fn default() -> Self {
        let executed = Arc::new(AtomicU64::new(0));
        let by_query = Arc::new(Mutex::new(HashMap::new()));
        let (counter, per_query) = (executed.clone(), by_query.clone());
        KnowledgeDb {
            storage: salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
                if let salsa::EventKind::WillExecute { database_key } = event.kind {
                    counter.fetch_add(1, Ordering::Relaxed);
                    *per_query
                        .lock()
                        .expect("the counter lock is never poisoned")
                        .entry(database_key.ingredient_index())
                        .or_insert(0) += 1;
                }
            }))),
            executed,
            by_query,
        }
    }
}

impl KnowledgeDb {
    /// A reader of the executed-queries counter that holds no database handle (a handle would block input
    /// changes while it lives).
    pub fn executed_counter(&self) -> impl Fn() -> u64 + use<> {
        let executed = self.executed.clone();
        move || executed.load(Ordering::Relaxed)
    }

    /// Executions so far per query name (`parse`, `chunks`, `render_page`, ...).
    #[must_use]
    pub fn executed_by_query(&self) -> BTreeMap<String, u64> {
        let counts = self.by_query.lock().expect("the counter lock is never poisoned").clone();
        counts.into_iter().map(|(ingredient, n)| (self.ingredient_debug_name(ingredient).to_string(), n)).collect()
    }

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
