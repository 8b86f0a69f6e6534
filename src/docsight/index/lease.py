"""The writer guard of a collection on object storage: a lease object.

A file lock needs a local disk, so a remote collection is guarded by one small object,
``writer.lease``, beside its tables. A writer takes the lease with a conditional create (S3's
``If-None-Match: *``: of two writers racing, exactly one succeeds), renews it from a background
thread with a conditional overwrite (``If-Match`` on the ETag it last wrote: a writer that lost
the lease cannot renew somebody else's), and deletes it when done. A writer that dies leaves a
lease that expires ``ttl`` seconds after its last renewal; the next writer then takes it over,
again with ``If-Match``, so two writers can never both take over the same stale lease.

Expiry is judged on the storage server's clock (the object's ``Last-Modified`` against the
``Date`` of the response), so writers on machines whose clocks disagree still agree on it.

The protocol needs three conditional requests of the store: create only if absent, overwrite
only if the ETag matches, delete only if the ETag matches. S3 (through boto3) and Azure Blob
(its REST API, ``docsight.index.azure_blob``) have them; ``gs://`` is refused with the setting
that opts out (docs/scale.md says why).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Protocol

from docsight.errors import (
    CollectionLeasedError,
    ConfigurationError,
    MissingDependencyError,
    RemoteStorageError,
    RemoteUnsupportedError,
)
from docsight.index.location import RemoteLocation, s3_settings

if TYPE_CHECKING:
    from docsight.settings import Settings

log = logging.getLogger(__name__)

LEASE_NAME = "writer.lease"
_POLL_S = 0.5
#: Last-Modified and Date have whole seconds: a lease is judged expired one second late, never
#: early.
_SLACK = timedelta(seconds=1)


@dataclass(frozen=True)
class LeaseHolder:
    """What a lease object says, with the server's view of its age."""

    holder: str
    acquired: datetime
    renewed: datetime
    ttl: float
    etag: str
    #: The server's clock when the lease was read.
    now: datetime

    @property
    def expires(self) -> datetime:
        return self.renewed + timedelta(seconds=self.ttl)

    #: Added to the expiry before a lease counts as expired (see ``_SLACK``).
    slack: timedelta = timedelta(0)

    @property
    def expired(self) -> bool:
        return self.now >= self.expires + self.slack


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Conflict(Exception):
    """A precondition failed: the lease exists (create) or is not the ETag given (overwrite)."""


@dataclass(frozen=True)
class _Stored:
    body: bytes
    etag: str
    last_modified: datetime
    #: The server's clock when it answered.
    now: datetime


class _LeaseStore(Protocol):
    """The conditional requests the lease is built on, for one object of one store."""

    def create(self, body: bytes) -> str: ...  # ETag; _Conflict when the object exists
    def replace(self, body: bytes, etag: str) -> str: ...  # ETag; _Conflict on another ETag
    def get(self) -> _Stored | None: ...
    def delete(self, etag: str) -> None: ...  # _Conflict when the object is not that ETag
    def error(self, exc: Exception) -> RemoteStorageError: ...


class _S3Store:
    def __init__(self, location: RemoteLocation, key: str, client: Any = None) -> None:
        self.location = location
        self._bucket = location.bucket
        self._key = key
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:
                raise MissingDependencyError(
                    "writing to an s3:// collection (its writer lease)", "remote", str(exc)
                ) from exc
            env = s3_settings()
            self._client = boto3.client(
                "s3",
                endpoint_url=env["endpoint"],
                region_name=env["region"],
                aws_access_key_id=env["key"],
                aws_secret_access_key=env["secret"],
                aws_session_token=env["token"],
                config=Config(retries={"max_attempts": 3, "mode": "standard"}),
            )
        return self._client

    def _put(self, body: bytes, **condition: str) -> str:
        try:
            response = self.client.put_object(
                Bucket=self._bucket, Key=self._key, Body=body, **condition
            )
        except Exception as exc:
            if _code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                raise _Conflict from exc
            raise
        return str(response["ETag"])

    def create(self, body: bytes) -> str:
        return self._put(body, IfNoneMatch="*")

    def replace(self, body: bytes, etag: str) -> str:
        return self._put(body, IfMatch=etag)

    def get(self) -> _Stored | None:
        try:
            response = self.client.get_object(Bucket=self._bucket, Key=self._key)
        except Exception as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None
            raise
        headers = response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        now = parsedate_to_datetime(headers["date"]) if "date" in headers else datetime.now(UTC)
        body = response["Body"].read()
        return _Stored(body, str(response["ETag"]), response["LastModified"], now)

    def delete(self, etag: str) -> None:
        try:
            self.client.delete_object(Bucket=self._bucket, Key=self._key, IfMatch=etag)
        except Exception as exc:
            if _code(exc) in ("PreconditionFailed", "412"):
                raise _Conflict from exc
            self._delete_unconditionally(etag, exc)

    def _delete_unconditionally(self, etag: str, first: Exception) -> None:
        """For a store without conditional deletes: delete the lease when it is still ours
        (a narrow race with a takeover, which only happens once ours has expired)."""
        try:
            current = self.get()
            if current is not None and current.etag == etag:
                self.client.delete_object(Bucket=self._bucket, Key=self._key)
        except Exception as exc:
            # Left in place it expires after its ttl; the next writer then takes it over.
            log.warning(
                "could not release the writer lease of %s: %s (%s)", self.location.uri, exc, first
            )

    def error(self, exc: Exception) -> RemoteStorageError:
        return RemoteStorageError(
            f"cannot use the writer lease of {self.location.uri}: {exc}; check the S3 settings "
            "(AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
        )


