"""The environment variables CinderX knows, so a configuration cannot set one it ignores.

CinderX ignores environment variables it does not know, silently: a misspelled or invented
`CINDERX_*` / `PYTHONJIT*` variable in a configuration's `env` would make a run claim a setting
that never took effect. Configurations are read by the driving interpreter, which has no CinderX,
so the names live in a data file generated from the real CinderX:

    python -m harness.configure.cinderx_variables --python .nox/cinderx-jit-p0/bin/python [--check]

reads `python -X cinderx-jit-help -c "import cinderx"` (every JIT option with its variable), adds
the legacy `PYTHONJIT*` spelling CinderX accepts for each `CINDERX_JIT_*` one (the rest of the
name without underscores: PYTHONJITCOMPILENCALLS for CINDERX_JIT_COMPILE_N_CALLS), and the names
the `cinderx` package's own Python code reads (CINDERX_DISABLE, ...). `--check` fails on drift.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).with_name("data") / "cinderx_variables.txt"
PREFIXES = ("CINDERX_", "PYTHONJIT")
_HELP_NAME = re.compile(r"\balso\s+([A-Z][A-Z0-9_]+)")  # the help wraps lines, "also" ending one
_LITERAL = re.compile(r"""["']((?:CINDERX_|PYTHONJIT)[A-Z0-9_]*)["']""")
_JIT_PREFIX = "CINDERX_JIT_"


def governed(name: str) -> bool:
    """Whether `name` is in CinderX's namespaces, so it must be a name CinderX knows."""
    return name.startswith(PREFIXES)


def known() -> frozenset[str]:
    """The names in the shipped data file."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def read_from(python: str) -> tuple[str, list[str]]:
    """(CinderX version, every variable name it knows in its namespaces), from the interpreter `python`."""
    help_text = subprocess.run([python, "-X", "cinderx-jit-help", "-c", "import cinderx"],
                               capture_output=True, text=True).stdout
    located = subprocess.run([python, "-c", "import cinderx, importlib.metadata, os; "
                              "print(importlib.metadata.version('cinderx')); print(os.path.dirname(cinderx.__file__))"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
    version, package = located[0], Path(located[1])
    names = {name for name in _HELP_NAME.findall(help_text) if governed(name)}
    if not names:
        raise SystemExit(f"{python}: `-X cinderx-jit-help` listed no CINDERX_* variable: is CinderX installed?")
    names |= {"PYTHONJIT" + name.removeprefix(_JIT_PREFIX).replace("_", "") for name in names
              if name.startswith(_JIT_PREFIX)}
    for source in package.rglob("*.py"):
        names |= set(_LITERAL.findall(source.read_text(encoding="utf-8", errors="replace")))
    return version, sorted(names)


def render(version: str, names: list[str]) -> str:
    header = (f"# Environment variables CinderX {version} knows (CINDERX_* and PYTHONJIT*), one per line.\n"
              "# Generated from the real CinderX: python -m harness.configure.cinderx_variables --python PYTHON\n"
              "# (a configuration's env may set only these in CinderX's namespaces; tests/e2e checks for drift)\n")
    return header + "".join(f"{name}\n" for name in names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.configure.cinderx_variables", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="an interpreter with CinderX installed")
    parser.add_argument("--check", action="store_true", help="compare with the data file instead of writing it")
    args = parser.parse_args(argv)
    version, names = read_from(args.python)
    if not args.check:
        DATA.write_text(render(version, names), encoding="utf-8")
        print(f"{DATA}: {len(names)} names from CinderX {version}")
        return 0
    current = sorted(known())
    if names == current:
        print(f"{DATA} matches CinderX {version} ({len(names)} names)")
        return 0
    print(f"{DATA} differs from CinderX {version}: regenerate it without --check", file=sys.stderr)
    sys.stderr.writelines(difflib.unified_diff([f"{n}\n" for n in current], [f"{n}\n" for n in names],
                                               str(DATA), f"cinderx {version}"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
