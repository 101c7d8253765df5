"""Per-model tiers: each op manifest's top-level `model:` is read without parsing the cases after it."""

import pytest

from harness.configure.tiers import load_tiers
from harness.errors import HarnessError

pytestmark = pytest.mark.unit


def per_model_tiers(tmp_path, manifests: dict[str, str]) -> list[str]:
    """The tiers a user tier with `per_model` adds for these manifest files."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    for name, text in manifests.items():
        (folder / name).write_text(text)
    user = tmp_path / "tiers.yaml"
    user.write_text(f"tiers:\n  models:\n    source: harness\n    files: [x.py]\n    per_model: {folder}\n")
    return sorted(name for name in load_tiers(user) if name.startswith("models-"))


def test_shipped_manifests_give_their_per_model_tiers():
    assert {"ops-gpt_oss", "ops-granite_moe_hybrid"} <= set(load_tiers())


def test_only_a_top_level_scalar_model_names_a_tier(tmp_path):
    assert per_model_tiers(tmp_path, {
        "after_nesting.yaml": "description: {note: [1, {model: nested}]}\nlist: [model]\nmodel: alpha\ncases: []\n",
        "quoted.yaml": "model: 'beta.v2'\n",
        "nested_only.yaml": "default: {model: inner}\ncases: []\n",
        "a_list.yaml": "model: [not, a, name]\n",
        "blank.yaml": "model: ''\n",
    }) == ["models-alpha", "models-beta.v2"]


def test_the_cases_after_the_model_are_not_parsed(tmp_path):
    # the op-manifest runner reports a broken case list; the tier list does not depend on it
    assert per_model_tiers(tmp_path, {"m.yaml": "model: m\ncases: [unclosed\n"}) == ["models-m"]


@pytest.mark.parametrize(("text", "error"), [
    ("description: [unclosed\nmodel: x\n", ":2: invalid YAML: "),
    ("model: 3\n", ":1: op manifest: 'model' must be str, not int 3"),
    ("\n- model\n", ":2: op manifest: expected a mapping"),
    ("# nothing\n", ": empty file, expected a mapping"),
])
def test_a_bad_manifest_header_is_a_one_line_error_naming_file_and_line(tmp_path, text, error):
    with pytest.raises(HarnessError) as raised:
        per_model_tiers(tmp_path, {"bad.yaml": text})
    assert str(raised.value).startswith(f"{tmp_path / 'manifests' / 'bad.yaml'}{error}")
    assert "\n" not in str(raised.value)
