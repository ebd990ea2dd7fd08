"""Persisted and printed records (SPEC §4), as pydantic models."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["added", "modified", "deleted"]
Kind = Literal["turn", "tool"]


class FileChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    status: Status


class SkippedFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    reason: str


class Checkpoint(BaseModel):
    id: int
    session_id: str
    kind: Kind
    label: str
    created_at: str = Field(default_factory=lambda: now_iso())
    before: str
    after: str
    files: list[FileChange]
    skipped: list[SkippedFile] = Field(default_factory=list)
    undone: bool = False
    parent: int | None = None


class RestoreReport(BaseModel):
    """What one undo, redo or reset did (the ``--json`` document)."""

    checkpoint: list[int]
    restored: list[str]
    removed: list[str]
    skipped: list[str] = Field(default_factory=list)  # not in the snapshot: left alone
    dry_run: bool = False


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
