"""Issue 26.1, 26.2, 26.5: save points by name, sessions by prefix, git's ``A..B``.

What a user means by ``snapshotter checkpoint -m before`` is *remember this
state under this name*; the agent's checkpoints stay in view beside it, and a
reset or diff finds it by that name. Commands run in-process through
``cli.main``; checkpoints come from ``snapshotter hook`` events, as an agent
records them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import Run, edit_files, event, run_cli_in_process

AGENT = "eacb42e6-5c1b-4d2a-9f1e-agent"


def sn(*args: str | Path) -> Run:
    return run_cli_in_process(*args)


def agent_turn(root: Path, edits: dict[str, str | bytes | None], prompt: str = "") -> None:
    """One docker-agent turn through ``snapshotter hook`` (in-process)."""
    for name, fields in (("turn_start", {"prompt": prompt}), ("turn_end", {})):
        if name == "turn_end":
            edit_files(root, edits)
        r = run_cli_in_process(
            "hook", stdin=json.dumps(event(name, root, AGENT, **fields)).encode()
        )
        assert r.code == 0 and not r.err, f"hook {name}: {r.code} {r.err}"


def listed(root: Path, *extra: str) -> list[dict[str, Any]]:
    r = sn("list", "-C", root, "--json", *extra)
    assert r.code == 0, f"list --json failed: {r.err}"
    found: list[dict[str, Any]] = json.loads(r.out)
    return found


def test_checkpoint_with_a_message_is_a_save_point_even_with_nothing_changed(repo: Path) -> None:
    first = sn("checkpoint", "-C", repo, "-m", "fresh")
    assert first.code == 0, f"a fresh repo: the message is kept, not dropped: {first.err}"
    assert first.out.startswith("checkpoint 1: save point  fresh"), first.out
    assert sn("capture", "-C", repo).code == 0
    again = sn("checkpoint", "-C", repo, "-m", "before")
    assert again.code == 0, f"after a capture, nothing changed: still recorded: {again.err}"
    points = listed(repo)
    assert [(c["label"], c["files"]) for c in points] == [("fresh", []), ("before", [])], points
    human = sn("list", "-C", repo).out
    assert "mark" in human and "(save point)" in human, human
    assert sn("undo", "-C", repo).code == 3, "a save point changed nothing: nothing to undo"
    plain = sn("checkpoint", "-C", repo)
    assert plain.code == 3, "without a message and with nothing changed: nothing to record"


def test_a_save_point_keeps_the_agent_in_view_and_reset_to_its_name_goes_back(
    repo: Path,
) -> None:
    agent_turn(repo, {"a.txt": "one\n"}, prompt="write a")
    assert sn("checkpoint", "-C", repo, "-m", "before").code == 0
    agent_turn(repo, {"a.txt": "two\n", "b.txt": "new\n"}, prompt="rewrite a, add b")
    shown = [(c["id"], c["session_id"]) for c in listed(repo)]
    assert shown == [(1, AGENT), (2, "cli"), (3, AGENT)], f"yours beside the agent's: {shown}"
    since = sn("diff", "-C", repo, "before..", "--stat", "--no-pager")
    assert since.code == 0 and "a.txt" in since.out and "b.txt" in since.out, since
    back = sn("reset", "-C", repo, "--to", "before")
    assert back.code == 0, back.err
    assert back.out.startswith("reset checkpoint 3:"), back.out
    assert (repo / "a.txt").read_text() == "one\n" and not (repo / "b.txt").exists()
    assert sn("redo", "-C", repo).code == 0, "a plain redo finds the reset"
    assert (repo / "a.txt").read_text() == "two\n" and (repo / "b.txt").exists()


def test_reset_takes_its_session_from_the_id_as_show_does(repo: Path) -> None:
    agent_turn(repo, {"a.txt": "one\n"})
    agent_turn(repo, {"a.txt": "two\n"})
    edit_files(repo, {"mine.txt": "by hand\n"})
    assert sn("checkpoint", "-C", repo, "-m", "my edit").code == 0
    assert sn("show", "-C", repo, "1").code == 0
    done = sn("reset", "-C", repo, "1")
    assert done.code == 0, f"reset 1 finds checkpoint 1 of the agent's session: {done.err}"
    assert (repo / "a.txt").read_text() == "one\n"
    assert not (repo / "mine.txt").exists(), "yours after 1 is reverted too, as list shows it"


def test_a_plain_undo_reverts_the_newest_checkpoint_yours_then_the_agents(repo: Path) -> None:
    agent_turn(repo, {"a.txt": "agent\n"})
    edit_files(repo, {"mine.txt": "by hand\n"})
    assert sn("checkpoint", "-C", repo, "-m", "mine").code == 0
    first = sn("undo", "-C", repo)
    assert first.code == 0 and first.out.startswith("undid checkpoint 2"), first.out
    assert not (repo / "mine.txt").exists() and (repo / "a.txt").exists()
    assert sn("redo", "-C", repo).code == 0, "redo finds the undo of yours"
    assert (repo / "mine.txt").exists()
    assert sn("undo", "-C", repo).out.startswith("undid checkpoint 2")
    second = sn("undo", "-C", repo)
    assert second.out.startswith("undid checkpoint 1"), f"then the agent's: {second.out}"


def test_diff_between_two_checkpoints(repo: Path) -> None:
    agent_turn(repo, {"a.txt": "one\n"})
    agent_turn(repo, {"b.txt": "bee\n"})
    agent_turn(repo, {"c.txt": "sea\n"})
    r = sn("diff", "-C", repo, "1..2", "--json")
    assert r.code == 0, r.err
    files = {f["path"]: f["status"] for f in json.loads(r.out)["files"]}
    assert files == {"a.txt": "added", "b.txt": "added"}, f"before 1 to after 2: {files}"
    backwards = sn("diff", "-C", repo, "3..1")
    assert backwards.code == 2, backwards
    backwards.one_line_error("comes before")


def test_undo_with_an_id_says_what_to_run_instead(repo: Path) -> None:
    agent_turn(repo, {"a.txt": "one\n"})
    r = sn("undo", "-C", repo, "3")
    assert r.code == 2, r
    r.one_line_error("snapshotter reset 3", "snapshotter restore 3 -- PATH")


def test_a_session_by_unique_prefix_and_an_unknown_one_is_an_error(repo: Path) -> None:
    agent_turn(repo, {"a.txt": "one\n"})
    by_prefix = sn("undo", "-C", repo, "--session", "eacb42e6")
    assert by_prefix.code == 0, f"a unique prefix selects the session: {by_prefix.err}"
    unknown = sn("list", "-C", repo, "--session", "eacb42e7")
    assert unknown.code == 1, unknown
    unknown.one_line_error("no session eacb42e7", f"did you mean {AGENT}?")
    nope = sn("redo", "-C", repo, "--session", "nope")
    assert nope.code == 1 and "no session nope" in nope.err, nope
