"""The one exception tree of docsight.

Every error raised on purpose by the library derives from :class:`DocsightError`, so callers can
catch one type. Each class carries a stable ``code`` that the CLI prints, ingestion reports
store and the HTTP server will return as the problem type.
"""

from __future__ import annotations

from pathlib import Path


class DocsightError(Exception):
    """Base class of every error docsight raises on purpose."""

    code = "docsight_error"
    #: The command line's exit status for this error: 2 for usage errors (a bad argument, path
    #: or setting, fixed by asking differently), 1 for everything else.
    exit_status = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- configuration -----------------------------------------------------------------------------


class ConfigurationError(DocsightError):
    """Settings are invalid or contradict what a collection was built with."""

    code = "configuration_error"


class MissingDependencyError(ConfigurationError):
    """An optional feature was used without the extra that provides it."""

    code = "missing_dependency"

    def __init__(
        self, feature: str, extra: str | None, detail: str = "", hint: str | None = None
    ) -> None:
        if hint is None:
            hint = (
                f"install it with: pip install 'docsight[{extra}]'"
                if extra
                else "it is part of the default install; reinstall docsight"
            )
        message = (
            f"{feature} needs a package that is not installed ({detail or 'import failed'}); {hint}"
        )
        super().__init__(message)
        self.feature = feature
        self.extra = extra


class InvalidSettingError(ConfigurationError):
    """A setting (an environment variable such as ``DOCSIGHT_LLM_TIMEOUT``, or a value given in
    code) has a value it cannot take. The message names the variable, the value and what is
    allowed; the CLI exits with status 2, as for any usage error."""

    code = "invalid_setting"
    exit_status = 2

    def __init__(self, message: str, variables: list[str] | None = None) -> None:
        super().__init__(message)
        #: The environment variables at fault, in the order reported.
        self.variables = variables or []


class EngineUnavailableError(ConfigurationError):
    """The distributed ingestion engine (``ingest.engine = "ray"``) could not start or reach its
    cluster (``ingest.ray_address``, ``--address``)."""

    code = "engine_unavailable"


class UnknownBackendError(ConfigurationError):
    """A registry was asked for a name it does not know."""

    code = "unknown_backend"
    exit_status = 2


# --- ingestion ---------------------------------------------------------------------------------


class IngestError(DocsightError):
    """A file could not be ingested. Always names the file and the reason."""

    code = "ingest_error"

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class UnsupportedFormatError(IngestError):
    code = "unsupported_format"


class ContentMismatchError(UnsupportedFormatError):
    """The file's content contradicts its extension (a PNG named ``.pdf``)."""

    code = "content_mismatch"


class ParseError(IngestError):
    code = "parse_error"


class LimitExceededError(IngestError):
    """The file is larger than a configured limit (size, pages, pixels)."""

    code = "limit_exceeded"


class EncryptedDocumentError(IngestError):
    code = "encrypted"


class IngestTimeoutError(IngestError):
    """Parsing the file took longer than ``ingest.timeout_s``; its worker was killed."""

    code = "timeout"


class OutOfMemoryError(IngestError):
    """Parsing the file needed more memory than ``ingest.memory_mb`` (or ran out of it)."""

    code = "out_of_memory"


class CpuLimitError(IngestError):
    """Parsing the file used more CPU time than ``ingest.cpu_s``."""

    code = "cpu_limit"


class WorkerCrashedError(IngestError):
    """The parser crashed the worker process (a signal such as SIGABRT or SIGSEGV)."""

    code = "worker_crashed"


# --- store -------------------------------------------------------------------------------------


class StoreError(DocsightError):
    code = "store_error"


class SchemaVersionError(StoreError):
    """The collection on disk was written by an incompatible version of docsight."""

    code = "schema_version"


class CollectionNotFoundError(StoreError):
    """No collection exists at the given directory (a usage error: exit status 2)."""

    code = "collection_not_found"
    exit_status = 2


