"""A served command's client ends at once with the child's exit code (cli/served.py
``leave``): the console script skips Python's shutdown, which only costs time
(~4 ms of CPU, a tenth of the reference's undo at 10k files)."""

from __future__ import annotations

import sys
from pathlib import Path

from builders import make_repo, run_cli, turn
from functional.test_cli_served import start_server

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
