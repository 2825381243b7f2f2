//! The differential test: random edit sequences against a small vault, and after every step the
//! incremental index and output folder compared with a clean build of the same tree. Hand-picked golden
//! steps missed a stale index-entry bug that random sequences hit at once; this test is the promise
//! "incremental output equals a clean build" checked rather than hoped.
//!
//! Each step edits, appends, inserts mid-file, adds, deletes, renames or empties files (Markdown, text and, for
//! `[code]`, a manifest, Rust and Python); changes wikilinks (by concept and by file name),
//! titles (two sources come to share one), aliases, definitions and front matter (labels included); adds or
//! removes notes (`knowledge add`, `notes rm`) and ingested sources (`ingest source`, `ingest rm`, labelled or
//! not) through the functions those commands call; or changes `kc.toml` (`[chunking]`,
//! `[wiki]`, `[lint]`, permission rules) or a template. The incremental build either keeps its `Compiler`
//! (as `--watch` would, warming its catalog up after a build or not) or starts a new one (as a new CLI
//! process does). After each step, the comparison
//! covers every table's content rows (history tables and run ids, mtimes and row ids aside), every file
//! under the output folder, every chunk's text against its file's bytes, the keyword index's integrity,
//! and no temporary files.
//!
//! `KNOWLEDGE_DIFF_CASES` (default 24) and `KNOWLEDGE_DIFF_STEPS` (default 10) size the run,
//! `KNOWLEDGE_DIFF_SEED_BASE` moves it to other seeds, and `KNOWLEDGE_DIFF_SEED` replays one case. A failure
//! prints the seed and a shrunk list of steps. docs/architecture.md gives the longer run for a release.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use knowledge::build::{Compiler, Silent};
use knowledge::config::Project;

#[path = "support/fake_writer.rs"]
mod fake_writer;
#[path = "support/postgres.rs"]
mod pg_server;

const OUTPUT: &str = ".hasna/knowledge";
/// The output folder's spare file, which every generated file is written through and builds keep.
const SPARE: &str = knowledge::wiki::SPARE;
const BUILT_IN_PAGE: &str = include_str!("../templates/page.md.j2");
const CONCEPTS: [&str; 6] = ["Alpha", "Beta", "Gamma", "Delta Force", "Foo", "Compost"];
const FILES: [&str; 16] = [
    "docs/a.md",
    "docs/b.md",
    "docs/c.md",
    "docs/guide/d.md",
    "docs/guide/e.md",
    "notes/f.txt",
    // Notes named in a Dendron dot hierarchy at the top level: their pages' section is `garden-beds`.
    "garden.beds.md",
    "garden.beds.soil.md",
    "docs/secret/g.md",
    ".hasna/knowledge/wiki/handwritten.md",
    // Code, for `[code]`: a crate, its test, a Python module, and a decision record.
    "Cargo.toml",
    "src/lib.rs",
    "tests/it.rs",
    "pkg/mod.py",
    "docs/adr/0001-choice.md",
    // MDX, as Docusaurus and Starlight write it: imports, components and their indented children.
    "docs/guide/h.mdx",
];

/// SplitMix64: small, seedable, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// One change to the tree, concrete enough to replay on its own.
#[derive(Debug, Clone)]
enum Action {
    Write(String, String),
    Remove(String),
    Rename(String, String),
    /// `knowledge add TEXT`: a note in the output folder's notes store.
    AddNote(String),
    /// `knowledge notes rm`: the N-th note (modulo the count), when there is one.
    RemoveNote(usize),
    /// `knowledge ingest source`: a source from outside the tree, stored under `file:///external/NAME.md`
    /// with its labels.
    Ingest {
        name: String,
        text: String,
        labels: Vec<String>,
    },
    /// `knowledge ingest rm`.
    RemoveIngested(String),
}

/// The stored lists the write commands keep in the output folder: a clean build is given them as they are.
const STORED: [&str; 3] = ["notes.json", "ingested.json", "ingested/"];

/// One step: its changes, and whether the build runs in a new process (a new `Compiler`).
#[derive(Debug, Clone)]
struct Step {
    actions: Vec<Action>,
    new_process: bool,
    /// With a kept compiler: whether the build before this step was followed by `warm_up`, as `--watch`
    /// warms the catalog after each build while it waits for the next change.
    warmed: bool,
    /// With a kept compiler: whether it is told the paths the step changed, as `--watch` tells it what its
    /// watcher reported, so that its build brings its kept walk up to date instead of walking.
    told: bool,
    /// With a new process: a plain compiler, as a one-shot `knowledge build` makes (its close checkpoints;
    /// it keeps no walk and no connection), rather than the watch's.
    plain: bool,
}

/// The tree as the steps leave it: what a clean build is given.
#[derive(Default, Clone)]
struct Tree(BTreeMap<String, String>);

impl Tree {
    fn apply(&mut self, action: &Action) {
        match action {
            Action::Write(path, text) => {
                self.0.insert(path.clone(), text.clone());
            }
            Action::Remove(path) => {
                self.0.remove(path);
            }
            Action::Rename(from, to) => {
                if let Some(text) = self.0.remove(from) {
                    self.0.insert(to.clone(), text);
                }
            }
            // What the write commands store (a note's id is made from the clock) is read back from the
            // folder they wrote in: `take_stored`.
            Action::AddNote(_) | Action::RemoveNote(_) | Action::Ingest { .. } | Action::RemoveIngested(_) => {}
        }
    }

    /// The output folder's stored lists as the write commands left them in `root`.
    fn take_stored(&mut self, root: &Path) {
        let output = format!("{OUTPUT}/");
        self.0.retain(|path, _| !path.strip_prefix(&output).is_some_and(|p| STORED.iter().any(|s| p.starts_with(s))));
        let mut files = vec![format!("{OUTPUT}/notes.json"), format!("{OUTPUT}/ingested.json")];
        for entry in std::fs::read_dir(root.join(OUTPUT).join("ingested")).into_iter().flatten().flatten() {
            files.push(format!("{OUTPUT}/ingested/{}", entry.file_name().to_string_lossy()));
        }
        for file in files {
            if let Ok(text) = std::fs::read_to_string(root.join(&file)) {
                self.0.insert(file, text);
            }
        }
    }

