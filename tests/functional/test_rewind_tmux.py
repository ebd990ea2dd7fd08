"""`snapshotter rewind` in a real terminal: tmux runs it, ``send-keys`` types, and
``capture-pane`` reads the screen back (issue 27.5).

On a recorded session (test_rewind.py's ``play``): the list, the diff pane,
a confirmed go-back and the state after it; then a latin-1 terminal with
NO_COLOR, resized. Each tmux server is private to its test (``-S`` socket in
tmp_path, no config file), so nothing else on the machine is touched.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_rewind import DEMO_GREETER, play

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"
)


class Terminal:
    """One tmux session on a private server: what it shows, and keys typed into it."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return done.stdout

    def start(self, command: str, width: int = 80, height: int = 24) -> None:
        # The shell stays after the command, so its exit code can be read on the screen.
        shell = f'{command}; echo "exited $?"; read _'
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "sh", "-c", shell)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "0", *keys)

    def screen(self, escapes: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "0")

    def shows(self, *needles: str, limit: float = 30) -> str:
        """The screen once it shows every one of ``needles`` (the program draws
        asynchronously); fails with the screen after ``limit`` seconds."""
        deadline = time.monotonic() + limit
        while True:
            seen = self.screen()
            if all(n in seen for n in needles) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        missing = [n for n in needles if n not in seen]
        assert not missing, f"the screen never showed {missing}:\n{seen}"
        return seen


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path / "tmux.sock")
    yield term
    subprocess.run(
        ["tmux", "-S", str(term.socket), "kill-server"], capture_output=True, check=False
    )


def rewind_command(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The shell command that runs ``snapshotter rewind`` in ``root`` with this test's
    data directory and interpreter (and ``env`` on top)."""
    settings = {"PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    assigned = " ".join(f"{k}={shlex.quote(v)}" for k, v in settings.items())
    argv = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "snapshotter", "rewind", *args))
    return f"cd {shlex.quote(str(root))} && env {assigned} {argv}"


def test_list_diff_go_back_and_the_state_after(
    terminal: Terminal, tmp_path: Path, data_dir: Path
) -> None:
    root = play(tmp_path / "app", data_dir)
    # A progress count on stderr would show at once (not after a second) if it were on.
    terminal.start(rewind_command(root, env={"SNAPSHOTTER_PROGRESS_AFTER_S": "0"}))
    listed = terminal.shows("snapshotter rewind", "session cc-1", "rename greet (2 tools)")
    assert "(1 other session(s): s)" in listed
    assert "+1 ~1 -0" in listed, "the turn's counts, as list prints them"
    assert "[ ] + src/extra.py" in listed and "[ ] ~ src/greeter.py" in listed

    terminal.keys("Right", "j")
    diffed = terminal.shows("├ Write src/extra.py", "checkpoint 7 tool: Write src/extra.py")
    assert "+EXTRA = True" in diffed, "the diff pane shows the highlighted tool's diff"
    assert "-def greet(name):" not in diffed, "and only its own files"
    assert "\x1b[32m+EXTRA = True" in terminal.screen(escapes=True), "coloured as git does"

    terminal.keys("k", "r")
    terminal.shows(
        "go back to before checkpoint 8 (snapshotter reset --original)",
        "  restore src/greeter.py",
        "  remove  src/extra.py",
        "y/Enter: do it   n/Esc: cancel",
    )
    assert (root / "src/extra.py").exists(), "nothing changes before the answer"

    terminal.keys("y")
    after = terminal.shows("reset checkpoint 8: 1 restored, 1 removed; R (redo) puts it back")
    row = re.compile(r"^ +\d+ \d\d:\d\d:\d\d [^:]* [+]\d ~\d -\d +undone *$")
    for line in after.splitlines()[1:4]:  # the turn and its two tools, drawn whole
        assert row.match(line), f"a whole row, marked undone: {line!r}\n{after}"
    assert not (root / "src/extra.py").exists()
    assert (root / "src/greeter.py").read_text() == DEMO_GREETER

    terminal.keys("q")
    terminal.shows("exited 0")


def test_latin1_no_color_and_a_resize(terminal: Terminal, tmp_path: Path, data_dir: Path) -> None:
    root = play(tmp_path / "app", data_dir)
    env = {"PYTHONIOENCODING": "latin-1", "NO_COLOR": "1"}
    terminal.start(rewind_command(root, "--session", "sess-demo", env=env))
    narrow = terminal.shows("session sess-demo", "add a farewell function (2 to")
    assert "(2 tools)" not in narrow and "...  +1 ~1 -0" in narrow, "cut to fit, in ASCII"
    assert "> drop the config module (1 tool)" in narrow, "ASCII fold marks"
    assert "|diff --git a/src/config.py" in narrow, "an ASCII pane border"
    coded = terminal.screen(escapes=True)
    for colour in ("\x1b[31m", "\x1b[32m", "\x1b[36m"):
        assert colour not in coded, f"NO_COLOR: no colour {colour!r} on the screen"

    terminal.tmux("resize-window", "-t", "0", "-x", "120", "-y", "30")
    wide = terminal.shows("add a farewell function (2 tools)")
    assert max(len(line) for line in wide.splitlines()) > 80, "the view uses the new width"
    terminal.keys("q")
    terminal.shows("exited 0")
