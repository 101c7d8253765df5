"""Deliver reports: files in the requested formats, and the Markdown on the terminal (rich renders it).

Every form is rendered from one report model (harness/report/model.py), so they cannot drift apart.
The perf comparison is delivered the same way (`write_out`), from its own renderer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown

from harness.report import json_report, markdown
from harness.report.model import Report


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(json_report.to_json(report), indent=2) + "\n"
    if fmt == "html":
        from harness.report import html  # Jinja2 and matplotlib: loaded only for the page

        return html.render(report)
    return markdown.render(report)


def deliver(report: Report, formats: list[str], out: Path | None) -> None:
    """The test comparison's report: OUT/report.<fmt> files, or standard output."""
    write_out(lambda fmt: render(report, fmt), formats, out, "report")


def write_out(rendered: Callable[[str], str], formats: list[str], out: Path | None, stem: str) -> None:
    """Write each format to OUT/<stem>.<fmt>, or to standard output; show Markdown in a terminal."""
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for fmt in formats:
            (out / f"{stem}.{fmt}").write_text(rendered(fmt), encoding="utf-8")
    if out is None and formats != ["md"]:
        for fmt in formats:
            sys.stdout.write(rendered(fmt))
        return
    text = rendered("md")
    if sys.stdout.isatty():
        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)
    if out is not None:
        print(f"reports written to {out}: " + ", ".join(f"{stem}.{fmt}" for fmt in formats))
