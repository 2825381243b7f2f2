//! The first hour (issue 42): what a new user meets before reading any docs, each failure saying its real
//! cause and nothing degrading in silence.

use crate::trust::StdioServer;
use crate::{CliTest, stderr};

fn built() -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped.\n",
    );
    test.build();
    test
}

#[test]
fn a_quoted_question_is_asked_and_a_mistyped_subcommand_is_an_error() {
    let test = built();
    let question = "what happens when the owner goes out of scope?";
    let read = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&test.ok(args)).unwrap() };
    let (prompted, asked) = (read(&[question, "--json"]), read(&["ask", question, "--json"]));
    assert_eq!(prompted["question"], question, "{prompted}");
    assert_eq!((&prompted["answer"], &prompted["citations"]), (&asked["answer"], &asked["citations"]));
    assert_ne!(prompted["run_id"], asked["run_id"], "each is a recorded ask run of its own");
    let stderr = test.fails(&["serch", "owner"], "unrecognized subcommand `serch`");
    assert!(stderr.contains("quote it"), "{stderr}");
}

#[test]
fn a_missing_folder_is_named_as_missing() {
    let test = CliTest::empty();
    let missing = test.path("nowhere");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .arg("-C")
        .arg(&missing)
        .arg("search")
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("the folder does not exist"), "{}", stderr(&output));
    assert!(!stderr(&output).contains("kc.toml"), "{}", stderr(&output));
}

#[test]
fn a_degraded_search_says_so_on_the_terminal() {
    let test = built();
    for mode in [&["--semantic"][..], &["--mode", "hybrid"]] {
        let shown = test.ok(&[&["search", "owner"][..], mode].concat());
        assert!(shown.starts_with("note: semantic ranking is unavailable"), "{mode:?}: {shown}");
        assert!(shown.contains("docs/ownership.md"), "{shown}");
    }
    assert!(!test.ok(&["search", "owner"]).contains("note:"), "a keyword search is not degraded");
}

#[test]
fn changes_end_with_a_line_even_when_there_are_none() {
    let test = built();
    let shown = test.ok(&["changes", "--since", "2999-01-01T00:00:00Z"]);
    assert!(shown.ends_with('\n') && !shown.trim().is_empty(), "{shown:?}");
}

