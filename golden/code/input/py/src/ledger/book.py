class Book:
    """A ledger of entries."""

    def __init__(self):
        self.entries = []

    def record(self, amount):
        self.entries.append(amount)

    def balance(self):
        return sum(self.entries)

    def _audit(self):
        return len(self.entries)


def open_book():
    return Book()
