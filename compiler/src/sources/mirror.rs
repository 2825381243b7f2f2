//! Inputs mirrored from the index: the one way every kind of input a `Compiler` keeps (the wiki's catalog
//! entries and page rows, lint's sources and their chunks) follows the committed index between builds.
//!
//! The index holds each per-key query's result as a row (a source's signals, facts and chunks; a page's
//! row), keyed by the key and stamped by the run that committed it; a mirror holds one value (a salsa
//! input, or what is made of the row) per key, and the run whose index it matches. A build syncs it by one
//! code path, warm or cold alike: a mirror that matches the run before reads only the rows of the keys the
//! build changed, any other (a fresh process, a reseed, a mirror a failed build left) reads every row, and
//! the same function then makes or updates each key's value from its row. Correctness never depends on a
//! mirror being warm: one that matches nothing only costs a whole read.

use std::collections::BTreeMap;

/// What changed in the committed index since a build: told to every mirror a `Compiler` keeps, so that
/// each reads only what changed.
#[derive(Debug, Clone, Copy)]
pub struct IndexSync<'a> {
    /// Read everything: the index was rebuilt, or the settings a kind reads changed.
    pub reseed: bool,
    /// The run the index held before this build: a mirror that matches it reads only the changed keys.
    pub prior_run: Option<&'a str>,
    /// The sources this build wrote or removed.
    pub changed: &'a [String],
    /// This build's run, which the mirrors match afterwards.
    pub run: &'a str,
}

/// Values kept per key, as the index's rows make them, and the run whose committed index they match.
#[derive(Debug)]
pub struct Mirror<V> {
    values: BTreeMap<String, V>,
    synced: Option<String>,
}

impl<V> Default for Mirror<V> {
    fn default() -> Self {
        Mirror { values: BTreeMap::new(), synced: None }
    }
}

impl<V> Mirror<V> {
    /// Brings the values in line with the index as `sync.run` leaves it. `read` hands each row it reads to
    /// its callback with the row's key: the rows of `changed` (the keys this build wrote or removed) when
    /// the mirror matches `sync.prior_run` and nothing asks for all, every row otherwise (then `read` is
    /// given `None`). `set` makes a key's value from its row, given the value the key held (salsa inputs
    /// are updated in place, field by field, so that salsa re-runs only what an edit reaches). A key whose
    /// row is not read (one of `changed`, or any when every row was read) goes. A read that fails leaves
    /// a mirror that matches no run, read whole next time.
    pub fn sync<R, E>(
        &mut self,
        sync: &IndexSync<'_>,
        changed: &[String],
        read: impl FnOnce(Option<&[String]>, &mut dyn FnMut(String, R)) -> Result<(), E>,
        mut set: impl FnMut(Option<V>, R) -> V,
    ) -> Result<(), E> {
        let keys = (!sync.reseed && self.matches(sync.prior_run)).then_some(changed);
        self.synced = None;
        let mut before: BTreeMap<String, V> = match keys {
            Some(keys) => keys.iter().filter_map(|key| Some((key.clone(), self.values.remove(key)?))).collect(),
            None => std::mem::take(&mut self.values),
        };
        let values = &mut self.values;
        read(keys, &mut |key, row| {
            let value = set(before.remove(&key), row);
            values.insert(key, value);
        })?;
        self.synced = Some(sync.run.to_string());
        Ok(())
    }

    /// Sets the value of `key` from a row read apart from a sync (more of a row the last sync read in
    /// part, or a row read for a few keys only): what run the mirror matches is left to the caller.
    pub fn set<R>(&mut self, key: String, row: R, set: impl FnOnce(Option<V>, R) -> V) -> &V {
        let value = set(self.values.remove(&key), row);
        self.values.entry(key).or_insert(value)
    }

    /// Makes the values exactly `rows`' (a source of truth other than the index: `knowledge lint`'s walk);
    /// the mirror then matches no run.
    pub fn set_all<R>(&mut self, rows: impl IntoIterator<Item = (String, R)>, mut set: impl FnMut(Option<V>, R) -> V) {
        self.synced = None;
        let mut before = std::mem::take(&mut self.values);
        for (key, row) in rows {
            let value = set(before.remove(&key), row);
            self.values.insert(key, value);
        }
    }

    /// Whether the values match the index as `run` committed it.
    #[must_use]
    pub fn matches(&self, run: Option<&str>) -> bool {
        run.is_some() && self.synced.as_deref() == run
    }

    /// The values are about to be set from elsewhere than a sync: they match no run (until the next sync).
    pub fn forget(&mut self) {
        self.synced = None;
    }

    /// A build that changed no row this mirror reads: a mirror that matched the prior run matches this one.
    pub fn carry(&mut self, sync: &IndexSync<'_>) {
        if self.matches(sync.prior_run) {
            self.synced = Some(sync.run.to_string());
        }
    }

