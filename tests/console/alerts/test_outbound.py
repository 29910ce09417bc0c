"""Outbound requests (dashboard/alerting/outbound.py) refuse inward targets: every address
form of loopback, private, link-local, multicast, reserved and unspecified addresses, and
every scheme but http(s), refused when a rule is saved and again before each delivery,
without a connection attempt (an audit hook sees every socket.connect and getaddrinfo of
this process; listeners of the test's own on 127.0.0.1 see that nothing came); a redirect
is not followed and carries no signature anywhere; permanent errors end the retries at
once, transient ones after a bounded number; errors are shown to admins only."""

from __future__ import annotations

import datetime as dt
import hmac
import json
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from dashboard.alerting import delivery, outbound
from dashboard.models import AlertRule, AuditEntry, Notification

SETTING_HINT = "allow it with RSMQ_OUTBOUND_ALLOW"


# -- what this process tried: every connect and every name lookup ----------------------

SEEN: list[tuple[str, tuple[Any, ...]]] = []
WATCHING = threading.Event()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if WATCHING.is_set() and event in ("socket.connect", "socket.getaddrinfo"):
        SEEN.append((event, args))


sys.addaudithook(_audit)  # an audit hook can't be removed: it records only while watching


@pytest.fixture
def watched() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    SEEN.clear()
    WATCHING.set()
    try:
        yield SEEN
    finally:
        WATCHING.clear()


