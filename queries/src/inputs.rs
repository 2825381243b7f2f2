//! Salsa inputs: what the driver sets from disk and from `kc.toml`.

/// One source document. The driver creates it once per path and sets `text` and `revision` only when the
/// content hash changed (a setter always starts a new revision, even for an equal value).
#[salsa::input(debug)]
pub struct SourceFile {
    /// The path relative to the project root, with `/` separators.
    #[returns(ref)]
    pub path: String,
    /// The content hash of `text`; queries do not read it, the driver stores it with every derived row.
    #[returns(ref)]
    pub revision: String,
    #[returns(ref)]
    pub text: String,
}

/// The `[chunking]` section of `kc.toml`. A singleton with high durability: editing a source never makes
/// salsa re-check it, and changing it re-chunks every file without re-parsing any.
#[salsa::input(singleton, debug)]
pub struct ChunkingSettings {
    #[returns(copy)]
    pub target_bytes: u32,
    #[returns(copy)]
    pub overlap_bytes: u32,
}

/// The `[lint]` settings that lint facts depend on: the contradiction-marker patterns. A singleton with high
/// durability, like the chunking settings.
#[salsa::input(singleton, debug)]
pub struct LintSettings {
    #[returns(ref)]
    pub contradiction_patterns: Vec<String>,
    /// The folder (project-relative, `/`-separated, no trailing `/`) of hand-written wiki pages, whose
    /// sections are checked for citations.
    #[returns(ref)]
    pub wiki_folder: String,
}

/// The `[code]` section: whether code entities are derived, and which Markdown files are decision records.
/// A singleton with high durability, like the other settings.
#[salsa::input(singleton, debug)]
pub struct CodeSettings {
    #[returns(copy)]
    pub enabled: bool,
    #[returns(ref)]
    pub decision_globs: Vec<String>,
}

/// How a source is read, decided by its file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Markdown,
    Text,
    /// Code in a language whose syntax tree is read, and package manifests: indexed as text, never quoted
    /// by the wiki.
    Code,
}

impl SourceKind {
    /// The kind for a path, by extension: Markdown for `.md`, `.markdown` and `.mdx`, plain text otherwise.
    #[must_use]
    pub fn from_path(path: &str) -> Self {
        // Generated wiki pages are Markdown, whatever their ref looks like, and so is the text ingest keeps of
        // a source from outside the tree (HTML is converted to Markdown).
        if matches!(crate::SourceRef::from_path(path).origin(), crate::Origin::Page | crate::Origin::External) {
            return SourceKind::Markdown;
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        if matches!(name, "Cargo.toml" | "package.json" | "pyproject.toml" | "go.mod")
            || crate::code::Language::from_path(path).is_some()
        {
            return SourceKind::Code;
        }
        let extension = path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
        match extension.as_deref() {
            Some("md" | "markdown" | "mdx" | "mdown" | "mkd") => SourceKind::Markdown,
            _ => SourceKind::Text,
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Markdown => "markdown",
            SourceKind::Text => "text",
            SourceKind::Code => "code",
        }
    }

    #[must_use]
    pub fn mime(self) -> &'static str {
        match self {
            SourceKind::Markdown => "text/markdown",
            SourceKind::Text | SourceKind::Code => "text/plain",
        }
    }
}
