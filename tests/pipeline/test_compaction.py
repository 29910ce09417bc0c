"""Lake compaction (pipeline/lake.py): a day's small files rewritten as one, atomically for
readers: at every moment, and after a compaction that died at any point, each snapshot
is in exactly one of the files the lake lists. No Spark here: plain files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.pipeline_rows import ms

from dashboard.snapshots import lake as lake_writer
from pipeline import lake
from pipeline.state import State

DAY = dt.date(2026, 11, 21)


def row(time: str, queue: str = "q1") -> dict:
    return {
        "connection": "c", "namespace": "n", "queue": queue, "taken_at": ms(time),
        "msgs": 1, "hiddenmsgs": 0, "inflight": 0, "delayed": 0, "totalsent": 5,
        "totalrecv": 2, "oldest_age": 1.5, "created": 1,
    }  # fmt: skip


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, list[str]]:
    """A lake with three snapshot files of one day."""
    lake_dir = tmp_path / "lake"
    for t in ("10:00:00", "10:00:10", "10:00:20"):
        lake_writer.append(lake_dir, [row(t), row(t, "q2")])
    return lake_dir, lake.files(lake_dir)[DAY]


def listed_rows(lake_dir: Path) -> list[tuple]:
    """Every row of the files the lake lists, (time, queue), sorted."""
    out = []
    for day, names in lake.files(lake_dir).items():
        for n in names:
            t = pq.read_table(lake.folder(lake_dir, day) / n)
            out += zip(t.column("taken_at").to_pylist(), t.column("queue").to_pylist(), strict=True)
    return sorted(out)


def test_it_rewrites_files_as_one_holding_the_same_rows(small):
    lake_dir, names = small
    before = listed_rows(lake_dir)
    name = lake.compact(lake_dir, DAY, names)
    assert lake.files(lake_dir) == {DAY: [name]}
    assert listed_rows(lake_dir) == before
    assert sorted(lake.covers(lake.folder(lake_dir, DAY) / name)) == sorted(names)
    assert lake.span(lake.folder(lake_dir, DAY) / name) == (ms("10:00:00"), ms("10:00:20"))


def test_files_it_replaced_but_could_not_remove_are_hidden_then_removed(small, monkeypatch):
    # Died after the compacted file appeared, before the small ones were gone.
    lake_dir, names = small
    before = listed_rows(lake_dir)
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)
    name = lake.compact(lake_dir, DAY, names)
    monkeypatch.undo()
    folder = lake.folder(lake_dir, DAY)
    assert all((folder / n).exists() for n in names)
    assert lake.files(lake_dir) == {DAY: [name]}
    assert listed_rows(lake_dir) == before
    assert lake.clean(lake_dir) == 3
    assert sorted(p.name for p in folder.iterdir()) == [name]


def test_a_compacted_file_not_yet_renamed_is_invisible_then_removed(small, monkeypatch):
    # Died while writing it (or before its rename): the small files stand.
    lake_dir, names = small
    before = listed_rows(lake_dir)

    def die(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr("pipeline.lake.os.replace", die)
    with pytest.raises(KeyboardInterrupt):
        lake.compact(lake_dir, DAY, names)
    monkeypatch.undo()
    assert lake.files(lake_dir) == {DAY: names}
    assert listed_rows(lake_dir) == before
    assert lake.clean(lake_dir) == 1
    assert sorted(p.name for p in lake.folder(lake_dir, DAY).iterdir()) == names


def test_the_snapshot_writers_own_files_being_written_are_left_alone(small):
    lake_dir, names = small
    writing = lake.folder(lake_dir, DAY) / f".{ms('10:00:30')}-abc.parquet.tmp"
    writing.write_bytes(b"half")
    lake.compact(lake_dir, DAY, names)
    lake.clean(lake_dir)
    assert writing.exists()


def test_the_state_knows_a_compacted_file_made_of_files_it_rolled_up(small):
    # The run died after compacting, before it saved the state that names the new file.
    lake_dir, names = small
    state = State(files={DAY.isoformat(): dict.fromkeys(names, (0, 0))})
    name = lake.compact(lake_dir, DAY, names)
    assert state.knows(lake_dir, DAY, name)
    assert state.files[DAY.isoformat()][name] == (ms("10:00:00"), ms("10:00:20"))
    # One made of a file it has not rolled up yet is new.
    lake_writer.append(lake_dir, [row("10:00:40")])
    late = [n for n in lake.files(lake_dir)[DAY] if n != name]
    other = lake.compact(lake_dir, DAY, [name, *late])
    assert not state.knows(lake_dir, DAY, other)
