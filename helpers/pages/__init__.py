"""What the pages show, built on helpers.profiling: tables, charts (the book's one plotly style),
guesses, verdicts and the article's claims, widgets, prose (myst-nb glue), the article's A100
figures (article), the hub_flash page (hub_flash), and how a table reaches the reader (render).
Never imports helpers.occupancy."""
from .render import install as _install_table_renderer

# in a notebook, every DataFrame a page shows goes through the book's one table renderer
_install_table_renderer()
