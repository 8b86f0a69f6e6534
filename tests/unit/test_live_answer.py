"""The terminal's live view while ``ask`` runs: steps, then a model's words, draft by draft."""

from __future__ import annotations

import io

from rich.console import Console

from docsight.agents.trace import TraceStep
from docsight.cli.render import live_answer


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=80), out


def test_words_stream_draft_by_draft_and_are_made_inert() -> None:
    console, out = terminal()
    with live_answer(console) as listeners:
        listeners["on_step"](TraceStep(kind="retrieve"))
        listeners["on_token"]("First draft ", 1)
        listeners["on_token"]("Revenue was \x1b]8;;http://evil\x07468.5", 2)
        listeners["on_token"](" million [1].", 2)
    shown = out.getvalue()
    assert "Revenue was" in shown and "million [1]." in shown
    assert "http://evil" in shown and "\x1b]8;;" not in shown  # the OSC 8 link was disarmed


def test_no_listeners_off_a_terminal_or_for_json() -> None:
    plain = Console(file=io.StringIO(), force_terminal=False)
    with live_answer(plain) as listeners:
        assert listeners == {}
    console, _ = terminal()
    with live_answer(console, enabled=False) as listeners:
        assert listeners == {}