#[test]
fn the_readme_lists_every_tool_the_server_has() {
    let test = built();
    let mut server = StdioServer::start(&test);
    std::io::Write::write_all(&mut server.stdin, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n")
        .unwrap();
    let tools = server.reply();
    server.stop();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme.split("## Serve it to agents (MCP)").nth(1).unwrap().split("\n## ").next().unwrap();
    let listed: std::collections::BTreeSet<&str> =
        section.split('`').filter(|word| word.starts_with("knowledge_") || word.starts_with("ok_")).collect();
    let served: std::collections::BTreeSet<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(listed, served, "the README's MCP section lists the tools `tools/list` answers");
}

#[test]
fn a_store_url_of_another_database_is_one_clear_error() {
    let test = built();
    for url in ["mysql://user:secret@db.example/app", "sqlite:///tmp/x.db", "db.example/app"] {
        let output = test.run(&["search", "owner", "--store", url]);
        assert_eq!(output.status.code(), Some(2), "{url}");
        let said = stderr(&output);
        assert!(said.contains("the store is Postgres with pgvector"), "{url}: {said}");
        assert!(!said.contains("Cause:") && !said.contains("secret"), "{url}: one line, no password: {said}");
    }
}

#[test]
fn init_writes_a_workspace_a_team_can_commit() {
    let test = CliTest::empty();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git").arg("-C").arg(test.root()).args(args).output().unwrap();
        assert!(output.status.success(), "git {args:?}: {}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    git(&["init", "-q"]);
    test.ok(&["init"]);
    test.write("docs/a.md", "# Alpha\n\nAlpha is the first concept. See [[Beta]].\n");
    test.write("docs/b.md", "# Beta\n\nBeta follows [[Alpha]].\n");
    test.write("docs/c.md", "# C\n\nBoth [[Alpha]] and [[Beta]].\n");
    test.build();
    test.ok(&["add", "a note for the team"]);
    test.build();
    git(&["add", "-A"]);
    let committed = git(&["ls-files"]);
    for shared in [
        ".hasna/knowledge/.gitignore",
        ".hasna/knowledge/wiki/README.md",
        ".hasna/knowledge/indexes/root.md",
        ".hasna/knowledge/schemas/v1.md",
        ".hasna/knowledge/notes.json",
    ] {
        assert!(committed.lines().any(|line| line == shared), "{shared} is the team's:\n{committed}");
    }
    for local in ["knowledge.db", "artifacts.stat", "build.lock", "notes.lock"] {
        assert!(test.path(&format!(".hasna/knowledge/{local}")).exists(), "{local} was made");
        assert!(!committed.contains(&format!(".hasna/knowledge/{local}")), "{local} is the machine's:\n{committed}");
    }
    // No folder waits empty for a later feature.
    for reserved in ["runs", "cache", "exports", "artifacts"] {
        assert!(!test.path(&format!(".hasna/knowledge/{reserved}")).exists(), "{reserved}/ was made empty");
    }
}

#[test]
fn hand_written_pages_are_sources_whatever_the_projects_gitignore_says_of_the_output_folder() {
    for gitignore in ["/.hasna\n", ".hasna/knowledge/\n", ""] {
        let test = built();
        test.write(".gitignore", gitignore);
        test.write(".hasna/knowledge/wiki/team.md", "# Team\n\nThe zeppelin rota is kept by the platform team.\n");
        test.write(".hasna/knowledge/wiki/answers/who.md", "# Who\n\nThe quokka service belongs to billing.\n");
        test.write("ignored/other.md", "# Other\n\nA zeppelin page the project ignores.\n");
        test.write(".gitignore", format!("{gitignore}/ignored\n"));
        let built = test.build();
        assert_eq!(built["sources"]["added"], 2, "{gitignore:?}: {built}");
        assert_eq!(test.result_paths("zeppelin rota"), [".hasna/knowledge/wiki/team.md"], "{gitignore:?}");
        assert_eq!(test.result_paths("quokka"), [".hasna/knowledge/wiki/answers/who.md"], "{gitignore:?}");
        assert_eq!(test.build()["wrote"], false, "{gitignore:?}: found once, nothing left to do");
    }
}

#[test]
fn a_build_and_stats_give_one_count_of_chunks() {
    let test = CliTest::new();
    test.write("docs/a.md", "# Alpha\n\nAlpha is the first concept. See [[Beta]].\n");
    test.write("docs/b.md", "# Beta\n\nBeta follows [[Alpha]].\n");
    test.write("docs/c.md", "# C\n\nBoth [[Alpha]] and [[Beta]].\n");
    let built = test.build();
    let stats: serde_json::Value = serde_json::from_str(&test.ok(&["stats", "--json"])).unwrap();
    assert!(stats["pages"].as_u64().unwrap() > 0, "the wiki has pages, whose chunks are its own: {stats}");
    assert_eq!(stats["chunks"], built["chunks"]["total"], "{stats}");
    let shown = test.ok(&["stats"]);
    assert!(shown.contains(&format!("{} chunks", built["chunks"]["total"])), "{shown}");
}

#[test]
fn completions_and_the_manual_page_cover_every_subcommand() {
    let test = CliTest::empty();
    let bash = test.ok(&["completions", "bash"]);
    let checked = std::process::Command::new("bash").arg("-n").stdin(std::process::Stdio::piped()).spawn().and_then(
        |mut shell| {
            std::io::Write::write_all(shell.stdin.as_mut().unwrap(), bash.as_bytes())?;
            shell.wait()
        },
    );
    assert!(checked.unwrap().success(), "the bash script parses");
    assert!(test.ok(&["completions", "zsh"]).starts_with("#compdef knowledge"));
    assert!(test.ok(&["completions", "fish"]).contains("complete -c knowledge"));
    assert!(test.ok(&["completions", "powershell"]).contains("Register-ArgumentCompleter"));
    test.fails(&["completions", "tcsh"], "invalid value 'tcsh'");
    let manual = test.ok(&["man"]);
    assert!(manual.contains(".TH knowledge 1"), "{manual}");
    for command in ["build", "search", "ask", "lint", "serve", "context", "ingest", "completions"] {
        assert!(bash.contains(&format!("knowledge,{command})")), "bash completes `{command}`");
        assert!(manual.contains(&format!("knowledge\\-{command}")), "the manual lists `{command}`");
    }
}

#[test]
fn every_command_s_help_gives_an_example_that_parses() {
    let test = CliTest::empty();
    let help = test.ok(&["--help"]);
    let commands: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .collect();
    assert!(commands.len() > 20, "{commands:?}");
    let nowhere = test.path("nowhere");
    for command in commands {
        let shown = test.ok(&[command, "--help"]);
        let example = shown.split("Example:\n  ").nth(1).unwrap_or_else(|| panic!("`{command} --help` has no example"));
        let line = example.lines().next().unwrap().split(" # ").next().unwrap();
        let first = line.split(" && ").next().unwrap().split(" > ").next().unwrap();
        // Split like a shell: words, and quoted phrases as one.
        let words: Vec<String> = first
            .split('"')
            .enumerate()
            .flat_map(|(n, part)| {
                if n % 2 == 1 { vec![part.to_string()] } else { part.split_whitespace().map(str::to_string).collect() }
            })
            .collect();
        assert_eq!(words[0], "knowledge", "{command}: {line}");
        // Parsed, then stopped by the missing folder: the example's arguments are ones the command takes.
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"))
            .arg("-C")
            .arg(&nowhere)
            .args(&words[1..])
            .output()
            .unwrap();
        assert!(stderr(&output).contains("the folder does not exist"), "`{line}`: {}", stderr(&output));
    }
}

#[test]
fn export_writes_json_lines_that_resolve_and_respect_permissions() {
    let test = CliTest::new();
    test.write(
        "kc.toml",
        "version = 1\n[permissions]\nrules = [{ path = \"hr/**\", labels = [\"hr\"] }]\n\
         [permissions.principals]\npeople = [\"hr\"]\n",
    );
    test.write("docs/a.md", "# Alpha\n\nAlpha is the first concept. See [[Beta]].\n");
    test.write("docs/b.md", "# Beta\n\nBeta follows [[Alpha]].\n");
    test.write("docs/c.md", "# C\n\nBoth [[Alpha]] and [[Beta]].\n");
    test.write("hr/pay.md", "# Pay\n\nThe salary bands are confidential.\n");
    let built = test.build();
    let read = |name: &str| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(test.path(&format!(".hasna/knowledge/exports/{name}"))).unwrap();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    };
    let report: serde_json::Value = serde_json::from_str(&test.ok(&["export", "--json"])).unwrap();
    assert_eq!(report["files"].as_array().unwrap().len(), 3, "{report}");
    let chunks = read("chunks.jsonl");
    assert!(chunks.iter().all(|c| c["path"] != "hr/pay.md"), "a labelled source is not exported without --as");
    for chunk in &chunks {
        let bytes = std::fs::read(test.path(chunk["path"].as_str().unwrap())).unwrap();
        let (start, end) =
            (chunk["start_offset"].as_u64().unwrap() as usize, chunk["end_offset"].as_u64().unwrap() as usize);
        assert_eq!(&bytes[start..end], chunk["text"].as_str().unwrap().as_bytes(), "{chunk}");
        assert_eq!(knowledge_queries::content_hash(&bytes), chunk["revision"].as_str().unwrap());
    }
    let pages = read("pages.jsonl");
    assert!(pages.iter().any(|p| p["slug"] == "alpha"), "{pages:?}");
    let citations = read("citations.jsonl");
    assert!(
        citations.iter().all(|c| pages.iter().any(|p| p["slug"] == c["page"])),
        "every citation's page is exported"
    );
    test.ok(&["--as", "people", "export"]);
    let everything = read("chunks.jsonl");
    assert!(everything.iter().any(|c| c["path"] == "hr/pay.md"), "the principal's export holds what it may read");
    assert_eq!(everything.len() as u64, built["chunks"]["total"].as_u64().unwrap(), "the count a build reports");

    // Written through no link.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(test.path(".hasna/knowledge/exports")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), test.path(".hasna/knowledge/exports")).unwrap();
    test.fails(&["export"], "symbolic link");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn eval_without_arguments_says_what_it_scores() {
    let test = built();
    let said = test.fails(&["eval"], "knowledge eval scores retrieval on either");
    assert!(said.contains("--judged FILE") && said.contains("--corpus FILE --queries FILE --qrels FILE"), "{said}");
    test.fails(&["eval", "--queries", "q.jsonl"], "--corpus");
}
