"""The views every page shares, built on helpers.core: tables, charts (the book's one plotly style),
guesses, questions, verdicts, widgets, prose (myst-nb glue), perfetto (the trace behind a page),
breakdown (per-step views) and how a table reaches the reader (render).
Never imports helpers.occupancy or helpers.chapters."""
from .render import install as _install_table_renderer

# in a notebook, every DataFrame a page shows goes through the book's one table renderer
_install_table_renderer()
