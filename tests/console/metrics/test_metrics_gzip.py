"""/metrics is gzipped for a scraper that accepts it (Prometheus does)."""

from __future__ import annotations

import gzip

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_gzips_a_scrape_that_accepts_gzip(settings, console, rsmq: RedisSMQ) -> None:
    settings.RSMQ_METRICS_TOKEN = "t0ken-for-gzip"
    for i in range(200):
        rsmq.create_queue(f"q{i:03d}")
    headers = {"HTTP_AUTHORIZATION": "Bearer t0ken-for-gzip"}

    plain = Client().get("/metrics", **headers)
    zipped = Client().get("/metrics", HTTP_ACCEPT_ENCODING="gzip", **headers)

    assert zipped["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in plain
    zipped_body, plain_body = zipped.getvalue(), plain.getvalue()  # streamed: read once
    assert gzip.decompress(zipped_body) == plain_body
    assert len(zipped_body) < len(plain_body) / 10
