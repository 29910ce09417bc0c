"""The live-refresh preference: stored per user, never below 2 s, 0 turns polling off; the
pages' polling attributes follow it."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import Preference
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

URL = "/preferences/refresh/"


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    return "q1"


def _stored(client: Client) -> int | None:
    pref = Preference.objects.filter(user=client.user).first()
    return pref.refresh_seconds if pref else None


@pytest.mark.parametrize("seconds", [0, 2, 10])
def test_it_stores_the_preference(viewer: Client, seconds: int) -> None:
    viewer.post(URL, {"refresh_seconds": str(seconds)})
    assert _stored(viewer) == seconds


def test_it_changes_a_stored_preference(viewer: Client) -> None:
    viewer.post(URL, {"refresh_seconds": "10"})
    viewer.post(URL, {"refresh_seconds": "30"})
    assert _stored(viewer) == 30
    assert Preference.objects.count() == 1


def test_it_keeps_each_users_preference_apart(viewer: Client, operator: Client) -> None:
    viewer.post(URL, {"refresh_seconds": "10"})
    operator.post(URL, {"refresh_seconds": "60"})
    assert (_stored(viewer), _stored(operator)) == (10, 60)


@pytest.mark.parametrize("value", ["1", "abc", "-5", "", "3"])
def test_it_ignores_an_invalid_value(viewer: Client, value: str) -> None:
    viewer.post(URL, {"refresh_seconds": value})
    assert _stored(viewer) is None


def test_it_keeps_the_stored_value_on_an_invalid_one(viewer: Client) -> None:
    viewer.post(URL, {"refresh_seconds": "10"})
    viewer.post(URL, {"refresh_seconds": "1"})
    assert _stored(viewer) == 10


def test_it_redirects_back_to_next(console, viewer: Client) -> None:
    response = viewer.post(URL, {"refresh_seconds": "2", "next": console.queue("q1", "?page=2")})
    assert response.status_code == 302
    assert response["Location"] == console.queue("q1", "?page=2")


@pytest.mark.parametrize("next_", ["https://evil.example/", "//evil.example/", "", "queues"])
def test_it_redirects_home_for_a_next_off_the_site(viewer: Client, next_: str) -> None:
    response = viewer.post(URL, {"refresh_seconds": "2", "next": next_})
    assert response["Location"] == "/"


def test_it_tells_htmx_to_refresh_the_page(viewer: Client) -> None:
    response = viewer.post(URL, {"refresh_seconds": "2"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    assert response["HX-Refresh"] == "true"


def test_it_rejects_get(viewer: Client) -> None:
    assert viewer.get(URL).status_code == 405


def test_it_lets_a_user_without_a_role_choose(outsider: Client) -> None:
    # A harmless per-user setting: no role needed (the pages themselves stay forbidden).
    outsider.post(URL, {"refresh_seconds": "10"})
    assert _stored(outsider) == 10


# -- the pages follow it -----------------------------------------------------------------


def test_it_polls_every_5_s_by_default(console, q1, viewer: Client) -> None:
    page = viewer.get(console.queue()).content.decode()
    assert 'hx-trigger="every 5s" data-poll' in page


def test_it_polls_the_queue_page_at_the_chosen_pace(console, q1, viewer: Client) -> None:
    viewer.post(URL, {"refresh_seconds": "10"})
    page = viewer.get(console.queue()).content.decode()
    assert 'hx-trigger="every 10s" data-poll' in page


def test_it_polls_the_overview_at_the_chosen_pace(console, q1, viewer: Client) -> None:
    viewer.post(URL, {"refresh_seconds": "30"})
    page = viewer.get(console.overview()).content.decode()
    assert 'hx-trigger="every 30s" data-poll' in page


def test_it_polls_the_current_address(console, q1, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?state=delayed")).content.decode()
    assert f'<section id="live" class="live" hx-get="{console.queue("q1", "?state=delayed")}"' in (
        page
    )


def test_it_never_lets_two_polls_overlap(console, q1, viewer: Client) -> None:
    page = viewer.get(console.queue()).content.decode()
    assert 'hx-sync="this:drop"' in page


@pytest.mark.parametrize("page", ["overview", "queue"])
def test_it_stops_polling_at_0(console, q1, viewer: Client, page: str) -> None:
    viewer.post(URL, {"refresh_seconds": "0"})
    url = console.overview() if page == "overview" else console.queue()
    html = viewer.get(url).content.decode()
    assert 'hx-trigger="every' not in html
    assert "data-poll" not in html


def test_it_shows_no_polling_attributes_on_the_live_section_at_0(
    console, q1, viewer: Client
) -> None:
    viewer.post(URL, {"refresh_seconds": "0"})
    page = viewer.get(console.queue()).content.decode()
    assert '<section id="live" class="live" >' in page


def test_it_never_polls_faster_than_every_2_s(console, q1, settings, viewer: Client) -> None:
    settings.RSMQ_REFRESH_SECONDS = 1
    page = viewer.get(console.queue()).content.decode()
    assert 'hx-trigger="every 2s" data-poll' in page


def test_it_shows_the_chosen_value_in_the_selector(console, q1, viewer: Client) -> None:
    viewer.post(URL, {"refresh_seconds": "10"})
    page = viewer.get(console.queue()).content.decode()
    assert '<option value="10" selected>10 s</option>' in page
