"""A served command's or hook's client ends at once with the server's answer
(hooks/client.py ``leave``): the console script skips Python's shutdown, which only
costs time (~4 ms of CPU, a tenth of the reference's undo at 10k files)."""

from __future__ import annotations

import sys
from pathlib import Path

from builders import event, listed, make_repo, run_cli, run_hook, turn
from test_cli_served import start_server

# The console script (``main()`` with no argv), with an exit handler that says
# whether Python's shutdown ran, and whether the click CLI was loaded here.
SCRIPT = """
import atexit, os, sys
from snapshotter.cli.launcher import main

def shutdown():
    with open(os.environ["SHUTDOWN_FILE"], "w") as f:
        f.write("local" if "snapshotter.cli.main" in sys.modules else "served")

atexit.register(shutdown)
main()
"""


def test_the_console_script_leaves_with_the_served_commands_code_and_output(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    start_server(root, data_dir, server_socket)
    turn(root, "s", {"a.txt": "agent\n"}, data_dir, process=True)
    shutdown = tmp_path / "shutdown"

    def cli(*args: str) -> tuple[int, str, str]:
        done = run_cli(
            *args,
            data_dir=data_dir,
            cwd=root,
            env={"SHUTDOWN_FILE": str(shutdown)},
            command=(sys.executable, "-c", SCRIPT),
        )
        return done.returncode, done.stdout, done.stderr

    code, out, err = cli("undo", "--session", "s")
    assert code == 0 and "a.txt" in out, (code, out, err)
    assert (root / "a.txt").read_text() == "a\n"
    assert not shutdown.exists(), "served, and the process ended without Python's shutdown"
    code, out, err = cli("undo", "--session", "s")
    assert code == 3 and "nothing to undo" in err, (code, out, err)  # NothingToDo's code
    assert not shutdown.exists()
    code, out, err = cli("--help")  # not a served command: a normal exit
    assert code == 0 and "undo" in out
    assert shutdown.read_text() == "local"


def test_a_served_hook_leaves_at_once_and_one_handled_here_shuts_down(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    start_server(root, data_dir, server_socket)
    shutdown = tmp_path / "shutdown"

    def hook(name: str, server: str) -> None:
        done = run_hook(
            event(name, root, "s"),
            data_dir,
            cwd=root,
            env={"SHUTDOWN_FILE": str(shutdown), "SNAPSHOTTER_HOOK_SERVER": server},
            command=(sys.executable, "-c", SCRIPT),
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done

    hook("turn_start", "1")
    (root / "a.txt").write_text("agent\n")
    hook("turn_end", "1")
    assert not shutdown.exists(), "served, and the process ended without Python's shutdown"
    assert [[f["path"] for f in c["files"]] for c in listed(root, data_dir)] == [["a.txt"]]
    hook("turn_start", "0")  # handled in this process: its shutdown runs as ever
    assert shutdown.exists(), "handled here: Python's shutdown ran"
