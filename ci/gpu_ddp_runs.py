"""The DDP programs' results that ci/gpu-checks.sh's checks `cost` and `cost_large` read: the
`ddp-step` line ci/gpu-ddp-step.py prints (rank 0), bare under torchrun or under `lockstep exec`,
and the exec run's report."""
import json
from pathlib import Path


def ddp_step(log):
    """The figures of the `ddp-step` line in `log` (a dict), or None when it has none or is missing."""
    log = Path(log)
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        i = line.find("ddp-step ")
        if i >= 0:
            return json.loads(line[i + len("ddp-step "):])
    return None


def under_exec(exec_dir, name, log, problems, tests):
    """The `ddp-step` figures of the `lockstep exec` run that wrote `exec_dir` (rank 0's log), or None.
    Each scenario of its report is added to `tests`; a scenario that did not pass, a missing report
    and a missing line to `problems`, named `name`, pointing at `log` (gpu-checks' own log of the run)."""
    exec_dir = Path(exec_dir)
    logs = sorted(exec_dir.glob("*/logs/rank-0.log"))
    under = ddp_step(logs[0]) if logs else None
    report = exec_dir / "report.json"
    if report.exists():
        for sc in json.loads(report.read_text()).get("scenarios", []):
            tests.append(f"{name}:{sc.get('id')}")
            if sc.get("outcome") != "pass":
                problems.append(f"{name}: outcome {sc.get('outcome')}: " + (sc.get("reason") or "")[:160] + " "
                                + "; ".join(f.get("message", "")[:160] for f in sc.get("findings", [])))
    else:
        problems.append(f"{name}: no report.json (see out/gpu/{log})")
    if under is None:
        problems.append(f"{name}: printed no ddp-step line (see out/gpu/{log})")
    return under
