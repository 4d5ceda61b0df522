"""`hosttune exec`: turns a user's command (torchrun, srun task, anything) into ranks that run with their plan applied.

The launcher side, one concern per module:
- job.py        the job model: `prepare` (detect once, pick the job's shape, plan every known rank), `Launch`,
                what --dry-run prints
- torchrun.py   torchrun's argv taken apart; rewritten to start each rank through the shim (--no-python)
- launchers/    the other launchers (accelerate, DeepSpeed, mpirun, srun, torch.distributed.launch) behind identify()
- slurm.py      an srun task's local rank and its node's task count
- verify.py     --verify: each running rank compared with its plan
- supervise.py  run: exec or supervise, forward signals, sweep, exit status
- guardian.py   the forked guardian that stops the job when the launcher dies
- replan.py     the launcher's planner in a child process, for a rank whose world size nobody foresaw

The rank side (imports no planner, profile, YAML, detector or click: .importlinter's rank-side contract):
- rank.py       where a rank's plan comes from, the check of its variables, and the one failure rule
- hook.py       the per-rank hook: every Python rank applies its own plan at interpreter start (rankhook/ on the
                job's PYTHONPATH holds its sitecustomize.py); hosttune/shim.py is the other entry, for torchrun ranks
- handoff.py    launcher -> rank: where the file lives, writing it, checking it, reading it
- rankvars.py   a rank's place on the node from its launcher's variables (LOCAL_RANK, Open MPI, MPICH, PMI, Slurm)
- binding.py    CPU/memory binding of this process (sched_setaffinity, set_mempolicy, numactl fallback)
- procfs.py     /proc readers (status, environ, numa_maps, children, the launch marker)
- pythons.py    which interpreters are Python, and the one torchrun runs on
The wire types (RankPlan, the rank command's placeholder) are hosttune/rankplan.py, below the planner.

Importing this package imports none of them: callers import the submodule they use.
"""
