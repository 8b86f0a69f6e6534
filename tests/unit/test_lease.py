"""The writer lease of a remote collection, against loopback S3 (moto) and Azure Blob (Azurite).

Every semantic test runs on both stores: the lease is the same protocol over each one's
conditional writes.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from docsight.errors import (
    CollectionLeasedError,
    CollectionLockedError,
    ConfigurationError,
    RemoteStorageError,
)
from docsight.index.lease import LEASE_NAME, WriterLease
from docsight.index.location import RemoteLocation
from fixtures.azure_fixtures import AzureEndpoint, azure, azurite  # noqa: F401 (fixtures)
from fixtures.s3_fixtures import S3Endpoint, moto_server, s3  # noqa: F401 (fixtures)

#: Judge expiry without the production slack, so tests wait one second for it, not two
#: (Last-Modified and Date have whole seconds: a ttl of 1 s has passed after 1.05 s).
EXACT = timedelta(0)


@pytest.fixture(params=["s3", "az"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> RemoteLocation:
    if request.param == "s3":
        bucket = request.getfixturevalue("s3").bucket("lease")
    else:
        bucket = request.getfixturevalue("azure").container("lease")
    return RemoteLocation(f"{request.param}://{bucket}/team/col", tmp_path / "work")


def _key(where: RemoteLocation) -> tuple[str, str]:
    bucket, _, prefix = where.base.partition("/")
    return bucket, f"{prefix}/{LEASE_NAME}"


def test_one_of_two_racing_writers_gets_the_lease(where: RemoteLocation) -> None:
    leases = [WriterLease(where, holder=f"writer-{i}") for i in range(4)]
    results: list[object] = [None] * len(leases)
    start = threading.Barrier(len(leases))

    def take(i: int) -> None:
        start.wait()
        results[i] = leases[i].try_acquire()

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(leases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [i for i, held in enumerate(results) if held is None]
    assert len(winners) == 1
    holder = f"writer-{winners[0]}"
    assert all(r is None or r.holder == holder for r in results)  # type: ignore[attr-defined]


def test_a_held_lease_is_refused_with_who_since_and_until(where: RemoteLocation) -> None:
    first = WriterLease(where, holder="builder-7:4242", ttl=30).acquire()
    try:
        second = WriterLease(where, holder="other:1", ttl=30, wait=0.3)
        started = time.monotonic()
        with pytest.raises(CollectionLeasedError) as caught:
            second.acquire()
        assert 0.25 < time.monotonic() - started < 5
        message = caught.value.message
        assert "builder-7:4242 since" in message and "lease expires at" in message
        assert isinstance(caught.value, CollectionLockedError)
        assert caught.value.code == "collection_leased"
    finally:
        first.release()
    assert not where.is_file(LEASE_NAME)  # released: the object is gone
    again = WriterLease(where, wait=0).acquire()
    again.release()


def test_a_waiting_writer_gets_the_lease_when_it_is_released(where: RemoteLocation) -> None:
    first = WriterLease(where, holder="first").acquire()
    timer = threading.Timer(0.6, first.release)
    timer.start()
    second = WriterLease(where, holder="second", wait=10)
    started = time.monotonic()
    second.acquire()  # serialised behind the first
    assert time.monotonic() - started >= 0.5
    assert second.read().holder == "second"  # type: ignore[union-attr]
    second.release()
    timer.join()


def test_renewal_keeps_a_lease_past_its_ttl_and_a_dead_writers_lease_expires(
    where: RemoteLocation,
) -> None:
    live = WriterLease(where, holder="live", ttl=2).acquire()
    try:
        time.sleep(2.4)  # past the ttl of a lease never renewed; this one is, every 2/3 s
        with pytest.raises(CollectionLeasedError):
            WriterLease(where, holder="other", wait=0, slack=EXACT).acquire()
    finally:
        live.release()
    # A writer that died: its lease is never renewed nor released.
    dead = WriterLease(where, holder="dead", ttl=1)
    assert dead.try_acquire() is None
    time.sleep(1.05)
    takeover = WriterLease(where, holder="next", wait=0, slack=EXACT)
    takeover.acquire()
    assert takeover.read().holder == "next"  # type: ignore[union-attr]
    # The dead writer cannot release (nor renew) the lease it lost.
    dead.release()
    assert takeover.read().holder == "next"  # type: ignore[union-attr]
    takeover.release()


def test_a_writer_that_stalled_past_its_expiry_learns_it_lost_the_lease(
    where: RemoteLocation,
) -> None:
    stalled = WriterLease(where, holder="stalled", ttl=1)
    assert stalled.try_acquire() is None
    time.sleep(1.05)
    thief = WriterLease(where, holder="thief", wait=0, slack=EXACT).acquire()
    stalled._renew_once()
    assert stalled.lost
    thief.release()


def test_a_garbled_lease_object_expires_like_any_other(where: RemoteLocation) -> None:
    where.write_bytes(LEASE_NAME, b"not json")
    current = WriterLease(where, ttl=30).try_acquire()
    assert current is not None and current.holder == "an unknown writer"
    time.sleep(1.05)
    lease = WriterLease(where, ttl=1, wait=0, slack=EXACT)
    lease.acquire()
    assert json.loads(where.read_bytes(LEASE_NAME))["holder"] == lease.holder
    lease.release()


class _NoConditionalDeletes:
    """An S3 client whose store refuses If-Match on deletes (older S3-compatible stores)."""

    def __init__(self, client: object) -> None:
        self._client = client

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)

    def delete_object(self, **kwargs: object) -> object:
        if "IfMatch" in kwargs:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "NotImplemented"}}, "DeleteObject")
        return self._client.delete_object(**kwargs)  # type: ignore[attr-defined]


def test_a_store_without_conditional_deletes_still_gets_its_lease_released(
    s3: S3Endpoint,  # noqa: F811
    tmp_path: Path,
) -> None:
    where = RemoteLocation(f"s3://{s3.bucket('lease')}/team/col", tmp_path / "work")
    lease = WriterLease(where, client=_NoConditionalDeletes(s3.client)).acquire()
    lease.release()
    bucket, key = _key(where)
    assert s3.keys(bucket, key) == []


def test_an_unreachable_or_wrong_azure_store_is_a_clear_error(
    azure: AzureEndpoint,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No such container: the lease names the settings to check, not a traceback.
    missing = RemoteLocation("az://no-such-container/col", tmp_path / "work")
    with pytest.raises(RemoteStorageError, match="ContainerNotFound") as caught:
        WriterLease(missing, wait=0).acquire()
    assert "AZURE_STORAGE_ACCOUNT_NAME" in caught.value.message
    # A wrong key: the service refuses the signature.
    where = RemoteLocation(f"az://{azure.container('lease')}/col", tmp_path / "work")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "d3Jvbmcga2V5")
    with pytest.raises(RemoteStorageError, match="HTTP 403"):
        WriterLease(where, wait=0).acquire()
    # Nothing listening at the endpoint.
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", "http://127.0.0.1:9")
    with pytest.raises(RemoteStorageError, match="cannot use the writer lease"):
        WriterLease(where, wait=0).acquire()


def test_an_azure_lease_needs_an_account_and_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in (
        "AZURE_STORAGE_USE_EMULATOR",
        "AZURE_STORAGE_ACCOUNT_NAME",
        "AZURE_STORAGE_ACCOUNT",
    ):
        monkeypatch.delenv(key, raising=False)
    where = RemoteLocation("az://container/col", tmp_path / "work")
    with pytest.raises(ConfigurationError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        WriterLease(where)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    for key in ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ConfigurationError, match="AZURE_STORAGE_SAS_TOKEN"):
        WriterLease(where)


def test_a_lease_removed_behind_its_writers_back_is_released_quietly(
    where: RemoteLocation, caplog: pytest.LogCaptureFixture
) -> None:
    # A ttl long enough that no renewal runs before the release, however slow the machine: a
    # renewal would find the lease gone and rightly report it taken over.
    lease = WriterLease(where, holder="writer", ttl=3600).acquire()
    where.delete(LEASE_NAME)  # an operator cleaned up by hand
    with caplog.at_level("WARNING", logger="docsight.index.lease"):
        lease.release()
    assert not caplog.records
    assert not where.is_file(LEASE_NAME)
