from ledger.book import Book


def test_balance_sums_entries():
    book = Book()
    book.record(3)
    assert book.balance() == 3
