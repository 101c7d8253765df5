"""`python -m harness db ingest|rebuild|merge`: the results database, from run directories and other databases.

The database is `results/harness.db` (the results root: --results, HARNESS_RESULTS) or HARNESS_DB.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.arguments import RESULTS_HELP, path_argument
from harness.exits import ExitStatus
from harness.protocol import Setting


def add_commands(commands: argparse._SubParsersAction) -> None:
    db = commands.add_parser("db", help="the results database: ingest run directories, rebuild it, merge others",
                             description=f"The results database (results/harness.db, or ${Setting.DATABASE}) is derived from "
                                         "the run directories, which stay the source of truth.")
    actions = db.add_subparsers(dest="action", required=True)
    ingest = actions.add_parser("ingest", help="add run directories (or every run directory in a folder)")
    ingest.add_argument("runs", type=path_argument, nargs="+", metavar="RUN_DIR")
    ingest.set_defaults(handler=_ingest)
    rebuild = actions.add_parser("rebuild", help="make the database again from the run directories of the results root")
    rebuild.set_defaults(handler=_rebuild)
    merge = actions.add_parser("merge", help="add every run of other results databases (one per CI job, say)")
    merge.add_argument("sources", type=path_argument, nargs="+", metavar="DB")
    merge.set_defaults(handler=_merge)
    for action in (ingest, rebuild, merge):
        action.add_argument("--results", type=path_argument, help=RESULTS_HELP)


def _target(args: argparse.Namespace) -> Path:
    from harness.record.database import database_path
    from harness.record.store import default_results_root

    return database_path(args.results or default_results_root())


def _ingest(args: argparse.Namespace) -> int:
    from harness.record.ingest import ingest, run_directories

    target = _target(args)
    for done in ingest(target, run_directories(args.runs)):
        print(f"{done.action}: {done.directory}")
    print(f"results database: {target}")
    return ExitStatus.OK


def _rebuild(args: argparse.Namespace) -> int:
    from harness.record.ingest import rebuild
    from harness.record.store import default_results_root

    target = _target(args)
    done, skipped = rebuild(target, args.results or default_results_root())
    print(f"results database rebuilt: {target} ({len(done)} runs" + (f", {len(skipped)} left out)" if skipped else ")"))
    return ExitStatus.USAGE if skipped else ExitStatus.OK


def _merge(args: argparse.Namespace) -> int:
    from harness.record.ingest import merge

    target = _target(args)
    done = merge(target, args.sources)
    for action in ("added", "replaced", "kept", "unchanged"):
        count = sum(d.action == action for d in done)
        if count:
            print(f"{action}: {count} run{'s' if count != 1 else ''}")
    print(f"results database: {target}")
    return ExitStatus.OK
