"""Every HOSTTUNE_* environment variable: the only place their names are spelled."""

# Set by the user or an admin
PROFILE = "HOSTTUNE_PROFILE"  # the profile to use (a name or a path)
PROFILE_PATH = "HOSTTUNE_PROFILE_PATH"  # extra profile directories, colon-separated, later wins
ETC_DIR = "HOSTTUNE_ETC_DIR"  # /etc/hosttune elsewhere (tests, captured hosts)
RUNTIME_DIR = "HOSTTUNE_RUNTIME_DIR"  # /run/hosttune elsewhere (root's handoffs and exec cache; policy/dirs.py)
STATE_DIR = "HOSTTUNE_STATE_DIR"  # /var/lib/hosttune elsewhere (policy/dirs.py)
LOG_DIR = "HOSTTUNE_LOG_DIR"  # /var/log/hosttune elsewhere (policy/dirs.py)
PYTHON = "HOSTTUNE_PYTHON"  # the training interpreter
STOP_GRACE = "HOSTTUNE_STOP_GRACE"  # seconds between a forwarded signal and SIGKILL (default 40)
EXEC_CACHE = "HOSTTUNE_EXEC_CACHE"  # "0": `hosttune exec` neither reads nor writes its start-up cache

# Set by the launcher on every process of a job
HANDOFF = "HOSTTUNE_HANDOFF"  # the handoff file (the job's facts, profile, touched env, flags)
LAUNCH_ID = "HOSTTUNE_LAUNCH_ID"  # carried by every process of the job; the sweep and --verify look for it
LOCAL_RANK = "HOSTTUNE_LOCAL_RANK"  # set on the rank's own process (after the shim's exec)
LOCAL_WORLD_SIZE = "HOSTTUNE_LOCAL_WORLD_SIZE"
SPAWN_PROCS = "HOSTTUNE_SPAWN_PROCS"  # while torch.multiprocessing.spawn starts its processes: how many (hook.py)
JOB_CPUS = "HOSTTUNE_JOB_CPUS"  # the CPUs a process that became rank 0 had before it rebound (hook.py)
HANG_DIR = "HOSTTUNE_HANG_DIR"  # the hang directory where each Python rank arms its stacks file (exec --hang-timeout)

# Set by a plan for the engine (and any training script that reads them)
NUM_WORKERS = "HOSTTUNE_NUM_WORKERS"
PIN_MEMORY = "HOSTTUNE_PIN_MEMORY"
PREFETCH_FACTOR = "HOSTTUNE_PREFETCH_FACTOR"
PERSISTENT_WORKERS = "HOSTTUNE_PERSISTENT_WORKERS"
DETERMINISTIC = "HOSTTUNE_DETERMINISTIC"

# Tests only
FAKE_NVML = "HOSTTUNE_FAKE_NVML"
