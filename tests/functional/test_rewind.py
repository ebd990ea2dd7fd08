"""`snapshotter rewind`, driven key by key through prompt_toolkit's test harness (issue 27).

A recorded session (fixtures/sessions: docker-agent's two turns, then Claude
Code's) is played into a real repository through the hook, in this process;
the view runs on a pipe input with no terminal (``create_pipe_input``,
``DummyOutput``), and each action is checked against the bytes on disk.
The command itself, in a real terminal, is tested in test_rewind_tmux.py.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from builders import claude_event, hook_in_process_ok, open_engine, worktree_bytes
from builders import run_cli_in_process as cli

from snapshotter.cli import replay
from snapshotter.cli.rewind.view import PANE_LINES, View

# After both sessions: sess-demo's turns 3 (tools 1, 2) and 5 (tool 4), cc-1's turn 8 (6, 7).
ORIGINAL = replay.load_recipe("small_app")["files"]
DEMO_GREETER = "def greet(name):\n    return 'hello, ' + name + '!'\n"  # after sess-demo


def play(root: Path, data_dir: Path) -> Path:
    """small_app with docker-agent's two turns and then Claude Code's one played into it."""
    replay.build_repo(root, replay.load_recipe("small_app"))
    for name in ("docker_agent_two_turns", "claude_code_session"):
        replay.replay(replay.load_session(name), root, lambda e: _hook(e, data_dir))
    return root


def _hook(event: dict[str, object], data_dir: Path) -> None:
    hook_in_process_ok(event, data_dir)


@pytest.fixture
def played(tmp_path: Path, data_dir: Path) -> Path:
    return play(tmp_path / "app", data_dir)


def drive(
    root: Path, data_dir: Path, keys: str, session: str | None = None, mouse: bool = False
) -> View:
    """The rewind view of ``root`` run on ``keys`` (then Ctrl-C, which quits whatever is
    open), as a person types them."""
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from snapshotter.cli.rewind import screen

    engine = open_engine(root, data_dir)
    view = View(engine, engine.resolve_session(session), color=False)
    with create_pipe_input() as keyboard, create_app_session(keyboard, DummyOutput()):
        app = screen.application(view, mouse=mouse)
        keyboard.send_text(keys + "\x03")
        app.run()
    return view


def tracked(root: Path) -> dict[str, str]:
    """The worktree's files outside .git and the ignored ones, as text."""
    return {
        rel: data.decode()
        for rel, data in worktree_bytes(root).items()
        if not rel.startswith(("build/", "notes.log"))
    }


def test_go_back_before_a_turn_then_redo(played: Path, data_dir: Path) -> None:
    after_all = tracked(played)
    view = drive(played, data_dir, "")
    assert view.session == "cc-1", "the newest session first, as list shows it"
    assert [r.cp.id for r in view.rows] == [8], "one turn, its tools folded under it"

    view = drive(played, data_dir, "ry")
    assert view.message == "reset checkpoint 8: 1 restored, 1 removed; R (redo) puts it back"
    assert (played / "src/greeter.py").read_text() == DEMO_GREETER, "back as before turn 8"
    assert not (played / "src/extra.py").exists(), "the file turn 8 added is gone"
    assert tracked(played)["README.md"] == after_all["README.md"], "the other session's stays"
    assert [r.cp.undone for r in view.rows] == [True], "the list shows it undone"

    view = drive(played, data_dir, "Ry")
    assert tracked(played) == after_all, "redo puts back every byte"
    assert view.message.startswith("redid checkpoint 8:"), view.message


def test_switch_session_and_go_back_to_the_original(played: Path, data_dir: Path) -> None:
    view = drive(played, data_dir, "s")
    assert view.session == "sess-demo", "s shows the other session"
    assert [r.cp.id for r in view.rows] == [5, 3], "newest turn first"
    drive(played, data_dir, "ry")  # cc-1's turn first: it edited greeter.py after sess-demo
    view = drive(played, data_dir, "jr", session="sess-demo")
    assert view.pending is not None
    assert view.pending.title == "go back to before checkpoint 3 (snapshotter reset --original)"
    assert not view.pending.refused, view.pending.refused
    view = drive(played, data_dir, "jry", session="sess-demo")
    assert view.message.startswith("reset checkpoint 3, 5:"), view.message
    for rel, text in ORIGINAL.items():
        assert (played / rel).read_text() == text, f"{rel} is as it was before the agents"
    assert not (played / "src/farewell.py").exists()


