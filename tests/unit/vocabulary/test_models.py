"""snapshotter/models.py: the API's records; a path is git's quoted form in JSON only."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import ValidationError

from snapshotter import codec
from snapshotter.checkpoints import Restoration
from snapshotter.models import Checkpoint, FileChange, RestoreReport

UNDECODABLE = os.fsdecode(b"caf\xe9.txt")


def checkpoint(**fields: object) -> Checkpoint:
    base: dict[str, object] = {
        "id": 1,
        "session_id": "s",
        "kind": "turn",
        "label": "l",
        "before": "a",
        "after": "b",
        "files": [],
    }
    return Checkpoint.model_validate({**base, **fields})


def test_a_path_is_quoted_in_json_and_read_back_to_the_same_name() -> None:
    cp = checkpoint(files=[FileChange(path=UNDECODABLE, status="added")], named_paths=["ok.py"])
    document = json.loads(cp.model_dump_json())
    assert document["files"] == [{"path": '"caf\\351.txt"', "status": "added"}]
    assert document["named_paths"] == ["ok.py"]
    again = Checkpoint.model_validate_json(json.dumps(document))
    assert again.files[0].path == UNDECODABLE and again == cp


def test_in_python_a_path_is_the_name_itself() -> None:
    cp = checkpoint(files=[{"path": '"q"', "status": "deleted"}])
    assert cp.files[0].path == '"q"', "only JSON input is unquoted"
    assert cp.model_dump()["files"][0]["path"] == '"q"'


def test_defaults_and_refusals() -> None:
    cp = checkpoint()
    assert (cp.skipped, cp.undone, cp.parent, cp.named_paths) == ([], False, None, [])
    assert cp.created_at.endswith("Z")
    with pytest.raises(ValidationError):
        checkpoint(kind="session")
    with pytest.raises(ValidationError):
        FileChange(path="a", status="renamed")  # type: ignore[arg-type]


def test_a_restore_report_quotes_its_paths_too() -> None:
    report = RestoreReport(checkpoint=[3], restored=[UNDECODABLE], removed=["b"])
    document = json.loads(report.model_dump_json())
    assert document == {
        "checkpoint": [3],
        "restored": ['"caf\\351.txt"'],
        "removed": ["b"],
        "skipped": [],
        "not_held": [],
        "dry_run": False,
    }
    # The shell's --json writes the same document from the dataclass, without pydantic.
    plain = Restoration(checkpoint=[3], restored=[UNDECODABLE], removed=["b"])
    assert codec.write(plain) == document
