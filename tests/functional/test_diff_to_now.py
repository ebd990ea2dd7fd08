"""``snapshotter diff``: to now, ``--stat`` laid out as git lays it out, ``--json``, colour (#15).

Checkpoints are recorded by ``snapshotter hook`` events (in-process, through
``cli.main``, as test_cli.py does); git itself is the oracle for the
``--stat`` layout and for where colours go.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import Run, edit_files, git, make_repo, run_cli, run_cli_in_process, write

SESSION = "sess-diff"


class Sn:
    """``sn("diff", "1")`` runs ``snapshotter diff 1`` through ``main``, as a user would."""

    def __call__(self, *args: Any, stdin: bytes | None = None) -> Run:
        return run_cli_in_process(*args, stdin=stdin)

    def event(self, root: Path, name: str, cwd: Path | None = None) -> None:
        payload = {"hook_event_name": name, "session_id": SESSION, "cwd": str(cwd or root)}
        r = self(("hook"), stdin=json.dumps(payload).encode())
        assert r.code == 0 and r.err == "", f"hook {name} failed: {r.err}"

    def turn(
        self,
        root: Path,
        edits: dict[str, str | bytes | None],
        cwd: Path | None = None,
        modes: dict[str, int] | None = None,
    ) -> None:
        """One agent turn that makes ``edits`` (None deletes the file) and ``modes``."""
        self.event(root, "turn_start", cwd)
        edit_files(root, edits)
        for rel, mode in (modes or {}).items():
            os.chmod(root / rel, mode)
        self.event(root, "turn_end", cwd)


@pytest.fixture
def sn(monkeypatch: pytest.MonkeyPatch) -> Sn:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    return Sn()


def newest_id(sn: Sn, root: Path) -> int:
    r = sn("list", "--json", "-C", root)
    ids = [cp["id"] for cp in json.loads(r.out)]
    assert ids, f"a checkpoint should have been recorded: {r.out}"
    return int(max(ids))


# -- diff ID --to-now / ID.. -----------------------------------------------------------


def test_to_now_includes_later_edits_and_files_the_checkpoint_did_not_touch(
    sn: Sn, repo: Path
) -> None:
    sn.turn(repo, {"src/app.py": "print('agent')\n"})
    cp = newest_id(sn, repo)
    write(repo, "src/app.py", "print('user')\n")  # the user edits after the checkpoint
    write(repo, "README.md", "# user too\n")
    write(repo, "notes.txt", "new\n")
    (repo / "src" / "util.py").unlink()

    r = sn("diff", cp, "--to-now", "-C", repo)

    assert r.code == 0, f"diff --to-now failed: {r.err}"
    assert "-print('hi')" in r.out and "+print('user')" in r.out, (
        f"from the checkpoint's before to the file as it is now: {r.out}"
    )
    assert "print('agent')" not in r.out, f"the in-between state is not shown: {r.out}"
    for expected in (
        "+++ b/README.md",
        "+# user too",
        "+++ b/notes.txt",
        "--- a/src/util.py",
        "+++ /dev/null",
    ):
        assert expected in r.out, f"every file that differs now is shown ({expected!r}): {r.out}"
    plain = sn("diff", cp, "-C", repo)
    assert "README.md" not in plain.out and "+print('agent')" in plain.out, (
        f"without --to-now the checkpoint's own before → after: {plain.out}"
    )


def test_dotted_spelling_is_to_now(sn: Sn, repo: Path) -> None:
    sn.turn(repo, {"src/app.py": "print('agent')\n"})
    write(repo, "README.md", "# later\n")

    dotted = sn("diff", "1..", "-C", repo)
    flag = sn("diff", "1", "--to-now", "-C", repo)

    assert dotted.code == 0 and dotted.out == flag.out, (
        f"`diff 1..` is `diff 1 --to-now`:\n{dotted.out}{dotted.err}\nvs\n{flag.out}"
    )
    assert "+# later" in dotted.out, dotted.out
    for bad in ("..", "..1", "-1"):
        r = sn("diff", bad, "-C", repo)
        assert r.code == 2, f"`diff {bad}` is a usage error (2), got {r.code}: {r.err}"
    for missing in ("1..2", "x.."):  # A..B and a message are spellings too (#26.1, #26.5)
        r = sn("diff", missing, "-C", repo)
        assert r.code == 1 and "no checkpoint" in r.err, f"`diff {missing}`: {r.code} {r.err}"


def test_to_now_stays_in_the_sessions_directory(sn: Sn, repo: Path) -> None:
    sub = repo / "src"
    sn.turn(repo, {"src/app.py": "print('agent')\n"}, cwd=sub)  # the session works in src/
    write(repo, "README.md", "# outside the session\n")
    write(repo, "src/util.py", "X = 99\n")

    r = sn("diff", "1..", "-C", repo)

    assert "+X = 99" in r.out and "+print('agent')" in r.out, f"src/ now: {r.out}"
    assert "README.md" not in r.out, f"a file outside the session's directory is left out: {r.out}"


def test_to_now_names_files_too_large_to_capture(sn: Sn, repo: Path) -> None:
    sn.turn(repo, {"src/app.py": "print('agent')\n"})
    write(repo, "huge.bin", b"\0" * (2 * 1024 * 1024 + 1))

    r = sn("diff", "1..", "--stat", "-C", repo)

    assert r.code == 0, r.err
    assert "huge.bin" not in r.out and re.search(r"huge\.bin.*skipped", r.err), (
        f"a new file over the size limit is named on stderr, not diffed: {r.out!r} {r.err!r}"
    )
    data = json.loads(sn("diff", "1..", "--json", "-C", repo).out)
    assert [s["path"] for s in data["skipped"]] == ["huge.bin"], data


def test_to_now_stat_counts_what_changed_since(sn: Sn, repo: Path) -> None:
    sn.turn(repo, {"src/app.py": "print('agent')\n"})
    write(repo, "src/app.py", "print('user')\nprint('more')\n")
    write(repo, "extra.txt", "1\n2\n3\n")

    r = sn("diff", "1", "--to-now", "--stat", "-C", repo)

    assert r.out == (
        " extra.txt  | 3 +++\n"
        " src/app.py | 3 ++-\n"
        " 2 files changed, 5 insertions(+), 1 deletion(-)\n"
    ), r.out


# -- --json ----------------------------------------------------------------------------


def files_by_path(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: {k: v for k, v in f.items() if k != "path"} for f in data["files"]}


def test_json_gives_status_line_counts_and_sizes(sn: Sn, repo: Path) -> None:
    write(repo, "logo.png", b"\x89PNG\0" + b"a" * 7)  # 12 bytes, binary
    sn.turn(
        repo,
        {
            "src/app.py": "print('a')\nprint('b')\n",
            "new.txt": "n\n",
            "src/util.py": None,
            "logo.png": b"\x89PNG\0" + b"b" * 35,
        },
    )

    r = sn("diff", "--json", "-C", repo)

    assert r.code == 0, r.err
    data = json.loads(r.out)  # one JSON document and nothing else
    assert data["checkpoint"] == 1 and data["to_now"] is False, data
    assert files_by_path(data) == {
        "logo.png": {
            "status": "modified",
            "binary": True,
            "added": None,
            "removed": None,
            "old_size": 12,
            "new_size": 40,
        },
        "new.txt": {
            "status": "added",
            "binary": False,
            "added": 1,
            "removed": 0,
            "old_size": None,
            "new_size": 2,
        },
        "src/app.py": {
            "status": "modified",
            "binary": False,
            "added": 2,
            "removed": 1,
            "old_size": 12,
            "new_size": 22,
        },
        "src/util.py": {
            "status": "deleted",
            "binary": False,
            "added": 0,
            "removed": 1,
            "old_size": 6,
            "new_size": None,
        },
    }, data


def test_json_to_now_and_a_type_change_is_one_entry(sn: Sn, repo: Path) -> None:
    sn.turn(repo, {"src/app.py": "print('agent')\n"})
    (repo / "README.md").unlink()
    os.symlink("src/app.py", repo / "README.md")  # later: the user swaps a file for a link

    data = json.loads(sn("diff", "1..", "--json", "-C", repo).out)

    assert data["to_now"] is True and data["to"] != data["from"], data
    found = files_by_path(data)
    assert found["README.md"] == {
        "status": "modified",
        "binary": False,
        "added": 1,
        "removed": 1,
        "old_size": 7,
        "new_size": 10,
    }, found
    assert found["src/app.py"]["status"] == "modified", found


# -- --stat, with git as the oracle ---------------------------------------------------

STAT_BEFORE: dict[str, str | bytes] = {
    "a.txt": "".join(f"{i}\n" for i in range(10)),
    "gone.txt": "bye\n",
    "img.bin": b"x\0y",
    "both.txt": "".join(f"line {i}\n" for i in range(40)),
    "mode.sh": "echo\n",
}
STAT_AFTER: dict[str, str | bytes | None] = {
    "a.txt": "".join(f"{i}\n" for i in range(300)),
    "gone.txt": None,
    "img.bin": b"xx\0" + b"y" * 14,
    "new.bin": b"\0\0",
    "both.txt": "".join(f"line {i}\n" for i in range(0, 40, 3)) + "tail\n",
    "some/very/long/directory/name/that/goes/on/file_with_a_long_name.txt": "1\n2\n3\n4\n5\n",
    "empty.txt": "",
}


@pytest.mark.parametrize("columns", [None, "80", "40", "200", "10"])
def test_stat_matches_git(
    sn: Sn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> None:
    root = make_repo(tmp_path / "r", STAT_BEFORE)
    sn.turn(root, STAT_AFTER, modes={"mode.sh": 0o755})
    git(root, "add", "-A")
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)

    ours = sn("diff", "--stat", "-C", root).out
    theirs = git(root, "-c", "core.quotePath=false", "diff", "--cached", "--stat", "--no-renames")

    assert ours == theirs, (
        f"--stat should be laid out as git's (COLUMNS={columns}):\nours:\n{ours}\ngit:\n{theirs}"
    )


def test_stat_pads_wide_names_by_their_columns_as_git(sn: Sn, tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    sn.turn(root, {"unicode/naïve-日本.txt": "x\n", "unicode/plain.txt": "1\n2\n"})
    git(root, "add", "-A")

    ours = sn("diff", "--stat", "-C", root).out

    assert ours == git(root, "-c", "core.quotePath=false", "diff", "--cached", "--stat"), ours


def test_stat_of_binary_files_only_matches_git(sn: Sn, tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"img.bin": b"x\0y", "text.txt": "t\n"})
    sn.turn(root, {"img.bin": b"x\0" + b"z" * 10, "b.bin": b"\0", "img2.bin": b"\0" * 1234})
    git(root, "add", "-A")

    ours = sn("diff", "--stat", "-C", root).out

    assert ours == git(root, "diff", "--cached", "--stat", "--no-renames"), ours
    assert " img.bin  | Bin 3 -> 12 bytes\n" in ours, ours


# -- colour ---------------------------------------------------------------------------

SGR = re.compile(rb"\x1b\[([0-9;]*)m")


def rendered(data: bytes) -> list[tuple[str, frozenset[str]]]:
    """What a terminal shows: each character with the SGR attributes it is drawn in."""
    state: dict[str, str] = {}
    shown: list[tuple[str, frozenset[str]]] = []
    pos = 0
    for match in [*SGR.finditer(data), None]:
        text = data[pos : match.start() if match else len(data)].decode(errors="replace")
        shown.extend((ch, frozenset() if ch == "\n" else frozenset(state.values())) for ch in text)
        if match is None:
            break
        for code in match.group(1).decode().split(";"):
            if code in ("", "0"):
                state.clear()
            else:  # 1 bold, 3x foreground, 4x background
                state["bold" if code == "1" else code[:1]] = code
        pos = match.end()
    return shown


def test_colours_are_gits(sn: Sn, tmp_path: Path) -> None:
    before: dict[str, str | bytes] = {
        "p.py": "def foo():\n" + "".join(f"    v{i} = {i}\n" for i in range(8)),
        "f.txt": "a\nb\nc\n",
        "gone.txt": "x\n",
        "img.bin": b"x\0y",
        "run.sh": "echo\n",
    }
    root = make_repo(tmp_path / "r", before)
    sn.turn(
        root,
        {
            "p.py": str(before["p.py"]).replace("v7 = 7", "v7 = 70"),
            "f.txt": "a\nB\nc",
            "gone.txt": None,
            "img.bin": b"xy\0",
            "new.txt": "n\n",
        },
        modes={"run.sh": 0o755},
    )
    git(root, "add", "-A")

    ours = sn("diff", "1", "--color=always", "-C", root).out.encode()
    theirs = subprocess.run(
        ["git", "diff", "--cached", "--no-renames", "--color=always"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout

    assert SGR.sub(b"", ours) == SGR.sub(b"", theirs), "the same diff text as git"
    assert rendered(ours) == rendered(theirs), (
        f"coloured as git colours it:\nours:\n{ours!r}\ngit:\n{theirs!r}"
    )
    assert b"\x1b[36m@@" in ours and b"\x1b[1mdiff --git" in ours, ours


def test_stat_colours_the_graph(sn: Sn, repo: Path) -> None:
    sn.turn(repo, {"src/app.py": "print('x')\nprint('y')\n"})
    r = sn("diff", "--stat", "--color=always", "-C", repo)
    assert "| 3 \x1b[32m++\x1b[m\x1b[31m-\x1b[m\n" in r.out, f"+ green, - red: {r.out!r}"


def test_no_colour_when_not_a_terminal_or_asked_never(
    sn: Sn, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sn.turn(repo, {"src/app.py": "print('x')\n"})
    for args in ([], ["--color=auto"], ["--color=never"], ["--stat"]):
        r = sn("diff", *args, "-C", repo)
        assert r.code == 0 and "\x1b[" not in r.out, f"no colour codes for {args}: {r.out!r}"
    monkeypatch.setenv("NO_COLOR", "1")
    forced = sn("diff", "--color=always", "-C", repo)
    assert "\x1b[31m-print('hi')\x1b[m" in forced.out, (
        f"--color=always wins over NO_COLOR: {forced.out!r}"
    )
    bad = sn("diff", "--color=sometimes", "-C", repo)
    assert bad.code == 2, f"an unknown --color is a usage error: {bad.err}"


def test_diff_is_gits_bytes_for_non_utf8_content(sn: Sn, tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"latin.txt": b"caf\xe9\n", "keep.txt": "k\n"})
    sn.turn(root, {"latin.txt": b"na\xefve \xff\n", "crlf.txt": b"a\r\nb\r\n"})
    git(root, "add", "-A")

    done = run_cli("diff", "1", "-C", root, text=False)  # its own process: raw stdout
    assert done.returncode == 0, done.stderr
    ours = done.stdout
    theirs = subprocess.run(
        ["git", "diff", "--cached", "--no-renames"], cwd=root, capture_output=True, check=True
    ).stdout

    assert ours == theirs, f"the diff is git's, byte for byte:\nours {ours!r}\ngit  {theirs!r}"
