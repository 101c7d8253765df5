"""The statistics behind a speed-up: interval, verdict, geometric mean, and why per-process.

Synthetic per-process mean times stand in for pyperf runs; seeded, so every run is the same.
"""

from __future__ import annotations

import math
import random

import pytest

from harness.perf.compare import FASTER, SAME, SLOWER, geometric_mean, welch_speedup

pytestmark = pytest.mark.unit


def processes(center: float, count: int, spread: float, rng: random.Random) -> list[float]:
    """Per-process mean times: log-normal around `center`, as process layout and load make them."""
    return [center * math.exp(rng.gauss(0.0, spread)) for _ in range(count)]


def test_identical_samples_are_not_significant_with_a_speedup_of_one():
    times = [1.0e-3, 1.1e-3, 0.9e-3, 1.05e-3]
    speedup = welch_speedup(times, times)
    assert speedup.ratio == pytest.approx(1.0)
    assert speedup.low < 1.0 < speedup.high
    assert speedup.verdict == SAME


def test_a_twice_as_fast_candidate_is_faster_with_an_interval_around_two():
    rng = random.Random(1)
    speedup = welch_speedup(processes(2e-3, 8, 0.03, rng), processes(1e-3, 8, 0.03, rng))
    assert speedup.verdict == FASTER
    assert speedup.low > 1.0 and speedup.low < 2.0 < speedup.high
    assert speedup.ratio == pytest.approx(2.0, rel=0.05)


def test_a_slower_candidate_is_slower_below_one():
    rng = random.Random(2)
    speedup = welch_speedup(processes(1e-3, 6, 0.02, rng), processes(1.3e-3, 6, 0.02, rng))
    assert speedup.verdict == SLOWER
    assert speedup.high < 1.0
    assert speedup.ratio == pytest.approx(1 / 1.3, rel=0.05)


def test_a_small_difference_inside_the_noise_is_not_significant():
    rng = random.Random(3)
    speedup = welch_speedup(processes(1e-3, 6, 0.10, rng), processes(0.98e-3, 6, 0.10, rng))
    assert speedup.verdict == SAME
    assert speedup.low < 1.0 < speedup.high


def test_the_interval_is_symmetric_on_the_log_scale():
    rng = random.Random(4)
    speedup = welch_speedup(processes(1e-3, 6, 0.05, rng), processes(1e-3, 6, 0.05, rng))
    assert math.log(speedup.high) - math.log(speedup.ratio) == pytest.approx(math.log(speedup.ratio) - math.log(speedup.low))


def test_more_processes_give_a_narrower_interval():
    rng = random.Random(5)
    few = welch_speedup(processes(1e-3, 4, 0.05, rng), processes(1e-3, 4, 0.05, rng))
    many = welch_speedup(processes(1e-3, 40, 0.05, rng), processes(1e-3, 40, 0.05, rng))
    assert many.high / many.low < few.high / few.low


def test_one_process_per_side_is_refused():
    with pytest.raises(ValueError, match="at least 2 worker processes"):
        welch_speedup([1e-3], [1e-3, 1.1e-3])


def test_the_verdict_is_calibrated_five_percent_false_positives_on_a_a():
    """400 A/A pairs with process-level noise: about 5% may come out significant, not more."""
    rng = random.Random(6)
    significant = sum(welch_speedup(processes(1e-3, 6, 0.08, rng), processes(1e-3, 6, 0.08, rng)).significant
                      for _ in range(400))
    assert 5 <= significant <= 36  # 1.25% .. 9%: the nominal 5% with room for 400 draws


def test_the_interval_covers_the_true_speedup_about_95_percent_of_the_time():
    rng = random.Random(7)
    covered = 0
    for _ in range(400):
        s = welch_speedup(processes(1.5e-3, 6, 0.08, rng), processes(1e-3, 6, 0.08, rng))
        covered += s.low <= 1.5 <= s.high
    assert 364 <= covered <= 396  # 91% .. 99%


def test_pyperf_all_values_test_overstates_significance_when_processes_differ():
    """Why the unit is the process: values inside a process share its offset. Testing all values as
    independent (pyperf's own is_significant) flags far more A/A pairs than the nominal 5%."""
    from pyperf._utils import is_significant

    rng = random.Random(8)

    def values(count: int = 6, per_process: int = 8) -> tuple[list[float], list[float]]:
        means = processes(1e-3, count, 0.08, rng)
        all_values = [mean * math.exp(rng.gauss(0.0, 0.01)) for mean in means for _ in range(per_process)]
        return means, all_values

    ours = pyperfs = 0
    for _ in range(200):
        (means_a, values_a), (means_b, values_b) = values(), values()
        ours += welch_speedup(means_a, means_b).significant
        pyperfs += is_significant(values_a, values_b)[0]
    assert ours <= 20
    assert pyperfs >= 3 * max(ours, 10)


def test_geometric_mean_of_opposite_speedups_is_one():
    rng = random.Random(9)
    twice = welch_speedup(processes(2e-3, 8, 0.02, rng), processes(1e-3, 8, 0.02, rng))
    half = welch_speedup(processes(1e-3, 8, 0.02, rng), processes(2e-3, 8, 0.02, rng))
    mean = geometric_mean([twice, half])
    assert mean.ratio == pytest.approx(math.sqrt(twice.ratio * half.ratio))
    assert mean.ratio == pytest.approx(1.0, rel=0.05)
    assert mean.verdict == SAME


def test_geometric_mean_pools_the_intervals_of_consistent_small_gains():
    """Each 4% gain is lost in its own noise; eight of them together are significant."""
    rng = random.Random(10)
    gains = [welch_speedup(processes(1.04e-3, 6, 0.04, rng), processes(1e-3, 6, 0.04, rng)) for _ in range(8)]
    mean = geometric_mean(gains)
    assert mean.high / mean.low < min(g.high / g.low for g in gains)
    assert mean.verdict == FASTER


def test_geometric_mean_of_nothing_is_refused():
    with pytest.raises(ValueError):
        geometric_mean([])
