"""The SSRF guard: schemes, address forms, resolvers, and where connections are made."""

import httpcore
import httpx
import pytest

from common.errors import BlockedURL, FetchError
from common.settings import FetchSettings
from core.retrieval.fetch import Fetcher
from core.retrieval.netguard import (
    GuardedBackend,
    blocked_reason,
    check_url,
    guarded_transport,
    parse_literal_host,
    static_resolver,
)
from tests.fakes.web_server import FakeWeb

FIX = "--allow-private-urls"
public = static_resolver({"example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]})


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://127.0.0.1:8080/admin", "loopback"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://100.64.0.1/", "not a public address"),  # carrier-grade NAT
        ("http://[::1]/", "loopback"),
        ("http://[::]/", "unspecified"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fe80::1%25eth0]/", "link-local"),
        ("http://[fc00::1]/", "private"),
        ("http://[::ffff:127.0.0.1]/", "IPv4-mapped address embedding 127.0.0.1"),
        ("http://[::ffff:a9fe:a9fe]/", "IPv4-mapped address embedding 169.254.169.254"),
        ("http://[::10.0.0.1]/", "IPv4-compatible address embedding 10.0.0.1"),
        ("http://[2002:c0a8:101::1]/", "6to4 address embedding 192.168.1.1"),
        ("http://[64:ff9b::a00:1]/", "NAT64 address embedding 10.0.0.1"),
        ("http://2130706433/", "127.0.0.1, a loopback"),  # one decimal number
        ("http://0x7f000001/", "127.0.0.1, a loopback"),  # hex
        ("http://127.1/", "127.0.0.1, a loopback"),  # short form
        ("http://017700000001/", "127.0.0.1, a loopback"),  # octal
        ("http://127.0.0.1./", "loopback"),  # trailing dot
        ("http://example.com@127.0.0.1/", "loopback"),  # credentials are not the host
        ("http://user:pw@10.0.0.1:80/", "private"),
    ],
)
async def test_private_addresses_are_blocked(url, why):
    with pytest.raises(BlockedURL) as err:
        await check_url(url, allow_private=False, resolver=public)
    message = str(err.value)
    assert why in message
    assert url in message and FIX in message


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/file", "file:///etc/passwd", "gopher://example.com/", "javascript:alert(1)",
     "data:text/html,<p>hi</p>", "example.com/no-scheme", "http:///no-host", "http://0177.0.0.1/"],
)
@pytest.mark.parametrize("allow_private", [False, True])
async def test_only_http_urls_with_a_host_pass(url, allow_private):
    with pytest.raises(BlockedURL, match="http"):
        await check_url(url, allow_private=allow_private, resolver=public)


async def test_a_public_host_passes():
    await check_url("https://example.com/page?q=1", allow_private=False, resolver=public)
    await check_url("http://93.184.216.34/", allow_private=False)  # a literal needs no resolver
    await check_url("http://[2606:4700::1111]/", allow_private=False)


async def test_a_name_resolving_to_a_private_address_is_blocked():
    resolver = static_resolver({"innocent.example": ["192.168.1.5"]})
    with pytest.raises(BlockedURL, match=r"innocent\.example resolves to 192\.168\.1\.5, which is a private"):
        await check_url("http://innocent.example/", allow_private=False, resolver=resolver)


async def test_an_international_name_is_resolved_as_httpx_encodes_it():
    resolver = static_resolver({"xn--fa-hia.de": ["10.9.8.7"]})  # IDNA 2008, not "fass.de"
    with pytest.raises(BlockedURL, match="10.9.8.7"):
        await check_url("http://faß.de/", allow_private=False, resolver=resolver)


async def test_one_private_address_among_public_ones_is_enough_to_block():
    resolver = static_resolver({"mixed.example": ["93.184.216.34", "::ffff:10.1.2.3"]})
    with pytest.raises(BlockedURL, match="embedding 10.1.2.3"):
        await check_url("http://mixed.example/", allow_private=False, resolver=resolver)


async def test_the_system_resolver_is_used_by_default():
    with pytest.raises(BlockedURL, match="localhost resolves to .*loopback"):
        await check_url("http://localhost:8000/", allow_private=False)


async def test_an_unresolvable_host_is_a_fetch_error_not_a_block():
    with pytest.raises(FetchError, match="Could not resolve the host nowhere.example") as err:
        await check_url("http://nowhere.example/", allow_private=False, resolver=static_resolver({}))
    assert not isinstance(err.value, BlockedURL)


async def test_allow_private_skips_the_address_check():
    for url in ("http://127.0.0.1:9/", "http://[::1]/", "http://10.0.0.1/", "http://2130706433/"):
        await check_url(url, allow_private=True, resolver=static_resolver({}))


@pytest.mark.parametrize(
    "host, expected",
    [("127.0.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"),
     ("0177.0.0.1", "127.0.0.1"), ("10.1", "10.0.0.1"), ("[::1]", "::1"), ("example.com", None),
     ("deadbeef", None), ("1.2.3.4.5", None)],
)
def test_literal_hosts(host, expected):
    parsed = parse_literal_host(host)
    assert (str(parsed) if parsed else None) == expected


def test_teredo_embedded_addresses_are_checked():
    import ipaddress

    # Teredo server 65.54.227.120, client (obfuscated) 192.168.1.1
    client = int(ipaddress.IPv4Address("192.168.1.1")) ^ 0xFFFFFFFF
    address = ipaddress.IPv6Address((0x20010000 << 96) | (int(ipaddress.IPv4Address("65.54.227.120")) << 64) | client)
    assert "Teredo address embedding 192.168.1.1" in blocked_reason(address)


