"""Redis at risk: the Redis page of a connection, the warning on every page, the
rsmq_redis_* gauges and the Redis alert metrics — for real redis-servers started here
with an eviction policy, with persistence off, with maxmemory nearly reached, and
healthy ones (noeviction with an AOF, or with a recent RDB save) that raise nothing."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from support.console_fixtures import TOKEN

from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, AlertRule, Notification
from dashboard.probes import redis_health
from queues.health import read_health, risks
from queues.server import EmbeddedRedis

pytestmark = pytest.mark.django_db

MAXMEMORY = 4 * 1024 * 1024
#: the servers of this module, by name: (persist, aof, extra redis-server arguments)
SERVERS: dict[str, tuple[bool, bool, list[str]]] = {
    # an eviction policy, with an AOF: only the policy is a risk
    "lru": (True, True, ["--maxmemory-policy", "allkeys-lru"]),
    # noeviction, nothing saved (--save "" --appendonly no)
    "volatile": (False, False, []),
    # noeviction with an AOF, a maxmemory that the module fills to over 80 %
    "full": (True, True, ["--maxmemory", str(MAXMEMORY)]),
    # evicting for real: a small maxmemory with allkeys-lru, overfilled
    "evicting": (True, True, ["--maxmemory", str(MAXMEMORY), "--maxmemory-policy", "allkeys-lru"]),
    # healthy: noeviction with an AOF; and with RDB saves (the last one at start)
    "healthy_aof": (True, True, []),
    "healthy_rdb": (True, False, []),
    # a managed Redis: CONFIG and SLOWLOG refused (renamed away), nothing saved
    "managed": (False, False, ["--rename-command", "CONFIG", "",
                               "--rename-command", "SLOWLOG", ""]),
}  # fmt: skip


def fill(client: redis.Redis, share: float) -> None:
    """Write 16 KiB values until used memory passes ``share`` of maxmemory (or writes are
    refused, under noeviction)."""
    value = "x" * 16384
    for i in range(10_000):
        if client.info("memory")["used_memory"] > share * MAXMEMORY:
            return
        try:
            client.set(f"fill:{i}", value)
        except redis.exceptions.OutOfMemoryError:
            return


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, EmbeddedRedis]]:
    started: dict[str, EmbeddedRedis] = {}
    try:
        for name, (persist, aof, extra) in SERVERS.items():
            server = EmbeddedRedis(
                tmp_path_factory.mktemp(name), persist=persist, aof=aof, extra_args=extra
            )
            started[name] = server.start()
        full = redis.Redis(port=started["full"].port)
        fill(full, 0.85)
        evicting = redis.Redis(port=started["evicting"].port)
        fill(evicting, 1.5)  # allkeys-lru: never refused; it evicts instead
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture
def using(settings, servers: dict[str, EmbeddedRedis]) -> Callable[..., None]:
    """``using("lru", ...)``: the console's connections are those servers (by name)."""
    redis_health.clear_cache()

    def use(*names: str) -> None:
        settings.RSMQ_CONNECTIONS = [
            {"name": n.replace("_", "-"), "url": servers[n].url, "namespaces": ["rsmq"]}
            for n in names
        ]

    yield use
    redis_health.clear_cache()


def codes(server: EmbeddedRedis, save_age: float = 3600) -> set[str]:
    with redis.Redis(port=server.port) as client:
        return {r.code for r in risks(read_health(client), save_age_limit=save_age)}


# -- the judgement, on each server ------------------------------------------------------


def test_an_eviction_policy_is_a_risk(servers) -> None:
    assert codes(servers["lru"]) == {"eviction_policy"}


def test_persistence_off_is_a_risk(servers) -> None:
    assert codes(servers["volatile"]) == {"persistence_off"}


def test_memory_near_maxmemory_is_a_risk(servers) -> None:
    with redis.Redis(port=servers["full"].port) as client:
        h = read_health(client)
    assert h.maxmemory == MAXMEMORY and h.memory_ratio is not None and h.memory_ratio > 0.8
    assert codes(servers["full"]) == {"memory_high"}


def test_evictions_seen_are_a_risk(servers) -> None:
    with redis.Redis(port=servers["evicting"].port) as client:
        assert read_health(client).evicted_keys > 0
    assert {"eviction_policy", "evicted"} <= codes(servers["evicting"])


