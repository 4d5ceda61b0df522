"""Policies: each decision hosttune makes in more than one command lives in exactly one function here.

- `cuda_visible.select`: which GPUs CUDA_VISIBLE_DEVICES leaves, in CUDA's order (planner, detector, doctor).
- `gpu_health.temperature` / `gpu_health.clock_events`: how bad a GPU temperature or clock event is (doctor, monitor).
- `cpu.quota` / `cpu.thread_budget` / `cpu.dataloader_workers`: the CPUs a job may really use, and what follows
  from them (planner, doctor, engine).
- `gpu_peak.match` / `gpu_peak.dense_peak_tflops`: a GPU model's dense peak TFLOP/s per dtype (doctor --deep,
  engine MFU).
- `names`: every HOSTTUNE_* environment variable.
- `dirs`: where hosttune's own directories are (/run, /var/lib, /var/log, /etc), each movable by a variable.
Root trust is `hosttune.trust`, YAML is `hosttune.yamlio`, atomic writes are `hosttune.fsio`.
"""
