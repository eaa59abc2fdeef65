"""The fuzz suite's long profile: many more examples of every property, counted (issue 16's figures).

    python benchmarks/fuzz.py [--profile long] [--out benchmarks/results/fuzz.md]

Runs ``tests/test_fuzz.py`` under the given profile (``tests/fuzz.py``:
``long`` = 1500 random instances, 300 fronts, 100 interrupted sweeps, 3000
mutated input files) with every passed example logged, then writes a table:
examples per property, the evidence each instance was checked against, the
exit codes of the mutated inputs, and the failures pytest reported (wrong
answers, invalid schedules, unclean exits: each property fails on its first).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPERTIES = {
    "test_random_instances_solve_to_valid_agreeing_answers": "wrong answers or invalid schedules (instances)",
    "test_random_fronts_agree_with_brute_force_and_both_directions": "wrong fronts or invalid schedules",
    "test_interrupted_sweeps_leave_valid_fronts_that_resume_to_the_whole": "broken interrupted sweeps",
    "test_mutated_input_files_are_answered_or_refused_in_one_line": "unclean exits (mutated inputs)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="long")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "fuzz.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log, report = Path(tmp) / "log.jsonl", Path(tmp) / "report.xml"
        env = {**os.environ, "CPSCHED_FUZZ": args.profile, "CPSCHED_FUZZ_LOG": str(log)}
        clock = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py",
                               f"--junitxml={report}"], cwd=ROOT, env=env)
        wall = time.monotonic() - clock
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        failed = _failures(report)
    lines = _table(rows, failed, args.profile, wall, done.returncode)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _failures(report: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    if not report.exists():
        return {"(pytest)": "no report"}
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None:
            out[case.get("name")] = " ".join((problem.get("message") or "").split())[:300]
    return out


def _table(rows: list[dict], failed: dict[str, str], profile: str, wall: float, code: int) -> list[str]:
    kinds = collections.Counter(r["kind"] for r in rows)
    evidence = collections.Counter(e for r in rows if r["kind"] == "instance" for e in r["evidence"] or ["validator"])
    statuses = collections.Counter(r["status"] for r in rows if r["kind"] == "instance")
    exits = collections.defaultdict(collections.Counter)
    for r in rows:
        if r["kind"] == "mutation":
            exits[r["file"]][r["exit"]] += 1
    lines = [f"# Fuzz suite, profile `{profile}` (one run, {wall / 60:.1f} min, pytest exit {code})", "",
             "| property | examples passed | failures |", "| --- | --- | --- |"]
    names = {"instance": PROPERTIES["test_random_instances_solve_to_valid_agreeing_answers"],
             "front": PROPERTIES["test_random_fronts_agree_with_brute_force_and_both_directions"],
             "interrupted": PROPERTIES["test_interrupted_sweeps_leave_valid_fronts_that_resume_to_the_whole"],
             "mutation": PROPERTIES["test_mutated_input_files_are_answered_or_refused_in_one_line"]}
    for kind, what in names.items():
        test = next(t for t, w in PROPERTIES.items() if w == what)
        lines.append(f"| {kind} | {kinds[kind]} | {'0' if test not in failed else '1: ' + failed[test]} |")
    lines += ["", f"Instances: statuses {dict(statuses)}; checked against (besides the validator): "
              + ", ".join(f"{e} {n}" for e, n in evidence.most_common()), "",
              "| mutated file | exit 0 | exit 1 | exit 2 | exit 3 |", "| --- | --- | --- | --- | --- |"]
    for kind in sorted(exits):
        lines.append(f"| {kind} | " + " | ".join(str(exits[kind][c]) for c in (0, 1, 2, 3)) + " |")
    return lines


if __name__ == "__main__":
    main()