# -- where connections are made: no DNS rebinding --------------------------------------------
PUBLIC = "93.184.216.34"


class Loopback(httpcore.AsyncNetworkBackend):
    """The real network, except that PUBLIC is reached at 127.0.0.1 (where FakeWeb listens); it
    records the addresses it was asked to connect to."""

    def __init__(self):
        self.real = httpcore.AnyIOBackend()
        self.asked: list[str] = []

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        self.asked.append(host)
        if host != PUBLIC:
            raise httpcore.ConnectError(f"no route to {host}")
        return await self.real.connect_tcp("127.0.0.1", port, timeout=timeout)

    async def sleep(self, seconds):
        await self.real.sleep(seconds)


def rebinding(first: str, then: str):
    """A DNS answer that changes after the first question."""
    answers = [first]

    async def resolve(host):
        answer = answers[0]
        answers[0] = then
        return [answer]

    return resolve


async def test_a_name_that_rebinds_to_loopback_after_the_check_is_blocked():
    with FakeWeb() as web:
        port = web.base.rsplit(":", 1)[1]
        fetcher = Fetcher(FetchSettings(allow_private_urls=False), resolver=rebinding(PUBLIC, "127.0.0.1"))
        try:
            with pytest.raises(BlockedURL, match=r"rebind\.test resolves to 127\.0\.0\.1"):
                await fetcher.fetch(f"http://rebind.test:{port}/pages/blog.python.org.html")
        finally:
            await fetcher.aclose()
        assert web.requests == [], "nothing reached the loopback server"


async def test_connections_go_to_the_checked_address_and_pages_are_read():
    with FakeWeb() as web:
        port = web.base.rsplit(":", 1)[1]
        network = Loopback()
        resolver = static_resolver({"web.test": [PUBLIC]})
        client = httpx.AsyncClient(transport=guarded_transport(resolver, inner=network))
        fetcher = Fetcher(FetchSettings(allow_private_urls=False), resolver=resolver, client=client)
        try:
            page = await fetcher.fetch(f"http://web.test:{port}/pages/blog.python.org.html")
        finally:
            await client.aclose()
        assert page.title == "Python 3.6.0 is now available!"
        assert network.asked == [PUBLIC], "connected to the address the guard checked, not the name"


async def test_the_backend_tries_the_next_checked_address():
    with FakeWeb() as web:
        network = Loopback()
        backend = GuardedBackend(static_resolver({"two.test": ["8.8.8.8", PUBLIC]}), network)
        stream = await backend.connect_tcp("two.test", int(web.base.rsplit(":", 1)[1]))
        await stream.aclose()
        assert network.asked == ["8.8.8.8", PUBLIC]


async def test_the_backend_refuses_a_mixed_answer_and_unix_sockets():
    network = Loopback()
    backend = GuardedBackend(static_resolver({"mixed.test": [PUBLIC, "10.0.0.1"]}), network)
    with pytest.raises(BlockedURL, match="10.0.0.1"):
        await backend.connect_tcp("mixed.test", 80)
    assert network.asked == []
    with pytest.raises(BlockedURL):
        await backend.connect_unix_socket("/var/run/docker.sock")


@pytest.mark.parametrize("allow_private", [False, True])
async def test_the_fetchers_own_connections_are_guarded_unless_private_urls_are_allowed(allow_private):
    # "localhost" passes the check before the request (the resolver's first answer is public)
    # and is 127.0.0.1 when the connection is made: only the guard at connect time can stop it
    with FakeWeb() as web:
        port = web.base.rsplit(":", 1)[1]
        resolver = rebinding(PUBLIC, "127.0.0.1")
        async with Fetcher(FetchSettings(allow_private_urls=allow_private), resolver=resolver) as fetcher:
            page = await fetcher.read(f"http://localhost:{port}/pages/blog.python.org.html")
        if allow_private:  # no guard: the system's resolver sends it to the local server
            assert page.ok and page.title == "Python 3.6.0 is now available!"
            assert web.requests == ["/pages/blog.python.org.html"]
        else:
            assert page.status == "error" and "localhost resolves to 127.0.0.1" in page.error
            assert web.requests == [], "nothing reached the loopback server"


@pytest.fixture
def tls_site(tmp_path):
    """An HTTPS server on 127.0.0.1 whose self-signed certificate is for the name tls.test."""
    import shutil
    import ssl
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=tls.test",
                    "-addext", "subjectAltName=DNS:tls.test", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            body = (b"<html><head><title>Over TLS</title></head><body><p>" + b"Encrypted words. " * 20
                    + b"</p></body></html>")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    trust = ssl.create_default_context(cafile=str(cert))
    yield server.server_address[1], trust
    server.shutdown()
    server.server_close()


async def test_tls_is_verified_against_the_host_name_while_connecting_to_the_checked_address(tls_site):
    port, trust = tls_site
    resolver = static_resolver({"tls.test": [PUBLIC], "other.test": [PUBLIC]})
    network = Loopback()
    client = httpx.AsyncClient(transport=guarded_transport(resolver, inner=network, verify=trust))
    fetcher = Fetcher(FetchSettings(allow_private_urls=False), resolver=resolver, client=client)
    try:
        page = await fetcher.fetch(f"https://tls.test:{port}/")
        assert page.title == "Over TLS" and network.asked == [PUBLIC]
        with pytest.raises(FetchError, match="(?i)certificate|hostname"):  # the certificate is not for other.test
            await fetcher.fetch(f"https://other.test:{port}/")
    finally:
        await client.aclose()
