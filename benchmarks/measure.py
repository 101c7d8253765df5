"""Timing for benchmark scripts on shared, noisy machines: commands run in rounds, back to back in
rotating order, and a comparison is judged on the median of its per-round ratios (slow load drifts
hit both sides of a round alike), with the ratio of the best times beside it."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(command: list[str], env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    """Seconds the command took; a benchmark stops if it exits with a status outside `ok`."""
    began = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if done.returncode not in ok:
        sys.exit(f"benchmark command failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    return elapsed


def rounds(commands: dict[str, list[str]], env: dict[str, str], cwd: Path, count: int,
           ok: tuple[int, ...] = (0,)) -> dict[str, list[float]]:
    """`count` rounds of every command; each round starts with the next command in turn."""
    names = list(commands)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(count):
        for name in names[index % len(names):] + names[:index % len(names)]:
            times[name].append(timed(commands[name], env, cwd, ok))
    return times


def report(what: str, measured: list[float], reference: list[float], target: float | None) -> None:
    ratios = sorted(m / r for m, r in zip(measured, reference))
    ratio = statistics.median(ratios)
    verdict = "no target" if target is None else f"{'meets' if ratio <= target else 'MISSES'} target <= {target}"
    print(f"{what}: median of {len(ratios)} rounds {ratio:.3f} ({verdict}); rounds {ratios[0]:.3f}-{ratios[-1]:.3f}; "
          f"best {min(measured):.2f} s / {min(reference):.2f} s = {min(measured) / min(reference):.3f}", flush=True)
