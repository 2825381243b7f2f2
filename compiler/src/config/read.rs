//! Reading `kc.toml` text: TOML into [`Config`], then the checks serde cannot make (versions, output
//! folders, globs, providers, URLs), each error naming the file, line and column.

use std::ops::Range;
use std::path::Path;

use super::*;

/// Parses and validates configuration text; `path` is used only in error messages.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let invalid = |span: Option<Range<usize>>, message: String| {
        let (line, column) = span.map_or((1, 1), |span| line_column(text, span.start));
        ConfigError::Invalid { path: path.to_path_buf(), line, column, message }
    };
    let config: Config = toml::from_str(text).map_err(|e| invalid(e.span(), e.message().to_string()))?;

    check_numbers(&config, &invalid)?;
    check_embeddings(&config, &invalid)?;
    check_wiki(&config, &invalid)?;
    check_locations(&config, &invalid)?;
    check_patterns(&config, &invalid)?;
    check_lint_rules(&config, &invalid)?;
    Ok(config)
}

/// The version and the chunking sizes.
fn check_numbers(
    config: &Config,
    invalid: &impl Fn(Option<Range<usize>>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if *config.version.get_ref() != CONFIG_VERSION {
        return Err(invalid(
            Some(config.version.span()),
            format!(
                "unsupported config version {}; this binary reads version {CONFIG_VERSION}",
                config.version.get_ref()
            ),
        ));
    }
    let chunking = &config.chunking;
    if *chunking.target_bytes.get_ref() < 64 {
        return Err(invalid(Some(chunking.target_bytes.span()), "`target_bytes` must be at least 64".to_string()));
    }
    if chunking.overlap_bytes.get_ref() * 2 > *chunking.target_bytes.get_ref() {
        return Err(invalid(
            Some(chunking.overlap_bytes.span()),
            "`overlap_bytes` must be at most half of `target_bytes`".to_string(),
        ));
    }
    Ok(())
}

/// The embedding provider and what it needs.
fn check_embeddings(
    config: &Config,
    invalid: &impl Fn(Option<Range<usize>>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let embeddings = &config.embeddings;
    if let Some(dimensions) = &embeddings.dimensions
        && !(8..=4096).contains(dimensions.get_ref())
    {
        return Err(invalid(Some(dimensions.span()), "`dimensions` must be between 8 and 4096".to_string()));
    }
    if embeddings.provider == EmbeddingProvider::Local {
        if !cfg!(feature = "local-embeddings") {
            return Err(invalid(
                None,
                "[embeddings] provider \"local\" needs a binary built with the `local-embeddings` feature \
                 (cargo install --path compiler --features local-embeddings)"
                    .to_string(),
            ));
        }
        if embeddings.model_dir.is_none() {
            return Err(invalid(None, "[embeddings] provider \"local\" needs `model_dir`".to_string()));
        }
    }
    if embeddings.provider == EmbeddingProvider::OpenAi && (embeddings.base_url.is_none() || embeddings.model.is_none())
    {
        return Err(invalid(None, "[embeddings] provider \"openai\" needs `base_url` and `model`".to_string()));
    }
    Ok(())
}

/// The wiki's counts, its writer and its budget, and the providers the writer may name.
fn check_wiki(
    config: &Config,
    invalid: &impl Fn(Option<Range<usize>>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    for (name, value) in [("min_sources", &config.wiki.min_sources), ("max_quotes", &config.wiki.max_quotes)] {
        if *value.get_ref() == 0 {
            return Err(invalid(Some(value.span()), format!("`{name}` must be at least 1")));
        }
    }
    providers::validate(&config.providers, invalid)?;
    let writer = &config.wiki.writer;
    if writer.get_ref() != super::EXTRACTIVE_WRITER
        && !config.providers.keys().any(|name| name.get_ref() == writer.get_ref())
    {
        return Err(invalid(
            Some(writer.span()),
            format!(
                "`writer` is \"{}\" or the name of a `[providers.NAME]` table; there is no `[providers.{}]`",
                super::EXTRACTIVE_WRITER,
                writer.get_ref()
            ),
        ));
    }
    if let Some(max_cost) = config.wiki.max_cost_usd {
        if !(max_cost >= 0.0 && max_cost.is_finite()) {
            return Err(invalid(None, "[wiki] `max_cost_usd` must be a number of dollars, 0 or more".to_string()));
        }
        // A cost budget needs the writer's prices, or nothing would count against it.
        let priced = config
            .providers
            .iter()
            .any(|(name, provider)| name.get_ref() == writer.get_ref() && provider.prices.is_some());
        if !priced && writer.get_ref() != super::EXTRACTIVE_WRITER {
            return Err(invalid(
                Some(writer.span()),
                format!(
                    "[wiki] `max_cost_usd` needs the writer's prices: add `prices = {{ input = ..., output = ... }}` (dollars per million tokens) to `[providers.{}]`",
                    writer.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// The URLs of the artifact store, the build cache and the Postgres store, and the purposes named.
fn check_locations(
    config: &Config,
    invalid: &impl Fn(Option<Range<usize>>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(artifacts) = &config.output.artifacts
        && s3_prefix(artifacts.get_ref()).is_none()
    {
        return Err(invalid(
            Some(artifacts.span()),
            "`artifacts` is `s3://BUCKET/PREFIX` (or `s3://BUCKET`)".to_string(),
        ));
    }
    if let Some(url) = &config.cache.url
        && s3_prefix(url.get_ref()).is_none()
    {
        return Err(invalid(Some(url.span()), "`url` is `s3://BUCKET/PREFIX` (or `s3://BUCKET`)".to_string()));
    }
    if let Some(url) = &config.store.url
        && !is_postgres_url(url.get_ref())
    {
        return Err(invalid(Some(url.span()), "`url` is `postgres://USER@HOST:PORT/DATABASE`".to_string()));
    }
    for name in config.permissions.purposes.keys() {
        if !ingest::PURPOSES.contains(&name.get_ref().as_str()) {
            return Err(invalid(
                Some(name.span()),
                format!("unknown purpose `{}`; purposes are {}", name.get_ref(), ingest::PURPOSES.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The lint threshold and every glob.
fn check_patterns(
    config: &Config,
    invalid: &impl Fn(Option<Range<usize>>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let threshold = &config.lint.near_duplicate_threshold;
    if !(*threshold.get_ref() > 0.0 && *threshold.get_ref() <= 1.0) {
        return Err(invalid(
            Some(threshold.span()),
            "`near_duplicate_threshold` must be above 0 and at most 1".to_string(),
        ));
    }
    // A site root is a folder of this project: lint looks for files there, and nowhere else.
    for root in &config.lint.site_roots {
        let folder = root.get_ref().trim_end_matches('/');
        if folder.is_empty()
            || folder.starts_with('/')
            || folder.contains('\\')
            || folder.split('/').any(|part| part == "..")
        {
            return Err(invalid(
                Some(root.span()),
                format!(
                    "site root `{}` must be a folder of the project, relative to it (no `..`, no leading `/`)",
                    root.get_ref()
                ),
            ));
        }
    }
    for glob in &config.code.decisions {
        if glob.get_ref().contains(['[', ']', '{', '}', '!', '\\']) {
            return Err(invalid(
                Some(glob.span()),
                format!("decision glob `{}` may use only `*`, `**`, `?` and literal text", glob.get_ref()),
            ));
        }
    }
    let rule_paths = config.permissions.rules.iter().map(|rule| &rule.path);
    for pattern in config
        .sources
        .include
        .iter()
        .chain(&config.sources.exclude)
        .chain(&config.lint.ignore_links)
        .chain(rule_paths)
        .chain(&config.code.include)
        .chain(&config.code.decisions)
    {
        if let Err(error) = globset::Glob::new(pattern.get_ref()) {
            return Err(invalid(
                Some(pattern.span()),
                format!("invalid glob `{}`: {}", pattern.get_ref(), error.kind()),
            ));
        }
    }
    Ok(())
}

/// The lint rules named, the sources included and the output folder.
fn check_lint_rules(
    config: &Config,
    invalid: &impl Fn(Option<Range<usize>>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let lint = &config.lint;
    for code in lint.enable.iter().chain(&lint.disable).chain(lint.severity.keys()) {
        if crate::config::rules::rule(code.get_ref()).is_none() {
            return Err(invalid(
                Some(code.span()),
                format!(
                    "unknown lint rule `{}`; the rules are: {}",
                    code.get_ref(),
                    crate::config::rules::rule_codes().join(", ")
                ),
            ));
        }
    }
    if config.sources.include.is_empty() {
        return Err(invalid(None, "`[sources] include` is empty: nothing would be compiled".to_string()));
    }
    let dir = &config.output.dir;
    if let Err(problem) = check_output_dir(dir.get_ref()) {
        return Err(invalid(Some(dir.span()), problem.message(dir.get_ref())));
    }
    Ok(())
}

/// The output folder must be one the tool owns: a folder inside the project, below its root, that is not
/// `.git` and not a `~` someone meant as their home. A build writes and deletes generated files there, so
/// any of these would put user files at risk. (A folder that holds sources is refused by the build, which
/// walks the tree.)
fn check_output_dir(dir: &str) -> Result<(), OutputDirProblem> {
    let parts: Vec<&str> = dir.split(['/', '\\']).filter(|part| !part.is_empty() && *part != ".").collect();
    let problem = if Path::new(dir).is_absolute() || dir.starts_with(['/', '\\']) || parts.contains(&"..") {
        OutputDirProblem::Outside
    } else if parts.is_empty() {
        OutputDirProblem::Root
    } else if parts.iter().any(|part| part.eq_ignore_ascii_case(".git")) {
        OutputDirProblem::Git
    } else if parts[0].starts_with('~') {
        OutputDirProblem::Tilde
    } else {
        return Ok(());
    };
    Err(problem)
}

/// Why an `[output] dir` is not one the tool may own.
#[derive(Debug, Clone, Copy)]
enum OutputDirProblem {
    Outside,
    Root,
    Git,
    Tilde,
}

impl OutputDirProblem {
    fn message(self, dir: &str) -> String {
        match self {
            OutputDirProblem::Outside => format!("`[output] dir` = {dir:?} must be a relative path inside the project"),
            OutputDirProblem::Root => format!(
                "`[output] dir` = {dir:?} is the project root; the output needs a folder of its own (the default is \".hasna/knowledge\")"
            ),
            OutputDirProblem::Git => format!("`[output] dir` = {dir:?} is inside `.git`, which belongs to Git"),
            OutputDirProblem::Tilde => {
                format!("`[output] dir` = {dir:?}: `~` is not expanded; give a folder inside the project")
            }
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