class _AzureStore:
    """The lease blob on Azure Blob Storage: Put Blob with ``If-None-Match: *`` (409
    ``BlobAlreadyExists`` when it exists) and ``If-Match`` (412 ``ConditionNotMet``)."""

    def __init__(self, location: RemoteLocation, key: str) -> None:
        from docsight.index.azure_blob import BlobClient, azure_settings

        self.location = location
        self._blob = BlobClient(azure_settings(), location.bucket, key)

    def _check(self, response: Any, ok: tuple[int, ...]) -> Any:
        if response.status in ok:
            return response
        if response.status in (409, 412) and response.error_code in (
            "BlobAlreadyExists",
            "ConditionNotMet",
        ):
            raise _Conflict(response.error_code)
        raise RuntimeError(f"HTTP {response.status} {response.error_code or ''}".strip())

    def _put(self, body: bytes, condition: dict[str, str]) -> str:
        headers = {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/json"}
        response = self._check(self._blob.request("PUT", {**headers, **condition}, body), (201,))
        return str(response.headers["etag"])

    def create(self, body: bytes) -> str:
        return self._put(body, {"If-None-Match": "*"})

    def replace(self, body: bytes, etag: str) -> str:
        return self._put(body, {"If-Match": etag})

    def get(self) -> _Stored | None:
        response = self._blob.request("GET")
        if response.status == 404 and response.error_code == "BlobNotFound":
            return None
        self._check(response, (200,))
        headers = response.headers
        now = parsedate_to_datetime(headers["date"]) if "date" in headers else datetime.now(UTC)
        renewed = parsedate_to_datetime(headers["last-modified"])
        return _Stored(response.body, str(headers["etag"]), renewed, now)

    def delete(self, etag: str) -> None:
        response = self._blob.request("DELETE", {"If-Match": etag})
        if response.status == 404 and response.error_code == "BlobNotFound":
            raise _Conflict(response.error_code)  # gone already: not ours to delete any more
        self._check(response, (202,))

    def error(self, exc: Exception) -> RemoteStorageError:
        from docsight.index.azure_blob import SETTINGS_HINT

        return RemoteStorageError(
            f"cannot use the writer lease of {self.location.uri}: {exc}; check the Azure "
            f"settings ({SETTINGS_HINT})"
        )


def _store(location: RemoteLocation, key: str, client: Any) -> _LeaseStore:
    if location.scheme == "s3":
        return _S3Store(location, key, client)
    if location.scheme == "az":
        return _AzureStore(location, key)
    raise RemoteUnsupportedError(
        f"collection {location.uri}: writing needs a writer lease, which docsight takes with "
        "conditional writes on S3 and Azure Blob; a lease for "
        f"{location.scheme}:// is not built (no emulator to test it against here). Set "
        "DOCSIGHT_REMOTE_LOCK=none to write without a guard (only when no other writer can "
        "run at the same time)"
    )


class WriterLease:
    """A lease on ``location``; use as ``acquire()`` … ``release()`` (the writer lock's API)."""

    def __init__(
        self,
        location: RemoteLocation,
        *,
        ttl: float = 60.0,
        wait: float = 30.0,
        holder: str | None = None,
        client: Any = None,
        slack: timedelta = _SLACK,
    ) -> None:
        _, _, prefix = location.base.partition("/")
        key = f"{prefix}/{LEASE_NAME}" if prefix else LEASE_NAME
        # ``client``: an S3 client to use instead of one built from the AWS variables.
        self._store = _store(location, key, client)
        self.location = location
        self.ttl = float(ttl)
        self.wait = float(wait)
        self.holder = holder or holder_name()
        self.slack = slack
        self._etag: str | None = None
        self._acquired: datetime | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        #: Set when a renewal found the lease taken over (this writer stalled past its expiry).
        self.lost = False

    def _body(self) -> bytes:
        acquired = self._acquired or datetime.now(UTC)
        return json.dumps(
            {"holder": self.holder, "acquired": acquired.isoformat(), "ttl": self.ttl}
        ).encode()

    def read(self) -> LeaseHolder | None:
        """The current lease (``None``: nobody holds one)."""
        try:
            stored = self._store.get()
        except (ConfigurationError, MissingDependencyError):
            raise
        except Exception as exc:
            raise self._store.error(exc) from exc
        if stored is None:
            return None
        try:
            data = json.loads(stored.body)
            holder = str(data["holder"])
            acquired = datetime.fromisoformat(data["acquired"])
            ttl = float(data["ttl"])
        except (ValueError, KeyError, TypeError):
            # Not written by us, or cut short: treat as a lease that expires a default ttl
            # after it was written, so a garbled object cannot block writers for ever.
            holder, acquired, ttl = "an unknown writer", stored.last_modified, self.ttl
        return LeaseHolder(
            holder, acquired, stored.last_modified, ttl, stored.etag, stored.now, self.slack
        )

    def _write(self, etag: str | None) -> bool:
        """Create the lease (``etag`` None) or overwrite the one with ``etag``; False when the
        precondition failed (somebody else's lease is there)."""
        try:
            body = self._body()
            self._etag = (
                self._store.create(body) if etag is None else self._store.replace(body, etag)
            )
            return True
        except _Conflict:
            return False
        except (ConfigurationError, MissingDependencyError):
            raise
        except Exception as exc:
            raise self._store.error(exc) from exc

    # --- the lock API ---------------------------------------------------------------------------

    def try_acquire(self) -> LeaseHolder | None:
        """Take the lease if it is free or expired; otherwise the current holder."""
        self._acquired = datetime.now(UTC)
        if self._write(None):
            return None
        current = self.read()
        if current is None:
            return self.try_acquire()  # released between our two requests
        if not current.expired:
            return current
        if not self._write(current.etag):
            return self.read() or current  # another writer took it over first
        log.warning(
            "took over the writer lease of %s from %s, which expired at %s",
            self.location.uri,
            current.holder,
            _stamp(current.expires),
        )
        return None

    def acquire(self) -> WriterLease:
        deadline = time.monotonic() + self.wait
        while True:
            current = self.try_acquire()
            if current is None:
                break
            if time.monotonic() >= deadline:
                raise CollectionLeasedError(
                    f"another writer holds {self.location.uri}: {current.holder} since "
                    f"{_stamp(current.acquired)}, lease expires at {_stamp(current.expires)} "
                    f"unless renewed (waited {self.wait:g} s; DOCSIGHT_LOCK_TIMEOUT sets the wait)"
                )
            time.sleep(min(_POLL_S, max(0.0, deadline - time.monotonic())))
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name="docsight-lease", daemon=True)
        self._renewer.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3) and not self.lost:
            self._renew_once()

    def _renew_once(self) -> None:
        """Rewrite the lease (its Last-Modified is the renewal), only if it is still ours."""
        assert self._etag is not None
        try:
            renewed = self._write(self._etag)
        except Exception as exc:
            # A passing network error: the lease is still ours until it expires.
            log.warning("could not renew the writer lease of %s: %s", self.location.uri, exc)
            return
        if not renewed:
            self.lost = True
            log.error(
                "the writer lease of %s was taken over by another writer (this one "
                "stalled past its expiry); run `docsight check` when both are done",
                self.location.uri,
            )

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
            self._renewer = None
        if self._etag is None or self.lost:
            return
        try:
            # Only our own lease: If-Match on the ETag we last wrote.
            self._store.delete(self._etag)
        except _Conflict:
            pass  # somebody else's lease now; it is not ours to delete
        except Exception as exc:
            # Left in place it expires after its ttl; the next writer then takes it over.
            log.warning("could not release the writer lease of %s: %s", self.location.uri, exc)
        self._etag = None

    def __enter__(self) -> WriterLease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def writer_guard(location: RemoteLocation, settings: Settings) -> WriterLease | NoGuard:
    """The writer guard of a remote collection: a file lock needs a local disk, so a lease
    object (or, with ``DOCSIGHT_REMOTE_LOCK=none``, no guard at all)."""
    if settings.remote_lock == "none":
        return NoGuard()
    return WriterLease(location, ttl=settings.lease_seconds, wait=settings.lock_timeout)


class NoGuard:
    """``DOCSIGHT_REMOTE_LOCK=none``: the writer trusts that nobody else writes."""

    def acquire(self) -> NoGuard:
        return self

    def release(self) -> None:
        return None


def _code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        code = error.get("Code")
        if code:
            return str(code)
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return str(status) if status else None
    return None
