"""Threshold sweeps: one configuration run at several JIT thresholds against one baseline.

The first JIT baselines ran CinderX at thresholds 1, 100 and 1000 (docs/background.md §3): a crash
at 1 that is gone at 1000 says where to look. Comparisons of one candidate configuration and tier
that differ only in threshold are grouped, lowest threshold first, so the report can show them side
by side.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.compare.diff import Comparison


@dataclass(frozen=True)
class Sweep:
    baseline: str
    configuration: str
    tier: str
    comparisons: tuple[Comparison, ...]  # one per threshold, lowest first

    @property
    def modules(self) -> list[str]:
        return sorted({row.module for c in self.comparisons for row in c.modules})


def column_label(comparison: Comparison) -> str:
    """A sweep column is named by the threshold CinderX reported back, not only the one requested."""
    read_back = comparison.jit_threshold
    if read_back is None:
        label = f"threshold {comparison.threshold} (not read back)"
    elif read_back != comparison.threshold:
        label = f"threshold {read_back} (requested {comparison.threshold})"
    else:
        label = f"threshold {read_back}"
    return label + ("" if comparison.valid else " (INVALID)")


def sweeps(comparisons: list[Comparison]) -> list[Sweep]:
    """Every group of two or more comparisons of one configuration and tier at distinct thresholds."""
    groups: dict[tuple[str, str, str], list[Comparison]] = {}
    for comparison in comparisons:
        if comparison.threshold is not None:
            groups.setdefault((comparison.baseline, comparison.configuration, comparison.tier), []).append(comparison)
    found = []
    for (baseline, configuration, tier), members in groups.items():
        if len({c.threshold for c in members}) == len(members) > 1:
            found.append(Sweep(baseline, configuration, tier,
                               tuple(sorted(members, key=lambda c: c.threshold or 0))))
    return found
