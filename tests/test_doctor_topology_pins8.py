"""Pins for hosttune.doctor.checks.topology (issue 21, practice round HDOC8): with ACS on for more than 8 bridges the
finding names every bridge and the fix gives setpci for the first 8 only; the whole finding."""

from typing import Optional

from _doctorhelp import gpu_host

from hosttune.doctor.checks import topology
from hosttune.doctor.context import Context, Live
from hosttune.doctor.model import Finding


class Lspci(Live):
    def __init__(self, text: str) -> None:
        self.text = text

    def lspci_vvv(self) -> Optional[str]:
        return self.text


def test_acs_on_many_bridges_fixes_the_first_eight() -> None:
    text = "".join(f"00:{i:02x}.0 PCI bridge: Intel\n\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+\n"
                   for i in range(10))
    f = topology.check_acs(Context(facts=gpu_host(), env={}, probe=Lspci(text)))
    bridges = [f"00:{i:02x}.0" for i in range(10)]
    assert f == Finding(
        status="warn", actual="ACS on for " + ", ".join(bridges), expected="ACS off",
        fix="\n".join(f"setpci -s {b} ECAP_ACS+0x6.w=0000" for b in bridges[:8])
        + "\n# lost at reboot: disable ACS in the BIOS or run this from a boot-time unit")
