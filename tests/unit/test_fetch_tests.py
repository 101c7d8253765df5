"""fetch-tests against a local git repository standing in for PyTorch's (no network)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def pytorch_repo(tmp_path):
    repo = tmp_path / "pytorch"
    (repo / "test").mkdir(parents=True)
    (repo / "torch").mkdir()
    (repo / "test" / "test_torch.py").write_text("def test_ok():\n    pass\n")
    (repo / "torch" / "big_source.py").write_text("x = 1\n")
    git("init", "-q", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "release", "--allow-empty", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "release", cwd=repo)
    git("tag", "v9.9.1", cwd=repo)
    return repo


def fetch(*args):
    return subprocess.run([sys.executable, "-m", "harness", "fetch-tests", *map(str, args)], capture_output=True, text=True)


def test_fetches_only_test_folder_at_the_tag_and_reuses_the_cache(pytorch_repo, tmp_path):
    done = fetch("--version", "9.9.1", "--repo", f"file://{pytorch_repo}", "--cache", tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    tests = tmp_path / "cache" / "9.9.1" / "test"
    assert (tests / "test_torch.py").is_file() and str(tests) in done.stdout
    assert not (tmp_path / "cache" / "9.9.1" / "torch").exists()  # sparse: only test/
    again = fetch("--version", "9.9.1", "--repo", f"file://{tmp_path / 'gone'}", "--cache", tmp_path / "cache")
    assert again.returncode == 0, again.stderr  # cached per version: the repository is not asked again


def test_missing_tag_is_one_line_exit_3(pytorch_repo, tmp_path):
    done = fetch("--version", "9.9.2", "--repo", f"file://{pytorch_repo}", "--cache", tmp_path / "cache")
    assert done.returncode == 3
    assert "git failed cloning tag v9.9.2" in done.stderr and done.stderr.count("\n") == 1
