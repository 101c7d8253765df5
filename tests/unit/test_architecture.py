"""The folders read as the pipeline: no import runs back up configure -> run -> record -> compare -> report.

The graph is read from the code (tools/import_graph.py, every import statement of harness/ and op_manifests/), so a new
import against these rules fails here with its file and line, and a new package fails until it is
given a place below.
"""

from tools.import_graph import PICTURE, ROOT, all_imports, carried_edges, module_name, package_graph, package_of, packages

import pytest

pytestmark = pytest.mark.unit

# --- The rules: which packages each package may import (besides itself) ----------------------------
# Foundation: the protocol between the runner and its test processes, errors, exit statuses and the
# package's version. They import no other package of the harness (the protocol: standard library only).
FOUNDATION = frozenset({"harness", "protocol", "errors", "exits"})
# The pipeline, in the order its stages may import each other: each may import the ones before it.
# The data flows configure -> run -> record -> compare -> report; record (the run directory, the run
# record, the JUnit XML: the format a run writes and every later stage reads) sits below run in
# imports, because the runner writes through it; record itself knows nothing of running.
PIPELINE = ("configure", "record", "run", "compare", "report")
# Test payloads: files the harness runs inside the configurations' interpreters (smoke checks, the
# interop matrix, stress, the bundled PyTorch suites). They read the JIT's facts through run/ and may
# share helpers among themselves; no stage imports them.
PAYLOADS = frozenset({"smoke", "interop", "stress", "torch_suites"})
ALLOWED: dict[str, frozenset[str]] = {
    **{name: frozenset() for name in FOUNDATION},
    **{stage: FOUNDATION | set(PIPELINE[:index]) for index, stage in enumerate(PIPELINE)},
    "report": FOUNDATION | set(PIPELINE[:-1]) | {"perf"},
    # perf: a second pipeline (timings, not test outcomes) on the first one's configure, record and run;
    # the report shows its comparison, so report may import it (and compare may not).
    "perf": FOUNDATION | {"configure", "record", "run"},
    # op_manifests (beside harness/): YAML op tests (loader, runner, the pytest module P0 and `ops` run); stands alone.
    "op_manifests": FOUNDATION | {"configure"},  # configure: the one line-numbered YAML reader (yamlfile.py)
    "scan": FOUNDATION | {"op_manifests"},  # model -> op manifest, checked by the op-manifest loader and runner
    **{payload: FOUNDATION | {"run"} | PAYLOADS for payload in PAYLOADS},
    # commands/: the one layer that joins the stages (a subcommand each); cli.py puts them under one
    # parser; __main__ calls it. Nothing imports them back.
    "commands": FOUNDATION | set(PIPELINE) | {"perf", "scan"},
    "cli": FOUNDATION | {"commands", "configure"},
    "__main__": frozenset({"cli"}),
}


def test_every_package_has_a_place_in_the_rules():
    assert set(packages()) == set(ALLOWED), "give a new package its place in ALLOWED"


def test_no_import_runs_back_up_the_pipeline():
    against = [f"{found.source}:{found.line}: {found.module}" for found in all_imports()
               if (found.target != (source := package_of(module_name(ROOT / found.source))))
               and found.target not in ALLOWED[source]]
    assert not against, "imports against the allowed directions:\n" + "\n".join(against)



def test_the_picture_in_docs_is_drawn_from_todays_imports():
    drawn = carried_edges(PICTURE.read_text(encoding="utf-8"))
    assert drawn == package_graph(), "docs/import-graph.svg is stale: python3 -m nox -s architecture"
