"""A collection on object storage (``s3://``), against a loopback S3 endpoint (moto).

The same files are ingested into a local directory and into ``s3://bucket/team/col``; the two
collections must hold the same documents, chunk ids, maps, page images, search results and
answers. What is shared lives under the prefix; caches live in the local working directory.
A second writer is refused while the first holds the lease, and serialised behind it when it
waits long enough.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import CollectionNotFoundError
from docsight.index.lease import LEASE_NAME, WriterLease
from docsight.index.location import RemoteLocation
from fixtures.pdfgen import make_two_column
from fixtures.remote_pair import Pair, assert_refused_while_leased, ingest_pair
from fixtures.s3_fixtures import S3Endpoint, moto_server, s3  # noqa: F401 (fixtures)

QUERIES = [
    "how much does the team plan cost per month",
    "warranty returns",
    "error E42 licence",
    "a study of two columns alpha omega",
]
QUESTION = "How much does the Team plan cost per month?"
runner = CliRunner()


@pytest.fixture(scope="module")
def pair(s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory) -> Pair:  # noqa: F811
    base = tmp_path_factory.mktemp("remote")
    return ingest_pair(base, "s3", s3.bucket("collections"))


def _chunks(ds: DocSight) -> dict[str, list[str]]:
    return {d.name: [c.id for c in ds.store.document_chunks(d.id)] for d in ds.documents()}


def test_remote_collection_holds_what_a_local_one_holds(pair: Pair) -> None:
    local, remote = pair.local, DocSight(pair.uri, settings=Settings(work_dir=pair.work_dir))
    assert [(d.id, d.name, d.pages, d.chunks) for d in remote.documents()] == [
        (d.id, d.name, d.pages, d.chunks) for d in local.documents()
    ]
    assert _chunks(remote) == _chunks(local)
    for query in QUERIES:
        here, there = local.search(query, k=8), remote.search(query, k=8)
        assert [(h.chunk_id, h.rank) for h in there] == [(h.chunk_id, h.rank) for h in here]
        assert [h.score for h in there] == pytest.approx([h.score for h in here], rel=1e-5)
    pages_here = local.search("widget", k=5, unit="page")
    pages_there = remote.search("widget", k=5, unit="page")
    assert [(h.doc_id, h.page) for h in pages_there] == [(h.doc_id, h.page) for h in pages_here]
    assert remote.ask(QUESTION).answer == local.ask(QUESTION).answer
    for name in ("note.pdf", "guide.md"):
        assert remote.document(name).model_dump() == local.document(name).model_dump()
    # The page image is rendered from the kept PDF, fetched into the working directory.
    image = remote.page_image("note.pdf", 0)
    assert image and image == local.page_image("note.pdf", 0)
    assert list((pair.work_dir / "files" / "sources").rglob("*.pdf"))


def test_shared_part_lives_under_the_prefix_and_caches_stay_local(
    pair: Pair,
    s3: S3Endpoint,  # noqa: F811
) -> None:
    keys = s3.keys(pair.root, "team/col/")
    names = {k.removeprefix("team/col/") for k in keys}
    assert {"collection.json", "recovery/collection.json"} <= names
    assert any(n.startswith("sources/") and n.endswith(".pdf") for n in names)
    assert any(n.startswith("tables/chunks.lance/_versions/") for n in names)
    assert any(n.startswith("recovery/tables/documents.lance/") for n in names)
    assert LEASE_NAME not in names  # released after the ingest
    assert not (pair.work_dir / "tables").exists()
    # A conversation is this machine's business: it is kept in the working directory.
    answer = pair.remote.chat(QUESTION)
    assert (pair.work_dir / "sessions" / f"{answer.session}.json").is_file()
    assert pair.remote.conversation(answer.session).id == answer.session
    names = {k.removeprefix("team/col/") for k in s3.keys(pair.root, "team/col/")}
    assert not any(n.startswith(("cache/", "sessions/")) for n in names)
    manifest = json.loads(s3.client.get_object(Bucket=pair.root, Key=keys[0])["Body"].read())
    assert manifest["schema_version"] and manifest["encoder"]["dim"] == 384

    stats = pair.remote.info()
    assert stats.path == pair.uri and stats.documents == 3
    assert stats.work_dir == str(pair.work_dir) and stats.sizes["sources"] > 0


def test_cli_commands_take_a_uri(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSIGHT_WORK_DIR", str(pair.work_dir))
    listed = runner.invoke(app, ["docs", "-c", pair.uri, "--json"], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    assert sorted(d["name"] for d in json.loads(listed.output)) == [
        "faq.txt",
        "guide.md",
        "note.pdf",
    ]
    checked = runner.invoke(app, ["check", "--collection", pair.uri], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
    assert pair.uri in checked.output and "working files" in checked.output
    mapped = runner.invoke(app, ["map", "guide", "-c", pair.uri], catch_exceptions=False)
    assert mapped.exit_code == 0 and "Pricing" in mapped.output
    asked = runner.invoke(app, ["ask", QUESTION, "-c", pair.uri], catch_exceptions=False)
    assert asked.exit_code == 0 and "$45" in asked.output


def test_a_second_writer_is_refused_then_serialised(pair: Pair) -> None:
    other = WriterLease(
        RemoteLocation(pair.uri, pair.work_dir), holder="build-host:4242", ttl=30
    ).acquire()
    try:
        assert_refused_while_leased(pair, "build-host:4242")
        patient = DocSight(pair.uri, settings=Settings(work_dir=pair.work_dir, lock_timeout=20))
        release = threading.Timer(0.8, other.release)
        release.start()
        report = patient.ingest([pair.files])  # waits for the lease, then runs
        release.join()
        assert report.counts()["skipped"] == 3
    finally:
        other.release()


def test_missing_collections_and_buckets_are_clear_errors(
    pair: Pair,
    s3: S3Endpoint,  # noqa: F811
) -> None:
    settings = Settings(work_dir=pair.work_dir)
    with pytest.raises(CollectionNotFoundError, match="nothing stored under that prefix"):
        DocSight(f"s3://{pair.root}/nothing/here", settings=settings).search("widget")
    with pytest.raises(CollectionNotFoundError):
        DocSight(f"s3://{pair.root}/nothing", settings=settings).documents()
    with pytest.raises(CollectionNotFoundError, match="no bucket no-such-bucket-here"):
        DocSight("s3://no-such-bucket-here/col", settings=settings).search("widget")
    gone = runner.invoke(app, ["docs", "-c", "s3://no-such-bucket-here/col", "--json"])
    assert gone.exit_code == 2
    assert json.loads(gone.output)["error"]["code"] == "collection_not_found"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
        unreachable = runner.invoke(app, ["docs", "-c", pair.uri, "--json"])
    assert unreachable.exit_code == 1
    error = json.loads(unreachable.output)["error"]
    assert error["code"] == "remote_storage" and "AWS_ENDPOINT_URL" in error["message"]


def test_serve_uploads_asks_and_shows_pages_of_a_remote_collection(
    pair: Pair,
    s3: S3Endpoint,  # noqa: F811
    tmp_path: Path,
) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from docsight.server.app import create_app

    # A prefix of its own, empty: the server starts on it as on a new local directory.
    uri = f"s3://{pair.root}/team/served"
    work = tmp_path / "work"
    ds = DocSight(uri, settings=Settings(work_dir=work, ingest={"isolation": "none"}))
    pdf = make_two_column(tmp_path / "note.pdf")
    with TestClient(create_app(ds)) as client:
        status = client.get("/api/v1/info").json()
        assert status["collection"] is None
        files = [
            ("files", ("note.pdf", pdf.read_bytes(), "application/pdf")),
            (
                "files",
                (
                    "plans.md",
                    b"# Plans\n\nThe Team plan costs 31 euros a month.\n",
                    "text/markdown",
                ),
            ),
        ]
        created = client.post("/api/v1/documents", files=files)
        assert created.status_code == 202, created.text
        job = created.json()["job"]
        deadline = time.monotonic() + 120
        while (state := client.get(f"/api/v1/jobs/{job}").json())["status"] not in (
            "done",
            "failed",
        ):
            assert time.monotonic() < deadline, state
            time.sleep(0.2)
        assert state["report"]["counts"]["added"] == 2, state
        hits = client.post("/api/v1/search", json={"query": "Team plan euros", "k": 1}).json()
        assert hits["hits"][0]["doc_name"] == "plans.md"
        answer = client.post("/api/v1/ask", json={"question": "How much does the Team plan cost?"})
        assert answer.status_code == 200 and "31" in answer.json()["answer"], answer.text
        page = client.get("/api/v1/documents/note.pdf/pages/0.png")
        assert page.status_code == 200 and page.headers["content-type"] == "image/png"
    # The documents are under the prefix; the uploads were local and are gone.
    assert s3.keys(pair.root, "team/served/tables/")
    assert not [p for p in (work / "uploads").rglob("*") if p.is_file()]


def test_rm_removes_a_document_and_its_kept_file(
    pair: Pair,
    s3: S3Endpoint,  # noqa: F811
) -> None:
    # Runs last: it changes both collections the same way.
    sources = [k for k in s3.keys(pair.root, "team/col/sources/") if k.endswith(".pdf")]
    removed = runner.invoke(app, ["rm", "note.pdf", "-c", pair.uri, "--json"])
    assert removed.exit_code == 0, removed.output
    pair.local.remove("note.pdf")
    assert [d.id for d in pair.remote.documents()] == [d.id for d in pair.local.documents()]
    assert not set(sources) & set(s3.keys(pair.root, "team/col/sources/"))
    for query in QUERIES[:2]:
        assert [h.chunk_id for h in pair.remote.search(query, k=5)] == [
            h.chunk_id for h in pair.local.search(query, k=5)
        ]


def test_damage_is_found_and_a_table_that_cannot_open_is_not_repaired_remotely(
    pair: Pair,
    s3: S3Endpoint,  # noqa: F811
) -> None:
    # Runs last: it damages the remote collection. The newest manifest of a table is garbled:
    # that table cannot be opened.
    versions = s3.keys(pair.root, "team/col/tables/graphs.lance/_versions/")
    newest = min(versions)  # Lance's v2 names sort the newest version first
    s3.client.put_object(Bucket=pair.root, Key=newest, Body=b"garbled")
    report = DocSight(pair.uri, settings=Settings(work_dir=pair.work_dir)).check()
    assert report.path == pair.uri and report.work_dir == str(pair.work_dir)
    assert not report.ok
    assert any(p.table == "graphs" for p in report.problems), report.problems
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCSIGHT_WORK_DIR", str(pair.work_dir))
        repaired = runner.invoke(app, ["check", "--repair", "-c", pair.uri, "--json"])
    assert repaired.exit_code == 2, repaired.output
    error = json.loads(repaired.output)["error"]
    assert error["code"] == "remote_unsupported" and "local directory" in error["message"]
