"""Issue 28: across a power cut, no record names what the disk may not hold.

Every ``snapshotter`` process of a working session (a first capture, agent
turns through hook processes, undo, redo, a restore of one file, gc) runs
under ``strace -f``; the write-order tracer (tests/write_order.py) replays
every write, rename, link, unlink and sync they made and fails on any record
written while an object could still be lost, any worktree write before its
journal is on disk, and any object deleted while the records are not.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from builders import edit_files, event, make_repo, run_cli, run_hook, store_root, write
from write_order import Model, parse, strace_prefix


def _strace_works() -> str | None:
    """Why strace cannot trace here (None: it can)."""
    if shutil.which("strace") is None:
        return "strace is not installed"
    try:
        done = subprocess.run(
            [*strace_prefix(Path("/dev/null")), "true"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace cannot run: {exc}"
    if done.returncode != 0:
        return f"strace cannot trace here (ptrace denied?): {done.stderr.decode(errors='replace')}"
    return None


pytestmark = pytest.mark.skipif(_strace_works() is not None, reason=str(_strace_works()))


class Session:
    """Each step a real process, traced; the model fed in order."""

    def __init__(self, root: Path, data_dir: Path, traces: Path) -> None:
        self.root, self.data_dir, self.traces = root, data_dir, traces
        self.model: Model | None = None
        self.count = 0

    def cli(self, *args: str) -> str:
        trace = self._trace()
        done = run_cli(*args, cwd=self.root, prefix=strace_prefix(trace))
        assert done.returncode == 0, f"snapshotter {' '.join(args)}: {done.stderr}"
        self._feed(" ".join(args), trace)
        return done.stdout

    def hook(self, name: str) -> None:
        trace = self._trace()
        done = run_hook(event(name, self.root, "s1"), cwd=self.root, prefix=strace_prefix(trace))
        assert done.returncode == 0 and not done.stderr, done.stderr
        self._feed(f"hook {name}", trace)

    def _trace(self) -> Path:
        self.count += 1
        return self.traces / f"{self.count:02d}.trace"

    def _feed(self, step: str, trace: Path) -> None:
        if self.model is None:  # the store exists once the first process ran
            self.model = Model(store_root(self.data_dir).resolve(), self.root.resolve())
        self.model.feed(step, parse(trace))


def test_no_record_names_what_a_power_cut_could_take(tmp_path: Path, data_dir: Path) -> None:
    # 80 committed files (seeded: the source's objects hard-linked) and 70 new
    # ones (packed in bulk): a first capture writes packs, links and a base.
    root = make_repo(tmp_path / "repo", {f"src/m{i}.py": f"X = {i}\n" for i in range(80)})
    for i in range(70):
        write(root, f"new/n{i}.txt", f"new {i}\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    session = Session(root, data_dir, traces)

    session.cli("capture")
    for files in (
        {"src/m0.py": "X = 'turn 1'\n", "src/m1.py": None, "docs/a.md": "# a\n"},
        {"src/m2.py": "X = 'turn 2'\n", "new/n3.txt": "changed\n", "deep/x/y/z.txt": "z\n"},
    ):
        session.hook("turn_start")
        edit_files(root, files)
        session.hook("turn_end")
    session.cli("undo")  # turn 2 reverted: a journalled restore
    assert not (root / "deep").exists()
    session.cli("redo")
    assert (root / "deep/x/y/z.txt").read_text() == "z\n"
    session.cli("restore", "1", "--", "src/m0.py")  # back as before turn 1
    assert (root / "src/m0.py").read_text() == "X = 0\n"
    session.cli("gc")  # packs the loose objects, then deletes them

    model = session.model
    assert model is not None
    # The scenario reached every rule, so a pass means something.
    assert model.checked["record"] >= 10, model.checked
    assert model.checked["worktree"] >= 3, model.checked
    assert model.checked["delete"] >= 1, model.checked
    assert not model.violations, "\n".join(model.violations[:20])
