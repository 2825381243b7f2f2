//! Components from package manifests: `Cargo.toml`, `package.json`, `pyproject.toml` and `go.mod`.
//!
//! A manifest that cannot be read (broken TOML or JSON) defines no component; the file is still an
//! indexed source, and lint or the build says nothing more about it: the package tool will.

use super::{ComponentPayload, Dependency, Entity, EntityType, Payload, folder, line_of, offset32};

/// The folders whose manifests are test fixtures (a package a test builds, not one the project ships):
/// Cargo's `tests/`, Go's `testdata/`, JavaScript's `__fixtures__/`, and the like.
const FIXTURE_FOLDERS: [&str; 7] = ["tests", "test", "testsuite", "testdata", "fixtures", "__fixtures__", "__tests__"];

/// `None` when the path is not a manifest; `Some(None)` when it is one that defines no component: a broken
/// one, or a test fixture, which belongs to the component whose tests hold it (its files are that
/// component's, as any file of its `tests/`). Decided from the path alone, so a file's entities never
/// depend on another file.
pub(super) fn component(path: &str, text: &str) -> Option<Option<Entity>> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let root = folder(path).to_string();
    if !matches!(name, "Cargo.toml" | "package.json" | "pyproject.toml" | "go.mod") {
        return None;
    }
    if root.split('/').any(|segment| FIXTURE_FOLDERS.contains(&segment)) {
        return Some(None);
    }
    let found = match name {
        "Cargo.toml" => cargo(text, root),
        "package.json" => npm(text, root),
        "pyproject.toml" => python(text, root),
        "go.mod" => go(text, root),
        _ => return None,
    };
    Some(found.map(|(name, anchor, payload)| {
        let (start, end) = anchor.unwrap_or((0, text.len()));
        Entity {
            slug: format!("component/{name}"),
            entity_type: EntityType::Component,
            start_line: line_of(text, start),
            end_line: line_of(text, end.saturating_sub(1).max(start)),
            start_offset: offset32(start),
            end_offset: offset32(end),
            name,
            hash: String::new(),
            payload: Payload::Component(payload),
        }
    }))
}

type Found = (String, Option<(usize, usize)>, ComponentPayload);

/// The byte range of a TOML table from its `[header]` line to the next header.
fn toml_section(text: &str, header: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            if start.is_some() {
                return start.map(|s| (s, offset));
            }
            if trimmed == header {
                start = Some(offset);
            }
        }
        offset += line.len();
    }
    start.map(|s| (s, text.len()))
}

fn string_at<'a>(table: &'a toml::Table, keys: &[&str]) -> Option<&'a str> {
    let (last, parents) = keys.split_last()?;
    let mut table = table;
    for key in parents {
        table = table.get(*key)?.as_table()?;
    }
    table.get(*last)?.as_str()
}

/// A Cargo workspace's `[workspace.dependencies]`, which its members' `workspace = true` dependencies name.
fn workspace_dependencies(manifest: &toml::Table) -> Vec<Dependency> {
    let mut workspace_dependencies = Vec::new();
    for (name, spec) in manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
    {
        let requirement = match spec {
            toml::Value::String(version) => version.clone(),
            toml::Value::Table(spec) => spec
                .get("version")
                .and_then(toml::Value::as_str)
                .map_or_else(|| if spec.contains_key("path") { "path" } else { "*" }.to_string(), str::to_string),
            _ => "*".to_string(),
        };
        let path = spec.get("path").and_then(toml::Value::as_str).map(str::to_string);
        workspace_dependencies.push(Dependency { name: name.clone(), requirement, scope: "workspace".into(), path });
    }
    workspace_dependencies
}

