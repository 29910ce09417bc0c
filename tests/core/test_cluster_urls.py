"""Sentinel and Cluster URLs understood (queues.urls.parse): one clear line for a bad one,
never its password."""

from __future__ import annotations

import pytest

from queues import InvalidArgument, RedisSMQ
from queues.urls import Target, hash_tag, parse


def test_a_sentinel_url_names_its_sentinels_service_db_and_passwords() -> None:
    t = parse("redis+sentinel://user:p%40ss@s1:26380,[::1],s3/mymaster/2?sentinel_password=sp")
    assert t == Target(
        "sentinel",
        t.url,
        (("s1", 26380), ("::1", 26379), ("s3", 26379)),
        "mymaster",
        2,
        "user",
        "p@ss",
        "sp",
    )


def test_a_cluster_url_names_its_startup_nodes_and_password() -> None:
    t = parse("redis+cluster://:pw@n1:7000,n2?wait_replicas=1&wait_timeout=250")
    assert (t.kind, t.hosts, t.password, t.wait_replicas, t.wait_timeout) == (
        "cluster",
        (("n1", 7000), ("n2", 6379)),
        "pw",
        1,
        250,
    )


def test_wait_options_are_taken_out_of_a_plain_url_for_redis_py() -> None:
    t = parse("redis://:pw@h:6379/0?wait_replicas=2&socket_keepalive=true")
    assert (t.kind, t.url, t.wait_replicas) == (
        "redis",
        "redis://:pw@h:6379/0?socket_keepalive=true",
        2,
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://:pw@h:1", "/service[/db]"),
        ("redis+sentinel://:pw@h:1/svc/x", "db must be a number from 0 to 10000, not 'x'"),
        ("redis+sentinel://:pw@h:99999/svc", "'h:99999' must be host:port, port 1 to 65535"),
        ("redis+sentinel://:pw@h/svc?timeout=3", "unknown option 'timeout'"),
        ("redis+cluster://:pw@h:1/3", "a Cluster has only db 0"),
        ("redis+cluster://:pw@h?wait_timeout=-1", "wait_timeout must be between 0 and 60000"),
        ("http://:pw@h/0", "must start with redis://"),
    ],
)
def test_a_bad_url_is_one_line_naming_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ValueError) as e:
        parse(url)
    assert says in str(e.value) and "\n" not in str(e.value) and "pw" not in str(e.value)
    with pytest.raises(InvalidArgument) as e2:
        RedisSMQ(url=url)
    assert e2.value.field == "url"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("ns", "tag"),
    [("{shop}:orders", "shop"), ("a{b}c", "b"), ("orders", None), ("{}x", None), ("x{y", None)],
)
def test_a_namespaces_hash_tag_is_the_one_redis_cluster_hashes(ns: str, tag: str | None) -> None:
    assert hash_tag(ns) == tag


def test_the_console_wants_its_own_broker_url_beside_a_sentinel_or_cluster(
    settings, tmp_path
) -> None:
    from dashboard.serving.checks import problems

    settings.DATA_DIR = tmp_path
    settings.RSMQ_CONNECTIONS = [{"name": "ha", "url": "redis+sentinel://s1/mymaster"}]
    settings.CELERY_BROKER_URL = "redis+sentinel://s1/1"  # what settings derive from it
    assert problems() == [
        "CELERY_BROKER_URL must be set to a plain redis:// URL when RSMQ_REDIS_URL is a "
        "Sentinel or Cluster URL (Celery's broker and the console's locks can't use those)"
    ]
    settings.CELERY_BROKER_URL = "redis://broker:6379/1"
    assert problems() == []
