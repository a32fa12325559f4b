"""A pytest plugin for the bug zoo's quick mode: leaves out the tests that need the book build
(the `book_build`/`built_book`/`book` fixtures) and the ones marked `browser` that read it."""
BOOK_FIXTURES = {"book_build", "built_book", "book"}


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        needs_book = bool(BOOK_FIXTURES & set(getattr(item, "fixturenames", ())))
        (drop if needs_book else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