    fn write_all(&self, root: &Path) {
        for (path, text) in &self.0 {
            write(&root.join(path), text);
        }
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Applies an action to a working folder the way a person would (a rename is a rename), and returns the
/// paths a file watcher would report: those the action names and the folders it created.
fn apply_on_disk(root: &Path, action: &Action) -> Vec<String> {
    let new_folders = |path: &str| -> Vec<String> {
        let mut folders = Vec::new();
        let mut folder = Path::new(path).parent();
        while let Some(at) = folder.filter(|at| !at.as_os_str().is_empty()) {
            if !root.join(at).exists() {
                folders.push(at.to_string_lossy().into_owned());
            }
            folder = at.parent();
        }
        folders
    };
    match action {
        Action::Write(path, text) => {
            let mut reported = new_folders(path);
            write(&root.join(path), text);
            reported.push(path.clone());
            reported
        }
        Action::Remove(path) => {
            let _ = std::fs::remove_file(root.join(path));
            vec![path.clone()]
        }
        Action::Rename(from, to) => {
            let mut reported = new_folders(to);
            if root.join(from).is_file() {
                std::fs::create_dir_all(root.join(to).parent().unwrap()).unwrap();
                std::fs::rename(root.join(from), root.join(to)).unwrap();
            }
            reported.extend([from.clone(), to.clone()]);
            reported
        }
        // Through the same functions the commands call, so the stored files are theirs.
        Action::AddNote(text) => {
            knowledge::sources::notes::add(&root.join(OUTPUT), text).unwrap();
            vec![format!("{OUTPUT}/notes.json")]
        }
        Action::RemoveNote(n) => {
            let notes = knowledge::sources::notes::load(&root.join(OUTPUT)).unwrap();
            if !notes.is_empty() {
                knowledge::sources::notes::remove(&root.join(OUTPUT), &notes[n % notes.len()].id).unwrap();
            }
            vec![format!("{OUTPUT}/notes.json")]
        }
        Action::Ingest { name, text, labels } => {
            let document = knowledge::sources::ingested::Document {
                reference: format!("file:///external/{name}.md"),
                resolver: "file",
                owner: "file".to_string(),
                revision_id: knowledge_queries::content_hash(text.as_bytes()),
                mime: "text/markdown".to_string(),
                title: name.clone(),
                labels: labels.clone(),
                text: text.clone(),
            };
            let (entry, _) =
                knowledge::sources::ingested::store(&root.join(OUTPUT), &document, "2026-12-01T00:00:00Z").unwrap();
            vec![format!("{OUTPUT}/ingested.json"), format!("{OUTPUT}/{}", entry.file)]
        }
        Action::RemoveIngested(name) => {
            let output = root.join(OUTPUT);
            match knowledge::sources::ingested::remove(&output, &format!("file:///external/{name}.md")) {
                Ok(removed) => vec![format!("{OUTPUT}/ingested.json"), format!("{OUTPUT}/{}", removed.file)],
                Err(_) => Vec::new(),
            }
        }
    }
}

fn sentence(rng: &mut Rng) -> String {
    let concept = *rng.pick(&CONCEPTS);
    let other = *rng.pick(&CONCEPTS);
    match rng.below(15) {
        0 => format!("See [[{concept}]] for the details."),
        1 => format!(
            "**{concept}** is what {} calls the {} layer.",
            other.to_lowercase(),
            rng.pick(&["soil", "tide", "wire"])
        ),
        2 => format!("[[{concept}|the {}]] leans on [[{other}]].", other.to_lowercase()),
        // Links from the site's root too, which `[lint] site_roots` resolves (a folder, a page without its extension).
        3 => format!(
            "Read [the guide](guide/d.md), [{concept}](b.md#{}) and [the start](/{}).",
            other.to_lowercase(),
            rng.pick(&["guide/", "guide/e", "docs/c.md"])
        ),
        4 => format!("Words about {} and zqxv{} here.", concept.to_lowercase(), rng.below(5)),
        5 => format!("This is called *{concept}* in the field. Also see #{}.", other.to_lowercase().replace(' ', "-")),
        // Code in a list item, as RFCs nest their examples: a list over the chunk target is cut around it.
        6 if rng.chance(50) => format!(
            "- {concept}, with its example:\n\n  ```\n  code [[NotALink]] here\n  {}\n  ```\n- And {} after it.",
            "more code ".repeat(rng.below(30)),
            other.to_lowercase()
        ),
        // A sentence introducing its example (a quote ending in its colon takes the block below it), then an
        // admonition as MkDocs writes one and a container as VitePress does, whose fences are labels, never quoted.
        6 if rng.chance(50) => format!(
            "The [[{concept}]] runs as shown:\n\n```console\n$ run {}\n```\n\n!!! tip \"{other}\"\n    The tip names [[{other}]].\n\n:::tip Note\nA container names [[{other}]].\n:::",
            "step ".repeat(rng.below(40))
        ),
        6 => "```\ncode [[NotALink]] here\n```".to_string(),
        // A paragraph of embeds alone: a page lists its source rather than quote it.
        7 => format!("![[{concept}]] ![[{}]]", other.to_lowercase()),
        // A link by file name, which names whatever title that file has (issue 40, item 9).
        8 if rng.chance(50) => format!("See [[{}]].", rng.pick(&["a", "b", "c", "d", "e"])),
        // A term used again and again, in plural, in code and across a wrap: a source that discusses a
        // concept something else names (issue 41).
        9 => format!(
            "{concept}s shape {other}, and each {} needs {}; `{}` holds\n{} too.",
            concept.to_lowercase(),
            other.to_lowercase(),
            concept.replace(' ', ""),
            concept.to_lowercase()
        ),
        // A term introduced by emphasis, then used, and markup a quote renders away.
        10 => format!(
            "We treat the *{}* as a unit; the {} grows.<!-- ignore --> See [{other}][ref] and <a id=\"old\"></a>.\n\n[ref]: b.md",
            concept.to_lowercase(),
            concept.to_lowercase()
        ),
        // Blocks of markup alone, which no chunk holds: a comment to editors and an anchor for old links.
        11 => format!("<!-- Old heading: {concept}. Do not remove. -->\n\n<a id=\"old-{}\"></a>", other.to_lowercase()),
        // A table whose rows name concepts, at times longer than a chunk: a page shows a quoted row under
        // its header, which may be in an earlier chunk than the row.
        12 => {
            let count = rng.below(12) + 1;
            let mut table = "| Row | What |\n| --- | ---- |".to_string();
            // A row that only labels the rows below it: a place a page lists, not quotes.
            if rng.chance(40) {
                let _ = write!(table, "\n| **[[{concept}]]** |  |");
            }
            for n in 0..count {
                let _ = write!(
                    table,
                    "\n| {n} | [[{}]] fills row {n} with words enough to need a line. |",
                    rng.pick(&CONCEPTS)
                );
            }
            table
        }
        // An index of links, each item a link and at most a word or two: listed on a page, not quoted.
        13 => {
            format!("- [[{concept}]]\n- Using [{other}](b.md)\n- [[{}]] and more words beside it", other.to_lowercase())
        }
        // A heading and a phrase used twice, of a word no concept is named by: places the plan does not read,
        // so a new process keeps its plan (unless the word's places shift a signal it reads).
        14 => {
            let word = format!("zqxv{}", rng.below(5));
            format!("## Notes on {word}\n\nThe {word} ledger grows. The {word} ledger shrinks.")
        }
        _ => format!(
            "A longer paragraph that goes on about {concept} and {other} so that chunking has text to split, with enough words to pass a target of two hundred bytes without trouble."
        ),
    }
}

/// Code for the code paths: items named after the concepts (so a concept rename renames an entity), a test
/// that uses some of them, dependencies that name the other crate or none.
fn code(rng: &mut Rng, path: &str) -> String {
    let mut text = String::new();
    let name = |rng: &mut Rng| rng.pick(&CONCEPTS).replace(' ', "");
    match path.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "toml" => {
            let _ = write!(text, "[package]\nname = \"{}\"\n\n[dependencies]\n", rng.pick(&["garden", "soil"]));
            if rng.chance(50) {
                let _ = writeln!(text, "{} = \"1\"", rng.pick(&["serde", "soil", "rand"]));
            }
        }
        "py" => {
            for _ in 0..rng.below(3) + 1 {
                let _ =
                    write!(text, "class {}:\n    def {}(self):\n        pass\n\n", name(rng), name(rng).to_lowercase());
            }
            if rng.chance(40) {
                let _ = write!(text, "def test_{}():\n    {}()\n", name(rng).to_lowercase(), name(rng));
            }
        }
        _ => {
            for _ in 0..rng.below(3) + 1 {
                let visibility = if rng.chance(60) { "pub " } else { "" };
                let _ = write!(text, "{visibility}struct {};\n\n", name(rng));
                let _ = write!(text, "{visibility}fn {}() {{}}\n\n", name(rng).to_lowercase());
            }
            if rng.chance(50) {
                let _ = write!(
                    text,
                    "#[cfg(test)]\nmod tests {{\n    #[test]\n    fn {}() {{ super::{}(); }}\n}}\n",
                    name(rng).to_lowercase(),
                    name(rng).to_lowercase()
                );
            }
        }
    }
    text
}

fn document(rng: &mut Rng, path: &str) -> String {
    if ["Cargo.toml", "src/lib.rs", "tests/it.rs", "pkg/mod.py"].contains(&path) {
        return code(rng, path);
    }
    let mut text = String::new();
    if path.contains("/adr/") && rng.chance(60) {
        let _ = write!(text, "Status: {}\n\n", rng.pick(&["accepted", "proposed"]));
    }
    if rng.chance(40) {
        text.push_str("---\n");
        if rng.chance(50) {
            let _ = writeln!(text, "title: {}", rng.pick(&CONCEPTS));
        }
        if rng.chance(40) {
            let _ = writeln!(text, "aliases: [{}]", rng.pick(&["Al", "Bee", "Gam", "Compo"]));
        }
        if rng.chance(30) {
            let _ = writeln!(text, "tags: [{}]", rng.pick(&["garden", "soil"]));
        }
        if rng.chance(25) {
            let _ = writeln!(text, "visibility: {}", rng.pick(&["internal", "public"]));
        }
        if rng.chance(30) {
            let _ = writeln!(text, "category: {}", rng.pick(&["plants", "tools"]));
        }
        text.push_str("---\n\n");
    }
    if !path.ends_with(".txt") || rng.chance(30) {
        let _ = write!(text, "# {}\n\n", rng.pick(&CONCEPTS));
    }
    let mdx = path.ends_with(".mdx");
    if mdx && rng.chance(70) {
        text.push_str("import Tabs from '@theme/Tabs';\nimport { TabItem } from '@theme/TabItem';\n\n");
    }
    for _ in 0..rng.below(4) + 1 {
        if rng.chance(25) {
            let _ = write!(text, "## {}\n\n", rng.pick(&CONCEPTS));
        }
        if mdx && rng.chance(50) {
            // A component's children indented for the eye: prose, fences, headings and tables, no code block.
            let child: String = sentence(rng).lines().map(|line| format!("    {line}\n")).collect();
            let _ = write!(
                text,
                "{{/* {} */}}\n<Tabs>\n  <TabItem label=\"{}\">\n\n{child}\n  </TabItem>\n</Tabs>",
                rng.pick(&["prettier-ignore", "TODO"]),
                rng.pick(&CONCEPTS)
            );
        } else {
            text.push_str(&sentence(rng));
        }
        text.push_str("\n\n");
    }
    text
}

fn config(rng: &mut Rng) -> String {
    // The project's name heads `llms.txt`: renaming the project re-derives it.
    let mut text = format!("version = 1\n[project]\nname = \"{}\"\n", rng.pick(&["vault", "garden"]));
    let _ = write!(
        text,
        "[chunking]\ntarget_bytes = {}\noverlap_bytes = {}\n",
        rng.pick(&[200, 400, 1600]),
        rng.pick(&[0, 40])
    );
    let _ = write!(
        text,
        "[wiki]\nenabled = {}\nmin_sources = {}\nmax_quotes = {}\nmax_related = {}\n",
        rng.chance(85),
        rng.pick(&[1, 2, 3]),
        rng.pick(&[1, 3, 12]),
        rng.pick(&[0, 2, 8])
    );
    if rng.chance(30) {
        text.push_str("section_field = \"category\"\n");
    }
    if rng.chance(40) {
        text.push_str("templates_dir = \"tpl\"\n");
    }
    // A provider writes the summaries (one fake server for the process, its answers a function of the
    // request): written pages, refused writings and the cache must come out as a clean build's.
    let writer = rng.chance(30);
    if writer {
        text.push_str("writer = \"fake\"\n");
    }
    if rng.chance(30) {
        text.push_str("[lint]\non_build = true\n");
        if rng.chance(50) {
            text.push_str("site_roots = [\"docs\"]\n");
        }
    }
    if rng.chance(40) {
        text.push_str("[embeddings]\nprovider = \"fake\"\ndimensions = 32\n");
    }
    if rng.chance(30) {
        text.push_str("[permissions]\nrules = [{ path = \"docs/secret/**\", labels = [\"internal\"] }]\n");
    }
    if rng.chance(70) {
        text.push_str("[code]\nenabled = true\n");
        if rng.chance(30) {
            text.push_str("decisions = [\"docs/**/*.md\"]\n");
        }
    }
    if writer {
        let _ = write!(
            text,
            "[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"m\"\n",
            writer_port()
        );
    }
    text
}

/// The process's fake writer (its port and its count of calls), started on first use; it writes tersely
/// (too few sentences) for one concept, so that refused writings are generated too.
static WRITER: std::sync::OnceLock<(u16, std::sync::Arc<std::sync::atomic::AtomicUsize>)> = std::sync::OnceLock::new();

fn writer_port() -> u16 {
    WRITER.get_or_init(|| fake_writer::fake_writer("Beta")).0
}

/// A random step over the tree as it stands.
fn step(rng: &mut Rng, tree: &Tree) -> Step {
    let present: Vec<String> = tree.0.keys().filter(|p| FILES.contains(&p.as_str())).cloned().collect();
    let mut actions = Vec::new();
    for _ in 0..rng.below(2) + 1 {
        let existing = if present.is_empty() { None } else { Some(rng.pick(&present).clone()) };
        let action = match (rng.below(12), existing) {
            (0, Some(path)) => {
                let text = &tree.0[&path];
                Action::Write(path, format!("{text}{}\n\n", sentence(rng)))
            }
            (1, Some(path)) => {
                // Mid-file: after a line break near the middle, so offsets of later chunks move.
                let text = &tree.0[&path];
                let middle = text[..text.len() / 2].rfind('\n').map_or(0, |at| at + 1);
                Action::Write(path, format!("{}{}\n\n{}", &text[..middle], sentence(rng), &text[middle..]))
            }
            (2, Some(path)) => Action::Write(path, String::new()),
            (3, Some(path)) => Action::Remove(path),
            (4, Some(path)) => {
                let to = rng.pick(&FILES).to_string();
                if tree.0.contains_key(&to) { Action::Remove(path) } else { Action::Rename(path, to) }
            }
            (5, Some(path)) => {
                // Rewrite one sentence-bearing line in place, the same length where possible.
                let text = &tree.0[&path];
                let (from, to) = (*rng.pick(&CONCEPTS), *rng.pick(&CONCEPTS));
                let replaced = text.replacen(from, to, 1);
                Action::Write(path, replaced)
            }
            (6, _) if rng.chance(50) => Action::Write("kc.toml".to_string(), config(rng)),
            (6, Some(path)) => {
                // Two sources come to share a title: another file takes this one's first heading.
                let title = tree.0[&path].lines().find_map(|line| line.strip_prefix("# ")).unwrap_or("Gamma");
                let other = rng.pick(&FILES[..5]).to_string();
                let text = if rng.chance(50) { String::new() } else { format!("{}\n\n", sentence(rng)) };
                Action::Write(other, format!("# {title}\n\n{text}"))
            }
            (6, None) => Action::Write("kc.toml".to_string(), config(rng)),
            (8, _) if rng.chance(60) => match rng.below(4) {
                0 => Action::AddNote(format!("A note on {}. {}", rng.pick(&CONCEPTS), sentence(rng))),
                1 => Action::RemoveNote(rng.below(8)),
                2 => {
                    let labels = if rng.chance(30) { vec!["internal".to_string()] } else { Vec::new() };
                    let name = rng.pick(&["runbook", "memo"]).to_string();
                    let text = document(rng, "external.md");
                    Action::Ingest { name, text, labels }
                }
                _ => Action::RemoveIngested(rng.pick(&["runbook", "memo"]).to_string()),
            },
            (7, _) => {
                if rng.chance(50) {
                    Action::Write(
                        "tpl/page.md.j2".to_string(),
                        BUILT_IN_PAGE.replace("generated: true", "generated: true\nvariant: one"),
                    )
                } else {
                    Action::Remove("tpl/page.md.j2".to_string())
                }
            }
            _ => {
                let path = rng.pick(&FILES).to_string();
                let text = document(rng, &path);
                Action::Write(path, text)
            }
        };
        actions.push(action);
    }
    Step { actions, new_process: rng.chance(50), warmed: rng.chance(50), told: rng.chance(70), plain: rng.chance(50) }
}

fn initial(rng: &mut Rng) -> Tree {
    let mut tree = Tree::default();
    tree.0.insert("kc.toml".to_string(), config(rng));
    // The docs, the dotted notes, and the crate's manifest and library.
    for path in FILES.iter().take(5).chain(&FILES[6..8]).chain(&FILES[10..12]).chain(&FILES[15..]) {
        tree.0.insert((*path).to_string(), document(rng, path));
    }
    tree
}

fn build(compiler: &mut Compiler, root: &Path) -> Result<(), String> {
    let project = Project::load(&root.join("kc.toml")).map_err(|e| e.to_string())?;
    compiler.build(&project, &Silent).map(|_| ()).map_err(|e| knowledge::error_chain(&e))
}

/// Runs a sequence of steps from `tree`; `Err` describes the first step whose incremental output differs
/// from a clean build's.
fn run(tree: &Tree, steps: &[Step]) -> Result<(), String> {
    let work = tempfile::tempdir().unwrap();
    tree.write_all(work.path());
    // The compiler `--watch` keeps; a new process's is the watch's or a one-shot build's.
    let mut compiler = Compiler::watching();
    build(&mut compiler, work.path())?;
    // A server's connection and search cache, kept across the builds as `knowledge serve` keeps them.
    let mut server = KeptSearch::default();
    server.check(work.path()).map_err(|difference| format!("after the first build: {difference}"))?;
    // As `--watch` does after a build: read the catalog while the tree is quiet, with the settings that
    // build used. Failing only costs the next build that read.
    let warm_up = |compiler: &mut Compiler, next: Option<&Step>| {
        if next.is_some_and(|next| !next.new_process && next.warmed)
            && let Ok(project) = Project::load(&work.path().join("kc.toml"))
        {
            let _ = compiler.warm_up(&project);
        }
    };
    warm_up(&mut compiler, steps.first());
    let mut now = tree.clone();
    for (n, step) in steps.iter().enumerate() {
        let mut reported = Vec::new();
        for action in &step.actions {
            reported.extend(apply_on_disk(work.path(), action));
            now.apply(action);
        }
        now.take_stored(work.path());
        if step.new_process {
            compiler = if step.plain { Compiler::new() } else { Compiler::watching() };
        } else if step.told {
            compiler.changed(reported);
        }
        let incremental = build(&mut compiler, work.path());
        // As `--watch` does once a build's line is out: the checkpoint its build left.
        if let Ok(project) = Project::load(&work.path().join("kc.toml")) {
            let _ = compiler.checkpoint(&project);
        }
        if incremental.is_ok() {
            warm_up(&mut compiler, steps.get(n + 1));
        }
        let clean = tempfile::tempdir().unwrap();
        now.write_all(clean.path());
        let clean_result = build(&mut Compiler::new(), clean.path());
        match (incremental, clean_result) {
            (Ok(()), Ok(())) => {}
            // A step may make the tree unbuildable (a template or setting); both builds must say so.
            (Err(_), Err(_)) => continue,
            (a, b) => return Err(format!("step {n}: incremental {a:?}, clean {b:?}")),
        }
        compare(work.path(), clean.path()).map_err(|difference| format!("step {n}: {difference}"))?;
        server.check(work.path()).map_err(|difference| format!("step {n}: {difference}"))?;
    }
    Ok(())
}

/// A read-only connection and the search cache a server keeps with it across builds (reopened only when the
/// index file is replaced, as the server's pool does).
#[derive(Default)]
struct KeptSearch(
    Option<(rusqlite::Connection, knowledge::retrieval::search::SearchCache, knowledge::store::FileIdentity)>,
);

impl KeptSearch {
    /// Searches through the kept cache answer as a new process's searches do, after every build.
    fn check(&mut self, root: &Path) -> Result<(), String> {
        use knowledge::retrieval::search::{self, ResultKind, SearchCache, SearchMode, SearchRequest};
        let index = root.join(OUTPUT).join("knowledge.db");
        let identity = knowledge::store::file_identity(&index);
        if self.0.as_ref().map(|(_, _, kept)| Some(kept)) != Some(identity.as_ref()) {
            let conn = knowledge::store::open_read_only(&index).map_err(|e| e.to_string())?;
            self.0 = identity.map(|identity| (conn, SearchCache::kept(), identity));
        }
        let Some((kept, cache, _)) = &mut self.0 else { return Ok(()) };
        let fresh = knowledge::store::open_read_only(&index).map_err(|e| e.to_string())?;
        let access = knowledge::retrieval::access::Access::load(&fresh, None).map_err(|e| e.to_string())?;
        for (query, kinds) in [
            ("alpha", vec![]),
            ("delta force compost", vec![]),
            ("gamma zqxv3 soil", vec![]),
            ("beta tide", vec![ResultKind::SourceChunk]),
            ("foo wire", vec![ResultKind::WikiPage, ResultKind::IndexEntry]),
        ] {
            let request = SearchRequest {
                query: query.to_string(),
                mode: SearchMode::Keyword,
                limit: 10,
                kinds,
                entity_types: Vec::new(),
                highlight: search::Highlight::Markdown,
            };
            let answer = |response: rusqlite::Result<search::SearchResponse>| {
                response.map(|r| serde_json::to_string(&r.results).unwrap()).map_err(|e| e.to_string())
            };
            let once = answer(search::search(&fresh, &request, &access))?;
            let through_cache = answer(search::search_cached(kept, cache, &request, &access))?;
            if once != through_cache {
                return Err(format!("`{query}` through a kept cache:\n{through_cache}\nin a new process:\n{once}"));
            }
        }
        Ok(())
    }
}

fn compare(incremental: &Path, clean: &Path) -> Result<(), String> {
    let (a, b) = (snapshot(incremental)?, snapshot(clean)?);
    for (key, value) in &b {
        match a.get(key) {
            Some(mine) if mine == value => {}
            Some(mine) => return Err(format!("{key} differs:\n{}", first_difference(value, mine))),
            None => return Err(format!("{key}: only in the clean build")),
        }
    }
    if let Some(key) = a.keys().find(|key| !b.contains_key(*key)) {
        return Err(format!("{key}: only in the incremental build:\n{}", a[key]));
    }
    Ok(())
}

fn first_difference(clean: &str, incremental: &str) -> String {
    let clean_lines: std::collections::BTreeSet<&str> = clean.lines().collect();
    let incremental_lines: std::collections::BTreeSet<&str> = incremental.lines().collect();
    let mut out = String::new();
    for line in clean_lines.difference(&incremental_lines).take(8) {
        let _ = writeln!(out, "  only clean:       {line}");
    }
    for line in incremental_lines.difference(&clean_lines).take(8) {
        let _ = writeln!(out, "  only incremental: {line}");
    }
    if out.is_empty() {
        out = "  the same lines in another order".to_string();
    }
    out
}

/// Everything a build derives, as comparable text: each table's rows and each generated file. Checks the
/// invariants of one index on the way (every chunk resolves, FTS integrity, no temporary files).
fn snapshot(root: &Path) -> Result<BTreeMap<String, String>, String> {
    let output = root.join(OUTPUT);
    let mut out = BTreeMap::new();
    // Read-write only for FTS5's integrity check, which is an INSERT that changes nothing.
    let conn = rusqlite::Connection::open(output.join("knowledge.db")).map_err(|e| e.to_string())?;
    check_chunks_resolve(&conn, root, &output)?;
    check_vector_files(&conn, &output)?;
    conn.execute_batch("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        .map_err(|e| format!("the keyword index does not match the chunk rows: {e}"))?;
    // Searches weigh words by the chunk total read from FTS5's own row count: it must be the chunks' count.
    let counted: f64 =
        conn.query_row("SELECT count(*) FROM chunks", [], |row| row.get(0)).map_err(|e| e.to_string())?;
    let total = knowledge::store::chunk_total(&conn).map_err(|e| e.to_string())?;
    if total != counted {
        return Err(format!("searches count {total} chunks, the index holds {counted}"));
    }
    for (table, text) in dump_tables(&conn) {
        out.insert(format!("table {table}"), text);
    }
    let mut folders = vec![output.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let relative = path.strip_prefix(&output).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if relative != "logs" {
                    folders.push(path);
                }
                continue;
            }
            // The spare every file is written through is kept from one build to the next; any other
            // temporary file is a write left unfinished.
            if relative.ends_with(".tmp") && relative != SPARE {
                return Err(format!("a temporary file was left: {relative}"));
            }
            // Locks are the writers' own, held or not; they hold a pid.
            // The vector files are checked against the index above: their rows' `seq`s are identities.
            let volatile = relative.starts_with("knowledge.db")
                || relative == SPARE
                || relative == "artifacts.stat"
                || relative.ends_with(".lock")
                || relative.starts_with("cache/vectors/");
            if !volatile {
                out.insert(format!("file {relative}"), std::fs::read_to_string(&path).map_err(|e| e.to_string())?);
            }
        }
    }
    Ok(out)
}