def connects(seen: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    return [args[1] for event, args in seen if event == "socket.connect"]


def lookups(seen: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    return [args[0] for event, args in seen if event == "socket.getaddrinfo"]


# -- listeners of the test's own, on loopback --------------------------------------------


class Listener:
    """A TCP port on 127.0.0.1 that only counts the connections it is offered."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def accepted(self) -> int:
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return n
            conn.close()
            n += 1


@pytest.fixture
def listener() -> Iterator[Listener]:
    one = Listener()
    yield one
    one.sock.close()


class Receiver:
    """An HTTP receiver on 127.0.0.1 answering ``status`` (with ``location``) to every
    POST, keeping what it got."""

    def __init__(self, status: int = 204, location: str = "") -> None:
        self.status, self.location = status, location
        self.got: list[tuple[str, str, dict[str, str], bytes]] = []
        got, me = self.got, self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                got.append(
                    (self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                self.send_response(me.status)
                if me.location:
                    self.send_header("Location", me.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET = _any  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    made: list[Receiver] = []
    yield made
    for r in made:
        r.stop()


def notification(
    channel: str, target: str, name: str = "backlog", secret: str = "k"
) -> Notification:
    """An outbox row as evaluate.enqueue writes it (one firing queue)."""
    key = uuid.uuid4().hex
    payload = {
        "id": key,
        "rule": {"id": 1, "name": name, "condition": "visible messages above 5", "for_seconds": 0,
                 "connection": "default", "namespace": "rsmq", "queues": "q1"},
        "evaluated_at": "2026-11-25T10:00:00.000Z", "firing": 1, "resolved": 0,
        "alerts": [{"queue": "q1", "state": "firing", "value": 9.0, "since": "", "changed": ""}],
    }  # fmt: skip
    return Notification.objects.create(
        key=key, channel=channel, target=target, secret=secret, payload=payload,
        next_attempt=timezone.now(),
    )  # fmt: skip


# -- each address form, refused before any connection ------------------------------------

# (URL, what the refusal says); {port}: a listener's of the test's own on 127.0.0.1
LOOPBACK_FORMS = [
    ("http://127.0.0.1:{port}/hook", "127.0.0.1 is loopback"),
    ("http://localhost:{port}/hook", "localhost is loopback"),
    ("http://LocalHost.:{port}/", "localhost is loopback"),
    ("http://hooks.localhost:{port}/", "hooks.localhost is loopback"),
    ("http://2130706433:{port}/", "2130706433 is 127.0.0.1, which is loopback"),
    ("http://017700000001:{port}/", "017700000001 is 127.0.0.1, which is loopback"),
    ("http://0x7f.1:{port}/", "0x7f.1 is 127.0.0.1, which is loopback"),
    ("http://0177.0.0.1:{port}/", "0177.0.0.1 is 127.0.0.1, which is loopback"),
    ("http://127.1:{port}/", "127.1 is 127.0.0.1, which is loopback"),
    ("http://0.0.0.0:{port}/", "0.0.0.0 is unspecified"),
    ("http://0:{port}/", "0 is 0.0.0.0, which is unspecified"),
    ("http://[::1]:{port}/", "::1 is loopback"),
    ("http://[::]:{port}/", ":: is unspecified"),
    ("http://[::ffff:127.0.0.1]:{port}/", "::ffff:127.0.0.1 is 127.0.0.1, which is loopback"),
    ("http://[::127.0.0.1]:{port}/", "::127.0.0.1 is 127.0.0.1, which is loopback"),
]
INWARD_FORMS = [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is link-local"),
    (
        "http://[::ffff:169.254.169.254]/",
        "::ffff:169.254.169.254 is 169.254.169.254, which is link-local",
    ),  # noqa: E501
    ("http://[::ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe is 169.254.169.254, which is link-local"),
    ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe is 169.254.169.254, which is link-local"),
    ("http://[2002:a9fe:a9fe::1]/", "2002:a9fe:a9fe::1 is 169.254.169.254, which is link-local"),
    ("http://2852039166/", "2852039166 is 169.254.169.254, which is link-local"),
    ("http://10.0.0.1:8080/", "10.0.0.1 is private"),
    ("http://172.16.5.4/", "172.16.5.4 is private"),
    ("http://192.168.1.1/", "192.168.1.1 is private"),
    ("http://100.64.0.1/", "100.64.0.1 is not a public address"),
    ("http://224.0.0.1/", "224.0.0.1 is multicast"),
    ("http://240.0.0.1/", "240.0.0.1 is reserved"),
    ("http://255.255.255.255/", "255.255.255.255 is reserved"),
    ("http://[fe80::1]/", "fe80::1 is link-local"),
    ("http://[fc00::1]/", "fc00::1 is private"),
    ("http://[ff02::1]/", "ff02::1 is multicast"),
]
SCHEMES = [
    ("ftp://127.0.0.1:{port}/", "refused: ftp:// is not http or https"),
    ("gopher://127.0.0.1:{port}/_INFO", "refused: gopher:// is not http or https"),
    ("file:///etc/passwd", "refused: file:// is not http or https"),
    ("redis://127.0.0.1:{port}/", "refused: redis:// is not http or https"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "said"), LOOPBACK_FORMS + SCHEMES)
@pytest.mark.parametrize("channel", ["webhook", "slack"])
def test_a_loopback_target_is_refused_at_delivery_and_nothing_connects(
    url: str, said: str, channel: str, listener: Listener, watched: list[Any]
) -> None:
    n = notification(channel, url.format(port=listener.port))
    result = delivery.send_due()
    assert (result.sent, result.failed) == (0, 1)
    assert connects(watched) == [] and lookups(watched) == []
    assert listener.accepted() == 0
    n.refresh_from_db()
    assert said in n.last_error
    if not said.startswith("refused: "):
        assert f"refused: {said}; {SETTING_HINT}" in n.last_error
    # Permanent: given up at once, never tried again.
    assert n.gave_up is not None and n.attempts == 1 and n.sent is None
    Notification.objects.filter(pk=n.pk).update(next_attempt=timezone.now())
    assert delivery.send_due().failed == 0


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "said"), INWARD_FORMS)
def test_an_inward_target_is_refused_at_delivery_without_a_connection_attempt(
    url: str, said: str, watched: list[Any]
) -> None:
    n = notification("webhook", url)
    assert delivery.send_due().failed == 1
    assert connects(watched) == [] and lookups(watched) == []
    n.refresh_from_db()
    assert f"refused: {said}; {SETTING_HINT}" in n.last_error
    assert n.gave_up is not None


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """A resolver of the test's own (no DNS server is asked): name → addresses."""
    table: dict[str, list[str]] = {}

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        family = {4: socket.AF_INET, 6: socket.AF_INET6}
        return [
            (family[6 if ":" in a else 4], socket.SOCK_STREAM, 6, "", (a, port))
            for a in table[host]
        ]

    monkeypatch.setattr(outbound, "getaddrinfo", resolve)
    return table


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("answers", "said"),
    [
        (["169.254.169.254"], "metadata.test resolves to 169.254.169.254, which is link-local"),
        (["93.184.215.14", "10.1.2.3"], "metadata.test resolves to 10.1.2.3, which is private"),
        (
            ["::ffff:127.0.0.1"],
            "metadata.test resolves to ::ffff:7f00:1, which is 127.0.0.1, which is loopback",
        ),
        (["fd00::5"], "metadata.test resolves to fd00::5, which is private"),
    ],
)
def test_a_name_that_resolves_inward_is_refused_without_a_connection(
    dns: dict[str, list[str]], answers: list[str], said: str, watched: list[Any]
) -> None:
    dns["metadata.test"] = answers
    n = notification("webhook", "https://metadata.test/hook")
    assert delivery.send_due().failed == 1
    assert connects(watched) == []
    n.refresh_from_db()
    assert f"refused: {said}; {SETTING_HINT}" in n.last_error and n.gave_up is not None


@pytest.mark.django_db
def test_a_name_is_looked_up_once_and_the_request_goes_to_the_address_checked(
    settings, monkeypatch: pytest.MonkeyPatch, receivers: list[Receiver], watched: list[Any]
) -> None:
    """No DNS rebinding: the one lookup's checked answer is where the socket goes (a
    second lookup would get 10.9.9.9, refused, or a private address to connect to)."""
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.0/8"]
    receivers.append(r := Receiver())
    answers = iter([["127.0.0.1"], ["10.9.9.9"]])

    def rebinding(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in next(answers)]

    monkeypatch.setattr(outbound, "getaddrinfo", rebinding)
    n = notification("webhook", f"http://hooks.test:{r.port}/in bücher?x=1 2")
    assert delivery.send_due().sent == 1
    [(method, path, headers, _)] = r.got
    assert (method, headers["host"]) == ("POST", f"hooks.test:{r.port}")
    assert path == "/in%20b%C3%BCcher?x=1%202"  # as a request line can carry it
    assert connects(watched) == [("127.0.0.1", r.port)]
    assert next(answers) == ["10.9.9.9"]  # the second answer was never asked for
    n.refresh_from_db()
    assert n.sent is not None


@pytest.mark.django_db
def test_https_goes_to_the_address_checked_and_verifies_the_certificate_for_the_name(
    settings, monkeypatch: pytest.MonkeyPatch, tmp_path, watched: list[Any]
) -> None:
    """TLS's server name is the URL's host while the socket goes to the checked address;
    a certificate no CA signed fails the delivery before a byte of the request (or its
    signature) is sent."""
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command makes the test's certificate (Debian: openssl)"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=hooks.test", "-addext", "subjectAltName=DNS:hooks.test",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    asked: list[str | None] = []
    got: list[bytes] = []
    server.sni_callback = lambda sock, name, ctx: asked.append(name)  # type: ignore[assignment,misc,return-value]
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(1)
    port = listening.getsockname()[1]

    def serve() -> None:
        conn, _ = listening.accept()
        try:
            with server.wrap_socket(conn, server_side=True) as tls:
                got.append(tls.recv(1024))
        except (ssl.SSLError, OSError):
            pass  # the client refused the certificate

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.0/8"]
    monkeypatch.setattr(
        outbound, "getaddrinfo",
        lambda host, port, **kw: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
    )  # fmt: skip
    try:
        n = notification("webhook", f"https://hooks.test:{port}/hook")
        assert delivery.send_due().failed == 1
        thread.join(5)
    finally:
        listening.close()
    assert asked == ["hooks.test"]  # the name, for a socket on 127.0.0.1
    assert connects(watched) == [("127.0.0.1", port)]
    assert got == []  # no request, no signature
    n.refresh_from_db()
    assert "the receiver's TLS certificate was refused: self-signed certificate" in n.last_error
    assert n.gave_up is None  # a certificate can be renewed: tried again


@pytest.mark.django_db
def test_a_name_that_does_not_resolve_is_tried_again_later(dns: dict[str, list[str]]) -> None:
    n = notification("webhook", "https://gone.test/hook")
    assert delivery.send_due().failed == 1
    n.refresh_from_db()
    assert "gone.test does not resolve" in n.last_error
    assert n.gave_up is None and n.attempts == 1  # DNS may be back later


@pytest.mark.django_db
def test_the_allow_setting_lets_named_hosts_and_ranges_through(
    settings, receivers: list[Receiver], listener: Listener
) -> None:
    receivers.append(r := Receiver())
    settings.RSMQ_OUTBOUND_ALLOW = "10.0.0.0/8, 127.0.0.1"  # the environment's form
    assert notification("webhook", r.url()) and delivery.send_due().sent == 1
    settings.RSMQ_OUTBOUND_ALLOW = ["localhost"]  # by name: any address it resolves to
    notification("webhook", f"http://localhost:{r.port}/named")
    assert delivery.send_due().sent == 1
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.2/32"]  # another address: still refused
    n = notification("webhook", f"http://127.0.0.1:{listener.port}/")
    assert delivery.send_due().failed == 1 and listener.accepted() == 0
    n.refresh_from_db()
    assert "127.0.0.1 is loopback" in n.last_error
    assert [p for _, p, _, _ in r.got] == ["/hook", "/named"]


# -- redirects -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_the_signature_goes_nowhere_else(
    settings, receivers: list[Receiver], status: int
) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    receivers.append(elsewhere := Receiver())
    receivers.append(hook := Receiver(status, location=elsewhere.url("/steal")))
    n = notification("webhook", hook.url(), secret="the-secret")
    assert delivery.send_due().failed == 1
    assert elsewhere.got == []  # neither the POST nor a GET, nor the signature
    [(method, _, headers, body)] = hook.got
    expected = "sha256=" + hmac.new(b"the-secret", body, "sha256").hexdigest()
    assert method == "POST" and headers["x-rsmq-signature"] == expected
    n.refresh_from_db()
    assert f"the receiver answered {status}" in n.last_error
    assert "redirects are not followed" in n.last_error and elsewhere.url("/steal") in n.last_error
    assert n.gave_up is not None  # the same answer every time: given up at once


