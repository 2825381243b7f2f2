//! Code knowledge: the entities one file defines (components from manifests, symbols and tests from the
//! syntax tree, decisions from architecture decision records), each with its anchor in the file.
//!
//! Everything here is per file, so an edit re-derives only the edited file's entities. The edges between
//! entities (`depends_on`, `implemented_by`, `covers`, `governs`, `affects`) are not stored: the read side
//! resolves them from what each entity's payload records (a manifest's dependencies, the names a test
//! uses, the words a decision names), so they can never disagree with the entities they join.

mod decisions;
mod manifests;
mod syntax;
mod use_tree;

use std::sync::Arc;

use crate::Db;
use crate::inputs::{CodeSettings, SourceFile};

pub use syntax::Language;
pub use use_tree::{UseItem, use_items};

/// The kinds of entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    Component,
    Symbol,
    Test,
    Decision,
}

impl EntityType {
    pub const ALL: [EntityType; 4] =
        [EntityType::Component, EntityType::Symbol, EntityType::Test, EntityType::Decision];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Component => "component",
            EntityType::Symbol => "symbol",
            EntityType::Test => "test",
            EntityType::Decision => "decision",
        }
    }

    #[must_use]
    pub fn parse(name: &str) -> Option<EntityType> {
        EntityType::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// One entity a file defines.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Entity {
    /// Stable while the file keeps its path and the entity its name: `component/NAME`,
    /// `symbol/PATH#QUALIFIED::NAME`, `test/PATH#NAME`, `decision/FILE-STEM`.
    pub slug: String,
    #[serde(rename = "type")]
    pub entity_type: EntityType,
    pub name: String,
    /// Where in the file: 1-based lines, byte offsets into the revision's text.
    pub start_line: u32,
    pub end_line: u32,
    pub start_offset: u32,
    pub end_offset: u32,
    /// The content hash of the entity's text: a body edit changes it, an edit that only moves it does not.
    pub hash: String,
    pub payload: Payload,
}

/// The typed fields of each entity type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Payload {
    Component(ComponentPayload),
    Symbol(SymbolPayload),
    Test(TestPayload),
    Decision(DecisionPayload),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ComponentPayload {
    /// `cargo`, `npm`, `pypi` or `go`.
    pub ecosystem: String,
    /// `package`, or `workspace` for a manifest that only lists members.
    pub component_kind: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub version: Option<String>,
    /// The manifest's folder, project-relative (`""` at the root): the files under it belong to it, unless
    /// a deeper component's root holds them.
    pub root: String,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub members: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub dependencies: Vec<Dependency>,
}

/// A dependency as the manifest declares it: internal when another component has its name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Dependency {
    pub name: String,
    /// The version requirement, `workspace` for one inherited from a Cargo workspace, `path` for one
    /// named only by path.
    pub requirement: String,
    /// `normal`, `dev`, `build`, `peer` or `optional`.
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub path: Option<String>,
}

