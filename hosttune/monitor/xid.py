"""GPU XID errors: what NVIDIA says each common code means, and the kernel-log fallback that finds them.

The monitor learns of critical XIDs from NVML's event API (`nvml.XidEvents`). Where the GPU or driver does not
deliver those events, the kernel log is the fallback where it is readable: `KmsgXids` reads new records from
/dev/kmsg (printk's record interface, Documentation/ABI/testing/dev-kmsg) without blocking and picks out the
driver's "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., ..." records: kernel facility only (anyone allowed to write
/dev/kmsg could otherwise fake a GPU failure), the XID line at the start of the message. Under the shipped unit
/dev/kmsg is not readable (DevicePolicy=closed, ProtectKernelLogs=yes), so there NVML's events are the only source.

MEANINGS is NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors, "XID messages" table and the per-code
"recommended actions"), condensed: (level, meaning, what to do). A code not listed is logged as a warning with its
number; `hosttune monitor report` and the journal show the same text.
"""

import errno
import os
import re
from typing import List, Optional, Tuple

# level is the journal priority the monitor gives the event: critical = the GPU needs a reset/drain now.
MEANINGS = {
    8: ("error", "GPU stopped responding (GPU reset required)", "reset the GPU; if it recurs, check the board"),
    13: ("warning", "graphics engine exception (usually the application: illegal instruction or address)",
         "debug the application (compute-sanitizer); replace the GPU only if it recurs across applications"),
    31: ("warning", "GPU memory page fault (usually the application: illegal memory access)",
         "debug the application; a driver bug or bad memory only if it recurs across applications"),
    32: ("warning", "invalid or corrupted push buffer stream (driver, PCIe or system memory corruption)",
         "check PCIe link errors and host memory; update the driver"),
    38: ("error", "driver firmware error", "update the driver; reset the GPU"),
    43: ("notice", "GPU stopped processing: the application hit a software fault (the GPU is healthy)",
         "none for the GPU; the application's context was ended"),
    45: ("notice", "preemptive cleanup after earlier errors (the context was torn down)",
         "look for the XID logged just before it"),
    48: ("critical", "double-bit ECC error (uncorrectable GPU memory error)",
         "drain the node and reset the GPU; pages are retired or rows remapped on reset"),
    56: ("warning", "display engine error", "update the driver"),
    57: ("error", "error programming the video memory interface", "reset the GPU; replace if it recurs"),
    58: ("error", "unstable video memory interface detected", "reset the GPU; replace if it recurs"),
    61: ("error", "internal micro-controller breakpoint/warning", "reset the GPU; update the driver"),
    62: ("critical", "internal micro-controller halt", "drain the node and reset the GPU"),
    63: ("warning", "ECC page retirement or row remapping recorded", "reset the GPU when convenient to apply it"),
    64: ("critical", "ECC page retirement or row remapping recording failed",
         "drain the node; the GPU likely needs replacing (see remapped rows failure)"),
    68: ("warning", "video processor (NVDEC) exception", "debug the application; update the driver"),
    69: ("warning", "graphics engine class error", "debug the application; update the driver"),
    74: ("critical", "NVLink error", "check the NVLink counters (hosttune_gpu_nvlink_errors_total); reset the "
         "GPUs on that link; reseat or replace the NVLink/NVSwitch hardware if it recurs"),
    79: ("critical", "GPU has fallen off the bus", "drain the node; check power, cooling and PCIe seating; "
         "reboot the host"),
    92: ("warning", "high single-bit ECC error rate", "watch the ECC counters; reset the GPU when convenient"),
    94: ("error", "contained ECC error (only the affected application was stopped)",
         "restart the application; reset the GPU when convenient"),
    95: ("critical", "uncontained ECC error (every application on the GPU is affected)",
         "drain the node and reset the GPU"),
    109: ("error", "context switch timeout", "debug the application; update the driver"),
    119: ("critical", "GSP RPC timeout (GPU firmware stopped answering)", "drain the node and reset the GPU"),
    120: ("critical", "GSP error (GPU firmware)", "drain the node and reset the GPU"),
    121: ("warning", "C2C (chip-to-chip) link corrected error", "watch for recurrence"),
    140: ("critical", "unrecovered ECC error in GPU memory", "drain the node and reset the GPU"),
    143: ("critical", "GPU initialization failure", "reset the GPU; replace it if it recurs"),
}

