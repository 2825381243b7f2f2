//! Snapshots of what a person reads: the human output of the main commands (exit code, stdout and stderr) on
//! one small project, with the temporary root, timings and run ids filtered. A change to any of them shows
//! as a diff to review; `INSTA_UPDATE=always cargo test --test cli snapshots` rewrites them, and with
//! `CI=true` insta never writes.

use insta_cmd::assert_cmd_snapshot;

use crate::CliTest;

/// Two linked notes, one link broken.
fn project() -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped.\n\n\
         See [borrowing](borrowing.md) and [missing](gone.md).\n",
    );
    test.write(
        "docs/borrowing.md",
        "# Borrowing\n\nA reference borrows a value without taking ownership of it. Ownership rules apply.\n",
    );
    test
}

/// Runs `body` with the filters every snapshot here needs.
fn filtered(test: &CliTest, body: impl FnOnce()) {
    let root = test.root().to_string_lossy().into_owned();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex::escape(&root), "[ROOT]");
    settings.add_filter(r"\(\d+\.\d+ s\)", "([TIME])");
    settings.add_filter(r"run-\d{8}T\d{9}Z-\d+-\d+", "[RUN]");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(body);
}

#[test]
fn build_reports_what_it_compiled() {
    let test = project();
    filtered(&test, || assert_cmd_snapshot!(test.command(&["build"])));
}

#[test]
fn a_second_build_reports_nothing_changed() {
    let test = project();
    assert!(test.run(&["build"]).status.success());
    filtered(&test, || assert_cmd_snapshot!(test.command(&["build"])));
}

#[test]
fn search_shows_each_result_with_its_ref_and_passage() {
    let test = project();
    assert!(test.run(&["build"]).status.success());
    filtered(&test, || assert_cmd_snapshot!(test.command(&["search", "owner scope"])));
}

#[test]
fn lint_names_the_file_line_and_column_of_a_broken_link() {
    let test = project();
    filtered(&test, || assert_cmd_snapshot!(test.command(&["lint"])));
}

#[test]
fn ask_answers_with_cited_sentences_and_its_run() {
    let test = project();
    assert!(test.run(&["build"]).status.success());
    filtered(&test, || {
        assert_cmd_snapshot!(test.command(&["ask", "what happens when the owner goes out of scope?"]));
    });
}

#[test]
fn ask_declines_what_the_sources_do_not_say() {
    let test = project();
    assert!(test.run(&["build"]).status.success());
    filtered(&test, || assert_cmd_snapshot!(test.command(&["ask", "who maintains the billing service?"])));
}

#[test]
fn get_of_an_unknown_ref_is_an_error_that_says_what_it_expected() {
    let test = project();
    assert!(test.run(&["build"]).status.success());
    filtered(&test, || assert_cmd_snapshot!(test.command(&["get", "nothing-here"])));
}

#[test]
fn a_broken_config_is_an_error_naming_the_file_and_line() {
    let test = project();
    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n[wiki]\nmin_source = 2\n");
    filtered(&test, || assert_cmd_snapshot!(test.command(&["build"])));
}
