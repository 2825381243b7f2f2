//! The templates pages, shards and the root are rendered with: the built-in ones or `[wiki] templates_dir`,
//! checked before a build writes anything, and the salsa inputs that hold them.

use super::*;

pub(super) const PAGE_TEMPLATE: &str = include_str!("../../../templates/page.md.j2");
pub(super) const SHARD_TEMPLATE: &str = include_str!("../../../templates/shard.md.j2");
pub(super) const ROOT_TEMPLATE: &str = include_str!("../../../templates/root.md.j2");

/// The templates a build renders with: the built-in ones, or those in `[wiki] templates_dir`.
#[derive(Debug, Clone)]
pub struct TemplateSet {
    pub page: String,
    pub shard: String,
    pub root: String,
}

impl TemplateSet {
    /// Loads and checks the templates: a syntax error names the template file and line.
    pub fn load(project: &Project) -> Result<TemplateSet, WikiError> {
        let folder = project.config.wiki.templates_dir.as_ref().map(|dir| project.root.join(dir.get_ref()));
        let read = |name: &str, built_in: &str| -> Result<(PathBuf, String), WikiError> {
            let Some(path) = folder.as_ref().map(|folder| folder.join(name)).filter(|path| path.exists()) else {
                return Ok((PathBuf::from("templates").join(name), built_in.to_string()));
            };
            let text =
                std::fs::read_to_string(&path).map_err(|source| WikiError::Read { path: path.clone(), source })?;
            Ok((path, text))
        };
        let (page_path, page) = read("page.md.j2", PAGE_TEMPLATE)?;
        let (shard_path, shard) = read("shard.md.j2", SHARD_TEMPLATE)?;
        let (root_path, root) = read("root.md.j2", ROOT_TEMPLATE)?;
        // The built-in templates are compiled into the binary and checked by its tests: only a project's own
        // are compiled here, since compiling all three cost each edit that reaches a page about 1 %.
        for (path, text, built_in) in [
            (&page_path, &page, PAGE_TEMPLATE),
            (&shard_path, &shard, SHARD_TEMPLATE),
            (&root_path, &root, ROOT_TEMPLATE),
        ] {
            if text != built_in {
                wiki::check_template(&path.display().to_string(), text).map_err(WikiError::Template)?;
            }
        }
        Ok(TemplateSet { page, shard, root })
    }
}

/// What the pages depend on besides the sources: the `[wiki]` settings, the templates and this binary's
/// source. A change re-plans and re-renders; no source is re-derived.
#[must_use]
pub fn fingerprint(project: &Project, templates: &TemplateSet) -> String {
    let wiki = &project.config.wiki;
    let material = format!(
        "{}\n{}\n{}\n{}\n{:?}\n{}\n{}\n{}\n{}\n{}\n{:?}\n{:?}\n{:?}\n",
        wiki.enabled,
        wiki.min_sources.get_ref(),
        wiki.max_quotes.get_ref(),
        wiki.max_related,
        wiki.section_field,
        templates.page,
        templates.shard,
        templates.root,
        env!("KNOWLEDGE_SOURCE_HASH"),
        super::writer_identity(project),
        wiki.max_pages,
        wiki.max_cost_usd,
        // The project's name heads `llms.txt`.
        project.config.project.name,
    );
    content_hash(material.as_bytes())
}

pub(super) fn set_templates(db: &mut KnowledgeDb, inputs: &mut PageInputs, templates: &TemplateSet) {
    match inputs.templates {
        Some(input) => {
            if input.page(db) != &templates.page {
                input.set_page(db).with_durability(Durability::MEDIUM).to(templates.page.clone());
            }
            if input.shard(db) != &templates.shard {
                input.set_shard(db).with_durability(Durability::MEDIUM).to(templates.shard.clone());
            }
            if input.root(db) != &templates.root {
                input.set_root(db).with_durability(Durability::MEDIUM).to(templates.root.clone());
            }
        }
        None => {
            let input = Templates::builder(templates.page.clone(), templates.shard.clone(), templates.root.clone())
                .durability(Durability::MEDIUM)
                .new(db);
            inputs.templates = Some(input);
        }
    }
}

/// Renders a page through the `render_page` query, and its catalog row through `page_artifact`.
pub(super) fn render(
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    model: &PageModel,
    source_count: u64,
) -> Result<(String, Artifact), StoreError> {
    let page = page_input(db, inputs, model, source_count);
    let markdown = wiki::render_page(db, page).clone().map_err(StoreError::Wiki)?;
    let artifact = wiki::page_artifact(db, page).clone().map_err(StoreError::Wiki)?;
    Ok((markdown, artifact))
}

/// The page's input, made or with its fields set only where they changed; and its file's, which its source
/// row is parsed from.
pub(super) fn page_input(
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    model: &PageModel,
    source_count: u64,
) -> WikiPage {
    match inputs.pages.get(&model.slug) {
        Some(&(page, _)) => {
            if page.model(db) != model {
                page.set_model(db).to(model.clone());
            }
            if page.source_count(db) != source_count {
                page.set_source_count(db).to(source_count);
            }
            page
        }
        None => {
            let page = WikiPage::new(db, model.slug.clone(), model.clone(), source_count);
            let file = SourceFile::new(db, SourceRef::page(&model.slug).path(), String::new(), String::new());
            inputs.pages.insert(model.slug.clone(), (page, file));
            page
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build checks only a project's own templates: the built-in ones must compile here.
    #[test]
    fn the_built_in_templates_compile() {
        for (name, template) in
            [("page.md.j2", PAGE_TEMPLATE), ("shard.md.j2", SHARD_TEMPLATE), ("root.md.j2", ROOT_TEMPLATE)]
        {
            assert_eq!(wiki::check_template(name, template), Ok(()), "{name}");
        }
    }
}