# printk line of the NVIDIA driver: "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus."
# (older drivers print the bus id without "PCI:"). Only at the start of the message: the same words inside another
# message (a user's `logger`, an application quoting an old error) are not an XID.
_XID_MESSAGE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): (\d+)")
# A /dev/kmsg record (Documentation/ABI/testing/dev-kmsg): "PRI,SEQ,USEC,FLAGS[,more];MESSAGE", where PRI is
# facility * 8 + level. The kernel's own printk has facility 0 (LOG_KERN); a process that writes to /dev/kmsg
# (systemd, `echo > /dev/kmsg`, any user where /dev/kmsg is writable) gets LOG_USER (1) or its own facility, never 0
# (printk's devkmsg_write turns facility 0 into LOG_USER), so facility 0 is what only the driver can log.
_KMSG_RECORD = re.compile(r"(\d{1,5}),(\d{1,20}),(-?\d{1,20}),[^;]*;")
MAX_RECORD = 8192  # a /dev/kmsg record is at most 1 KiB of text plus its dictionary; read(2) needs room for one


def describe(xid: int) -> Tuple[str, str]:
    """(level, "Xid N: meaning; action: ...") for one XID."""
    level, meaning, action = MEANINGS.get(xid, ("warning", "GPU error (not in hosttune's XID table)",
                                                "see NVIDIA's XID catalogue"))
    return level, f"Xid {xid}: {meaning}; action: {action}"


def parse_xid_message(text: str) -> Optional[Tuple[str, int]]:
    """("0000:3b:00", xid) from the text of one kernel message that starts with the driver's "NVRM: Xid (...)",
    or None. The bus id is normalised to a 4-digit domain."""
    m = _XID_MESSAGE.match(text)
    if not m:
        return None
    parts = m.group(1).lower().split(":")
    return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}", int(m.group(2))


def parse_kmsg_record(record: str) -> Optional[Tuple[str, int]]:
    """The XID in one /dev/kmsg record ("4,1534,123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, ..."), or None: the
    record must be the kernel's own (facility 0) and its message must start with the driver's XID line."""
    m = _KMSG_RECORD.match(record)
    if not m or int(m.group(1)) >> 3 != 0:
        return None
    return parse_xid_message(record[m.end():])


class KmsgXids:
    """New "NVRM: Xid" lines from /dev/kmsg (or any file that grows, for tests), read without blocking.

    Opened at the end (what the kernel logged before the monitor started is history, not a new event); each
    `poll()` reads at most `limit` records. EPIPE means records were overwritten before we read them: read on."""

    def __init__(self, path: str = "/dev/kmsg") -> None:
        self.path = path
        self.fd: Optional[int] = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.lseek(self.fd, 0, os.SEEK_END)  # /dev/kmsg: SEEK_END is "after the last record"
        except OSError:
            os.close(self.fd)
            self.fd = None
            raise
        self._partial = b""

    def poll(self, limit: int = 256) -> List[Tuple[str, int]]:
        out: List[Tuple[str, int]] = []
        if self.fd is None:
            return out
        for _ in range(limit):
            try:
                chunk = os.read(self.fd, MAX_RECORD)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue
                break
            if not chunk:
                break
            data = self._partial + chunk
            lines = data.split(b"\n")
            self._partial = lines.pop()[-MAX_RECORD:]  # a regular file may end mid-line; kmsg records end in \n
            for raw in lines:
                if raw.startswith(b" "):  # a kmsg dictionary continuation line ("  SUBSYSTEM=pci")
                    continue
                found = parse_kmsg_record(raw.decode("utf-8", "replace"))  # "4,1234,5678,-;NVRM: Xid ..."
                if found:
                    out.append(found)
        return out

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
