"""Where a collection lives: a local directory, or a prefix on object storage.

A collection keeps two kinds of things. What every reader and writer must share lives *with
the collection*: the Lance tables, the manifest ``collection.json``, the source files kept for
page images and the recovery backups. What only serves the process at hand lives in a local
*working directory*: caches (model outputs, parsed artifacts), conversation sessions, and local
copies of kept files that a renderer needs as a POSIX file. For a local collection both are the
same directory, exactly as before; for ``s3://``, ``gs://`` or ``az://`` the working directory
is derived from the URI under the user's cache directory (``DOCSIGHT_WORK_DIR`` overrides it).

Lance reaches object storage by itself, given storage options; every other object goes through
:class:`Location`, whose local side uses :mod:`pathlib` and ``os`` (temporary name, then an atomic
rename) and whose remote side uses :mod:`pyarrow.fs` (an object appears whole when its upload
finishes, so no temporary name is needed). Paths handed to a location are relative to the
collection root and always use ``/``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from docsight.errors import CollectionNotFoundError, RemoteStorageError, UsageError

#: Schemes Lance's object store understands and that docsight passes through to it.
REMOTE_SCHEMES = ("s3", "gs", "az")
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$")
# ``Path("s3://b/p")`` collapses the double slash; such a path still names the URI.
_COLLAPSED = re.compile(r"^(s3|gs|az):/([^/].*)$")
_TRUE = {"1", "true", "yes", "on"}


def is_true(value: str | None) -> bool:
    """Whether a setting's text says yes ("1", "true", "yes", "on", any case)."""
    return (value or "").lower() in _TRUE


#: How long a gs:// request may be retried before the command fails with the reason.
_GCS_RETRY_S = 15


def is_uri(value: str | os.PathLike[str]) -> bool:
    """Whether ``value`` names a collection on object storage (or an unknown URI scheme)."""
    text = os.fspath(value)
    return bool(_URI.match(text) or _COLLAPSED.match(text))


def normalize(value: str | os.PathLike[str]) -> Path | str:
    """A local collection as a :class:`Path`; a remote one as its URI, without a trailing
    slash. ``file://`` URIs are local paths. An unknown scheme is a :class:`UsageError`."""
    text = os.fspath(value)
    collapsed = _COLLAPSED.match(text)
    if collapsed:
        text = f"{collapsed.group(1)}://{collapsed.group(2)}"
    match = _URI.match(text)
    if not match:
        return Path(text)
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme == "file":
        return Path(rest or "/")
    if scheme not in REMOTE_SCHEMES:
        raise UsageError(
            f"collection {text!r}: unknown scheme {scheme}://; use a local directory or one of "
            + ", ".join(f"{s}://" for s in REMOTE_SCHEMES)
        )
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise UsageError(f"collection {text!r} names no bucket: use {scheme}://BUCKET/PREFIX")
    prefix = prefix.strip("/")
    return f"{scheme}://{bucket}" + (f"/{prefix}" if prefix else "")


