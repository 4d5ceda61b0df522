"""`hosttune facts`: detect the host and print a summary, or the Facts JSON with --json."""

import json
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from hosttune import trust
from hosttune.errors import UserError
from hosttune.facts import Facts
from hosttune.term import printable


def _cpus(cpus: Sequence[int]) -> str:
    from hosttune.detect.hostio import format_cpulist

    return format_cpulist(cpus) or "-"


def _q(value: object) -> str:
    """None -> "?" (not readable), anything else as text."""
    return "?" if value is None else str(value)


Row = Tuple[str, object]


def render(f: Facts) -> str:
    """A few aligned lines per section."""
    rows: List[Row] = [*_os_rows(f), *_cpu_rows(f), *_gpu_rows(f), *_software_rows(f), *_storage_rows(f),
                      *_container_rows(f)]
    rows += [("missing", gap) for gap in f.missing]
    # Every value came from the host (or a captured tree): a CPU model or os-release NAME holding ESC [ ... must not
    # drive the terminal. (The JSON is escaped by json.dumps.)
    shown = [(printable(key), printable(_cell(value))) for key, value in rows]
    width = max(len(r[0]) for r in shown)
    return "\n".join(f"{key.ljust(width)}  {value}" for key, value in shown)


def _cell(value: object) -> str:
    """None or "" -> "-" (nothing there), anything else as text."""
    return "-" if value is None or value == "" else str(value)


def _os_rows(f: Facts) -> List[Row]:
    d, k = f.distro, f.kernel
    return [
        ("host", f"{f.hostname or '?'} ({f.root})" if f.root != "/" else (f.hostname or "?")),
        ("distro", f"{d.name or d.id} {d.version_best or d.version} {('(' + d.codename + ')') if d.codename else ''}"
         f" family={d.family}".replace("  ", " ")),
        ("kernel", f"{_q(k.release)}  thp={_q(k.thp)}  numa_balancing={_q(k.numa_balancing)}  "
         f"swappiness={_q(k.swappiness)}  governor={','.join(k.governors) or '-'}"),
    ]


def _cpu_rows(f: Facts) -> List[Row]:
    c = f.cpu
    smt = "on" if c.smt else "off"
    quota = f"{c.quota_cpus:g}" if c.quota_cpus is not None else "none"
    cg = f"cgroup v{c.cgroup.version}" if c.cgroup.version else "no cgroup"
    rows: List[Row] = [
        ("cpu", f"{c.model or '?'} ({c.vendor or '?'}, {c.arch or '?'})"),
        ("cpu topology", f"{c.packages} package(s), {c.physical} cores, {c.logical} logical, smt={smt}"),
        ("cpu flags", " ".join(c.flags) or "-"),
        ("cpu allowed", f"{_cpus(c.allowed_cpus)} ({len(c.allowed_cpus)})  quota={quota}  {cg}"),
    ]
    return rows + [(f"numa node{n.id}", f"cpus {_cpus(n.cpus)}  {n.memory_mb} MiB") for n in f.numa.nodes]


def _gpu_rows(f: Facts) -> List[Row]:
    rows: List[Row] = [] if f.gpus else [("gpus", "none")]
    for g in f.gpus:
        mem = f"{g.memory_mb} MiB" if g.memory_mb else ""
        name = g.name or f"NVIDIA {g.device_id or 'GPU'}"
        rows.append((f"gpu{g.index}", f"{name}  {g.pci_bus_id}  numa={g.numa_node}  {mem}".rstrip()))
    nv = f.nvidia
    switches = (f"  nvswitches={nv.nvswitches} fabricmanager={'yes' if nv.fabric_manager_installed else 'no'}"
                if nv.nvswitches else "")
    rows.append(("nvidia driver", f"{nv.driver or 'none'}  cuda={nv.cuda_driver or '-'}  nvml={nv.nvml}"))
    rows.append(("cuda toolkit", f"{nv.cuda_toolkit or 'none'}  cudnn={nv.cudnn or '-'}  nccl={nv.nccl or '-'}"
                 + switches))
    return rows


def _torch_row(f: Facts) -> Row:
    t = f.torch
    if t is None:
        return ("torch", "not found" if f.root == "/" else "not probed (--root)")
    if t.error:
        return ("torch", f"error: {t.error} ({t.python})")
    return ("torch", f"{t.version} cuda={t.cuda or 'cpu'} cudnn={t.cudnn or '-'} nccl={t.nccl or '-'} "
            f"cuda_available={t.cuda_available} devices={t.device_count} ({t.python})")


def _torch_cpu_row(f: Facts) -> List[Row]:
    """torch on the CPU: its oneDNN, the ISA oneDNN and ATen use here (this shell's ONEDNN_MAX_CPU_ISA and
    ATEN_CPU_CAPABILITY included on a live host), and the bf16 path (hosttune.policy.onednn)."""
    import os

    from hosttune.policy import onednn

    t = f.torch
    if t is None or t.error or not t.version:
        return []
    return [("torch cpu", onednn.summary(t.onednn, f.cpu.flags, os.environ if f.root == "/" else {}))]


