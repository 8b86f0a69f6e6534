"""Azure Blob Storage settings, and the few REST calls of the writer lease and of deletes.

docsight reads the same environment variables as the object store inside Lance (Rust's
``object_store``), so one set of variables configures the tables, the other objects
(``pyarrow.fs``) and the lease:

- ``AZURE_STORAGE_ACCOUNT_NAME`` (or the Azure CLI's ``AZURE_STORAGE_ACCOUNT``);
- one credential: ``AZURE_STORAGE_ACCOUNT_KEY`` (or ``AZURE_STORAGE_KEY``), or
  ``AZURE_STORAGE_SAS_TOKEN``;
- ``AZURE_STORAGE_ENDPOINT`` for a blob service elsewhere than ``https://ACCOUNT.blob.core.windows.net``;
- ``AZURE_STORAGE_USE_EMULATOR=true`` for Azurite: the well-known development account and key,
  at ``AZURITE_BLOB_STORAGE_URL`` (default ``http://127.0.0.1:10000``).

The lease needs only Put, Get and Delete Blob with conditional headers (and a delete only Delete
Blob), so it speaks the REST API over httpx (already installed with the default dependencies,
through openai) and signs requests with the account key (Shared Key) or appends the SAS token:
no Azure SDK.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any
from urllib.parse import quote, urlsplit

from docsight.errors import ConfigurationError, MissingDependencyError
from docsight.index.location import first_env, is_true

#: Azurite's development account and key: published by Microsoft, the same on every machine.
EMULATOR_ACCOUNT = "devstoreaccount1"
EMULATOR_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
EMULATOR_URL = "http://127.0.0.1:10000"
#: A REST version every current service and Azurite accept, with conditional Put Blob.
API_VERSION = "2021-08-06"
SETTINGS_HINT = (
    "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN, "
    "AZURE_STORAGE_ENDPOINT, or AZURE_STORAGE_USE_EMULATOR with AZURITE_BLOB_STORAGE_URL"
)


@dataclass(frozen=True)
class AzureSettings:
    """Where the blob service is and how to sign requests to it."""

    account: str
    #: The blob service's URL, the account included: ``https://ACCOUNT.blob.core.windows.net``
    #: or, path-style, ``http://127.0.0.1:10000/devstoreaccount1``.
    service_url: str
    key: str | None = None
    sas_token: str | None = None
    emulator: bool = False

    @property
    def scheme(self) -> str:
        return urlsplit(self.service_url).scheme

    @property
    def authority(self) -> str:
        return urlsplit(self.service_url).netloc

    @property
    def path_style(self) -> bool:
        """Whether the account is the first path segment (an emulator, a custom endpoint)."""
        return urlsplit(self.service_url).path.strip("/") == self.account

    def storage_options(self) -> dict[str, str]:
        """The same settings as Lance's (object_store's) storage options."""
        options = {"azure_storage_account_name": self.account}
        if self.emulator:
            # object_store finds the emulator itself, at AZURITE_BLOB_STORAGE_URL.
            options["azure_storage_use_emulator"] = "true"
        else:
            endpoint = os.environ.get("AZURE_STORAGE_ENDPOINT")
            if endpoint:
                options["azure_storage_endpoint"] = endpoint
                if endpoint.startswith("http://"):
                    options["allow_http"] = "true"
        if self.key:
            options["azure_storage_account_key"] = self.key
        if self.sas_token:
            options["azure_storage_sas_token"] = self.sas_token
        return options

    def filesystem(self) -> Any:
        """A ``pyarrow.fs.AzureFileSystem`` on the same account (the account is its root, so
        its paths are ``container/blob``, as the collection's ``base``)."""
        import pyarrow.fs as pafs

        given: dict[str, Any] = {}
        if self.key:
            given["account_key"] = self.key
        elif self.sas_token:
            given["sas_token"] = self.sas_token
        if self.path_style:
            # An emulator (or a custom endpoint) answers the Data Lake calls Arrow makes (its
            # hierarchical-namespace check) on the same address as the blob calls.
            given["blob_storage_authority"] = given["dfs_storage_authority"] = self.authority
        elif not self.authority.startswith(f"{self.account}.blob.core.windows.net"):
            # A service under another domain (a sovereign cloud): Arrow wants ".domain".
            domain = self.authority.removeprefix(self.account)
            given["blob_storage_authority"] = domain
            given["dfs_storage_authority"] = domain.replace(".blob.", ".dfs.", 1)
        given["blob_storage_scheme"] = given["dfs_storage_scheme"] = self.scheme
        return pafs.AzureFileSystem(self.account, **given)


def azure_settings() -> AzureSettings:
    """The blob service configured by the environment (see the module's docstring)."""
    emulator = is_true(first_env("AZURE_STORAGE_USE_EMULATOR"))
    if emulator:
        account = (
            first_env("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT") or EMULATOR_ACCOUNT
        )
        base = (first_env("AZURITE_BLOB_STORAGE_URL") or EMULATOR_URL).rstrip("/")
        key = first_env("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY")
        if key is None and account == EMULATOR_ACCOUNT:
            key = EMULATOR_KEY
        return AzureSettings(account, f"{base}/{account}", key=key, emulator=True)
    named = first_env("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT")
    if not named:
        raise ConfigurationError(
            "an az:// collection needs the storage account: set AZURE_STORAGE_ACCOUNT_NAME "
            f"(the settings read: {SETTINGS_HINT})"
        )
    endpoint = first_env("AZURE_STORAGE_ENDPOINT") or f"https://{named}.blob.core.windows.net"
    return AzureSettings(
        named,
        endpoint.rstrip("/"),
        key=first_env("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY"),
        sas_token=(first_env("AZURE_STORAGE_SAS_TOKEN") or "").lstrip("?") or None,
    )


@dataclass(frozen=True)
class BlobResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def error_code(self) -> str:
        """The service's error code (``BlobAlreadyExists``, ``ConditionNotMet``...)."""
        return self.headers.get("x-ms-error-code", "")


class BlobClient:
    """Put, Get and Delete Blob on one blob of one container, signed for the account."""

    def __init__(self, settings: AzureSettings, container: str, blob: str) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - openai depends on httpx
            raise MissingDependencyError(
                "writing to an az:// collection (its writer lease)", "remote", str(exc)
            ) from exc
        if not settings.key and not settings.sas_token:
            raise ConfigurationError(
                "the writer lease of an az:// collection needs AZURE_STORAGE_ACCOUNT_KEY or "
                "AZURE_STORAGE_SAS_TOKEN (an Azure AD login is not supported for the lease); "
                "or set DOCSIGHT_REMOTE_LOCK=none when no other writer can run"
            )
        self.settings = settings
        self.url = f"{settings.service_url}/{quote(container)}/{quote(blob)}"
        self._http = httpx.Client(timeout=httpx.Timeout(30.0, connect=10.0))

    def request(
        self, method: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> BlobResponse:
        """One request; transport failures raise ``httpx.HTTPError``, statuses are returned."""
        sent = {
            "x-ms-date": formatdate(usegmt=True),
            "x-ms-version": API_VERSION,
            **(headers or {}),
        }
        if body or method == "PUT":
            sent["Content-Length"] = str(len(body))
        url = self.url
        if self.settings.key:
            sent["Authorization"] = self._shared_key(method, sent)
        elif self.settings.sas_token:
            url = f"{url}?{self.settings.sas_token}"
        response = self._http.request(method, url, headers=sent, content=body or None)
        return BlobResponse(
            response.status_code,
            {k.lower(): v for k, v in response.headers.items()},
            response.content,
        )

    def _shared_key(self, method: str, headers: dict[str, str]) -> str:
        """The Shared Key signature of a request (Azure's "Authorize with Shared Key")."""
        lower = {k.lower(): v.strip() for k, v in headers.items()}
        length = lower.get("content-length", "")
        standard = [
            method,
            lower.get("content-encoding", ""),
            lower.get("content-language", ""),
            "" if length == "0" else length,
            lower.get("content-md5", ""),
            lower.get("content-type", ""),
            "",  # Date: x-ms-date is sent instead
            lower.get("if-modified-since", ""),
            lower.get("if-match", ""),
            lower.get("if-none-match", ""),
            lower.get("if-unmodified-since", ""),
            lower.get("range", ""),
        ]
        canonical_headers = [f"{k}:{lower[k]}" for k in sorted(lower) if k.startswith("x-ms-")]
        # The account, then the URL's path as sent (path-style URLs repeat the account).
        resource = f"/{self.settings.account}{urlsplit(self.url).path}"
        text = "\n".join([*standard, *canonical_headers, resource])
        assert self.settings.key is not None
        digest = hmac.new(
            base64.b64decode(self.settings.key), text.encode("utf-8"), hashlib.sha256
        ).digest()
        return f"SharedKey {self.settings.account}:{base64.b64encode(digest).decode()}"

    def close(self) -> None:
        self._http.close()


def delete_blob(settings: AzureSettings, key: str) -> bool:
    """Delete the blob ``container/name`` (``key``) with one Delete Blob request; ``False`` when
    it was not there. Needs the account key or a SAS token (see :class:`BlobClient`).

    pyarrow's Azure filesystem wraps each delete in a lease it takes on the blob and releases
    after the blob is gone; the release answers 404 and is sent again seconds later, and under
    load a delete once failed with "Failed to acquire a lease". A plain Delete Blob takes no
    lease; no directory marker is left behind, as in any object store.
    """
    import httpx

    container, _, name = key.partition("/")
    client = BlobClient(settings, container, name)
    try:
        response = client.request("DELETE")
    except httpx.HTTPError as exc:
        raise OSError(f"Delete Blob {key} failed: {exc}") from exc
    finally:
        client.close()
    if response.status in (200, 202):
        return True
    if response.status == 404:
        return False
    raise OSError(
        f"Delete Blob {key} answered {response.status} {response.error_code or ''}".rstrip()
    )
