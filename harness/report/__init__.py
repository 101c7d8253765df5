"""Report: render a comparison as Markdown, JSON, HTML or a terminal table."""
