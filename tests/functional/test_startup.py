"""What one ``snapshotter hook`` process imports (issue 16.4, the cold path).

The hook runs once per agent event, so its imports are paid thousands of
times a session. Each test runs the real entry point in a fresh interpreter
and asserts on the modules it loaded (never on times): the client of a
running hook server loads none of the heavy libraries, and a process that
handles its event itself loads only what capturing needs: no pydantic, whose
import and model building alone cost more than the rest of the imports (the
state and the event are read plainly, codec.py and hooks/events.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from builders import cli_probe, git, make_repo, wait_for, write

from snapshotter.engine import Engine

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
    # A long-lived process's state, and the captures a forked command sends its server.
    "snapshotter.store.resident",
    "snapshotter.store.watch",
    "snapshotter.store.remote",
    # The store's lock is an flock of our own: filelock only where there is no flock.
    "filelock",
)
# pydantic and our modules that import it: the API's models and the hook's wire models.
PYDANTIC = ("pydantic", "pydantic_core", "snapshotter.models", "snapshotter.hooks.wire")

# Runs the console script's entry, then reports what the process loaded.
PROBE = """
import sys
from snapshotter.cli.launcher import main
try:
    main(["--data-dir", sys.argv[1], "hook"])
except SystemExit:
    pass
modules = sorted(sys.modules)  # before json's own imports (contextlib, re, ...)
import json
with open(sys.argv[2], "w") as f:
    json.dump({"modules": modules}, f)
"""


def probe(tmp_path: Path, data_dir: Path, event: Mapping[str, object]) -> dict[str, object]:
    """Handle ``event`` like the ``snapshotter hook`` script; what the process loaded."""
    report = tmp_path / f"probe-{time.monotonic_ns()}.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(data_dir), str(report)],
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
    return [[f.path for f in cp.files] for cp in engine.checkpoints(session)]


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
    extra = loaded(found["modules"], PYDANTIC)
    assert not extra, f"recording a turn loaded pydantic: {extra}"


def test_a_tool_span_handled_in_process_loads_no_pydantic(tmp_path: Path, data_dir: Path) -> None:
    """Tool events (``tool_input`` read for named paths) and a session's first event too."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root), "tool_name": "write_file", "tool_use_id": "t1"}
    first = probe(tmp_path, data_dir, {**base, "hook_event_name": "session_start"})
    tool_input = {"path": str(root / "a.txt"), "content": "changed"}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "pre_tool_use", "tool_input": tool_input})
    write(root, "a.txt", "changed\n")
    post = {**base, "hook_event_name": "post_tool_use", "tool_input": tool_input}
    found = probe(tmp_path, data_dir, post)
    assert checkpoint_files(root, data_dir, "s") == [["a.txt"]], "the tool was recorded"
    for name, modules in (("session_start", first), ("post_tool_use", found)):
        extra = loaded(modules["modules"], PYDANTIC)
        assert not extra, f"{name} loaded pydantic: {extra}"


def test_fields_the_builtin_does_not_read_are_left_alone(tmp_path: Path, data_dir: Path) -> None:
    """A field of another JSON type (a number as a string) that the builtin does not read
    changes nothing: the turn is recorded, and nothing converts it (no pydantic)."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root), "iteration": "3", "messages": {}}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})
    write(root, "a.txt", "changed\n")
    found = probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    assert checkpoint_files(root, data_dir, "s") == [["a.txt"]], "the turn was recorded"
    extra = loaded(found["modules"], PYDANTIC)
    assert not extra, f"an event with odd fields loaded pydantic: {extra}"


def test_an_event_the_builtin_ignores_loads_no_engine(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "notification"}
    found = probe(tmp_path, data_dir, event)
    extra = loaded(
        found["modules"], ("pygit2", "snapshotter.hooks.builtin", "snapshotter.store.shadow")
    )
    assert not extra, f"an ignored event loaded the capture machinery: {extra}"
    assert not (data_dir / "snapshot").exists(), "an ignored event creates no store"


def test_a_served_hook_loads_no_heavy_library(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})  # starts the server
    wait_for(server_socket)  # the first hook started a server
    write(root, "a.txt", "changed\n")
    found = probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    # Recorded, and not by this process (it never loaded the engine): the server did it.
    assert checkpoint_files(root, data_dir, "s") == [["a.txt"]], "the turn was recorded"
    heavy = loaded(
        found["modules"], (*HEAVY, "snapshotter.hooks.builtin", "snapshotter.store.shadow")
    )
    assert not heavy, f"the served hook's client loaded {heavy}"
    # Nor a module it has no use for (each was ~0.2 ms of every served hook; not
    # contextlib, which an editable install's import hook loads at start-up).
    spare = loaded(found["modules"], ("zlib", "fcntl"))
    assert not spare, f"the served hook's client loaded {spare}"


def test_commands_that_print_as_text_load_no_pydantic(tmp_path: Path, data_dir: Path) -> None:
    """`list`, `show`, `diff` and `log` read the stored records (Engine.records), and
    `undo` and `redo` report a ``Restoration``, its --json written by codec.py: the
    models (~100 ms of start-up) only for list's --json, where they are the document."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})
    write(root, "a.txt", "changed\n")
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    shown = {
        "list": "~1",
        "show 1": "a.txt",
        "diff 1": "+changed",
        "diff 1.. --stat": "a.txt",
        "log": "no undo, redo",
        "undo": "undid checkpoint 1",
        "redo": "redid checkpoint 1",
    }
    for command, expected in shown.items():
        found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), *command.split())
        assert expected in str(found["out"]), f"{command}: {found['out']!r}"
        extra = loaded(found["modules"], PYDANTIC)
        assert not extra, f"`snapshotter {command}` loaded pydantic: {extra}"
    found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "list", "--json")
    assert json.loads(str(found["out"]))[0]["files"] == [{"path": "a.txt", "status": "modified"}]
    assert loaded(found["modules"], PYDANTIC), "--json prints the API's models"
    found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "undo", "--dry-run", "--json")
    assert json.loads(str(found["out"]))["dry_run"] is True, found["out"]
    extra = loaded(found["modules"], PYDANTIC)
    assert not extra, f"`undo --json` loaded pydantic (codec.py writes it): {extra}"


