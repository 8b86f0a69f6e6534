"""A chat model that answers from a script: for docsight's tests and for yours.

``ScriptedChat`` keeps the :class:`~docsight.llm.base.ChatModel` contract without a server:
each call takes the next scripted reply. A reply is text, an exception (an
:class:`~docsight.errors.LLMError` to simulate a fault), or a function of the messages that
returns text. ``chat_json`` runs the same validate-and-repair protocol as the real client, so
a malformed reply followed by a good one is repaired, and two malformed ones fail. Every call's
messages are kept in ``calls``.

    from docsight import DocSight
    from docsight.llm.scripted import ScriptedChat

    chat = ScriptedChat(['{"sufficient": true, "missing": []}', "Revenue was 468.5 [1]."])
    answer = DocSight("collection", chat=chat).ask("What was revenue?", mode="agent")
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from pydantic import BaseModel

from docsight.errors import LLMResponseError
from docsight.llm.base import ChatResult, Message, complete_json, with_json_instruction

M = TypeVar("M", bound=BaseModel)
Reply = str | BaseException | Callable[[list[Message]], str]


class ScriptedChat:
    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        model: str = "scripted",
        default: Reply | None = None,
    ) -> None:
        self.model = model
        #: Used when the script has run out (``None``: running out is an ``LLMResponseError``).
        self.default = default
        self.calls: list[list[Message]] = []
        self._script: list[Reply] = list(replies)
        self._lock = threading.Lock()

    def script(self, *replies: Reply) -> None:
        """Queue more replies."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> ChatResult:
        with self._lock:
            self.calls.append([dict(m) for m in messages])
            reply = self._script.pop(0) if self._script else self.default
        if reply is None:
            raise LLMResponseError(f"the scripted model {self.model!r} has no reply left")
        if isinstance(reply, BaseException):
            raise reply
        text = reply(messages) if callable(reply) else reply
        if on_token is not None:  # word by word, spaces kept, as an endpoint would stream it
            for piece in re.findall(r"\S+\s*|\s+", text):
                on_token(piece)
        prompt = sum(len(str(m.get("content", ""))) for m in messages)
        usage = {"prompt_tokens": prompt // 4 + 1, "completion_tokens": len(text) // 4 + 1}
        return ChatResult(
            text=text, model=self.model, cached=False, finish_reason="stop", usage=usage
        )

    def chat_json(
        self, messages: list[Message], schema: type[M], *, max_tokens: int | None = None
    ) -> M:
        return complete_json(
            lambda m: self.chat(m, max_tokens=max_tokens),
            with_json_instruction(messages, schema),
            schema,
            model=self.model,
        )


__all__ = ["ScriptedChat"]
