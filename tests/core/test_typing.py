"""A type checker sees each operation's own parameters and result: the result itself on
RedisSMQ, an awaitable of it on AsyncRedisSMQ (queues/driver.py's ``operation``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from mypy import api

from queues import RedisSMQ

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
from collections.abc import Awaitable
from typing import assert_type

from queues import AsyncRedisSMQ, Message, RedisSMQ
from queues.models import Slice


def sync(rsmq: RedisSMQ) -> None:
    reveal_type(rsmq.send_message("q", "m"))
    assert_type(rsmq.receive_message("q"), Message | None)
    assert_type(rsmq.census_range("q", 0, 10), Slice)


def aio(rsmq: AsyncRedisSMQ) -> None:
    reveal_type(rsmq.send_message("q", "m"))
    assert_type(rsmq.receive_message("q"), Awaitable[Message | None])


def wrong(rsmq: RedisSMQ) -> None:
    rsmq.send_message("q", 1)
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[int, str]:
    """mypy's messages on the snippet, by line (its own config: no Django plugin)."""
    snippet = tmp_path_factory.mktemp("typing") / "snippet.py"
    snippet.write_text(SNIPPET)
    # mypy in this process raises the interpreter's recursion limit for good: given back,
    # so a later test on this worker parses deep JSON as the console's processes do
    limit = sys.getrecursionlimit()
    out, err, _ = api.run(
        [
            "--config-file=",
            "--strict",
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "test_typing"),
            str(snippet),
        ]
    )
    sys.setrecursionlimit(limit)
    assert err == "", err
    messages: dict[int, str] = {}
    for line in out.splitlines():
        # Not by its full path: mypy's cache names the file where it first checked it.
        if m := re.match(r".*snippet\.py:(\d+): (.*)", line):
            messages[int(m[1])] = m[2]
    return messages


def line_of(text: str, after: str = "") -> int:
    """The snippet's line number of ``text`` (its first after the line ``after``)."""
    lines = SNIPPET.splitlines()
    start = lines.index(after) if after else 0
    return lines.index(text, start) + 1


def test_a_sync_operation_returns_its_result(checked):
    line = line_of('    reveal_type(rsmq.send_message("q", "m"))')
    assert checked[line] == 'note: Revealed type is "builtins.str"'


def test_an_async_operation_returns_an_awaitable_of_it(checked):
    line = line_of(
        '    reveal_type(rsmq.send_message("q", "m"))',
        after="def aio(rsmq: AsyncRedisSMQ) -> None:",
    )
    assert checked[line] == 'note: Revealed type is "typing.Awaitable[builtins.str]"'


def test_assert_type_holds_for_both_clients(checked):
    assert not [m for m in checked.values() if "assert_type" in m or "Expression is of" in m]


def test_an_operation_keeps_its_parameters(checked):
    line = line_of('    rsmq.send_message("q", 1)')
    assert checked[line].startswith(
        'error: Argument 2 has incompatible type "int"; expected "str | bytes"'
    )


def test_an_operation_on_the_class_takes_the_client_first(rsmq, queue):
    send = RedisSMQ.send_message  # as the dashboard's bulk actions hold them

    mid = send(rsmq, queue, "m")

    assert rsmq.get_message(queue, mid).message == "m"
