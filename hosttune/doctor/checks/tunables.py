"""What doctor's tunable-backed checks share with `hosttune tune`: the expected values come from the profile's
`tune:` section and the rules of `hosttune.tune.rules` (when a tunable applies on this host, what satisfies it), so
doctor and `tune verify` judge every host alike. Here too the checks of the limits and /dev/shm, whose captured
values (a --root tree has no rlimits) are read by tune's own readers."""

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from hosttune.doctor.context import Context, in_container
from hosttune.doctor.fixes import LIMITS_FILE, tune_fix
from hosttune.doctor.model import Finding
from hosttune.profile.settings import Tune
from hosttune.tune import rules

if TYPE_CHECKING:
    from hosttune.tune.model import Status

GiB = 1024
SHM_FLOOR_MB = 256  # below this the first large batch dies: a failure, not a warning


def profile_tune(ctx: Context) -> Tune:
    """The `tune:` settings of the profile in use (the built-in defaults when none is configured or it does not
    load: hosttune.profile checks say why)."""
    prof = ctx.load_profile()[1]
    return getattr(prof, "tune", None) or Tune()


def host(ctx: Context) -> rules.Host:
    return rules.host_of_facts(ctx.facts)


def want(ctx: Context, tid: str) -> str:
    return rules.expected(tid, profile_tune(ctx))


def in_tree(ctx: Context, tid: str) -> Optional["Status"]:
    """On a captured host, `tid` as `hosttune tune verify --root` judges it (tune's reader and rule: hosttune's own
    file first, then the tree's); None on the live host."""
    if ctx.live:
        return None
    from hosttune.tune import core

    return core.status(Path(ctx.facts.root), tid, profile_tune(ctx))


def _from_tree(st: "Status", fix: str, what: str = "") -> Finding:
    expected = st.expected or ""
    if st.state == "skip":
        return Finding(status="skip", actual=st.reason, expected=expected)
    actual = f"{st.actual}{what}"
    if st.state == "drift":
        return Finding(status="warn", actual=actual, expected=expected, fix=fix)
    return Finding(status="pass", actual=actual, expected=expected)


def _tune_fix(ctx: Context, tid: str, shell: str) -> str:
    """`tune_fix`, except in a container: `tune apply` there writes limits files its processes never read."""
    return shell if in_container(ctx) else tune_fix(tid, shell)


def _runtime_limit(ctx: Context, name: str, value: str) -> str:
    """The option of the container's runtime that sets rlimit `name` ("nofile", "memlock") to `value` ("-1": none)."""
    if ctx.facts.container.runtime == "systemd-nspawn":
        return f"systemd-nspawn --rlimit=RLIMIT_{name.upper()}={'infinity' if value == '-1' else value}"
    return f"docker/podman run --ulimit {name}={value}"


def check_nofile(ctx: Context) -> Finding:
    """The open-files soft limit (`ulimit -n`) is at least the profile's `tune.nofile` (65536 by default).

    DataLoader workers share tensors through file descriptors (PyTorch's default `file_descriptor` sharing
    strategy keeps one open fd per shared storage), and sharded datasets, NCCL sockets and checkpoint writers add
    more: "RuntimeError: received 0 items of ancdata" / "Too many open files" at the default soft limit of 1024 is
    a classic (pytorch/pytorch#973). 65536 is the common recommendation and costs nothing. On a captured host
    (--root) the limit new logins get is read from its limits files, as `hosttune tune verify --root` does.
    """
    lim, need = ctx.facts.limits, want(ctx, "nofile")
    expected = f">= {need}"
    persist = (f"printf '* soft nofile {need}\\n* hard nofile 1048576\\n' > {LIMITS_FILE}   # new logins; "
               f"systemd services: LimitNOFILE={need}; docker: --ulimit nofile={need}:1048576")
    if in_container(ctx):  # a container's processes get their limits from the runtime, not from limits.d
        persist = (f"in a container the runtime sets it: {_runtime_limit(ctx, 'nofile', f'{need}:1048576')}; "
                   "Kubernetes: the node's container runtime (LimitNOFILE of containerd's or cri-o's unit)")
    st = in_tree(ctx, "nofile") if lim.nofile_soft is None else None
    if st is not None:
        return _from_tree(st, _tune_fix(ctx, "nofile", persist), " (limits files)")
    if lim.nofile_soft is None:
        return Finding(status="skip", actual="RLIMIT_NOFILE not readable (captured host?)", expected=expected)
    soft = "unlimited" if lim.nofile_soft == -1 else str(lim.nofile_soft)
    if rules.ok("nofile", soft, need):
        return Finding(status="pass", actual=soft, expected=expected)
    hard = lim.nofile_hard
    if hard is not None and hard != -1 and not rules.ok("nofile", str(hard), need):
        fix = f"{persist}\n# this shell's hard limit is {hard}: only a new login (or root) gets more"
    else:
        fix = f"ulimit -n {need}   # this shell\n{persist}"
    return Finding(status="warn", actual=soft, expected=expected, fix=_tune_fix(ctx, "nofile", fix))


