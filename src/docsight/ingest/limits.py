"""The limits a worker process runs under (:mod:`docsight.ingest.worker`): address space, CPU
seconds per job, image sizes, no core files, death with the parent; and its own peak memory."""

from __future__ import annotations

import contextlib
import math
import resource
import signal
import warnings

from docsight.settings import IngestSettings

#: Address space a worker may map beyond its memory cap: thread stacks, malloc arenas and
#: onnxruntime's reservations are mapped but mostly never touched.
ADDRESS_SPACE_SLACK_MB = 3072


def address_space_mb(limits: IngestSettings) -> int | None:
    """The worker's address-space limit in MiB, or ``None`` for none."""
    if limits.address_space_mb < 0:
        return None
    return limits.address_space_mb or limits.memory_mb + ADDRESS_SPACE_SLACK_MB


def harden(limits: IngestSettings) -> None:
    """Process-wide limits and signal dispositions of a worker."""
    # Ctrl-C goes to the whole process group; the parent decides what to do with the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Crashes are expected here: no core files in the user's directory.
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    address_space = address_space_mb(limits)
    if address_space is not None:
        _lower_limit(resource.RLIMIT_AS, address_space << 20)
    with contextlib.suppress(Exception):
        # Die with the parent: a hung worker must not outlive a killed ingest.
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def limit_pillow(max_pixels: int) -> None:
    from PIL import Image

    # Pillow's own bomb check, at the configured limit, for every decoder a parser reaches (the
    # image parser sets it too); between the limit and twice it Pillow only warns: refuse.
    Image.MAX_IMAGE_PIXELS = max_pixels
    warnings.simplefilter("error", Image.DecompressionBombWarning)


def _lower_limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(which, (value, hard))


def arm_cpu_limit(cpu_at_start: float, cpu_s: float | None) -> None:
    """Let the kernel send SIGXCPU once this job has used ``cpu_s`` CPU seconds.

    RLIMIT_CPU counts the whole life of the process, so the soft limit moves with every job.
    """
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = hard if cpu_s is None else math.ceil(cpu_at_start + cpu_s)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def reset_peak_rss() -> None:
    # Writing 5 resets the kernel's peak resident set size (VmHWM) of this process.
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def own_peak_rss_mb() -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None