    #[must_use]
    pub fn get(&self, key: &str) -> Option<&V> {
        self.values.get(key)
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.values.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in index: rows by key, each read counted.
    struct Rows {
        rows: BTreeMap<String, u32>,
        read: Vec<String>,
    }

    impl Rows {
        fn read(&mut self, keys: Option<&[String]>, each: &mut dyn FnMut(String, u32)) -> Result<(), ()> {
            let keys: Vec<String> = keys.map_or_else(|| self.rows.keys().cloned().collect(), <[String]>::to_vec);
            for key in keys {
                self.read.push(key.clone());
                if let Some(&row) = self.rows.get(&key) {
                    each(key, row);
                }
            }
            Ok(())
        }
    }

    fn sync<'a>(prior_run: Option<&'a str>, changed: &'a [String], run: &'a str) -> IndexSync<'a> {
        IndexSync { reseed: false, prior_run, changed, run }
    }

    fn keys(keys: &[&str]) -> Vec<String> {
        keys.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_mirror_that_matches_the_prior_run_reads_only_the_changed_keys_and_ends_as_a_whole_read_does() {
        let mut index =
            Rows { rows: [("a", 1), ("b", 2), ("c", 3)].map(|(k, v)| (k.to_string(), v)).into(), read: vec![] };
        let mut mirror: Mirror<(u32, u32)> = Mirror::default();
        // A value remembers how many times it was set, to show which keys were touched.
        let set = |before: Option<(u32, u32)>, row: u32| (row, before.map_or(1, |(_, n)| n + 1));
        let none = keys(&[]);
        mirror.sync(&sync(None, &none, "r1"), &none, |k, each| index.read(k, each), set).unwrap();
        assert_eq!(index.read, keys(&["a", "b", "c"]), "a mirror that matches nothing reads every row");
        assert!(mirror.matches(Some("r1")));

        // Run r2 changes b and removes c.
        index.rows.insert("b".into(), 20);
        index.rows.remove("c");
        index.read.clear();
        let changed = keys(&["b", "c"]);
        mirror.sync(&sync(Some("r1"), &changed, "r2"), &changed, |k, each| index.read(k, each), set).unwrap();
        assert_eq!(index.read, changed, "a warm mirror reads the changed keys alone");
        assert_eq!(mirror.values().copied().collect::<Vec<_>>(), vec![(1, 1), (20, 2)]);

        // A cold mirror synced at r2 holds the same values.
        let mut cold: Mirror<(u32, u32)> = Mirror::default();
        cold.sync(&sync(Some("r1"), &changed, "r2"), &changed, |k, each| index.read(k, each), set).unwrap();
        let values = |m: &Mirror<(u32, u32)>| m.values().map(|(v, _)| *v).collect::<Vec<_>>();
        assert_eq!(values(&cold), values(&mirror));

        // Another prior run, a reseed, or a forgotten mirror reads everything again.
        for (prior, reseed, forget) in
            [(Some("r0"), false, false), (Some("r2"), true, false), (Some("r2"), false, true)]
        {
            let mut mirror_now: Mirror<(u32, u32)> = Mirror::default();
            mirror_now.sync(&sync(None, &none, "r2"), &none, |k, each| index.read(k, each), set).unwrap();
            if forget {
                mirror_now.forget();
            }
            index.read.clear();
            let at = IndexSync { reseed, prior_run: prior, changed: &none, run: "r3" };
            mirror_now.sync(&at, &none, |k, each| index.read(k, each), set).unwrap();
            assert_eq!(index.read, keys(&["a", "b"]));
        }
    }

    /// A read of one row, `a`.
    fn read_a(_: Option<&[String]>, each: &mut dyn FnMut(String, u32)) -> Result<(), ()> {
        each("a".into(), 1);
        Ok(())
    }

    #[test]
    fn a_failed_read_leaves_a_mirror_that_matches_no_run() {
        let mut mirror: Mirror<u32> = Mirror::default();
        let none = keys(&[]);
        mirror.sync(&sync(None, &none, "r1"), &none, read_a, |_, v| v).unwrap();
        let failed = mirror.sync(&sync(Some("r1"), &none, "r2"), &none, |_, _| Err(()), |_, v: u32| v);
        assert!(failed.is_err());
        assert!(!mirror.matches(Some("r1")) && !mirror.matches(Some("r2")));
        let mut carried = Mirror::default();
        carried.sync(&sync(None, &none, "r1"), &none, read_a, |_, v| v).unwrap();
        carried.carry(&sync(Some("r1"), &none, "r2"));
        assert!(carried.matches(Some("r2")));
        mirror.carry(&sync(Some("r1"), &none, "r2"));
        assert!(!mirror.matches(Some("r2")), "a mirror that matched no run is not carried");
    }
}
