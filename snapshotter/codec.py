"""JSON for dataclasses, derived from their fields: the class is the one definition.

Each field's annotation says how its value is read and written: ``str``,
``int``, ``bool``, ``X | None``, ``list[X]``, ``dict[K, V]`` (an object),
``tuple[...]`` (an array of that length), ``Literal[...]`` (one of its values,
of the same JSON type), another dataclass (an object of its fields), and
``names.Name``: a worktree path, written in ``names.encode``'s form (JSON cannot hold
the lone surrogates an undecodable name has in memory). So adding a field to
a class is the whole edit: reading and writing it follow from its annotation.

``write`` gives the object ``read`` takes back; fields come in the class's
order. ``read`` takes exactly that — a field with a default may be left out,
no other key, every value of its exact JSON type (no ``"3"`` for 3, no
``true`` for 1) — and raises ``Odd`` at anything else, leaving the document to
a lenient reader over the same classes (``state_file`` uses pydantic's), which
converts what it can and names what is wrong. Plain code rather than pydantic
because a hook process reads and writes the state on every event and must not
pay pydantic's import (issue 16.4); each class's reader and writer are built
on its first use.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import sys
import threading
import types
import typing
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from snapshotter import names
from snapshotter.names import NAME

T = TypeVar("T")
Read = typing.Callable[[Any], Any]
F = TypeVar("F", bound=typing.Callable[[Any], Any])


class Odd(Exception):
    """Not exactly as ``write`` writes it: a lenient reader must decide."""


def read(cls: type[T], value: object) -> T:
    """The ``cls`` that ``value`` (parsed JSON) holds; Odd unless it is exactly as written."""
    return typing.cast(T, _reader(cls)(value))


def write(obj: object) -> dict[str, Any]:
    """The dataclass ``obj`` as a JSON object (for ``json.dumps``)."""
    found: dict[str, Any] = _writer(type(obj))(obj)
    return found


# -- a class's reader and writer, built from its fields once ------------------------------------
# Each is a function written for its class (as attrs and dataclasses do): a
# field's type check inline and one constructor call, so a state of a
# thousand checkpoints reads as fast as hand-written code would.

_READERS: dict[type, Read] = {}
_WRITERS: dict[type, typing.Callable[[Any], dict[str, Any]]] = {}


def _reader(cls: type) -> Read:
    return _built(_READERS, cls, _object_reader)


def _writer(cls: type) -> typing.Callable[[Any], dict[str, Any]]:
    return _built(_WRITERS, cls, _object_writer)


_BUILDING = threading.RLock()  # the hook server reads states in several threads
_PENDING: dict[tuple[int, type], Any] = {}  # stand-ins for the readers and writers being built


def _built(cache: dict[type, F], cls: type, build: typing.Callable[[type], F]) -> F:
    """``cache[cls]``, built first if need be; only finished ones are ever in ``cache``."""
    found = cache.get(cls)
    if found is not None:
        return found
    with _BUILDING:  # re-entrant: a class's reader builds the readers of the classes it holds
        pending = (id(cache), cls)
        found = cache.get(cls) or _PENDING.get(pending)
        if found is None:
            # For a class inside itself: calls what will be there once it is built.
            _PENDING[pending] = lambda value: cache[cls](value)
            try:
                found = cache[cls] = build(cls)
            finally:
                del _PENDING[pending]
    return found


_FIELDS: dict[type, list[tuple[dataclasses.Field[Any], Any]]] = {}
_HINTS: dict[tuple[str, str], Any] = {}


def _fields(cls: type) -> list[tuple[dataclasses.Field[Any], Any]]:
    """Each field of the dataclass ``cls`` with its annotation, evaluated.

    As ``typing.get_type_hints(cls, include_extras=True)`` would give them, but each
    annotation's text is evaluated once per module: a hook process builds these
    on every event, and most fields share a few annotations (``str``, ``int``)."""
    found = _FIELDS.get(cls)
    if found is None:
        # An annotation means what it means where it was written: in its class's module.
        where = {
            name: c.__module__ for c in cls.__mro__[::-1] for name in inspect.get_annotations(c)
        }
        found = [(f, _hint(f.type, where[f.name])) for f in dataclasses.fields(cls)]
        _FIELDS[cls] = found
    return found


def _hint(annotation: Any, module: str) -> Any:
    if not isinstance(annotation, str):
        return annotation
    found = _HINTS.get((module, annotation))
    if found is None:
        space = vars(sys.modules[module])
        if annotation in space:
            found = space[annotation]
        elif annotation.isidentifier():
            found = getattr(builtins, annotation)
        else:
            found = eval(annotation, space)  # a class's own annotation
        _HINTS[module, annotation] = found
    return found


def _object_reader(cls: type) -> Read:
    """``read_object(d)``: one call of ``cls``, each argument a field of ``d`` checked inline."""
    fields = _fields(cls)
    env: dict[str, Any] = {"cls": cls, "Odd": Odd, "odd": _odd, "M": dataclasses.MISSING}
    env["keys"] = frozenset(f.name for f, _ in fields)
    args = []
    for i, (f, hint) in enumerate(fields):
        check = _check(hint, f"r{i}", env)
        if f.default is not dataclasses.MISSING:
            env[f"default{i}"] = f.default
            bound = f"default{i} if (v := g({f.name!r}, M)) is M else ({check.format(v='v')})"
            args.append(f"{f.name}={bound}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"default{i}"] = f.default_factory
            bound = f"default{i}() if (v := g({f.name!r}, M)) is M else ({check.format(v='v')})"
            args.append(f"{f.name}={bound}")
        else:  # a field without a default must be there: KeyError otherwise
            args.append(f"{f.name}={check.format(v=f'(v := d[{f.name!r}])')}")
    source = (
        "def read_object(d):\n"
        "    if type(d) is not dict or not keys.issuperset(d):\n"
        "        raise Odd\n"
        "    g = d.get\n"
        "    try:\n"
        f"        return cls({', '.join(args)})\n"
        "    except KeyError:\n"
        "        raise Odd from None\n"
    )
    return _compiled(source, env)


def _odd() -> typing.NoReturn:
    raise Odd


def _check(hint: Any, name: str, env: dict[str, Any]) -> str:
    """An expression that checks ``v`` (a field's JSON value) and gives its value in memory.

    ``{v}`` marks where ``v`` is first evaluated (where a required field binds it).
    The common kinds inline (a field of a thousand records costs a call less
    each), any other through its reader."""
    origin, args = get_origin(hint), get_args(hint)
    if hint in (str, int, bool):
        env[name] = hint
        return f"v if type({{v}}) is {name} else odd()"
    if origin in (Union, types.UnionType) and _not_none(hint, args) in (str, int, bool):
        env[name] = _not_none(hint, args)
        return f"v if {{v}} is None or type(v) is {name} else odd()"
    if _is_name(hint):
        env["decode"] = names.decode
        return "decode(v) if type({v}) is str else odd()"
    if origin is Literal and len({type(a) for a in args}) == 1:
        env[name], env[name + "_type"] = frozenset(args), type(args[0])
        return f"v if type({{v}}) is {name}_type and v in {name} else odd()"
    env[name] = _read_of(hint)
    return f"{name}({{v}})"


def _is_name(hint: Any) -> bool:
    return get_origin(hint) is Annotated and NAME in hint.__metadata__


def _object_writer(cls: type) -> typing.Callable[[Any], dict[str, Any]]:
    """``write_object(o)``: one dict display of ``o``, nested records and all, written out
    as one would by hand (``[{"path": encode(x1.path), ...} for x1 in o.files]``)."""
    source = _WriterSource(cls)
    return _compiled(f"def write_object(o):\n    return {source.display(cls, 'o', 0)}", source.env)


class _WriterSource:
    """The expressions of one class's writer, and the globals they use."""

    def __init__(self, cls: type) -> None:
        self.env: dict[str, Any] = {"encode": names.encode}
        self.outer = {cls}  # classes being written out around the current expression

    def display(self, cls: type, src: str, depth: int) -> str:
        """A dict display of the dataclass ``cls`` whose instance is the expression ``src``."""
        items = []
        for f, hint in _fields(cls):
            value = f"{src}.{f.name}"
            items.append(f"{f.name!r}: {self.as_json(hint, value, depth) or value}")
        return "{" + ", ".join(items) + "}"

    def as_json(self, hint: Any, src: str, depth: int) -> str | None:
        """An expression for the JSON value of ``src`` (an expression of type ``hint``);
        None where the value is written as it is. ``depth``: comprehensions around it."""
        origin, args = get_origin(hint), get_args(hint)
        if _is_name(hint):
            return f"encode({src})"
        if origin is Annotated:
            return self.as_json(args[0], src, depth)
        if dataclasses.is_dataclass(hint):
            return self.nested(typing.cast(type, hint), src, depth)
        if hint in (str, int, bool) or origin is Literal:
            return None
        if origin in (Union, types.UnionType):
            inner = self.as_json(_not_none(hint, args), src, depth)
            return None if inner is None else f"(None if {src} is None else {inner})"
        if origin is list:
            x = f"x{depth + 1}"
            item = self.as_json(args[0], x, depth + 1)
            return None if item is None else f"[{item} for {x} in {src}]"
        if origin is dict:
            k, v = f"k{depth + 1}", f"v{depth + 1}"
            key, item = self.as_json(args[0], k, depth + 1), self.as_json(args[1], v, depth + 1)
            if key is None and item is None:
                return None
            return f"{{{key or k}: {item or v} for {k}, {v} in {src}.items()}}"
        if origin is tuple and ... not in args:
            parts = [self.as_json(a, f"{src}[{i}]", depth) for i, a in enumerate(args)]
            if all(p is None for p in parts):
                return None  # json writes a tuple as an array
            return "[" + ", ".join(p or f"{src}[{i}]" for i, p in enumerate(parts)) + "]"
        raise TypeError(f"no JSON form for {hint!r}")

    def nested(self, cls: type, src: str, depth: int) -> str:
        if cls in self.outer:  # a class inside itself: through its writer, not forever
            self.env[f"write_{cls.__name__}"] = _writer(cls)
            return f"write_{cls.__name__}({src})"
        self.outer.add(cls)
        try:
            return self.display(cls, src, depth)
        finally:
            self.outer.discard(cls)


def _compiled(source: str, env: dict[str, Any]) -> typing.Callable[[Any], Any]:
    """The one function ``source`` defines, its globals ``env``."""
    name = source[len("def ") : source.index("(")]
    exec(compile(source, f"<codec {name}>", "exec"), env)
    return typing.cast(typing.Callable[[Any], Any], env[name])


# -- values by annotation -----------------------------------------------------------------------


def _read_of(hint: Any) -> Read:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return _read_name if NAME in hint.__metadata__ else _read_of(args[0])
    if dataclasses.is_dataclass(hint):
        return _reader(typing.cast(type, hint))
    if hint in (str, int, bool):
        return _exact(hint)
    if origin is Literal:
        return _one_of(args)
    if origin in (Union, types.UnionType):
        return _optional(_read_of(_not_none(hint, args)))
    if origin is list and args[0] in (str, int, bool):
        return _list_of_exact(args[0])
    if origin is list and _is_name(args[0]):
        return _list_of_names
    if origin is list:
        return _list_of(_read_of(args[0]))
    if origin is dict:
        return _dict_of(_read_of(args[0]), _read_of(args[1]))
    if origin is tuple and ... not in args:
        return _tuple_of(tuple(_read_of(a) for a in args))
    raise TypeError(f"no JSON form for {hint!r}")


def _not_none(hint: Any, args: tuple[Any, ...]) -> Any:
    if len(args) != 2 or type(None) not in args:
        raise TypeError(f"no JSON form for {hint!r}: only X | None")
    return args[0] if args[1] is type(None) else args[1]


def _exact(kind: type) -> Read:
    def read_exact(value: object) -> object:
        if type(value) is not kind:
            raise Odd
        return value

    return read_exact


def _read_name(value: object) -> str:
    if type(value) is not str:
        raise Odd
    return names.decode(value)


def _one_of(allowed: tuple[Any, ...]) -> Read:
    kinds = {type(a) for a in allowed}

    def read_one_of(value: object) -> object:
        if type(value) not in kinds or value not in allowed:  # (type first: True == 1)
            raise Odd
        return value

    return read_one_of


def _optional(inner: Read) -> Read:
    return lambda value: None if value is None else inner(value)


def _list_of(item: Read) -> Read:
    def read_list(value: object) -> list[Any]:
        if type(value) is not list:
            raise Odd
        return [item(v) for v in value]

    return read_list


def _list_of_exact(kind: type) -> Read:
    def read_list(value: object) -> list[Any]:
        if type(value) is not list:
            raise Odd
        found = [v for v in value if type(v) is kind]
        if len(found) != len(value):
            raise Odd  # an item of another type
        return found

    return read_list


def _list_of_names(value: object) -> list[str]:
    if type(value) is not list:
        raise Odd
    found = [names.decode(v) for v in value if type(v) is str]
    if len(found) != len(value):
        raise Odd  # an item not a string
    return found


def _dict_of(key: Read, item: Read) -> Read:
    def read_dict(value: object) -> dict[Any, Any]:
        if type(value) is not dict:
            raise Odd
        return {key(k): item(v) for k, v in value.items()}

    return read_dict


def _tuple_of(parts: tuple[Read, ...]) -> Read:
    def read_tuple(value: object) -> tuple[Any, ...]:
        if type(value) is not list or len(value) != len(parts):
            raise Odd
        return tuple(part(v) for part, v in zip(parts, value, strict=True))

    return read_tuple
