"""Facts about the machine a benchmark ran on, shared by the benchmarks that record them.

The machine is shared (two cores, other people's evaluations), so a result is only readable with
the load beside it: every benchmark records the same facts the same way, from here.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def machine(*, onnxruntime: bool = True) -> dict[str, Any]:
    """CPU model, cores, memory, system, Python (and onnxruntime) versions, and the git commit."""
    cpu = ""
    mem_kb = 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
                break
    except (OSError, ValueError):
        pass  # not Linux: the facts /proc would give are left empty
    facts: dict[str, Any] = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_kb / 2**20, 1),
        "system": platform.platform(),
        "python": platform.python_version(),
    }
    if onnxruntime:
        import onnxruntime as ort

        facts["onnxruntime"] = ort.__version__
    facts["commit"] = git("rev-parse", "--short", "HEAD")
    # Uncommitted changes to tracked files make the commit an approximate label of the code.
    facts["dirty"] = bool(git("status", "--porcelain", "--untracked-files=no"))
    return facts


def git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def load_average() -> str:
    """The 1, 5 and 15-minute load averages, e.g. ``"0.31 1.20 2.04"``."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def uptime() -> str:
    """``uptime``'s line (the load averages with the time), or the load averages alone."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return load_average()


def busiest(n: int = 6) -> list[str]:
    """The busiest processes right now (``top`` in batch mode), to name a concurrent job."""
    try:
        out = subprocess.run(
            ["top", "-b", "-n", "1", "-w", "160"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    lines = out.splitlines()
    head = next((k for k, line in enumerate(lines) if line.lstrip().startswith("PID")), None)
    if head is None:
        return []
    return [" ".join(line.split()) for line in lines[head + 1 : head + 1 + n]]


def machine_busy_s() -> float:
    """CPU seconds every process of the machine has used since boot (/proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds of this process and its reaped children (ingestion workers, say)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def others_share(busy_s: float, own_s: float, wall_s: float) -> float | None:
    """The share of the machine's CPU that other processes took over ``wall_s`` seconds, from
    the differences of :func:`machine_busy_s` and :func:`own_cpu_s` over that time."""
    capacity = (os.cpu_count() or 1) * wall_s
    return max(0.0, busy_s - own_s) / capacity if capacity else None


def status_mib(field: str, pid: int | str = "self") -> float | None:
    """A memory field of ``/proc/<pid>/status`` (``VmRSS``, ``RssAnon``...) in MiB; ``None``
    once the process is gone or where there is no /proc."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def child_run(script: str, *args: str) -> dict[str, Any]:
    """Run ``script --one ARGS`` in a fresh Python process and return the JSON object it prints
    last (a run that must not share this process's memory, caches or loaded models)."""
    out = subprocess.run(
        [sys.executable, script, "--one", *args], check=True, capture_output=True, text=True
    ).stdout
    run: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    print(json.dumps(run), flush=True)
    return run


def run_record(command: str, load_before: str, *, onnxruntime: bool = True) -> dict[str, Any]:
    """What a result file says of its run: the command, when, on what, and the load before and
    after (call it when the run has ended)."""
    from datetime import UTC, datetime

    return {
        "command": command,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(onnxruntime=onnxruntime),
        "load_before": load_before,
        "load_after": load_average(),
    }


def write_json(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