/// The vector files searches map hold exactly the index's ready vectors, when its generation is complete for
/// its last run: the base's rows of the delta's sources replaced by the delta's, as a search sees them.
fn check_vector_files(conn: &rusqlite::Connection, output: &Path) -> Result<(), String> {
    let meta = |key: &str| -> Option<String> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0)).ok()
    };
    let (Some(model), Some(run)) = (meta("embeddings_model").filter(|m| !m.is_empty()), meta("last_run")) else {
        return Ok(());
    };
    if meta("embedded_run").as_ref() != Some(&run) {
        return Ok(());
    }
    let mut mapped = knowledge::embeddings::mapped_rows(&output.join("knowledge.db"), &model, &run)
        .ok_or_else(|| format!("no vector file holds the vectors of {run}"))?;
    mapped.sort_by_key(|row| row.0);
    let mut statement = conn
        .prepare(
            "SELECT c.seq, s.path, c.entity, v.vector FROM vector_index_entries e
             JOIN chunk_embeddings v ON v.model = e.model AND v.text_hash = e.text_hash
             JOIN chunks c ON c.id = e.chunk_id JOIN sources s ON s.id = c.source_id
             WHERE e.model = ?1 AND e.status = 'ready' ORDER BY c.seq",
        )
        .map_err(|e| e.to_string())?;
    let expected: Vec<(i64, String, Option<String>, Vec<f32>)> = statement
        .query_map([&model], |row| {
            let bytes: Vec<u8> = row.get(3)?;
            let vector = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, vector))
        })
        .map_err(|e| e.to_string())?
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if mapped != expected {
        let differs =
            mapped.iter().zip(&expected).position(|(a, b)| a != b).unwrap_or(mapped.len().min(expected.len()));
        return Err(format!(
            "the vector files hold {} rows, the index {} ready vectors; first difference at {differs}: {:?} / {:?}",
            mapped.len(),
            expected.len(),
            mapped.get(differs).map(|row| (row.0, &row.1)),
            expected.get(differs).map(|row| (row.0, &row.1)),
        ));
    }
    Ok(())
}