# -- permanent and transient failures ----------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "permanent"), [(400, True), (404, True), (410, True), (429, False), (500, False),
                              (503, False), (408, False)],
)  # fmt: skip
def test_a_4xx_ends_the_retries_at_once_a_5xx_or_429_is_tried_again(
    settings, receivers: list[Receiver], status: int, permanent: bool
) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    receivers.append(r := Receiver(status))
    n = notification("webhook", r.url())
    assert delivery.send_due().failed == 1
    n.refresh_from_db()
    assert f"the receiver answered {status}" in n.last_error
    assert (n.gave_up is not None) is permanent
    assert ("gave up" in n.last_error) is permanent


@pytest.mark.django_db
def test_transient_failures_end_after_a_bounded_number_of_attempts(
    settings, listener: Listener
) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    settings.RSMQ_ALERT_MAX_ATTEMPTS = 3
    listener.sock.close()  # nothing listens there now: connection refused, each time
    n = notification("webhook", f"http://127.0.0.1:{listener.port}/")
    for attempt in (1, 2, 3):
        Notification.objects.filter(pk=n.pk).update(next_attempt=timezone.now())
        assert delivery.send_due().failed == 1
        n.refresh_from_db()
        assert n.attempts == attempt
        assert (n.gave_up is not None) is (attempt == 3)
    assert "could not reach the receiver: Connection refused" in n.last_error
    assert "gave up after 3 attempts" in n.last_error
    Notification.objects.filter(pk=n.pk).update(next_attempt=timezone.now() - dt.timedelta(1))
    assert delivery.send_due().failed == 0  # never again
    assert delivery.send_due().retry_in is None  # and nothing left waiting


