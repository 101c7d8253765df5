"""Whether two sides may be compared at all: the checks that back a verdict.

A JIT run that compiled nothing, a JIT whose settings read back from CinderX in a test process
differ from the configuration's request (mode, threshold, activation), a baseline that could import
CinderX, different torch versions, interpreters, processor architectures or test sources, a run that
did not finish, shards that do not add up to one run, or a JUnit suite that claims more tests,
failures, errors or skips than its tests show (a report cut short: what it lost would go unseen) make
the comparison invalid (exit status 2), whatever the test outcomes say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.protocol import DEFAULT_THRESHOLD, Activation, JitMode
from harness.record.junit import Findings
from harness.record.model import Descendants, FileRecord, RunRecord
from harness.record.stream import Streamed
from harness.compare.sides import Side


@dataclass(frozen=True)
class Allowances:
    """Checks the user chose to relax; each one relaxed is said in the report."""

    interpreter_mismatch: bool = False
    architecture_mismatch: bool = False  # an aarch64 run against an x86_64 one: the JIT backends differ


def problems(baseline: Side, candidate: Side, allow: Allowances = Allowances()) -> list[str]:
    """Why the two sides cannot be compared; empty when they can."""
    found: list[str] = []
    for role, side in (("baseline", baseline), ("candidate", candidate)):
        found.extend(f"{role}: {problem}" for problem in _shard_problems(side))
        if side.record is None:
            continue
        if side.record.status != "complete":
            found.append(f"{role} run is incomplete (status: {side.record.status})")
        if side.record.jit_mode == "on":
            found.extend(f"{role}: {p}" for p in _jit_problems(side.record))
        found.extend(f"{role}: {p}" for p in _read_back_problems(side.record))
    if baseline.record is not None and baseline.record.jit_mode == "absent":
        found.extend(f"baseline is contaminated: {c}" for c in _contamination(baseline.record))
    if baseline.record is None or candidate.record is None:
        return found
    found.extend(_pair_problems(baseline, candidate, allow))
    return found


def reading_findings(streamed: Mapping[str, Streamed]) -> Findings:
    """What reading each side's JUnit files found (claimed counts its tests do not show: problems;
    tests without a name: notes), each said with its side, baseline first."""
    found = Findings()
    for role, side in sorted(streamed.items()):
        found += Findings(tuple(f"{role}: {p}" for p in side.findings.problems),
                          tuple(f"{role}: {n}" for n in side.findings.notes))
    return found


def allowance_notes(baseline: Side, candidate: Side, allow: Allowances) -> list[str]:
    """What a relaxed check let through, so the report says so."""
    if baseline.record is None or candidate.record is None:
        return []
    notes = []
    before, after = baseline.record.versions.get("python"), candidate.record.versions.get("python")
    if allow.interpreter_mismatch and before != after:
        notes.append(f"interpreter versions differ (baseline {before}, candidate {after}): allowed by "
                     "--allow-interpreter-mismatch, so differences may come from the interpreter, not only the change")
    if allow.architecture_mismatch and architecture_of(baseline.record) != architecture_of(candidate.record):
        notes.append(f"architectures differ (baseline {platform_of(baseline.record)}, candidate "
                     f"{platform_of(candidate.record)}): allowed by --allow-architecture-mismatch, so differences "
                     "may come from the processor, its JIT backend or the emulator, not only the change")
    return notes


def architecture_of(record: RunRecord) -> str:
    """The processor architecture the test interpreter ran as; for a record from before it was kept,
    the harness host's (the same then: the harness ran nothing emulated)."""
    return record.architecture or str(record.fingerprint.get("machine", ""))


def platform_of(record: RunRecord) -> str:
    """How reports name where a run ran: `aarch64 (emulated)`, `x86_64`."""
    return f"{architecture_of(record) or 'unknown'}{' (emulated)' if record.emulated else ''}"


