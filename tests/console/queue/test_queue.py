"""The queue page: counts, the message browser by state with pages, lookup by id, the
receive-count filter, the bounded body search, the live partial; never a receive."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    return "q1"


@pytest.fixture
def mixed(q1, rsmq: RedisSMQ) -> dict[str, str]:
    """One message of each state in q1: state -> id."""
    inflight = rsmq.send_message("q1", "in flight body")
    rsmq.receive_message("q1", vt=60)
    visible = rsmq.send_message("q1", "visible body")
    delayed = rsmq.send_message("q1", "delayed body", delay=60)
    return {"visible": visible, "inflight": inflight, "delayed": delayed}


def _ids(response) -> list[str]:
    return [m.id for m in response.context["items"]]


def _counts(response) -> dict[str, str]:
    page = response.content.decode()
    return dict(re.findall(r'data-count="(\w+)"><span class="n"[^>]*>([\d,]+)</span>', page))


# -- counts and tabs ---------------------------------------------------------------------


def test_it_shows_the_counts(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue())
    assert _counts(response) == {
        "msgs": "3",
        "visible": "1",
        "inflight": "1",
        "delayed": "1",
        "totalsent": "3",
        "totalrecv": "1",
    }


def test_it_lists_every_message_in_the_all_tab(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue())
    assert set(_ids(response)) == set(mixed.values())


@pytest.mark.parametrize("state", ["visible", "inflight", "delayed"])
def test_it_lists_one_state_per_tab(console, mixed, viewer: Client, state: str) -> None:
    response = viewer.get(console.queue("q1", f"?state={state}"))
    assert _ids(response) == [mixed[state]]


def test_it_lists_hidden_messages(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?state=hidden"))
    assert set(_ids(response)) == {mixed["inflight"], mixed["delayed"]}


@pytest.mark.parametrize(
    "label",
    [
        '<span class="state visible">visible</span>',
        '<span class="state inflight">in flight</span>',
        '<span class="state delayed">delayed</span>',
    ],
)
def test_it_labels_each_messages_state(console, mixed, viewer: Client, label: str) -> None:
    assert label in viewer.get(console.queue()).content.decode()


def test_it_marks_the_current_tab(console, mixed, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?state=delayed")).content.decode()
    assert re.search(r'class="active" aria-current="page">\s*Delayed', page)
    assert page.count('aria-current="page"') == 1


def test_it_falls_back_to_all_for_an_unknown_state(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?state=bogus"))
    assert set(_ids(response)) == set(mixed.values())


@pytest.mark.parametrize(
    ("state", "text"),
    [("all", "No messages."), ("inflight", "No in-flight messages."), ("delayed", "No delayed")],
)
def test_it_says_when_a_tab_is_empty(console, q1, viewer: Client, state: str, text: str) -> None:
    page = viewer.get(console.queue("q1", f"?state={state}")).content.decode()
    assert text in page


def test_it_shows_the_attributes(console, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1", vt=45, delay=3, maxsize=-1)
    page = viewer.get(console.queue()).content.decode()
    assert "<dt>Visibility timeout</dt><dd>45 s</dd>" in page
    assert "<dt>Delay</dt><dd>3 s</dd>" in page
    assert "<dt>Max size</dt><dd>unlimited</dd>" in page


def test_it_fills_the_admins_edit_form_with_the_attributes(
    console, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q1", vt=45, delay=3, maxsize=2048)
    form = admin.get(console.queue()).context["attributes_form"]
    assert form.initial == {"vt": 45, "delay": 3, "maxsize": 2048}


# -- pages -------------------------------------------------------------------------------


@pytest.fixture
def twelve(q1, settings, rsmq: RedisSMQ) -> list[str]:
    settings.RSMQ_PAGE_SIZE = 5
    return rsmq.send_messages("q1", [f"m{i}" for i in range(12)])


def test_it_shows_the_first_page(console, twelve, viewer: Client) -> None:
    assert _ids(viewer.get(console.queue())) == twelve[:5]


def test_it_shows_the_second_page(console, twelve, viewer: Client) -> None:
    assert _ids(viewer.get(console.queue("q1", "?page=2"))) == twelve[5:10]


def test_it_shows_the_last_page(console, twelve, viewer: Client) -> None:
    assert _ids(viewer.get(console.queue("q1", "?page=3"))) == twelve[10:]


def test_it_says_where_it_is_in_the_pages(console, twelve, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?page=2")).content.decode()
    assert "Page 2 of 3 · 12 messages" in page
    assert "← Previous" in page and "Next →" in page


def test_it_treats_a_bad_page_number_as_the_first(console, twelve, viewer: Client) -> None:
    assert _ids(viewer.get(console.queue("q1", "?page=abc"))) == twelve[:5]


def test_it_pages_within_a_tab(console, twelve, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.receive_messages("q1", 7, vt=60)
    first = viewer.get(console.queue("q1", "?state=inflight"))
    second = viewer.get(console.queue("q1", _link(first, "next")))
    assert (len(_ids(first)), len(_ids(second))) == (5, 2)
    assert set(_ids(first)) | set(_ids(second)) == set(twelve[:7])
    assert "7 in-flight messages" in second.content.decode()
    assert _link(second, "next") is None and _link(second, "prev") is not None


def _link(response, which: str) -> str | None:
    """The query of the pager's link (data-page="next" and so on), None if it has none."""
    import html
    import re

    found = re.search(rf'<a href="(\?[^"]*)"[^>]*data-page="{which}"', response.content.decode())
    return html.unescape(found.group(1)) if found else None