@pytest.mark.parametrize("name", ["healthy_aof", "healthy_rdb"])
def test_a_healthy_server_is_no_risk(servers, name: str) -> None:
    with redis.Redis(port=servers[name].port) as client:
        client.set("some", "change")  # unsaved changes, but the last save is recent
    assert codes(servers[name]) == set()


def test_an_old_last_save_is_a_risk_without_an_aof(servers) -> None:
    """The same RDB server, judged with a save-age limit of 0 s: its changes are unsaved."""
    with redis.Redis(port=servers["healthy_rdb"].port) as client:
        client.set("another", "change")
    assert codes(servers["healthy_rdb"], save_age=0) == {"save_old"}


def test_a_managed_redis_refusing_config_is_judged_from_info(servers) -> None:
    with redis.Redis(port=servers["managed"].port) as client:
        client.set("k", "v")
        h = read_health(client)
        assert h.save is None and "unknown command" in h.config_refused.lower()
        assert h.slowlog is None and h.slowlog_refused
        assert h.persistence is None  # no AOF, the RDB schedule unknown: not "off"
        # The last save (at start) is old by a 0 s limit, with a change unsaved.
        assert {r.code for r in risks(h, save_age_limit=0)} == {"save_old"}


# -- the page ---------------------------------------------------------------------------


def risk_items(page: str) -> list[str]:
    return re.findall(r'<li class="risk" data-risk="([a-z_]+)">', page)


def banner(page: str) -> list[str]:
    return re.findall(r'class="banner error redis-warning".*?<strong>Redis ([\w-]+) can', page)


def test_the_page_shows_the_servers_health_and_its_risks(using, viewer: Client, servers) -> None:
    using("lru")
    page = viewer.get("/redis/lru/").content.decode()
    assert risk_items(page) == ["eviction_policy"]
    assert "maxmemory-policy is allkeys-lru" in page
    assert '<dd data-field="version">6.' in page or '<dd data-field="version">7.' in page
    assert re.search(r'data-field="aof">on', page)
    assert re.search(r'data-field="policy"><code>allkeys-lru</code>', page)
    assert re.search(r'data-field="role">master', page)
    assert "Slow log" in page


def test_the_page_lists_the_slow_log(using, viewer: Client, servers) -> None:
    using("healthy_aof")
    with redis.Redis(port=servers["healthy_aof"].port) as client:
        before = client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
        client.config_set("slowlog-log-slower-than", 0)
        client.set("slow-key", "v" * 500)
        client.config_set("slowlog-log-slower-than", before)
    page = viewer.get("/redis/healthy-aof/").content.decode()
    assert re.search(r'<td class="mono small">SET slow-key v{59}…</td>', page)
    assert "data-risk-none" in page and risk_items(page) == []


def test_reading_the_page_changes_nothing_on_the_server(using, viewer: Client, servers) -> None:
    using("volatile")
    with redis.Redis(port=servers["volatile"].port) as client:
        config = client.config_get("*")
        keys = client.dbsize()
        viewer.get("/redis/volatile/")
        assert client.config_get("*") == config
        assert client.dbsize() == keys


def test_a_managed_redis_page_says_config_was_refused(using, viewer: Client) -> None:
    using("managed")
    page = viewer.get("/redis/managed/").content.decode()
    assert "data-config-refused" in page and "CONFIG GET was refused" in page
    assert "data-slowlog-refused" in page
    assert re.search(r'data-field="save">unknown \(CONFIG refused\)', page)


def test_the_page_of_an_unknown_connection_is_a_404(using, viewer: Client) -> None:
    using("lru")
    assert viewer.get("/redis/nope/").status_code == 404


def test_the_page_needs_a_role(using, outsider: Client, anon: Client) -> None:
    using("lru")
    assert outsider.get("/redis/lru/").status_code == 403
    assert anon.get("/redis/lru/").status_code == 302  # to the login page


def test_a_redis_that_does_not_answer_is_said_so(settings, viewer: Client) -> None:
    from queues.server import free_port

    redis_health.clear_cache()
    settings.RSMQ_CONNECTIONS = [
        {"name": "down", "url": f"redis://127.0.0.1:{free_port()}/0", "namespaces": ["rsmq"]}
    ]
    response = viewer.get("/redis/down/")
    assert response.status_code == 200
    assert "data-redis-error" in response.content.decode()
    assert "ConnectionError" in response.content.decode()


