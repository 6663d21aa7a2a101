"""Real-time scheduling of the node's process, opt-in (docs/guides/ros2.md, "Real-time
scheduling"), as ros2_control's ``ros2_control_node`` offers it under the same parameter names:
``thread_priority`` puts the loop thread (it steps and publishes) and the middleware's threads
(they deliver the commands the loop waits on in lock-step) under SCHED_FIFO at that priority
(1-99; 0 = off, the default), ``lock_memory`` locks the process's pages in RAM (mlockall) so a
cycle never waits on a page fault. Where the system refuses (no CAP_SYS_NICE and an
RLIMIT_RTPRIO below the priority, no CAP_IPC_LOCK and an RLIMIT_MEMLOCK too small, or not
Linux) the node goes on at normal priority and says why, once. No rclpy here.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from dataclasses import dataclass

MCL_CURRENT, MCL_FUTURE = 1, 2  # <sys/mman.h> (Linux): pages mapped now, and mapped later
MAX_PRIORITY = 99  # SCHED_FIFO priorities are 1-99 on Linux (sched_get_priority_max)
HOW_TO = (
    "allow it with `ulimit -r 99` (or `rtprio 99` in /etc/security/limits.conf), with CAP_SYS_NICE "
    "(docker run --cap-add=sys_nice --ulimit rtprio=99), or run as root"
)
HOW_TO_LOCK = (
    "allow it with `ulimit -l unlimited` (or `memlock unlimited` in /etc/security/limits.conf), "
    "with CAP_IPC_LOCK, or run as root"
)


@dataclass(frozen=True)
class Scheduling:
    """What ``apply`` obtained: the policy name and priority of the loop thread, the number of
    threads set, whether memory is locked, and a warning per refused request (empty when all held)."""

    policy: str = "SCHED_OTHER"
    priority: int = 0
    threads: int = 0
    memory_locked: bool = False
    warnings: tuple[str, ...] = ()


def thread_ids() -> list[int]:
    """The ids of this process's threads (Linux: /proc/self/task), the calling one first."""
    own = threading.get_native_id()
    try:
        others = [int(t) for t in os.listdir("/proc/self/task") if int(t) != own]
    except OSError:
        others = []
    return [own, *others]


def in_effect() -> tuple[str, int]:
    """(policy name, priority) of the calling thread, read back from the kernel."""
    if not hasattr(os, "sched_getscheduler"):
        return "SCHED_OTHER", 0
    policy = os.sched_getscheduler(0)
    names = {os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR", os.SCHED_OTHER: "SCHED_OTHER"}
    return names.get(policy, str(policy)), os.sched_getparam(0).sched_priority


def lock_all_memory() -> str | None:
    """mlockall(MCL_CURRENT | MCL_FUTURE) through libc; None when done, else why not."""
    if sys.platform != "linux":
        return f"mlockall is Linux only (this is {sys.platform})"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
        return os.strerror(ctypes.get_errno())
    return None


def apply(thread_priority: int, lock_memory: bool) -> Scheduling:
    """SCHED_FIFO at ``thread_priority`` (0: leave the scheduling alone) for the calling thread
    and every other thread of the process, and mlockall when ``lock_memory``. Call it from the
    loop thread; threads created later inherit its policy."""
    warnings: list[str] = []
    locked = False
    if lock_memory:
        why = lock_all_memory()
        locked = why is None
        if why is not None:
            warnings.append(f"lock_memory: memory not locked ({why}); {HOW_TO_LOCK}")
    n = 0
    if thread_priority > 0:
        if not hasattr(os, "sched_setscheduler"):
            warnings.append(f"thread_priority {thread_priority}: SCHED_FIFO is Linux only; running at normal priority")
        else:
            param = os.sched_param(thread_priority)
            for k, tid in enumerate(thread_ids()):
                try:
                    os.sched_setscheduler(0 if k == 0 else tid, os.SCHED_FIFO, param)
                    n += 1
                except ProcessLookupError:  # a thread that ended meanwhile
                    continue
                except OSError as e:
                    warnings.append(
                        f"thread_priority {thread_priority}: SCHED_FIFO refused ({e.strerror}); running at normal "
                        f"priority; {HOW_TO}"
                    )
                    break
    policy, priority = in_effect()
    return Scheduling(policy, priority, n, locked, tuple(warnings))