def _software_rows(f: Facts) -> List[Row]:
    a, tl, m, tu = f.allocators, f.tools, f.memory, f.tuned
    libs = (("jemalloc", a.jemalloc), ("tcmalloc", a.tcmalloc), ("tcmalloc_minimal", a.tcmalloc_minimal),
            ("iomp5", a.iomp5), ("gomp", a.gomp))
    tools = (("numactl", tl.numactl), ("nvidia-smi", tl.nvidia_smi), ("torchrun", tl.torchrun))
    state = {True: "running", False: "not running", None: "state unknown"}[tu.running]
    return [
        _torch_row(f),
        *_torch_cpu_row(f),
        ("allocators", "  ".join(f"{name}={'yes' if path else 'no'}" for name, path in libs)),
        ("tools", "  ".join(f"{name}={path or 'no'}" for name, path in tools)),
        ("memory", f"{_q(m.total_mb)} MiB total, {_q(m.available_mb)} MiB available, "
         f"swap {_q(m.swap_total_mb)} MiB, /dev/shm {_q(m.shm_mb)} MiB"),
        ("tuned", f"{state}  profile={tu.profile or '-'}  mode={tu.mode or '-'}" if tu.installed else "not installed"),
    ]


def _storage_rows(f: Facts) -> List[Row]:
    rows: List[Row] = []
    for s in f.storage:
        if s.kind == "tmpfs" and s.mount != "/dev/shm":
            continue
        size = f"  {s.size_mb} MiB" if s.size_mb is not None else ""
        rows.append((f"storage {s.mount}", f"{s.kind} ({s.fstype}{', ' + s.device if s.device else ''}){size}"))
    return rows


def _container_rows(f: Facts) -> List[Row]:
    """What a container can and cannot see (nothing when this is not one)."""
    c = f.container
    if not c.detected:
        return []
    ro = [name for name, flag in (("/proc/sys", c.proc_sys_readonly), ("/sys", c.sys_readonly)) if flag]
    rows: List[Row] = [("container", f"{c.runtime or 'unknown'} ({'; '.join(c.evidence)})"),
                       ("container limits", ", ".join(c.cgroup_limits) or "none in its cgroup"),
                       ("container host fs", f"{' and '.join(ro)} read-only" if ro else "/proc/sys and /sys writable")]
    if c.nvidia_devices or c.driver_gpus:
        of = f" of {c.driver_gpus} the driver has" if c.driver_gpus is not None else ""
        nodes = " ".join(c.nvidia_devices) or "no /dev/nvidia*"
        rows.append(("container gpus", f"{c.gpu_nodes} passed in{of}  ({nodes})"))
    return rows + [("host's", note) for note in c.host_values]


@click.command("facts")
@click.option("--root", "root", type=str, default=None, help="A captured host (a folder holding proc/, sys/, etc/).")
@click.option("--python", "python", type=str, default=None,
              help="Interpreter whose torch to inspect (default: python3 on PATH).")
@click.option("--json", "as_json", is_flag=True, help="Print the Facts JSON.")
@click.option("--capture", "capture", metavar="DEST", default=None,
              help="Write the proc/sys/etc files that --root reads into the new directory DEST (or DEST.tar.gz), "
                   "for support.")
@click.option("--force", "force", is_flag=True,
              help="With --capture DEST.tar.gz: replace an existing DEST.tar.gz (refused without it).")
def cmd(root: Optional[str], python: Optional[str], as_json: bool, capture: Optional[str], force: bool) -> None:
    """Detect what this host is (CPU, NUMA, GPUs, drivers, torch, storage)."""
    from hosttune.detect import collect

    if capture is not None and root is not None:
        raise UserError("--capture and --root: --capture records this host, not a captured one")
    if force and capture is None:
        raise UserError("--force goes with --capture DEST.tar.gz (it replaces an existing archive)")
    if root is not None:
        root = trust.host_tree(root)
    if python is not None:
        # The program gateway: "--python python3.11" is PATH's (as root, its trusted directories' only); as root the
        # file and every directory and link on the way must be root's alone, refused in one line before it runs.
        from hosttune import programs

        python = programs.resolve(python, "--python")
    if capture is not None:
        from hosttune import capture as capturing

        manifest = capturing.capture(capture, python, force=force)
        if as_json:
            click.echo(json.dumps(manifest, indent=2))
            return
        click.echo(printable(f"captured {manifest['files']} files ({manifest['bytes'] >> 10} KiB) and "
                             f"{manifest['placeholders']} placeholders into {capture}"
                             + (f"; refused {len(manifest['refused'])} paths (see capture.json)"
                                if manifest["refused"] else "")))
        click.echo(printable(f"read it with: {manifest['read_with']}"))
        return
    facts = collect(Path(root) if root is not None else Path("/"), python=python)
    click.echo(facts.to_json() if as_json else render(facts))