/// Columns that record history or identity rather than derived content.
const VOLATILE_COLUMNS: [&str; 10] = [
    "id",
    "seq",
    "indexed_run",
    "run_id",
    "mtime_ns",
    "created_run",
    "updated_run",
    "updated_at",
    "done_run",
    "queued_at",
];
/// Tables that are history (one row per build) rather than derived content, or the keyword index's
/// shadow tables (checked by FTS5's own integrity check).
const HISTORY_TABLES: [&str; 6] =
    ["runs", "run_events", "source_revisions", "passage_origins", "reindex_queue", "entity_changes"];

fn dump_tables(conn: &rusqlite::Connection) -> Vec<(String, String)> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'chunks_fts%' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut dumps = Vec::new();
    for table in tables.into_iter().filter(|t| !HISTORY_TABLES.contains(&t.as_str())) {
        let columns: Vec<String> = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let selected: Vec<String> = columns
            .iter()
            .filter(|c| !VOLATILE_COLUMNS.contains(&c.as_str()))
            .map(|c| {
                if c == "source_id" {
                    "(SELECT path FROM sources WHERE id = source_id) AS source".to_string()
                } else {
                    format!("\"{c}\"")
                }
            })
            .collect();
        let mut sql = format!("SELECT {} FROM \"{table}\"", selected.join(", "));
        if table == "meta" {
            sql.push_str(" WHERE key NOT IN ('embedded_run', 'last_run', 'lint_run', 'scan_started_ns', 'log_due', 'log_due_end')");
        }
        let mut statement = conn.prepare(&sql).unwrap();
        let names: Vec<String> = statement.column_names().map(str::to_string).collect();
        let mut rows: Vec<String> = statement
            .query_map([], |row| {
                let mut line = String::new();
                for (i, name) in names.iter().enumerate() {
                    let value = match row.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => "NULL".to_string(),
                        rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                        rusqlite::types::ValueRef::Real(v) => v.to_string(),
                        rusqlite::types::ValueRef::Text(v) => format!("{:?}", String::from_utf8_lossy(v)),
                        rusqlite::types::ValueRef::Blob(v) => knowledge_queries::content_hash(v),
                    };
                    let _ = write!(line, "{name}={value} | ");
                }
                Ok(line)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        dumps.push((table, rows.join("\n")));
    }
    dumps
}

