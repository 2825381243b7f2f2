//! What a source is, told by the path the index stores for it: a file of the project (`docs/a.md`), a
//! source the tool made itself (a note, a generated page, an index shard), stored as its `knowledge://`
//! ref, or a source ingested from outside the tree, stored as its own ref (`https://…`, `s3://…`,
//! `open-files://…`, `file:///…`). This type owns those spellings and the `file://` one, so no other code
//! matches string prefixes.

use std::fmt;

/// Where a source comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A file of the project; its stored path is relative to the root.
    File,
    /// A note of the notes store (`knowledge add`).
    Note,
    /// A generated concept page.
    Page,
    /// A generated index shard (one per wiki section).
    Shard,
    /// A source ingested from outside the tree (`knowledge ingest source`); its stored path is its ref.
    External,
}

/// Every `knowledge://` ref starts with this.
pub const TOOL_SCHEME: &str = "knowledge://";
const FILE_SCHEME: &str = "file://";
/// What ends a ref's scheme.
pub const SCHEME_END: &str = "://";

impl Origin {
    /// What a stored path of this origin starts with (nothing, for a project file).
    #[must_use]
    pub fn prefix(self) -> &'static str {
        match self {
            Origin::File | Origin::External => "",
            Origin::Note => "knowledge://item/",
            Origin::Page => "knowledge://wiki/",
            Origin::Shard => "knowledge://index/",
        }
    }
}

/// A source, by its origin and its name there: a file's path, a note's id, a page's slug or a shard's
/// section. It borrows the name, so telling a stored path's origin allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceRef<'a> {
    origin: Origin,
    name: &'a str,
}

impl<'a> SourceRef<'a> {
    /// The source a stored path names.
    #[must_use]
    pub fn from_path(path: &'a str) -> SourceRef<'a> {
        for origin in [Origin::Note, Origin::Page, Origin::Shard] {
            if let Some(name) = path.strip_prefix(origin.prefix()) {
                return SourceRef { origin, name };
            }
        }
        let origin = if path.contains(SCHEME_END) { Origin::External } else { Origin::File };
        SourceRef { origin, name: path }
    }

    /// The source a ref names as people and answers write it: `file://PATH` (a project file; `file:///…`,
    /// an absolute path, is an ingested one), any other ref, or a bare project path.
    #[must_use]
    pub fn from_uri(uri: &'a str) -> SourceRef<'a> {
        match uri.strip_prefix(FILE_SCHEME) {
            Some(path) if !path.starts_with('/') => SourceRef { origin: Origin::File, name: path },
            _ => SourceRef::from_path(uri),
        }
    }

    /// Whether `uri` names a source ingested from outside the tree.
    #[must_use]
    pub fn is_external(uri: &str) -> bool {
        SourceRef::from_uri(uri).origin == Origin::External
    }

    #[must_use]
    pub fn page(slug: &'a str) -> SourceRef<'a> {
        SourceRef { origin: Origin::Page, name: slug }
    }

    #[must_use]
    pub fn shard(section: &'a str) -> SourceRef<'a> {
        SourceRef { origin: Origin::Shard, name: section }
    }

    #[must_use]
    pub fn note(id: &'a str) -> SourceRef<'a> {
        SourceRef { origin: Origin::Note, name: id }
    }

    #[must_use]
    pub fn origin(self) -> Origin {
        self.origin
    }

    /// The name within the origin: a file's path, a note's id, a page's slug, a shard's section.
    #[must_use]
    pub fn name(self) -> &'a str {
        self.name
    }

    /// The page's slug, if this is a generated page.
    #[must_use]
    pub fn page_slug(self) -> Option<&'a str> {
        (self.origin == Origin::Page).then_some(self.name)
    }

    /// The shard's section, if this is an index shard.
    #[must_use]
    pub fn shard_section(self) -> Option<&'a str> {
        (self.origin == Origin::Shard).then_some(self.name)
    }

    /// The path the index stores: a file's own path, or the `knowledge://` ref of the tool's sources.
    #[must_use]
    pub fn path(self) -> String {
        format!("{}{}", self.origin.prefix(), self.name)
    }

    /// The stable ref answers cite: `file://PATH`, or the `knowledge://` ref.
    #[must_use]
    pub fn uri(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for SourceRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.origin {
            Origin::File => write!(f, "{FILE_SCHEME}{}", self.name),
            Origin::External => f.write_str(self.name),
            origin => write!(f, "{}{}", origin.prefix(), self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Origin, SourceRef};

    #[test]
    fn a_stored_path_round_trips_through_its_origin_and_name() {
        for (path, origin, name, uri) in [
            ("docs/a.md", Origin::File, "docs/a.md", "file://docs/a.md"),
            ("knowledge://wiki/ownership", Origin::Page, "ownership", "knowledge://wiki/ownership"),
            ("knowledge://index/garden", Origin::Shard, "garden", "knowledge://index/garden"),
            ("knowledge://item/n1", Origin::Note, "n1", "knowledge://item/n1"),
            ("https://example.org/a", Origin::External, "https://example.org/a", "https://example.org/a"),
            ("s3://bucket/a.md", Origin::External, "s3://bucket/a.md", "s3://bucket/a.md"),
            ("file:///srv/docs/a.md", Origin::External, "file:///srv/docs/a.md", "file:///srv/docs/a.md"),
        ] {
            let source = SourceRef::from_path(path);
            assert_eq!((source.origin(), source.name()), (origin, name));
            assert_eq!(source.path(), path);
            assert_eq!(source.uri(), uri);
            assert_eq!(SourceRef::from_uri(uri), source, "an answer's ref names the same source");
        }
        assert_eq!(SourceRef::from_uri("docs/a.md"), SourceRef::from_path("docs/a.md"), "a bare path is a file");
        assert_eq!(SourceRef::from_uri("docs/a.md").origin(), Origin::File);
        assert_eq!(SourceRef::from_path("knowledge://wiki/x").page_slug(), Some("x"));
        assert_eq!(SourceRef::from_path("wiki/x.md").page_slug(), None, "a hand-written page is a file");
    }
}
