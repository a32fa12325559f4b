"""The views every page shares, built on helpers.core: tables, charts (the book's one plotly style),
guess (guess first, then look, judged in the browser), verdicts, widgets, prose (myst-nb glue), perfetto (the trace behind a page),
how a table reaches the reader (render), and the book's look
(style: installed by helpers.use_book_style(), never on import).
Never imports helpers.occupancy or helpers.chapters."""
