"""Big trees by default, a home directory never by mistake (issue 16, item 6).

No file cap unless asked for: Chromium-sized projects are projects. What is
refused instead is what a mistake looks like — the home directory itself, or
far more untracked files than the index tracks — and a refusal is remembered
while nothing it depends on changes, so a hook does not walk it again.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from builders import event, fast_and_full, git, run_cli, run_hook, write

from snapshotter.engine import Engine
from snapshotter.errors import NotAProject, Refused
from snapshotter.logfile import log_path
from snapshotter.store import walk as scan


def sn(*args: str | Path, home: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env={"HOME": str(home)})


def test_the_home_directory_is_refused_unless_capped(repo: Path, data_dir: Path) -> None:
    refused = sn("capture", "-C", repo, home=repo)
    assert refused.returncode == 1, refused
    assert "is your home directory" in refused.stderr and "--max-files" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    allowed = sn("capture", "-C", repo, "--max-files", "1000", home=repo)
    assert allowed.returncode == 0, allowed.stderr


def test_a_hook_at_home_records_nothing_and_says_why(repo: Path, data_dir: Path) -> None:
    done = run_hook(event("turn_start", repo), env={"HOME": str(repo)})
    assert done.returncode == 0, "a hook exits 0 whatever it refuses"
    assert "home directory" in log_path(data_dir).read_text()


def untracked_heavy(repo: Path, monkeypatch: pytest.MonkeyPatch, full: bool = False) -> None:
    """Past the guard: 1,200 files against a guard lowered to 1,000 (no setting
    lowers it), or in the full run 100,200 against the real one."""
    if not full:
        monkeypatch.setattr(scan, "UNTRACKED_GUARD", 1000)  # the real one is 100,000 files
    for i in range(scan.UNTRACKED_GUARD + 200):
        write(repo, f"dump/f{i:06}.txt", "x")


@pytest.mark.parametrize("full", fast_and_full(False, True))
def test_far_more_untracked_than_tracked_is_refused_then_remembered(
    repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, full: bool
) -> None:
    untracked_heavy(repo, monkeypatch, full)
    engine = Engine.open(repo, data_dir_path=data_dir)
    with pytest.raises(NotAProject, match="untracked files against 3 tracked"):
        engine.capture()
    for path in (repo / "dump").iterdir():  # the top directory itself is not touched
        path.unlink()
    with pytest.raises(Refused, match="refused before"):
        engine.capture()  # remembered: no walk, so it has not seen the files go
    git(repo, "add", "README.md")  # the source index changed: look again
    write(repo, "README.md", "# changed\n")
    git(repo, "add", "README.md")
    assert engine.capture().tree, "walked again, and now there is nothing to refuse"


def test_an_explicit_cap_replaces_the_guard(
    repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    untracked_heavy(repo, monkeypatch)
    engine = Engine.open(repo, data_dir_path=data_dir, max_files=5000)
    assert engine.capture().tree


def test_undo_is_never_refused_by_the_guard(
    repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded with a cap (the user said so); the CLI's undo has no cap, so the guard is on."""
    from snapshotter.history import undo
    from snapshotter.history.recorder import Recorder

    untracked_heavy(repo, monkeypatch)
    capped = Engine.open(repo, data_dir_path=data_dir, max_files=5000)
    recorder = Recorder(capped, "s")
    recorder.turn_start()
    write(repo, "src/app.py", "print('agent')\n")
    assert recorder.turn_end("done") is not None
    plain = Engine.open(repo, data_dir_path=data_dir)
    with pytest.raises(NotAProject):
        plain.capture()
    assert undo.undo_last(plain, "s").restored == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
