"""`MetadataLog.read(offset)` starts at the offset index's floor in the segment holding the offset:
a standby's catch-up reads what follows what it applied, never the whole segment again."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.log import reading

from .replicas import leader_log


@pytest.mark.parametrize("start", [0, 1, 57, 150, 299, 300])
def test_a_read_decodes_from_the_index_floor_and_returns_what_a_full_scan_returns(
    tmp_path: Path, start: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = leader_log(tmp_path / "data", [[1] * 100, [1] * 100, [1] * 100], index_interval_bytes=512)
    every = [(e.offset, e.epoch, e.record) for e in log.read(0)]
    decoded: list[int] = []
    batches = reading.segment_batches

    def counting(path: Path, begin: int = 0):  # type: ignore[no-untyped-def]
        for found in batches(path, begin):
            decoded.append(found[2].base_offset)
            yield found

    monkeypatch.setattr(reading, "segment_batches", counting)
    read = [(e.offset, e.epoch, e.record) for e in log.read(start)]
    assert read == [entry for entry in every if entry[0] >= start]
    behind = [base for base in decoded if base < start]
    assert len(behind) <= 12, behind  # an index interval's worth of batches, not the segment's hundreds
    log.close()