def test_another_session_s_later_edit_is_named(played: Path, data_dir: Path) -> None:
    view = drive(played, data_dir, "jr", session="sess-demo")
    assert view.pending is not None and list(view.pending.refused) == ["src/greeter.py"]
    assert view.pending.refused == {"src/greeter.py": "checkpoint 8 of session cc-1"}


def test_every_change_asks_first_and_no_changes_nothing(played: Path, data_dir: Path) -> None:
    before = worktree_bytes(played)
    view = drive(played, data_dir, "rn")
    assert worktree_bytes(played) == before, "n answers no: nothing written"
    assert view.message == "cancelled: nothing changed"
    view = drive(played, data_dir, "r")
    assert view.pending is not None, "the question stays until it is answered"
    assert view.pending.title == "go back to before checkpoint 8 (snapshotter reset --original)"
    assert view.pending.lines() == ["  restore src/greeter.py", "  remove  src/extra.py"]
    assert worktree_bytes(played) == before, "quitting with a question open changes nothing"


def test_a_refusal_names_the_files_and_force_goes_ahead(played: Path, data_dir: Path) -> None:
    mine = "def salute(name):\n    return 'mine'\n"
    (played / "src/greeter.py").write_text(mine)
    view = drive(played, data_dir, "ry")
    assert view.pending is not None and view.pending.refused == {"src/greeter.py": "you"}
    assert view.pending.lines()[:3] == [
        "refused: changed since the checkpoint",
        "  src/greeter.py (by you)",
        "with --force it would",
    ]
    assert (played / "src/greeter.py").read_text() == mine, "y does not overwrite a refusal"

    drive(played, data_dir, "rF")
    assert (played / "src/greeter.py").read_text() == DEMO_GREETER
    assert not (played / "src/extra.py").exists()
    drive(played, data_dir, "Ry")
    assert (played / "src/greeter.py").read_text() == mine, "redo brings your edit back"


def test_back_before_a_tool_inside_a_turn_keeps_the_tools_before_it(
    played: Path, data_dir: Path
) -> None:
    # cc-1's turn 8, unfolded: tool 7 (Write src/extra.py), then tool 6 (Edit src/greeter.py).
    view = drive(played, data_dir, "ljry")
    assert view.message.startswith("reset checkpoint 7:"), view.message
    assert not (played / "src/extra.py").exists(), "tool 7's file is gone"
    assert "salute" in (played / "src/greeter.py").read_text(), "tool 6's edit stays"


def test_undo_and_redo_keys(played: Path, data_dir: Path) -> None:
    after_all = tracked(played)
    drive(played, data_dir, "uy")
    assert (played / "src/greeter.py").read_text() == DEMO_GREETER
    assert not (played / "src/extra.py").exists()
    drive(played, data_dir, "Ry")
    assert tracked(played) == after_all


def test_restore_only_the_chosen_files(played: Path, data_dir: Path) -> None:
    # Turn 8's files: src/extra.py (added), src/greeter.py (modified); choose the second.
    view = drive(played, data_dir, "\tj fy")
    assert view.message.startswith("restored checkpoint 8: 1 restored, 0 removed"), view.message
    assert (played / "src/greeter.py").read_text() == DEMO_GREETER
    assert (played / "src/extra.py").read_text() == "EXTRA = True\n", "the other file stays"
    assert not view.rows[0].cp.undone, "part of a checkpoint: it stays active"


def test_chosen_files_belong_to_their_checkpoint(played: Path, data_dir: Path) -> None:
    # Choose src/config.py in sess-demo's turn 5, go back to the list, switch to cc-1:
    # its turn 8 is highlighted at the same row, and f takes the file under the cursor.
    view = drive(played, data_dir, "\t \t\ts\tfy", session="sess-demo")
    assert view.message.startswith("restored checkpoint 8: 0 restored, 1 removed"), view.message
    assert not (played / "src/extra.py").exists()
    assert not (played / "src/config.py").exists(), "the choice in turn 5 was dropped"


