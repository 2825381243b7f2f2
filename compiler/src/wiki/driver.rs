//! The one artifact driver: every kind of generated artifact (the pages, and each kind declared in
//! `knowledge_queries::wiki::DECLARED_KINDS`) is compared with the index, derived, stored, counted in the
//! build summary, logged and removed by [`drive`]. A kind says only how it finds what differs from the
//! index, and how it derives and stores one artifact's rows ([`ArtifactKindDriver`]): pages by their
//! model hash, with rows of their own (citations, backlinks, listed sources, a shard row); the declared
//! kinds by their stamp (`declared.rs`). The file sync and the remote store then follow the catalog for
//! every kind alike.

use super::*;

/// What a kind reads and writes while the driver runs it: the build's transaction, the query graph and
/// its inputs, and the stage's settings.
pub(super) struct Run<'a, 'c> {
    pub(super) conn: &'a Connection,
    pub(super) db: &'a mut KnowledgeDb,
    pub(super) inputs: &'a mut PageInputs,
    pub(super) context: &'a StageContext<'c>,
}

impl Run<'_, '_> {
    /// A failed statement of the stage, named by the index it ran on.
    pub(super) fn sql(&self, source: rusqlite::Error) -> StoreError {
        self.context.sql_error(source)
    }
}

/// What a kind's comparison with the index found.
pub(super) struct Compared<S> {
    /// The artifacts to derive and store again.
    pub(super) stale: Vec<S>,
    /// The artifacts the index holds that the graph no longer derives.
    pub(super) gone: Vec<Gone>,
}

/// An artifact the index holds that the graph no longer derives.
pub(super) struct Gone {
    /// Its key among the kind's artifacts (a page's slug, a declared artifact's uri).
    pub(super) key: String,
    /// Its source ref, which the run's events name.
    pub(super) uri: String,
    /// Its file, relative to the output folder, and its content's hash, as the catalog held them.
    pub(super) path: String,
    pub(super) hash: String,
}

/// An artifact a kind stored.
pub(super) struct Stored {
    pub(super) key: String,
    pub(super) uri: String,
    pub(super) path: String,
    /// Its content's hash before (none for a new artifact) and now.
    pub(super) old_hash: Option<String>,
    pub(super) new_hash: String,
    /// The source revisions it cites (`file://PATH@REVISION`).
    pub(super) sources: Vec<String>,
}

/// One kind of artifact, as the driver runs it.
pub(super) trait ArtifactKindDriver {
    /// An artifact to derive and store again, as the comparison found it.
    type Stale;

    /// The kind's name in the catalog and the day's log.
    fn name(&self) -> &'static str;

    /// The build summary's counters the kind counts under.
    fn counters<'s>(&self, stage: &'s mut Stage) -> &'s mut ArtifactCounters;

    /// The run events an artifact of the kind gives when it is added, changed and removed, for a kind the
    /// run's events list (pages do; the indexes made of them do not).
    fn events(&self) -> Option<[&'static str; 3]> {
        None
    }

    /// What differs from the index: the artifacts to derive again, and those the graph no longer derives.
    fn compare(&mut self, run: &mut Run<'_, '_>) -> Result<Compared<Self::Stale>, StoreError>;

    /// Readies the artifacts to derive again before any is stored: what a kind derives for all of them at once
    /// (the pages, spread over the cores). Readies nothing by default.
    fn ready(&mut self, _run: &mut Run<'_, '_>, _stale: &mut [Self::Stale]) -> Result<(), StoreError> {
        Ok(())
    }

    /// Derives one artifact and stores its rows (and hands a text the index does not keep whole to the file
    /// sync, `stage.fresh`).
    fn store(&mut self, run: &mut Run<'_, '_>, stale: Self::Stale, stage: &mut Stage) -> Result<Stored, StoreError>;

    /// Removes the rows of an artifact the graph no longer derives.
    fn remove(&mut self, run: &mut Run<'_, '_>, gone: &Gone) -> Result<(), StoreError>;
}

/// Runs one kind: stores every artifact that differs from the index, removes every one no longer derived,
/// counts both and logs each whose bytes changed. Returns the keys it stored, then those it removed (each
/// once: the comparison finds an artifact either to store or gone).
pub(super) fn drive<K: ArtifactKindDriver>(
    kind: &mut K,
    run: &mut Run<'_, '_>,
    stage: &mut Stage,
) -> Result<Vec<String>, StoreError> {
    let Compared { mut stale, gone } = kind.compare(run)?;
    kind.ready(run, &mut stale)?;
    let mut touched = Vec::with_capacity(stale.len() + gone.len());
    for item in stale {
        let stored = kind.store(run, item, stage)?;
        kind.counters(stage).rendered += 1;
        if stored.old_hash.as_ref() != Some(&stored.new_hash) {
            let change = ArtifactChange {
                artifact: stored.path,
                kind: kind.name(),
                old_hash: stored.old_hash,
                new_hash: Some(stored.new_hash),
                sources: stored.sources,
            };
            record(kind, stage, &stored.uri, change);
        }
        touched.push(stored.key);
    }
    for gone in gone {
        kind.remove(run, &gone)?;
        kind.counters(stage).deleted += 1;
        let change = ArtifactChange {
            artifact: gone.path,
            kind: kind.name(),
            old_hash: Some(gone.hash),
            new_hash: None,
            sources: Vec::new(),
        };
        record(kind, stage, &gone.uri, change);
        touched.push(gone.key);
    }
    Ok(touched)
}

