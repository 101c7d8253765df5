"""Configurations as data: which interpreter, which packages, which JIT settings.

The shipped file is `data/configurations.yaml`; HARNESS_CONFIGURATIONS names a user file whose
entries add to or replace the shipped ones by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.configure import cinderx_variables
from harness.configure.architectures import ARCHITECTURES
from harness.configure.yamlfile import Section, load_section
from harness.errors import HarnessError
from harness.protocol import DEFAULT_THRESHOLD, Activation, JitMode, Request, Setting, threshold_problem

SHIPPED = Path(__file__).with_name("data") / "configurations.yaml"
JIT_MODES = {mode.value: mode for mode in JitMode}
ACTIVATIONS = {activation.value: activation for activation in Activation}
_CONFIG_KEYS = {"description", "python", "venv", "packages", "env", "jit", "threshold", "activation",
                "compile_disengage", "arch"}
_TOP_KEYS = {"torch", "shared_packages", "baseline", "configurations", "emulated_timeout_scale"}
DEFAULT_EMULATED_TIMEOUT_SCALE = 40


@dataclass(frozen=True)
class Configuration:
    """One interpreter set-up that a run executes under."""

    name: str
    python: str
    description: str = ""
    venv: bool = True
    packages: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    jit: str = "absent"
    threshold: int | None = None
    activation: str = "after-collection"
    compile_disengage: bool = False
    arch: str | None = None  # the interpreter's architecture (aarch64: emulated on other hosts); None: the host's
    origin: str = ""  # "file:line" of the definition, for errors found later (e.g. no interpreter)

    @property
    def request(self) -> Request:
        """What this configuration asks of every test process."""
        return Request(JitMode(self.jit), self.threshold, Activation(self.activation), self.compile_disengage)

    @property
    def python_is_path(self) -> bool:
        return "/" in self.python

    def with_threshold(self, threshold: int | None) -> Configuration:
        """The same configuration with a run's `--threshold` applied (JIT configurations only)."""
        if threshold is None:
            return self
        if self.jit != "on":
            raise HarnessError(f"--threshold applies to JIT configurations; '{self.name}' has jit: {self.jit}")
        if threshold_problem(threshold):
            raise HarnessError(f"--threshold {threshold_problem(threshold)}")
        return replace(self, threshold=threshold)


@dataclass(frozen=True)
class Catalog:
    """Everything the configurations file says: the shared torch layer and the configurations."""

    torch: str
    shared_packages: tuple[str, ...]
    baseline: str
    configurations: dict[str, Configuration]
    sources: tuple[Path, ...]
    emulated_timeout_scale: int = DEFAULT_EMULATED_TIMEOUT_SCALE  # tiers' time limits times this, emulated

    def baseline_for(self, configuration: Configuration) -> Configuration:
        """The baseline a configuration is compared with: the baseline configuration of its architecture
        (a configuration with the same `arch` and the baseline's JIT mode and interpreter), else the baseline."""
        baseline = self.configurations[self.baseline]
        if configuration.arch == baseline.arch:
            return baseline
        same = [c for c in self.configurations.values() if c.arch == configuration.arch and c.jit == baseline.jit
                and c.python == baseline.python and c.packages == baseline.packages]
        return same[0] if same else baseline

    def get(self, name: str) -> Configuration:
        if name not in self.configurations:
            known = ", ".join(self.configurations)
            raise HarnessError(f"unknown configuration '{name}' (known: {known}; defined in "
                               f"{', '.join(map(str, self.sources))})")
        return self.configurations[name]


def load_catalog(user_file: Path | None = None) -> Catalog:
    """The shipped configurations, extended by HARNESS_CONFIGURATIONS (or `user_file`)."""
    catalog = _read(SHIPPED, base=None)
    extra = user_file or (Path(os.environ[Setting.CONFIGURATIONS]) if os.environ.get(Setting.CONFIGURATIONS) else None)
    return _read(extra, base=catalog) if extra else catalog


def _read(path: Path, base: Catalog | None) -> Catalog:
    top = load_section(path, "configurations file")
    top.check_keys(_TOP_KEYS)
    configurations = dict(base.configurations) if base else {}
    if top.has("configurations"):
        for name, node in top.child("configurations").named_items("configuration"):
            configurations[name] = _configuration(name, top.section_of(node, f"configuration '{name}'"))
    baseline = top.scalar("baseline", str, base.baseline if base else "stock")
    if baseline not in configurations:
        raise HarnessError(f"{path}: baseline '{baseline}' is not a configuration")
    return Catalog(
        torch=top.scalar("torch", str, base.torch if base else "torch"),
        shared_packages=top.strings("shared_packages") or (base.shared_packages if base else ()),
        baseline=baseline,
        configurations=configurations,
        sources=(base.sources if base else ()) + (path,),
        emulated_timeout_scale=_timeout_scale(top, base),
    )


def _timeout_scale(top: Section, base: Catalog | None) -> int:
    scale = top.scalar("emulated_timeout_scale", int, base.emulated_timeout_scale if base
                       else DEFAULT_EMULATED_TIMEOUT_SCALE)
    if scale < 1:
        top.fail(top.require("emulated_timeout_scale"), f"'emulated_timeout_scale' must be 1 or more, not {scale}")
    return scale


def _configuration(name: str, section: Section) -> Configuration:
    section.check_keys(_CONFIG_KEYS)
    python_node = section.require("python")
    jit = section.choice("jit", JIT_MODES, "absent")
    threshold = section.scalar("threshold", int, DEFAULT_THRESHOLD if jit == "on" else None)
    if threshold is not None and threshold_problem(threshold):
        section.fail(section.require("threshold"), f"configuration '{name}': 'threshold' {threshold_problem(threshold)}")
    configuration = Configuration(
        name=name,
        python=section.scalar("python", str, ""),
        description=section.scalar("description", str, ""),
        venv=section.scalar("venv", bool, True),
        packages=section.strings("packages"),
        env=section.string_map("env"),
        jit=jit,
        threshold=threshold if jit == "on" else None,
        activation=section.choice("activation", ACTIVATIONS, "after-collection"),
        compile_disengage=section.scalar("compile_disengage", bool, False),
        arch=section.choice("arch", {name: name for name in ARCHITECTURES}, "") or None,
        origin=f"{section.path}:{section.node.start_mark.line + 1}",
    )
    _check_cinderx_variables(name, section)
    if configuration.python_is_path and not Path(configuration.python).is_file():
        section.fail(python_node, f"configuration '{name}': 'python': interpreter {configuration.python} does not exist")
    if not configuration.venv and not configuration.python_is_path:
        section.fail(python_node, f"configuration '{name}': venv: false needs 'python' to be an interpreter's path")
    return configuration


def _check_cinderx_variables(name: str, section: Section) -> None:
    """CinderX silently ignores variables it does not know: in its namespaces, only known names."""
    if not section.has("env"):
        return
    known = cinderx_variables.known()
    for key, _ in section.child("env").node.value:
        if cinderx_variables.governed(key.value) and key.value not in known:
            section.fail(key, f"configuration '{name}': env: CinderX does not know '{key.value}' and would ignore it "
                              f"(its variables: {cinderx_variables.DATA.name})")