# -- Slack text, names on one line --------------------------------------------------------


@pytest.mark.django_db
def test_slack_text_is_escaped_so_a_rule_name_mentions_and_links_nobody(
    settings, receivers: list[Receiver]
) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    receivers.append(r := Receiver())
    notification("slack", r.url(), name="<!channel> <http://evil.example|click here> & <@U1>")
    assert delivery.send_due().sent == 1
    text = json.loads(r.got[0][3])["text"]
    assert "<" not in text and ">" not in text
    assert text.splitlines()[0] == (
        "*[RSMQ] &lt;!channel&gt; &lt;http://evil.example|click here&gt; &amp; &lt;@U1&gt;:"
        " 1 firing, 0 resolved*"
    )


@pytest.mark.django_db
def test_a_name_with_a_line_break_saved_before_still_makes_a_one_line_subject(settings) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    notification("email", "ops@example.com", name="backlog\nBcc: victim@example.com\r\nx\u2028y")
    assert delivery.send_due().sent == 1
    [email] = mail.outbox
    assert email.subject == "[RSMQ] backlog Bcc: victim@example.com x y: 1 firing, 0 resolved"
    assert email.to == ["ops@example.com"]


class Smtp:
    """A mail server on 127.0.0.1 that answers RCPT TO with ``code`` for addresses that
    start with "bad" (250 for the others) and keeps the mails it takes."""

    def __init__(self, code: int) -> None:
        self.code, self.mails = code, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rwb") as f:
                f.write(b"220 test ESMTP\r\n")
                f.flush()
                data = False
                for line in f:
                    verb = line.strip().upper()
                    if data:
                        if verb == b".":
                            data, self.mails = False, self.mails + 1
                            f.write(b"250 taken\r\n")
                    elif verb.startswith((b"EHLO", b"HELO")):
                        f.write(b"250 test\r\n")
                    elif verb.startswith(b"RCPT TO:<BAD"):
                        f.write(f"{self.code} no such mailbox\r\n".encode())
                    elif verb.startswith(b"DATA"):
                        data = True
                        f.write(b"354 go on\r\n")
                    elif verb.startswith(b"QUIT"):
                        f.write(b"221 bye\r\n")
                        f.flush()
                        break
                    else:
                        f.write(b"250 ok\r\n")
                    f.flush()


