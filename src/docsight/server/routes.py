"""The REST API under ``/api/v1``: health and info here, the rest in ``routes_documents`` and
``routes_query``.

The routes are thin: they parse, call the :class:`~docsight.api.DocSight` facade (blocking calls
in the threadpool) and shape JSON like the CLI's ``--json``. Errors are raised as docsight
errors and turned into responses by :mod:`docsight.server.errors`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Security
from fastapi.security import HTTPBearer

from docsight.errors import CollectionNotFoundError
from docsight.server import routes_documents, routes_query
from docsight.server.errors import responses
from docsight.server.routes_documents import DS, Jobs, Server
from docsight.server.security import configured_key

#: Declares the bearer scheme in the OpenAPI schema. It enforces nothing: the key is checked by
#: :class:`docsight.server.security.ApiKeyGuard`, which also covers what is mounted beside the
#: API, and only when the server has a key.
bearer = HTTPBearer(
    auto_error=False,
    description="The server's API key, when it has one (`--api-key`, DOCSIGHT_SERVER_API_KEY).",
)

open_router = APIRouter()
protected = APIRouter(dependencies=[Security(bearer)])


@open_router.get("/health", summary="Whether the server is up (no key needed)")
def health() -> dict[str, str]:
    return {"status": "ok"}


@protected.get(
    "/info",
    summary="The collection, docsight's version and the configured models",
    responses=responses(401, 503),
)
def info(ds: DS, jobs: Jobs, server: Server) -> dict[str, Any]:
    """Never a secret: model names and whether they are configured, not their endpoints or
    keys. `collection` is null for a collection directory with nothing ingested yet."""
    from docsight import __version__
    from docsight.server.uploads import supported_suffixes

    try:
        stats: dict[str, Any] | None = ds.info().model_dump(mode="json")
    except CollectionNotFoundError:
        # A local directory or a remote prefix with nothing ingested yet is an empty collection.
        if not ds.location.remote and not ds.path.is_dir():
            raise
        stats = None
    settings = ds.settings
    return {
        "version": __version__,
        "collection": stats,
        "models": {
            "llm": {"configured": settings.llm.enabled, "model": settings.llm.model},
            "vlm": {"configured": settings.vlm.enabled, "model": settings.vlm.model},
            "embedding": {"backend": settings.embed.backend, "model": settings.embed.model},
            "answer_mode": settings.answer.mode,
        },
        "server": {
            "auth": configured_key(server) is not None,
            "max_upload_mb": server.max_upload_mb,
            "max_files": server.max_files,
            "max_jobs": server.max_jobs,
            "jobs_running": jobs.active(),
            "max_query_chars": server.max_query_chars,
            "file_types": sorted(supported_suffixes()),
        },
    }


protected.include_router(routes_documents.router)
protected.include_router(routes_query.router)

router = APIRouter()
router.include_router(open_router)
router.include_router(protected)

__all__ = ["router"]
