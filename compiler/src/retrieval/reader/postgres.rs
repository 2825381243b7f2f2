//! Resolving refs (`knowledge get`, `knowledge_get`) over the Postgres store: the same answers as over the
//! SQLite index, each naming its project.

use super::*;
use crate::retrieval::search::{StoreReadError, StoreScope};
use crate::store::postgres::{PgResolve, PgStore};

/// Resolves `reference` in the first of `projects` (that `principal` may read) holding it.
pub fn resolve_postgres(
    store: &mut PgStore,
    projects: &[String],
    reference: &str,
    principal: Option<&str>,
) -> Result<Resolved, StoreReadError> {
    let scope = StoreScope::of(store, projects, principal)?;
    let mut reader = PgResolve::new(store, scope.projects);
    resolve_in(&mut reader, reference, &scope.access)
        .map_err(|source| StoreReadError::from(reader.store.error(source)))?
        .ok_or_else(|| ReaderError::NotFound(reference.trim().to_string()).into())
}

impl ReadIndex for PgResolve<'_> {
    type Error = ::postgres::Error;

    fn chunk_detail(&mut self, id: &str) -> Result<Option<ChunkDetail>, ::postgres::Error> {
        PgResolve::chunk_detail(self, id)
    }

    fn source_detail(&mut self, path: &str) -> Result<Option<SourceDetail>, ::postgres::Error> {
        PgResolve::source_detail(self, path)
    }

    fn line_chunks(&mut self, path: &str, start: u32, end: u32) -> Result<Vec<LineChunk>, ::postgres::Error> {
        PgResolve::line_chunks(self, path, start, end)
    }
}
