"""Pins for hosttune.detect.netroute (issue 21, practice round HDOC): the live route's source address, and None
(not "") when the kernel refuses the route."""

from hosttune.detect.netroute import LiveRoutes


def test_source_address_or_none() -> None:
    routes = LiveRoutes()
    assert routes.source("127.0.0.1") == "127.0.0.1"
    assert routes.source("127.9.9.9") == "127.0.0.1"
    # a UDP connect to the broadcast address without SO_BROADCAST fails (EACCES): no route to judge
    assert routes.source("255.255.255.255") is None
