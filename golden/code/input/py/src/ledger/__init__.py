from ledger.book import Book