fn cargo(text: &str, root: String) -> Option<Found> {
    let manifest: toml::Table = text.parse().ok()?;
    let mut dependencies = Vec::new();
    let mut read = |table: Option<&toml::Value>, scope: &str| {
        for (name, spec) in table.and_then(toml::Value::as_table).into_iter().flatten() {
            let (requirement, path, package) = match spec {
                toml::Value::String(version) => (version.clone(), None, None),
                toml::Value::Table(spec) => {
                    let path = spec.get("path").and_then(toml::Value::as_str).map(str::to_string);
                    let requirement = if spec.get("workspace").and_then(toml::Value::as_bool) == Some(true) {
                        "workspace".to_string()
                    } else if let Some(version) = spec.get("version").and_then(toml::Value::as_str) {
                        version.to_string()
                    } else if path.is_some() {
                        "path".to_string()
                    } else {
                        "*".to_string()
                    };
                    (requirement, path, spec.get("package").and_then(toml::Value::as_str).map(str::to_string))
                }
                _ => ("*".to_string(), None, None),
            };
            // A renamed dependency (`alias = { package = "real" }`) is the package it names.
            let name = package.unwrap_or_else(|| name.clone());
            dependencies.push(Dependency { name, requirement, scope: scope.to_string(), path });
        }
    };
    for (key, scope) in [("dependencies", "normal"), ("dev-dependencies", "dev"), ("build-dependencies", "build")] {
        read(manifest.get(key), scope);
        // Platform-specific tables: `[target.'cfg(unix)'.dependencies]`.
        for target in manifest.get("target").and_then(toml::Value::as_table).into_iter().flat_map(|t| t.values()) {
            read(target.get(key), scope);
        }
    }
    let members: Vec<String> = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect();
    if let Some(name) = string_at(&manifest, &["package", "name"]) {
        let version = string_at(&manifest, &["package", "version"]).map(str::to_string);
        // A root package that is also its workspace declares the requirements its members inherit.
        dependencies.extend(workspace_dependencies(&manifest));
        let payload = ComponentPayload {
            ecosystem: "cargo".into(),
            component_kind: "package".into(),
            version,
            root,
            members,
            dependencies: sorted(dependencies),
        };
        return Some((name.to_string(), toml_section(text, "[package]"), payload));
    }
    // A virtual workspace: named by its folder, its members listed; the crates are components of their own.
    manifest.get("workspace")?;
    let workspace_dependencies = workspace_dependencies(&manifest);
    let name =
        if root.is_empty() { "workspace".to_string() } else { root.rsplit('/').next().unwrap_or(&root).to_string() };
    let payload = ComponentPayload {
        ecosystem: "cargo".into(),
        component_kind: "workspace".into(),
        version: None,
        root,
        members,
        dependencies: sorted(workspace_dependencies),
    };
    Some((name, toml_section(text, "[workspace]"), payload))
}

