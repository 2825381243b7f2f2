//! What the benchmarks share: choosing corpora from `../shared/corpora`, copying a corpus's Markdown files
//! into a temporary project, and listing files.

use std::path::{Path, PathBuf};

/// The folder holding the shared corpora.
pub(crate) fn shared_corpora() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora")
}

/// The corpora the build and planner benches measure (name, folder under the shared corpora): specifications,
/// a book, 38,000 short pages and a note vault.
#[allow(dead_code, reason = "the watch and embedding benches measure others")]
pub(crate) const BUILD_CORPORA: [(&str, &str); 4] = [
    ("rust-rfcs", "rust-rfcs/text"),
    ("rust-book", "rust-book/src"),
    ("tldr", "tldr"),
    ("dendron-vault", "dendron-vault/vault"),
];

/// The corpora of `corpora` (name, folder under the shared corpora) the command line names (all when it
/// names none) that exist on this machine, each with its folder; a missing one is skipped with a note.
pub(crate) fn selected(corpora: &[(&'static str, &str)]) -> Vec<(&'static str, PathBuf)> {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let shared = shared_corpora();
    corpora
        .iter()
        .filter(|(name, _)| wanted.is_empty() || wanted.iter().any(|w| w == name))
        .filter_map(|(name, relative)| {
            let source = shared.join(relative);
            if source.is_dir() {
                Some((*name, source))
            } else {
                eprintln!("skipping {name}: {} not found", source.display());
                None
            }
        })
        .collect()
}

/// Copies the Markdown files under `from` to `to`, keeping their folders; returns how many and their bytes.
pub(crate) fn copy_markdown(from: &Path, to: &Path) -> (usize, u64) {
    let mut count = 0;
    let mut bytes = 0;
    for path in walk_files(from) {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let target = to.join(path.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        bytes += std::fs::copy(&path, &target).unwrap();
        count += 1;
    }
    (count, bytes)
}

/// Every file below `dir`.
pub(crate) fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The line a results table in docs/performance.md opens with: the commit measured (with `+` when the tree
/// has uncommitted changes), the date, and the machine (cores, memory, kernel), so no number is read without
/// them.
#[allow(dead_code)]
pub(crate) fn provenance() -> String {
    let run = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .output()
            .ok()
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let commit = run("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = if run("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty() { "" } else { "+" };
    let date = run("date", &["-u", "+%Y-%m-%d"]);
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| info.lines().next().map(|line| line.split_whitespace().nth(1).unwrap_or("0").to_string()))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or_else(String::new, |kb| format!("{:.0} GiB", kb / 1024.0 / 1024.0));
    let kernel = run("uname", &["-sr"]);
    format!("Measured at {commit}{dirty} on {date}: {cores} cores, {memory}, {kernel}, release profile.")
}