# -- the warning on every page ----------------------------------------------------------


@pytest.mark.parametrize("name", ["lru", "volatile", "full"])
def test_every_page_warns_while_data_can_be_lost(using, viewer: Client, name: str) -> None:
    using(name)
    conn = name.replace("_", "-")
    for url in (f"/c/{conn}/rsmq/", "/audit/", "/alerts/", f"/redis/{conn}/"):
        page = viewer.get(url).content.decode()
        assert banner(page) == [conn], url


@pytest.mark.parametrize("name", ["healthy_aof", "healthy_rdb"])
def test_no_page_warns_for_a_healthy_redis(using, viewer: Client, name: str) -> None:
    using(name)
    conn = name.replace("_", "-")
    for url in (f"/c/{conn}/rsmq/", "/audit/", "/alerts/"):
        page = viewer.get(url).content.decode()
        assert "redis-warning" not in page, url


def test_a_page_of_one_connection_warns_of_its_own_redis(using, viewer: Client) -> None:
    using("healthy_aof", "lru")
    page = viewer.get("/redis/lru/").content.decode()
    assert '<a href="/redis/healthy-aof/">Redis healthy-aof</a>' in page  # the others
    assert banner(viewer.get("/c/healthy-aof/rsmq/").content.decode()) == []
    assert banner(viewer.get("/c/lru/rsmq/").content.decode()) == ["lru"]
    assert banner(viewer.get("/audit/").content.decode()) == ["lru"]  # of no connection


def test_the_banner_reads_info_once_per_connection_for_a_few_seconds(
    using, viewer: Client, wire, settings
) -> None:
    using("lru")
    settings.RSMQ_REDIS_HEALTH_CACHE = 60
    viewer.get("/owners/")
    sends = wire.sends
    assert sends >= 1
    for _ in range(3):
        viewer.get("/owners/")
    assert (
        wire.sends == sends
    )  # the owners page itself reads no Redis (the audit page drains the API's records)
    settings.RSMQ_REDIS_HEALTH_CACHE = 0
    viewer.get("/owners/")
    assert wire.sends == sends + 1


# -- metrics and alerts -----------------------------------------------------------------


def redis_samples() -> dict[tuple[str, tuple[str, ...]], float]:
    """{(name, (connection[, risk])): value} of the rsmq_redis_* samples of one scrape."""
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    out = {}
    for family in text_string_to_metric_families(response.getvalue().decode()):
        for s in family.samples:
            if s.name.startswith("rsmq_redis_"):
                key = tuple(s.labels[k] for k in ("connection", "risk") if k in s.labels)
                out[(s.name, key)] = s.value
    return out


def test_metrics_expose_the_redis_gauges(using, token, servers) -> None:
    using("lru", "volatile", "full", "healthy_aof")
    samples = redis_samples()
    assert samples[("rsmq_redis_at_risk", ("lru",))] == 1
    assert samples[("rsmq_redis_risk", ("lru", "eviction_policy"))] == 1
    assert samples[("rsmq_redis_at_risk", ("volatile",))] == 1
    assert samples[("rsmq_redis_persistence", ("volatile",))] == 0
    assert samples[("rsmq_redis_risk", ("volatile", "persistence_off"))] == 1
    assert samples[("rsmq_redis_memory_max_bytes", ("full",))] == MAXMEMORY
    assert samples[("rsmq_redis_memory_used_bytes", ("full",))] > 0.8 * MAXMEMORY
    assert samples[("rsmq_redis_at_risk", ("healthy-aof",))] == 0
    assert samples[("rsmq_redis_persistence", ("healthy-aof",))] == 1
    assert not [k for k in samples if k[0] == "rsmq_redis_risk" and k[1][0] == "healthy-aof"]
    assert samples[("rsmq_redis_up", ("lru",))] == 1
    assert samples[("rsmq_redis_evicted_keys", ("lru",))] == 0
    # The AOF servers never made an RDB save: the age is their uptime, a few seconds.
    assert 0 <= samples[("rsmq_redis_last_save_age_seconds", ("healthy-aof",))] < 600


