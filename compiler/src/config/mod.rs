//! `kc.toml`: the project configuration, read strictly.
//!
//! Unknown keys, wrong types and invalid values are errors that name the file, line and column: a typo in
//! a config file must never be silently ignored. See `docs/configuration.md`.

pub mod hosted;
pub mod ingest;
pub mod init;
pub mod providers;
mod read;
pub mod rules;
pub mod scope;

use read::line_column;
pub use read::parse;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// The file name `knowledge` looks for, from the working directory upwards.
pub const CONFIG_FILE: &str = "kc.toml";

/// The only configuration format version this binary reads.
pub const CONFIG_VERSION: u32 = 1;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub version: Spanned<u32>,
    #[serde(default)]
    pub project: ProjectConfig,
    #[serde(default)]
    pub sources: SourcesConfig,
    #[serde(default)]
    pub chunking: ChunkingConfig,
    #[serde(default)]
    pub output: OutputConfig,
    #[serde(default)]
    pub embeddings: EmbeddingsConfig,
    #[serde(default)]
    pub wiki: WikiConfig,
    #[serde(default)]
    pub lint: LintConfig,
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// Model providers by name (`[providers.NAME]`), for generated answers.
    #[serde(default)]
    pub providers: std::collections::BTreeMap<Spanned<String>, providers::ProviderConfig>,
    /// Web search through a provider's own search tool (`knowledge web search`), off by default.
    #[serde(default)]
    pub web: providers::WebConfig,
    /// Sources from outside the tree (`knowledge ingest source`): which refs may be read, within which limits.
    #[serde(default)]
    pub ingest: ingest::IngestConfig,
    /// A remote `knowledge serve --http` that `search`, `get`, `context pack` and `ask` answer from instead.
    #[serde(default)]
    pub remote: RemoteConfig,
    /// The shared build cache `knowledge publish` and `knowledge pull` use.
    #[serde(default)]
    pub cache: CacheConfig,
    /// Code entities: components, symbols, tests and decisions (docs/code.md). Off by default.
    #[serde(default)]
    pub code: CodeConfig,
    /// A Postgres store the build publishes its index to and readers search (docs/deployment.md).
    #[serde(default)]
    pub store: StoreConfig,
    /// Other repositories compiled into indexes of their own, by name: a project folder (its kc.toml names
    /// the index) or an index file. `resolve_dependency` looks coordinates up there, at query time only.
    #[serde(default)]
    pub dependencies: std::collections::BTreeMap<String, Spanned<String>>,
}

/// `[code]`: whether the build derives code entities, which files it reads for them (added to the sources,
/// so code is searchable too), and which Markdown files are decision records.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodeConfig {
    pub enabled: bool,
    pub include: Vec<Spanned<String>>,
    /// Matched by the query graph's own small glob reader: `*`, `**`, `?` and literal text only.
    pub decisions: Vec<Spanned<String>>,
}

impl Default for CodeConfig {
    fn default() -> Self {
        let unspanned = |s: &str| Spanned::new(0..0, s.to_string());
        CodeConfig {
            enabled: false,
            include: [
                "**/Cargo.toml",
                "**/package.json",
                "**/pyproject.toml",
                "**/go.mod",
                "**/*.rs",
                "**/*.py",
                "**/*.go",
                "**/*.ts",
                "**/*.tsx",
                "**/*.js",
                "**/*.jsx",
                "**/*.mjs",
            ]
            .map(unspanned)
            .to_vec(),
            decisions: ["docs/adr/**/*.md", "docs/decisions/**/*.md"].map(unspanned).to_vec(),
        }
    }
}

impl CodeConfig {
    /// The globs the walk adds to `[sources] include`: none unless enabled.
    pub fn walked(&self) -> impl Iterator<Item = &Spanned<String>> {
        self.include.iter().chain(&self.decisions).filter(|_| self.enabled)
    }
}

/// `[cache]`: where published indexes are kept (`s3://BUCKET/PREFIX`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    pub url: Option<Spanned<String>>,
}

