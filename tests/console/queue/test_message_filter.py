"""The one message filter (dashboard/message_filter.py): read from a URL, written back,
refused naming the field."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from dashboard.message_filter import FilterError, MessageFilter, checked, from_params


def test_a_filter_survives_its_own_url() -> None:
    f = MessageFilter("visible", 3, "cust-42")
    assert checked(QueryDict(mutable=True) | f.query()) == f
    assert f.query() == {"state": "visible", "rc": "3", "search": "cust-42"}
    assert MessageFilter().query() == {}
    assert f.narrows and not MessageFilter("inflight").narrows


@pytest.mark.parametrize(
    ("query", "field"),
    [("state=nowhere", "state"), ("rc=-1", "rc"), ("rc=abc", "rc"), (f"rc={2**31 + 1}", "rc")],
)
def test_an_action_refuses_a_bad_field_by_name(query: str, field: str) -> None:
    with pytest.raises(FilterError) as refused:
        checked(QueryDict(query))
    assert refused.value.field == field
    assert field in str(refused.value)


def test_the_browser_reads_a_bad_field_as_its_default() -> None:
    got = from_params(QueryDict("state=nowhere&rc=abc&search=x"))
    assert got == MessageFilter("all", 0, "x")
    assert got.browse_kwargs() == {"state": "all", "min_rc": 0, "contains": "x"}


def test_the_words_name_every_part() -> None:
    words = MessageFilter("delayed", 2, "oops").describe()
    assert "delayed" in words and "at least 2" in words and "'oops'" in words