fn npm(text: &str, root: String) -> Option<Found> {
    let manifest: serde_json::Value = serde_json::from_str(text).ok()?;
    let name = manifest.get("name")?.as_str()?.to_string();
    let mut dependencies = Vec::new();
    for (key, scope) in [
        ("dependencies", "normal"),
        ("devDependencies", "dev"),
        ("peerDependencies", "peer"),
        ("optionalDependencies", "optional"),
    ] {
        for (dep, requirement) in manifest.get(key).and_then(serde_json::Value::as_object).into_iter().flatten() {
            let requirement = requirement.as_str().unwrap_or("*").to_string();
            // `workspace:*` and `file:../x` name a package of this repository.
            let path = requirement.strip_prefix("file:").map(str::to_string);
            dependencies.push(Dependency { name: dep.clone(), requirement, scope: scope.into(), path });
        }
    }
    let members = match manifest.get("workspaces") {
        Some(serde_json::Value::Array(list)) => list.iter().filter_map(|m| m.as_str().map(str::to_string)).collect(),
        Some(serde_json::Value::Object(o)) => o
            .get("packages")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let payload = ComponentPayload {
        ecosystem: "npm".into(),
        component_kind: "package".into(),
        version: manifest.get("version").and_then(serde_json::Value::as_str).map(str::to_string),
        root,
        members,
        dependencies: sorted(dependencies),
    };
    Some((name, None, payload))
}

/// A PEP 508 requirement (`requests>=2.31; python_version < "3.12"`): its name and the rest.
fn pep508(spec: &str) -> Option<(String, String)> {
    let spec = spec.split(';').next()?.trim();
    let end = spec.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(spec.len());
    let name = &spec[..end];
    if name.is_empty() {
        return None;
    }
    // Extras (`name[extra]`) are not part of the requirement.
    let rest = spec[end..].trim();
    let rest = match rest.strip_prefix('[') {
        Some(after) => after.split_once(']').map_or("", |(_, r)| r).trim(),
        None => rest,
    };
    let requirement = if rest.is_empty() { "*" } else { rest };
    Some((name.to_lowercase().replace('_', "-"), requirement.to_string()))
}

fn python(text: &str, root: String) -> Option<Found> {
    let manifest: toml::Table = text.parse().ok()?;
    let mut dependencies = Vec::new();
    let strings = |value: Option<&toml::Value>| -> Vec<String> {
        value
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let project = manifest.get("project");
    for spec in strings(project.and_then(|p| p.get("dependencies"))) {
        if let Some((name, requirement)) = pep508(&spec) {
            dependencies.push(Dependency { name, requirement, scope: "normal".into(), path: None });
        }
    }
    for (_, group) in
        project.and_then(|p| p.get("optional-dependencies")).and_then(toml::Value::as_table).into_iter().flatten()
    {
        for spec in strings(Some(group)) {
            if let Some((name, requirement)) = pep508(&spec) {
                dependencies.push(Dependency { name, requirement, scope: "optional".into(), path: None });
            }
        }
    }
    // Poetry keeps its name and dependencies under `[tool.poetry]`.
    let poetry = manifest.get("tool").and_then(|t| t.get("poetry"));
    for (name, spec) in poetry.and_then(|p| p.get("dependencies")).and_then(toml::Value::as_table).into_iter().flatten()
    {
        if name == "python" {
            continue;
        }
        let (requirement, path) = match spec {
            toml::Value::String(version) => (version.clone(), None),
            toml::Value::Table(t) => (
                t.get("version").and_then(toml::Value::as_str).unwrap_or("*").to_string(),
                t.get("path").and_then(toml::Value::as_str).map(str::to_string),
            ),
            _ => ("*".to_string(), None),
        };
        dependencies.push(Dependency {
            name: name.to_lowercase().replace('_', "-"),
            requirement,
            scope: "normal".into(),
            path,
        });
    }
    let (name, version, header) = match string_at(&manifest, &["project", "name"]) {
        Some(name) => (name, string_at(&manifest, &["project", "version"]), "[project]"),
        None => (
            string_at(&manifest, &["tool", "poetry", "name"])?,
            string_at(&manifest, &["tool", "poetry", "version"]),
            "[tool.poetry]",
        ),
    };
    let payload = ComponentPayload {
        ecosystem: "pypi".into(),
        component_kind: "package".into(),
        version: version.map(str::to_string),
        root,
        members: Vec::new(),
        dependencies: sorted(dependencies),
    };
    Some((name.to_lowercase().replace('_', "-"), toml_section(text, header), payload))
}

fn go(text: &str, root: String) -> Option<Found> {
    let mut module = None;
    let mut dependencies = Vec::new();
    let mut in_require = false;
    let mut offset = 0;
    let mut anchor = None;
    for line in text.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or("").trim();
        let indirect = line.contains("// indirect");
        if let Some(path) = code.strip_prefix("module ") {
            module = Some(path.trim().trim_matches('"').to_string());
            anchor = Some((offset, offset + line.len()));
        } else if code == "require (" {
            in_require = true;
        } else if in_require && code == ")" {
            in_require = false;
        } else {
            let spec = if in_require { Some(code) } else { code.strip_prefix("require ") };
            if let Some((name, version)) = spec.and_then(|s| s.trim().split_once(char::is_whitespace)) {
                let scope = if indirect { "indirect" } else { "normal" };
                dependencies.push(Dependency {
                    name: name.to_string(),
                    requirement: version.trim().to_string(),
                    scope: scope.into(),
                    path: None,
                });
            }
        }
        offset += line.len();
    }
    let payload = ComponentPayload {
        ecosystem: "go".into(),
        component_kind: "package".into(),
        version: None,
        root,
        members: Vec::new(),
        dependencies: sorted(dependencies),
    };
    Some((module?, anchor, payload))
}

fn sorted(mut dependencies: Vec<Dependency>) -> Vec<Dependency> {
    dependencies.sort_by(|a, b| (&a.name, &a.scope).cmp(&(&b.name, &b.scope)));
    dependencies.dedup_by(|a, b| a.name == b.name && a.scope == b.scope);
    dependencies
}
