"""Request and response bodies shared by the REST API and the MCP tools.

They cross an API, so they are pydantic models; the MCP tools' input schemas are generated from
the same classes, so both entry points accept the same arguments with the same bounds.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The facade's bounds of ``k`` (``DocSight.search``/``ask``), checked before any work starts.
from docsight.api import MAX_ANSWER_K, MAX_SEARCH_K

MAX_QUESTION_CHARS = 4000
MAX_DOCUMENTS = 100


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchRequest(_Body):
    """Search the collection."""

    query: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="What to find.")
    k: int = Field(default=10, ge=1, le=MAX_SEARCH_K, description="How many results.")
    documents: list[str] | None = Field(
        default=None,
        max_length=MAX_DOCUMENTS,
        description="Restrict to these documents (name, name without extension, or id).",
    )
    unit: Literal["chunk", "page"] = Field(
        default="chunk", description="Rank passages (chunk) or whole pages (page)."
    )
    image_base64: str | None = Field(
        default=None, description="An image that goes with the query, base64-encoded."
    )


class AskRequest(_Body):
    """Answer a question with citations to document, page and box."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    documents: list[str] | None = Field(default=None, max_length=MAX_DOCUMENTS)
    k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ANSWER_K,
        description="Fixed number of hits (adaptive when absent).",
    )
    mode: Literal["fast", "agent", "plan", "auto"] | None = Field(
        default=None, description="Answering mode; the collection's setting when absent."
    )
    session: str | None = Field(
        default=None,
        max_length=64,
        description="Continue this conversation (the `session` of an earlier answer); "
        "use `new` to start one.",
    )
    image_base64: str | None = Field(
        default=None, description="An image that goes with the question, base64-encoded."
    )
    stream: bool = Field(
        default=False, description="Stream trace steps and the answer as server-sent events."
    )


class ErrorBody(BaseModel):
    """Every error the server returns: docsight's stable error code and a message."""

    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


class JobCreated(BaseModel):
    job: str
    files: list[str]


class JobProgress(BaseModel):
    """Where an ingestion job is: ``stage`` of file ``index`` (1-based) of ``total``, page
    ``page`` of ``pages`` (0 while not known)."""

    file: str
    stage: str
    page: int
    pages: int
    index: int
    total: int


class JobState(BaseModel):
    """An ingestion job as ``GET /jobs/{id}`` returns it (and the ``done`` event carries)."""

    job: str
    status: Literal["queued", "running", "done", "failed"]
    files: list[str]
    report: dict[str, Any] | None = Field(
        default=None, description="When done: the JSON of `docsight ingest --json`."
    )
    error: ErrorBody | None = Field(
        default=None, description="When failed: why the job as a whole failed."
    )
    progress: JobProgress | None = None


__all__ = [
    "AskRequest",
    "ErrorBody",
    "ErrorResponse",
    "JobCreated",
    "JobProgress",
    "JobState",
    "SearchRequest",
]
