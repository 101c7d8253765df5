"""Performance: the JIT against the interpreter, measured with pyperf.

benchmarks.py  what is measured (each benchmark's docstring says what)
suite.py       the pyperf script: JIT request, warm-up, per-worker JIT facts in the metadata
run.py         one configuration's perf run (the suite in a child process, environment discipline)
record.py      the perf run directory and its record; finding the latest runs
compare.py     statistics: per-process Welch intervals on log times, significance, geometric means
report.py      Markdown and JSON
(the command, `python -m harness perf run | diff | diff-latest`, is harness/commands/perf.py)
"""
