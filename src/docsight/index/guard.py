"""What the filesystem and Lance raise, turned into docsight errors at the store's edge.

Lance reports I/O failures as ``RuntimeError("lance error: ... (os error 28) ...")``, so the
errno is read from the message when the exception is not an ``OSError``. A full disk becomes
:class:`StorageFullError`, a read-only mount or missing permission :class:`ReadOnlyCollectionError`.
Any other failure of a read is retried once on freshly opened tables (a writer's cleanup may have
removed the version the read started on); if it fails again the tables are inspected, and damage
becomes :class:`CollectionDamagedError` naming what is damaged. A failure with no damage behind
it is a bug and is raised as it is.
"""

from __future__ import annotations

import errno
import functools
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from docsight.errors import (
    CollectionDamagedError,
    DocsightError,
    ReadOnlyCollectionError,
    RemoteStorageError,
    StorageFullError,
)

T = TypeVar("T")
_OS_ERROR = re.compile(r"os error (\d+)")
_FULL = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_SHOWN = 3


def os_errno(exc: BaseException) -> int | None:
    if isinstance(exc, OSError) and exc.errno:
        return exc.errno
    found = _OS_ERROR.search(str(exc))
    return int(found.group(1)) if found else None


def storage_error(exc: BaseException, path: Path, doing: str) -> DocsightError | None:
    """The docsight error for a full disk or a read-only collection, else ``None``."""
    code = os_errno(exc)
    if code in _FULL:
        return StorageFullError(
            f"the disk holding collection {path} is full ({doing}); nothing half-written is "
            "visible: free some space, then run the command again"
        )
    if code in _READ_ONLY:
        return ReadOnlyCollectionError(
            f"collection {path} cannot be written ({os.strerror(code or 0)}, {doing}); "
            "reading it (search, ask, docs, check) still works"
        )
    return None


def damaged(path: Path, problems: Sequence[str]) -> CollectionDamagedError:
    listed = "; ".join(problems[:_SHOWN])
    if len(problems) > _SHOWN:
        listed += f"; and {len(problems) - _SHOWN} more"
    return CollectionDamagedError(
        f"collection {path} is damaged: {listed}. `docsight check` lists what is lost; "
        "`docsight check --repair` restores a working collection"
    )


def _guarded(method: Callable[..., T], writing: bool) -> Callable[..., T]:
    doing = f"{'writing' if writing else 'reading'}: {method.__name__}"

    @functools.wraps(method)
    def call(store: Any, *args: Any, **kwargs: Any) -> T:
        state = store._guard_state
        if getattr(state, "active", False):
            return method(store, *args, **kwargs)  # the outermost call translates
        state.active = True
        try:
            return _call(store, method, args, kwargs, writing, doing)
        finally:
            state.active = False

    return call


def _call(
    store: Any,
    method: Callable[..., T],
    args: Any,
    kwargs: Any,
    writing: bool,
    doing: str,
) -> T:
    failure: Exception
    try:
        return method(store, *args, **kwargs)
    except DocsightError:
        raise
    except Exception as exc:
        mapped = storage_error(exc, store.path, doing)
        if mapped is not None:
            raise mapped from exc
        failure = exc
    if not writing:
        store._forget_tables()
        try:
            return method(store, *args, **kwargs)
        except DocsightError:
            raise
        except Exception as exc:
            mapped = storage_error(exc, store.path, doing)
            if mapped is not None:
                raise mapped from exc
            failure = exc
    if getattr(store, "remote", False):
        # On object storage a failure with no damage behind it is the storage's (a request
        # refused, the endpoint gone), and inspecting the tables may fail the same way.
        try:
            problems = store.damage()
        except Exception:
            problems = []
        if problems:
            raise damaged(store.path, problems) from failure
        raise _remote_failure(store.path, doing, failure) from failure
    problems = store.damage()
    if problems:
        raise damaged(store.path, problems) from failure
    raise failure


def _remote_failure(path: Any, doing: str, exc: BaseException) -> DocsightError:
    from docsight.index.repair import lance_reason

    return RemoteStorageError(
        f"collection {path}: the object store failed ({doing}): {lance_reason(exc)}; check the "
        "storage settings (for S3: AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, AWS_REGION, "
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
    )


def guard(cls: type, *, reads: Sequence[str], writes: Sequence[str]) -> None:
    """Wrap the named methods of a store class (it needs ``_guard_state``, ``_forget_tables``
    and ``damage``)."""
    for name in reads:
        setattr(cls, name, _guarded(getattr(cls, name), writing=False))
    for name in writes:
        setattr(cls, name, _guarded(getattr(cls, name), writing=True))