fn check_chunks_resolve(conn: &rusqlite::Connection, root: &Path, output: &Path) -> Result<(), String> {
    let mut statement = conn
        .prepare(
            "SELECT s.path, s.revision, c.revision, c.text, c.hash, c.start_offset, c.end_offset,
                    (SELECT o.path FROM storage_objects o WHERE o.uri = s.uri)
             FROM chunks c JOIN sources s ON s.id = c.source_id",
        )
        .unwrap();
    let mut rows = statement.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let path: String = row.get(0).unwrap();
        let (source_revision, revision): (String, String) = (row.get(1).unwrap(), row.get(2).unwrap());
        let (text, hash): (String, String) = (row.get(3).unwrap(), row.get(4).unwrap());
        let (start, end): (i64, i64) = (row.get(5).unwrap(), row.get(6).unwrap());
        let artifact: Option<String> = row.get(7).unwrap();
        // A note's text is in the notes store; an ingested source's in its stored file.
        let note = path.strip_prefix("knowledge://item/");
        let bytes = if let Some(id) = note {
            let notes = knowledge::sources::notes::load(output).map_err(|e| e.to_string())?;
            let note = notes.into_iter().find(|n| n.id == id).ok_or(format!("{path}: no such note"))?;
            note.text.into_bytes()
        } else {
            let ingested = knowledge::sources::ingested::load(output).map_err(|e| e.to_string())?;
            let file = match (&artifact, ingested.iter().find(|s| s.reference == path)) {
                (Some(artifact), _) => output.join(artifact),
                (None, Some(source)) => source.text_path(output).map_err(|e| e.to_string())?,
                (None, None) => root.join(&path),
            };
            std::fs::read(&file).map_err(|e| format!("{path}: {}: {e}", file.display()))?
        };
        let slice = bytes.get(start as usize..end as usize).unwrap_or_default();
        if revision != source_revision
            || knowledge_queries::content_hash(&bytes) != revision
            || slice != text.as_bytes()
        {
            return Err(format!("a chunk of {path} does not resolve: {text:?} at {start}..{end}"));
        }
        if knowledge_queries::content_hash(text.as_bytes()) != hash {
            return Err(format!("a chunk of {path} has another text's hash"));
        }
    }
    Ok(())
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Drops steps (and actions within them) while the sequence still fails, so a failure reads short.
fn shrink(tree: &Tree, mut steps: Vec<Step>) -> (Vec<Step>, String) {
    let mut failure = run(tree, &steps).expect_err("the sequence failed before");
    let mut i = 0;
    while i < steps.len() {
        let mut fewer = steps.clone();
        fewer.remove(i);
        match run(tree, &fewer) {
            Err(message) => (steps, failure) = (fewer, message),
            Ok(()) => i += 1,
        }
    }
    (steps, failure)
}

