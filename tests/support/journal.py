"""Waiting on a campaign's journal (one line per finished run) while its command runs in a subprocess."""

from __future__ import annotations

import time


def wait_rows(journal, n: int, proc, deadline_s: float = 240) -> None:
    """Wait (on state) until ``journal`` holds n finished runs; fail if ``proc`` ends first."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if journal.exists() and journal.read_text().count("\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"{journal}: fewer than {n} runs after {deadline_s} s")
