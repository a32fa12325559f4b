"""What the pages show, built on helpers.profiling: tables, charts (the book's one plotly style),
guesses, verdicts and the article's claims, widgets, prose (myst-nb glue), the article's A100
figures (article), and the hub_flash page (hub_flash). Never imports helpers.occupancy."""
