"""The SSRF guard: refuse to fetch URLs that point into the machine or its private network.

A page URL comes from a search engine or from a page's redirect, so it is untrusted input. Before
every request (the first and each redirect hop) :func:`check_url` makes sure that

- the scheme is http or https;
- the host is parsed the way httpx will connect to it (``http://example.com@127.0.0.1/`` is
  127.0.0.1, not example.com);
- every address the host resolves to is public. Refused: loopback, private, link-local,
  multicast, reserved, unspecified and other non-global ranges, and IPv6 addresses that embed
  such an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, 6to4,
  Teredo, NAT64 ``64:ff9b::/96``).

Hosts written as numbers in the forms the C library accepts (``2130706433``, ``0x7f000001``,
``127.1``, ``0177.0.0.1``) are read as the IPv4 address they denote, without asking DNS.

The check before a request gives a clear message early; :class:`GuardedBackend` enforces it
where the connection is made: the fetcher's connections resolve the host once, check every
address, and connect to a checked address, so a DNS server that answers differently the second
time (DNS rebinding) gains nothing. TLS still verifies the certificate against the host name.

With ``allow_private=True`` (``--allow-private-urls``, for local corpora and tests) only the
scheme and the presence of a host are checked.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping

import httpcore
import httpx

from common.errors import BlockedURL, FetchError

#: ``async resolver(host) -> addresses``: the IP addresses (as strings) a host name resolves to.
Resolver = Callable[[str], Awaitable[Iterable[str]]]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = ("http", "https")
_FIX = "Use a public URL, or start with --allow-private-urls for local corpora."
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NUMERIC_HOST = re.compile(r"^[0-9a-fA-FxX.]+$")


async def system_resolver(host: str) -> list[str]:
    """Resolve ``host`` with the system's getaddrinfo, off the event loop.

    Raises FetchError when the name does not resolve."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchError(f"Could not resolve the host {host}: {exc}. Check the URL.") from exc
    return [info[4][0] for info in infos]


def static_resolver(table: Mapping[str, Iterable[str]]) -> Resolver:
    """A resolver that answers from a table (for tests); unknown names do not resolve."""

    async def resolve(host: str) -> list[str]:
        if host not in table:
            raise FetchError(f"Could not resolve the host {host}: not in the table. Check the URL.")
        return list(table[host])

    return resolve


