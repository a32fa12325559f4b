"""Shared page views (issue 19's layer): what a notebook shows, handed its data by the notebook."""
