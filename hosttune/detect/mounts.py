"""The mount table of a root: /proc/self/mountinfo, else /proc/mounts (cgroup.py and storage.py share it)."""

from typing import List, NamedTuple, Optional

from hosttune.detect.hostio import HostIO


class MountEntry(NamedTuple):
    mount: str  # where it is mounted
    fstype: str
    source: str
    root: str = "/"  # the subtree of the filesystem that is mounted (mountinfo field 4; "/" from /proc/mounts)
    devno: Optional[str] = None  # "major:minor" (mountinfo only)
    options: str = ""  # mount options + super options


def unescape(text: str) -> str:
    r"""Mount paths escape space, tab, newline and backslash as octal: "\040" -> " "."""
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 3 < len(text) + 0 and all(c in "01234567" for c in text[i + 1:i + 4]):
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: Optional[str]) -> List[MountEntry]:
    """proc(5) mountinfo: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".

    The optional fields (shared:N, master:N ...) run until a lone "-"; there may be none or several.
    """
    out: List[MountEntry] = []
    for line in (text or "").splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 7:
            continue
        sep = fields.index("-", 6)
        if len(fields) < sep + 3:
            continue
        out.append(MountEntry(
            mount=unescape(fields[4]),
            fstype=fields[sep + 1],
            source=unescape(fields[sep + 2]),
            root=unescape(fields[3]),
            devno=fields[2],
            options=",".join([fields[5]] + fields[sep + 3:sep + 4]),
        ))
    return out


def parse_mounts(text: Optional[str]) -> List[MountEntry]:
    """/proc/mounts (fstab format): "source mountpoint fstype options 0 0"."""
    out: List[MountEntry] = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        out.append(MountEntry(mount=unescape(fields[1]), fstype=fields[2], source=unescape(fields[0]),
                              options=fields[3]))
    return out


def read_mounts(io: HostIO) -> List[MountEntry]:
    text = io.read("/proc/self/mountinfo")
    if text is not None:
        return parse_mountinfo(text)
    text = io.read("/proc/mounts")
    if text is None:
        io.note("mounts", "no proc/self/mountinfo or proc/mounts")
    return parse_mounts(text)
