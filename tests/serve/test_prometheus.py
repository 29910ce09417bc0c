"""The shipped Prometheus rules (deploy/prometheus/): promtool's unit tests pass, and a
real Prometheus (Debian's binary) scraping a served `./run` fires the consumers-stalled
alert for a queue nobody receives from — as does the console's own rule on the same
queue, whose signed webhook reaches a local receiver. The Grafana dashboard's queries
run in that Prometheus."""

from __future__ import annotations

import hmac
import html
import json
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.processes import stop
from support.served import ROOT, Response, Served, cookies, request, start

from queues import RedisSMQ
from queues.server import free_port

RULES = ROOT / "deploy" / "prometheus"
TOKEN = "prometheus-scrape-token"
SECONDS_PER_MINUTE = 5  # the live test's clock: the shipped rules' minutes as 5 s


def promtool(*args: str, cwd: Path = RULES) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary, "promtool is not installed (.ci/run installs Debian's prometheus)"
    return subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_promtool_checks_the_rules_and_passes_their_unit_tests() -> None:
    checked = promtool("check", "rules", "rules.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 17 rules found" in checked.stdout
    tested = promtool("test", "rules", "rules_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def scaled(rules: str) -> str:
    """The shipped rules with every duration's minutes as SECONDS_PER_MINUTE seconds:
    the expressions, labels and thresholds as they ship."""

    def seconds(m: re.Match[str]) -> str:
        return f"{m[1]}{int(m[2]) * SECONDS_PER_MINUTE}s{m[3]}"

    out = re.sub(r"(\[|offset |for: )(\d+)m(\]|\s)", seconds, rules)
    assert re.search(r"(\[|offset |for: )\d+[hd]", out) is None, "only minutes are scaled"
    return out


def test_scaling_changes_only_durations() -> None:
    shipped = (RULES / "rules.yml").read_text()
    assert scaled("rate(x[1m])\n    for: 5m\n  y offset 1m ") == (
        "rate(x[5s])\n    for: 25s\n  y offset 5s "
    )
    strip = re.compile(r"\d+[ms]\b")
    assert strip.sub("D", scaled(shipped)) == strip.sub("D", shipped)


# -- the live test ------------------------------------------------------------------------


class Receiver:
    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture
def served(clone: Path) -> Iterator[Served]:
    console = start(
        clone, log_name="prometheus.log", RSMQ_SNAPSHOT_INTERVAL="1", RSMQ_METRICS_TOKEN=TOKEN,
        RSMQ_OUTBOUND_ALLOW="127.0.0.1",  # the webhook's receiver is the test's, on loopback
    )  # fmt: skip
    try:
        console.wait_ready()
        console.login()
        yield console
    finally:
        console.stop()


@pytest.fixture
def prometheus(served: Served, tmp_path: Path) -> Iterator[int]:
    binary = shutil.which("prometheus")
    assert binary, "prometheus is not installed (.ci/run installs Debian's prometheus)"
    (tmp_path / "rules.yml").write_text(scaled((RULES / "rules.yml").read_text()))
    (tmp_path / "prometheus.yml").write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": ["rules.yml"],
                "scrape_configs": [
                    {
                        "job_name": "rsmq-console",
                        "authorization": {"type": "Bearer", "credentials": TOKEN},
                        "static_configs": [{"targets": [f"127.0.0.1:{served.port}"]}],
                    }
                ],
            }
        )
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [binary, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         "--log.level=warn"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for("Prometheus ready", lambda: ready(port), timeout=60)
        yield port
    finally:
        stop(process)
        log.close()


def ready(port: int) -> bool:
    """Prometheus answers /-/ready with 200 once its storage and rules are loaded."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as r:  # noqa: S310
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError):
        return False


def api(port: int, path: str, **query: str) -> Any:
    url = f"http://127.0.0.1:{port}{path}?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - the test's own server
        answer = json.load(r)
    assert answer["status"] == "success", answer
    return answer["data"]


def post_form(served: Served, path: str, fields: dict[str, str]) -> Response:
    page = served.get(path)
    assert page.status == 200, page.text[:500]
    served.cookies.update(cookies(page))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": html.unescape(token[1]), **fields})
    cookie = "; ".join(f"{k}={v}" for k, v in served.cookies.items())
    return request(
        served.port, path, "POST", body=body.encode(),
        headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded",
                 "Referer": f"http://127.0.0.1:{served.port}{path}"},
    )  # fmt: skip


def wait_for(what: str, check: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout} s: {what}")


@pytest.mark.slow
def test_a_stalled_queue_fires_in_prometheus_and_in_the_console(
    served: Served, prometheus: int, receiver: Receiver
) -> None:
    rsmq = RedisSMQ(url=f"redis://127.0.0.1:{served.redis_port}/0", ns="rsmq")
    rsmq.create_queue("stalled")
    rsmq.send_messages("stalled", ["nobody", "reads", "these"])
    created = post_form(served, "/alerts/new/", {
        "name": "stalled queue", "place": "default/rsmq", "queue": "stalled", "pattern": "",
        "metric": "oldest_age", "op": "gt", "threshold": "2", "for_seconds": "2",
        "enabled": "on", "webhook_url": receiver.url, "slack_url": "", "emails": "",
    })  # fmt: skip
    assert created.status == 302, created.text[:2000]
    rule_page = served.get(created.headers["location"]).text
    secret = re.search(r'<code class="secret">([0-9a-f]{64})</code>', rule_page)
    assert secret, rule_page[:2000]

    def stalled_alerts() -> list[dict[str, Any]]:
        try:
            alerts = api(prometheus, "/api/v1/alerts")["alerts"]
        except urllib.error.HTTPError as e:
            if e.code != 503:
                raise
            return []  # Prometheus not ready (yet, or for a moment): ask again
        return [
            a for a in alerts
            if a["labels"]["alertname"] == "RsmqConsumersStalled"
            and a["labels"].get("queue") == "stalled" and a["state"] == "firing"
        ]  # fmt: skip

    # The shipped rule: 5 "minutes" of visible messages and no receive (25 s here).
    [fired] = wait_for("Prometheus fires RsmqConsumersStalled", stalled_alerts, timeout=150)
    assert fired["labels"] | {"alertname": "x"} == {
        "alertname": "x", "connection": "default", "namespace": "rsmq", "queue": "stalled",
        "kind": "consumers_stalled", "severity": "critical", "job": "rsmq-console",
        "instance": f"127.0.0.1:{served.port}",
    }  # fmt: skip

    # The console's own rule fired on the same queue: its page and its signed webhook.
    def firing_here() -> bool:
        page = served.get("/alerts/").text
        live = page.split("<h2>Rules</h2>")[0]
        return '<span class="alert-state firing">firing</span>' in live and ">stalled</a>" in live

    wait_for("the console's rule fires", firing_here, timeout=30)
    [(headers, body)] = wait_for("the webhook arrives", lambda: receiver.got, timeout=30)
    expected = "sha256=" + hmac.new(secret[1].encode(), body, "sha256").hexdigest()
    assert hmac.compare_digest(headers["x-rsmq-signature"], expected)
    payload = json.loads(body)
    assert [(a["queue"], a["state"]) for a in payload["alerts"]] == [("stalled", "firing")]
    assert payload["rule"]["name"] == "stalled queue"

    # The Grafana dashboard's queries are PromQL this Prometheus runs.
    board = json.loads((ROOT / "deploy/grafana/rsmq-console.json").read_text())
    for panel in board["panels"]:
        for target in panel["targets"]:
            expr = re.sub(r"\$(connection|namespace|queue)\b", ".*", target["expr"])
            expr = expr.replace("$__rate_interval", "1m")
            api(prometheus, "/api/v1/query", query=expr)