def test_a_capture_that_finds_nothing_changed_loads_no_pygit2(
    tmp_path: Path, data_dir: Path
) -> None:
    """Issue 24: `capture` without a server, `list`, and a hook handled in its own
    process read no object when nothing changed (the stat cache names the tree, found
    on disk: git/loose.py's ``stored``), so they skip pygit2's import (~50 ms).
    Nor does a capture of a changed file: its blob and trees are written as loose
    objects by git/loose.py."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "d/b.txt": "b\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "session_start"})  # the first capture
    first = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "capture")
    again = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "capture")
    assert str(again["out"]) == str(first["out"]), "nothing changed: the same tree"
    assert not loaded(again["modules"], ("pygit2",)), "a no-change capture loaded pygit2"
    found = probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})
    assert not loaded(found["modules"], ("pygit2",)), "a no-change hook loaded pygit2"
    listed = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "list")
    assert not loaded(listed["modules"], ("pygit2",)), "`list` loaded pygit2"
    write(root, "a.txt", "changed\n")
    changed = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "capture")
    assert str(changed["out"]) != str(first["out"])
    assert not loaded(changed["modules"], ("pygit2",)), "a changed file's capture loaded pygit2"


def test_the_hook_servers_warm_up_before_the_first_event_loads_no_pygit2() -> None:
    """A session's first baseline waits for the server's warm-up (issue 24.3): only
    what recording needs; pygit2 comes with the CLI commands' imports, or when read."""
    code = (
        "import sys\n"
        "from snapshotter.engine.serving import warm_up\n"
        "warm_up()\n"
        "print('pygit2' in sys.modules, 'snapshotter.history.recorder' in sys.modules)\n"
        "from snapshotter.engine import load_commands\n"
        "load_commands()\n"
        "print('pygit2' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"], done.stdout


# What a command that changes nothing never needs: the other commands' modules, and
# standard modules that only writing a pack, hashing, a pager or a temp directory
# needs (each a few ms of start-up: tempfile and secrets import random, hmac and
# hashlib; shutil bz2 and lzma; subprocess selectors and more).
OTHER_COMMANDS = (
    "snapshotter.cli.setup",
    "snapshotter.cli.doctor",
    "snapshotter.cli.mcp_server",
    "snapshotter.cli.rewind",
    "snapshotter.cli.moved",
    "snapshotter.cli.maintenance",
    "snapshotter.cli.oplog",
)
NOT_FOR_LOOKING = ("tempfile", "shutil", "secrets", "subprocess", "hashlib")


def test_a_command_loads_only_its_own_module(tmp_path: Path, data_dir: Path) -> None:
    """cli/main.py imports a command's module when that command runs: `list` and a
    no-change `capture` load no other command's module, nor what only writing needs."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})
    write(root, "a.txt", "changed\n")
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    for command, own in (("list", "snapshotter.cli.review"), ("capture", "recording")):
        found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), command)
        modules = found["modules"]
        assert isinstance(modules, list) and any(own in m for m in modules), modules
        extra = loaded(modules, (*OTHER_COMMANDS, *NOT_FOR_LOOKING))
        assert not extra, f"`snapshotter {command}` loaded {extra}"


def test_undo_redo_and_restore_without_a_server_load_no_libgit2(
    tmp_path: Path, data_dir: Path
) -> None:
    """They read a few trees and blobs (git/object_reader.py), which costs less than
    loading libgit2 (~85 ms): the worktree still comes back byte for byte, and a
    directory restored is listed from the trees read so."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "d/b.txt": "b\n"})
    base = {"session_id": "s", "cwd": str(root)}
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_start"})
    write(root, "a.txt", "changed\n")
    write(root, "d/new.txt", "new\n")
    probe(tmp_path, data_dir, {**base, "hook_event_name": "turn_end"})
    objects = next((data_dir / "snapshot").iterdir()) / "git" / "objects"
    listed = git(
        root,
        "--git-dir",
        str(objects.parent),
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objectname)",
    )
    subprocess.run(  # packed (and none left loose): what reads them is the pack reader
        ["git", "--git-dir", str(objects.parent), "pack-objects", "-q", str(objects / "pack/pack")],
        input=listed.encode(),
        check=True,
        capture_output=True,
    )
    git(root, "--git-dir", str(objects.parent), "prune-packed")
    for command, a, new in (("undo", b"a\n", False), ("redo", b"changed\n", True)):
        found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), command)
        assert f"{command.rstrip('o')}" in str(found["out"]), found["out"]
        assert not loaded(found["modules"], ("pygit2",)), f"`{command}` loaded libgit2"
        assert (root / "a.txt").read_bytes() == a and (root / "d/new.txt").exists() == new
    found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "restore", "1", "d")
    assert not loaded(found["modules"], ("pygit2",)), "`restore` of a directory loaded libgit2"
    assert not (root / "d/new.txt").exists() and (root / "d/b.txt").read_bytes() == b"b\n"
