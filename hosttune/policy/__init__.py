"""Policies: each decision hosttune makes in more than one command lives in exactly one function here.

- `cuda_visible.select`: which GPUs CUDA_VISIBLE_DEVICES leaves, in CUDA's order (planner, detector, doctor).
- `gpu_health.temperature` / `gpu_health.clock_events`: how bad a GPU temperature or clock event is (doctor, monitor).
- `cpu`: the CPUs a job may really use, and what follows from them (planner, profile, doctor, engine). The one
  CPU-count unit: threads are counted in PHYSICAL cores of the allowed set (SMT siblings once), capped by the
  cgroup quota rounded down.
  - `cpu.quota` / `cpu.quota_threads` / `cpu.cap_by_quota`: the cgroup CPU quota, and the threads it sustains.
  - `cpu.allowed_cores`: the physical cores this process may use, each as its allowed logical CPUs (the planner's
    layout).
  - `cpu.thread_budget`: threads one process may run (allowed physical cores capped by the quota; OMP_NUM_THREADS,
    doctor's quotes, the deep checks' yardstick).
  - `cpu.usable_cpus`: logical CPUs capped by the quota; only for the cgroup check (does a cgroup limit us?), never
    a thread count.
  - `cpu.dataloader_workers` / `cpu.workers`: DataLoader workers for a thread budget / for a lone rank on this host.
- `gpu_peak.match` / `gpu_peak.dense_peak_tflops`: a GPU model's dense peak TFLOP/s per dtype (doctor --deep,
  engine MFU).
- `names`: every HOSTTUNE_* environment variable.
- `dirs`: the one home of hosttune's own directories (`runtime_dir` /run/hosttune, `state_dir` /var/lib/hosttune,
  `log_dir` /var/log/hosttune, `etc_dir` /etc/hosttune), each moved by its variable (HOSTTUNE_RUNTIME_DIR,
  HOSTTUNE_STATE_DIR, HOSTTUNE_LOG_DIR, HOSTTUNE_ETC_DIR), and `user_cache_dir` ($XDG_CACHE_HOME or
  ~/.cache, /hosttune); code uses these, never the literal paths.
Root trust is `hosttune.trust`, YAML is `hosttune.yamlio`, atomic writes are `hosttune.fsio`.
"""
