//! The version-control context a build records: the git commit of the project and, on CI, the pull
//! request and run. Read from `.git` files and CI environment variables; no `git` process is spawned.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a build records about the change it compiled. Every field is optional: a project outside git, or
/// a build outside CI, records less.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct VcsContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The CI system, when one is detected: `github`, `gitlab` or `ci`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_run: Option<String>,
}

/// Reads the context of the project at `root` from its git folder and the environment.
#[must_use]
pub fn context(root: &Path) -> VcsContext {
    let mut context = git_head(root).unwrap_or_default();
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if var("GITHUB_ACTIONS").is_some() {
        context.ci = Some("github".to_string());
        context.commit = var("GITHUB_SHA").or(context.commit);
        context.ci_run = var("GITHUB_RUN_ID");
        // `refs/pull/123/merge` on pull-request builds.
        context.pull_request = var("GITHUB_REF")
            .and_then(|r| r.strip_prefix("refs/pull/").and_then(|r| r.split('/').next()).map(str::to_string));
    } else if var("GITLAB_CI").is_some() {
        context.ci = Some("gitlab".to_string());
        context.commit = var("CI_COMMIT_SHA").or(context.commit);
        context.ci_run = var("CI_PIPELINE_ID");
        context.pull_request = var("CI_MERGE_REQUEST_IID");
    } else if var("CI").is_some() {
        context.ci = Some("ci".to_string());
    }
    context
}

/// The commit and branch `HEAD` points at, from the nearest `.git` at or above `root`.
fn git_head(root: &Path) -> Option<VcsContext> {
    let git_dir = find_git_dir(root)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(VcsContext { commit: Some(head.to_string()), ..VcsContext::default() });
    };
    let branch = reference.strip_prefix("refs/heads/").map(str::to_string);
    // A worktree keeps its refs in the common folder named by `commondir`.
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map_or_else(|| git_dir.clone(), |dir| git_dir.join(dir.trim()));
    let commit = [&git_dir, &common]
        .iter()
        .find_map(|dir| std::fs::read_to_string(dir.join(reference)).ok())
        .map(|c| c.trim().to_string())
        .or_else(|| packed_ref(&common, reference));
    Some(VcsContext { commit, branch, ..VcsContext::default() })
}

fn find_git_dir(root: &Path) -> Option<PathBuf> {
    for dir in root.ancestors() {
        let candidate = dir.join(".git");
        if candidate.is_dir() {
            return Some(candidate);
        }
        // A worktree or submodule: `.git` is a file naming the real folder.
        if let Ok(text) = std::fs::read_to_string(&candidate)
            && let Some(target) = text.trim().strip_prefix("gitdir: ")
        {
            return Some(dir.join(target));
        }
    }
    None
}

fn packed_ref(git_dir: &Path, reference: &str) -> Option<String> {
    let packed = std::fs::read_to_string(git_dir.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (hash, name) = line.split_once(' ')?;
        (name == reference).then(|| hash.to_string())
    })
}
