"""Deliver reports: Markdown rendered in the terminal by rich, and files in the requested formats.

HTML is rich's export of the same rendering, so the three forms cannot drift apart. Several
comparisons of one configuration at several JIT thresholds are preceded by their sweep table.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown

from harness.compare.diff import Comparison
from harness.compare.sweep import sweeps
from harness.report import json_report, markdown


def render(comparisons: list[Comparison], fmt: str, history: str = "") -> str:
    """`history`: the compared series' history as Markdown (harness/report/history.py), shown after them."""
    if fmt == "json":
        documents = [json_report.to_json(c) for c in comparisons]
        return json.dumps(documents[0] if len(documents) == 1 else documents, indent=2) + "\n"
    text = "\n".join([*(markdown.render_sweep(s) for s in sweeps(comparisons)), *(markdown.render(c) for c in comparisons),
                      *([history] if history else [])])
    if fmt == "md":
        return text
    console = Console(record=True, width=160, file=io.StringIO())
    console.print(Markdown(text))
    return console.export_html(inline_styles=True)


def deliver(comparisons: list[Comparison], formats: list[str], out: Path | None, history: str = "") -> None:
    """Write each format to OUT/report.<fmt>, or to standard output; show Markdown in a terminal."""
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for fmt in formats:
            (out / f"report.{fmt}").write_text(render(comparisons, fmt, history), encoding="utf-8")
    if out is None and formats != ["md"]:
        for fmt in formats:
            sys.stdout.write(render(comparisons, fmt, history))
        return
    text = render(comparisons, "md", history)
    if sys.stdout.isatty():
        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)
    if out is not None:
        print(f"reports written to {out}: " + ", ".join(f"report.{fmt}" for fmt in formats))
