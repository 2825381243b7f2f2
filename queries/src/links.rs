//! How documents name each other: wikilink names and relative link paths, resolved the same way by lint
//! (to report what does not resolve) and by the wiki compiler (to follow what does). A link from a site's root
//! resolves under the folder every source shares too, by path or by route ([`route_key`]); lint also reads the
//! configured site roots.

/// The names a wikilink may use for a source: its path and file name without extension, its title and
/// its front matter aliases, all normalized with [`wiki_key`].
#[must_use]
pub fn wiki_names(path: &str, title: &str, aliases: &[String]) -> Vec<String> {
    let (without_extension, file_name) = path_stem(path);
    let mut names = vec![wiki_key(without_extension), wiki_key(file_name), wiki_key(title)];
    names.extend(aliases.iter().map(|alias| wiki_key(alias)));
    names.retain(|n| !n.is_empty());
    names.sort();
    names.dedup();
    names
}

/// A path without its extension, and that stem's file name: `notes/dendron.topic.links.md` gives
/// `notes/dendron.topic.links` and `dendron.topic.links`. Wikilinks name notes by either.
#[must_use]
pub fn path_stem(path: &str) -> (&str, &str) {
    let without_extension = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    (without_extension, without_extension.rsplit('/').next().unwrap_or(without_extension))
}

/// Wikilinks match case-insensitively, with spaces, hyphens and underscores alike.
#[must_use]
pub fn wiki_key(name: &str) -> String {
    let name = name.trim();
    let name = name.strip_suffix(".md").unwrap_or(name);
    // Most names are ASCII: one pass, one string (the planner keys every wikilink's sides and every note's
    // names in each plan).
    if name.is_ascii() {
        return name
            .bytes()
            .map(|b| if matches!(b, b' ' | b'_') { '-' } else { char::from(b.to_ascii_lowercase()) })
            .collect();
    }
    name.to_lowercase().replace([' ', '_'], "-")
}

/// The normalized name a wikilink side refers to, or `None` for a link to the page itself (`[[#heading]]`)
/// or one that climbs out of the project. Path forms (`[[../other/file]]`) resolve against the linking
/// file's folder; Dendron's cross-vault form (`[[dendron://VAULT/note.name]]`) names the note.
#[must_use]
pub fn wikilink_key(from: &str, target: &str) -> Option<String> {
    let target = target.split(['#', '^']).next().unwrap_or_default().trim();
    let target = match target.strip_prefix("dendron://") {
        Some(in_vault) => in_vault.split_once('/').map_or(in_vault, |(_, note)| note),
        None => target,
    };
    if target.is_empty() {
        return None;
    }
    if target.contains('/') {
        let folder = from.rsplit_once('/').map_or("", |(folder, _)| folder);
        let joined =
            if target.starts_with('/') { target.trim_start_matches('/').to_string() } else { join(folder, target)? };
        return Some(wiki_key(joined.rsplit_once('.').filter(|(_, ext)| *ext == "md").map_or(&joined, |(s, _)| s)));
    }
    Some(wiki_key(target))
}

/// The project path a relative link destination names (query and anchor removed, `%XX` decoded), `from`
/// itself for a bare anchor, or `None` when it climbs out of the project.
#[must_use]
pub fn link_path(from: &str, destination: &str) -> Option<String> {
    let target = target_of(destination);
    if target.is_empty() {
        Some(from.to_string())
    } else if let Some(rooted) = target.strip_prefix('/') {
        normalize(rooted)
    } else {
        join(from.rsplit_once('/').map_or("", |(folder, _)| folder), &target)
    }
}

/// A link destination's path: its query and anchor removed, `%XX` decoded.
pub(crate) fn target_of(destination: &str) -> String {
    let target = destination.split('#').next().unwrap_or_default();
    percent_decode(target.split('?').next().unwrap_or_default())
}

/// Whether a link's path is bare (`api/Store.md`; not `./x`, `../x`, `/x` or an anchor alone), which Docusaurus
/// looks up in the linking file's folder, then under the site's root.
#[must_use]
pub fn is_bare_path(target: &str) -> bool {
    !target.is_empty() && !target.starts_with("./") && !target.starts_with("../") && !target.starts_with('/')
}

/// The project path a link destination names under a site root's folder (`docs`) when its path is bare
/// ([`is_bare_path`]): `api/Store.md#dispatch` gives `docs/api/Store.md`.
#[must_use]
pub fn bare_path_under(root: &str, destination: &str) -> Option<String> {
    let target = target_of(destination);
    is_bare_path(&target).then(|| join(root, &target)).flatten()
}

