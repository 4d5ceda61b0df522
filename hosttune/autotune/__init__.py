"""`hosttune autotune`: measure the user's own job under candidate plans, keep only what provably wins.

The package: `metric` (the throughput read from a trial's output, warm-up discarded), `candidates` (what a plan
decides, varied from the default profile), `stats` (ratios to the default in adjacent runs, bootstrap intervals,
the decision), `budget` (what fits: the schedule's trials, the candidates a budget holds at the window's and at
the measured trial length, those left out), `search` (successive halving over a runner, interleaved with the
default, within the budget), `runner` (one trial: a child `hosttune exec --profile FILE -- COMMAND` for a bounded
window, through `programs.popen`), `rundirs` (a scratch `--run-dir` per trial of the bundled engine) and `report`
(the table, the JSON and the saved profile of a winner, written through `profile.generate.write` -> `fsio`). Pure
except `runner`, `rundirs` and `report.save`.
"""