async def check_url(url: str | httpx.URL, *, allow_private: bool, resolver: Resolver | None = None) -> None:
    """Refuse ``url`` unless it is http(s) and, unless ``allow_private``, every address its host
    resolves to is public.

    Raises BlockedURL (with the address, the reason and the fix), or FetchError when the host
    does not resolve."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise BlockedURL(f"Blocked {url}: not a valid URL ({exc}). Use an http or https URL.") from exc
    if parsed.scheme not in ALLOWED_SCHEMES:
        scheme = parsed.scheme or "no scheme"
        raise BlockedURL(f"Blocked {url}: only http and https URLs are read, not {scheme}. Use an http or https URL.")
    host = parsed.raw_host.decode("ascii")  # what httpx connects to (IDNA-encoded, no brackets)
    if not host:
        raise BlockedURL(f"Blocked {url}: the URL has no host. Use a full http or https URL.")
    if allow_private:
        return
    await allowed_addresses(host, resolver=resolver, url=str(url))


async def allowed_addresses(host: str, *, resolver: Resolver | None = None, url: str | None = None) -> list[IPAddress]:
    """The addresses ``host`` denotes or resolves to, when every one of them is public.

    Raises BlockedURL (naming ``url``, or the host, with the address, the reason and the fix),
    or FetchError when the host does not resolve."""
    url = url or host
    literal = parse_literal_host(host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        answers = await (resolver or system_resolver)(host)
        addresses = []
        for answer in answers:
            address = _parse_ip(answer)
            if address is None:  # a resolver should only give addresses; refuse what we cannot read
                raise BlockedURL(f"Blocked {url}: {host} resolved to {answer!r}, which is not an IP address.")
            addresses.append(address)
        if not addresses:
            raise FetchError(f"Could not resolve the host {host}: no addresses. Check the URL.")

    for address in addresses:
        reason = blocked_reason(address)
        if reason:
            if literal is None:
                where = f"{host} resolves to {address}, which is"
            else:
                numeric_v4 = isinstance(address, ipaddress.IPv4Address) and host.rstrip(".") != str(address)
                where = f"{host} is {address}," if numeric_v4 else f"{host} is"
            raise BlockedURL(f"Blocked {url}: {where} {reason}. {_FIX}")
    return addresses


def parse_literal_host(host: str) -> IPAddress | None:
    """The IP address a host denotes by itself (no DNS), or None for a name.

    Accepts IPv6 with or without brackets and zone, dotted IPv4, and the numeric IPv4 forms that
    inet_aton (and so getaddrinfo) accepts: ``2130706433``, ``0x7f000001``, ``127.1``,
    ``0177.0.0.1``."""
    host = host.strip("[]").rstrip(".")
    address = _parse_ip(host)
    if address is not None:
        return address
    if _NUMERIC_HOST.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` must not be fetched ("a loopback address", ...), or None if it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        for kind, v4 in embedded:
            reason = blocked_reason(v4)
            if reason:
                return f"{kind} address embedding {v4}, {reason}"
    for attribute, reason in (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
    ):
        if getattr(address, attribute):
            return reason
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a site-local address"
    if not address.is_global:  # shared address space 100.64/10, documentation ranges, ...
        return "not a public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("an IPv4-mapped", address.ipv4_mapped))
    if int(address) >> 32 == 0 and int(address) > 1:  # ::a.b.c.d (not :: or ::1, checked below)
        found.append(("an IPv4-compatible", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)))
    if address.sixtofour is not None:
        found.append(("a 6to4", address.sixtofour))
    if address.teredo is not None:
        server, client = address.teredo
        found += [("a Teredo", server), ("a Teredo", client)]
    if address in _NAT64:
        found.append(("a NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)))
    return found


def _parse_ip(text: str) -> IPAddress | None:
    text = text.strip("[]")
    if "%" in text:  # an IPv6 zone ("fe80::1%eth0", "%25" in URLs) says nothing about the range
        text = text.split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the guard allows.

    httpcore asks it to connect to the URL's host name; it resolves the name once with
    ``resolver``, refuses the connection (BlockedURL) unless every address is public, and
    connects to the checked address itself. httpcore starts TLS on the stream afterwards with the
    host name as ``server_hostname``, so certificates are verified as usual."""

    def __init__(self, resolver: Resolver | None = None, inner: httpcore.AsyncNetworkBackend | None = None):
        self._resolver = resolver
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options=None) -> httpcore.AsyncNetworkStream:
        addresses = await allowed_addresses(host, resolver=self._resolver)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout=timeout,
                                                     local_address=local_address, socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:  # try the next address
                failure = exc
        raise failure or FetchError(f"Could not connect to {host}: no address to try.")

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options=None) -> httpcore.AsyncNetworkStream:
        raise BlockedURL(f"Blocked a connection to the unix socket {path}. {_FIX}")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(resolver: Resolver | None = None, *, inner: httpcore.AsyncNetworkBackend | None = None,
                      **options) -> httpx.AsyncHTTPTransport:
    """httpx's transport (``options`` as for ``httpx.AsyncHTTPTransport``) whose connections go
    through :class:`GuardedBackend` (over ``inner``, the real network unless a test says
    otherwise). httpx has no option for httpcore's network backend, so it is set on the
    transport's connection pool (tests/core/test_netguard.py checks that it is used)."""
    transport = httpx.AsyncHTTPTransport(**options)
    transport._pool._network_backend = GuardedBackend(resolver, inner)
    return transport
