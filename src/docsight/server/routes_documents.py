"""Documents and ingestion jobs: upload, list, map, remove, page images, job status and events.

``{name}`` is whatever ``--doc`` accepts on the command line (:meth:`DocSight.resolve`): the
name, with or without its extension, a unique start of it, or the id. The JSON shapes are the
CLI's: ``docsight docs --json`` for documents, ``map --json`` for the map, ``ingest --json``
for a job's report.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import StreamingResponse

from docsight.api import DocSight
from docsight.errors import DocumentNotFoundError, UsageError
from docsight.server.errors import responses
from docsight.server.jobs import JobManager
from docsight.server.models import JobCreated, JobState
from docsight.server.sse import SSE_HEADERS, comment, sse
from docsight.server.uploads import FIELD, receive_files
from docsight.settings import ServerSettings

router = APIRouter()

#: Boxes one page image may highlight.
MAX_HIGHLIGHTS = 50
#: Page images are made from the document's bytes, which never change under its id; the ETag
#: holds the id, so a browser may keep them a while and revalidate cheaply after.
_PAGE_CACHE = "private, max-age=3600"
#: The highlight: a translucent fill and a solid edge, visible on text and on dark figures.
_FILL = (255, 196, 0, 80)
_EDGE = (230, 92, 0, 255)


def get_ds(request: Request) -> DocSight:
    ds: DocSight = request.app.state.docsight
    return ds


def get_jobs(request: Request) -> JobManager:
    jobs: JobManager = request.app.state.jobs
    return jobs


def get_server_settings(request: Request) -> ServerSettings:
    server: ServerSettings = request.app.state.server_settings
    return server


DS = Annotated[DocSight, Depends(get_ds)]
Jobs = Annotated[JobManager, Depends(get_jobs)]
Server = Annotated[ServerSettings, Depends(get_server_settings)]
DocName = Annotated[
    str,
    Path(
        max_length=512,
        description="Document name (with or without its extension, or a unique start of it) or id.",
    ),
]

_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [FIELD],
                    "properties": {
                        FIELD: {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "description": "One or more documents (PDF, Markdown, text, "
                            "HTML, DOCX, PPTX, XLSX, PNG, JPEG, TIFF).",
                        }
                    },
                }
            }
        },
    }
}


@router.post(
    "/documents",
    status_code=202,
    response_model=JobCreated,
    summary="Upload documents and start ingesting them",
    openapi_extra=_UPLOAD_BODY,
    responses=responses(400, 401, 413, 415, 422, 429, 503),
)
async def upload(request: Request, response: Response, jobs: Jobs, server: Server) -> JobCreated:
    """Stream the files of the multipart field `files` to disk and ingest them in the
    background. Returns the job at once: poll `GET /jobs/{job}` or watch
    `GET /jobs/{job}/events`."""
    job, incoming = jobs.reserve()
    try:
        files = await receive_files(
            request,
            incoming,
            max_files=server.max_files,
            max_file_bytes=int(server.max_upload_mb * 2**20),
        )
    except BaseException:
        jobs.discard(job)
        raise
    names = [f.name for f in files]
    jobs.start(job, names)
    response.headers["Location"] = str(request.url_for("job_status", job_id=job.id).path)
    return JobCreated(job=job.id, files=names)


@router.get(
    "/jobs/{job_id}",
    name="job_status",
    summary="An ingestion job's status, progress and report",
    response_model=JobState,
    responses=responses(401, 404, 422),
)
def job_status(job_id: Annotated[str, Path(max_length=64)], jobs: Jobs) -> dict[str, Any]:
    """`status` is queued, running, done or failed; `report` (when done) is the JSON of
    `docsight ingest --json`; `error` (when failed) says why the job as a whole failed
    (per-file failures are in the report)."""
    return jobs.get(job_id).to_json()


@router.get(
    "/jobs/{job_id}/events",
    summary="An ingestion job's progress as server-sent events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "progress events, then done"},
        **responses(401, 404, 422),
    },
)
async def job_events(
    job_id: Annotated[str, Path(max_length=64)], request: Request, jobs: Jobs
) -> StreamingResponse:
    """`event: progress` with `{file, stage, page, pages, index, total, batch_pages_done,
    batch_pages}` as ingestion runs, then `event: done` with the job JSON (at once for a
    finished job). Comment lines keep the connection alive in between."""
    job = jobs.get(job_id)
    queue = jobs.watch(job)
    keepalive: float = request.app.state.sse_keepalive_s

    async def stream() -> Any:
        try:
            while True:
                try:
                    event, data = await asyncio.wait_for(queue.get(), keepalive)
                except TimeoutError:
                    yield comment("keep-alive")
                    continue
                yield sse(event, data)
                if event == "done":
                    return
        finally:
            jobs.unwatch(job, queue)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)


@router.get("/documents", summary="The collection's documents", responses=responses(401, 503))
def list_documents(ds: DS) -> dict[str, Any]:
    return {"documents": [d.model_dump(mode="json") for d in ds.documents()]}


@router.get(
    "/documents/{name}",
    summary="A document and its map",
    responses=responses(401, 404, 422, 503),
)
def get_document(name: DocName, ds: DS) -> dict[str, Any]:
    """`map` is `docsight map --json`: sections with pages, element counts, tables and figures
    with captions, references, hidden text and the content graph."""
    from docsight.document.map import document_map
    from docsight.graph.view import graph_map

    info = ds.resolve(name)
    document = ds.document(info.id)
    data = document_map(document)
    graph = ds.store.get_graph(document.id)
    data["graph"] = graph_map(graph, document) if graph is not None else None
    return {"document": info.model_dump(mode="json"), "map": data}


@router.delete(
    "/documents/{name}",
    summary="Remove a document and free its space",
    responses=responses(401, 404, 409, 422, 503),
)
def remove_document(name: DocName, ds: DS) -> dict[str, Any]:
    return {"removed": ds.remove(name).model_dump(mode="json")}


@router.get(
    "/documents/{name}/pages/{page}.png",
    summary="A page image, with boxes highlighted",
    response_class=Response,
    responses={
        200: {"content": {"image/png": {}}, "description": "the page as PNG"},
        304: {"description": "not modified (ETag)"},
        **responses(401, 404, 422, 503),
    },
)
def page_image(
    request: Request,
    name: DocName,
    page: Annotated[int, Path(ge=0, le=1_000_000, description="0-based, as Citation.page.")],
    ds: DS,
    highlight: Annotated[
        str | None,
        Query(
            max_length=4096,
            description="Boxes to draw, normalised with a top-left origin: "
            "`x0,y0,x1,y1`, several separated by `;` (a citation's `bbox`).",
        ),
    ] = None,
) -> Response:
    boxes = parse_highlight(highlight) if highlight else []
    info = ds.resolve(name)
    tag = hashlib.sha256(f"{info.id}/{page}/{boxes}".encode()).hexdigest()[:32]
    etag = f'"{tag}"'
    headers = {"Cache-Control": _PAGE_CACHE, "ETag": etag}
    if etag in _etags(request.headers.get("if-none-match")):
        return Response(status_code=304, headers=headers)
    data = ds.page_image(info.id, page)
    if data is None:
        raise DocumentNotFoundError(f"page {page} of {info.name} has no image")
    if boxes:
        data = draw_boxes(data, boxes)
    return Response(data, media_type="image/png", headers=headers)


def _etags(header: str | None) -> set[str]:
    return {t.strip().removeprefix("W/") for t in (header or "").split(",") if t.strip()}


def parse_highlight(text: str) -> list[tuple[float, float, float, float]]:
    """``x0,y0,x1,y1;...`` as boxes; :class:`UsageError` (422) for anything else."""
    boxes = []
    parts = [p for p in text.split(";") if p.strip()]
    if len(parts) > MAX_HIGHLIGHTS:
        raise UsageError(f"highlight: at most {MAX_HIGHLIGHTS} boxes, not {len(parts)}")
    for part in parts:
        try:
            values = [float(v) for v in part.split(",")]
        except ValueError:
            values = []
        if len(values) != 4 or not all(0.0 <= v <= 1.0 for v in values):
            raise UsageError(
                f"highlight: {part[:60]!r} is not x0,y0,x1,y1 with four numbers from 0 to 1"
            )
        x0, y0, x1, y1 = values
        if x1 < x0 or y1 < y0:
            raise UsageError(f"highlight: {part[:60]!r} ends before it starts (x1 < x0 or y1 < y0)")
        boxes.append((x0, y0, x1, y1))
    if not boxes:
        raise UsageError("highlight: no box given")
    return boxes


def draw_boxes(png: bytes, boxes: list[tuple[float, float, float, float]]) -> bytes:
    """The page with each normalised box filled translucently and outlined."""
    from PIL import Image, ImageDraw

    with Image.open(io.BytesIO(png)) as opened:
        page = opened.convert("RGBA")
    overlay = Image.new("RGBA", page.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width, height = page.size
    edge = max(2, round(min(width, height) / 300))
    for x0, y0, x1, y1 in boxes:
        draw.rectangle(
            (x0 * width, y0 * height, x1 * width, y1 * height),
            fill=_FILL,
            outline=_EDGE,
            width=edge,
        )
    out = io.BytesIO()
    Image.alpha_composite(page, overlay).convert("RGB").save(out, format="PNG", optimize=False)
    return out.getvalue()


__all__ = ["draw_boxes", "parse_highlight", "router"]