# -- lookup by id ------------------------------------------------------------------------


def test_it_goes_to_the_message_found_by_id(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", f"?id={mixed['delayed']}"))
    assert response.status_code == 302
    assert response["Location"] == console.message(mixed["delayed"])


def test_it_says_when_no_message_has_the_id(console, mixed, viewer: Client) -> None:
    missing = "z" * 32
    response = viewer.get(console.queue("q1", f"?id={missing}"))
    assert response.status_code == 200
    assert f"No message with id <code>{missing}</code> in this queue." in (
        response.content.decode()
    )
    assert _ids(response) == []


def test_it_says_when_the_id_is_not_an_id(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?id=%3Cb%3Enope"))
    assert "No message with id <code>&lt;b&gt;nope</code> in this queue." in (
        response.content.decode()
    )


# -- filter by receive count and search the bodies --------------------------------------


@pytest.fixture
def received(q1, rsmq: RedisSMQ) -> dict[int, str]:
    """Three visible messages received 3, 1 and 0 times: rc -> id."""
    thrice, once, never = rsmq.send_messages("q1", ["thrice", "once", "never"])
    # Receive one message at a time: hide the others meanwhile.
    rsmq.change_message_visibility("q1", once, 3600)
    rsmq.change_message_visibility("q1", never, 3600)
    for _ in range(3):
        rsmq.receive_message("q1", vt=3600)
        rsmq.requeue("q1", [thrice])
    rsmq.change_message_visibility("q1", thrice, 3600)
    rsmq.requeue("q1", [once])
    rsmq.receive_message("q1", vt=3600)
    rsmq.requeue("q1", [thrice, once, never])
    return {3: thrice, 1: once, 0: never}


def test_it_filters_by_receive_count(console, received, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?rc=3"))
    assert _ids(response) == [received[3]]


def test_it_filters_by_a_lower_receive_count(console, received, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?rc=1"))
    assert set(_ids(response)) == set(received.values()) - {received[0]}


def test_it_says_how_many_it_looked_at(console, received, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?rc=3")).content.decode()
    assert _progress(page) == "Done: looked at 3 of 3 messages — 1 match: the whole list."


def _progress(page: str) -> str:
    import re

    found = re.search(r'<p id="scan-progress"[^>]*>(.*?)</p>', page, re.S)
    assert found
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


def test_it_finds_bodies_containing_a_text(console, received, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?search=hric"))
    assert _ids(response) == [received[3]]
    page = response.content.decode()
    assert _progress(page) == "Done: looked at 3 of 3 messages — 1 match: the whole list."
    assert "<mark>hric</mark>" in page


def test_it_says_when_the_search_finds_nothing(console, received, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?search=absent")).content.decode()
    assert "0 matches" in _progress(page)
    assert "No matching message here." in page


def test_it_bounds_the_search(console, q1, settings, viewer: Client, rsmq: RedisSMQ) -> None:
    settings.RSMQ_BROWSE_STEP, settings.RSMQ_BROWSE_BUDGET_MS = 4, 0
    rsmq.send_messages("q1", ["hay"] * 6 + ["needle"])
    page = viewer.get(console.queue("q1", "?search=needle")).content.decode()
    assert _progress(page) == "Looking… looked at 4 of 7 messages — 0 matches — Stop"
    assert "data-scan-running" in page  # htmx asks for the next step at once


def test_it_continues_the_search_where_it_stopped(
    console, q1, settings, viewer: Client, rsmq: RedisSMQ
) -> None:
    import html
    import re

    settings.RSMQ_BROWSE_STEP, settings.RSMQ_BROWSE_BUDGET_MS = 4, 0
    ids = rsmq.send_messages("q1", ["hay"] * 6 + ["needle"])
    first = viewer.get(console.queue("q1", "?search=needle")).content.decode()
    more = html.unescape(re.search(r'id="scan-next" hx-get="([^"]*)"', first).group(1))
    step = viewer.get(console.queue("q1", more), headers={"HX-Request": "true"}).content.decode()
    assert _progress(step) == "Done: looked at 7 of 7 messages — 1 match: the whole list."
    assert 'hx-swap-oob="beforeend:#scan-rows"' in step and ids[-1] in step
    stop = html.unescape(re.search(r'hx-get="([^"]*)"[^>]*data-scan-stop', first).group(1))
    stopped = viewer.get(console.queue("q1", stop), headers={"HX-Request": "true"})
    assert _progress(stopped.content.decode()).startswith("Stopped: looked at 4 of 7 messages")


# -- bodies in the list ------------------------------------------------------------------


def test_it_truncates_long_bodies(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    body = "".join(f"{i:04d}" for i in range(250))  # 1,000 bytes
    rsmq.send_message("q1", body)
    page = viewer.get(console.queue()).content.decode()
    assert f"<code>{body[:300]}</code>" in page
    assert body[:301] not in page
    assert "… 1000\xa0bytes" in page


def test_it_shows_short_bodies_whole(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.send_message("q1", "short")
    page = viewer.get(console.queue()).content.decode()
    assert "<code>short</code></td>" in page


def test_it_escapes_bodies(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.send_message("q1", "<script>alert(1)</script>")
    page = viewer.get(console.queue()).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page


def test_it_escapes_bodies_found_by_search(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.send_message("q1", "<script>alert(1)</script>")
    page = viewer.get(console.queue("q1", "?search=alert")).content.decode()
    assert "&lt;script&gt;<mark>alert</mark>(1)&lt;/script&gt;" in page
    assert "<script>" not in page


# -- reading never changes anything ------------------------------------------------------


def test_it_never_counts_as_a_receive(console, mixed, viewer: Client, ns_state) -> None:
    before = ns_state()
    for query in ["", "?state=inflight", "?rc=1", "?search=body", f"?id={mixed['visible']}"]:
        viewer.get(console.queue("q1", query))
    assert ns_state() == before


# -- live refresh ------------------------------------------------------------------------


def test_it_answers_the_live_poll_with_the_live_partial(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?state=all"), **console.htmx(target="live"))
    page = response.content.decode()
    assert response.status_code == 200
    # The partial, after an out-of-band element that clears a Redis-down alert.
    head, _, rest = page.lstrip().partition("\n")
    assert head == '<div id="alert" class="alert" hx-swap-oob="true"></div>'
    assert rest.lstrip().startswith('<section id="live"')
    assert "<html" not in page
    assert "Attributes" not in page  # the side column is not polled


def test_it_keeps_the_tab_in_the_live_partial(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", "?state=delayed"), **console.htmx(target="live"))
    page = response.content.decode()
    assert f'hx-get="{console.queue("q1", "?state=delayed")}"' in page
    assert mixed["delayed"] in page and mixed["visible"] not in page


# -- what is not there -------------------------------------------------------------------


def test_it_answers_404_for_a_missing_queue(console, viewer: Client) -> None:
    response = viewer.get(console.queue("nope"))
    assert response.status_code == 404
    assert "Queue nope does not exist (any more)." in response.content.decode()


def test_it_answers_404_for_a_queue_deleted_meanwhile(
    console, q1, viewer: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    assert viewer.get(console.queue()).status_code == 404


def test_it_answers_404_for_an_invalid_queue_name(console, viewer: Client) -> None:
    response = viewer.get(console.queue("bad.name"))
    assert response.status_code == 404
    assert "not a valid queue name" in response.content.decode()


def test_it_answers_404_for_an_invalid_queue_name_with_an_id(console, login) -> None:
    client = login("vic", "viewer")
    client.raise_request_exception = False
    assert client.get(console.queue("bad.name", "?id=" + "a" * 32)).status_code == 404


def test_it_answers_404_for_a_namespace_not_configured(console, q1, viewer: Client) -> None:
    response = viewer.get("/c/default/elsewhere/q/q1/")
    assert response.status_code == 404