def _pair_problems(baseline: Side, candidate: Side, allow: Allowances) -> list[str]:
    before, after = baseline.record, candidate.record
    assert before is not None and after is not None
    found = []
    compared = [("torch", "torch")] + ([] if allow.interpreter_mismatch else [("interpreter", "python")])
    for what, key in compared:
        if before.versions.get(key) != after.versions.get(key):
            found.append(f"{what} versions differ: baseline {before.versions.get(key)}, "
                         f"candidate {after.versions.get(key)}")
    if not allow.architecture_mismatch and architecture_of(before) != architecture_of(after):
        found.append(f"architectures differ: baseline {platform_of(before)}, candidate {platform_of(after)} "
                     "(compare runs of one architecture, or pass --allow-architecture-mismatch)")
    found.extend(_source_problems(baseline, candidate))
    found.extend(_shard_target_problems(baseline, candidate))
    found.extend(_switch_problems(before, after))
    if before.tier != after.tier:
        found.append(f"tiers differ: baseline {before.tier}, candidate {after.tier}")
    return found


def _switch_problems(before: RunRecord, after: RunRecord) -> list[str]:
    """PyTorch's test switches (slow tests, disabled-test lists, CI mode, ...) decide which tests run
    and how: two runs that set them differently do not run the same tests."""
    old, new = before.fingerprint.get("pytorch_switches"), after.fingerprint.get("pytorch_switches")
    if old is None or new is None:  # a record from before switches were recorded
        return []
    differing = sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
    return [f"PyTorch test switch {name} differs: baseline {old.get(name, 'unset')}, candidate {new.get(name, 'unset')}"
            for name in differing]


def _source_problems(baseline: Side, candidate: Side) -> list[str]:
    """Test sources are hashed per run (per shard); shard k is compared with shard k."""
    before, after = _source_hashes(baseline), _source_hashes(candidate)
    if set(before) != set(after):
        return [f"test sources cannot be compared: baseline ran as {_split(before)}, candidate as {_split(after)} "
                "(run both sides with the same --shard count)"]
    differing = [shard for shard in before if before[shard] != after[shard]]
    if not differing:
        return []
    if differing == [None]:
        return [f"test sources differ: baseline {before[None]}, candidate {after[None]}"]
    return [f"test sources differ in shard {shard}: baseline {before[shard]}, candidate {after[shard]}"
            for shard in differing]


def _shard_target_problems(baseline: Side, candidate: Side) -> list[str]:
    """Shard k of each side must hold the same tests: shards split on different weights (another
    durations history) would compare different tests under one name."""
    before, after = _shard_targets(baseline), _shard_targets(candidate)
    return [f"shard {shard} holds different tests in baseline and candidate ({len(before[shard] ^ after[shard])} "
            "targets differ): split both on the same weights (the same results database, or --durations RUN_DIR)"
            for shard in sorted(before.keys() & after.keys()) if before[shard] != after[shard]]


def _shard_targets(side: Side) -> dict[str, frozenset[str]]:
    records = [record for _, record in side.parts] or ([side.record] if side.record else [])
    return {record.shard: frozenset(record.targets) for record in records if record.shard}


def _source_hashes(side: Side) -> dict[str | None, object]:
    records = [record for _, record in side.parts] or ([side.record] if side.record else [])
    return {record.shard: record.test_sources.get("hash") for record in records}


def _split(hashes: dict[str | None, object]) -> str:
    return "one run" if list(hashes) == [None] else f"shards {', '.join(sorted(map(str, hashes)))}"


def _shard_problems(side: Side) -> list[str]:
    """Several run directories make one side only as the complete shards of one configuration and tier."""
    if len(side.parts) < 2:
        return []
    records = [record for _, record in side.parts]
    found = []
    for what, value in (("configurations", lambda r: r.configuration.get("name")), ("tiers", lambda r: r.tier),
                        ("thresholds", lambda r: r.threshold)):
        values = sorted({str(value(r)) for r in records})
        if len(values) > 1:
            found.append(f"merges runs of different {what} ({', '.join(values)}): give the shards of one run")
    shards = [r.shard for r in records]
    if None in shards:
        unsharded = [str(path) for path, record in side.parts if record.shard is None]
        return found + [f"merges runs that are not shards ({', '.join(unsharded)}): "
                        "several run directories make one side only as shards (--shard I/N)"]
    counts = {shard.split("/")[1] for shard in shards}
    if len(counts) > 1:
        return found + [f"merges shards of different splits ({', '.join(sorted(shards))})"]
    count = int(counts.pop())
    indexes = [int(shard.split("/")[0]) for shard in shards]
    duplicated = sorted({i for i in indexes if indexes.count(i) > 1})
    missing = sorted(set(range(1, count + 1)) - set(indexes))
    if duplicated:
        found.append(f"shard {', '.join(f'{i}/{count}' for i in duplicated)} given more than once")
    if missing:
        found.append(f"shards missing: {', '.join(f'{i}/{count}' for i in missing)} (the run is incomplete)")
    return found


