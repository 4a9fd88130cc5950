#!/usr/bin/env python3
"""Judges one ctest run of a GPU check (ci/gpu-checks.sh): passed only when every test it had to
run ran and passed on the GPU, never on a summary line alone.

  ci/gpu-judge-ctest.py --log LOG [--listed LISTING] [--require NAME]...

LOG      what `ctest -V` (or plain ctest) printed for the check's selection.
LISTING  what `ctest -N` printed for the same selection: every test listed there must have run.
NAME     a test that must have run and passed (the GPU tests of the check, by their full names):
         a selection regex alone can match only CPU tests and still "pass" (the first GPU run's
         sdpa check did), so each check names the tests that make it a GPU check.

Prints one JSON object, {"outcome": "passed"|"failed", "detail": "...", "tests": [...],
"counts": {...}}, and exits 0 when passed, 1 when failed, 2 on a usage error. It fails when: no
ctest summary was printed; the summary's total differs from the result lines; no test ran; a test
failed, timed out, was not run or skipped (ctest's ***Skipped, or gtest's `[  SKIPPED ]` in -V
output: an MPI test under mpirun reports a gtest skip as a pass); a required test did not run or
did not pass; a test that `ctest -N` listed did not run. ctest prints its summary as
`100% tests passed, 0 tests failed out of 14` (CMake 3.x) or `100% tests passed out of 14`
(CMake 4.x when none failed); both are read.
"""
import argparse
import json
import re
import sys
from pathlib import Path

# `  3/14 Test  #5: Name ......   Passed    0.00 sec`, `Test #7: Name ...***Skipped   0.00 sec`,
# `***Failed`, `***Timeout`, `***Not Run (Disabled)`, `***Exception: SegFault`.
RESULT = re.compile(r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(\S+)\s*\.*\s*(Passed|\*\*\*\S.*?)\s+[0-9.]+\s+sec\s*$")
SUMMARY = re.compile(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)")
LISTED = re.compile(r"^\s*Test\s+#\d+:\s+(\S+)\s*$")
GTEST_SKIP = re.compile(r"\[\s+SKIPPED\s+\]\s+(\S+)")


def judge(log_text, listed_text=None, required=()):
    results = {}
    order = []
    for line in log_text.splitlines():
        m = RESULT.match(line)
        if m:
            name, status = m.group(1), m.group(2).lstrip("*").strip()
            if name not in results:
                order.append(name)
            results[name] = status
    summaries = SUMMARY.findall(log_text)
    gtest_skips = sorted({m.group(1) for m in GTEST_SKIP.finditer(log_text)
                          if not m.group(1)[0].isdigit()})  # not `[  SKIPPED ] 1 test, listed below:`
    passed = [n for n in order if results[n] == "Passed"]
    bad = {n: results[n] for n in order if results[n] != "Passed"}
    counts = {"ran": len(order), "passed": len(passed), "not_passed": len(bad),
              "required": len(required), "gtest_skipped": len(gtest_skips)}
    problems = []
    if not summaries:
        problems.append("no ctest summary")
    else:
        total = int(summaries[-1][2])
        counts["summary_total"] = total
        if total != len(order):
            problems.append(f"the summary says {total} tests, the log has {len(order)} result lines")
    if not order:
        problems.append("no test ran")
    if bad:
        problems.append("not passed: " + ", ".join(f"{n} ({s})" for n, s in bad.items()))
    if gtest_skips:
        problems.append("skipped inside the test program: " + ", ".join(gtest_skips))
    missing = [n for n in required if results.get(n) != "Passed" and n not in bad]
    if missing:
        problems.append("required but did not run: " + ", ".join(missing))
    if listed_text is not None:
        listed = [m.group(1) for m in map(LISTED.match, listed_text.splitlines()) if m]
        counts["listed"] = len(listed)
        unregistered = [n for n in required if n not in listed]
        if unregistered:
            problems.append("required but not registered with ctest (not built with CUDA?): " + ", ".join(unregistered))
        not_run = [n for n in listed if n not in results]
        if not_run:
            problems.append("listed by ctest -N but did not run: " + ", ".join(not_run))
    if problems:
        return {"outcome": "failed", "detail": "; ".join(problems), "tests": order, "counts": counts}
    gpu = ", ".join(required) if required else "none named"
    detail = f"{len(passed)} of {len(order)} passed, none skipped; required: {gpu}"
    return {"outcome": "passed", "detail": detail, "tests": order, "counts": counts}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--listed")
    ap.add_argument("--require", action="append", default=[])
    args = ap.parse_args(argv)
    try:
        log_text = Path(args.log).read_text(errors="replace")
        listed_text = Path(args.listed).read_text(errors="replace") if args.listed else None
    except OSError as e:
        print(f"ci/gpu-judge-ctest.py: {e}", file=sys.stderr)
        return 2
    required = [n for r in args.require for n in r.split() if n]
    verdict = judge(log_text, listed_text, required)
    print(json.dumps(verdict))
    return 0 if verdict["outcome"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