/// `[store]`: the Postgres database a build publishes its index to, under a project id. `KNOWLEDGE_STORE_URL`
/// (and `--store`) take precedence over `url`; the URL may name its password, so prefer the variable.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `postgres://USER@HOST:PORT/DATABASE` (or `postgresql://`, `?host=/socket/folder` for a Unix socket).
    pub url: Option<Spanned<String>>,
    /// The project's id in a store shared by several repositories; defaults to the project's name.
    pub project: Option<String>,
    /// `--store URL` on the command line, which wins over the variable and the file.
    #[serde(skip)]
    pub from_command_line: Option<String>,
}

/// Whether `url` names a Postgres database.
#[must_use]
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// `s3://BUCKET` or `s3://BUCKET/PREFIX` as (bucket, prefix without slashes at its ends).
#[must_use]
pub fn s3_prefix(target: &str) -> Option<(&str, &str)> {
    let rest = target.strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then_some((bucket, prefix.trim_matches('/')))
}

/// `[remote]`: the server to ask, and the variable its bearer token is read from. `KNOWLEDGE_API_URL` and
/// `KNOWLEDGE_API_KEY` take precedence.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemoteConfig {
    /// `http://HOST:PORT/mcp`.
    pub url: Option<String>,
    /// The environment variable holding the token (default `KNOWLEDGE_API_KEY`).
    pub api_key_env: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// Recorded as `source_owner` in every chunk's provenance; defaults to the project folder's name.
    pub name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourcesConfig {
    pub include: Vec<Spanned<String>>,
    pub exclude: Vec<Spanned<String>>,
    pub respect_gitignore: bool,
    pub follow_symlinks: bool,
    pub max_file_bytes: u64,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        let unspanned = |s: &str| Spanned::new(0..0, s.to_string());
        SourcesConfig {
            include: ["**/*.md", "**/*.mdx", "**/*.markdown", "**/*.txt"].map(unspanned).to_vec(),
            exclude: Vec::new(),
            respect_gitignore: true,
            follow_symlinks: true,
            max_file_bytes: 4 * 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChunkingConfig {
    pub target_bytes: Spanned<u32>,
    pub overlap_bytes: Spanned<u32>,
}

impl Default for ChunkingConfig {
    fn default() -> Self {
        ChunkingConfig { target_bytes: Spanned::new(0..0, 1600), overlap_bytes: Spanned::new(0..0, 160) }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// Relative to the project root: a folder the tool owns (see [`check_output_dir`]).
    pub dir: toml::Spanned<String>,
    /// `s3://BUCKET/PREFIX`: where each build also puts the generated artifacts, with their catalog.
    pub artifacts: Option<Spanned<String>>,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig { dir: toml::Spanned::new(0..0, ".hasna/knowledge".to_string()), artifacts: None }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingsConfig {
    pub provider: EmbeddingProvider,
    /// Vector dimensions: the `fake` provider's, or the `dimensions` asked of an `openai` endpoint (models
    /// that can shorten their vectors); without it an endpoint answers with its model's own.
    pub dimensions: Option<Spanned<u32>>,
    /// Texts sent to the provider at once.
    pub batch_size: u32,
    /// `openai`: the endpoint up to and including `/v1` (`https://api.openai.com/v1`, `http://127.0.0.1:8000/v1`),
    /// or an Azure OpenAI resource URL with `api_version`.
    pub base_url: Option<String>,
    /// `openai`: the model (Azure: the deployment) that embeds documents; it names the generation.
    pub model: Option<String>,
    /// `openai`: the model that embeds queries, when it differs (E5-style query and passage models).
    pub query_model: Option<String>,
    /// `openai`: the environment variable holding the API key. The key is never stored or logged.
    pub api_key_env: Option<String>,
    /// `openai`: Azure OpenAI's `api-version`; with it, requests go to the deployment URL with an `api-key` header.
    pub api_version: Option<String>,
    /// `openai`: seconds before a request is abandoned (then retried).
    pub timeout_seconds: u32,
    /// `openai`: retries after a timeout, a connection failure, 429 or a 5xx, with exponential backoff.
    pub max_retries: u32,
    /// `local`: the folder with `config.json`, `tokenizer.json` and `model.safetensors`, relative to the
    /// project root.
    pub model_dir: Option<Spanned<String>>,
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        EmbeddingsConfig {
            provider: EmbeddingProvider::None,
            dimensions: None,
            batch_size: 64,
            base_url: None,
            model: None,
            query_model: None,
            api_key_env: None,
            api_version: None,
            timeout_seconds: 30,
            max_retries: 3,
            model_dir: None,
        }
    }
}

/// Semantic search providers. `none`: builds are keyword-only. `fake`: deterministic vectors from hashed
/// words, for tests and offline checks; every answer that used it says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingProvider {
    #[default]
    None,
    Fake,
    /// Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Azure OpenAI, local servers).
    #[serde(rename = "openai")]
    OpenAi,
    /// A sentence-transformers BERT model run in process (binaries built with `local-embeddings`).
    Local,
}

/// The wiki compiler: which concepts get pages, how pages are grouped, and their templates. See docs/wiki.md.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WikiConfig {
    /// Whether `knowledge build` generates concept pages and index shards.
    pub enabled: bool,
    /// A concept gets a page when at least this many sources mention it.
    pub min_sources: Spanned<u32>,
    /// Sources quoted on one page; the others are listed without a quote.
    pub max_quotes: Spanned<u32>,
    /// Related pages listed on a page.
    pub max_related: u32,
    /// A front matter field whose value names a page's section; without one (or when the defining source
    /// lacks it), the section is the source's top-level folder.
    pub section_field: Option<String>,
    /// A folder (relative to the project root) whose `page.md.j2`, `shard.md.j2` and `root.md.j2` replace
    /// the built-in templates.
    pub templates_dir: Option<Spanned<String>>,
    /// Who writes a page's lead summary: `"extractive"` (sentences picked from the quotes, no model) or the
    /// name of a `[providers.NAME]` table, whose model writes it from the page's numbered quotes; every
    /// sentence it writes is checked against the quotes it cites (docs/wiki.md).
    pub writer: Spanned<String>,
    /// With a provider writer: the most pages one build has written (cached writings are free); the rest
    /// keep their extractive summary until a later build.
    pub max_pages: Option<u32>,
    /// With a provider writer: the most one build spends, by the provider's `prices`; the rest keep their
    /// extractive summary until a later build.
    pub max_cost_usd: Option<f64>,
}

/// The `[wiki] writer` that needs no model.
pub const EXTRACTIVE_WRITER: &str = "extractive";

impl Default for WikiConfig {
    fn default() -> Self {
        WikiConfig {
            enabled: true,
            min_sources: Spanned::new(0..0, 2),
            max_quotes: Spanned::new(0..0, 12),
            max_related: 8,
            section_field: None,
            templates_dir: None,
            writer: Spanned::new(0..0, EXTRACTIVE_WRITER.to_string()),
            max_pages: None,
            max_cost_usd: None,
        }
    }
}

/// `knowledge lint`: which rules run, at which severity, and their settings. See docs/lint.md.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LintConfig {
    /// When not empty, only these rules run.
    pub enable: Vec<Spanned<String>>,
    /// Rules that do not run.
    pub disable: Vec<Spanned<String>>,
    /// A severity per rule code, overriding its default.
    pub severity: std::collections::BTreeMap<Spanned<String>, crate::config::rules::Severity>,
    /// Literal text (case-sensitive) that marks an unresolved contradiction.
    pub contradiction_patterns: Vec<String>,
    /// An unresolved wikilink target linked from at least this many sources is a new-article candidate.
    pub new_article_min_sources: u32,
    /// Chunks of two sources whose word 5-grams overlap at least this much (Jaccard similarity) are reported
    /// as near duplicates (`duplicate_page`); 1 reports exact duplicates only.
    pub near_duplicate_threshold: Spanned<f64>,
    /// Globs matched against link destinations as written; matching links are not checked (for example
    /// `../std/**` in a book whose links reach a site the repository does not hold).
    pub ignore_links: Vec<Spanned<String>>,
    /// Folders where a link from the site's root (`/guide/`) may resolve, after the project's root (VitePress'
    /// `docs`, its `docs/public` for assets); the folder every source shares is one without saying so.
    pub site_roots: Vec<Spanned<String>>,
    /// Whether `knowledge build` lints and stores the results in the index, for `knowledge serve`. Off by
    /// default: it re-checks every source on every writing build (about 0.4 s for 38,000 files).
    pub on_build: bool,
}

