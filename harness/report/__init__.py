"""Report: render a comparison as Markdown, JSON, HTML or a terminal table."""

FORMATS = ("md", "json", "html")  # here, not in output.py, so the command line knows them without loading rich
