"""/metrics tests' scrape: the samples of one scrape by name and place (the token is
console_fixtures' ``token``)."""

from __future__ import annotations

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from support.console_fixtures import TOKEN


def scrape(client: Client, token: str | None = TOKEN) -> dict[tuple[str, tuple], float]:
    """{(sample name, (connection, namespace, queue)): value} of one scrape."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.getvalue().decode()):
        for s in family.samples:
            key = tuple(s.labels.get(k, "") for k in ("connection", "namespace", "queue"))
            samples[(s.name, key)] = s.value
    return samples
