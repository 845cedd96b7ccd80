"""MetalLB address pools and endpoint URLs, read the way MetalLB and the gateway read them."""

import pytest

from inferplane.routing.addresses import Target, first_pool_address, pool_range, url_target


@pytest.mark.parametrize("pool, first", [
    ("172.18.255.200-172.18.255.250", "172.18.255.200"),
    (" 10.0.0.5 - 10.0.0.9 ", "10.0.0.5"),
    ("172.18.255.0/24", "172.18.255.0"),
    ("fd00::10-fd00::20", "fd00::10"),
])
def test_a_pool_gives_its_lowest_address_first(pool, first):
    assert first_pool_address(pool) == first


@pytest.mark.parametrize("pool, message", [
    ("172.18.255.250-172.18.255.200", "'172.18.255.250-172.18.255.200' ends before it starts: put the lower "
                                      "address first"),
    ("banana", "'banana' is not an address range or CIDR: write a range such as 172.18.255.200-172.18.255.250 "
               "or a CIDR such as 172.18.255.0/24"),
    ("10.0.0.1-fd00::1", "'10.0.0.1-fd00::1' mixes IPv4 and IPv6: both ends of a range are of one family"),
    ("10.0.0.300/24", "'10.0.0.300/24' is not an address range or CIDR: write a range such as "
                      "172.18.255.200-172.18.255.250 or a CIDR such as 172.18.255.0/24"),
])
def test_a_pool_that_does_not_parse_says_how_to_write_it(pool, message):
    with pytest.raises(ValueError) as error:
        pool_range(pool)
    assert str(error.value) == message


@pytest.mark.parametrize("url, target, address_type", [
    ("http://10.0.1.50/ml-team/qwen-72b/", Target("http", "10.0.1.50", 80), "IPv4"),
    ("https://api.together.xyz/", Target("https", "api.together.xyz", 443), "FQDN"),
    ("http://[fd00::1]:8080/v1", Target("http", "fd00::1", 8080), "IPv6"),
])
def test_url_targets(url, target, address_type):
    assert (url_target(url), url_target(url).address_type) == (target, address_type)


@pytest.mark.parametrize("url, says", [
    ("ftp://files.example.com/", "is not an http:// or https:// URL"),
    ("api.together.xyz", "is not an http:// or https:// URL"),
    ("http://host:99999/", "has a port that is not a number from 1 to 65535"),
    ("http://host:0/", "has port 0"),
    ("http:///v1", "names no host"),
])
def test_urls_that_cannot_be_routed_to(url, says):
    with pytest.raises(ValueError, match=says):
        url_target(url)
