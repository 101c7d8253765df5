"""Tiers as data: which test files a run executes, with their environment and time limits.

The shipped file is `data/tiers.yaml`; HARNESS_TIERS names a user file whose entries add to or
replace the shipped ones by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from harness.configure.yamlfile import Section, load_scalar_entry, load_section
from harness.errors import HarnessError

SHIPPED = Path(__file__).with_name("data") / "tiers.yaml"
HARNESS_ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"harness": "harness", "pytorch": "pytorch"}
REQUIREMENTS = {"cuda": "cuda"}
_TIER_KEYS = {"description", "source", "files", "exclude", "timeout", "test_timeout", "env", "pytest_args",
              "requires", "stages", "per_model", "entry", "restart"}
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

    def selecting(self, stages: list[str] | tuple[str, ...] | None) -> Tier:
        """The tier that runs `stages` (the whole tier without). A stage with a source of its own
        (a harness stage of a PyTorch tier) runs alone, as a tier of that source with the stage's
        files, under plain pytest (harness files have no PyTorch `__main__` block)."""
        unknown = [s for s in stages or () if s not in self.stages]
        if unknown:
            known = ", ".join(self.stages) or "none"
            raise HarnessError(f"--stage {' '.join(unknown)}: tier '{self.name}' has no such stage (stages: {known})")
        own = [s for s in stages or () if s in self.stage_sources]
        if not own:
            return self
        if len(stages or ()) > 1:
            raise HarnessError(f"--stage {own[0]}: its files come from the {self.stage_sources[own[0]]}, "
                               f"not from the tier's {self.source} source: select it alone")
        return replace(self, source=self.stage_sources[own[0]], files=self.stages[own[0]], exclude=(), entry="pytest")

    def tests_dir(self, override: Path | None) -> Path:
        """Where this tier's files live: the harness itself, or a PyTorch `test/` folder."""
        if override is not None:
            return override
        if self.source == "harness":
            return HARNESS_ROOT
        from_env = os.environ.get("HARNESS_TESTS_DIR")
        if not from_env:
            raise HarnessError(f"tier '{self.name}' runs PyTorch's own test files: pass --tests-dir "
                               "(a PyTorch checkout's test/ folder) or set HARNESS_TESTS_DIR")
        return Path(from_env)

    def discover(self, tests_dir: Path) -> list[str]:
        """Test files of this tier under `tests_dir`, relative and sorted, excludes removed."""
        if not tests_dir.is_dir():
            raise HarnessError(f"tests directory {tests_dir} does not exist")
        found: set[str] = set()
        for pattern in self.files:
            found.update(p.relative_to(tests_dir).as_posix() for p in tests_dir.glob(pattern) if p.is_file())
        excluded = {p.relative_to(tests_dir).as_posix() for pattern in self.exclude for p in tests_dir.glob(pattern)}
        return sorted(found - excluded)


def load_tiers(user_file: Path | None = None) -> dict[str, Tier]:
    """The shipped tiers, extended by HARNESS_TIERS (or `user_file`)."""
    tiers = _read(SHIPPED)
    extra = user_file or (Path(os.environ["HARNESS_TIERS"]) if os.environ.get("HARNESS_TIERS") else None)
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
    for name, node in top.child("tiers").items():
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
    return Tier(
        name=name,
        source=section.choice("source", SOURCES, "pytorch"),
        files=section.strings("files"),
        description=section.scalar("description", str, ""),
        exclude=section.strings("exclude"),
        timeout=timeout,
        env=section.string_map("env"),
        pytest_args=section.strings("pytest_args"),
        requires=requires,
        test_timeout=test_timeout,
        **_stages(section, name),
        entry=section.choice("entry", ENTRIES, "pytest"),
        restart=section.choice("restart", RESTARTS, "warm"),
    )


def _positive(section: Section, tier: str, key: str, default: int) -> int:
    value = section.scalar(key, int, default)
    if value <= 0:
        section.fail(section.require(key), f"tier '{tier}': '{key}' must be positive")
    return value


def _stages(section: Section, tier: str) -> dict[str, dict[str, Any]]:
    """Named groups of the tier's files (seed 003's pipeline stages), selected with --stage: a list
    of the tier's patterns, or `{source: harness, files: [...]}` for files of another source."""
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
            files[name] = stage.strings("files")
            sources[name] = stage.choice("source", SOURCES, "pytorch")
        else:
            files[name] = stages.section_of(stages.node, f"tier '{tier}': stage '{name}'").strings(name)
    return {"stages": files, "stage_sources": sources}
