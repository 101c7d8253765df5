"""Bad data in configuration and tier files: one line naming the file and line, exit 3, no run.

Class "bad data" of docs/robustness.md. Each case is a file a careless user (or a hostile one)
could write; the command is a real `run` that must be refused before anything starts."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit

CONFIG = 'configurations:\n  mine:\n    python: "3.14"\n'
TIER = "tiers:\n  mine:\n    source: harness\n    files: [harness/smoke/test_smoke.py]\n"

# id -> (HARNESS_CONFIGURATIONS or HARNESS_TIERS, file bytes, the line named, a phrase of the message)
CASES = {
    "duplicate key in a configuration": ("HARNESS_CONFIGURATIONS", CONFIG + '    jit: "on"\n    jit: "off"\n', 5,
                                         "duplicate key 'jit' (first at line 4)"),
    "configuration defined twice": ("HARNESS_CONFIGURATIONS", CONFIG + '  mine:\n    python: "3.13"\n', 4,
                                    "duplicate key 'mine' (first at line 2)"),
    "byte that is not UTF-8": ("HARNESS_CONFIGURATIONS", CONFIG.encode() + b'    description: "caf\xe9"\n', 4,
                               "not UTF-8 text (byte 0xe9)"),
    "control character": ("HARNESS_CONFIGURATIONS", CONFIG + '    description: "bell\x07"\n', 4,
                          "character 0x07 is not allowed"),
    "negative threshold": ("HARNESS_CONFIGURATIONS", CONFIG + '    jit: "on"\n    threshold: -5\n', 5,
                           "'threshold' must be 0 or more, not -5"),
    "configuration named to escape": ("HARNESS_CONFIGURATIONS", 'configurations:\n  ../mine:\n    python: "3.14"\n', 2,
                                      "configuration name '../mine' must be"),
    "list as a key": ("HARNESS_CONFIGURATIONS", "configurations:\n  ? [mine]\n  : {python: '3.14'}\n", 2,
                      "keys must be plain names"),
    "duplicate key in a tier": ("HARNESS_TIERS", TIER + "    timeout: 10\n    timeout: 20\n", 6, "duplicate key 'timeout'"),
    "absolute glob": ("HARNESS_TIERS", TIER.replace("[harness/smoke/test_smoke.py]", "['/etc/*.py']"), 4,
                      "'/etc/*.py' is absolute"),
    "empty glob": ("HARNESS_TIERS", TIER.replace("[harness/smoke/test_smoke.py]", "['']"), 4, "'' is empty"),
    "glob climbing out": ("HARNESS_TIERS", TIER.replace("[harness/smoke/test_smoke.py]", "[harness/../../*.py]"), 4,
                          "climbs out of its folder with '..'"),
    "exclude climbing out": ("HARNESS_TIERS", TIER + "    exclude: [../x.py]\n", 5, "climbs out"),
    "stage glob absolute": ("HARNESS_TIERS", TIER + "    stages:\n      s: [/tmp/*.py]\n", 6, "is absolute"),
    "stage of bundled suites the tier lacks": ("HARNESS_TIERS", TIER + "    stages:\n      s: {source: torch, files: [x.py]}\n",
                                               6, "stage 's' runs the tier's bundled suites (source: torch), but"),
    "tier named with a slash": ("HARNESS_TIERS", TIER.replace("  mine:", "  a/b:"), 2, "tier name 'a/b' must be"),
    "negative time limit": ("HARNESS_TIERS", TIER + "    timeout: -1\n", 5, "'timeout' must be positive"),
    "zero exit grace": ("HARNESS_TIERS", TIER + "    exit_grace: 0\n", 5, "'exit_grace' must be positive"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_data_is_one_line_naming_file_and_line(case, tmp_path, monkeypatch, refused):
    variable, content, line, phrase = CASES[case]
    data = tmp_path / "mine.yaml"
    data.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.setenv(variable, str(data))
    message = refused("run", "--config", "stock", "--tier", "mine", "--results", tmp_path / "results")
    assert message.startswith(f"harness: error: {data}:{line}: ") and phrase in message
    assert not (tmp_path / "results").exists()
