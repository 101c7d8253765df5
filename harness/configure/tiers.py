"""Tiers as data: which test files a run executes, with their environment and time limits.

The shipped file is `data/tiers.yaml`; HARNESS_TIERS names a user file whose entries add to or
replace the shipped ones by name.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from harness.configure.yamlfile import Section, load_scalar_entry, load_section
from harness.errors import HarnessError
from harness.protocol import Setting

SHIPPED = Path(__file__).with_name("data") / "tiers.yaml"
HARNESS_ROOT = Path(__file__).resolve().parents[2]
TORCH_SUITES = HARNESS_ROOT / "harness" / "torch_suites"  # the harness's modules of PyTorch's suites inside torch
SOURCES = {"harness": "harness", "pytorch": "pytorch"}  # and "torch": a tier's bundled part (see Tier.located)
# Where a stage's files may come from: a tier's own source, the harness, or the tier's bundled suites
STAGE_SOURCES = {**SOURCES, "torch": "torch"}
_WHERE = {"harness": "the harness", "torch": "the suites inside torch", "pytorch": "a PyTorch checkout"}
REQUIREMENTS = {"cuda": "cuda"}
_TIER_KEYS = {"description", "source", "files", "exclude", "timeout", "test_timeout", "env", "pytest_args",
              "requires", "stages", "per_model", "entry", "restart", "exit_grace", "bundled"}
# What a tier's `bundled` part may say: how to run the harness's own modules of PyTorch's suites.
_BUNDLED_KEYS = {"description", "files", "exclude", "timeout", "test_timeout", "env", "pytest_args", "entry", "restart"}
ENTRIES = {"pytest": "pytest", "script": "script"}
RESTARTS = {"warm": "warm", "fresh": "fresh"}


@dataclass(frozen=True)
class Tier:
    """Which tests to run and how: one process per file matched by `files`."""

    name: str
    source: str
    files: tuple[str, ...]
    description: str = ""
    exclude: tuple[str, ...] = ()
    timeout: int = 3600
    test_timeout: int = 600
    env: dict[str, str] = field(default_factory=dict)
    pytest_args: tuple[str, ...] = ()
    requires: str | None = None
    stages: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stage_sources: dict[str, str] = field(default_factory=dict)  # stages whose files come from another source
    entry: str = "pytest"  # pytest: `python -m pytest FILE`; script: `python FILE --use-pytest`, as PyTorch's CI
    restart: str = "warm"  # after a crash: warm (fork of the collected process, when safe) or fresh (new interpreter)
    bundled: Tier | None = None  # without a PyTorch checkout: the suites that ship inside torch (source "torch")
    exit_grace: int = 30  # seconds a process may take to exit after its last test (then stopped, results kept)

    def selecting(self, stages: list[str] | tuple[str, ...] | None) -> Tier:
        """The tier that runs `stages` (the whole tier without). Stages with a source of their own
        run without the tier's other stages, several together when they share that source: files of
        the harness as a harness tier under plain pytest (no PyTorch `__main__` block); files of the
        tier's bundled suites (`torch`) as the bundled part runs them (its time limits, database
        entries selectable by name), narrowed to those files."""
        unknown = [s for s in stages or () if s not in self.stages]
        if unknown:
            known = ", ".join(self.stages) or "none"
            raise HarnessError(f"--stage {' '.join(unknown)}: tier '{self.name}' has no such stage (stages: {known})")
        own = [s for s in stages or () if s in self.stage_sources]
        if not own:
            return self
        source = self.stage_sources[own[0]]
        if any(self.stage_sources.get(s) != source for s in stages or ()):
            raise HarnessError(f"--stage {own[0]}: its files come from {_WHERE[source]}, not from "
                               f"{_WHERE[self.source]}: select it alone or with other stages of {_WHERE[source]}")
        files = tuple(dict.fromkeys(file for stage in own for file in self.stages[stage]))
        if source == "torch":
            assert self.bundled is not None, "checked when the tiers file was read"
            return replace(self.bundled, files=files, exclude=())
        return replace(self, source=source, files=files, exclude=(), entry="pytest")

    def scaled(self, factor: int) -> Tier:
        """This tier with its time limits (per test, per file, the exit grace, and its bundled part's) `factor` times
        longer: an emulated interpreter runs everything 30 to 75 times slower (docs/aarch64.md)."""
        if factor == 1:
            return self
        return replace(self, timeout=self.timeout * factor, test_timeout=self.test_timeout * factor,
                       exit_grace=self.exit_grace * factor, bundled=self.bundled.scaled(factor) if self.bundled else None)

    def located(self, override: Path | None) -> tuple[Tier, Path]:
        """This tier as it runs here, and where its files live: the harness itself, a PyTorch
        checkout's `test/` (--tests-dir, HARNESS_TESTS_DIR), or, without a checkout, the harness's
        modules of PyTorch's suites that ship inside the installed torch (the `bundled` part)."""
        if override is not None:
            return self, override
        if self.source in ("harness", "torch"):  # a bundled part (a stage of one) runs the harness's modules
            return self, HARNESS_ROOT
        from_env = os.environ.get(Setting.TESTS_DIR)
        if from_env:
            return self, Path(from_env)
        if self.bundled is not None:
            return self.bundled, HARNESS_ROOT
        raise HarnessError(f"tier '{self.name}' runs PyTorch's own test files: pass --tests-dir "
                           f"(a PyTorch checkout's test/ folder) or set {Setting.TESTS_DIR}")

    def discover(self, tests_dir: Path) -> list[str]:
        """Test files of this tier under `tests_dir`, relative and sorted, excludes removed."""
        if not tests_dir.is_dir():
            raise HarnessError(f"tests directory {tests_dir} does not exist")
        found: set[str] = set()
        for pattern in self.files:
            found.update(p.relative_to(tests_dir).as_posix() for p in tests_dir.glob(pattern) if p.is_file())
        excluded = {p.relative_to(tests_dir).as_posix() for pattern in self.exclude for p in tests_dir.glob(pattern)}
        return sorted(found - excluded)

    def absent(self, tests_dir: Path) -> list[str]:
        """Files this tier names one by one (not by a pattern) that `tests_dir` does not have: a
        checkout of another PyTorch version may lack some, and a run says which."""
        return sorted(name for name in self.files
                      if not glob.has_magic(name) and not (tests_dir / name).is_file() and name not in self.exclude)


def load_tiers(user_file: Path | None = None) -> dict[str, Tier]:
    """The shipped tiers, extended by HARNESS_TIERS (or `user_file`)."""
    tiers = _read(SHIPPED)
    extra = user_file or (Path(os.environ[Setting.TIERS]) if os.environ.get(Setting.TIERS) else None)
    if extra:
        tiers.update(_read(extra))
    return tiers


def get_tier(name: str, tiers: dict[str, Tier] | None = None) -> Tier:
    tiers = tiers if tiers is not None else load_tiers()
    if name not in tiers:
        raise HarnessError(f"unknown tier '{name}' (known: {', '.join(tiers)})")
    return tiers[name]


def _read(path: Path) -> dict[str, Tier]:
    top = load_section(path, "tiers file")
    top.check_keys({"tiers"})
    tiers: dict[str, Tier] = {}
    for name, node in top.child("tiers").named_items("tier"):
        section = top.section_of(node, f"tier '{name}'")
        tiers[name] = _tier(name, section)
        if section.has("per_model"):
            tiers.update(_model_tiers(tiers[name], HARNESS_ROOT / section.scalar("per_model", str, "")))
    return tiers


def _model_tiers(tier: Tier, manifests: Path) -> dict[str, Tier]:
    """One tier per op-manifest model, `<tier>-<model>`, running only that model's cases."""
    models = sorted({_model_name(path) for path in manifests.glob("*.yaml")} - {None})
    return {f"{tier.name}-{model}": replace(tier, name=f"{tier.name}-{model}", description=f"op manifest of model {model}",
                                            pytest_args=(*tier.pytest_args, "--model", model))
            for model in models}


def _model_name(path: Path) -> str | None:
    """A manifest's top-level `model:` value, read without parsing the cases after it (manifests reach 130 KB)."""
    return load_scalar_entry(path, "model", "op manifest").scalar("model", str, "") or None


def _tier(name: str, section: Section) -> Tier:
    section.check_keys(_TIER_KEYS)
    section.require("files")
    timeout = _positive(section, name, "timeout", 3600)
    test_timeout = _positive(section, name, "test_timeout", min(600, timeout))
    requires = section.choice("requires", REQUIREMENTS, "") if section.has("requires") else None
    tier = Tier(
        name=name,
        source=section.choice("source", SOURCES, "pytorch"),
        files=_patterns(section, "files"),
        description=section.scalar("description", str, ""),
        exclude=_patterns(section, "exclude"),
        timeout=timeout,
        env=section.string_map("env"),
        pytest_args=section.strings("pytest_args"),
        requires=requires,
        test_timeout=test_timeout,
        **_stages(section, name),
        entry=section.choice("entry", ENTRIES, "pytest"),
        restart=section.choice("restart", RESTARTS, "warm"),
        exit_grace=_positive(section, name, "exit_grace", Tier.exit_grace),
    )
    return replace(tier, bundled=_bundled(tier, section.child("bundled", f"tier '{name}': 'bundled'"))) \
        if section.has("bundled") else tier


def _bundled(tier: Tier, section: Section) -> Tier:
    """The tier run from the harness's modules of PyTorch's suites inside torch: the tier's own
    settings, with what `bundled` says instead (its env adds to the tier's)."""
    section.check_keys(_BUNDLED_KEYS)
    section.require("files")
    timeout = _positive(section, tier.name, "timeout", tier.timeout)
    return replace(
        tier, source="torch", files=section.strings("files"), exclude=section.strings("exclude"),
        description=section.scalar("description", str, tier.description), timeout=timeout,
        test_timeout=_positive(section, tier.name, "test_timeout", min(tier.test_timeout, timeout)),
        env={**tier.env, **section.string_map("env")}, pytest_args=section.strings("pytest_args") or tier.pytest_args,
        entry=section.choice("entry", ENTRIES, tier.entry), restart=section.choice("restart", RESTARTS, tier.restart),
        stages={}, stage_sources={},
    )


def _positive(section: Section, tier: str, key: str, default: int) -> int:
    value = section.scalar(key, int, default)
    if value <= 0:
        section.fail(section.require(key), f"tier '{tier}': '{key}' must be positive")
    return value


def _stages(section: Section, tier: str) -> dict[str, dict[str, Any]]:
    """Named groups of the tier's files (torch.compile's pipeline stages, docs/background.md §4),
    selected with --stage: a list of the tier's patterns, or `{source: harness|torch, files: [...]}`
    for files of the harness, or of the tier's bundled suites (run as its `bundled` part runs them)."""
    if not section.has("stages"):
        return {}
    stages = section.child("stages", f"tier '{tier}': 'stages'")
    files: dict[str, tuple[str, ...]] = {}
    sources: dict[str, str] = {}
    for name, node in stages.items():
        if isinstance(node, yaml.MappingNode):
            stage = stages.section_of(node, f"tier '{tier}': stage '{name}'")
            stage.check_keys({"source", "files"})
            stage.require("files")
            files[name] = _patterns(stage, "files")
            sources[name] = stage.choice("source", STAGE_SOURCES, "pytorch")
            if sources[name] == "torch" and not section.has("bundled"):
                stage.fail(stage.require("source"), f"tier '{tier}': stage '{name}' runs the tier's bundled "
                                                    "suites (source: torch), but the tier has no 'bundled' part")
        else:
            files[name] = _patterns(stages.section_of(stages.node, f"tier '{tier}': stage '{name}'"), name)
    return {"stages": files, "stage_sources": sources}


def _patterns(section: Section, key: str) -> tuple[str, ...]:
    """Glob patterns of files under the tests directory: never empty, absolute or climbing out of it."""
    patterns = section.strings(key)
    node = section.node_of(key)
    for item, pattern in zip(node.value if node is not None else (), patterns):
        problem = _escape_problem(pattern)
        if problem:
            section.fail(item, f"{section.context}: '{key}': {pattern!r} {problem}")
    return patterns


def _escape_problem(pattern: str) -> str | None:
    path = PurePosixPath(pattern)
    if not pattern.strip():
        return "is empty"
    if path.is_absolute() or pattern.startswith("~"):
        return "is absolute: it must be relative to the tests directory"
    if ".." in path.parts:
        return "climbs out of its folder with '..'"
    return None