def check_memlock(ctx: Context) -> Finding:
    """Locked memory is at least the profile's `tune.memlock` (unlimited by default) on hosts with RDMA
    (InfiniBand/RoCE/EFA) devices.

    NCCL and GPUDirect RDMA register (pin) buffers with the NIC; with the default 64 KiB-8 MiB RLIMIT_MEMLOCK the
    registration fails and NCCL falls back to sockets or aborts ("ibv_reg_mr failed"). Hosts without
    /sys/class/infiniband devices do not need it (`hosttune tune` skips it there too).
    """
    lim, need = ctx.facts.limits, want(ctx, "memlock")
    if rules.not_here("memlock", host(ctx)) is not None:
        return Finding(status="pass", actual="no RDMA devices: not relevant", expected=f"{need} on RDMA hosts")
    fix = tune_fix("memlock", f"printf '* soft memlock {need}\\n* hard memlock {need}\\n' > {LIMITS_FILE}   # "
                   "then log in again; systemd services: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1")
    if in_container(ctx):
        fix = (f"in a container the runtime sets it: {_runtime_limit(ctx, 'memlock', '-1')}; Kubernetes: the "
               "node's container runtime (LimitMEMLOCK=infinity in containerd's or cri-o's unit)")
    st = in_tree(ctx, "memlock") if lim.memlock_soft is None else None
    if st is not None:
        return _from_tree(st, fix, f" (limits files) with {lim.rdma_devices} RDMA devices")
    if lim.memlock_soft is None:
        return Finding(status="skip", actual=f"{lim.rdma_devices} RDMA devices; RLIMIT_MEMLOCK not readable",
                       expected=need)
    soft = "unlimited" if lim.memlock_soft == -1 else str(lim.memlock_soft // 1024)
    if rules.ok("memlock", soft, need):
        return Finding(status="pass", actual=f"{soft} ({lim.rdma_devices} RDMA devices)", expected=need)
    return Finding(status="warn", actual=f"{soft} KiB with {lim.rdma_devices} RDMA devices", expected=need, fix=fix)


def check_shm(ctx: Context) -> Finding:
    """/dev/shm is at least the profile's `tune.shm_size` (50% of memory by default); below 256 MiB a failure.

    DataLoader workers hand every batch to the trainer through shared memory in /dev/shm. Docker's default is
    64 MB: the first large batch dies with "Bus error" / "DataLoader worker ... killed ... insufficient shared
    memory (shm)". One batch of 256 ImageNet images in fp32 is 154 MB, and workers keep prefetch_factor batches
    each in flight. On a captured host (--root) the size is the one `hosttune tune verify --root` reads (hosttune's
    mount drop-in first: what the next boot mounts).
    """
    size = profile_tune(ctx).shm_size
    mem_kib = ctx.facts.memory.total_mb * 1024 if ctx.facts.memory.total_mb else None
    need_kib = rules.size_kib(size, mem_kib)
    expected = f">= {size}" + (f" ({need_kib // 1024} MiB)" if need_kib is not None else "")
    fix = tune_fix("shm", "docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: "
                   "Memory on /dev/shm\nhost: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                   "defaults,size=50% 0 0' >> /etc/fstab")
    st = in_tree(ctx, "shm")
    if st is not None and st.actual is not None:
        have = rules.size_kib(st.actual.split(" (", 1)[0], mem_kib)
        if have is not None and have < SHM_FLOOR_MB * 1024:
            return Finding(status="fail", actual=f"{have // 1024} MiB", expected=expected, fix=fix)
    if st is not None:
        return _from_tree(st, fix)
    have_mb = ctx.facts.memory.shm_mb
    if have_mb is None:
        return Finding(status="skip", actual="/dev/shm size not readable", expected=expected)
    if have_mb < SHM_FLOOR_MB:
        return Finding(status="fail", actual=f"{have_mb} MiB", expected=expected, fix=fix)
    if need_kib is not None:
        ok = rules.shm_big_enough(have_mb * 1024, need_kib)
    else:
        ok = have_mb >= GiB  # no MemTotal to size a percentage against: the floor of 1 GiB
    status = "pass" if ok else "warn"
    return Finding(status=status, actual=f"{have_mb} MiB", expected=expected, fix="" if ok else fix)
