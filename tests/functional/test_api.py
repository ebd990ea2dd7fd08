"""The Python API of SPEC §8, used the way README's example uses it."""

from __future__ import annotations

import os
from pathlib import Path

from builders import write

import snapshotter


def test_every_public_name_imports() -> None:
    missing = [name for name in snapshotter.__all__ if getattr(snapshotter, name, None) is None]
    assert missing == [], f"names in __all__ that do not load: {missing}"


def test_readme_python_example_end_to_end(repo: Path, data_dir: Path) -> None:
    registry = snapshotter.Registry()
    controller = snapshotter.register_snapshot(registry, data_dir_path=data_dir)
    config = controller.auto_inject({})
    executor = snapshotter.Executor(config, registry)
    event = snapshotter.HookInput(session_id="s1", cwd=str(repo))
    executor.dispatch(snapshotter.TURN_START, event)
    write(repo, "src/app.py", "print('agent')\n")
    executor.dispatch(snapshotter.TURN_END, event)

    [cp] = controller.list(repo)
    assert isinstance(cp, snapshotter.Checkpoint) and [f.path for f in cp.files] == ["src/app.py"]
    report = controller.undo_last(repo)
    assert report.restored == ["src/app.py"], report
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "undo through the API"
    controller.redo(repo)
    assert (repo / "src/app.py").read_text() == "print('agent')\n", "redo through the API"

    engine = snapshotter.Engine.open(repo, data_dir_path=data_dir)
    assert engine is not None
    tree = engine.capture().tree
    write(repo, "README.md", "changed\n")
    assert [c.path for c in engine.changes(tree)] == ["README.md"], "changes since a tree"
    assert "+changed" in engine.diff(tree, engine.capture().tree), "diff text"
    report_gc = engine.gc()
    assert report_gc.objects_kept > 0, "gc through the engine keeps live objects"
    controller.undo_last(repo)  # README.md is not the checkpoint's: no conflict
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "undo still works after gc"
    assert (repo / "README.md").read_text() == "changed\n", "and leaves other files alone"


def test_every_operation_is_a_method_of_the_engine(repo: Path, data_dir: Path) -> None:
    """What the CLI does, through Engine alone (issue 23.3): record, look, diff, restore."""
    engine = snapshotter.Engine.open(repo, data_dir_path=data_dir)
    assert not engine.has_snapshot(), "a fresh store has no snapshot"
    assert engine.checkpoint() is None, "the first capture, with no label, is only the baseline"
    assert engine.has_snapshot(), "the baseline is a snapshot"
    write(repo, "src/app.py", "print('edited')\n")
    cp = engine.checkpoint("edit the app")
    assert cp is not None and [f.path for f in cp.files] == ["src/app.py"], cp
    assert engine.resolve_session() == "cli", "checkpoint's default session is the newest"
    assert [c.id for c in engine.checkpoints("cli")] == [cp.id] == [engine.show(None).id]
    assert engine.show(cp.id).label == "edit the app"

    write(repo, "README.md", "later\n")
    own = engine.checkpoint_diff(cp)
    assert own.to == cp.after and [d.path for d in own.files] == ["src/app.py"], own
    now = engine.checkpoint_diff(cp, to_now=True)
    assert sorted(d.path for d in now.files) == ["README.md", "src/app.py"], now
    assert [d.path for d in engine.file_diffs(cp.before, cp.after)] == ["src/app.py"]

    assert engine.undo("cli").restored == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "undo through the engine"
    engine.redo("cli")
    assert (repo / "src/app.py").read_text() == "print('edited')\n", "redo through the engine"
    engine.reset("cli", None)
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "reset to the original"
    engine.redo("cli")
    report = engine.restore_files("cli", cp.id, ["src/app.py"])
    assert report.restored == ["src/app.py"] and (repo / "src/app.py").read_text() == (
        "print('hi')\n"
    ), "one file back as before the checkpoint"
    assert (repo / "README.md").read_text() == "later\n", "a file no operation named is kept"
    gc = engine.gc(dry_run=True)
    assert gc.reason.startswith("dry run"), gc


def test_readme_python_example_passes_mypy_strict_in_a_users_project(tmp_path: Path) -> None:
    """A user's project type-checks the README example against the installed package."""
    import subprocess
    import sys

    from test_cli_e2e import README, fenced

    example = tmp_path / "user_code.py"
    example.write_text(fenced(README.read_text(), "python", "import snapshotter"))
    package_parent = Path(snapshotter.__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(example)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "MYPYPATH": str(package_parent)},
    )
    assert done.returncode == 0, f"mypy --strict on README's example:\n{done.stdout}"


def test_dir_shows_the_api_not_the_import_machinery() -> None:
    """#26.6: ``dir(snapshotter)`` is what a user explores the package with."""
    names = dir(snapshotter)
    assert "Engine" in names and "register_snapshot" in names, names
    assert "TYPE_CHECKING" not in names and "annotations" not in names, names
