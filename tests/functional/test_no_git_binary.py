"""The engine works with no `git` binary installed (SPEC §1: pygit2 does all git work)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from builders import write

SCRIPT = textwrap.dedent(
    """
    import json, os, shutil, sys
    from pathlib import Path
    from snapshotter.engine import Engine

    root = Path(sys.argv[1])
    report = {"which_git": shutil.which("git")}
    engine = Engine.open(root, data_dir_path=sys.argv[2])
    before = engine.capture().tree
    (root / "src" / "app.py").write_text("print('changed')\\n")
    (root / "added.txt").write_text("new\\n")
    os.unlink(root / "src" / "util.py")
    after = engine.capture().tree
    changes = engine.changes(before, after)
    report["changes"] = sorted((c.path, c.status) for c in changes)
    report["diff_has_change"] = "+print('changed')" in engine.diff(before, after)
    engine.restore(before, [c.path for c in changes])
    report["app"] = (root / "src" / "app.py").read_text()
    report["util"] = (root / "src" / "util.py").read_text()
    report["added_exists"] = (root / "added.txt").exists()
    report["back_to_before"] = engine.capture().tree == before
    print(json.dumps(report))
    """
)


def test_capture_changes_restore_without_git_on_path(
    repo: Path, data_dir: Path, tmp_path: Path
) -> None:
    write(repo, "untracked.txt", "also captured\n")
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "GIT_CONFIG_NOSYSTEM", "LANG")
    }
    env["PATH"] = str(empty_bin)
    env["SNAPSHOTTER_DATA_DIR"] = str(data_dir)

    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(repo), str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, f"the engine should run without git; stderr:\n{done.stderr}"
    report = json.loads(done.stdout)
    assert report["which_git"] is None, "fixture: no `git` may be findable on PATH in the child"
    assert report["changes"] == [
        ["added.txt", "added"],
        ["src/app.py", "modified"],
        ["src/util.py", "deleted"],
    ], f"changes should be computed without git; got {report['changes']}"
    assert report["diff_has_change"], "diff should work without git"
    assert report["app"] == "print('hi')\n", "the modified file should be restored without git"
    assert report["util"] == "X = 1\n", "the deleted file should come back without git"
    assert not report["added_exists"], "the added file should be removed without git"
    assert report["back_to_before"], "the worktree should capture back to the first tree"