@pytest.mark.parametrize(
    ("name", "metric", "threshold", "fires"),
    [
        ("lru", AlertRule.Metric.REDIS_AT_RISK, 0, True),
        ("healthy_aof", AlertRule.Metric.REDIS_AT_RISK, 0, False),
        ("full", AlertRule.Metric.REDIS_MEMORY_SHARE, 0.8, True),
        ("evicting", AlertRule.Metric.REDIS_EVICTED_KEYS, 0, True),
        ("healthy_rdb", AlertRule.Metric.REDIS_EVICTED_KEYS, 0, False),
    ],
)
def test_redis_alert_rules_fire_on_the_connection(
    using, lake, add_snapshot, ns, servers, name, metric, threshold, fires
) -> None:
    using(name)
    conn = name.replace("_", "-")
    with redis.Redis(port=servers[name].port) as client:
        now = int(client.time()[0] * 1000)
    add_snapshot("q1", now, conn=conn)  # a recent run: evaluation looks at the place
    rule = AlertRule.objects.create(
        name="redis", connection=conn, namespace=ns, metric=metric,
        threshold=threshold, webhook_url="http://127.0.0.1:9/hook", webhook_secret="k",
    )  # fmt: skip
    evaluate()
    alerts = list(rule.alerts.values_list("queue", "state"))
    assert alerts == ([("", Alert.State.FIRING)] if fires else [])
    if fires:
        payload = Notification.objects.get(rule=rule).payload
        assert payload["alerts"][0]["queue"] == ""


def test_the_rule_form_takes_a_redis_metric_without_queue(using, admin: Client, settings) -> None:
    using("lru")
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]  # the receiver below is on loopback
    form = {
        "name": "redis risk", "place": "lru/rsmq", "metric": "redis:at_risk", "op": "gt",
        "threshold": "0", "for_seconds": "0", "enabled": "on",
        "webhook_url": "http://127.0.0.1:9/hook",
    }  # fmt: skip
    response = admin.post("/alerts/new/", form)
    assert response.status_code in (302, 303), response.content.decode()[:2000]
    rule = AlertRule.objects.get()
    assert (rule.metric, rule.queue, rule.pattern, rule.connection) == (
        "redis:at_risk", "", "", "lru",
    )  # fmt: skip
    with_queue = {**form, "name": "x", "queue": "q1"}
    response = admin.post("/alerts/new/", with_queue)
    assert "leave queue and pattern empty" in response.content.decode()
    assert AlertRule.objects.count() == 1


def test_the_alerts_page_links_a_redis_alert_to_the_redis_page(using, viewer: Client) -> None:
    using("lru")
    rule = AlertRule.objects.create(
        name="redis", connection="lru", namespace="rsmq", metric="redis:at_risk",
        webhook_url="http://127.0.0.1:9/hook",
    )  # fmt: skip
    Alert.objects.create(
        rule=rule, connection="lru", namespace="rsmq", queue="", state="firing", value=1,
        since=0, changed=0,
    )  # fmt: skip
    page = viewer.get("/alerts/").content.decode()
    assert '<a href="/redis/lru/">Redis lru</a>' in page


def test_a_redis_that_does_not_answer_is_asked_again_less_often(settings, viewer: Client) -> None:
    from queues.server import free_port

    redis_health.clear_cache()
    settings.RSMQ_REDIS_HEALTH_CACHE = 0
    settings.RSMQ_CONNECTIONS = [
        {"name": "down", "url": f"redis://127.0.0.1:{free_port()}/0", "namespaces": ["rsmq"]}
    ]
    first = redis_health.cached(redis_health.find("down"))  # type: ignore[arg-type]
    assert first.health is None and first.error
    assert redis_health.cached(redis_health.find("down")) is first  # type: ignore[arg-type]
    assert viewer.get("/audit/").status_code == 200  # the audit log waits on nothing
    assert redis_health.cached(redis_health.find("down")) is first  # type: ignore[arg-type]


def test_a_live_refresh_fragment_reads_no_health(using, viewer: Client) -> None:
    using("lru")
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "queue-table",
               "HTTP_HX_CURRENT_URL": "http://testserver/c/lru/rsmq/"}  # fmt: skip
    assert viewer.get("/c/lru/rsmq/", **headers).status_code == 200
    assert redis_health._cache == {}  # the banner is not in the fragment: no INFO
    page = viewer.get("/c/lru/rsmq/").content.decode()
    assert banner(page) == ["lru"] and len(redis_health._cache) == 1
