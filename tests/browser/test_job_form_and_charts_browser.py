"""Act on every match's form and the charts after a step, in Chromium: the form chooses no
action for the operator (Delete is last, never the default) and shows only the chosen
action's fields; a backlog with an import step gets an axis that fits it, a time axis over
the data's span, a net in − out line, and *Drains in* says "never" when it grows."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_job_form_asks_for_an_action_and_shows_its_fields(
    console: str, settings, rsmq: RedisSMQ, make_user, page_as
) -> None:
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", [f"order {i} poison" for i in range(5)])
    page = page_as(make_user("operator"))
    page.goto(f"{console}/q/q1/?search=poison")
    job = page.locator("[data-bulk-job]")
    job.locator("summary").click()
    kind = job.locator("[data-job-kind]")
    expect(kind).to_have_value("")  # nothing chosen
    # the browser refuses to count with no action chosen
    job.locator("[data-job-count]").click()
    expect(page).to_have_url(re.compile(r"/q/q1/\?search=poison$"))
    options = kind.locator("option").all_inner_texts()
    assert options[0] == "Choose an action…" and options[-1] == "Delete"
    visible = lambda name: job.locator(f"input[name={name}]")  # noqa: E731
    for name in ("to", "vt", "rate", "canary"):
        expect(visible(name)).to_be_hidden()
    kind.select_option("visibility")
    expect(visible("vt")).to_be_visible()
    expect(visible("to")).to_be_hidden()
    expect(visible("canary")).to_be_hidden()
    kind.select_option("move")
    for name in ("to", "rate", "canary", "watch", "max_bounce"):
        expect(visible(name)).to_be_visible()
    expect(visible("vt")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.fixture
def stepped(console: str, settings, rsmq: RedisSMQ, add_snapshot, redis_now) -> str:
    """25 minutes of events: 165,000 + 20/s, never consumed, and a 27,000 import 5 min ago."""
    settings.RSMQ_REFRESH_SECONDS = 0
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    rsmq.create_queue("events")
    rsmq.send_messages("events", ["e"] * 10)
    now = redis_now()
    for i in range(151):
        t = 1500 - 10 * i
        msgs = 165_000 + 20 * (1500 - t) + (27_000 if t <= 300 else 0)
        add_snapshot(
            "events", now - t * 1000, msgs=msgs, totalsent=msgs, oldest_age=float(1500 - t)
        )
    return console


@pytest.mark.parametrize(("width", "scheme"), [(1440, "light"), (390, "dark")])
def test_the_charts_fit_the_data_after_a_step(
    stepped: str, make_user, page_as, width: int, scheme: str
) -> None:
    page = page_as(make_user("viewer"), viewport={"width": width, "height": 900},
                   color_scheme=scheme)  # fmt: skip
    page.goto(f"{stepped}/q/events/")
    backlog = page.locator("figure.chart").first
    expect(backlog.locator("figcaption")).to_contain_text("not from 0")
    ticks = backlog.locator("text.x").all_text_contents()
    first, last = (dt_min(t) for t in (ticks[0], ticks[-1]))
    assert 24 <= (last - first) % (24 * 60) <= 26  # the data's 25 minutes, not the hour
    rates = page.locator("figure.chart").nth(1)
    expect(rates.locator("polyline.s-net")).to_have_count(1)
    expect(rates.locator("ul.legend")).to_contain_text("net in − out 20/s")
    expect(page.locator("[data-drain]")).to_have_text("never drains: growing +20/s")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.errors == []  # type: ignore[attr-defined]


def dt_min(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)
