//! The entity delta log: what each build changed (`recent_changes`) and the change that introduced an
//! entity (`which_pr_introduced`), with the commit, branch, pull request and CI run the build recorded.

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::EntityError;
use crate::retrieval::access::Access;

/// One entity change of one build.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EntityChange {
    pub run_id: String,
    pub started_at: String,
    pub slug: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    /// `added`, `changed` or `removed`.
    pub change: String,
    pub path: String,
    /// The entity's name and payload before and after (JSON), where it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_value: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_value: Option<serde_json::Value>,
    /// The build's version-control context: commit, branch, CI, CI run, pull request (when known).
    pub vcs: serde_json::Value,
}

/// `which_pr_introduced`: the build that last added the entity, with its context, and what changed it since.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Introduced {
    pub slug: String,
    pub introduced: EntityChange,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub later_changes: Vec<EntityChange>,
}

fn changes(
    conn: &Connection,
    access: &Access,
    slug: Option<&str>,
    limit: usize,
) -> Result<Vec<EntityChange>, EntityError> {
    let json = |text: Option<String>| text.and_then(|t| serde_json::from_str(&t).ok());
    let mut found = Vec::new();
    crate::store::each_entity_change(conn, slug, |row| {
        // A change to an entity of a source the principal may not read is not shown: its name is content.
        if access.can_read_labels(&row.labels) && access.can_read_path(&row.path) {
            found.push(EntityChange {
                run_id: row.run_id,
                started_at: row.started_at,
                slug: row.slug,
                entity_type: row.entity_type,
                change: row.change,
                path: row.path,
                old_value: json(row.old_value),
                new_value: json(row.new_value),
                vcs: json(row.vcs).unwrap_or_default(),
            });
        }
        found.len() < limit
    })?;
    Ok(found)
}

/// The newest entity changes first, at most `limit`.
pub fn recent_changes(conn: &Connection, access: &Access, limit: usize) -> Result<Vec<EntityChange>, EntityError> {
    changes(conn, access, None, limit)
}

pub fn which_pr_introduced(conn: &Connection, access: &Access, slug: &str) -> Result<Introduced, EntityError> {
    let history = changes(conn, access, Some(slug), usize::MAX)?;
    // Newest first: the changes before the latest `added` are the later ones.
    let at = history.iter().position(|c| c.change == "added").ok_or_else(|| EntityError::NotFound(slug.to_string()))?;
    let introduced = history[at].clone();
    let text = |key: &str| introduced.vcs.get(key).and_then(serde_json::Value::as_str).map(str::to_string);
    Ok(Introduced {
        slug: slug.to_string(),
        pull_request: text("pull_request"),
        commit: text("commit"),
        introduced,
        later_changes: history[..at].to_vec(),
    })
}
