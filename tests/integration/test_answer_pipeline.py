"""The answering policy as the facade wires it (issue 15): live trace steps, and a vision
model that sees the page renders and crops of the sources it answers from."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image

from docsight import DocSight, Settings
from docsight.agents.trace import TraceStep
from docsight.llm.base import Message
from docsight.llm.scripted import ScriptedChat

REVENUE = "What was Northwind's revenue in 2024?"


def images_in(messages: list[Message]) -> list[bytes]:
    """The PNGs a request carried, decoded from their data URLs."""
    import base64

    found = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "image_url":
                    url = part["image_url"]["url"]
                    assert url.startswith("data:image/png;base64,")
                    found.append(base64.b64decode(url.split(",", 1)[1]))
    return found


def test_each_trace_step_is_heard_as_it_finishes(demo_collection: Path) -> None:
    heard: list[TraceStep] = []
    answer = DocSight(demo_collection).ask(REVENUE, mode="agent", on_step=heard.append)
    assert [s.kind for s in heard] == [s.kind for s in answer.trace]
    assert heard[0].kind == "seek" and heard[-1].kind == "answer"


def test_a_listener_that_fails_does_not_fail_the_answer(demo_collection: Path) -> None:
    calls: list[str] = []

    def broken(step: TraceStep) -> None:
        calls.append(step.kind)
        raise ConnectionResetError("the client went away")

    answer = DocSight(demo_collection).ask(REVENUE, on_step=broken)
    assert answer.answerable
    assert calls == ["retrieve"]  # dropped after its first failure
    assert [s.kind for s in answer.trace] == ["retrieve", "answer"]


def test_a_vision_model_answers_from_the_page_images(demo_collection: Path) -> None:
    def reply(messages: list[Message]) -> str:
        return "Revenue was 468.5 million [1]." if images_in(messages) else "Not answerable"

    vision = ScriptedChat(default=reply, model="scripted-vlm")
    settings = Settings()
    settings.answer.max_images = 2
    answer = DocSight(demo_collection, settings=settings, vision=vision).ask(REVENUE)
    assert answer.mode == "llm" and answer.model == "scripted-vlm"
    assert answer.answerable and answer.citations
    pictures = images_in(vision.calls[0])
    assert 1 <= len(pictures) <= 2
    for png in pictures:
        assert Image.open(io.BytesIO(png)).size[0] > 100  # a real render, not a placeholder
    # Each image is labelled with the number of the source it shows, so it can be cited.
    user = vision.calls[0][-1]["content"]
    labels = [p["text"] for p in user if p.get("type") == "text" and p["text"].startswith("Image")]
    assert len(labels) == len(pictures)


def test_the_agents_inspector_sees_the_images_too(demo_collection: Path) -> None:
    verdict = json.dumps({"sufficient": True, "missing": []})
    vision = ScriptedChat([verdict], default="Revenue was 468.5 million [1].")
    DocSight(demo_collection, vision=vision).ask(REVENUE, mode="agent")
    inspector_call = vision.calls[0]
    assert "sufficient" in str(inspector_call[0]["content"])
    assert images_in(inspector_call)


def test_no_images_are_sent_to_a_text_model(demo_collection: Path) -> None:
    chat = ScriptedChat(default="Revenue was 468.5 million [1].")
    DocSight(demo_collection, chat=chat).ask(REVENUE)
    assert chat.calls and not images_in(chat.calls[0])
    assert isinstance(chat.calls[0][-1]["content"], str)


def test_a_models_words_are_heard_draft_by_draft(demo_collection: Path) -> None:
    verdict = json.dumps({"sufficient": True, "missing": []})
    chat = ScriptedChat([verdict], default="Revenue was 468.5 million [1].")
    heard: list[tuple[str, int]] = []
    answer = DocSight(demo_collection, chat=chat).ask(
        REVENUE, mode="agent", on_token=lambda piece, draft: heard.append((piece, draft))
    )
    assert "".join(p for p, _ in heard).strip() == "Revenue was 468.5 million [1]."
    assert {d for _, d in heard} == {1}  # the inspector's JSON is not streamed, only answers
    assert answer.answer.startswith("Revenue was 468.5 million")


def test_offline_answers_stream_no_words(demo_collection: Path) -> None:
    heard: list[str] = []
    answer = DocSight(demo_collection).ask(REVENUE, on_token=lambda p, d: heard.append(p))
    assert answer.answerable and heard == []


def test_pages_are_rendered_again_at_the_asked_resolution_within_bounds(
    demo_collection: Path,
) -> None:
    def sizes(settings: Settings) -> list[tuple[int, int]]:
        vision = ScriptedChat(default="Revenue was 468.5 million [1].")
        DocSight(demo_collection, settings=settings, vision=vision).ask(REVENUE)
        return [Image.open(io.BytesIO(png)).size for png in images_in(vision.calls[0])]

    stored = sizes(Settings())
    sharper_settings = Settings()
    sharper_settings.answer.image_dpi = 192  # twice the 96 dpi of ingestion
    sharper_settings.answer.max_image_side = 4000
    sharper = sizes(sharper_settings)
    assert len(sharper) == len(stored)
    assert all(abs(s[0] - 2 * b[0]) <= 2 for s, b in zip(sharper, stored, strict=True))
    bounded_settings = Settings()
    bounded_settings.answer.image_dpi = 192
    bounded_settings.answer.max_image_side = 500
    assert all(max(size) <= 500 for size in sizes(bounded_settings))