#[test]
fn random_edit_sequences_build_what_a_clean_build_builds() {
    let cases = env_number("KNOWLEDGE_DIFF_CASES", 24);
    let steps_per_case = env_number("KNOWLEDGE_DIFF_STEPS", 10) as usize;
    let seeds: Vec<u64> = match std::env::var("KNOWLEDGE_DIFF_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => {
            let base = env_number("KNOWLEDGE_DIFF_SEED_BASE", 0x5eed_0000);
            (0..cases).map(|case| base + case).collect()
        }
    };
    for seed in seeds {
        let mut rng = Rng(seed);
        let tree = initial(&mut rng);
        let mut now = tree.clone();
        let mut steps = Vec::new();
        for _ in 0..steps_per_case {
            let step = step(&mut rng, &now);
            for action in &step.actions {
                now.apply(action);
            }
            steps.push(step);
        }
        if run(&tree, &steps).is_err() {
            let (steps, failure) = shrink(&tree, steps);
            let mut listing = String::new();
            for (n, step) in steps.iter().enumerate() {
                let _ = writeln!(
                    listing,
                    "step {n} (new process: {}, plain: {}, warmed: {}, told: {}):",
                    step.new_process, step.plain, step.warmed, step.told
                );
                for action in &step.actions {
                    let _ = writeln!(listing, "  {action:?}");
                }
            }
            panic!(
                "seed {seed} (replay with KNOWLEDGE_DIFF_SEED={seed}): {failure}\ninitial tree: {:?}\nshrunk steps:\n{listing}",
                tree.0
            );
        }
    }
    if let Some((_, calls)) = WRITER.get() {
        assert!(calls.load(std::sync::atomic::Ordering::SeqCst) > 0, "a configured writer wrote no page in any case");
    }
}