impl Default for LintConfig {
    fn default() -> Self {
        LintConfig {
            enable: Vec::new(),
            disable: Vec::new(),
            severity: std::collections::BTreeMap::new(),
            contradiction_patterns: ["CONTRADICTION:", "[!contradiction]", "<!-- contradiction"]
                .map(str::to_string)
                .to_vec(),
            new_article_min_sources: 3,
            near_duplicate_threshold: Spanned::new(0..0, 0.9),
            ignore_links: Vec::new(),
            site_roots: Vec::new(),
            on_build: false,
        }
    }
}

/// Permission labels and who may read them. See docs/permissions.md.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionsConfig {
    /// Labels by path: every rule whose glob matches a source adds its labels, beside the source's front
    /// matter `visibility` and `labels`.
    pub rules: Vec<PathRule>,
    /// The labels each principal may read, beyond unlabelled and `public` content.
    pub principals: std::collections::BTreeMap<String, Vec<String>>,
    /// What each purpose (`knowledge_answer`, `knowledge_index`) may not read, by label.
    pub purposes: std::collections::BTreeMap<Spanned<String>, ingest::PurposeConfig>,
}

impl PermissionsConfig {
    /// The labels `[permissions.purposes.PURPOSE] deny_labels` lists, trimmed and lowercased.
    #[must_use]
    pub fn denied_for(&self, purpose: &str) -> Vec<String> {
        self.purposes
            .iter()
            .filter(|(name, _)| name.get_ref() == purpose)
            .flat_map(|(_, config)| config.deny_labels.iter().map(|label| label.trim().to_lowercase()))
            .collect()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    pub path: Spanned<String>,
    pub labels: Vec<String>,
}

/// A configuration error, located in the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no `{CONFIG_FILE}` in `{}` or any parent folder (run `knowledge init` to create one)", .0.display())]
    NotFound(PathBuf),
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}", path.display())]
    Invalid { path: PathBuf, line: usize, column: usize, message: String },
}

