"""Deliver reports: files in the requested formats, and on standard output the report itself (JSON,
HTML) or, for a person, text that rich lays out from Markdown: the first screen (screen.py) for a
comparison, the Markdown report for the others. Markdown markup never reaches a terminal or a log.

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

from harness.record.writing import make_folder, write_atomically
from harness.report import json_report, markdown, screen
from harness.report.model import Report

LOG_WIDTH = 120  # columns of the text written where standard output is no terminal (nox's output in CI, a pipe)


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(json_report.to_json(report), indent=2) + "\n"
    if fmt == "html":
        from harness.report import html  # Jinja2 and matplotlib: loaded only for the page

        return html.render(report)
    return markdown.render(report)


def deliver(report: Report, formats: list[str], out: Path | None) -> None:
    """The test comparison's report: OUT/report.<fmt> files, or standard output; the first screen for a person."""
    write_out(lambda fmt: render(report, fmt), formats, out, "report", lambda: screen.render(report))


def write_out(rendered: Callable[[str], str], formats: list[str], out: Path | None, stem: str,
              first_screen: Callable[[], str] | None = None) -> None:
    """Write each format to OUT/<stem>.<fmt>, or to standard output. Standard output that is a report
    asked for as data (JSON, HTML, without OUT) gets it as it is; text a person reads (the Markdown
    form without OUT, in a terminal, a pipe or a log, or the summary beside the files written) gets
    `first_screen` (else the Markdown) laid out as text (`show`)."""
    if out is not None:
        make_folder(out)
        for fmt in formats:  # each replaces its file whole: a full disk leaves the earlier report as it was
            write_atomically(out / f"{stem}.{fmt}", rendered(fmt))
    elif formats != ["md"]:
        for fmt in formats:
            sys.stdout.write(rendered(fmt))
        return
    show(first_screen() if first_screen is not None else rendered("md"))
    if out is not None:
        print(f"reports written to {out}: " + ", ".join(f"{stem}.{fmt}" for fmt in formats))


def show(text: str) -> None:
    """Markdown laid out by rich as text to read: tables drawn, emphasis and code as styles (plain in
    a log), no `**` or `|` markup; a log that is no terminal gets LOG_WIDTH columns, room for the tables.
    rich pads every line to the width: the padding is cut, so a log has no trailing blanks."""
    console = Console(width=None if sys.stdout.isatty() else LOG_WIDTH)
    with console.capture() as laid_out:
        console.print(Markdown(text))
    sys.stdout.write("".join(line.rstrip() + "\n" for line in laid_out.get().splitlines()))
