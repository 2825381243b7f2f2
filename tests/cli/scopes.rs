//! `--scope project|global`: the user's own knowledge base beside the project's, found by its home
//! (`$KNOWLEDGE_HOME`, or `~/.hasna/knowledge/`) and never by walking up from where a command runs.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::{CliTest, stderr};

/// `knowledge ARGS` run in `folder` with only `envs` naming homes.
fn run_in(folder: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_knowledge"));
    command.current_dir(folder).args(args).env_remove("KNOWLEDGE_HOME").env_remove("KNOWLEDGE_API_URL");
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().expect("run knowledge")
}

fn ok_in(folder: &Path, args: &[&str], envs: &[(&str, &Path)]) -> String {
    let output = run_in(folder, args, envs);
    assert!(output.status.success(), "`knowledge {}`: {}", args.join(" "), stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_global_scope_is_the_users_own_knowledge_base_beside_the_projects() {
    let project = CliTest::new();
    project.write("docs/ownership.md", "# Ownership\n\nEach value has an owner.\n");
    project.build();
    let home = tempfile::tempdir().unwrap();
    let global = home.path().join("kb");
    let envs = [("KNOWLEDGE_HOME", global.as_path())];
    let here = project.root();

    // Not there until created, and never found by walking up from the project.
    let missing = run_in(here, &["add", "x", "--scope", "global"], &envs);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("knowledge init --scope global"), "{}", stderr(&missing));
    ok_in(here, &["init", "--scope", "global"], &envs);
    let config = std::fs::read_to_string(global.join("kc.toml")).unwrap();
    assert!(config.contains("name = \"global\"") && config.contains("dir = \"index\""), "{config}");

    ok_in(here, &["add", "--scope", "global", "My dentist is on Harley Street."], &envs);
    std::fs::write(global.join("recipes.md"), "# Recipes\n\nThe sourdough starter needs feeding daily.\n").unwrap();
    ok_in(here, &["build", "--scope", "global"], &envs);
    assert!(global.join("index/knowledge.db").is_file());
    let search = |scope: &str, query: &str| -> Vec<String> {
        let found: Value =
            serde_json::from_str(&ok_in(here, &["search", query, "--scope", scope, "--json"], &envs)).unwrap();
        found["results"].as_array().unwrap().iter().map(|r| r["source"]["uri"].as_str().unwrap().to_string()).collect()
    };
    let dentist = search("global", "dentist");
    assert_eq!(dentist.len(), 1);
    assert!(dentist[0].starts_with("knowledge://item/"), "{dentist:?}");
    assert!(search("global", "sourdough starter")[0].ends_with("recipes.md"));
    assert!(search("project", "dentist").is_empty(), "the project's index holds no global note");
    assert_eq!(search("project", "owner").len(), 1);
    assert!(search("global", "owner").is_empty(), "the global index holds no project source");

    // `~/.hasna/knowledge/` without the variable; `-C` names a project and does not go with it.
    let fallback = [("HOME", home.path())];
    ok_in(here, &["init", "--scope", "global"], &fallback);
    assert!(home.path().join(".hasna/knowledge/kc.toml").is_file());
    let both = run_in(here, &["-C", here.to_str().unwrap(), "search", "x", "--scope", "global"], &envs);
    assert_eq!(both.status.code(), Some(2));
    assert!(stderr(&both).contains("does not go with --scope global"), "{}", stderr(&both));
    let refused = run_in(here, &["init", "--scope", "global"], &envs);
    assert!(stderr(&refused).contains("already exists"), "{}", stderr(&refused));
}
