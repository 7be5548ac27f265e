"""Device choice (CUDA when present, else CPU), hardware descriptions, and the memory this process may use."""

import os
import resource
import platform
from pathlib import Path

import torch


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_description(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    threads = torch.get_num_threads()
    return f"cpu ({threads} thread{'s' if threads != 1 else ''})"


def cpu_capability() -> str:
    """The CPU kernel level torch dispatches to (e.g. AVX2, AVX512). Float rounding in matmuls
    differs between levels, so a run is bit-reproducible only on the same level and torch build;
    records and provenance carry it so that a difference between machines can be told apart."""
    return torch.backends.cpu.get_cpu_capability()


def hardware_description() -> dict:
    """What a published table records about the machine that produced it."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        cpu = names[0] if names else cpu
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu, "cpu_cores": os.cpu_count(), "gpu": gpu, "cpu_capability": cpu_capability(),
            "torch": torch.__version__,
            "python": platform.python_version(), "os": platform.platform(terse=True)}


def available_memory() -> int:
    """Bytes this process may still allocate: the system's available memory
    (``MemAvailable``, else the free physical pages), under the address-space
    limit when one is set (``ulimit -v``)."""
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = 1 << 62  # unknown: no refusal on memory
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return min(available, soft) if soft != resource.RLIM_INFINITY else available