/// The paths a resolved link may mean, in order: as written, the Markdown twin of an `.html` name (mdBook
/// renders `x.md` as `x.html` and books link to the rendered name), the name with `.md` or `.mdx` added (wiki
/// tools and site generators link a page without its extension), and a folder's index page (`guide/` is
/// `guide/index.md`, `guide/index.mdx` or `guide/README.md` as VitePress, Starlight, Docusaurus and mdBook serve
/// it).
pub fn link_candidates(resolved: &str) -> impl Iterator<Item = String> + '_ {
    // Made one at a time: most links name a path as written or with `.md`, and the plan resolves every link
    // each time it runs.
    let inside = move |name: &str| if resolved.is_empty() { name.to_string() } else { format!("{resolved}/{name}") };
    std::iter::once(resolved.to_string())
        .chain(resolved.strip_suffix(".html").map(|stem| format!("{stem}.md")))
        .chain(["md", "mdx"].into_iter().map(move |extension| format!("{resolved}.{extension}")))
        .chain(["index.md", "index.mdx", "README.md"].into_iter().map(inside))
}

/// Whether `path` lies below `folder` (a project-relative folder, without its trailing `/`; an empty one
/// holds nothing).
#[must_use]
pub fn in_folder(path: &str, folder: &str) -> bool {
    !folder.is_empty() && path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/'))
}

/// The longest folder prefix (with its trailing `/`) that every path shares.
#[must_use]
pub fn shared_folders<'a>(mut paths: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = paths.next() else { return String::new() };
    let mut shared = first.rsplit_once('/').map_or("", |(folder, _)| folder);
    for path in paths {
        while !shared.is_empty() && !in_folder(path, shared) {
            shared = shared.rsplit_once('/').map_or("", |(parent, _)| parent);
        }
    }
    if shared.is_empty() { String::new() } else { format!("{shared}/") }
}

/// The route a documentation site serves a source at, as a key: its path without its extension and without a
/// folder's `index` or `README` name, lowercased, spaces as `-` (Starlight serves
/// `develop/Tests/WebDriver/index.mdx` at `/develop/tests/webdriver/`).
#[must_use]
pub fn route_key(path: &str) -> String {
    let (stem, _) = crate::links::path_stem(path);
    let stem = ["/index", "/README", "/readme"].iter().find_map(|name| stem.strip_suffix(name)).unwrap_or(stem);
    stem.to_lowercase().replace(' ', "-")
}

/// `folder/target`, with `.` and `..` resolved; `None` when it climbs out of the project.
#[must_use]
pub fn join(folder: &str, target: &str) -> Option<String> {
    normalize(&if folder.is_empty() { target.to_string() } else { format!("{folder}/{target}") })
}

fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// The relative link from files in the folder `from` to the file `to`, both relative to the project root.
#[must_use]
pub fn relative_href(from: &str, to: &str) -> String {
    let from: Vec<&str> = from.split('/').filter(|part| !part.is_empty()).collect();
    let to: Vec<&str> = to.split('/').filter(|part| !part.is_empty()).collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = std::iter::repeat_n("..", from.len() - common).collect();
    parts.extend(&to[common..]);
    parts.join("/")
}

/// Decodes `%XX` escapes; invalid escapes are kept as written.
#[must_use]
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[at] == b'%'
            && let (Some(high), Some(low)) =
                (bytes.get(at + 1).and_then(|b| hex(*b)), bytes.get(at + 2).and_then(|b| hex(*b)))
        {
            out.push(u8::try_from(high * 16 + low).unwrap_or(b'%'));
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::{bare_path_under, wiki_key};

    /// A bare link is looked up under a site root as its file's folder would hold it; `./`, `../`, `/` and an
    /// anchor alone are not bare, and a bare path that climbs out of the project names nothing.
    #[test]
    fn a_bare_link_names_a_path_under_a_site_root() {
        assert_eq!(bare_path_under("docs", "api/Store.md#dispatch").as_deref(), Some("docs/api/Store.md"));
        assert_eq!(bare_path_under("docs", "api/My%20Store.md?x=1").as_deref(), Some("docs/api/My Store.md"));
        for destination in ["./api/Store.md", "../api/Store.md", "/api/Store.md", "#dispatch", "a/../../../x.md"] {
            assert_eq!(bare_path_under("docs", destination), None, "{destination}");
        }
    }

    #[test]
    fn a_wiki_key_is_the_name_lowercased_with_spaces_and_underscores_as_hyphens() {
        for (name, key) in [
            ("  Dendron.Topic_Links.md ", "dendron.topic-links"),
            ("Read Me", "read-me"),
            ("already-a-key", "already-a-key"),
            ("ÉTÉ Notes", "été-notes"),
            ("ΟΔΟΣ", "οδος"),
        ] {
            assert_eq!(wiki_key(name), key, "{name:?}");
        }
    }
}
