//! The code and decision entities as the read side loads them (`entities`, `entity_changes`); the build
//! writes them in `write.rs`.

use rusqlite::{Connection, params};

use super::readable_sources;

/// One stored entity with its source's path and revision.
#[derive(Debug, Clone)]
pub struct EntityRow {
    pub slug: String,
    pub entity_type: String,
    pub name: String,
    /// The entity's fields (JSON).
    pub payload: String,
    pub start_line: u32,
    pub end_line: u32,
    pub start_offset: u32,
    pub end_offset: u32,
    pub path: String,
    pub revision: String,
}

/// The entities of the sources not in `hidden` (source ids), by path, offset and slug.
pub fn entity_rows(conn: &Connection, hidden: &[i64]) -> rusqlite::Result<Vec<EntityRow>> {
    let sql = format!(
        "SELECT e.slug, e.type, e.name, e.payload, e.start_line, e.end_line, e.start_offset, e.end_offset,
                s.path, s.revision
         FROM entities e JOIN sources s ON s.id = e.source_id
         WHERE {}
         ORDER BY s.path, e.start_offset, e.slug",
        readable_sources("s.id", hidden)
    );
    conn.prepare(&sql)?
        .query_map([], |row| {
            Ok(EntityRow {
                slug: row.get(0)?,
                entity_type: row.get(1)?,
                name: row.get(2)?,
                payload: row.get(3)?,
                start_line: row.get(4)?,
                end_line: row.get(5)?,
                start_offset: row.get(6)?,
                end_offset: row.get(7)?,
                path: row.get(8)?,
                revision: row.get(9)?,
            })
        })?
        .collect()
}

/// One recorded change of an entity, with its run's start and version-control context (JSON).
#[derive(Debug, Clone)]
pub struct StoredEntityChange {
    pub run_id: String,
    pub started_at: String,
    pub slug: String,
    pub entity_type: String,
    pub change: String,
    pub path: String,
    pub labels: String,
    pub old_value: Option<String>,
    pub new_value: Option<String>,
    pub vcs: Option<String>,
}

/// Calls `each` with the recorded changes of the entity `slug` (of every entity with `None`), newest run
/// first, until it returns `false`.
pub fn each_entity_change(
    conn: &Connection,
    slug: Option<&str>,
    mut each: impl FnMut(StoredEntityChange) -> bool,
) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(
        "SELECT c.run_id, r.started_at, c.slug, c.type, c.change, c.path, c.labels, c.old_value, c.new_value, r.vcs
         FROM entity_changes c JOIN runs r ON r.id = c.run_id
         WHERE ?1 IS NULL OR c.slug = ?1
         ORDER BY c.run_id DESC, c.slug",
    )?;
    let mut rows = statement.query(params![slug])?;
    while let Some(row) = rows.next()? {
        let change = StoredEntityChange {
            run_id: row.get(0)?,
            started_at: row.get(1)?,
            slug: row.get(2)?,
            entity_type: row.get(3)?,
            change: row.get(4)?,
            path: row.get(5)?,
            labels: row.get(6)?,
            old_value: row.get(7)?,
            new_value: row.get(8)?,
            vcs: row.get(9)?,
        };
        if !each(change) {
            break;
        }
    }
    Ok(())
}