/// A loaded configuration with the project root it belongs to.
#[derive(Debug, Clone)]
pub struct Project {
    /// The folder holding `kc.toml`; every source path is relative to it.
    pub root: PathBuf,
    pub config_path: PathBuf,
    pub config: Config,
    /// The text of `kc.toml`, as read.
    pub config_text: String,
}

impl Project {
    /// `[dependencies]` as index files: a `.db` path as given, a project folder through its kc.toml (or the
    /// default output folder when it has none). Relative paths are from the project root.
    #[must_use]
    pub fn mapped_dependencies(&self) -> Vec<(String, PathBuf)> {
        self.config
            .dependencies
            .iter()
            .map(|(name, target)| {
                let path = self.root.join(target.get_ref());
                let index = if path.extension().is_some_and(|ext| ext == "db") {
                    path
                } else {
                    match Project::load(&path.join("kc.toml")) {
                        Ok(other) => other.output_dir().join(crate::store::DB_FILE),
                        Err(_) => path.join(".hasna/knowledge").join(crate::store::DB_FILE),
                    }
                };
                (name.clone(), index)
            })
            .collect()
    }

    /// Finds `kc.toml` in `start` or its nearest ancestor and loads it.
    pub fn discover(start: &Path) -> Result<Project, ConfigError> {
        let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
        let mut dir = Some(start.as_path());
        while let Some(candidate) = dir {
            let path = candidate.join(CONFIG_FILE);
            if path.is_file() {
                return Project::load(&path);
            }
            dir = candidate.parent();
        }
        Err(ConfigError::NotFound(start))
    }

