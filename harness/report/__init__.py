"""Report: one model of a comparison (model.py), rendered as Markdown, JSON and a self-contained HTML page."""

FORMATS = ("md", "json", "html")  # here, not in output.py, so the command line knows them without loading rich