def test_search_keeps_the_turns_whose_label_holds_it(played: Path, data_dir: Path) -> None:
    view = drive(played, data_dir, "/RM SRC\r", session="sess-demo")
    assert view.query == "RM SRC"
    assert [(r.cp.id, r.depth) for r in view.rows] == [(5, 0), (4, 1)], "a tool's label matches"
    assert view.current is not None and view.current.id == 5


def test_the_diff_pane_is_the_diff_command_s(played: Path, data_dir: Path) -> None:
    view = drive(played, data_dir, "j", session="sess-demo")
    shown = cli("diff", "3", "--no-pager", cwd=played)
    assert view.full_diff(color=False).decode() == shown.out
    assert view.diff_text() == shown.out, "plain text: the pane shows the same lines"


def test_an_agent_s_new_checkpoint_between_question_and_answer_asks_again(
    played: Path, data_dir: Path
) -> None:
    view = View(open_engine(played, data_dir), "cc-1", color=False)
    view.ask_undo()
    assert view.pending is not None and view.pending.plan is not None
    assert view.pending.plan.checkpoint == [8]
    for event in ("UserPromptSubmit", "Stop"):
        if event == "Stop":
            (played / "src/late.py").write_text("LATE = 1\n")
        hook_in_process_ok(claude_event(event, "cc-1", played, prompt="one more"), data_dir)
    before = worktree_bytes(played)
    view.confirm()
    assert view.message == "changed since you looked: this is what it would do now"
    assert view.pending.plan.checkpoint == [9], "the question now shows the new turn"
    assert worktree_bytes(played) == before, "and nothing was written"
    view.confirm()
    assert not (played / "src/late.py").exists(), "the second yes does what it showed"
    assert view.message.startswith("undid checkpoint 9:"), view.message


def test_a_click_highlights_a_row(played: Path, data_dir: Path) -> None:
    # SGR mouse reports (1-based x;y): press and release on the screen's third line,
    # the list's second row.
    view = drive(played, data_dir, "\x1b[<0;10;3M\x1b[<0;10;3m", session="sess-demo", mouse=True)
    assert view.current is not None and view.current.id == 3, view.index


def test_a_long_diff_is_cut_in_the_pane_and_whole_in_the_pager(
    played: Path, data_dir: Path
) -> None:
    hook_in_process_ok(claude_event("UserPromptSubmit", "cc-1", played, prompt="big"), data_dir)
    (played / "big.txt").write_text("".join(f"line {i}\n" for i in range(3000)))
    (played / "a_ctl.txt").write_text("bell\x07 esc\x1b[2J\tend\n")
    hook_in_process_ok(claude_event("Stop", "cc-1", played), data_dir)
    view = View(open_engine(played, data_dir), "cc-1", color=False)
    pane = view.diff_text().splitlines()
    assert len(pane) == PANE_LINES + 1, "the pane stops at PANE_LINES"
    assert pane[-1].endswith("more lines: d shows the whole diff"), pane[-1]
    whole = view.full_diff(color=False)
    assert b"+line 2999\n" in whole, "the pager gets every line"
    assert b"+bell\x07 esc\x1b[2J\tend" in whole, "byte for byte, as diff prints it"
    shown = "+bell^G esc^[[2J\tend".expandtabs(8)
    assert shown in pane, "the pane shows control bytes as ^X, then expands tabs"


def test_not_on_a_terminal_it_says_to_use_list(played: Path) -> None:
    done = cli("rewind", cwd=played)
    assert done.code == 2, done
    done.one_line_error("needs a terminal", "snapshotter list")


def test_without_the_tui_extra_it_says_how_to_install_it(played: Path) -> None:
    """On a terminal (a pty) with prompt_toolkit not importable: one line, exit 1."""
    code = (
        "import sys; sys.modules['prompt_toolkit'] = None\n"
        "from snapshotter.cli.launcher import main; main(['rewind'])"
    )
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=played,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as proc:
        os.close(follower)
        code_ = proc.wait(timeout=60)
    said = _read_all(leader).decode()
    assert code_ == 1, said
    assert (
        said.strip() == "snapshotter: rewind needs prompt_toolkit: pip install 'snapshotter[tui]'"
    )


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def test_list_json_agrees_with_what_the_view_read(played: Path, data_dir: Path) -> None:
    view = drive(played, data_dir, "")
    listed = json.loads(cli("list", "--json", cwd=played).out)
    assert [cp["id"] for cp in listed] == [cp.id for cp in view.checkpoints]
