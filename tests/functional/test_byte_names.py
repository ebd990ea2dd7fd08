"""File names that are not UTF-8 are bytes end to end (issue 13 §8).

A latin-1 ``caf\\xe9.txt`` the agent overwrites is in the checkpoint, shown
escaped the way git shows it (``"caf\\351.txt"``), and undo puts back its exact
bytes; a capture under a directory whose name is not UTF-8 works. Real git,
real ``snapshotter`` processes (the hook and the CLI).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from builders import event, git, hook_ok, make_repo, run_cli, write

from snapshotter import names
from snapshotter.models import FileChange

CAFE = os.fsdecode(b"caf\xe9.txt")  # latin-1 "café.txt": not UTF-8
ODD_DIR = os.fsdecode(b"d\xff")
INNER = f"{ODD_DIR}/inner.txt"
NEW = os.fsdecode(b"new\xfe\x80.txt")


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 0 and "Traceback" not in err, err
    return done.stdout.decode(errors="replace")  # diff content is raw bytes, as git prints it


def byte_repo(root: Path) -> Path:
    make_repo(
        root, {"README.md": "# readme\n", CAFE: b"caf\xe9 original\n", INNER: b"inner original\n"}
    )
    listed = git(root, "ls-files")
    assert '"caf\\351.txt"' in listed and '"d\\377/inner.txt"' in listed, listed
    return root


def test_agent_overwrite_of_a_latin1_name_is_recorded_shown_and_undone(
    tmp_path: Path, data_dir: Path
) -> None:
    root = byte_repo(tmp_path / "repo")
    hook_ok(event("session_start", root, "s1"), data_dir)
    hook_ok(event("turn_start", root, "s1"), data_dir)
    write(root, CAFE, b"agent bytes \xff\n")
    write(root, INNER, b"agent inner\n")
    write(root, NEW, b"agent new\n")
    hook_ok(event("turn_end", root, "s1", reason="done"), data_dir)

    cps = json.loads(ok(run_cli("list", "-C", str(root), "--json", data_dir=data_dir, text=False)))
    assert len(cps) == 1, cps
    assert {f["path"]: f["status"] for f in cps[0]["files"]} == {
        '"caf\\351.txt"': "modified",
        '"d\\377/inner.txt"': "modified",
        '"new\\376\\200.txt"': "added",
    }, "each name is in the checkpoint, in git's quoted form"
    assert cps[0]["skipped"] == [], "nothing was skipped"
    shown = ok(run_cli("show", "1", "-C", str(root), data_dir=data_dir, text=False))
    assert '~ "caf\\351.txt"' in shown and '+ "new\\376\\200.txt"' in shown, shown
    assert "caf\\351.txt" in ok(
        run_cli("diff", "1", "-C", str(root), data_dir=data_dir, text=False)
    )
    assert '"d\\377/inner.txt" |' in ok(
        run_cli("diff", "1", "--stat", "-C", str(root), data_dir=data_dir, text=False)
    )

    undone = ok(run_cli("undo", "-C", str(root), data_dir=data_dir, text=False))
    assert 'restored "caf\\351.txt"' in undone, undone
    assert (root / CAFE).read_bytes() == b"caf\xe9 original\n", "the exact original bytes"
    assert (root / INNER).read_bytes() == b"inner original\n"
    assert not (root / NEW).exists(), "the agent's new file is removed"
    assert git(root, "status", "--porcelain") == "", "git sees the commit again"

    ok(run_cli("redo", "-C", str(root), "--json", data_dir=data_dir, text=False))
    assert (root / CAFE).read_bytes() == b"agent bytes \xff\n", "redo puts the agent's back"
    assert (root / NEW).read_bytes() == b"agent new\n"


def test_capture_under_a_directory_whose_name_is_not_utf8(tmp_path: Path, data_dir: Path) -> None:
    root = byte_repo(tmp_path / "repo")
    inside = root / ODD_DIR
    tree = ok(run_cli("capture", "-C", str(inside), data_dir=data_dir, text=False)).strip()
    assert len(tree) == 40, tree
    write(root, INNER, b"changed\n")
    assert ok(run_cli("capture", "-C", str(inside), data_dir=data_dir, text=False)).strip() != tree


@pytest.mark.parametrize(
    "raw",
    [
        b"plain.txt",
        b"caf\xe9.txt",
        b"\xff\xfe",
        b"caf\xc3\xa9 utf8.txt",
        b'"quoted".txt',
        b'"',
        b"back\\slash",
        b"tab\tnew\nline",
        b'"caf\\351.txt"',
        b"\x7f\x01",
    ],
)
def test_names_round_trip_through_json_records(raw: bytes) -> None:
    name = os.fsdecode(raw)
    stored = FileChange(path=name, status="added").model_dump_json()
    assert os.fsencode(FileChange.model_validate_json(stored).path) == raw, stored
    if b"\\" not in raw and b"\t" not in raw and raw[:1] != b'"':
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return
        assert names.encode(name) == name, "a UTF-8 name is written as it is"


def test_undo_refusal_names_a_latin1_file_escaped(tmp_path: Path, data_dir: Path) -> None:
    root = byte_repo(tmp_path / "repo")
    hook_ok(event("turn_start", root, "s1"), data_dir)
    write(root, CAFE, b"agent\n")
    hook_ok(event("turn_end", root, "s1", reason="done"), data_dir)
    write(root, CAFE, b"the user's later edit\n")

    refused = run_cli("undo", "-C", str(root), data_dir=data_dir, text=False)
    err = refused.stderr.decode()
    assert refused.returncode == 4 and '"caf\\351.txt"' in err, err
    assert err.count("\n") == 1, "one line, no traceback"
    assert (root / CAFE).read_bytes() == b"the user's later edit\n", "nothing was overwritten"
