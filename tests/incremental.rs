//! In-process incrementality: one `Compiler` kept across builds, as a watch mode or server would keep it.
//! The summary's query counter comes from salsa's `WillExecute` events.

use knowledge::build::{BuildSummary, Compiler, Silent};
use knowledge::config::Project;

fn project(dir: &std::path::Path) -> Project {
    Project::load(&dir.join("kc.toml")).unwrap()
}

fn build(compiler: &mut Compiler, dir: &std::path::Path) -> BuildSummary {
    compiler.build(&project(dir), &Silent).unwrap()
}

#[test]
fn a_kept_compiler_reruns_only_the_edited_files_queries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kc.toml"), "version = 1\n").unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(root.join(format!("{name}.md")), format!("# {name}\n\nText of {name}.\n")).unwrap();
    }
    let mut compiler = Compiler::new();
    let first = build(&mut compiler, root);
    assert_eq!(first.queries.executed, 12, "parse, outline, chunks and lint_facts of three files");
    assert_eq!(first.sources.added, 3);

    let second = build(&mut compiler, root);
    assert_eq!(second.queries.executed, 0);
    assert!(!second.wrote);

    std::fs::write(root.join("b.md"), "# b\n\nText of b, edited.\n").unwrap();
    let third = build(&mut compiler, root);
    assert_eq!(third.queries.executed, 4, "parse, outline, chunks and lint_facts of b only");
    assert_eq!(third.sources.changed, 1);

    // A chunking change re-derives every source's rows; the kept database re-runs only `chunks`, since no
    // text changed and `parse` and `outline` do not read the settings.
    std::fs::write(root.join("kc.toml"), "version = 1\n[chunking]\ntarget_bytes = 100\noverlap_bytes = 10\n").unwrap();
    let fourth = build(&mut compiler, root);
    assert!(fourth.full_rebuild);
    assert_eq!(fourth.sources.changed, 3);
    assert_eq!(fourth.queries.executed, 3, "chunks of a, b and c");
}
