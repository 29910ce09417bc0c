"""Every URL the console fetches on an admin's word (a rule's webhook or Slack URL) goes
through here: http(s) only, the host resolved once, each of its addresses checked, and
the request sent to the address that was checked (no second lookup for a DNS rebinding
to change), with no redirect followed. Loopback, private, link-local, multicast,
reserved and unspecified addresses are refused (IPv4, IPv6, and the IPv4 addresses that
IPv6 ones carry: ``::ffff:169.254.169.254``, ``::169.254.169.254``, 6to4, Teredo, NAT64),
whatever the address is spelled as (``2130706433``, ``0x7f.1``, ``0177.0.0.1``), unless
``RSMQ_OUTBOUND_ALLOW`` names the host or a range (CIDR) holding the address.

The check runs when a rule is saved (a form error naming the field) and again before
each delivery (a DNS answer may have changed since)."""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from django.conf import settings

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

SETTING = "RSMQ_OUTBOUND_ALLOW"
SCHEMES = {"http": 80, "https": 443}
SAFE = "/%:@!$&'()*+,;=-._~"  # RFC 3986's characters of a path, kept as they are
LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
COMPATIBLE = ipaddress.IPv6Network("::/96")
# The legacy IPv4 spellings inet_aton takes: 2130706433, 0x7f.1, 0177.0.0.1, 127.1.
LEGACY_V4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}\.?", re.I)

#: the resolver (``socket.getaddrinfo``'s signature): a test puts a table of its own here
#: rather than asking a DNS server
getaddrinfo: Callable[..., list[Any]] = socket.getaddrinfo


class Refused(Exception):
    """A URL the console will not fetch; the text says which rule refused it. Permanent:
    trying again would be refused again."""


class Unresolved(OSError):
    """The host's name did not resolve (now: DNS may be down, a later try may work)."""