    /// Loads the configuration at `path`; its folder is the project root.
    pub fn load(path: &Path) -> Result<Project, ConfigError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
        let config = parse(&path, &text)?;
        let root = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let project = Project { root, config_path: path, config, config_text: text };
        project.check_output_resolves_inside()?;
        Ok(project)
    }

    /// The output folder, resolved (a symbolic link on the way followed), must still lie inside the project
    /// and outside `.git`: every writer writes there, so a planted `.hasna -> /elsewhere` would make a build
    /// write and delete files elsewhere. A link that stays inside the project is fine; one that dangles is
    /// refused, since what it will point to cannot be checked.
    fn check_output_resolves_inside(&self) -> Result<(), ConfigError> {
        let Ok(root) = self.root.canonicalize() else { return Ok(()) };
        let mut existing = self.output_dir();
        while std::fs::symlink_metadata(&existing).is_err() {
            if !existing.pop() {
                return Ok(());
            }
        }
        let resolved = existing.canonicalize();
        let outside = match &resolved {
            Ok(resolved) => !resolved.starts_with(&root) || resolved.starts_with(root.join(".git")),
            Err(_) => true,
        };
        if outside {
            let target =
                resolved.map_or_else(|_| "a link that leads nowhere".to_string(), |r| format!("`{}`", r.display()));
            return Err(self.invalid_output(format!(
                "`[output] dir` = {:?} resolves through a symbolic link to {target}, outside the project (or inside `.git`): the output must stay inside the project",
                self.config.output.dir.get_ref()
            )));
        }
        Ok(())
    }

    /// The project `knowledge init` would configure, rooted at `root`, for commands that run without a
    /// `kc.toml`.
    #[must_use]
    pub fn with_defaults(root: &Path) -> Project {
        let config = parse(Path::new(CONFIG_FILE), DEFAULT_CONFIG).expect("the default configuration parses");
        Project {
            root: root.to_path_buf(),
            config_path: root.join(CONFIG_FILE),
            config,
            config_text: DEFAULT_CONFIG.to_string(),
        }
    }

    /// The output folder, absolute.
    #[must_use]
    pub fn output_dir(&self) -> PathBuf {
        self.root.join(self.config.output.dir.get_ref())
    }

    /// An error about `[output] dir`, located at its value in `kc.toml`.
    #[must_use]
    pub fn invalid_output(&self, message: String) -> ConfigError {
        let span = self.config.output.dir.span();
        let (line, column) = if span.is_empty() { (1, 1) } else { line_column(&self.config_text, span.start) };
        ConfigError::Invalid { path: self.config_path.clone(), line, column, message }
    }

    /// The Postgres store this project publishes to and reads from: `--store`, else `KNOWLEDGE_STORE_URL`,
    /// else `[store] url`.
    #[must_use]
    pub fn store_url(&self) -> Option<String> {
        self.config
            .store
            .from_command_line
            .clone()
            .or_else(|| std::env::var("KNOWLEDGE_STORE_URL").ok().filter(|url| !url.is_empty()))
            .or_else(|| self.config.store.url.as_ref().map(|url| url.get_ref().clone()))
    }

    /// The project's id in the Postgres store: `[store] project`, else its name.
    #[must_use]
    pub fn store_project(&self) -> String {
        self.config.store.project.clone().unwrap_or_else(|| self.name())
    }

    /// The project name recorded as `source_owner`.
    #[must_use]
    pub fn name(&self) -> String {
        self.config.project.name.clone().unwrap_or_else(|| {
            self.root.file_name().map_or_else(|| "project".to_string(), |n| n.to_string_lossy().into_owned())
        })
    }
}

/// The commented default that `knowledge init` writes.
pub const DEFAULT_CONFIG: &str = r#"# knowledge configuration. Reference: docs/configuration.md
version = 1

[project]
# Recorded as the owner of every source in provenance. Defaults to this folder's name.
# name = "my-project"

[sources]
# Globs relative to this folder. The output folder and .git are always excluded.
include = ["**/*.md", "**/*.mdx", "**/*.markdown", "**/*.txt"]
exclude = []
respect_gitignore = true
follow_symlinks = true
# Larger files are skipped with a warning.
max_file_bytes = 4194304

[chunking]
# Chunks hold at most this many bytes of source text; code blocks are never split.
target_bytes = 1600
# A section split into several chunks repeats up to this many bytes at each boundary.
overlap_bytes = 160

[output]
dir = ".hasna/knowledge"

[embeddings]
# "none": keyword search only, no network and no model. "fake": deterministic hashed-word vectors, for tests
# and offline checks only (every answer that used them says so).
provider = "none"

[wiki]
# Generate cited concept pages and index shards under the output folder (docs/wiki.md).
enabled = true
# A concept gets a page when at least this many sources mention it.
min_sources = 2
# Sources quoted on a page; the others are listed without a quote.
max_quotes = 12
# Group pages by this front matter field of the defining source instead of its top-level folder.
# section_field = "category"
# A folder whose page.md.j2, shard.md.j2 or root.md.j2 replace the built-in templates.
# templates_dir = "templates"
# Who writes each page's lead summary: "extractive" (sentences taken from the quotes, no model), or the name
# of a [providers.NAME] table whose model writes it from the page's quotes, every sentence checked against
# the quotes it cites; a build writes at most max_pages pages (or spends max_cost_usd) and later builds
# write the rest. Writings are cached by what they were written from: a no-op build calls no one.
writer = "extractive"
# max_pages = 50
# max_cost_usd = 1.0

