"""Pin (issue 21, mutation round 8's survivor r8b-engine-dcp-metadata-limit-kib) on hosttune/engine/shard.py: a
sharded checkpoint's `.metadata` of a few hundred KiB (a model with thousands of tensors) is read, through the
allow-list; only one past METADATA_LIMIT is refused, as too large, before any of it is unpickled."""

import pickle
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from torch.distributed.checkpoint.metadata import BytesStorageMetadata, Metadata  # noqa: E402

from hosttune.engine import shard  # noqa: E402


def _metadata(path: Path, entries: int, storage: Any = None) -> int:
    path.mkdir()
    storage = {} if storage is None else storage
    meta = Metadata(state_dict_metadata={f"model.layers.{i}.extra_state": BytesStorageMetadata()
                                         for i in range(entries)}, storage_data=storage)
    data = pickle.dumps(meta)
    (path / ".metadata").write_bytes(data)
    return len(data)


def test_a_metadata_of_hundreds_of_kib_is_read(tmp_path: Path) -> None:
    size = _metadata(tmp_path / "ckpt", 12000)
    assert 300 << 10 < size < shard.METADATA_LIMIT
    got = shard.read_dcp_metadata(tmp_path / "ckpt")
    assert isinstance(got, Metadata) and len(got.state_dict_metadata) == 12000


def test_one_past_the_limit_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = _metadata(tmp_path / "ckpt", 50)
    monkeypatch.setattr(shard, "METADATA_LIMIT", size - 1)
    with pytest.raises(OSError):
        shard.read_dcp_metadata(tmp_path / "ckpt")
    monkeypatch.setattr(shard, "METADATA_LIMIT", size)
    assert len(shard.read_dcp_metadata(tmp_path / "ckpt").state_dict_metadata) == 50


def test_a_metadata_without_its_storage_table_is_refused_in_one_line(tmp_path: Path) -> None:
    """DCP's save always writes the storage table (empty without tensors): a file without one is damaged."""
    _metadata(tmp_path / "ckpt", 3, storage="x")
    with pytest.raises(pickle.UnpicklingError) as info:
        shard.read_dcp_metadata(tmp_path / "ckpt")
    assert str(info.value) == "not DCP metadata (its storage data is a str)"
