"""Typed parsers and captioners for questions asked with an image (VISA streams B and C).

:func:`create_parsers` gives one :class:`~docsight.query.image.TypedParser` per image type: the
vision model's parser with the offline one as its fallback when a chat model is given, else the
offline parser (OCR lines and pixels, no model). ``ImageQuerySettings.parsers`` limits the types
(leave-one-out ablations). :func:`create_captioner` gives the stream C captioner.

Importing this package is cheap: the parser modules (numpy work, pygments, OpenCV and the table
model on first use) load when a factory is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docsight.errors import ConfigurationError
from docsight.query.image import IMAGE_TYPES, Captioner, TypedParser
from docsight.settings import ImageQuerySettings

if TYPE_CHECKING:
    from docsight.llm.base import ChatModel


def parser_names(settings: ImageQuerySettings) -> list[str]:
    """The types whose parsers may run, in :data:`IMAGE_TYPES` order; unknown names raise
    :class:`ConfigurationError` listing the valid ones."""
    if settings.parsers is None:
        return list(IMAGE_TYPES)
    wanted = {name.strip().lower() for name in settings.parsers}
    unknown = sorted(wanted - set(IMAGE_TYPES))
    if unknown:
        raise ConfigurationError(
            f"unknown typed parser(s) {', '.join(unknown)} in DOCSIGHT_IMAGE_PARSERS; "
            f"valid: {', '.join(IMAGE_TYPES)}"
        )
    return [kind for kind in IMAGE_TYPES if kind in wanted]


def create_parsers(
    settings: ImageQuerySettings, chat: ChatModel | None = None
) -> dict[str, TypedParser]:
    """Parser per type: vision model with offline fallback when ``chat`` is given, else offline."""
    from docsight.query.typed.offline import offline_parser

    parsers: dict[str, TypedParser] = {}
    for kind in parser_names(settings):
        offline = offline_parser(kind)  # type: ignore[arg-type]
        if chat is None:
            parsers[kind] = offline
        else:
            from docsight.query.typed.vlm import FallbackParser, VLMTypedParser

            parsers[kind] = FallbackParser(VLMTypedParser(chat, kind), offline)  # type: ignore[arg-type]
    return parsers


def create_captioner(
    settings: ImageQuerySettings, chat: ChatModel | None = None
) -> Captioner | None:
    """The stream C captioner ``settings.caption`` asks for: ``auto`` is the vision model
    (falling back to the offline caption) when ``chat`` is given, else the offline caption;
    ``vlm`` needs a chat model; ``none`` gives None."""
    from docsight.query.typed.caption import OfflineCaptioner, VLMCaptioner

    mode = settings.caption
    if mode == "none":
        return None
    if mode == "offline":
        return OfflineCaptioner()
    if mode == "vlm":
        if chat is None:
            raise ConfigurationError(
                "DOCSIGHT_IMAGE_CAPTION=vlm needs a vision model: set DOCSIGHT_VLM_MODEL (and "
                "DOCSIGHT_VLM_BASE_URL for a local endpoint), or use caption 'auto' or 'offline'"
            )
        return VLMCaptioner(chat)
    return (
        VLMCaptioner(chat, fallback=OfflineCaptioner()) if chat is not None else OfflineCaptioner()
    )


__all__ = ["create_captioner", "create_parsers", "parser_names"]
