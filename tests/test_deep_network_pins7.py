"""Pins for hosttune.doctor.deep.network (issue 21, practice round HDOC)."""

import pytest

from hosttune.doctor.deep import network as N


@pytest.mark.parametrize("mbps,text", [
    (None, "speed not reported"), (0, "0 Mb/s"), (100, "100 Mb/s"), (999, "999 Mb/s"), (1000, "1 Gb/s"),
    (2500, "2.5 Gb/s"), (100000, "100 Gb/s"), (400000, "400 Gb/s"),
])
def test_speed_words(mbps: object, text: str) -> None:
    assert N._speed(mbps) == text  # type: ignore[arg-type]
