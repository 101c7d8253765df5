"""Report: one model of a comparison (model.py), rendered as Markdown, JSON and a self-contained HTML page."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

FORMATS = ("md", "json", "html")  # here, not in output.py, so the command line knows them without loading rich
HTML_LIBRARIES = ("jinja2", "matplotlib")  # the page's templates and charts: the `report` extra


def unavailable(formats: Iterable[str]) -> str | None:
    """Why a requested format cannot be written with what this interpreter has, before any work."""
    if "html" not in formats:
        return None
    missing = [name for name in HTML_LIBRARIES if importlib.util.find_spec(name) is None]
    return (f"--format html needs {' and '.join(missing)}: pip install 'torch-runtime-harness[report]'"
            if missing else None)
