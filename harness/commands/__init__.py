"""Commands: the one layer that joins the stages (configure -> run -> record -> compare -> report).

A stage package knows only the stages before it; a command module reads its arguments and hands
each stage what the one before it produced: `diff` loads the recorded sides, compares them and
hands the comparisons to a report. Each module imports only what its arguments need at start-up;
its handlers import the stages when they run, so `--help` and every other command start without them.

run.py      `run`, `fetch-tests`, `provision`: configure, then run (which records)
db.py       `db ingest | rebuild | merge`: the results database of record
diff.py     `diff`, `diff-latest`, `history`: record -> compare (-> confirm, culprit) -> report
coverage.py `coverage`: JIT coverage of torch per subpackage, merged over runs
culprit.py  `culprit` and the search options `diff --culprit` shares
scan.py     `scan-model`: a model's aten ops as an op manifest
perf.py     `perf run | diff | diff-latest`: the pyperf pipeline
arguments.py  argument types every command shares
"""

from __future__ import annotations

from harness.commands import coverage, culprit, db, diff, perf, run, scan

COMMANDS = (run, db, diff, coverage, culprit, scan, perf)  # the subcommands, in the order `--help` lists them
