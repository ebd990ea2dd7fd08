"""The rewind view drawn full-screen with prompt_toolkit, and its keys.

Only this module imports prompt_toolkit (the ``tui`` extra). It draws what a
``View`` holds and binds each key to one of its methods; what a key does to
the worktree is decided in view.py, through the Engine.

The layout fits 80x24 and grows with the terminal (prompt_toolkit redraws
on resize): the checkpoints on top, the highlighted one's files on the
left below, its diff on the right, then the question a key asks, the last
message and the keys. Colours follow the terminal: none with ``NO_COLOR``
(prompt_toolkit's own rule) or ``TERM=dumb``; the reverse-video highlight
works without them. Symbols the terminal's encoding lacks (a latin-1
terminal) are drawn in ASCII; prompt_toolkit replaces any other character
it cannot encode.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from prompt_toolkit.application import Application, get_app, run_in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.data_structures import Point
from prompt_toolkit.filters import Condition, Filter
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    BufferControl,
    ConditionalContainer,
    Dimension,
    FormattedTextControl,
    HSplit,
    Layout,
    VSplit,
    Window,
)
from prompt_toolkit.mouse_events import MouseEvent, MouseEventType
from prompt_toolkit.styles import Style
from prompt_toolkit.utils import get_cwidth

from snapshotter.cli import output
from snapshotter.cli.rewind import rows
from snapshotter.cli.rewind.view import View
from snapshotter.names import display

STYLE = Style.from_dict(
    {
        "title": "reverse",
        "current": "reverse",
        "undone": "fg:ansibrightblack",
        "pane": "bold",
        "ask": "bold",
        "refused": "fg:ansired bold",
        "message": "bold",
        "keys": "reverse",
    }
)
KEYS = "r back  u undo  R redo  f files  d pager  / search  s session  Tab pane  q quit"
ASK_KEYS = "y/Enter: do it   n/Esc: cancel"
FORCE_KEYS = "F: overwrite anyway (--force; redo brings them back)   n/Esc: cancel"


class Symbols:
    """The drawing characters, in ASCII where the terminal cannot show them."""

    def __init__(self, encoding: str | None) -> None:
        fancy = ("▸ ", "▾ ", "─", "│")
        try:
            "".join(fancy).encode(encoding or "ascii")
        except (UnicodeEncodeError, LookupError):
            fancy = ("> ", "v ", "-", "|")
        self.folded, self.open, self.across, self.down = fancy


def application(view: View, *, mouse: bool = False) -> Application[None]:
    """The full-screen application showing ``view``; ``run()`` it."""
    return _Screen(view, Symbols(sys.stdout.encoding)).application(mouse)


class _Screen:
    def __init__(self, view: View, symbols: Symbols) -> None:
        self.view = view
        self.sym = symbols
        self.search = Buffer(multiline=False, on_text_changed=lambda b: view.search(b.text))
        self.list_window = Window(
            FormattedTextControl(
                self._list, focusable=True, get_cursor_position=lambda: Point(0, view.index)
            ),
            height=Dimension(min=3, weight=2),
            always_hide_cursor=True,
        )
        self.search_window = Window(BufferControl(self.search), height=1)
        self._drawn: tuple[str | None, StyleAndTextTuples] = (None, [])

    # -- layout ------------------------------------------------------------------------

    def application(self, mouse: bool) -> Application[None]:
        asking = Condition(lambda: self.view.pending is not None)
        searching = Condition(lambda: get_app().layout.has_focus(self.search))
        body = HSplit(
            [
                Window(FormattedTextControl(self._title), height=1, style="class:title"),
                self.list_window,
                Window(FormattedTextControl(self._pane_title), height=1, char=self.sym.across),
                VSplit(
                    [
                        Window(
                            FormattedTextControl(
                                self._files,
                                get_cursor_position=lambda: Point(0, self.view.file_index),
                            ),
                            width=Dimension(preferred=30, max=40, min=12),
                            always_hide_cursor=True,
                        ),
                        Window(width=1, char=self.sym.down),
                        Window(
                            FormattedTextControl(
                                self._diff,
                                get_cursor_position=lambda: Point(0, self.view.diff_line),
                            ),
                            always_hide_cursor=True,
                        ),
                    ],
                    height=Dimension(min=3, weight=3),
                ),
                ConditionalContainer(
                    Window(FormattedTextControl(self._question), height=self._question_height),
                    filter=asking,
                ),
                ConditionalContainer(
                    VSplit([Window(FormattedTextControl("/"), width=1), self.search_window]),
                    filter=searching,
                ),
                Window(FormattedTextControl(self._message), height=1, style="class:message"),
                Window(FormattedTextControl(self._keys), height=1, style="class:keys"),
            ]
        )
        return Application(
            layout=Layout(body, focused_element=self.list_window),
            key_bindings=self._keys_bound(asking, searching),
            style=STYLE,
            full_screen=True,
            mouse_support=mouse,
        )

    def _width(self) -> int:
        return get_app().output.get_size().columns

    def _title(self) -> StyleAndTextTuples:
        v = self.view
        more = f" ({v.other_sessions} other session(s): s)" if v.other_sessions else ""
        found = f"  search: {v.query}" if v.query else ""
        where = display(str(v.engine.root))
        text = f" snapshotter rewind  session {display(v.session)}{more}{found}  {where}"
        return [("", _fit(text, self._width()))]

    def _list(self) -> StyleAndTextTuples:
        v = self.view
        if not v.rows:
            return [("", "no checkpoints" + (" match the search" if v.query else ""))]
        width = self._width()
        out: StyleAndTextTuples = []
        for i, row in enumerate(v.rows):
            style = "class:current" if i == v.index else "class:undone" if row.cp.undone else ""
            out.append((style, self._row_text(row, width), self._clicked(i)))
            out.append(("", "\n"))
        return out[:-1]

    def _row_text(self, row: rows.Row, width: int) -> str:
        cp = row.cp
        if row.depth:
            fold = "  " + output.NESTED
        elif row.tools:
            fold = self.sym.open if cp.id in self.view.unfolded else self.sym.folded
        else:
            fold = "  "
        tools = ""
        if row.tools and not row.depth:
            tools = f" ({row.tools} tool{'s' if row.tools > 1 else ''})"
        left = f"{cp.id:>5} {rows.when(cp.created_at):<20} {fold}"
        right = f"  {output.counts(cp):<11}{'undone' if cp.undone else '':<6}"
        room = max(width - get_cwidth(left + right), 8)
        label = _fit(display(cp.label) + tools, room, pad=True)
        return _fit(f"{left}{label}{right}", width, pad=True)

    def _clicked(self, index: int) -> Callable[[MouseEvent], None]:
        def handler(event: MouseEvent) -> None:
            if event.event_type == MouseEventType.MOUSE_UP:
                self.view.focus = "list"
                self.view.move(index - self.view.index)
            elif event.event_type in (MouseEventType.SCROLL_DOWN, MouseEventType.SCROLL_UP):
                self.view.move(1 if event.event_type == MouseEventType.SCROLL_DOWN else -1)

        return handler

    def _pane_title(self) -> StyleAndTextTuples:
        v = self.view
        cp = v.current
        if cp is None:
            return []
        where = {"list": "", "files": "  [files]", "diff": "  [diff]"}[v.focus]
        text = f" checkpoint {cp.id} {cp.kind}: {display(cp.label)}"
        return [("class:pane", _fit(text, self._width() - 12) + where + " ")]

    def _files(self) -> StyleAndTextTuples:
        v = self.view
        mark = {"added": "+", "modified": "~", "deleted": "-"}
        out: StyleAndTextTuples = []
        for i, d in enumerate(v.files()):
            chosen = "[x]" if d.path in v.chosen else "[ ]"
            style = "class:current" if v.focus == "files" and i == v.file_index else ""
            out += [(style, f"{chosen} {mark[d.status]} {display(d.path)}"), ("", "\n")]
        skipped = v.current.skipped if v.current is not None else []
        out += [("", f"! {display(s.path)} (skipped: {s.reason})\n") for s in skipped]
        return out or [("", "no files")]

    def _diff(self) -> StyleAndTextTuples:
        text = self.view.diff_text()
        if self._drawn[0] is not text:  # parsed once per diff, not on every key
            self._drawn = (text, to_formatted_text(ANSI(text) if self.view.color else text))
        return self._drawn[1]

    def _question(self) -> StyleAndTextTuples:
        pending = self.view.pending
        if pending is None:
            return []
        lines = pending.lines()
        room = max(self._question_height() - 2, 1)
        if len(lines) > room:
            lines = [*lines[: room - 1], f"  ... and {len(lines) - room + 1} more"]
        body = "".join(f"{line}\n" for line in lines)
        keys = FORCE_KEYS if pending.refused else ASK_KEYS
        style = "class:refused" if pending.refused else "class:ask"
        return [(style, pending.title + "\n"), ("", body), (style, keys)]

    def _question_height(self) -> int:
        pending = self.view.pending
        wanted = len(pending.lines()) + 2 if pending is not None else 0
        return max(2, min(wanted, get_app().output.get_size().rows // 3))

    def _message(self) -> StyleAndTextTuples:
        return [("", _fit(self.view.message, self._width()))]

    def _keys(self) -> StyleAndTextTuples:
        return [("", _fit(KEYS, self._width(), pad=True))]

    # -- keys --------------------------------------------------------------------------

    def _keys_bound(self, asking: Filter, searching: Filter) -> KeyBindings:
        v = self.view
        kb = KeyBindings()
        browsing = ~asking & ~searching

        def bind(*keys: str, when: Filter = browsing) -> Callable[[Callable[[], None]], None]:
            def add(fn: Callable[[], None]) -> None:
                for key in keys:
                    kb.add(key, filter=when)(lambda _e, fn=fn: fn())

            return add

        bind("up", "k")(lambda: v.move(-1))
        bind("down", "j")(lambda: v.move(1))
        bind("pageup")(lambda: v.move(-10))
        bind("pagedown")(lambda: v.move(10))
        bind("home", "g")(lambda: v.move(-(10**9)))
        bind("end", "G")(lambda: v.move(10**9))
        bind("right", "l", "+")(lambda: v.unfold(True))
        bind("left", "h", "-")(lambda: v.unfold(False))
        bind("tab")(v.cycle_focus)
        bind("space", "enter")(self._space)
        bind("r")(v.ask_back)
        bind("u")(v.ask_undo)
        bind("R", "c-r")(v.ask_redo)
        bind("f")(v.ask_restore)
        bind("s")(v.next_session)
        bind("y", "enter", when=asking)(v.confirm)
        bind("F", when=asking)(lambda: v.confirm(force=True))
        bind("n", "escape", when=asking)(v.cancel)
        bind("/")(lambda: get_app().layout.focus(self.search))
        bind("enter", when=searching)(lambda: get_app().layout.focus(self.list_window))
        bind("escape", when=searching)(self._stop_search)
        kb.add("d", filter=browsing)(self._page)
        kb.add("q", filter=browsing)(lambda e: e.app.exit())
        kb.add("escape", filter=browsing, eager=True)(lambda e: e.app.exit())
        kb.add("c-c")(lambda e: e.app.exit())
        return kb

    def _space(self) -> None:
        v = self.view
        if v.focus == "files":
            v.toggle_file()
        elif v.focus == "list" and v.current is not None:
            v.unfold(v.current.id not in v.unfolded)

    def _stop_search(self) -> None:
        self.search.reset()
        self.view.search("")
        get_app().layout.focus(self.list_window)

    def _page(self, _event: KeyPressEvent) -> None:
        """The highlighted checkpoint's whole diff in the pager, as ``snapshotter diff``
        shows it; the view comes back after Enter."""
        from snapshotter.cli import terminal

        data = self.view.full_diff(terminal.use_color("auto"))

        def show() -> None:
            terminal.emit(data, page=True)
            with contextlib.suppress(EOFError, KeyboardInterrupt):
                input("-- Enter: back to the view --")

        run_in_terminal(show)


def _fit(text: str, width: int, pad: bool = False) -> str:
    """``text`` cut to ``width`` terminal columns (with an ellipsis), padded if asked."""
    if get_cwidth(text) > width:
        room = max(width - get_cwidth(output.ELLIPSIS), 0)
        while text and get_cwidth(text) > room:
            text = text[:-1]
        text += output.ELLIPSIS
    return text + " " * (width - get_cwidth(text)) if pad else text
