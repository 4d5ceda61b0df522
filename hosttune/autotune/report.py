"""What autotune tells and keeps: the plan (--dry-run), a line per trial, the table (text or --json), and the
winner's profile, written only when a candidate provably won.

The winner is saved as the job's measured overlay (`hosttune.profile.measured`): the default profile with the
winner's changes, keyed by the host's hardware fingerprint and the job's normalised command line, with its
provenance (candidate, ratio, interval, rounds, date, the changed settings) under `reasons: measured.*`. It goes to
`measured/` beside the profile `profile generate` would write for this user (root: `HOSTTUNE_ETC_DIR`, a user:
`XDG_CONFIG_HOME`), through `profile.write` (fsio, atomic). The next `hosttune exec` of the same job on the same kind
of host applies it and says so; `profile show` lists it. `--output FILE` writes the same as a whole profile file
instead, for `hosttune exec --profile FILE`.
"""

import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from hosttune.autotune import candidates as cands
from hosttune.autotune import contention, search, stats
from hosttune.term import printable


def plan_text(session: Any) -> str:
    lines = [f"autotune: {len(session.candidates)} candidates against the default plan ({session.default.name}), "
             f"metric {session.spec.text!r}{' (lower is better)' if session.spec.lower_is_better else ''}"]
    for c in session.candidates:
        lines.append(f"  {c.name:<18} {c.why}")
    lines.extend(f"  ({printable(n)})" for n in session.notes)
    lines.append(f"  ({cands.PRIORITY_TEXT})")
    if getattr(session, "engine_runs", False):
        lines.append("run directories: each trial of the engine gets --run-dir in a fresh scratch directory under "
                     "TMPDIR (no trial resumes another's checkpoints), removed after it unless the trial is dropped")
        lines.append("the engine prints its samples/s once, when its run ends: give it few enough steps (--set "
                     "steps=N) to end within a trial's window")
    lines.append("order: each round runs D c1 D c2 ... cn D (D = the default, candidates reshuffled every round); "
                 "each candidate's ratio is to the default trials next to it")
    for st in session.stages():
        what = "finalists, fresh rounds that decide" if st.label == "confirm" else "keep the better half"
        lines.append(f"  {st.label:<8} {st.names} candidates x {st.rounds} round(s) = {st.trials} trials ({what})")
    lines.append(f"  busy host: up to {session.confirm} extra confirmation rounds, as the budget allows, when the "
                 f"default's trials run contended")
    lines.append(f"budget: {session.budget_s:g} s = {session.trials()} trials of at most {session.window_s:.1f} s")
    plan = session.plan
    if plan is not None:
        lines.append(f"plan: {plan.why()}")
        lines.extend(f"  {line}" for line in plan.lines())
    lines.append("after the default's first two trials the plan is made again at the second's length: a job that "
                 "ends before its window fits more candidates, one that runs past it fewer")
    return "\n".join(lines)


def trial_line(t: search.Trial, res: search.Result, planned: int) -> str:
    """`planned`: the trials planned before the first; once the search has planned again, its own count."""
    planned = res.plan.trials() if res.plan is not None else planned
    what = f"{t.score:.4g}" if t.score is not None else f"dropped: {printable(t.why)}"
    busy = f"; host busy {t.busy:.0%}" if t.busy is not None and t.busy >= contention.BUSY else ""
    return f"[{len(res.trials)}/{planned}] {t.name}: {what} ({t.seconds:.1f} s; {res.spent:.0f} s spent{busy})"


def _ci(s: Optional[stats.Summary]) -> str:
    if s is None or not s.rounds:
        return "-"
    return f"{s.median:.3f} [{s.lo:.3f}, {s.hi:.3f}] n={s.rounds}"


def table(res: search.Result, min_gain: float) -> str:
    rows = [("candidate", "median ratio", "95% CI", "rounds", "confirmation (decides)")]
    for s, conf, why in search.summary_rows(res):
        if why and not s.rounds:
            rows.append((s.name, "-", "-", "0", f"dropped: {printable(why)[:70]}"))
            continue
        ci = f"[{s.lo:.3f}, {s.hi:.3f}]" if s.rounds else "-"
        med = f"{s.median:.3f}" if s.rounds else "-"
        tail = _ci(conf) if conf is not None else ("dropped: " + printable(why)[:60] if why else "-")
        rows.append((s.name, med, ci, str(s.rounds), tail))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.append(verdict(res, min_gain))
    lines.extend(res.budget_lines())
    busy = res.contention_line()
    if busy:
        lines.append(busy)
    if res.stopped:
        lines.append(f"note: {res.stopped} ({res.spent:.0f} s spent)")
    return "\n".join(lines)


def verdict(res: search.Result, min_gain: float) -> str:
    w = res.winner(min_gain)
    if w is None:
        return (f"no measurable gain: no candidate's confirmation interval is above {1 + min_gain:.2f} with at least "
                f"{stats.MIN_ROUNDS} rounds; the default plan stays")
    return (f"winner: {w.name}, x{w.median:.3f} the default (95% CI {w.lo:.3f}-{w.hi:.3f}, {w.rounds} "
            f"confirmation rounds)")


def to_json(res: search.Result, min_gain: float, saved: Optional[Path]) -> str:
    conf = {s.name: s for s in res.confirmed()}
    rows: List[Dict[str, Any]] = []
    for s, c, why in search.summary_rows(res):
        row = s.to_dict()
        row["confirmation"] = c.to_dict() if c is not None else None
        row["dropped"] = why or None
        rows.append(row)
    w = res.winner(min_gain)
    return json.dumps({"candidates": rows, "winner": w.name if w else None,
                       "winner_confirmation": conf[w.name].to_dict() if w else None,
                       "spent_s": round(res.spent, 1), "trials": len(res.trials), "stopped": res.stopped or None,
                       "contention": res.contention_dict(), "budget": res.budget_dict(),
                       "saved": str(saved) if saved else None}, indent=2)


def save(session: Any, res: search.Result, w: stats.Summary, output: Optional[str]) -> Path:
    """Write the winner (profile.write: fsio, atomic): by default as the job's measured overlay
    (profile.measured: keyed by the host's fingerprint and the job, with its provenance), which the next
    `hosttune exec` of the same job on this kind of host applies; with `output`, as a whole profile file there
    (for `exec --profile FILE`). Its path."""
    from hosttune import profile as profmod
    from hosttune.profile import measured

    fp = session.facts.hardware_fingerprint()
    path = Path(output) if output else measured.save_path(session.command)
    prof = measured.overlay(session.default, session.profile_of(w.name), command=session.command, fingerprint=fp,
                            candidate=w.name, ratio=w.median, lo=w.lo, hi=w.hi, rounds=w.rounds)
    if output:
        prof = dataclasses.replace(prof, name=path.stem)
    return Path(profmod.write(prof, path, force=True))