/// Issue 40, item 9: two sources come to share a title that links by file name point at. Every way the
/// next build can run (a new process, a kept compiler warmed or not, told the paths or not) gives what a
/// clean build gives.
#[test]
fn sources_that_come_to_share_a_title_build_what_a_clean_build_builds() {
    let mut tree = Tree::default();
    tree.0.insert("kc.toml".to_string(), "version = 1\n[project]\nname = \"vault\"\n".to_string());
    tree.0.insert("docs/n.md".to_string(), "# Gamma Ray\n".to_string());
    tree.0.insert("docs/x.md".to_string(), "See [[n]].\n".to_string());
    tree.0.insert("docs/y.md".to_string(), "See [[n]].\n".to_string());
    tree.0.insert("docs/c.md".to_string(), String::new());
    tree.0.insert("docs/sub/z.md".to_string(), "See [[Gamma Ray]].\n".to_string());
    for shape in 0..8 {
        let (new_process, warmed, told) = (shape & 1 == 1, shape & 2 == 2, shape & 4 == 4);
        let steps = [
            Step {
                actions: vec![Action::Write("docs/c.md".to_string(), "# Gamma Ray\n".to_string())],
                new_process,
                warmed,
                told,
                plain: warmed,
            },
            Step {
                actions: vec![Action::Write("docs/c.md".to_string(), "# Gamma Ray\n\nA note.\n".to_string())],
                new_process: !new_process,
                warmed,
                told,
                plain: told,
            },
        ];
        if let Err(failure) = run(&tree, &steps) {
            panic!("new process {new_process}, warmed {warmed}, told {told}: {failure}");
        }
    }
}