[lint]
# Rules that do not run (all run by default), and severities that differ from the defaults.
# The rules: docs/lint.md.
disable = []
# severity = { broken_anchor = "error" }
# Literal text that marks an unresolved contradiction.
contradiction_patterns = ["CONTRADICTION:", "[!contradiction]", "<!-- contradiction"]
# Chunks of two sources sharing at least this share of their word 5-grams are near duplicates; 1: exact only.
near_duplicate_threshold = 0.9
# Link destinations (globs, as written) that are not checked, such as links to a site the repository does not hold.
ignore_links = []
# Folders where a link from the site's root (`/guide/`) may resolve, after this folder: a documentation
# site's source folder and its folder of static files. The folder every source shares is one already.
site_roots = []
# Lint in every writing build and store the results in the index, where `knowledge serve` reads them.
# It re-checks every source each time (about 0.4 s for 38,000 files), so it is off by default.
on_build = false

[permissions]
# Sources labelled by front matter (`visibility: internal`, `labels: [hr]`) or by path rules are readable
# only by principals granted every label they carry; unlabelled and `public` sources are readable by all.
# rules = [{ path = "internal/**", labels = ["internal"] }]
# [permissions.principals]
# staff = ["internal"]
# A label can be kept from a use, whoever asks: out of the index, or out of every answer.
# [permissions.purposes.knowledge_index]
# deny_labels = ["do-not-index"]

# Sources from outside the tree (`knowledge ingest source REF`): every resolver is closed until opened here.
# [ingest]
# file_roots = ["../handbook"]          # file:///… only inside these folders
# allow_domains = ["docs.example.com"]  # https://… only from these hosts
# open_files_manifest = "open-files.jsonl"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        parse(Path::new("kc.toml"), text).unwrap_err().to_string()
    }

    #[test]
    fn the_default_config_parses() {
        let config = parse(Path::new("kc.toml"), DEFAULT_CONFIG).unwrap();
        assert_eq!(*config.chunking.target_bytes.get_ref(), 1600);
        assert_eq!(config.output.dir.get_ref(), ".hasna/knowledge");
    }

    #[test]
    fn errors_name_file_line_and_column() {
        assert_eq!(
            error_of("version = 1\n[chunking]\ntarget_bytes = \"big\"\n"),
            "kc.toml:3:16: invalid type: string \"big\", expected u32"
        );
        assert!(error_of("version = 1\n[sources]\nincldue = []\n").starts_with("kc.toml:3:1: unknown field `incldue`"));
        assert_eq!(error_of("version = 1\n[chunking\n"), "kc.toml:2:10: unclosed table, expected `]`");
        assert_eq!(
            error_of("version = 1\n[chunking]\ntarget_bytes = 100\noverlap_bytes = 90\n"),
            "kc.toml:4:17: `overlap_bytes` must be at most half of `target_bytes`"
        );
        assert!(
            error_of("version = 1\n[sources]\ninclude = [\"a/{b\"]\n")
                .starts_with("kc.toml:3:12: invalid glob `a/{b`: unclosed alternate group")
        );
        for root in ["../elsewhere", "/etc", "docs/../..", ""] {
            assert_eq!(
                error_of(&format!("version = 1\n[lint]\nsite_roots = [\"docs\", \"{root}\"]\n")),
                format!(
                    "kc.toml:3:23: site root `{root}` must be a folder of the project, relative to it (no `..`, no leading `/`)"
                )
            );
        }
        assert!(parse(Path::new("kc.toml"), "version = 1\n[lint]\nsite_roots = [\"docs/public/\"]\n").is_ok());
        assert_eq!(
            error_of("version = 2\n"),
            "kc.toml:1:11: unsupported config version 2; this binary reads version 1"
        );
        assert!(error_of("[output]\n").contains("missing field `version`"));
        assert!(
            error_of("version = 1\n[embeddings]\nprovider = \"magic\"\n")
                .starts_with("kc.toml:3:12: unknown variant `magic`")
        );
    }
}
