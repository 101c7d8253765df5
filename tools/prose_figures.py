"""How long the documentation is to read: lines, sentences and words per sentence of Markdown files.

    python tools/prose_figures.py README.md docs/*.md
    git show a7ebd5d:README.md | python tools/prose_figures.py -      (a file as it was)

Prose only: fenced code blocks, tables, headings and HTML comments are left out, and an inline code
span counts as one word. A sentence ends at `.`, `!` or `?` before a space or the line's end, or at
the end of a list item or paragraph. Issue 41 set the README's target (about 200 lines, about 22 words
a sentence); its before and after figures come from this script.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

LONG = 40  # words: a sentence above this is counted apart
_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # a link counts as its text
_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Figures:
    name: str
    lines: int
    sentences: int
    words: int
    long: int

    @property
    def average(self) -> float:
        return self.words / self.sentences if self.sentences else 0.0


def paragraphs(text: str) -> list[str]:
    """The prose blocks of a Markdown text: paragraphs and list items, each joined into one line."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in _COMMENT.sub("", text).splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        starts_item = bool(re.match(r"([-*+]|\d+\.)\s", stripped))
        if fenced or not stripped or stripped.startswith(("|", "#")) or starts_item:
            blocks.append(" ".join(current))
            current = [re.sub(r"^([-*+]|\d+\.)\s+", "", stripped)] if starts_item and not fenced else []
            continue
        current.append(stripped)
    blocks.append(" ".join(current))
    return [block for block in blocks if block]


def sentences(block: str) -> list[list[str]]:
    text = _LINK.sub(r"\1", _CODE_SPAN.sub("CODE", block))
    return [words for part in _END.split(text) if (words := part.split())]


def measure(name: str, text: str) -> Figures:
    found = [words for block in paragraphs(text) for words in sentences(block)]
    return Figures(name, len(text.splitlines()), len(found), sum(map(len, found)),
                   sum(1 for words in found if len(words) > LONG))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="Markdown files ('-': standard input)")
    args = parser.parse_args()
    print(f"{'file':40} {'lines':>6} {'sentences':>9} {'words/sentence':>14} {'>' + str(LONG) + ' words':>10}")
    for name in args.files:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        f = measure(name, text)
        print(f"{f.name:40} {f.lines:6} {f.sentences:9} {f.average:14.1f} {f.long:10}")


if __name__ == "__main__":
    main()
