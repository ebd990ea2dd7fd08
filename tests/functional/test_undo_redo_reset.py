"""Undo, redo and reset through the controller a runtime holds (SPEC §5, §8).

Events go in-process through Registry + register_snapshot + Executor (the same
path as a Python runtime); undo/redo/reset go through the SnapshotController.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import hook_input, make_repo, worktree_entries, write

from snapshotter.cli.main import main as cli_main
from snapshotter.errors import Conflict, NothingToDo, SnapshotterError
from snapshotter.hooks import events as ev
from snapshotter.hooks.builtin import SnapshotController, register_snapshot
from snapshotter.hooks.registry import Executor, HooksConfig, Registry
from snapshotter.logfile import log_path
from snapshotter.models import Checkpoint

BUILTIN = [{"type": "builtin", "command": "snapshot"}]
CONFIG: dict[str, Any] = {
    event: ([{"matcher": "*", "hooks": BUILTIN}] if event in ev.TOOL_EVENTS else BUILTIN)
    for event in ev.SNAPSHOT_EVENTS
}
USER_BYTES = b"user's edit\r\nwith CRLF\x00\xff and no newline"


class Agent:
    """One session driving the builtin through the executor."""

    def __init__(self, executor: Executor, root: Path, session_id: str) -> None:
        self.executor = executor
        self.root = root
        self.session_id = session_id

    def send(self, event: str, **fields: Any) -> None:
        sent = hook_input(event, self.root, self.session_id, **fields)
        result = self.executor.dispatch(event, sent)
        assert result.allowed and result.exit_code == 0, f"{event} failed: {result.stderr}"

    def start(self) -> Agent:
        self.send(ev.SESSION_START, source="startup")
        return self

    def turn_start(self) -> None:
        self.send(ev.TURN_START)

    def turn_end(self, reason: str = "normal") -> None:
        self.send(ev.TURN_END, reason=reason)

    def pre(self, tool: str, tool_use_id: str) -> None:
        self.send(ev.PRE_TOOL_USE, tool_name=tool, tool_use_id=tool_use_id)

    def post(self, tool: str, tool_use_id: str) -> None:
        self.send(ev.POST_TOOL_USE, tool_name=tool, tool_use_id=tool_use_id)

    def tool(self, tool: str, tool_use_id: str, edit: Callable[[], object]) -> None:
        self.pre(tool, tool_use_id)
        edit()
        self.post(tool, tool_use_id)

    def turn(self, *edits: Callable[[], object], reason: str = "normal") -> None:
        """A turn whose edits are each made by one tool call."""
        self.turn_start()
        for i, edit in enumerate(edits):
            self.tool(f"tool{i}", f"{self.session_id}-{id(edit)}-{i}", edit)
        self.turn_end(reason)


class Rig:
    def __init__(self, root: Path, data_dir: Path) -> None:
        self.root = root
        self.data_dir = data_dir
        registry = Registry()
        self.ctl: SnapshotController = register_snapshot(registry, data_dir_path=data_dir)
        self.executor = Executor(HooksConfig.parse(CONFIG), registry)

    def agent(self, session_id: str) -> Agent:
        return Agent(self.executor, self.root, session_id).start()

    def cps(self, session_id: str | None = None) -> list[Checkpoint]:
        if session_id is None:
            return self.ctl.list(self.root, all_sessions=True)
        return self.ctl.list(self.root, session_id)

    def files(self) -> dict[str, bytes]:
        return worktree_entries(self.root)

    def state_file(self) -> Path:
        found = list((self.data_dir / "snapshot").glob("*/state.json"))
        assert len(found) == 1, f"expected one store, found {found}"
        return found[0]


def edit(root: Path, rel: str, content: str | bytes) -> Callable[[], Path]:
    return lambda: write(root, rel, content)


def delete(root: Path, rel: str) -> Callable[[], None]:
    return lambda: (root / rel).unlink()


@pytest.fixture
def rig(repo: Path, data_dir: Path) -> Rig:
    return Rig(repo, data_dir)


def test_undo_reverts_a_turn_with_its_tools_exactly_once(rig: Rig) -> None:
    root = rig.root
    agent = rig.agent("s1")
    agent.turn(edit(root, "README.md", "# turn one\n"))
    after_first = rig.files()
    agent.turn(
        edit(root, "src/app.py", "print('v1')\n"),
        edit(root, "src/app.py", "print('v2')\n"),  # a second tool on the same file
        edit(root, "src/pkg/deep/new.py", "NEW = 1\n"),
        delete(root, "src/util.py"),
    )
    cps = rig.cps("s1")
    turn2 = cps[-1]
    assert turn2.kind == "turn", f"newest checkpoint should be the second turn: {cps}"
    children = [cp for cp in cps if cp.parent == turn2.id]
    assert len(children) == 4, f"the four tool checkpoints should nest under the turn: {cps}"

    report = rig.ctl.undo_last(root, "s1")
    assert report.checkpoint == [turn2.id], f"undo should name the turn only: {report}"
    assert rig.files() == after_first, (
        "undo of a turn must put every file back to the turn's start, tools not re-applied"
    )
    assert not (root / "src/pkg").exists(), "directories left empty by the undo must go"
    assert sorted(report.removed) == ["src/pkg/deep/new.py"], f"removed: {report.removed}"
    assert sorted(report.restored) == ["src/app.py", "src/util.py"], f"restored: {report}"
    undone = {cp.id for cp in rig.cps("s1") if cp.undone}
    assert undone == {turn2.id, *(c.id for c in children)}, f"undone flags: {undone}"

    rig.ctl.undo_last(root, "s1")
    assert (root / "README.md").read_text() == "# demo\n", "second undo reverts turn one"
    with pytest.raises(NothingToDo):
        rig.ctl.undo_last(root, "s1")


def test_undo_of_a_top_level_tool(rig: Rig) -> None:
    """Tool events only (no turn wired): each tool is its own top-level checkpoint."""
    root = rig.root
    agent = rig.agent("tools")
    agent.tool("write_file", "t1", edit(root, "a.txt", "a\n"))
    agent.tool("write_file", "t2", edit(root, "b.txt", "b\n"))
    cps = rig.cps("tools")
    assert [(cp.kind, cp.parent) for cp in cps] == [("tool", None), ("tool", None)], cps
    rig.ctl.undo_last(root, "tools")
    assert (root / "a.txt").exists() and not (root / "b.txt").exists(), "undo the newest tool"


def test_undo_refuses_a_file_the_user_changed_force_and_redo_restore_it(rig: Rig) -> None:
    root = rig.root
    agent = rig.agent("s1")
    agent.turn(edit(root, "src/app.py", "print('agent')\n"), edit(root, "new.txt", "n\n"))
    (root / "src/app.py").write_bytes(USER_BYTES)  # the user edits after the checkpoint
    before_refusal = rig.files()
    state_before = rig.state_file().read_bytes()

    with pytest.raises(Conflict) as refused:
        rig.ctl.undo_last(root, "s1")
    assert refused.value.exit_code == 4, "a refused undo exits 4"
    assert refused.value.paths == ["src/app.py"], f"refusal must name the file: {refused.value}"
    assert "src/app.py" in str(refused.value), "the message names the changed file"
    assert "force=True" in str(refused.value) and "--force" not in str(refused.value), (
        f"an API user is told the parameter, not the CLI option (#26.6): {refused.value}"
    )
    assert rig.files() == before_refusal, "a refused undo must not touch the worktree"
    assert rig.state_file().read_bytes() == state_before, "a refused undo must not change state"
    with pytest.raises(NothingToDo):
        rig.ctl.redo(root, "s1")

    rig.ctl.undo_last(root, "s1", force=True)
    assert (root / "src/app.py").read_bytes() == b"print('hi')\n", "force puts the original back"
    assert not (root / "new.txt").exists(), "force undo removes the added file too"

    report = rig.ctl.redo(root, "s1")
    assert (root / "src/app.py").read_bytes() == USER_BYTES, (
        "redo must bring back the user's later edit byte for byte"
    )
    assert rig.files() == before_refusal, "redo restores exactly the state before the undo"
    assert sorted(report.restored) == ["new.txt", "src/app.py"], f"redo report: {report}"
    assert not any(cp.undone for cp in rig.cps("s1")), "redo clears the undone flags"


def test_redo_refuses_when_the_user_changed_an_undone_file(rig: Rig) -> None:
    root = rig.root
    agent = rig.agent("s1")
    agent.turn(edit(root, "src/app.py", "print('agent')\n"))
    rig.ctl.undo_last(root, "s1")
    (root / "src/app.py").write_bytes(USER_BYTES)
    with pytest.raises(Conflict) as refused:
        rig.ctl.redo(root, "s1")
    assert refused.value.paths == ["src/app.py"], f"redo refusal names the file: {refused.value}"
    assert (root / "src/app.py").read_bytes() == USER_BYTES, "refused redo changes nothing"
    rig.ctl.redo(root, "s1", force=True)
    assert (root / "src/app.py").read_text() == "print('agent')\n", "forced redo re-applies"
    rig.ctl.redo(root, "s1")  # #12.1: the bytes a forced redo overwrote are not lost
    assert (root / "src/app.py").read_bytes() == USER_BYTES, "one more redo puts them back"


def test_reset_to_id_and_to_original_with_redo(rig: Rig) -> None:
    root = rig.root
    original = rig.files()
    agent = rig.agent("s1")
    agent.turn(edit(root, "one.txt", "1\n"))
    after_one = rig.files()
    agent.turn(edit(root, "src/app.py", "print('two')\n"))
    agent.turn(delete(root, "README.md"), edit(root, "three/x.txt", "3\n"))
    after_three = rig.files()
    first = rig.cps("s1")[0]

    report = rig.ctl.reset(root, first.id, "s1")
    assert rig.files() == after_one, "reset ID reverts every checkpoint after ID, keeps ID"
    assert first.id not in report.checkpoint, f"reset must keep checkpoint {first.id}: {report}"
    rig.ctl.redo(root, "s1")
    assert rig.files() == after_three, "one redo reverses one whole reset"

    rig.ctl.reset(root, None, "s1")
    assert rig.files() == original, "reset to original goes back before the first change"
    assert all(cp.undone for cp in rig.cps("s1")), "every checkpoint is undone after --original"
    with pytest.raises(NothingToDo):
        rig.ctl.reset(root, None, "s1")
    rig.ctl.redo(root, "s1")
    assert rig.files() == after_three, "redo after reset --original restores everything"


def test_reset_to_a_tool_inside_a_turn_keeps_that_tool(rig: Rig) -> None:
    root = rig.root
    agent = rig.agent("s1")
    agent.turn(edit(root, "a.txt", "a\n"), edit(root, "b.txt", "b\n"))
    tool_a = next(
        cp for cp in rig.cps("s1") if cp.kind == "tool" and any(f.path == "a.txt" for f in cp.files)
    )
    rig.ctl.reset(root, tool_a.id, "s1")
    assert (root / "a.txt").read_text() == "a\n", "the kept tool's change stays"
    assert not (root / "b.txt").exists(), "the later tool in the same turn is reverted"


def test_nothing_to_undo_or_redo(rig: Rig, tmp_path: Path) -> None:
    root = rig.root
    with pytest.raises(NothingToDo) as no_store:
        rig.ctl.undo_last(root)
    assert no_store.value.exit_code == 3, "nothing to do exits 3"
    with pytest.raises(NothingToDo):
        rig.ctl.redo(root)
    agent = rig.agent("s1")
    agent.turn_start()
    agent.turn_end()  # a no-op turn records nothing
    assert rig.cps() == [], f"a no-op turn must record nothing: {rig.cps()}"
    with pytest.raises(NothingToDo):
        rig.ctl.undo_last(root, "s1")
    with pytest.raises(NothingToDo):
        rig.ctl.redo(root, "s1")
    other = make_repo(tmp_path / "other", {"f.txt": "x\n"})
    assert rig.ctl.list(other) == [], "list of a worktree without a store is empty"


def test_cli_exit_codes_for_nothing_to_do_and_refusal(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    root = rig.root

    def run(*args: str) -> int:
        with pytest.raises(SystemExit) as done:
            cli_main(["--data-dir", str(rig.data_dir), *args])
        return int(done.value.code or 0)

    assert run("undo", "-C", str(root)) == 3, "undo with no store exits 3"
    agent = rig.agent("s1")
    agent.turn(edit(root, "src/app.py", "print('agent')\n"))
    write(root, "src/app.py", "user\n")
    capsys.readouterr()
    assert run("undo", "-C", str(root)) == 4, "undo of a file changed since exits 4"
    err = capsys.readouterr().err
    assert "src/app.py" in err and "Traceback" not in err, f"refusal message: {err!r}"
    assert run("undo", "-C", str(root), "--force") == 0, "--force goes ahead"
    assert run("undo", "-C", str(root)) == 3, "nothing left to undo exits 3"


def test_two_sessions_never_undo_each_others_files(rig: Rig) -> None:
    root = rig.root
    a, b = rig.agent("A"), rig.agent("B")
    a.turn_start()
    b.turn_start()
    a.tool("write_file", "a-1", edit(root, "a.txt", "from A\n"))
    b.tool("write_file", "b-1", edit(root, "b.txt", "from B\n"))
    a.turn_end()
    b.turn_end()

    for session, mine in (("A", "a.txt"), ("B", "b.txt")):
        paths = {f.path for cp in rig.cps(session) for f in cp.files}
        assert paths == {mine}, f"session {session} recorded {paths}, expected only {mine}"

    rig.ctl.undo_last(root, "A")
    assert not (root / "a.txt").exists(), "undo of A removes A's file"
    assert (root / "b.txt").read_text() == "from B\n", "undo of A must not touch B's file"
    rig.ctl.redo(root, "A")
    assert (root / "a.txt").read_text() == "from A\n", "redo of A puts A's file back"
    rig.ctl.undo_last(root, "B")
    assert not (root / "b.txt").exists(), "undo of B removes B's file"
    assert (root / "a.txt").read_text() == "from A\n", "undo of B must not touch A's file"
    with pytest.raises(NothingToDo):
        rig.ctl.undo_last(root, "B")
    assert (root / "a.txt").exists(), "B having nothing left must not fall back to A's work"


def test_two_sessions_with_interleaved_tool_calls(rig: Rig) -> None:
    """A's and B's tool spans overlap: B's pre comes before A's post."""
    root = rig.root
    a, b = rig.agent("A"), rig.agent("B")
    a.turn_start()
    b.turn_start()
    a.pre("edit_file", "a-1")
    b.pre("edit_file", "b-1")
    write(root, "src/app.py", "print('A')\n")
    a.post("edit_file", "a-1")
    write(root, "src/util.py", "X = 'B'\n")
    b.post("edit_file", "b-1")
    b.turn_end()
    a.turn_end()

    for session, mine in (("A", "src/app.py"), ("B", "src/util.py")):
        paths = {f.path for cp in rig.cps(session) for f in cp.files}
        assert paths == {mine}, f"session {session} recorded {paths}, expected only {mine}"
    rig.ctl.undo_last(root, "B")
    assert (root / "src/util.py").read_text() == "X = 1\n", "undo of B reverts B's file"
    assert (root / "src/app.py").read_text() == "print('A')\n", "undo of B keeps A's file"
    rig.ctl.undo_last(root, "A")
    assert (root / "src/app.py").read_text() == "print('hi')\n", "undo of A reverts A's file"


def test_a_new_checkpoint_clears_the_redo_stack(rig: Rig) -> None:
    root = rig.root
    a, b = rig.agent("A"), rig.agent("B")
    a.turn(edit(root, "a.txt", "a\n"))
    rig.ctl.undo_last(root, "A")
    b.turn(edit(root, "b.txt", "b\n"))  # another session's checkpoint leaves A's redo alone
    rig.ctl.redo(root, "A")
    assert (root / "a.txt").read_text() == "a\n", "A's redo survives B's new checkpoint"

    rig.ctl.undo_last(root, "A")
    a.turn(edit(root, "c.txt", "c\n"))
    with pytest.raises(NothingToDo):
        rig.ctl.redo(root, "A")
    assert not (root / "a.txt").exists(), "the cleared redo must not have re-applied a.txt"


def test_dry_run_changes_nothing(rig: Rig) -> None:
    root = rig.root
    agent = rig.agent("s1")
    agent.turn(edit(root, "src/app.py", "print('one')\n"))
    agent.turn(edit(root, "new/file.txt", "n\n"), delete(root, "README.md"))
    files = rig.files()
    cps = rig.cps()

    report = rig.ctl.undo_last(root, "s1", dry_run=True)
    assert report.dry_run, "the report says it was a dry run"
    assert report.restored == ["README.md"] and report.removed == ["new/file.txt"], (
        f"a dry run reports what it would do: {report}"
    )
    rig.ctl.reset(root, None, "s1", dry_run=True)
    assert rig.files() == files, "dry-run undo/reset must not touch the worktree"
    assert rig.cps() == cps, "dry-run undo/reset must not mark checkpoints undone"
    with pytest.raises(NothingToDo):
        rig.ctl.redo(root, "s1")  # a dry run pushes nothing on the redo stack

    rig.ctl.undo_last(root, "s1")
    undone_files, undone_cps = rig.files(), rig.cps()
    rig.ctl.redo(root, "s1", dry_run=True)
    assert rig.files() == undone_files, "dry-run redo must not touch the worktree"
    assert rig.cps() == undone_cps, "dry-run redo must not clear undone flags"
    rig.ctl.redo(root, "s1")
    assert rig.files() == files, "the real redo still works after a dry run"


@pytest.mark.parametrize(
    "session_id",
    [
        "../../etc",
        "../../../../tmp/evil",
        "/etc/passwd",
        "a/../../b",
        "..",
        "x\\..\\..\\y",
        "nul\x00byte",
    ],
)
def test_hostile_session_ids_stay_inside_the_data_dir(
    rig: Rig, session_id: str, hermetic: Path, tmp_path: Path
) -> None:
    def outside() -> set[str]:
        found = set()
        for base in (hermetic, tmp_path):
            for dirpath, dirs, names in os.walk(base):
                for name in [*dirs, *names]:
                    full = Path(dirpath) / name
                    if rig.data_dir in full.parents or full == rig.data_dir:
                        continue
                    if rig.root in full.parents:
                        continue
                    found.add(str(full))
        return found

    seen = outside()
    root = rig.root
    agent = rig.agent(session_id)
    agent.turn(edit(root, "src/app.py", "print('evil')\n"))
    assert {cp.session_id for cp in rig.cps()} == {session_id}, "the session id is kept as is"
    rig.ctl.undo_last(root, session_id)
    rig.ctl.redo(root, session_id)
    assert outside() == seen, f"files appeared outside the data dir: {outside() - seen}"
    store_dirs = list((rig.data_dir / "snapshot").iterdir())
    for dirpath, dirs, names in os.walk(rig.data_dir):
        for name in [*dirs, *names]:
            assert name not in ("etc", "evil", "b", "y", "passwd"), (
                f"a path from the session id was created: {Path(dirpath) / name}"
            )
    assert not log_path(rig.data_dir).exists(), (
        f"hostile session id caused failures: {log_path(rig.data_dir).read_text()}"
    )
    assert len([p for p in store_dirs if p.is_dir()]) == 1, f"one store only: {store_dirs}"


def test_undo_and_redo_during_an_open_turn_are_not_that_turns_change(rig: Rig) -> None:
    """A's undo and redo happen while B's turn is open: B must not record them."""
    root = rig.root
    a, b = rig.agent("A"), rig.agent("B")
    a.turn(edit(root, "a.txt", "from A\n"), delete(root, "README.md"))
    b.turn_start()
    b.pre("write_file", "b-1")  # B's tool is open across the undo too
    rig.ctl.undo_last(root, "A")
    write(root, "b.txt", "from B\n")
    b.post("write_file", "b-1")
    b.turn_end()
    paths = {f.path for cp in rig.cps("B") for f in cp.files}
    assert paths == {"b.txt"}, f"B recorded {paths}: A's undo must not count as B's change"
    rig.ctl.undo_last(root, "B")
    assert not (root / "a.txt").exists(), "undo of B must not re-apply A's undone change"
    assert (root / "README.md").exists(), "undo of B must not delete README.md again"
    assert not (root / "b.txt").exists(), "undo of B removes B's file"

    rig.ctl.redo(root, "B")
    b.turn_start()
    rig.ctl.redo(root, "A")  # now a redo while B's turn is open
    b.turn_end()
    assert len(rig.cps("B")) == 2, f"A's redo must not give B a checkpoint: {rig.cps('B')}"

    a.turn_start()
    rig.ctl.undo_last(root, "A")  # an undo during the session's own open turn
    a.turn_end()
    assert [cp.undone for cp in rig.cps("A") if cp.parent is None] == [True], (
        f"undo during A's own turn must not be recorded as a new turn: {rig.cps('A')}"
    )
    assert (root / "b.txt").read_text() == "from B\n", "B's file survives all of A's work"


def test_undo_leaves_a_skipped_large_file_alone(rig: Rig) -> None:
    root = rig.root
    big = b"\x00big" * (3 * 1024 * 1024 // 4)  # over the 2 MiB limit for new files
    agent = rig.agent("s1")
    agent.turn(edit(root, "src/app.py", "print('agent')\n"), edit(root, "data/big.bin", big))
    turn = rig.cps("s1")[-1]
    assert [s.path for s in turn.skipped] == ["data/big.bin"], f"skip recorded: {turn.skipped}"
    assert "data/big.bin" not in {f.path for f in turn.files}, "a skipped file is not a change"
    report = rig.ctl.undo_last(root, "s1")
    assert (root / "src/app.py").read_text() == "print('hi')\n", "the captured change reverts"
    assert (root / "data/big.bin").read_bytes() == big, "the skipped file is left alone"
    assert "data/big.bin" not in report.removed + report.restored, f"report: {report}"


def test_reset_to_another_sessions_checkpoint_is_refused(rig: Rig) -> None:
    root = rig.root
    a, b = rig.agent("A"), rig.agent("B")
    a.turn(edit(root, "a.txt", "a\n"))
    b.turn(edit(root, "b.txt", "b\n"))
    a_turn = rig.cps("A")[-1]
    with pytest.raises(SnapshotterError) as refused:
        rig.ctl.reset(root, a_turn.id, "B")
    assert not isinstance(refused.value, NothingToDo), f"an id from A is an error: {refused}"
    assert (root / "a.txt").exists() and (root / "b.txt").exists(), "nothing was reverted"


def test_a_redo_is_not_claimed_by_a_later_unpaired_tool(tmp_path: Path, data_dir: Path) -> None:
    from snapshotter.engine import Engine
    from snapshotter.history.recorder import Recorder
    from snapshotter.history.undo import redo, undo_last

    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    recorder = Recorder(engine, "s")
    recorder.turn_start()
    write(root, "a.txt", "agent\n")
    assert recorder.turn_end("normal") is not None
    undo_last(engine, "s")
    redo(engine, "s")
    write(root, "b.txt", "tool\n")
    cp = recorder.tool_end(None, "write_file")  # its pre_tool_use never came
    assert cp is not None and [f.path for f in cp.files] == ["b.txt"], (
        f"the redo is nobody's change; only the tool's file is recorded: {cp}"
    )


def test_the_file_cap_never_blocks_the_way_back(repo: Path, data_dir: Path) -> None:
    """Recorded with a raised cap (--arg max_files), undone where the default cap is lower."""
    from snapshotter.engine import Engine
    from snapshotter.history import undo
    from snapshotter.hooks.builtin import SnapshotBuiltin

    for i in range(20):
        write(repo, f"many/f{i}.txt", f"{i}\n")
    builtin = SnapshotBuiltin(data_dir_path=data_dir)

    builtin.handle(hook_input("turn_start", repo), ["max_files=1000"])
    write(repo, "src/app.py", "print('agent')\n")
    cp = builtin.handle(hook_input("turn_end", repo), ["max_files=1000"])
    assert cp is not None
    capped = Engine.open(repo, data_dir_path=data_dir, max_files=5)  # below this tree's size
    report = undo.undo_last(capped, "s")
    assert report.restored == ["src/app.py"], report
    assert undo.redo(capped, "s").restored == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "print('agent')\n"
