"""The public API's records, as pydantic models: what the API and ``--json`` hand out.

``Checkpoint``, ``FileChange`` and ``SkippedFile`` are derived from the
dataclasses that define a checkpoint (``checkpoints``: the stored records),
field by field, so their fields cannot drift apart and their JSON is the
stored checkpoint's; a record becomes its model in one place,
``checkpoints.Record.to_model``. ``RestoreReport`` is the API's alone.
``snapshotter hook`` never imports this module (issue 16.4).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    create_model,
)

from snapshotter import names
from snapshotter.checkpoints import Change, Record, Restoration, Skipped
from snapshotter.config import Kind as Kind
from snapshotter.config import Status as Status
from snapshotter.config import now_iso as now_iso
from snapshotter.names import Name


def _name_from_json(value: object, info: ValidationInfo) -> object:
    return names.decode(value) if info.mode == "json" and isinstance(value, str) else value


# A worktree path: in memory the os.fsdecode'd name, in JSON (records and
# ``--json``) git's quoted form when its bytes are not UTF-8 (names.py).
PathName = Annotated[
    str, BeforeValidator(_name_from_json), PlainSerializer(names.encode, when_used="json")
]


_MODELS: dict[type, type[BaseModel]] = {}  # each record's model, as ``_model`` makes them


def _model(name: str, record: type) -> Any:
    """The pydantic model of the dataclass ``record``: its fields in its order, with their
    types and defaults (a ``Name`` a ``PathName``, a nested record its model), frozen as
    the record is, and its docstring."""
    hints = typing.get_type_hints(record, include_extras=True)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        default: Any = ...  # required
        if f.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=f.default_factory)
        elif f.default is not dataclasses.MISSING:
            default = f.default
        fields[f.name] = (_api_type(hints[f.name]), default)
    frozen = record.__dataclass_params__.frozen  # type: ignore[attr-defined]
    model = create_model(
        name,
        __config__=ConfigDict(frozen=True) if frozen else None,
        __doc__=record.__doc__,
        __module__=__name__,
        **fields,
    )
    _MODELS[record] = model
    return model


def _api_type(hint: Any) -> Any:
    """``hint`` with each record in it replaced by its model, each ``Name`` by ``PathName``."""
    if hint == Name:
        return PathName
    if isinstance(hint, type) and hint in _MODELS:
        return _MODELS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, dict, tuple):
        return origin[tuple(_api_type(a) for a in args)]
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, (_api_type(a) for a in args))
    return hint


if TYPE_CHECKING:
    # What ``_model`` makes, as type checkers are told it: a model with its
    # record's attributes.
    class FileChange(BaseModel, Change, frozen=True): ...

    class SkippedFile(BaseModel, Skipped, frozen=True): ...

    class Checkpoint(BaseModel, Record): ...

    class RestoreReport(BaseModel, Restoration): ...

else:
    FileChange = _model("FileChange", Change)
    SkippedFile = _model("SkippedFile", Skipped)
    Checkpoint = _model("Checkpoint", Record)
    RestoreReport = _model("RestoreReport", Restoration)
