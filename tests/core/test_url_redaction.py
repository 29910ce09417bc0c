"""Redis URLs are shown without their secrets, in every form redis-py accepts."""

from __future__ import annotations

import pytest

from queues.urls import redacted

CASES = [
    ("redis://user:pw@h:6379/1", "redis://user:***@h:6379/1"),
    ("redis://:pw@h/0", "redis://:***@h/0"),
    ("redis://:se@cret@h/0", "redis://:***@h/0"),
    ("redis://:pa/ss@h/0", "redis://:***@h/0"),
    ("rediss://secret@h", "rediss://***@h"),
    ("redis://h/0?password=se%40c", "redis://h/0?password=***"),
    ("unix:///tmp/r.sock?db=1&password=x", "unix:///tmp/r.sock?db=1&password=***"),
    (
        "redis+sentinel://:pw@h1:26379,h2:26379/svc/0",
        "redis+sentinel://:***@h1:26379,h2:26379/svc/0",
    ),
    ("redis+cluster://u:p@a:1,b:2", "redis+cluster://u:***@a:1,b:2"),
    ("redis://h:6379/0", "redis://h:6379/0"),
]


@pytest.mark.parametrize(("url", "shown"), CASES)
def test_it_masks_every_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


@pytest.mark.parametrize(("url", "shown"), CASES)
def test_it_leaves_no_secret_anywhere(url: str, shown: str) -> None:
    for secret in ("pw", "se@cret", "cret", "pa/ss", "secret", "se%40c"):
        if secret in url:
            assert secret not in redacted(url)
