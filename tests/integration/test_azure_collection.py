"""A collection on Azure Blob Storage (``az://``), against Azurite on 127.0.0.1.

The same files are ingested into a local directory and into ``az://container/team/col``
(Lance writes the tables through its own Azure client, docsight the other objects through
``pyarrow.fs``, and deletes and the writer lease through the Blob REST API): the two collections
hold the same documents, chunk ids, page images and search results, ``check`` passes, and a
second writer is refused with ``collection_leased`` while the first holds the lease.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import CollectionNotFoundError
from docsight.index.lease import LEASE_NAME, WriterLease
from docsight.index.location import RemoteLocation
from fixtures.azure_fixtures import AzureEndpoint, azure, azurite  # noqa: F401 (fixtures)
from fixtures.remote_pair import Pair, assert_refused_while_leased, ingest_pair

QUERIES = ["how much does the team plan cost per month", "warranty returns", "error E42 licence"]
runner = CliRunner()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair(azure: AzureEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Pair:  # noqa: F811
    base = tmp_path_factory.mktemp("azure")
    return ingest_pair(base, "az", azure.container("collections"))


def test_an_az_collection_holds_what_a_local_one_holds(
    pair: Pair,
    azure: AzureEndpoint,  # noqa: F811
) -> None:
    local, remote = pair.local, DocSight(pair.uri, settings=Settings(work_dir=pair.work_dir))
    assert [(d.id, d.name, d.pages, d.chunks) for d in remote.documents()] == [
        (d.id, d.name, d.pages, d.chunks) for d in local.documents()
    ]
    for query in QUERIES:
        here, there = local.search(query, k=8), remote.search(query, k=8)
        assert [(h.chunk_id, h.rank) for h in there] == [(h.chunk_id, h.rank) for h in here]
        assert [h.score for h in there] == pytest.approx([h.score for h in here], rel=1e-5)
    image = remote.page_image("note.pdf", 0)
    assert image and image == local.page_image("note.pdf", 0)
    # What is shared lives under the prefix, in the container; the lease is gone.
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(f"{pair.root}/team/col", recursive=True)
    names = {i.path.split("/team/col/", 1)[1] for i in azure.fs.get_file_info(selector)}
    assert "collection.json" in names and LEASE_NAME not in names
    assert any(n.startswith("tables/chunks.lance/_versions/") for n in names)
    assert any(n.startswith("sources/") and n.endswith(".pdf") for n in names)


def test_check_passes_on_an_az_collection(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSIGHT_WORK_DIR", str(pair.work_dir))
    checked = runner.invoke(app, ["check", "--collection", pair.uri], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
    assert pair.uri in checked.output and "working files" in checked.output


def test_a_second_writer_to_an_az_collection_is_refused(pair: Pair) -> None:
    holder = WriterLease(
        RemoteLocation(pair.uri, pair.work_dir), holder="build-host:4242", ttl=30
    ).acquire()
    try:
        assert_refused_while_leased(pair, "build-host:4242")
    finally:
        holder.release()
    again = DocSight(pair.uri, settings=Settings(work_dir=pair.work_dir, lock_timeout=0.3))
    assert again.ingest([pair.files]).counts()["skipped"] == 3


def test_rm_removes_a_document_of_an_az_collection(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Last but one: the pair has one document less from here on.
    monkeypatch.setenv("DOCSIGHT_WORK_DIR", str(pair.work_dir))
    removed = runner.invoke(app, ["rm", "faq.txt", "-c", pair.uri, "--json"])
    assert removed.exit_code == 0, removed.output
    remote = DocSight(pair.uri, settings=Settings(work_dir=pair.work_dir))
    assert sorted(d.name for d in remote.documents()) == ["guide.md", "note.pdf"]
    assert not [h for h in remote.search("error E42 licence", k=8) if h.doc_name == "faq.txt"]


def test_a_missing_container_is_a_clear_error(pair: Pair) -> None:
    settings = Settings(work_dir=pair.work_dir)
    with pytest.raises(CollectionNotFoundError, match="no container no-such-container"):
        DocSight("az://no-such-container/col", settings=settings).search("widget")
    gone = runner.invoke(app, ["docs", "-c", "az://no-such-container/col", "--json"])
    assert gone.exit_code == 2
    assert json.loads(gone.output)["error"]["code"] == "collection_not_found"


def test_a_blob_is_deleted_by_one_request_without_a_lease(
    azure: AzureEndpoint,  # noqa: F811
    tmp_path: Path,
) -> None:
    """pyarrow's Azure delete leases the blob first; under load a retried acquire found its own
    lease and failed ``rm`` ("Failed to acquire a lease"). docsight sends Delete Blob itself."""
    location = RemoteLocation(f"az://{azure.container('deletes')}/team/col", tmp_path)
    location.write_bytes("sources/ab/file.pdf", b"%PDF-1.4 test")
    location.write_bytes("sources/ab/other.pdf", b"%PDF-1.4 other")

    class NoLeasingDelete:
        """The location's filesystem, whose own delete must not be used."""

        def __init__(self, fs: Any) -> None:
            self.fs = fs

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fs, name)

        def delete_file(self, key: str) -> None:
            raise AssertionError(f"pyarrow's delete was used for {key}")

    location._fs = NoLeasingDelete(location.fs)
    location.delete("sources/ab/file.pdf")
    assert sorted(location.files("sources")) == ["sources/ab/other.pdf"]
    location.delete("sources/ab/file.pdf")  # already gone: nothing to do
    location.delete_tree("sources")
    assert location.files("sources") == {}