class CollectionLockedError(StoreError):
    """Another process holds the collection's writer lock."""

    code = "collection_locked"


class CollectionLeasedError(CollectionLockedError):
    """Another writer holds the lease of a collection on object storage; the message says who,
    since when and when the lease expires."""

    code = "collection_leased"


class RemoteStorageError(StoreError):
    """Object storage holding the collection cannot be reached or refused a request (a wrong
    endpoint, missing credentials, no such bucket)."""

    code = "remote_storage"


class RemoteUnsupportedError(StoreError):
    """Something a collection on object storage cannot do; the message names the reason and
    the setting or command that gets around it (a usage error: exit status 2)."""

    code = "remote_unsupported"
    exit_status = 2


class DocumentNotFoundError(StoreError):
    """No document by that name, id or page; the message names the closest names."""

    code = "document_not_found"
    exit_status = 2


class StorageFullError(StoreError):
    """The disk (or quota) holding the collection is full; nothing half-written stays visible."""

    code = "storage_full"


class ReadOnlyCollectionError(StoreError):
    """The collection cannot be written (a read-only mount or missing permissions); reads work."""

    code = "read_only"


class CollectionDamagedError(StoreError):
    """Files of the collection are missing or damaged; ``docsight check`` lists what is lost and
    ``docsight check --repair`` restores a working collection."""

    code = "collection_damaged"


class AmbiguousDocumentError(StoreError):
    code = "ambiguous_document"
    exit_status = 2


class SessionNotFoundError(StoreError):
    """No conversation by that id in the collection (``docsight chat --session``)."""

    code = "session_not_found"
    exit_status = 2


# --- models ------------------------------------------------------------------------------------


class LLMError(DocsightError):
    """A chat or embedding endpoint failed after retries."""

    code = "llm_error"


class LLMNotConfiguredError(LLMError):
    code = "llm_not_configured"


class LLMConnectionError(LLMError):
    code = "llm_connection"


class LLMTimeoutError(LLMError):
    code = "llm_timeout"


class LLMRateLimitError(LLMError):
    code = "llm_rate_limited"


class LLMStatusError(LLMError):
    """The endpoint answered with an HTTP error status that retries did not cure."""

    code = "llm_status"

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class LLMResponseError(LLMError):
    """The model's answer could not be used (empty, or invalid JSON after the repair attempt)."""

    code = "llm_bad_response"


class EncoderError(DocsightError):
    code = "encoder_error"


# --- queries -----------------------------------------------------------------------------------


class UsageError(DocsightError):
    """An argument is out of range or of the wrong kind (the API's version of a CLI usage error).
    The CLI exits with status 2."""

    code = "usage_error"
    exit_status = 2


class EmptyQuestionError(UsageError):
    """A question (or search query) with no words in it."""

    code = "empty_question"


class PathNotFoundError(UsageError):
    """A file or folder named for ingestion does not exist; nothing was created or changed."""

    code = "path_not_found"

    def __init__(self, paths: list[str]) -> None:
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        noun = "path does" if len(paths) == 1 else "paths do"
        super().__init__(f"no such file or folder: {shown} (the {noun} not exist; nothing done)")
        self.paths = paths


class QueryImageError(DocsightError):
    """A query image could not be used: unreadable, not an image, or over a limit."""

    code = "bad_query_image"
    exit_status = 2

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


# --- server ------------------------------------------------------------------------------------


class UnauthorizedError(DocsightError):
    """A request to ``docsight serve`` lacked the API key, or sent a wrong one."""

    code = "unauthorized"


class TooManyJobsError(DocsightError):
    """``docsight serve`` already runs its most ingestion jobs at once (``server.max_jobs``);
    the upload is refused before any byte of it is stored, so it can simply be sent again."""

    code = "too_many_jobs"


class JobNotFoundError(DocsightError):
    """No ingestion job by that id (unknown, or finished long enough ago to be forgotten)."""

    code = "job_not_found"
    exit_status = 2
