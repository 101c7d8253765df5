"""A first hint at what kind of regression a test shows, from its outcome and failure text.

Hints, not proofs: they sort a long list so the crashes and the numerics come first.
"""

from __future__ import annotations

import re

from harness.protocol import Outcome, stopped_before_tests

_SIGNAL = re.compile(r"\bSIG[A-Z]+\b")
_EXIT = re.compile(r"exit status (-?\d+)")
_FALLBACK = re.compile(r"\(silent fallback\)|torch\.compile with fullgraph=True found no compiled frames")
_BUILD = re.compile(r"Inductor's C\+\+ build failed|C\+\+ compile error")  # P3's InductorBuildFailed, Inductor's own
_NUMERIC = re.compile(r"not close|Mismatched elements|Greatest (?:absolute|relative) difference|allclose", re.I)
_IMPORT = re.compile(r"^(?:E\s+)?(?:ImportError|ModuleNotFoundError)\b")
# A test that tried the network on a machine without it (name resolution, refused or unreachable
# connections, downloads): what it is, not a numerics or logic failure of the configuration.
_NETWORK = re.compile(r"Name or service not known|Temporary failure in name resolution|nodename nor servname|"
                      r"getaddrinfo failed|Network is unreachable|No route to host|URLError|gaierror|"
                      r"Failed to establish a new connection|Max retries exceeded with url", re.I)
_EXCEPTION = re.compile(r"^(?:E\s+)?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))\b")

CRASH, TIMEOUT, INFRASTRUCTURE, NUMERICS = "crash", "timeout", "infrastructure (collection or import)", "numerics beyond tolerance"
NETWORK = "network (no network access)"
FALLBACK = "torch.compile fell back to eager"  # the interop matrix's proof (harness/interop) or dynamo's own error
BUILD = "Inductor's C++ build failed"


def classify(outcome: str, message: str) -> str:
    """`crash (SIGSEGV)`, `timeout`, `infrastructure (collection or import)`, `network (no network
    access)`, `torch.compile fell back to eager`, `Inductor's C++ build failed`, `numerics beyond
    tolerance`, `exception (TypeError)`, or the bare outcome."""
    text = message.strip()
    if outcome == Outcome.CRASHED:
        signal_name = _SIGNAL.search(text)
        exit_status = _EXIT.search(text)
        if signal_name:
            return f"{CRASH} ({signal_name.group(0)})"
        return f"{CRASH} (exit status {exit_status.group(1)})" if exit_status else CRASH
    if outcome == Outcome.TIMEOUT:
        return TIMEOUT
    if stopped_before_tests(outcome, text) or _IMPORT.match(text):
        return INFRASTRUCTURE
    if _NETWORK.search(text):
        return NETWORK
    if _FALLBACK.search(text):
        return FALLBACK
    if _BUILD.search(text):
        return BUILD
    if _NUMERIC.search(text):
        return NUMERICS
    exception = _EXCEPTION.match(text)
    return f"exception ({exception.group(1)})" if exception else outcome


def exception_type(message: str) -> str | None:
    """The exception named at the start of a failure message, if any."""
    found = _EXCEPTION.match(message.strip())
    return found.group(1) if found else None
