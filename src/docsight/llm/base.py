"""The chat-model contract and the JSON helpers every implementation shares.

A :class:`ChatModel` turns a list of OpenAI-style messages (``{"role": ..., "content": ...}``)
into text, or into a validated pydantic object. Implementations must be safe to call from several
threads at once and must raise only :class:`~docsight.errors.LLMError` subclasses for endpoint or
response failures, so callers can fall back to offline behaviour with a single ``except``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from docsight.errors import LLMResponseError

#: A chat message; ``content`` is text, or a list of OpenAI content parts (text and images).
Message = dict[str, Any]


def image_part(png: bytes, media_type: str = "image/png") -> dict[str, Any]:
    """An image content part (a data URL: nothing is fetched from anywhere)."""
    import base64

    encoded = base64.b64encode(png).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{encoded}"}}


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ChatResult:
    """One completion. ``cached`` is true when it was served from the on-disk cache."""

    text: str
    model: str
    cached: bool
    finish_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class ChatModel(Protocol):
    """An OpenAI-compatible chat model.

    Contract:

    * ``chat`` returns non-empty text or raises; ``temperature`` and ``max_tokens`` default to
      the configured values, ``stop`` to none.
    * ``chat_json`` asks for a JSON object (JSON mode when the endpoint supports it), strips code
      fences and surrounding prose, validates the result against ``schema`` and, if that fails,
      sends the bad reply back once with the validation error. If the second reply is invalid
      too it raises :class:`~docsight.errors.LLMResponseError`.
    * Transient failures (rate limits, 5xx, timeouts, connection errors) are retried inside the
      implementation; what escapes is an :class:`~docsight.errors.LLMError` subclass.
    * Both methods are thread-safe.
    * With ``on_token``, ``chat`` calls it with pieces of the reply as they arrive (the whole
      reply at once when it cannot stream, or when the reply comes from a cache); the result's
      text is the whole reply either way. Pieces already delivered are not taken back if the
      call then fails, so a caller shows them as provisional; a stream that has begun is not
      retried.
    """

    model: str

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> ChatResult: ...

    def chat_json(
        self, messages: list[Message], schema: type[M], *, max_tokens: int | None = None
    ) -> M: ...


# --- JSON replies --------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_ERRORS_SHOWN = 8


def extract_json(text: str) -> str:
    """Return the JSON part of a model reply.

    Small and chatty models wrap JSON in Markdown fences or in prose ("Sure! Here it is: {...}").
    The first complete JSON object (or, failing that, array) wins. When nothing parses, the
    stripped text is returned unchanged so that validation reports *why* it is not JSON.
    """
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    candidate = fenced.group(1).strip() if fenced else stripped
    try:
        json.loads(candidate)
        return candidate
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for opener in "{[":
        start = candidate.find(opener)
        while start != -1:
            try:
                _, end = decoder.raw_decode(candidate, start)
                return candidate[start:end]
            except ValueError:
                start = candidate.find(opener, start + 1)
    return candidate


def parse_json_reply(text: str, schema: type[M]) -> M:
    """Extract and validate; raises :class:`pydantic.ValidationError` on failure."""
    return schema.model_validate_json(extract_json(text))


def describe_validation_error(exc: ValidationError) -> str:
    """A compact, URL-free account of what was wrong, fit for both a log and a model prompt."""
    parts = []
    for err in exc.errors(include_url=False)[:_MAX_ERRORS_SHOWN]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - _MAX_ERRORS_SHOWN
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def _type_name(prop: dict[str, Any]) -> str | None:
    """A plain-words type for simple properties; None when only the full schema says it well."""
    if "anyOf" in prop:
        names = [_type_name(p) for p in prop["anyOf"]]
        return None if None in names else " or ".join(n for n in names if n)
    kind = prop.get("type")
    if kind == "array":
        item = _type_name(prop.get("items", {})) if prop.get("items") else "any"
        return f"array of {item}" if item else None
    if kind in ("string", "integer", "number", "boolean", "null"):
        if "enum" in prop:
            return "one of " + ", ".join(json.dumps(v) for v in prop["enum"])
        return str(kind)
    return None


def schema_instruction(schema: type[BaseModel]) -> str:
    """Ask for JSON in a form small models follow.

    Models of a few hundred million parameters tend to echo a raw JSON schema instead of filling
    it in, but copy a template such as ``{"city": <string>}`` well. The formal schema is added
    only when a property is too complex for the template.
    """
    spec = schema.model_json_schema()
    props: dict[str, Any] = spec.get("properties", {})
    required = set(spec.get("required", []))
    slots = []
    notes = []
    nested = not props
    for name, prop in props.items():
        kind = _type_name(prop)
        nested = nested or kind is None
        optional = "" if name in required else ", optional"
        slots.append(f"{json.dumps(name)}: <{kind or 'see schema'}{optional}>")
        if prop.get("description"):
            notes.append(f"{json.dumps(name)} is {prop['description']}")
    text = (
        "Reply with a single JSON object and nothing else (no Markdown, no explanation), "
        "in this form: {" + ", ".join(slots) + "}"
    )
    if notes:
        text += "\nWhere " + "; ".join(notes) + "."
    if nested:
        text += "\nJSON schema: " + json.dumps(spec, separators=(",", ":"), sort_keys=True)
    return text


def with_json_instruction(messages: list[Message], schema: type[BaseModel]) -> list[Message]:
    """Add the schema to the system prompt.

    OpenAI rejects JSON mode unless the word "JSON" appears in the messages, and small models need
    the schema spelled out. Extending an existing system message (rather than adding a second one)
    keeps chat templates that allow only one leading system message working.
    """
    instruction = schema_instruction(schema)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{instruction}".strip()
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def repair_messages(messages: list[Message], bad_reply: str, error: str) -> list[Message]:
    return [
        *messages,
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": (
                f"Your reply was not valid: {error}. "
                "Reply again with the corrected JSON only, with no other text."
            ),
        },
    ]


def complete_json(
    call: Callable[[list[Message]], ChatResult],
    messages: list[Message],
    schema: type[M],
    *,
    model: str,
) -> M:
    """Run the ask → validate → one repair → validate protocol on top of any ``call``.

    ``messages`` should already carry the JSON instruction (see :func:`with_json_instruction`).
    """
    first = call(messages)
    try:
        return parse_json_reply(first.text, schema)
    except ValidationError as exc:
        error = describe_validation_error(exc)
    second = call(repair_messages(messages, first.text, error))
    try:
        return parse_json_reply(second.text, schema)
    except ValidationError as exc:
        snippet = second.text.strip().replace("\n", " ")
        if len(snippet) > 200:
            snippet = snippet[:200] + "..."
        raise LLMResponseError(
            f"model {model!r} did not return valid JSON for {schema.__name__} after one repair "
            f"attempt ({describe_validation_error(exc)}); last reply: {snippet!r}"
        ) from exc
