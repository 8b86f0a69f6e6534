"""Page-image vectors in the Lance store: layout, MaxSim, validation, binding, schema versions."""

from __future__ import annotations

import json
from pathlib import Path

import lancedb
import numpy as np
import pytest

from docsight.encoders.visual import maxsim_many
from docsight.errors import ConfigurationError, EncoderError, SchemaVersionError
from docsight.index import schema as S
from docsight.index.base import VisualBinding
from docsight.index.lance import MANIFEST, LanceStore
from docsight.index.visual import checked_vectors

DIM = 16


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def test_lance_multivector_cosine_distance_is_query_tokens_minus_maxsim(tmp_path: Path) -> None:
    """What ``index.visual.search`` relies on: Lance's multivector cosine distance is
    Σ over query tokens of (1 - best cosine), so MaxSim = query tokens - distance, exactly as
    the contract's numpy ``maxsim`` scores it, with and without a document filter."""
    rng = np.random.default_rng(7)
    pages = [_unit(rng.standard_normal((int(rng.integers(2, 9)), DIM))) for _ in range(40)]
    docs = [f"d{i % 4}" for i in range(len(pages))]
    table = S.page_vector_table("x", list(range(len(pages))), pages, "multi", DIM)
    table = table.set_column(1, "doc_id", [docs])  # four documents, interleaved
    db = lancedb.connect(tmp_path)
    lance = db.create_table("pv", table)
    query = _unit(rng.standard_normal((5, DIM)))
    expected = maxsim_many(query, pages)
    for where in (None, "doc_id IN ('d1', 'd3')"):
        search = lance.search(query, vector_column_name="vector").distance_type("cosine")
        if where:
            search = search.where(where, prefilter=True)
        rows = search.select(["page", "_distance"]).limit(10).to_arrow().to_pylist()
        wanted = [i for i in np.argsort(-expected) if where is None or docs[i] in ("d1", "d3")]
        assert [r["page"] for r in rows] == [int(i) for i in wanted[:10]]
        for row in rows:
            assert len(query) - row["_distance"] == pytest.approx(expected[row["page"]], abs=1e-4)


def test_page_vector_rows_keep_their_vectors() -> None:
    rng = np.random.default_rng(1)
    single = _unit(rng.standard_normal((3, DIM)))
    table = S.page_vector_table("doc", [0, 2, 5], single, "single", DIM)
    assert table.schema == S.page_vectors_schema("single", DIM)
    assert table.column("id").to_pylist() == ["doc:0", "doc:2", "doc:5"]
    assert np.allclose(np.array(table.column("vector").to_pylist()), single)
    multi = [_unit(rng.standard_normal((n, DIM))) for n in (1, 4)]
    table = S.page_vector_table("doc", [0, 1], multi, "multi", DIM)
    assert [len(v) for v in table.column("vector").to_pylist()] == [1, 4]
    assert np.allclose(np.array(table.column("vector").to_pylist()[1]), multi[1])


def test_malformed_encoder_output_is_refused_with_its_shape() -> None:
    with pytest.raises(EncoderError, match=r"shape \(2, 8\).*expected \(2, 16\)"):
        checked_vectors(np.ones((2, 8)), 2, "single", DIM)
    with pytest.raises(EncoderError, match="not finite"):
        checked_vectors(np.full((1, DIM), np.nan), 1, "single", DIM)
    with pytest.raises(EncoderError, match="at least one token"):
        checked_vectors([np.zeros((0, DIM))], 1, "multi", DIM)
    with pytest.raises(EncoderError, match="1 results for 2 images"):
        checked_vectors([np.ones((3, DIM))], 2, "multi", DIM)
    out = checked_vectors([np.ones((3, DIM), dtype=np.float64)], 1, "multi", DIM)
    assert out[0].dtype == np.float32


def test_a_collection_is_bound_to_one_visual_encoder(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "col")
    first = VisualBinding(fingerprint="a", kind="multi", dim=DIM, backend="colpali")
    store.bind_visual(first)
    store.bind_visual(first)  # the same encoder again is fine
    with pytest.raises(ConfigurationError, match="reindex --visual"):
        store.bind_visual(first.model_copy(update={"fingerprint": "b"}))
    manifest = json.loads((tmp_path / "col" / MANIFEST).read_text())
    assert manifest["visual"]["fingerprint"] == "a"
    assert LanceStore(tmp_path / "col").visual_binding() == first


def test_a_v5_collection_is_read_and_becomes_v6_at_its_next_write(tmp_path: Path) -> None:
    path = tmp_path / "col"
    path.mkdir()
    (path / MANIFEST).write_text(json.dumps({"schema_version": 5, "encoder": None}))
    store = LanceStore(path)
    assert store.visual_binding() is None
    assert store.check().schema_version == 5
    store.bind_encoder("enc", 8)
    assert json.loads((path / MANIFEST).read_text())["schema_version"] == S.STORE_SCHEMA_VERSION
    (path / MANIFEST).write_text(json.dumps({"schema_version": 4, "encoder": None}))
    with pytest.raises(SchemaVersionError, match=r"v4.*reads v5 to v6"):
        LanceStore(path).visual_binding()
