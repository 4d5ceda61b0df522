"""Pins (issue 21, round 7 practice) for hosttune/monitor/jobs.py: add_records() takes the static GPU identities as
any iterable (read once per record: a generator must serve every record), and puts each record's job on the GPUs
its CUDA_VISIBLE_DEVICES names, none on a lost GPU."""

from hosttune.monitor import jobs


def test_add_records_with_the_static_gpus_as_a_generator() -> None:
    static = [{"index": 0, "uuid": "GPU-0"}, {"index": 1, "uuid": "GPU-1"}, {"index": 2, "uuid": "GPU-2"}]
    recs = [{"kind": "exec", "job": "e1", "user": "alice", "claimed": False, "exec_id": "e1",
             "cuda_visible_devices": "0"},
            {"kind": "slurm", "job": "42", "user": "bob", "claimed": True, "exec_id": "e2",
             "cuda_visible_devices": "1,2"}]
    gpus = [{"index": 0}, {"index": 1}, {"index": 2, "lost": True}]
    jobs.add_records(gpus, (s for s in static), recs)
    assert gpus == [{"index": 0, "jobs": [{"job": "e1", "kind": "exec", "user": "alice"}]},
                    {"index": 1, "jobs": [{"job": "42", "kind": "slurm", "user": "bob"}]},
                    {"index": 2, "lost": True}]