/// The Postgres store follows the index through random edit sequences: after every build (a kept `Compiler`
/// or a new one), the store's rows for the case's project equal the local index's. Each case is its own
/// project in one store, so every publish also proves it leaves the other projects' rows alone (each case
/// is compared after the others wrote). `KNOWLEDGE_DIFF_STORE_CASES` (default 8) sizes the run.
#[test]
fn random_edit_sequences_keep_the_postgres_store_equal_to_the_index() {
    let pg = pg_server::Postgres::start();
    let cases = env_number("KNOWLEDGE_DIFF_STORE_CASES", 8);
    let steps_per_case = env_number("KNOWLEDGE_DIFF_STEPS", 10) as usize;
    let base = env_number("KNOWLEDGE_DIFF_SEED_BASE", 0x5eed_0000) + 0x10_0000;
    let mut finished: Vec<(tempfile::TempDir, String)> = Vec::new();
    for seed in base..base + cases {
        let mut rng = Rng(seed);
        let tree = initial(&mut rng);
        let work = tempfile::tempdir().unwrap();
        tree.write_all(work.path());
        let project_id = format!("case-{seed}");
        let publish = |compiler: &mut Compiler| -> Result<(), String> {
            let mut project = Project::load(&work.path().join("kc.toml")).map_err(|e| e.to_string())?;
            project.config.store.from_command_line = Some(pg.url.clone());
            project.config.store.project = Some(project_id.clone());
            compiler.build(&project, &Silent).map(|_| ()).map_err(|e| knowledge::error_chain(&e))
        };
        let index = work.path().join(OUTPUT).join("knowledge.db");
        let mut compiler = Compiler::new();
        let mut now = tree.clone();
        for n in 0..=steps_per_case {
            if n > 0 {
                let step = step(&mut rng, &now);
                for action in &step.actions {
                    apply_on_disk(work.path(), action);
                    now.apply(action);
                }
                if step.new_process {
                    compiler = Compiler::new();
                }
            }
            // A step may make the tree unbuildable (a template or setting): nothing is committed or published.
            if publish(&mut compiler).is_ok()
                && let Some(difference) = pg.mirror_difference(&index, &project_id)
            {
                panic!("seed {seed}, step {n}: the store differs from the index: {difference}");
            }
        }
        finished.push((work, project_id));
    }
    for (work, project_id) in &finished {
        let index = work.path().join(OUTPUT).join("knowledge.db");
        assert_eq!(pg.mirror_difference(&index, project_id), None, "{project_id} after the other cases");
    }
}

/// Runs the `knowledge` binary in `root` with a failpoint (or none).
fn run_binary(root: &Path, failpoint: Option<&str>) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"));
    command.arg("-C").arg(root).arg("build").env_remove("KNOWLEDGE_FAILPOINT");
    if let Some(failpoint) = failpoint {
        command.env("KNOWLEDGE_FAILPOINT", failpoint);
    }
    command.output().unwrap()
}

/// The crash tests: a build killed at each kind of write it makes (inside the index transaction, after
/// the commit, inside the embedding stage's transaction, appending the log, writing a generated file's temporary file, renaming it into place,
/// deleting a file the index dropped, writing the stat cache), then a normal build, must converge to a
/// clean build's result with no stray files, and the log must hold each build's lines once.
#[test]
fn a_build_killed_at_any_write_is_completed_by_the_next() {
    let mut tree = Tree::default();
    // With a provider, so the embedding stage (its own transaction, after the build's) is killed too.
    tree.0.insert(
        "kc.toml".to_string(),
        "version = 1\n[project]\nname = \"vault\"\n[embeddings]\nprovider = \"fake\"\ndimensions = 32\n".to_string(),
    );
    for (path, text) in [
        ("docs/a.md", "# A\n\nSee [[Foo]] and [[Bar]].\n"),
        ("docs/b.md", "# B\n\nAlso [[Foo]] and [[Bar]].\n"),
        ("docs/c.md", "# C\n\nOnly [[Baz]].\n"),
        ("docs/d.md", "# D\n\nAnd [[Baz]].\n"),
    ] {
        tree.0.insert(path.to_string(), text.to_string());
    }
    // One edit that removes a page (Baz), adds one (Qux) and changes another (Foo).
    let edit = [
        Action::Remove("docs/c.md".to_string()),
        Action::Write("docs/e.md".to_string(), "# E\n\nNew [[Qux]].\n".to_string()),
        Action::Write("docs/f.md".to_string(), "# F\n\nMore [[Qux]].\n".to_string()),
        Action::Write("docs/a.md".to_string(), "# A\n\nSee [[Foo]], then [[Bar]].\n".to_string()),
    ];
    let mut edited = tree.clone();
    edit.iter().for_each(|action| edited.apply(action));
    let clean = tempfile::tempdir().unwrap();
    edited.write_all(clean.path());
    assert!(run_binary(clean.path(), None).status.success());

    for failpoint in [
        "before-commit",
        "after-commit",
        "before-stage-commit",
        "log",
        "write",
        "write:3",
        "rename",
        "rename:3",
        "exchanged",
        "exchanged:2",
        "unlink",
        "stat-cache",
    ] {
        let work = tempfile::tempdir().unwrap();
        tree.write_all(work.path());
        assert!(run_binary(work.path(), None).status.success());
        for action in &edit {
            apply_on_disk(work.path(), action);
        }
        let killed = run_binary(work.path(), Some(failpoint));
        assert!(!killed.status.success(), "{failpoint}: the build never reached the failpoint");
        let index = work.path().join(OUTPUT).join("knowledge.db");
        let conn = rusqlite::Connection::open_with_flags(&index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
        assert_eq!(integrity, "ok", "{failpoint}: the index stays readable and intact");
        let killed_run: String =
            conn.query_row("SELECT value FROM meta WHERE key = 'last_run'", [], |r| r.get(0)).unwrap();
        drop(conn);

        let next = run_binary(work.path(), None);
        assert!(next.status.success(), "{failpoint}: {}", String::from_utf8_lossy(&next.stderr));
        if let Err(difference) = compare(work.path(), clean.path()) {
            panic!("{failpoint}: after the next build, the output differs from a clean build's: {difference}");
        }
        let mut log = String::new();
        let mut folders = vec![work.path().join(OUTPUT).join("logs")];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    log.push_str(&std::fs::read_to_string(path).unwrap());
                }
            }
        }
        assert!(log.ends_with('\n'), "{failpoint}: the log ends with a whole line");
        let mut lines: Vec<&str> = log.lines().collect();
        let count = lines.len();
        for line in &lines {
            serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{failpoint}: `{line}`: {e}"));
        }
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), count, "{failpoint}: no line is logged twice");
        // The last committed run (the killed one, unless it died before its commit) is in the log.
        assert!(log.contains(&format!("\"run_id\":\"{killed_run}\"")), "{failpoint}: {killed_run} is not logged");
    }
}
