"""Whether a process of this host is still the one it was: pid plus start time (Linux `/proc`),
so a recycled pid is not mistaken for it. Run ownership and the removal of a dead writer's
temporary files ask it."""

from __future__ import annotations

import os
from pathlib import Path


def process_start_time(pid: int) -> str:
    """The start time of process `pid` in clock ticks since boot (Linux `/proc`), "" if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # Fields after the parenthesized command name (which may contain spaces): state is field 3,
    # starttime field 22.
    return stat.rsplit(")", 1)[1].split()[19]


def is_zombie(pid: int) -> bool:
    """Whether process `pid` has ended and waits for its parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def process_ended(pid: int, started: str) -> bool:
    """Whether process `pid` of this host, started at `started` ("" if unknown), has ended (its
    pid is gone, a zombie, or another process's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a process of another user holds the pid: alive, but maybe not the same one
    if is_zombie(pid):
        return True
    return bool(started) and process_start_time(pid) not in ("", started)
