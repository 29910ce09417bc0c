"""The one message filter (dashboard/acting/message_filter.py): read from a URL, written back,
refused naming the field."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from dashboard.acting.message_filter import FilterError, MessageFilter, checked, from_params


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


# -- field filters and ages (h22-filter) ---------------------------------------------


def test_a_field_filter_and_ages_survive_their_url() -> None:
    f = checked(QueryDict("where=amount+%3E+100+AND+status+in+(a,b)&older=5&younger=90"))
    assert f.where == "amount > 100 and status in (a, b)"  # its one written form
    assert (f.older, f.younger) == (5, 90) and f.narrows
    assert checked(QueryDict(mutable=True) | f.query()) == f
    assert f.query() == {"where": f.where, "older": "5", "younger": "90"}
    assert f.browse_kwargs() == {"state": "all", "min_rc": 0, "contains": "",
                                 "where": f.where, "older_than": 300,
                                 "younger_than": 5400}  # fmt: skip
    words = f.describe()
    assert "`amount > 100 and status in (a, b)`" in words
    assert "more than 5 minutes ago" in words and "less than 90 minutes ago" in words


@pytest.mark.parametrize(
    ("query", "field", "says"),
    [
        ("where=amount+>", "where", "at position 9"),
        ("where=a+%3D+1+b", "where", "expected 'and'"),
        ("older=abc", "older", "whole number of minutes"),
        ("younger=-1", "younger", "whole number of minutes"),
        ("older=99999999999", "older", "from 0 to"),
        ("older=10&younger=10", "younger", "more minutes than older"),
    ],
)
def test_a_bad_field_filter_or_age_is_refused_by_name(query: str, field: str, says: str) -> None:
    with pytest.raises(FilterError) as refused:
        checked(QueryDict(query))
    assert refused.value.field == field and says in str(refused.value)
    assert from_params(QueryDict(query)) == from_params(QueryDict(query))
    lenient = from_params(QueryDict(query))
    assert not lenient.where and (lenient.older < 10**9)


def test_the_browser_keeps_the_good_fields_of_a_bad_url() -> None:
    got = from_params(QueryDict("where=amount+>&older=5&search=x&younger=3"))
    assert got == MessageFilter("all", 0, "x", "", 5, 0)


def test_a_failure_filter_survives_its_url_and_reaches_browse() -> None:
    f = checked(QueryDict("state=visible&error=requests.exceptions.ReadTimeout&attempt=3"))
    assert (f.error, f.min_attempt, f.narrows, f.failure) == (
        "requests.exceptions.ReadTimeout", 3, True, True,
    )  # fmt: skip
    assert f.query() == {"state": "visible", "error": "requests.exceptions.ReadTimeout",
                         "attempt": "3"}  # fmt: skip
    assert f.browse_kwargs() == {
        "state": "visible", "min_rc": 0, "contains": "",
        "error": "requests.exceptions.ReadTimeout", "min_attempt": 3,
    }  # fmt: skip
    words = f.describe()
    assert "whose last failure is a requests.exceptions.ReadTimeout" in words
    assert "at attempt 3 or later" in words


@pytest.mark.parametrize(
    ("query", "field"),
    [("attempt=-1", "attempt"), ("attempt=x", "attempt"), ("error=" + "E" * 201, "error"),
     ("error_text=" + "t" * 65, "error_text")],
)  # fmt: skip
def test_a_bad_failure_field_is_refused_by_name(query: str, field: str) -> None:
    with pytest.raises(FilterError) as refused:
        checked(QueryDict(query))
    assert refused.value.field == field