class Answered(Exception):
    """The receiver answered, but not with a 2xx. ``permanent``: a 3xx or a 4xx other
    than 408, 425 and 429 (trying again would get the same answer)."""

    def __init__(self, status: int, reason: str, location: str = "") -> None:
        self.status = status
        if 300 <= status < 400:
            where = f" to {location[:200]}" if location else ""
            text = f"the receiver answered {status} {reason} (a redirect{where}): redirects are not followed; give the final URL"  # noqa: E501
        else:
            text = f"the receiver answered {status} {reason}".rstrip()
        super().__init__(text)
        self.permanent = 300 <= status < 500 and status not in (408, 425, 429)


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as the URL gives it (the Host header, TLS's server name)
    port: int
    path: str  # with the query
    address: str  # the checked address the request goes to


def allowed() -> tuple[set[str], list[Network]]:
    """The allow setting: host names (lower case), and ranges (an address is a /32 or
    /128). A list, or one comma-separated string."""
    value = getattr(settings, SETTING, ())
    items = value.split(",") if isinstance(value, str) else list(value)
    names: set[str] = set()
    networks: list[Network] = []
    for item in (str(i).strip().lower() for i in items):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
        except ValueError:
            names.add(item.rstrip("."))
    return names, networks


def literal(host: str) -> IP | None:
    """The address ``host`` spells, in any form a resolver would take; None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    if LEGACY_V4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host.rstrip(".")))
        except OSError:
            return None
    return None


def carried(ip: IP) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, 6to4, Teredo, NAT64)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in NAT64 or (ip in COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def kind(ip: IP) -> str | None:
    """Why the console refuses to connect to ``ip`` ("link-local", …); None: it is a
    public address."""
    for name, test in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("not a public address", not ip.is_global),
    ):
        if test:
            return name
    return None


def refusal(ip: IP, networks: list[Network]) -> tuple[list[str], str] | None:
    """Why the console refuses ``ip``: the addresses it is (itself, and the IPv4 address
    it carries) and the kind of the last ("link-local"); None when it may be connected
    to (public, or in an allowed range)."""
    inner = carried(ip)
    if any(c is not None and any(c in n for n in networks) for c in (ip, inner)):
        return None
    if inner is not None and isinstance(ip, ipaddress.IPv6Address):
        inner_kind = kind(inner)
        if inner_kind:
            return [str(ip), str(inner)], inner_kind
        if ip.ipv4_mapped is not None or ip in NAT64 or ip in COMPATIBLE:
            return None  # only a way to write a public IPv4 address
    what = kind(ip)
    return ([str(ip)], what) if what else None


def _refused(spelled: str, verb: str, why: tuple[list[str], str]) -> Refused:
    """The refusal in words: "refused: 2130706433 is 127.0.0.1, which is loopback; allow
    it with RSMQ_OUTBOUND_ALLOW"."""
    chain, what = why
    if chain and _same(spelled, chain[0]):
        chain = chain[1:]
    said = ", which is ".join([*chain, what]) if chain else what
    return Refused(f"refused: {spelled} {verb if chain else 'is'} {said}; allow it with {SETTING}")


def _same(spelled: str, address: str) -> bool:
    try:
        return ipaddress.ip_address(spelled.strip("[]")) == ipaddress.ip_address(address)
    except ValueError:
        return False


def split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an http(s) URL; else Refused."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as e:
        raise Refused(f"refused: not a URL the console can fetch ({e})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        shown = f"{scheme}://" if scheme else "a URL without a scheme"
        raise Refused(f"refused: {shown} is not http or https")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("refused: the URL names no host")
    try:  # the name as DNS and the Host header take it (bücher.example: xn--bcher-kva…)
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise Refused(f"refused: {host!r} is not a host name") from None
    # Whatever the admin typed, as a request line can carry it (no spaces, no controls).
    path = quote(parts.path or "/", safe=SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=SAFE + "?")
    return scheme, host, port or SCHEMES[scheme], path


def check(url: str, resolve: bool = True) -> Target | None:
    """The URL's target, its address checked; Refused (or Unresolved) else. Without
    ``resolve`` (a rule being saved) a name is not looked up when the setting allows it
    by name; a name is looked up otherwise (None then only when it was not needed)."""
    scheme, host, port, path = split(url)
    names, networks = allowed()
    by_name = host.lower() in names
    ip = literal(host)
    if ip is not None:
        if by_name:
            return Target(scheme, host, port, path, str(ip))
        why = refusal(ip, networks)
        if why:
            raise _refused(host, "is", why)
        return Target(scheme, host, port, path, str(ip))
    lowered = host.lower()
    if not by_name and (lowered in LOCAL_NAMES or lowered.endswith(".localhost")):
        raise _refused(host, "is", ([], "loopback"))
    if by_name and not resolve:
        return None
    try:
        answers = getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise Unresolved(f"{host} does not resolve ({e})") from None
    addresses = list(dict.fromkeys(str(a[4][0]).split("%")[0] for a in answers))
    if not addresses:
        raise Unresolved(f"{host} does not resolve")
    if not by_name:
        for address in addresses:
            why = refusal(ipaddress.ip_address(address), networks)
            if why:
                raise _refused(host, "resolves to", why)
    return Target(scheme, host, port, path, addresses[0])


class Pinned(http.client.HTTPConnection):
    """HTTP or HTTPS to the address checked: the host's name stays in the Host header and
    TLS's server name (the certificate is checked against it), the socket goes to
    ``target.address`` (http.client's public ``connect``, overridden)."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.default_port = SCHEMES[target.scheme]  # the Host header names no default port
        self.target = target
        self.tls = ssl.create_default_context() if target.scheme == "https" else None

    def connect(self) -> None:
        sock = socket.create_connection((self.target.address, self.target.port), self.timeout)
        self.sock = (
            self.tls.wrap_socket(sock, server_hostname=self.target.host) if self.tls else sock
        )


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST ``body`` to ``url``, checked now, at the address checked, following no
    redirect; the answer's status (a 2xx), else Answered, Refused or an OSError."""
    target = check(url)
    assert target is not None
    conn = Pinned(target, timeout)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        response = conn.getresponse()  # its body is not read: nothing in it is needed
        if not 200 <= response.status < 300:
            raise Answered(response.status, response.reason, response.getheader("Location") or "")
        return response.status
    finally:
        conn.close()
