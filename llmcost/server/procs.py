"""Kernel processes of a server, read from /proc (Linux): for the load benchmark and the
server tests, which must count only their own server's kernels on a shared machine."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    return int(stat.rsplit(")", 1)[1].split()[1])


def kernel_pids(server_pid: int) -> list[int]:
    """Pids of the ipykernel processes started by ``server_pid`` (its direct children)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if _ppid(pid) != server_pid:
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in cmd:
            out.append(pid)
    return out


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` [bytes]; 0 once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


#: a kernel's id: in its page's config, its websocket's URL and its connection file's name
KERNEL_ID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def kernel_ids(server_pid: int) -> set[str]:
    """Ids of the live kernels started by ``server_pid`` (each connection file names one)."""
    out = set()
    for pid in kernel_pids(server_pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        out.update(re.findall(rf"kernel-({KERNEL_ID})\.json", cmd))
    return out


def page_kernel_ids(html: str) -> set[str]:
    """The kernel a rendered Voila page connects to, from its page config
    (``"kernelId": "<id>"``); empty when the HTML names none."""
    return set(re.findall(rf'"kernelId": *"({KERNEL_ID})"', html))


def free_port() -> int:
    """A free TCP port on the loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(proc: subprocess.Popen, port: int, timeout_s: float, log: Path | None = None) -> None:
    """Return once ``port`` on the loopback answers; stop ``proc`` and raise (with the end
    of its ``log``) if it exits first or ``timeout_s`` passes."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    exited = proc.poll() is not None
    stop_server(proc)
    tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
    what = "exited" if exited else f"did not open port {port} in {timeout_s:g} s"
    raise RuntimeError(f"server {what}; log {log}:\n{tail}")


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group; kill any kernel that outlives it (kernels run in
    their own sessions, outside the group)."""
    kernels = kernel_pids(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    for pid in kernels:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    log = getattr(proc, "log_file", None)
    if log is not None:
        log.close()
