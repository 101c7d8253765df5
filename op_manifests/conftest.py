"""pytest glue for op manifests: options, listing, test generation, and the report plugin.

Loaded because `op_manifests` is on the command line (`pytest op_manifests ...`), so its
options exist only for those runs. It never imports torch: see __init__.py.
"""

from __future__ import annotations

import gc
import os
import re
from pathlib import Path

import pytest

from . import registry
from .loader import Limits, load_dir
from .plan import (
    BACKENDS,
    BUILTIN_MARKERS,
    Plan,
    PlannedCase,
    Settings,
    UnknownModel,
    build_plan,
    case_lines,
    model_lines,
)
from .report import ManifestReport

# RFC-0186 defaults to inductor. Here the default is eager when TEST_COMPILE_BACKEND is unset:
# the CI machines are CPU-only with 2 cores, where inductor compiles C++ for every case (seconds
# each) and would dominate the P0 tier. Nightly jobs set TEST_COMPILE_BACKEND=inductor.
DEFAULT_BACKEND = "eager"
BACKEND_ENV = "TEST_COMPILE_BACKEND"
_SETTINGS = pytest.StashKey[Settings]()
_PLAN = pytest.StashKey[Plan]()
_MARKER_NAME = re.compile(r"\s*([A-Za-z_]\w*)")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("op_manifests", "YAML op manifests (RFC-0186)")
    group.addoption(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this model's manifest (repeatable)",
    )
    group.addoption("--list-models", action="store_true", help="print the models and exit")
    group.addoption(
        "--list-cases", action="store_true", help="print every case (with duplicates and errors) and exit"
    )
    group.addoption(
        "--dedupe",
        dest="manifest_dedupe",
        action="store_true",
        default=True,
        help="run identical op+inputs+attrs+dtype once across models (default)",
    )
    group.addoption(
        "--no-dedupe", dest="manifest_dedupe", action="store_false", help="run every case of every model"
    )
    group.addoption(
        "--compile-backend",
        metavar="NAME",
        default=None,
        help=f"one of {', '.join(BACKENDS)}; default ${BACKEND_ENV}, else {DEFAULT_BACKEND}",
    )
    group.addoption(
        "--manifest-dir", metavar="DIR", default=None, help="load manifests from DIR instead of op_manifests/"
    )
    group.addoption(
        "--manifest-report",
        metavar="DIR",
        default=None,
        help="write op_manifests_report.json and .md to DIR at the end of the session",
    )
    group.addoption(
        "--manifest-max-tensor-elements",
        type=int,
        default=Limits.max_tensor_elements,
        metavar="N",
        help="reject tensors with more elements (default %(default)s)",
    )
    group.addoption("--manifest-max-case-elements", type=int, default=Limits.max_case_elements,
                    metavar="N", help="reject cases whose tensors hold more elements (default %(default)s)")  # fmt: skip


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--list-models / --list-cases: print and exit 0 without collecting or running anything."""
    if config.getoption("list_models"):
        print("\n".join(model_lines(_manifests_and_plan(config).manifests)))
        return 0
    if config.getoption("list_cases"):
        plan = _manifests_and_plan(config)
        print("\n".join(case_lines(plan, _op_problems(plan))))
        return 0
    return None


# The framework's own markers, registered here so they travel with the installed package (a
# project's pytest.ini may add its own for manifests to use).
MARKERS = (
    "op_manifest: a test generated from a YAML op manifest (op_manifests/, RFC-0186)",
    "op_layout: op-manifest case with non-contiguous, expanded or explicitly strided inputs",
    "op_numerics: op-manifest case whose tolerances are tuned for reduced precision or accumulation",
)


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    plan = _manifests_and_plan(config)  # fails fast on bad options, e.g. an unknown --model
    config.pluginmanager.register(ManifestReport(plan, _settings(config)), "op-manifests-report")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> object:
    """Pause the cyclic GC while pytest builds the test items (one per case): with 10,000 cases
    its repeated full scans cost ~0.5 s of collection. Cycles are collected right after."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if paused:
            gc.enable()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "manifest_case" not in metafunc.fixturenames:
        return
    plan = _manifests_and_plan(metafunc.config)
    params = [pytest.param(item, id=item.test_id, marks=_marks(item)) for item in plan.items]
    metafunc.parametrize("manifest_case", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Properties known before running (so skipped and error tests carry them too) and the op
    as a keyword, so `-k torch.add` selects by op."""
    backend = _settings(config).backend
    for item in items:
        callspec = getattr(item, "callspec", None)
        planned = callspec.params.get("manifest_case") if callspec else None
        if isinstance(planned, PlannedCase):
            item.user_properties.extend(
                [
                    ("model", planned.model),
                    ("op", planned.op),
                    ("backend", backend),
                    ("manifest", planned.where),
                ]
            )
            if planned.op:
                item.extra_keyword_matches.add(planned.op)


@pytest.fixture
def op_manifest_settings(request: pytest.FixtureRequest) -> Settings:
    return _settings(request.config)


def _marks(item: PlannedCase) -> list[pytest.MarkDecorator]:
    """Per-case marks (the `op_manifest` mark is module-wide, in test_model_ops.py)."""
    marks = []
    if item.skip_reason is not None:
        marks.append(pytest.mark.skip(reason=item.skip_reason))
    for name in item.marks:
        if name == "xfail":
            marks.append(pytest.mark.xfail(reason="marked xfail in the manifest"))
        elif name != "skip":
            marks.append(getattr(pytest.mark, name))
    return marks


def _settings(config: pytest.Config) -> Settings:
    if _SETTINGS not in config.stash:
        config.stash[_SETTINGS] = _read_settings(config)
    return config.stash[_SETTINGS]


def _read_settings(config: pytest.Config) -> Settings:
    backend = config.getoption("compile_backend") or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise pytest.UsageError(
            f"--compile-backend/{BACKEND_ENV}: {backend!r} is not one of {', '.join(BACKENDS)}"
        )
    here = config.invocation_params.dir
    directory = Path(config.getoption("manifest_dir") or Path(__file__).parent)
    directory = directory if directory.is_absolute() else here / directory
    if not directory.is_dir():
        raise pytest.UsageError(f"--manifest-dir: {directory} is not a directory")
    limits = Limits(
        max_tensor_elements=_positive(config, "manifest_max_tensor_elements"),
        max_case_elements=_positive(config, "manifest_max_case_elements"),
    )
    report = config.getoption("manifest_report")
    return Settings(
        manifest_dir=directory,
        backend=backend,
        dedupe=config.getoption("manifest_dedupe"),
        models=tuple(config.getoption("model")),
        limits=limits,
        report_dir=(here / report) if report else None,
    )


def _positive(config: pytest.Config, name: str) -> int:
    value = config.getoption(name)
    if value <= 0:
        raise pytest.UsageError(f"--{name.replace('_', '-')} must be > 0, got {value}")
    return value


def _manifests_and_plan(config: pytest.Config) -> Plan:
    if _PLAN not in config.stash:
        settings = _settings(config)
        manifests = load_dir(settings.manifest_dir, settings.limits, display_root=config.rootpath)
        try:
            config.stash[_PLAN] = build_plan(
                manifests,
                models=settings.models,
                dedupe=settings.dedupe,
                backend=settings.backend,
                known_markers=_registered_markers(config),
            )
        except UnknownModel as exc:
            raise pytest.UsageError(f"--model: {exc}") from None
    return config.stash[_PLAN]


def _registered_markers(config: pytest.Config) -> frozenset[str]:
    """The ini's markers and the framework's own (--list-cases plans before pytest_configure registers them)."""
    lines = (*config.getini("markers"), *MARKERS)
    return frozenset(m.group(1) for line in lines if (m := _MARKER_NAME.match(line))) | BUILTIN_MARKERS


def _op_problems(plan: Plan) -> dict[str, str]:
    """Resolve each op once (imports torch): --list-cases shows unknown ops as errors."""
    problems = {}
    for op in sorted({item.op for item in plan.items if item.case is not None}):
        try:
            registry.resolve(op)
        except registry.UnknownOp as exc:
            problems[op] = str(exc)
    return problems