impl Dependency {
    /// The coordinate of an external dependency: `crates.io:serde@1`, `npm:react@^18`.
    #[must_use]
    pub fn coordinate(&self, ecosystem: &str) -> String {
        let registry = match ecosystem {
            "cargo" => "crates.io",
            other => other,
        };
        format!("{registry}:{}@{}", self.name, self.requirement)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SymbolPayload {
    pub language: String,
    /// `function`, `method`, `struct`, `enum`, `trait`, `type`, `class`, `interface`, `module`, `const`.
    pub symbol_kind: String,
    /// `public`, `crate` (visible inside its package only) or `private`.
    pub visibility: String,
    /// The module path as the language spells it, derived from the file's path (`chunking`,
    /// `pkg.sub.mod`, `src/util`).
    pub module: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub container: Option<String>,
    /// The declaration's first line, trimmed.
    pub signature: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TestPayload {
    pub language: String,
    pub module: String,
    /// The identifiers the test's body uses, sorted: what `covers` matches symbols against.
    pub references: Vec<String>,
    /// Those of `references` the body uses as members (`m.lock()`, `Mutex::lock`): what a method is
    /// matched against.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub members: Vec<String>,
    /// What the test's file imports (`knowledge_queries::chunks`, `pkg.mod`, `./util`), and what a Rust
    /// test's body imports itself (its own `use`, standard-library types it names by path), sorted.
    pub imports: Vec<String>,
    /// The functions a Rust test's body calls through a module's path (`task::spawn`, `std::thread::spawn`),
    /// sorted: one reached through another crate's module is that crate's.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub paths: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct DecisionPayload {
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub date: Option<String>,
    /// Components the record names explicitly (front matter `components`), and the lowercased words and
    /// code spans of its text, which `governs` matches component names against.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub components: Vec<String>,
    pub terms: Vec<String>,
}

/// The most bytes of an entity's text its search excerpt holds: a symbol's documentation, declaration and
/// the start of its body; a manifest's package section; a decision record's opening.
pub const EXCERPT_BYTES: usize = 1_500;

/// What the keyword and vector indexes hold for one entity, so that search can return it as a result of
/// kind `entity`: verbatim text (the start of its span, cut at a line break), a title naming it, and the
/// words of its names for the keyword index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntityExcerpt {
    /// Stable while the entity keeps its file, slug and excerpt text, like a text chunk's; unique in the
    /// index (two manifests may declare components of one name, so the path is part of it).
    pub id: String,
    pub title: String,
    pub identifiers: String,
    pub start: u32,
    pub end: u32,
    pub start_line: u32,
    pub end_line: u32,
    pub hash: String,
}

impl Entity {
    /// The entity's search excerpt in `text`, the revision it was derived from.
    #[must_use]
    pub fn excerpt(&self, path: &str, text: &str) -> EntityExcerpt {
        let start = (self.start_offset as usize).min(text.len());
        let end = (self.end_offset as usize).clamp(start, text.len());
        let mut cut = end;
        if end - start > EXCERPT_BYTES {
            cut = start + EXCERPT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            // At the last line break, unless the first line alone is longer than the excerpt.
            if let Some(line_end) = text[start..cut].rfind('\n') {
                cut = start + line_end + 1;
            }
        }
        let span = &text[start..cut];
        let title = self.search_title();
        // The parts of its qualified name (`FxHasher::write_str`, `rustc-hash`), then of the identifiers in its
        // text: not its path, whose words every entity of a folder shares.
        let qualified = self.slug.split_once('#').map_or(self.name.as_str(), |(_, qualified)| qualified);
        let parts = [crate::identifiers::identifier_parts(qualified), crate::identifiers::identifier_parts(span)];
        let identifiers = parts.iter().filter(|p| !p.is_empty()).map(String::as_str).collect::<Vec<_>>().join(" ");
        let hash = crate::content_hash(span.as_bytes());
        EntityExcerpt {
            id: crate::content_hash(format!("entity\0{path}\0{}\0{hash}", self.slug).as_bytes()),
            title,
            identifiers,
            start: offset32(start),
            end: offset32(cut),
            start_line: self.start_line,
            // The line of its last byte: the line breaks before that byte.
            end_line: self.start_line
                + u32::try_from(
                    span.as_bytes()[..span.len().saturating_sub(1)].iter().filter(|&&b| b == b'\n').count(),
                )
                .unwrap_or(0),
            hash,
        }
    }

    /// What a search result calls the entity: its type, kind and qualified name, and where it lives.
    #[must_use]
    pub fn search_title(&self) -> String {
        let qualified = self.slug.split_once('#').map_or(self.name.as_str(), |(_, q)| q);
        match &self.payload {
            Payload::Component(c) => format!("component {} ({} {})", self.name, c.ecosystem, c.component_kind),
            Payload::Symbol(s) if s.module.is_empty() => format!("{} {qualified}", s.symbol_kind),
            Payload::Symbol(s) => format!("{} {qualified} in {}", s.symbol_kind, s.module),
            Payload::Test(t) if t.module.is_empty() => format!("test {qualified}"),
            Payload::Test(t) => format!("test {qualified} in {}", t.module),
            Payload::Decision(d) => match &d.status {
                Some(status) => format!("decision {} ({status})", d.title),
                None => format!("decision {}", d.title),
            },
        }
    }
}

/// The entities of one file, in file order. Empty unless `[code]` is enabled; a file that is not a
/// manifest, code in a known language, or a decision record has none.
#[salsa::tracked(returns(clone))]
pub fn entities(db: &dyn Db, file: SourceFile) -> Arc<[Entity]> {
    let Some(settings) = CodeSettings::try_get(db) else { return Arc::new([]) };
    if !settings.enabled(db) {
        return Arc::new([]);
    }
    let path = file.path(db);
    let text = file.text(db);
    let mut found: Vec<Entity> = if let Some(component) = manifests::component(path, text) {
        component.into_iter().collect()
    } else if let Some(language) = Language::from_path(path) {
        syntax::entities(language, path, text)
    } else if settings.decision_globs(db).iter().any(|glob| glob_matches(glob, path)) {
        let doc = crate::parse(db, file);
        decisions::decision(path, text, doc, &crate::outline(db, file).title).into_iter().collect()
    } else {
        Vec::new()
    };
    for entity in &mut found {
        let span = text.get(entity.start_offset as usize..entity.end_offset as usize).unwrap_or("");
        entity.hash = crate::content_hash(span.as_bytes());
    }
    found.into()
}

/// A glob of `*` (within one path segment), `**` (any number of segments) and literal text: the
/// shapes decision-record globs take. Kept here, small, so the pure crate needs no glob engine.
fn glob_matches(glob: &str, path: &str) -> bool {
    fn segments(glob: &[&str], path: &[&str]) -> bool {
        match (glob.first(), path.first()) {
            (None, None) => true,
            (Some(&"**"), _) => segments(&glob[1..], path) || (!path.is_empty() && segments(glob, &path[1..])),
            (Some(pattern), Some(name)) => {
                segment(pattern.as_bytes(), name.as_bytes()) && segments(&glob[1..], &path[1..])
            }
            _ => false,
        }
    }
    fn segment(pattern: &[u8], name: &[u8]) -> bool {
        match pattern.split_first() {
            None => name.is_empty(),
            Some((b'*', rest)) => (0..=name.len()).any(|skip| segment(rest, &name[skip..])),
            Some((b'?', rest)) => !name.is_empty() && segment(rest, &name[1..]),
            Some((c, rest)) => name.first() == Some(c) && segment(rest, &name[1..]),
        }
    }
    let glob: Vec<&str> = glob.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    segments(&glob, &path)
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> u32 {
    let offset = offset.min(text.len());
    u32::try_from(text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1).unwrap_or(u32::MAX)
}

fn offset32(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

/// The folder of a project-relative path (`""` for a file at the root).
fn folder(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn globs_match_segments() {
        assert!(glob_matches("docs/adr/*.md", "docs/adr/0001-use-salsa.md"));
        assert!(!glob_matches("docs/adr/*.md", "docs/adr/old/0001.md"));
        assert!(glob_matches("**/adr/*.md", "docs/adr/0001.md"));
        assert!(glob_matches("**/adr/*.md", "adr/0001.md"));
        assert!(glob_matches("docs/**/*.md", "docs/a/b/c.md"));
        assert!(!glob_matches("docs/*.md", "notes/a.md"));
    }
}

#[cfg(test)]
mod extraction_tests {
    use super::{Entity, Payload, manifests, syntax};

    fn summary(entities: &[Entity]) -> Vec<String> {
        entities
            .iter()
            .map(|e| match &e.payload {
                Payload::Symbol(s) => {
                    format!("{} {} {} L{}-{}", e.slug, s.symbol_kind, s.visibility, e.start_line, e.end_line)
                }
                Payload::Test(t) => {
                    format!("{} refs={} imports={}", e.slug, t.references.join(","), t.imports.join("|"))
                }
                Payload::Component(c) => format!("{} {} {}", e.slug, c.ecosystem, c.root),
                Payload::Decision(d) => format!("{} {:?}", e.slug, d.status),
            })
            .collect()
    }

    #[test]
    fn rust_items_methods_visibility_and_tests() {
        let text = "use crate::chunking::{chunk, Chunk};\n/// A page.\npub struct Page { n: u32 }\n\nimpl Page {\n    pub fn new() -> Self { Page { n: 0 } }\n    fn helper(&self) {}\n}\n\nimpl std::fmt::Display for Page {\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) }\n}\n\npub(crate) trait Render { fn render(&self); }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn builds_a_page() {\n        let page = Page::new();\n        chunk(&page);\n    }\n}\n";
        let entities = syntax::entities(syntax::Language::Rust, "core/src/page.rs", text);
        assert_eq!(
            summary(&entities),
            [
                "symbol/core/src/page.rs#Page struct public L2-3",
                "symbol/core/src/page.rs#Page::new method public L6-6",
                "symbol/core/src/page.rs#Page::helper method private L7-7",
                "symbol/core/src/page.rs#Page::fmt method public L11-11",
                "symbol/core/src/page.rs#Render trait crate L14-14",
                "symbol/core/src/page.rs#Render::render method crate L14-14",
                "symbol/core/src/page.rs#tests module private L16-24",
                "test/core/src/page.rs#tests::builds_a_page refs=Page,chunk,new,page imports=crate::chunking::{chunk, Chunk}|super::*",
            ]
        );
        let Payload::Symbol(symbol) = &entities[1].payload else { panic!("a symbol") };
        assert_eq!(symbol.module, "page");
        assert_eq!(symbol.signature, "pub fn new() -> Self { Page { n: 0 } }");
        // An entity's offsets are its text in the file, with the documentation and attributes right above it,
        // but not the file's own documentation.
        assert!(
            text[entities[0].start_offset as usize..entities[0].end_offset as usize]
                .starts_with("/// A page.\npub struct Page")
        );
        let documented = syntax::entities(syntax::Language::Rust, "a.rs", "//! The crate.\nfn first() {}\n");
        assert_eq!(summary(&documented), ["symbol/a.rs#first function private L2-2"]);
    }

    #[test]
    fn a_rust_tests_own_imports_and_standard_paths_are_its_imports() {
        let text = "use crate::Counter;\n\n#[test]\nfn counts() {\n    use std::sync::Arc;\n    let m = std::sync::Mutex::new(Counter::new());\n    let _ = Arc::new(m);\n}\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Rust, "tests/it.rs", text)),
            [
                "test/tests/it.rs#counts refs=Arc,Counter,Mutex,new,std,sync imports=crate::Counter|std::sync::Arc|std::sync::Mutex"
            ]
        );
    }

    #[test]
    fn an_attribute_imported_as_another_name_for_test_marks_tests() {
        // tokio's own tests: `#[maybe_tokio_test]` is `#[tokio::test]` (or wasm's test) under another name.
        let text = "#[cfg(not(target_family = \"wasm\"))]\nuse tokio::test as maybe_tokio_test;\nuse tokio::sync::Mutex;\n\n#[maybe_tokio_test]\nasync fn debug_format() {\n    let m = Mutex::new(1);\n    m.lock().await;\n}\n\n#[maybe_not]\nfn helper() {}\n";
        let grouped = "use tokio::{sync::Mutex, test as t};\n\n#[t]\nasync fn locks() {}\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Rust, "tests/grouped.rs", grouped)),
            ["test/tests/grouped.rs#locks refs= imports=tokio::{sync::Mutex, test as t}"]
        );
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Rust, "tests/sync_mutex.rs", text)),
            [
                "test/tests/sync_mutex.rs#debug_format refs=Mutex,lock,new imports=tokio::sync::Mutex|tokio::test as maybe_tokio_test",
                "symbol/tests/sync_mutex.rs#helper function private L11-12",
            ]
        );
        // Members are the names used after `.` or `::`: `lock` and `new` here, not a variable of that name.
        let text = "#[test]\nfn reads() {\n    let lock = RwLock::new(0);\n    lock.read();\n    store.Get;\n    \
                    assert!(format!(\"{:?}\", m.write()).is_empty());\n}\n";
        let entities = syntax::entities(syntax::Language::Rust, "tests/rw.rs", text);
        let Payload::Test(test) = &entities[0].payload else { panic!("a test") };
        assert_eq!(test.members, ["Get", "is_empty", "new", "read", "write"]);
        assert_eq!(
            test.references,
            ["Get", "RwLock", "assert", "format", "is_empty", "lock", "new", "read", "store", "write"]
        );
        // The functions called through a module's path, whatever crate the module is: not a type's
        // (`RwLock::new`), not a relative path (`super::helper`).
        let text = "#[test]\nfn spawns() {\n    task::spawn(1);\n    std::thread::spawn(f);\n    super::helper();\n    \
                    RwLock::new(0);\n}\n";
        let entities = syntax::entities(syntax::Language::Rust, "tests/spawn.rs", text);
        let Payload::Test(test) = &entities[0].payload else { panic!("a test") };
        assert_eq!(test.paths, ["std::thread::spawn", "task::spawn"]);
    }

    #[test]
    fn items_inside_an_item_level_macro_block_are_entities() {
        // tokio defines much of its API inside `cfg_rt! { … }`-style blocks.
        let text = "cfg_rt! {\n    /// Spawns.\n    pub fn spawn() {}\n\n    cfg_inner! {\n        pub struct Handle;\n    }\n}\n\n\
                    impl Handle {\n    feature! {\n        #![cfg(unix)]\n        pub fn current() {}\n    }\n}\n";
        let entities = syntax::entities(syntax::Language::Rust, "src/task.rs", text);
        assert_eq!(
            summary(&entities),
            [
                "symbol/src/task.rs#spawn function public L2-3",
                "symbol/src/task.rs#Handle struct public L6-6",
                "symbol/src/task.rs#Handle::current method public L13-13",
            ]
        );
        assert!(text[entities[0].start_offset as usize..entities[0].end_offset as usize].starts_with("/// Spawns."));
    }

    #[test]
    fn a_long_entitys_excerpt_is_its_start_cut_at_a_line_break() {
        let body = "    let x = 1;\n".repeat(200);
        let text = format!("/// Sums.\npub fn sum() {{\n{body}}}\nfn other() {{}}\n");
        let entities = syntax::entities(syntax::Language::Rust, "src/sum.rs", &text);
        let excerpt = entities[0].excerpt("src/sum.rs", &text);
        let span = &text[excerpt.start as usize..excerpt.end as usize];
        assert!(span.starts_with("/// Sums.\npub fn sum()") && span.ends_with('\n'), "{span}");
        assert!(span.len() <= super::EXCERPT_BYTES && span.len() > super::EXCERPT_BYTES - 20);
        assert_eq!((excerpt.start_line, excerpt.end_line), (1, 1 + span.matches('\n').count() as u32 - 1));
        assert_eq!(excerpt.title, "function sum in sum");
        // A short entity is whole; ids differ between entities and follow the text.
        let other = entities[1].excerpt("src/sum.rs", &text);
        assert_eq!(&text[other.start as usize..other.end as usize], "fn other() {}");
        assert_ne!(other.id, excerpt.id);
        let edited = text.replace("fn other() {}", "fn other() { 1; }");
        assert_ne!(
            syntax::entities(syntax::Language::Rust, "src/sum.rs", &edited)[1].excerpt("src/sum.rs", &edited).id,
            other.id
        );
    }

    #[test]
    fn python_go_and_script_symbols_and_tests() {
        let python = "import os\nfrom pkg.util import helper\n\nclass Store:\n    def get(self):\n        pass\n    def _cache(self):\n        pass\n\n@decorator\ndef load(path):\n    return helper(path)\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Python, "src/pkg/store.py", python)),
            [
                "symbol/src/pkg/store.py#Store class public L4-8",
                "symbol/src/pkg/store.py#Store.get method public L5-6",
                "symbol/src/pkg/store.py#Store._cache method private L7-8",
                "symbol/src/pkg/store.py#load function public L10-12",
            ]
        );
        let python_test = "from pkg.store import load\n\ndef test_load():\n    assert load('x')\n\nclass TestStore:\n    def test_get(self):\n        Store().get()\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Python, "tests/test_store.py", python_test)),
            [
                "test/tests/test_store.py#test_load refs=load imports=pkg.store",
                "symbol/tests/test_store.py#TestStore class public L6-8",
                "test/tests/test_store.py#TestStore.test_get refs=Store,get imports=pkg.store",
            ]
        );
        let go = "package store\n\nimport (\n\t\"fmt\"\n\t\"example.com/app/util\"\n)\n\ntype Store struct{}\ntype Reader interface{ Read() }\n\nfunc (s *Store) Get() string { return fmt.Sprint(util.X) }\nfunc helper() {}\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Go, "store/store.go", go)),
            [
                "symbol/store/store.go#Store struct public L8-8",
                "symbol/store/store.go#Reader interface public L9-9",
                "symbol/store/store.go#Store.Get method public L11-11",
                "symbol/store/store.go#helper function crate L12-12",
            ]
        );
        let go_test = "package store\n\nimport \"testing\"\n\nfunc TestGet(t *testing.T) { (&Store{}).Get() }\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::Go, "store/store_test.go", go_test)),
            ["test/store/store_test.go#TestGet refs=Get,Store imports=testing"]
        );
        let ts = "import { x } from './util';\nexport function load(): void {}\nexport class Cache {\n  get(k: string) {}\n  private drop() {}\n}\nexport interface Options { size: number }\nconst local = () => 1;\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::TypeScript, "src/cache.ts", ts)),
            [
                "symbol/src/cache.ts#load function public L2-2",
                "symbol/src/cache.ts#Cache class public L3-6",
                "symbol/src/cache.ts#Cache.get method public L4-4",
                "symbol/src/cache.ts#Cache.drop method private L5-5",
                "symbol/src/cache.ts#Options interface public L7-7",
                "symbol/src/cache.ts#local function private L8-8",
            ]
        );
        let js_test = "import { load } from '../src/cache';\ndescribe('cache', () => {\n  it('loads', () => { load(); });\n});\ntest('top', () => {});\n";
        assert_eq!(
            summary(&syntax::entities(syntax::Language::JavaScript, "test/cache.test.js", js_test)),
            [
                "test/test/cache.test.js#cache.loads refs=load imports=../src/cache",
                "test/test/cache.test.js#top refs= imports=../src/cache",
            ]
        );
    }

    #[test]
    fn manifests_define_components_with_dependencies() {
        let cargo = "[package]\nname = \"core\"\nversion = \"0.2.0\"\n\n[dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\nutil = { path = \"../util\" }\nshared.workspace = true\nalias = { package = \"real-name\", version = \"2\" }\n\n[dev-dependencies]\ntempfile = \"3\"\n";
        let component =
            manifests::component("crates/core/Cargo.toml", cargo).expect("a manifest").expect("a component");
        assert_eq!(component.slug, "component/core");
        assert_eq!((component.start_line, component.end_line), (1, 4));
        let Payload::Component(payload) = &component.payload else { panic!("a component") };
        assert_eq!(payload.root, "crates/core");
        let deps: Vec<String> =
            payload.dependencies.iter().map(|d| format!("{} {} {}", d.name, d.requirement, d.scope)).collect();
        assert_eq!(
            deps,
            ["real-name 2 normal", "serde 1 normal", "shared workspace normal", "tempfile 3 dev", "util path normal"]
        );
        assert_eq!(payload.dependencies[1].coordinate("cargo"), "crates.io:serde@1");

        let workspace = "[workspace]\nmembers = [\"crates/*\"]\n";
        let component = manifests::component("Cargo.toml", workspace).unwrap().unwrap();
        assert_eq!(component.slug, "component/workspace");

        let npm = r#"{"name": "@app/web", "version": "1.0.0", "dependencies": {"react": "^18"}, "devDependencies": {"@app/util": "workspace:*"}}"#;
        let component = manifests::component("web/package.json", npm).unwrap().unwrap();
        assert_eq!(component.slug, "component/@app/web");

        let pyproject = "[project]\nname = \"My_Pkg\"\nversion = \"0.1\"\ndependencies = [\"requests[socks]>=2.31; python_version<'3.12'\", \"attrs\"]\n";
        let component = manifests::component("pyproject.toml", pyproject).unwrap().unwrap();
        let Payload::Component(payload) = &component.payload else { panic!("a component") };
        assert_eq!(component.name, "my-pkg");
        assert_eq!(
            payload.dependencies.iter().map(|d| d.coordinate("pypi")).collect::<Vec<_>>(),
            ["pypi:attrs@*", "pypi:requests@>=2.31"]
        );

        let gomod = "module example.com/app\n\ngo 1.22\n\nrequire (\n\tgithub.com/pkg/errors v0.9.1\n\tgolang.org/x/text v0.3.0 // indirect\n)\n";
        let component = manifests::component("go.mod", gomod).unwrap().unwrap();
        assert_eq!(component.slug, "component/example.com/app");
        assert_eq!(component.start_line, 1);

        assert_eq!(manifests::component("Cargo.toml", "not [toml"), Some(None), "a broken manifest defines nothing");
        assert_eq!(manifests::component("src/lib.rs", ""), None);
    }
}