def default_work_dir(uri: str) -> Path:
    """The local working directory of a remote collection: under ``$XDG_CACHE_HOME`` (or
    ``~/.cache``), named after the URI so that two collections never share one, and readable
    enough to find by hand."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", uri.split("://", 1)[1]).strip("_")[:80]
    digest = hashlib.sha256(uri.encode()).hexdigest()[:12]
    return base / "docsight" / "collections" / uri.split("://", 1)[0] / f"{readable}-{digest}"


def open_location(value: str | os.PathLike[str], work_dir: Path | None = None) -> Location:
    """The location of a collection named by a directory or a URI."""
    target = normalize(value)
    if isinstance(target, Path):
        return LocalLocation(target)
    return RemoteLocation(target, Path(work_dir) if work_dir else default_work_dir(target))


# --- the interface ----------------------------------------------------------------------------


class Location(ABC):
    """The shared part of a collection; ``work_dir`` is its local working part."""

    #: What the user named (a directory or a URI), for messages.
    display: str
    #: Where caches, sessions and local copies of kept files go.
    work_dir: Path
    remote: bool

    @abstractmethod
    def lance_uri(self, rel: str) -> str:
        """The URI or path Lance opens for ``rel`` (the tables' folder)."""

    @abstractmethod
    def storage_options(self) -> dict[str, str]:
        """Options for Lance's object store (empty for a local directory)."""

    @abstractmethod
    def root_exists(self) -> bool:
        """Whether the collection's root is there (a directory; any object under a prefix)."""

    @abstractmethod
    def is_file(self, rel: str) -> bool: ...

    @abstractmethod
    def is_dir(self, rel: str) -> bool:
        """A directory, or for object storage a prefix with at least one object under it."""

    @abstractmethod
    def read_bytes(self, rel: str) -> bytes:
        """Raises :class:`FileNotFoundError` when there is no such file."""

    def read_blocks(self, rel: str, size: int) -> Iterator[bytes]:
        """The file's bytes, ``size`` at a time (a large file is never held whole)."""
        with open(self.local_path(rel), "rb") as handle:
            while block := handle.read(size):
                yield block

    @abstractmethod
    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write whole or not at all: readers see the old bytes or the new ones."""

    @abstractmethod
    def files(self, rel: str) -> dict[str, int]:
        """Every file under ``rel`` (recursively) by its path relative to the root, with its
        size; empty when there is none."""

    @abstractmethod
    def children(self, rel: str) -> list[str]:
        """Names of the entries directly under ``rel`` (files and folders), sorted."""

    @abstractmethod
    def delete(self, rel: str) -> None:
        """Remove a file; a missing one is no error."""

    @abstractmethod
    def delete_tree(self, rel: str) -> None:
        """Remove a folder with everything under it; a missing one is no error."""

    @abstractmethod
    def move(self, rel: str, to: str) -> None:
        """Move a file or a folder to ``to`` (both relative to the root)."""

    @abstractmethod
    def copy(self, rel: str, to: str) -> None:
        """Copy one file, whole or not at all."""

    @abstractmethod
    def upload(self, local: Path, rel: str) -> None:
        """Copy a local file in, whole or not at all."""

    @abstractmethod
    def local_path(self, rel: str) -> Path:
        """A local file with the bytes of ``rel``: the file itself for a local collection, a
        copy in the working directory for a remote one (fetched when missing or of another
        size). Raises :class:`FileNotFoundError` when the collection has no such file."""

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def write_text(self, rel: str, text: str) -> None:
        self.write_bytes(rel, text.encode("utf-8"))

    def __str__(self) -> str:
        return self.display


# --- a local directory -----------------------------------------------------------------------


@dataclass
class LocalLocation(Location):
    """A collection in a local directory; its working part is the same directory."""

    root: Path
    remote: bool = False
    display: str = field(init=False)
    work_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.display = str(self.root)
        self.work_dir = self.root

    def _p(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def lance_uri(self, rel: str) -> str:
        return str(self._p(rel))

    def storage_options(self) -> dict[str, str]:
        return {}

    def root_exists(self) -> bool:
        return self.root.exists()

    def is_file(self, rel: str) -> bool:
        return self._p(rel).is_file()

    def is_dir(self, rel: str) -> bool:
        return self._p(rel).is_dir()

    def read_bytes(self, rel: str) -> bytes:
        return self._p(rel).read_bytes()

    def write_bytes(self, rel: str, data: bytes) -> None:
        target = self._p(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: readers see the old or the new file

    def files(self, rel: str) -> dict[str, int]:
        base = self._p(rel)
        found: dict[str, int] = {}
        if not base.is_dir():
            return found
        for file in base.rglob("*"):
            with contextlib.suppress(OSError):
                if file.is_file():
                    found[file.relative_to(self.root).as_posix()] = file.stat().st_size
        return found

    def children(self, rel: str) -> list[str]:
        base = self._p(rel)
        return sorted(p.name for p in base.iterdir()) if base.is_dir() else []

    def delete(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._p(rel).unlink()

    def delete_tree(self, rel: str) -> None:
        if self._p(rel).is_dir():
            shutil.rmtree(self._p(rel))

    def move(self, rel: str, to: str) -> None:
        self._p(to).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self._p(rel)), str(self._p(to)))

    def copy(self, rel: str, to: str) -> None:
        target = self._p(to)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        shutil.copyfile(self._p(rel), tmp)
        os.replace(tmp, target)

    def upload(self, local: Path, rel: str) -> None:
        target = self._p(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.copyfile(local, tmp)
        os.replace(tmp, target)

    def local_path(self, rel: str) -> Path:
        path = self._p(rel)
        if not path.is_file():
            raise FileNotFoundError(str(path))
        return path


# --- object storage --------------------------------------------------------------------------


def first_env(*names: str) -> str | None:
    """The first of the environment variables ``names`` that is set and not empty."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def s3_settings() -> dict[str, str | None]:
    """The standard AWS variables, as every AWS tool reads them."""
    return {
        "endpoint": first_env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
        "allow_http": first_env("AWS_ALLOW_HTTP"),
        "key": first_env("AWS_ACCESS_KEY_ID"),
        "secret": first_env("AWS_SECRET_ACCESS_KEY"),
        "token": first_env("AWS_SESSION_TOKEN"),
        "region": first_env("AWS_REGION", "AWS_DEFAULT_REGION"),
    }


F = TypeVar("F", bound=Callable[..., Any])


def _reaching(method: F) -> F:
    """A remote call that fails for a reason other than a missing file (a wrong endpoint, no
    credentials, no such bucket) raises :class:`RemoteStorageError` naming the settings."""

    @functools.wraps(method)
    def call(self: RemoteLocation, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (FileNotFoundError, RemoteStorageError, UsageError):
            raise
        except OSError as exc:
            raise RemoteStorageError(
                f"cannot reach {self.uri}: {str(exc).splitlines()[0][:300]}; check the storage "
                f"settings ({self.hint})"
            ) from exc

    return call  # type: ignore[return-value]


@dataclass
class RemoteLocation(Location):
    """A collection under ``scheme://bucket/prefix``."""

    uri: str
    work_dir: Path
    remote: bool = True
    display: str = field(init=False)
    scheme: str = field(init=False)
    #: ``bucket/prefix``: the root as pyarrow.fs names it.
    base: str = field(init=False)
    _fs: Any = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.display = self.uri
        self.scheme, self.base = self.uri.split("://", 1)

    def _key(self, rel: str) -> str:
        return f"{self.base}/{rel}" if rel else self.base

    def _rel(self, key: str) -> str:
        return key[len(self.base) + 1 :]

    def lance_uri(self, rel: str) -> str:
        return f"{self.uri}/{rel}" if rel else self.uri

    def storage_options(self) -> dict[str, str]:
        if self.scheme == "az":
            from docsight.index.azure_blob import azure_settings

            return azure_settings().storage_options()
        if self.scheme != "s3":
            return {}  # gs:// reads its own standard variables inside Lance
        env = s3_settings()
        options = {
            "aws_endpoint": env["endpoint"],
            "aws_access_key_id": env["key"],
            "aws_secret_access_key": env["secret"],
            "aws_session_token": env["token"],
            "aws_region": env["region"],
        }
        if is_true(env["allow_http"]):
            options["allow_http"] = "true"
        return {k: v for k, v in options.items() if v}

    @property
    def fs(self) -> Any:
        if self._fs is None:
            self._fs = self._filesystem()
        return self._fs

    def _filesystem(self) -> Any:
        import pyarrow.fs as pafs

        try:
            if self.scheme == "s3":
                env = s3_settings()
                endpoint = env["endpoint"]
                scheme = "https"
                if endpoint and "://" in endpoint:
                    scheme, endpoint = endpoint.split("://", 1)
                if scheme == "http" and not is_true(env["allow_http"]):
                    raise UsageError(
                        f"AWS_ENDPOINT_URL is plain http ({env['endpoint']}): set "
                        "AWS_ALLOW_HTTP=true to allow an unencrypted endpoint (a local one)"
                    )
                # Unset values are left to the AWS SDK's own chain (profile, instance role).
                given = {
                    "access_key": env["key"],
                    "secret_key": env["secret"],
                    "session_token": env["token"],
                    "region": env["region"],
                    "endpoint_override": endpoint,
                }
                return pafs.S3FileSystem(
                    scheme=scheme, **{k: v for k, v in given.items() if v is not None}
                )
            if self.scheme == "az":
                from docsight.index.azure_blob import azure_settings

                return azure_settings().filesystem()
            if self.scheme == "gs":
                # Google's client retries for up to 15 minutes by default, so without
                # credentials (no metadata server, no key file) every command would hang that
                # long before saying so.
                return pafs.GcsFileSystem(retry_time_limit=timedelta(seconds=_GCS_RETRY_S))
            filesystem, _ = pafs.FileSystem.from_uri(self.uri)
            return filesystem
        except (OSError, ValueError, ImportError) as exc:
            raise RemoteStorageError(
                f"cannot reach {self.uri}: {exc}; check the storage settings ({self.hint})"
            ) from exc

    @property
    def hint(self) -> str:
        """The settings that point docsight at this collection's store."""
        if self.scheme == "az":
            from docsight.index.azure_blob import SETTINGS_HINT

            return SETTINGS_HINT
        if self.scheme == "gs":
            return "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT"
        return (
            "AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"
        )

    def _info(self, rel: str) -> Any:
        return self.fs.get_file_info(self._key(rel))

    @_reaching
    def root_exists(self) -> bool:
        return bool(self.files(""))

    @property
    def bucket(self) -> str:
        return self.base.split("/", 1)[0]

    @_reaching
    def bucket_exists(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self.fs.get_file_info(self.bucket).type != pafs.FileType.NotFound)

    def not_found(self) -> CollectionNotFoundError:
        """The error for a URI with no collection under it, telling a missing bucket apart."""
        if not self.bucket_exists():
            kind = "container" if self.scheme == "az" else "bucket"
            return CollectionNotFoundError(
                f"no collection at {self.uri}: there is no {kind} {self.bucket} at the endpoint "
                f"({self.hint}); check --collection or create the {kind}"
            )
        return CollectionNotFoundError(
            f"no collection at {self.uri} (nothing stored under that prefix); check "
            "--collection (or $DOCSIGHT_COLLECTION_DIR), or create one with "
            "`docsight ingest PATH`"
        )

    @_reaching
    def is_file(self, rel: str) -> bool:
        import pyarrow.fs as pafs

        return bool(self._info(rel).type == pafs.FileType.File)

    @_reaching
    def is_dir(self, rel: str) -> bool:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._key(rel), allow_not_found=True, recursive=False)
        return bool(self.fs.get_file_info(selector))

    @_reaching
    def read_bytes(self, rel: str) -> bytes:
        try:
            with self.fs.open_input_stream(self._key(rel)) as stream:
                return bytes(stream.read())
        except FileNotFoundError:
            raise
        except OSError as exc:
            if not self.is_file(rel):
                raise FileNotFoundError(self.lance_uri(rel)) from exc
            raise

    def read_blocks(self, rel: str, size: int) -> Iterator[bytes]:
        try:
            with self.fs.open_input_stream(self._key(rel)) as stream:
                while block := stream.read(size):
                    yield bytes(block)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise RemoteStorageError(f"cannot read {self.lance_uri(rel)}: {exc}") from exc

    @_reaching
    def write_bytes(self, rel: str, data: bytes) -> None:
        # An object is visible only once its upload completes: no temporary name needed.
        with self.fs.open_output_stream(self._key(rel)) as out:
            out.write(data)

    @_reaching
    def files(self, rel: str) -> dict[str, int]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._key(rel), allow_not_found=True, recursive=True)
        return {
            self._rel(info.path): int(info.size or 0)
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        }

    @_reaching
    def children(self, rel: str) -> list[str]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._key(rel), allow_not_found=True, recursive=False)
        return sorted(PurePosixPath(i.path).name for i in self.fs.get_file_info(selector))

    @_reaching
    def delete(self, rel: str) -> None:
        if self.scheme == "az":
            from docsight.index.azure_blob import azure_settings, delete_blob

            settings = azure_settings()
            if settings.key or settings.sas_token:  # else pyarrow's Azure AD login below
                delete_blob(settings, self._key(rel))
                return
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self._key(rel))

    def delete_tree(self, rel: str) -> None:
        for name in self.files(rel):
            self.delete(name)

    @_reaching
    def move(self, rel: str, to: str) -> None:
        # Object stores have no rename: copy every object, then delete the originals.
        names = self.files(rel) if self.is_dir(rel) else {rel: 0}
        for name in names:
            target = to + name[len(rel) :]
            self.fs.copy_file(self._key(name), self._key(target))
        for name in names:
            self.delete(name)

    @_reaching
    def copy(self, rel: str, to: str) -> None:
        self.fs.copy_file(self._key(rel), self._key(to))

    @_reaching
    def upload(self, local: Path, rel: str) -> None:
        with open(local, "rb") as src, self.fs.open_output_stream(self._key(rel)) as out:
            while block := src.read(1 << 20):
                out.write(block)

    @_reaching
    def local_path(self, rel: str) -> Path:
        target = self.work_dir / "files" / PurePosixPath(rel)
        info = self._info(rel)
        import pyarrow.fs as pafs

        if info.type != pafs.FileType.File:
            raise FileNotFoundError(self.lance_uri(rel))
        if target.is_file() and target.stat().st_size == info.size:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        try:
            with self.fs.open_input_stream(self._key(rel)) as src, open(tmp, "wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return target
