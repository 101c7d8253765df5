"""Reports of real runs, opened in headless Chromium (Debian's package, driven by Playwright).

Playwright downloads no browser here: it drives the executable `HARNESS_CHROMIUM` names (the `tests`
nox session installs Debian's `chromium` when it is missing), with a fresh profile per test
module. Each page records console errors, uncaught exceptions and every request that is not for
the file itself; a report page must make none of them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from harness.protocol import Setting

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = Path(os.environ.get("HARNESS_TEST_OUTPUT", ROOT / "test-output")) / "browser"  # screenshots land here
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    path = os.environ.get(Setting.CHROMIUM) or shutil.which("chromium")
    if not path or not Path(path).exists():
        pytest.fail("the browser tests need Debian's chromium (apt-get install chromium; `nox -s tests` installs it)",
                    pytrace=False)
    return path


@dataclass
class Opened:
    """A report page and what it did that a self-contained page must not do."""

    page: Page
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def screenshot(self, name: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def assert_self_contained(self) -> None:
        assert self.errors == [], self.errors
        assert self.requests == [], f"the page fetched {self.requests}"


@contextmanager
def chromium_context() -> Iterator[BrowserContext]:
    """Headless Chromium with a fresh profile, allowed to use the clipboard."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium(), args=FLAGS, headless=True, viewport={"width": 1366, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        context.set_default_timeout(10_000)  # a page of this size answers in well under a second
        yield context
        context.close()


def visit(context: BrowserContext, path: Path) -> Opened:
    """Open a report file, recording console errors, uncaught exceptions and requests for anything else."""
    page = context.new_page()
    opened = Opened(page)
    page.on("console", lambda message: opened.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: opened.errors.append(str(error)))
    page.on("request", lambda request: opened.requests.append(request.url)
            if request.url != path.resolve().as_uri() else None)
    page.goto(path.resolve().as_uri())
    return opened


@pytest.fixture(scope="module")
def browser_context() -> Iterator[BrowserContext]:
    with chromium_context() as context:
        yield context


@pytest.fixture
def open_report(browser_context: BrowserContext):
    pages: list[Opened] = []

    def open_(path: Path) -> Opened:
        pages.append(visit(browser_context, path))
        return pages[-1]

    yield open_
    for opened in pages:
        opened.assert_self_contained()
        opened.page.close()


def harness(*args: object) -> int:
    done = subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True)
    assert done.returncode in (0, 1, 2), done.stdout[-2000:] + done.stderr[-2000:]
    return done.returncode
