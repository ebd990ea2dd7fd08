"""What one ``snapshotter hook`` process imports (issue 16.4, the cold path).

The hook runs once per agent event, so its imports are paid thousands of
times a session. Each test runs the real entry point in a fresh interpreter
and asserts on the modules it loaded (never on times): the client of a
running hook server loads none of the heavy libraries, and a process that
handles its event itself loads only what capturing needs.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_repo, write

from snapshotter.engine import Engine
from snapshotter.history.undo import list_checkpoints
from snapshotter.hooks import client

# Libraries a served hook never needs: the server has them loaded already.
HEAVY = ("click", "pydantic", "pydantic_core", "pygit2", "filelock", "xxhash")
# Needed by a runtime's registry or by undo/redo/list, never to record a checkpoint.
NOT_FOR_CAPTURE = (
    "click",
    "snapshotter.cli.main",
    "snapshotter.hooks.registry",
    "snapshotter.history.undo",
    "snapshotter.history.journal",
    "snapshotter.history.retention",
)
# Models whose validators are built on first use; a hook never uses them.
UNUSED_MODELS = (
    ("snapshotter.hooks.events", "HookOutput"),
    ("snapshotter.hooks.events", "HookSpecificOutput"),
    ("snapshotter.models", "RestoreReport"),
)

# Runs the console script's entry, then reports what the process loaded.
PROBE = """
import json, sys
from snapshotter.cli.launcher import main
try:
    main(["--data-dir", sys.argv[1], "hook"])
except SystemExit:
    pass
built = {}
for module, name in json.loads(sys.argv[3]):
    if module in sys.modules:
        built[module + "." + name] = getattr(sys.modules[module], name).__pydantic_complete__
with open(sys.argv[2], "w") as f:
    json.dump({"modules": sorted(sys.modules), "built": built}, f)
"""


def probe(tmp_path: Path, data_dir: Path, event: dict[str, str]) -> dict[str, object]:
    """Handle ``event`` like the ``snapshotter hook`` script; what the process loaded."""
    report = tmp_path / f"probe-{time.monotonic_ns()}.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(data_dir), str(report), json.dumps(UNUSED_MODELS)],
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr.decode(errors="replace")
    found: dict[str, object] = json.loads(report.read_text())
    return found


def loaded(modules: object, names: tuple[str, ...]) -> list[str]:
    """The ``names`` (or their submodules) among ``modules``."""
    assert isinstance(modules, list)
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


def checkpoint_files(root: Path, data_dir: Path, session: str) -> list[list[str]]:
    engine = Engine.open(root, data_dir_path=data_dir, create=False)
    assert engine is not None, "the store exists"
    return [[f.path for f in cp.files] for cp in list_checkpoints(engine.store, session)]


def test_a_hook_handled_in_process_loads_only_what_capturing_needs(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})
    write(root, "a.txt", "changed\n")
    found = probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    assert checkpoint_files(root, data_dir, "s") == [["a.txt"]], "the turn was recorded"
    extra = loaded(found["modules"], NOT_FOR_CAPTURE)
    assert not extra, f"recording a turn loaded modules it does not need: {extra}"
    built = found["built"]
    assert isinstance(built, dict) and len(built) == len(UNUSED_MODELS), built
    assert not any(built.values()), f"validators built though never used: {built}"


def test_an_event_the_builtin_ignores_loads_no_engine(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "notification"}
    found = probe(tmp_path, data_dir, event)
    extra = loaded(
        found["modules"], ("pygit2", "snapshotter.hooks.builtin", "snapshotter.store.shadow")
    )
    assert not extra, f"an ignored event loaded the capture machinery: {extra}"
    assert not (data_dir / "snapshot").exists(), "an ignored event creates no store"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, data_dir: Path):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SNAPSHOTTER_HOOK_SERVER", "1")
    path = client.socket_path(data_dir)
    assert path is not None, "a private socket directory is available"
    yield path
    with contextlib.suppress(OSError):
        client.stop(path)


def test_a_served_hook_loads_no_heavy_library(tmp_path: Path, data_dir: Path, server: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})  # starts the server
    deadline = time.monotonic() + 60
    while not server.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.exists(), "the first hook started a server"
    write(root, "a.txt", "changed\n")
    found = probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    # Recorded, and not by this process (it never loaded the engine): the server did it.
    assert checkpoint_files(root, data_dir, "s") == [["a.txt"]], "the turn was recorded"
    heavy = loaded(
        found["modules"], (*HEAVY, "snapshotter.hooks.builtin", "snapshotter.store.shadow")
    )
    assert not heavy, f"the served hook's client loaded {heavy}"
