"""The SSRF guard on its own: schemes, address forms, resolvers."""

import pytest

from core.errors import BlockedURL, FetchError
from core.netguard import blocked_reason, check_url, parse_literal_host, static_resolver

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
