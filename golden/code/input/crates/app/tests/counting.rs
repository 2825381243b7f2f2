use app::Counter;

#[test]
fn counts_each_word() {
    let mut counter = Counter::new();
    counter.add("a b a");
    assert_eq!(counter.count("a"), 2);
}
