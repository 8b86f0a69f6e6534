"""Where a collection lives: directories and URIs, its shared and its local working part."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docsight import Settings
from docsight.errors import RemoteUnsupportedError, UsageError
from docsight.index.lease import WriterLease
from docsight.index.location import (
    LocalLocation,
    RemoteLocation,
    default_work_dir,
    is_uri,
    normalize,
    open_location,
)


def test_directories_stay_paths_and_uris_stay_uris() -> None:
    assert normalize("col") == Path("col")
    assert normalize(Path("/data/col")) == Path("/data/col")
    assert normalize("file:///data/col") == Path("/data/col")
    assert normalize("s3://bucket/team/col/") == "s3://bucket/team/col"
    assert normalize("gs://bucket") == "gs://bucket"
    assert normalize("az://container/x") == "az://container/x"
    # pathlib collapses '//': a URI that went through Path() still names the URI.
    assert normalize(Path("s3://bucket/col")) == "s3://bucket/col"
    assert is_uri("s3://b/c") and not is_uri("./s3/b")


@pytest.mark.parametrize("bad", ["ftp://host/col", "s3://", "s3:///prefix"])
def test_unknown_schemes_and_missing_buckets_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        normalize(bad)


def test_the_setting_takes_a_uri_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSIGHT_COLLECTION_DIR", "s3://bucket/col/")
    assert Settings().collection_dir == "s3://bucket/col"
    monkeypatch.setenv("DOCSIGHT_COLLECTION_DIR", "somewhere")
    assert Settings().collection_dir == Path("somewhere")


def test_a_local_collection_is_its_own_working_directory(tmp_path: Path) -> None:
    location = open_location(tmp_path / "col")
    assert isinstance(location, LocalLocation) and not location.remote
    assert location.work_dir == tmp_path / "col"
    assert location.storage_options() == {}
    assert not location.root_exists()
    location.write_text("recovery/collection.json", "{}")
    assert location.read_text("recovery/collection.json") == "{}"
    assert location.is_file("recovery/collection.json") and location.is_dir("recovery")
    assert not (tmp_path / "col" / "recovery" / "collection.json.tmp").exists()
    location.copy("recovery/collection.json", "a/b.json")
    location.move("a", "damaged/x/a")
    assert location.files("damaged") == {"damaged/x/a/b.json": 2}
    assert location.children("damaged/x") == ["a"]
    assert location.local_path("damaged/x/a/b.json") == tmp_path / "col/damaged/x/a/b.json"
    location.delete_tree("damaged")
    location.delete("nothing/here")  # no error
    assert location.files("damaged") == {}
    with pytest.raises(FileNotFoundError):
        location.local_path("damaged/x/a/b.json")


def test_a_remote_collection_works_in_a_local_directory_named_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    location = open_location("s3://bucket/team/col")
    assert isinstance(location, RemoteLocation) and location.remote
    assert location.work_dir == default_work_dir("s3://bucket/team/col")
    assert location.work_dir.is_relative_to(tmp_path / "cache" / "docsight" / "collections")
    assert "bucket_team_col" in location.work_dir.name
    assert default_work_dir("s3://bucket/team/col2") != location.work_dir
    assert open_location("s3://b/c", tmp_path / "mine").work_dir == tmp_path / "mine"
    assert location.lance_uri("tables") == "s3://bucket/team/col/tables"


def test_storage_options_come_from_the_standard_aws_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    options = RemoteLocation("s3://b/c", Path("/tmp/x")).storage_options()
    assert options == {
        "aws_endpoint": "http://127.0.0.1:9000",
        "allow_http": "true",
        "aws_access_key_id": "key",
        "aws_secret_access_key": "secret",
        "aws_region": "eu-west-1",
    }
    monkeypatch.setenv("AWS_ALLOW_HTTP", "false")
    with pytest.raises(UsageError, match="AWS_ALLOW_HTTP"):
        RemoteLocation("s3://b/c", Path("/tmp/x")).fs  # noqa: B018


def test_storage_options_come_from_the_standard_azure_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in [k for k in os.environ if k.startswith(("AZURE_", "AZURITE_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT", "acct")  # the Azure CLI's name
    monkeypatch.setenv("AZURE_STORAGE_KEY", "a2V5")
    where = RemoteLocation("az://box/col", Path("/tmp/x"))
    assert where.storage_options() == {
        "azure_storage_account_name": "acct",
        "azure_storage_account_key": "a2V5",
    }
    from docsight.index.azure_blob import azure_settings

    assert azure_settings().service_url == "https://acct.blob.core.windows.net"
    # The emulator: the well-known account and key, at AZURITE_BLOB_STORAGE_URL.
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT")
    monkeypatch.delenv("AZURE_STORAGE_KEY")
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", "http://127.0.0.1:10999/")
    emulated = azure_settings()
    assert emulated.service_url == "http://127.0.0.1:10999/devstoreaccount1"
    assert emulated.path_style and emulated.key
    options = where.storage_options()
    assert options["azure_storage_use_emulator"] == "true"
    assert options["azure_storage_account_name"] == "devstoreaccount1"


def test_writing_where_no_lease_exists_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(RemoteUnsupportedError, match="DOCSIGHT_REMOTE_LOCK=none") as caught:
        WriterLease(RemoteLocation("gs://bucket/col", tmp_path))
    assert caught.value.code == "remote_unsupported" and caught.value.exit_status == 2


def test_the_writer_guard_of_a_remote_collection(tmp_path: Path) -> None:
    from docsight import DocSight
    from docsight.index.lease import NoGuard

    settings = Settings(work_dir=tmp_path / "work")
    assert isinstance(DocSight("s3://bucket/col", settings=settings)._writer_lock(), WriterLease)
    with pytest.raises(RemoteUnsupportedError, match="DOCSIGHT_REMOTE_LOCK"):
        DocSight("gs://bucket/col", settings=settings)._writer_lock()
    unguarded = settings.model_copy(update={"remote_lock": "none"})
    assert isinstance(DocSight("gs://bucket/col", settings=unguarded)._writer_lock(), NoGuard)
    # Nothing local is created for a remote collection until something is cached.
    assert not (tmp_path / "work").exists()


def test_a_gs_collection_gives_up_retrying_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.fs as pafs

    from docsight.errors import RemoteStorageError

    made: dict[str, object] = {}

    class Gcs:
        def __init__(self, **kwargs: object) -> None:
            made.update(kwargs)

        def get_file_info(self, path: str) -> object:
            raise OSError("Retry policy exhausted: could not create an OAuth2 access token")

    monkeypatch.setattr(pafs, "GcsFileSystem", Gcs)
    location = open_location("gs://bucket/team/col")
    assert isinstance(location, RemoteLocation)
    with pytest.raises(RemoteStorageError) as caught:
        location.is_file("collection.json")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(caught.value)
    # Google's client would retry for 15 minutes: a user without credentials waits seconds.
    limit = made["retry_time_limit"]
    assert limit.total_seconds() <= 60  # type: ignore[attr-defined]
