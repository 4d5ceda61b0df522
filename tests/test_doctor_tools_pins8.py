"""Pins for hosttune.doctor.checks.tools (issue 21, practice round HDOC8): tcmalloc_minimal alone is an allocator;
the allocator finding whole for each library."""

import pytest
from _doctorhelp import R, cpu_host

from hosttune.doctor.checks import tools
from hosttune.doctor.context import Context
from hosttune.doctor.model import Finding
from hosttune.facts import Allocators


@pytest.mark.parametrize("allocators,actual", [
    (Allocators(tcmalloc_minimal="/usr/lib/libtcmalloc_minimal.so.4"), "/usr/lib/libtcmalloc_minimal.so.4"),
    (Allocators(tcmalloc="/usr/lib/libtcmalloc.so.4"), "/usr/lib/libtcmalloc.so.4"),
    (Allocators(jemalloc="/usr/lib/libjemalloc.so.2", tcmalloc_minimal="/usr/lib/libtcmalloc_minimal.so.4"),
     "/usr/lib/libjemalloc.so.2, /usr/lib/libtcmalloc_minimal.so.4"),
])
def test_allocator_found(allocators: Allocators, actual: str) -> None:
    f = tools.check_allocator(Context(facts=R(cpu_host(), allocators=allocators), env={}))
    assert f == Finding(status="pass", actual=actual, expected="jemalloc or tcmalloc")


def test_no_allocator_whole() -> None:
    f = tools.check_allocator(Context(facts=R(cpu_host(), allocators=Allocators()), env={}))
    assert f == Finding(status="warn", actual="neither jemalloc nor tcmalloc found", expected="jemalloc or tcmalloc",
                        fix="apt-get install -y libjemalloc2")
