//! Usage and configuration errors: a clear message naming the file and line, and exit code 2.

use crate::{CliTest, stderr};

#[test]
fn a_malformed_config_names_file_line_and_column_and_exits_2() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n\n[chunking]\ntarget_bytes = \"large\"\n");
    let output = test.run(&["build"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    let expected =
        format!("error: {}:4:16: invalid type: string \"large\", expected u32", test.path("kc.toml").display());
    assert!(message.starts_with(&expected), "{message}");
    assert!(!test.index().exists(), "nothing is written");
}

#[test]
fn an_unknown_key_is_an_error_not_ignored() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[sources]\ninclude = [\"*.md\"]\nexclud = [\"x\"]\n");
    test.fails(&["build"], "kc.toml:4:1: unknown field `exclud`");
}

#[test]
fn a_missing_config_suggests_init() {
    let test = CliTest::empty();
    test.fails(&["build"], "run `knowledge init`");
}

#[test]
fn the_config_is_found_from_a_subfolder() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nechidna\n");
    test.write("docs/deep/b.md", "# B\n");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .args(["build", "--json"])
        .current_dir(test.path("docs/deep"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(test.result_paths("echidna"), ["docs/a.md"]);
}

#[test]
fn searching_before_any_build_says_what_to_do() {
    let test = CliTest::new();
    test.fails(&["search", "anything"], "run `knowledge build` first");
}

#[test]
fn bad_arguments_are_usage_errors() {
    let test = CliTest::new();
    assert_eq!(test.run(&["search"]).status.code(), Some(2));
    assert_eq!(test.run(&["search", "x", "--kind", "nonsense"]).status.code(), Some(2));
    assert_eq!(test.run(&["frobnicate"]).status.code(), Some(2));
}
