"""Two "nodes" on this machine for tests: two network namespaces joined by a veth pair, each end made inside its own
namespace (nothing is added to, or changed in, the host's own namespace, interfaces or routes), with addresses from a
private /30 the test picks. `two_nodes()` skips (pytest.skip) where namespaces cannot be made (not root, no `ip`)."""

import os
import random
import shutil
import subprocess
import uuid
from contextlib import contextmanager
from typing import Iterator, List, NamedTuple, Tuple

import pytest


class Nodes(NamedTuple):
    ns: Tuple[str, str]  # namespace names (unique per call)
    ifname: Tuple[str, str]  # each namespace's end of the veth pair
    addr: Tuple[str, str]  # each end's address (a /30)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)


def in_ns(ns: str, argv: List[str]) -> List[str]:
    """argv run inside namespace `ns` (ip-netns(8) also mounts that namespace's /sys there)."""
    return ["ip", "netns", "exec", ns, *argv]


@contextmanager
def two_nodes() -> Iterator[Nodes]:
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2")
    tag = uuid.uuid4().hex[:8]
    ns = (f"hosttune-{tag}-a", f"hosttune-{tag}-b")
    ifname = ("htveth-a", "htveth-b")  # made inside the namespaces: the host's namespace never sees these names
    base = 4 * random.randrange(1, 1 << 14)  # a /30 inside 10.77.0.0/16 (private; only inside our namespaces)
    addr = (f"10.77.{base >> 8}.{(base & 255) + 1}", f"10.77.{base >> 8}.{(base & 255) + 2}")
    made: List[str] = []
    try:
        for name in ns:
            try:
                _ip("netns", "add", name)
            except subprocess.CalledProcessError as exc:
                pytest.skip(f"cannot make a network namespace here: {exc.stderr.decode(errors='replace').strip()}")
            made.append(name)
        _ip("link", "add", ifname[0], "netns", ns[0], "type", "veth", "peer", "name", ifname[1], "netns", ns[1])
        for i in (0, 1):
            _ip("-n", ns[i], "addr", "add", f"{addr[i]}/30", "dev", ifname[i])
            _ip("-n", ns[i], "link", "set", ifname[i], "up")
            _ip("-n", ns[i], "link", "set", "lo", "up")
        yield Nodes(ns, ifname, addr)
    finally:
        for name in made:  # deleting a namespace deletes the veth end inside it (and so the pair)
            subprocess.run(["ip", "netns", "del", name], check=False, stderr=subprocess.DEVNULL, timeout=60)
        _unmount_netns_dir()


NETNS_DIR = "/run/netns"


def _netns_dir_mounted() -> bool:
    """/run/netns is a mount point (a bind of the directory onto itself: os.path.ismount cannot tell, mountinfo can)."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == NETNS_DIR for line in f if len(line.split()) > 4)


def _unmount_netns_dir() -> None:
    """`ip netns add` makes /run/netns a mount point of its own and never undoes it (it shows in `facts` as a
    mount): the last test out unmounts it when no namespace is left in it (another run's namespaces keep it, and a
    busy mount is refused anyway: no lazy unmount). Two runs at once cannot tell whose mount it was, so an empty one
    is unmounted whoever made it: `ip netns add` makes it again when it is next needed."""
    if not _netns_dir_mounted() or os.listdir(NETNS_DIR):
        return
    subprocess.run(["umount", NETNS_DIR], check=False, stderr=subprocess.DEVNULL, timeout=60)