/// Logs a change, and gives its run event where the kind has them.
fn record<K: ArtifactKindDriver>(kind: &K, stage: &mut Stage, uri: &str, change: ArtifactChange) {
    if let Some([added, changed, removed]) = kind.events() {
        let event = match (&change.old_hash, &change.new_hash) {
            (_, None) => removed,
            (None, Some(_)) => added,
            (Some(_), Some(_)) => changed,
        };
        stage.events.push(RunEvent {
            kind: event,
            path: uri.to_string(),
            old_revision: change.old_hash.clone(),
            new_revision: change.new_hash.clone(),
            detail: change.new_hash.is_some().then(|| format!("cites {}", change.sources.join(", "))),
            labels: None,
        });
    }
    stage.changes.push(change);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind whose artifacts are given: `stale` as (key, hash before, hash now), `gone` as keys. It records
    /// what the driver asked of it.
    struct Given {
        stale: Vec<(&'static str, Option<&'static str>, &'static str)>,
        gone: Vec<&'static str>,
        events: bool,
        stored: Vec<String>,
        removed: Vec<String>,
    }

    impl ArtifactKindDriver for Given {
        type Stale = (&'static str, Option<&'static str>, &'static str);

        fn name(&self) -> &'static str {
            "given"
        }

        fn counters<'s>(&self, stage: &'s mut Stage) -> &'s mut ArtifactCounters {
            stage.declared.entry("given".to_string()).or_default()
        }

        fn events(&self) -> Option<[&'static str; 3]> {
            self.events.then_some(["given_added", "given_changed", "given_removed"])
        }

        fn compare(&mut self, _: &mut Run<'_, '_>) -> Result<Compared<Self::Stale>, StoreError> {
            let gone = self
                .gone
                .iter()
                .map(|key| Gone {
                    key: key.to_string(),
                    uri: format!("knowledge://given/{key}"),
                    path: format!("given/{key}.md"),
                    hash: format!("old-{key}"),
                })
                .collect();
            Ok(Compared { stale: self.stale.clone(), gone })
        }

        fn store(&mut self, _: &mut Run<'_, '_>, stale: Self::Stale, _: &mut Stage) -> Result<Stored, StoreError> {
            let (key, before, now) = stale;
            self.stored.push(key.to_string());
            Ok(Stored {
                key: key.to_string(),
                uri: format!("knowledge://given/{key}"),
                path: format!("given/{key}.md"),
                old_hash: before.map(str::to_string),
                new_hash: now.to_string(),
                sources: vec![format!("file://{key}.md@r1")],
            })
        }

        fn remove(&mut self, _: &mut Run<'_, '_>, gone: &Gone) -> Result<(), StoreError> {
            self.removed.push(gone.key.clone());
            Ok(())
        }
    }

    /// Runs `kind` through the driver on an empty project, returning the stage and the keys it touched.
    fn run_driver(kind: &mut Given) -> (Stage, Vec<String>) {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("kc.toml"), "version = 1\n").unwrap();
        let project = Project::load(&root.path().join("kc.toml")).unwrap();
        let templates = TemplateSet::load(&project).unwrap();
        let context = StageContext {
            project: &project,
            templates: &templates,
            run_id: "run",
            full: false,
            sync: IndexSync { reseed: false, prior_run: None, changed: &[], run: "run" },
            same_plan_except: None,
        };
        let conn = Connection::open_in_memory().unwrap();
        let (mut db, mut inputs) = (KnowledgeDb::default(), PageInputs::default());
        let mut run = Run { conn: &conn, db: &mut db, inputs: &mut inputs, context: &context };
        let mut stage = Stage::default();
        let touched = drive(kind, &mut run, &mut stage).unwrap();
        (stage, touched)
    }

    #[test]
    fn the_driver_stores_what_differs_removes_what_went_and_logs_only_changed_bytes() {
        let mut kind = Given {
            stale: vec![("new", None, "h1"), ("same", Some("h2"), "h2"), ("edited", Some("h3"), "h4")],
            gone: vec!["old"],
            events: true,
            stored: Vec::new(),
            removed: Vec::new(),
        };
        let (stage, touched) = run_driver(&mut kind);
        assert_eq!(kind.stored, ["new", "same", "edited"]);
        assert_eq!(kind.removed, ["old"]);
        assert_eq!(touched, ["new", "same", "edited", "old"]);
        let counters = stage.declared["given"];
        assert_eq!((counters.rendered, counters.deleted), (3, 1));
        // An artifact stored again with the same bytes is counted but not logged.
        let changes: Vec<(&str, Option<&str>, Option<&str>)> =
            stage.changes.iter().map(|c| (c.artifact.as_str(), c.old_hash.as_deref(), c.new_hash.as_deref())).collect();
        assert_eq!(
            changes,
            [
                ("given/new.md", None, Some("h1")),
                ("given/edited.md", Some("h3"), Some("h4")),
                ("given/old.md", Some("old-old"), None)
            ]
        );
        let events: Vec<(&str, &str, Option<&str>)> =
            stage.events.iter().map(|e| (e.kind, e.path.as_str(), e.detail.as_deref())).collect();
        assert_eq!(
            events,
            [
                ("given_added", "knowledge://given/new", Some("cites file://new.md@r1")),
                ("given_changed", "knowledge://given/edited", Some("cites file://edited.md@r1")),
                ("given_removed", "knowledge://given/old", None)
            ]
        );
    }

    #[test]
    fn a_kind_without_events_gives_none() {
        let mut kind = Given {
            stale: vec![("new", None, "h1")],
            gone: vec!["old"],
            events: false,
            stored: vec![],
            removed: vec![],
        };
        let (stage, _) = run_driver(&mut kind);
        assert_eq!(stage.changes.len(), 2);
        assert!(stage.events.is_empty());
    }
}