@pytest.mark.django_db
@pytest.mark.parametrize(("code", "permanent"), [(550, True), (451, False)])
def test_an_address_the_mail_server_refuses_for_good_ends_the_retries(
    settings, code: int, permanent: bool
) -> None:
    smtp = Smtp(code)
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    try:
        n = notification("email", "bad@example.com")
        assert delivery.send_due().failed == 1
        notification("email", "ops@example.com, bad@example.com")  # one taken: sent
        assert delivery.send_due().sent == 1
    finally:
        smtp.sock.close()
    n.refresh_from_db()
    assert f"the mail server refused every recipient (bad@example.com: {code}" in n.last_error
    assert (n.gave_up is not None) is permanent
    assert smtp.mails == 1


# -- saving a rule -----------------------------------------------------------------------


@pytest.fixture
def form(console) -> dict[str, str]:
    return {
        "name": "stalled orders", "place": f"default/{console.ns}", "queue": "q1",
        "pattern": "", "metric": "visible", "op": "gt", "threshold": "3",
        "for_seconds": "0", "enabled": "on", "webhook_url": "", "slack_url": "", "emails": "",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("field", "url", "said"),
    [
        ("webhook_url", "http://169.254.169.254/latest/", "169.254.169.254 is link-local"),
        (
            "slack_url",
            "http://[::ffff:169.254.169.254]/",
            "::ffff:169.254.169.254 is 169.254.169.254, which is link-local",
        ),  # noqa: E501
        ("webhook_url", "http://localhost:6379/", "localhost is loopback"),
        ("slack_url", "http://0.0.0.0:8000/", "0.0.0.0 is unspecified"),
        ("webhook_url", "http://[::1]/", "::1 is loopback"),
        ("webhook_url", "http://10.0.0.7/hook", "10.0.0.7 is private"),
    ],
)
def test_an_inward_url_is_a_form_error_naming_the_field(
    admin, form: dict[str, str], field: str, url: str, said: str, watched: list[Any]
) -> None:
    response = admin.post("/alerts/new/", {**form, field: url})
    assert response.status_code == 422
    page = response.content.decode()
    assert f"{field}: refused: {said}; {SETTING_HINT}" in html_text(page)
    assert not AlertRule.objects.exists()
    entry = AuditEntry.objects.get()
    assert entry.outcome == "invalid" and f"{field}: " in entry.detail
    assert connects(watched) == [] and lookups(watched) == []


def test_a_scheme_other_than_http_is_a_form_error(admin, form: dict[str, str]) -> None:
    response = admin.post("/alerts/new/", {**form, "webhook_url": "ftp://hooks.example/x"})
    assert response.status_code == 422
    assert "webhook_url: refused: ftp:// is not http or https" in html_text(
        response.content.decode()
    )


def test_an_allowed_inward_url_is_saved(settings, admin, form: dict[str, str]) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["10.0.0.0/8"]
    response = admin.post("/alerts/new/", {**form, "webhook_url": "http://10.0.0.7/hook"})
    assert response.status_code == 302
    assert AlertRule.objects.get().webhook_url == "http://10.0.0.7/hook"


@pytest.mark.parametrize("name", ["two\nlines", "cr\rhere", "nel\x85here", "sep\u2028arator"])
def test_a_rule_name_must_be_one_line(settings, admin, form: dict[str, str], name: str) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    response = admin.post(
        "/alerts/new/", {**form, "name": name, "webhook_url": "http://127.0.0.1:9/"}
    )
    assert response.status_code == 422
    assert "name must be one line: 1 to 100 characters, no line breaks" in html_text(
        response.content.decode()
    )
    assert not AlertRule.objects.exists()


# -- who sees delivery errors -----------------------------------------------------------


@pytest.mark.django_db
def test_delivery_errors_are_shown_to_admins_only(
    settings, console, admin, operator, viewer, listener: Listener
) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    port = listener.port
    listener.sock.close()
    notification("webhook", f"http://127.0.0.1:{port}/down")  # transient: waiting
    notification("slack", "http://169.254.169.254/", name="metadata")  # permanent: given up
    assert delivery.send_due().failed == 2
    for client, shown in ((admin, True), (operator, False), (viewer, False)):
        page = html_text(client.get("/alerts/").content.decode())
        assert "Notifications waiting: 1" in page and "Notifications given up: 1" in page
        assert ("Connection refused" in page) is shown
        assert ("169.254.169.254 is link-local" in page) is shown
        assert ("Delivery errors are shown to admins." in page) is not shown


def html_text(page: str) -> str:
    import html

    return html.unescape(page)