def _jit_problems(record: RunRecord) -> list[str]:
    errors = sorted({f.jit_error for f in record.files if f.jit_error})
    errors.extend(f"{f.file}: {problem}" for f in record.files if f.descendants
                  for problem in Descendants(**f.descendants).problems)
    if record.files and record.compiled == 0:
        errors.append(f"vacuous: the JIT was on but compiled 0 functions in {len(record.files)} files")
    return errors


def _read_back_problems(record: RunRecord) -> list[str]:
    """Files in which CinderX, read back in a test process, was not set as the configuration asked."""
    if record.jit_mode not in (JitMode.ON, JitMode.OFF):
        return []
    found = []
    for file in record.files:
        if file.jit_error:
            continue  # already a problem: the request could not be applied at all
        mismatches = sorted({m for process in _processes(file) for m in _mismatches(record, process)})
        found.extend(f"{file.file}: {m}" for m in mismatches)
    return found


def _processes(file: FileRecord) -> tuple[dict[str, Any], ...]:
    """Each test process's read-back; a record written before they were kept has the last one's end state."""
    return file.jit_processes or (({"finished": file.jit},) if file.jit else ())


def _mismatches(record: RunRecord, process: dict[str, Any]) -> list[str]:
    found = []
    for moment, state in (("when switched", process.get("applied")), ("at the end", process.get("finished"))):
        if state:
            found.extend(_setting_mismatches(record, state, moment))
    if record.jit_mode == JitMode.ON and process.get("applied"):
        found.extend(_activation_mismatches(record.configuration.get("activation", Activation.AFTER_COLLECTION),
                                            process["applied"]))
    return found


def _setting_mismatches(record: RunRecord, state: dict[str, Any], moment: str) -> list[str]:
    """Mode and threshold as CinderX reported them (where it did), against the request."""
    requested = DEFAULT_THRESHOLD if record.threshold is None else record.threshold
    if "enabled" not in state:
        return []
    if record.jit_mode == JitMode.OFF:
        return [f"the JIT was on {moment} (requested: off)"] if state["enabled"] else []
    if not state["enabled"]:
        return [f"the JIT was off {moment} (requested: on)"]
    if "threshold" in state and state["threshold"] != requested:
        return [f"CinderX reported threshold {state['threshold']} {moment} (requested {requested})"]
    return []


def _activation_mismatches(activation: str, applied: dict[str, Any]) -> list[str]:
    """When the JIT was switched on, and whether CinderX had compiled anything before, against the request."""
    if activation == Activation.STARTUP:
        return ["the JIT was switched on after collection (requested activation: startup)"] \
            if applied.get("collected") is True else []
    found = []
    if applied.get("collected") is False:
        found.append("the JIT was switched on before collection (requested activation: after-collection)")
    if applied.get("compiled_before"):
        found.append(f"CinderX had compiled {applied['compiled_before']} functions before the harness switched the "
                     "JIT on after collection: it ran from start-up (requested activation: after-collection)")
    return found


def read_back_threshold(record: RunRecord | None) -> int | None:
    """The JIT threshold CinderX reported in every test process of the run (None: not read back, or not one)."""
    if record is None or record.jit_mode != JitMode.ON:
        return None
    seen = {state["threshold"] for file in record.files for process in _processes(file)
            for state in process.values() if isinstance(state, dict) and "threshold" in state}
    return seen.pop() if len(seen) == 1 else None


def _contamination(record: RunRecord) -> list[str]:
    found = {f.contamination for f in record.files if f.contamination}
    if record.interpreter.get("cinderx_origin"):
        found.add(f"cinderx importable from {record.interpreter['cinderx_origin']}")
    return sorted(found)
