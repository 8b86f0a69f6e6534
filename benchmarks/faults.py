"""The fault table of issue 12: each fault, what the user sees, whether data was lost, and
whether ``docsight check --repair`` restored service.

Every fault is applied to a fresh copy of a small collection (the test corpus: a Markdown guide
and a text FAQ) and the commands are run as a user would, through the command line with --json.
A traceback anywhere, or a search that serves an old and a new version of a file together, is
recorded. The disk-full and read-only rows use a real tmpfs when this machine can mount one.

    python benchmarks/faults.py            # prints the table, writes benchmarks/results/faults.md
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from typer.testing import CliRunner  # noqa: E402

from docsight import DocSight  # noqa: E402
from docsight.cli.main import app  # noqa: E402
from docsight.settings import Settings  # noqa: E402
from fixtures import damage  # noqa: E402
from fixtures.corpus_fixtures import write_corpus  # noqa: E402
from fixtures.fake_llm import FakeLLM, hang, trickle  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "faults.md"
QUESTION = "How long is the warranty?"


@dataclass
class Row:
    fault: str
    sees: str
    lost: str
    restored: str
    traceback: bool = False
    mixed_versions: bool = False


def cli(collection: Path, *args: str | bytes) -> tuple[int, Any, bool]:
    """(exit code, JSON output or text, whether a traceback escaped)."""
    result = CliRunner().invoke(app, ["-c", str(collection), *args, "--json"])
    escaped = result.exception is not None and not isinstance(result.exception, SystemExit)
    try:
        return result.exit_code, json.loads(result.stdout), escaped
    except ValueError:
        return result.exit_code, result.stdout.strip()[:120], True


def seen(code: int, out: Any) -> str:
    if code == 0:
        return "works"
    if isinstance(out, dict) and "error" in out:
        message = out["error"]["message"]
        return f"`{out['error']['code']}`: {message[:110]}{'…' if len(message) > 110 else ''}"
    return f"exit {code}"


class Bench:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.corpus = write_corpus(base / "corpus")
        os.environ["DOCSIGHT_INGEST_ISOLATION"] = "none"
        self.template = base / "template"
        DocSight(self.template, settings=Settings(ingest={"isolation": "none"})).ingest(
            [self.corpus]
        )
        self.rows: list[Row] = []
        self.n = 0

    def copy(self, where: Path | None = None) -> Path:
        self.n += 1
        return damage.copy_collection(self.template, (where or self.base) / f"col{self.n}")

    def documents(self, collection: Path) -> int:
        code, out, _ = cli(collection, "docs")
        return len(out) if code == 0 else -1

    def repair_and_score(self, collection: Path, row: Row) -> None:
        code, report, escaped = cli(collection, "check", "--repair")
        row.traceback |= escaped
        kept = self.documents(collection)
        search_code, _, escaped = cli(collection, "search", "warranty years")
        row.traceback |= escaped
        ok = code == 0 and search_code == 0
        named = ", ".join(Path(p).name for p in report.get("reingest", [])) or "by id"
        row.lost = (
            "no"
            if kept == 2
            else f"{2 - kept} of 2 documents (repair names them: {named}); "
            "re-ingesting restores them"
        )
        row.restored = "yes" if ok else f"no (check exit {code}, search exit {search_code})"

    def damaged(self, fault: str, table: str) -> None:
        collection = self.copy()
        damage.DAMAGES[fault](collection, table)
        row = Row(f"{fault}{f' ({table})' if table else ''}", "", "", "")
        sights = []
        for command in (["search", "warranty"], ["check"]):
            code, out, escaped = cli(collection, *command)
            row.traceback |= escaped
            if command[0] == "check":
                codes = sorted({p["code"] for p in out.get("problems", [])})
                sights.append(f"check: {', '.join(codes) or 'consistent'}")
            else:
                sights.append(f"search: {seen(code, out)}")
        row.sees = "; ".join(sights)
        self.repair_and_score(collection, row)
        self.rows.append(row)

    def replacement(self) -> None:
        self.n += 1
        collection = self.base / f"replace{self.n}"
        folder = write_corpus(self.base / f"edit{self.n}")
        faq = folder / "faq.txt"
        faq.write_text((self.corpus / "faq.txt").read_text().replace("two years", "five years"))
        ds = DocSight(collection, settings=Settings(ingest={"isolation": "none"}))
        # The same documents, under this folder's paths, then the edit re-ingested with the old
        # version's removal failing (as a crash or ENOSPC between the two steps would leave it).
        ds.ingest([folder / "guide.md"])
        (folder / "faq.txt").write_text((self.corpus / "faq.txt").read_text())
        ds.ingest([faq])
        faq.write_text((self.corpus / "faq.txt").read_text().replace("two years", "five years"))

        def fail(_doc_id: str) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        ds.store.delete_document = fail  # type: ignore[method-assign]
        ds.ingest([faq])
        code, answer, escaped = cli(collection, "ask", QUESTION)
        quoted = answer.get("answer", "") if isinstance(answer, dict) else ""
        row = Row(
            "re-ingest of an edited file cut short before the old version is deleted",
            "",
            "",
            "",
            escaped,
            "two years" in quoted and "five years" in quoted,
        )
        _, report, _ = cli(collection, "check")
        codes = sorted({p["code"] for p in report["problems"]})
        which = (
            "only the new version"
            if "five years" in quoted and "two years" not in quoted
            else repr(quoted[:80])
        )
        row.sees = f"ask quotes {which}; check: {', '.join(codes) or 'consistent'}"
        code, _, escaped = cli(collection, "check", "--repair")
        versions = len(DocSight(collection).store.documents_by_source(str(faq.resolve())))
        row.lost = "no"
        row.restored = "yes (old version removed)" if code == 0 and versions == 1 else "no"
        row.traceback |= escaped
        self.rows.append(row)

    def disk_full(self) -> None:
        collection = self.copy()
        extra = self.base / f"extra{self.n}"
        extra.mkdir()
        (extra / "notes.md").write_text("# Notes\n\nThe hinge is covered for five years.\n")
        (extra / "spare.md").write_text("# Spares\n\nA spare hinge costs nine dollars.\n")
        from docsight.index.lance import LanceStore

        original = LanceStore._upsert
        state = {"calls": 0}

        def full(self: Any, name: str, data: Any, schema: Any) -> None:
            state["calls"] += 1
            if state["calls"] > 7:  # the first new file is stored, then the disk is full
                raise OSError(errno.ENOSPC, "No space left on device")
            original(self, name, data, schema)

        LanceStore._upsert = full  # type: ignore[method-assign]
        try:
            code, report, escaped = cli(collection, "ingest", str(extra))
        finally:
            LanceStore._upsert = original  # type: ignore[method-assign]
        statuses = sorted(f"{f['name']} {f['error_code'] or f['status']}" for f in report["files"])
        row = Row(
            "disk full while ingesting (ENOSPC from every write after the first file)",
            f"ingest --json exit {code}: {', '.join(statuses)}",
            "",
            "",
            escaped,
        )
        self.repair_and_score(collection, row)
        row.lost = "no (the file that did not fit is reported storage_full)"
        self.rows.append(row)
        self.real_disk_full()

    def real_disk_full(self) -> None:
        mount = self.base / "mnt"
        try:
            with damage.small_tmpfs(mount, 24):
                collection = self.copy(mount)
                extra = self.base / "extra-real"
                extra.mkdir()
                (extra / "notes.md").write_text("# Notes\n\n" + "The hinge is covered. " * 400)
                ballast = damage.fill(mount, leave_bytes=16 << 10)
                code, report, escaped = cli(collection, "ingest", str(extra), str(self.corpus))
                statuses = sorted(
                    f"{f['name']} {f['error_code'] or f['status']}" for f in report["files"]
                )
                row = Row(
                    "a real full disk (24 MiB tmpfs, 16 KiB left)",
                    f"ingest --json exit {code}: {', '.join(statuses)}",
                    "",
                    "",
                    escaped,
                )
                self.repair_and_score(collection, row)
                ballast.unlink()
                code, report, _ = cli(collection, "ingest", str(extra))
                row.lost = f"no; after freeing space the file is added ({report['counts']})"
                self.rows.append(row)
                self.read_only(mount)
        except BaseException as exc:  # pytest.skip outside pytest: no tmpfs here
            if type(exc).__name__ != "Skipped":
                raise
            self.rows.append(
                Row(
                    "a real full disk / read-only mount",
                    "not run: cannot mount a tmpfs here",
                    "",
                    "",
                )
            )

    def read_only(self, mount: Path) -> None:
        collection = self.copy(mount)
        with damage.remounted_read_only(mount):
            results = []
            escaped_any = False
            commands = (["search", "warranty"], ["check"], ["ingest", str(self.corpus)])
            for command in (*commands, ["check", "--repair"]):
                code, out, escaped = cli(collection, *command)
                escaped_any |= escaped
                name = " ".join(command[:2]) if command[0] == "check" else command[0]
                results.append(f"{name}: {seen(code, out).split(':')[0]}")
            self.rows.append(
                Row(
                    "a read-only collection (tmpfs remounted ro)",
                    "; ".join(results),
                    "no",
                    "n/a (reads work; writes refused)",
                    escaped_any,
                )
            )

    def models(self) -> None:
        collection = self.copy()
        for label, reply, env in (
            (
                "model trickles one byte every 0.2 s (DOCSIGHT_LLM_TIMEOUT=5)",
                trickle(0.2),
                {"DOCSIGHT_LLM_TIMEOUT": "5"},
            ),
            ("model never answers (default settings)", hang(600), {}),
        ):
            with FakeLLM() as fake:
                fake.default = reply
                saved = dict(os.environ)
                os.environ.update(
                    {
                        "DOCSIGHT_LLM_BASE_URL": fake.base_url,
                        "DOCSIGHT_LLM_MODEL": "fake",
                        "DOCSIGHT_LLM_CACHE": "false",
                        **env,
                    }
                )
                try:
                    started = time.monotonic()
                    _, answer, escaped = cli(collection, "ask", QUESTION)
                    seconds = time.monotonic() - started
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
            mode = answer.get("mode") if isinstance(answer, dict) else "?"
            self.rows.append(
                Row(
                    label,
                    f"a cited {mode} answer after {seconds:.1f} s, with a warning",
                    "no",
                    "n/a",
                    escaped,
                )
            )

    def inputs(self) -> None:
        collection = self.copy()
        cases: list[tuple[str, Callable[[], tuple[int, Any, bool]]]] = [
            (
                "question with invalid UTF-8 bytes (search --json)",
                lambda: cli(collection, "search", "warranty \udcff"),
            ),
            (
                "--image given a directory",
                lambda: cli(collection, "search", "x", "--image", str(self.base)),
            ),
            ("--image /dev/zero", lambda: cli(collection, "search", "x", "--image", "/dev/zero")),
        ]
        for label, run in cases:
            code, out, escaped = run()
            self.rows.append(Row(label, seen(code, out), "no", "n/a", escaped))
        try:
            DocSight(collection).search("warranty", k=100_000)
            sees = "accepted"
        except Exception as exc:  # the API's answer
            sees = f"`{getattr(exc, 'code', type(exc).__name__)}`: {exc}"
        self.rows.append(Row("API search with k=100000", sees, "no", "n/a"))


def table(rows: list[Row]) -> str:
    lines = [
        "| fault | what the user sees | data lost | `check --repair` restored service "
        "| traceback | stale + current together |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        flags = ["yes" if r.traceback else "no", "yes" if r.mixed_versions else "no"]
        cells = [r.fault, r.sees, r.lost, r.restored, *flags]
        escaped = (c.replace("|", "\\|").replace("\n", " ") for c in cells)
        lines.append("| " + " | ".join(escaped) + " |")
    return "\n".join(lines)


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="docsight-faults-") as tmp:
        yield Path(tmp)


def main() -> None:
    started = time.monotonic()
    with workdir() as base:
        bench = Bench(base)
        bench.models()
        bench.replacement()
        for fault, tables in (
            ("delete full-text index files", ["chunks"]),
            ("truncate full-text index files", ["pages"]),
            ("delete a data file", ["chunks", "documents"]),
            ("truncate a data file", ["elements"]),
            ("truncate the newest manifest", ["chunks"]),
            ("delete every manifest", ["documents"]),
            ("delete collection.json", [""]),
            ("truncate collection.json", [""]),
        ):
            for name in tables:
                bench.damaged(fault, name)
        bench.disk_full()
        bench.inputs()
        rows = bench.rows
    text = table(rows)
    print(text)
    bad = [r.fault for r in rows if r.traceback or r.mixed_versions]
    RESULTS.write_text(
        "# Fault table (issue 12)\n\n"
        "`python benchmarks/faults.py`: each fault applied to a fresh copy of a two-document "
        'collection, commands run through the CLI with `--json` as a user would. "Data lost" '
        "is after `check --repair`, before any re-ingest.\n\n"
        f"{text}\n\n"
        f"{len(rows)} faults, {len(bad)} with a traceback or mixed versions"
        f"{': ' + ', '.join(bad) if bad else ''}; {time.monotonic() - started:.0f} s on this "
        "machine.\n"
    )
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
