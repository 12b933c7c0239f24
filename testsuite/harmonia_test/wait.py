# SPDX-License-Identifier: GPL-2.0-or-later
"""Waiting in tests: on events, with one generous bound.

A test waits for something the product exposes (a state in the API, a counter of
/metrics, a log line, a file, a Slurm job state): wait_for() polls a predicate
until it holds.  The bound is not the behaviour under test, only a guard against
a hang, so it is one generous figure for every wait, WAIT seconds, scaled for
slow builds; a call may pass a longer one, never a shorter one.

Where a time bound IS the behaviour under test (a credential expires after 1 s,
a trickling client is cut within 5 s), the test writes it with scaled(), which
stretches it by the same factor under sanitizers.

  HARMONIA_SANITIZERS   yes when the tree was configured with
                        --enable-sanitizers (set by 'make check'; read from
                        the build's config.status otherwise)
  HARMONIA_TIME_SCALE   the factor itself (default 3 with sanitizers, else 1)
  HARMONIA_WAIT         WAIT before scaling (default 60)
"""
import os
import time

__all__ = ["SLOW", "WAIT", "scaled", "wait_for", "WaitTimeout"]


def _sanitizers():
    v = os.environ.get("HARMONIA_SANITIZERS")
    if v:
        return v == "yes"
    builddir = os.environ.get("HARMONIA_BUILDDIR",
                              os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
    try:
        with open(os.path.join(builddir, "config.status"), errors="replace") as f:
            return "--enable-sanitizers" in f.read()
    except OSError:
        return False


SLOW = float(os.environ.get("HARMONIA_TIME_SCALE") or (3 if _sanitizers() else 1))
WAIT = float(os.environ.get("HARMONIA_WAIT") or 60) * SLOW


def scaled(seconds):
    """A time bound that is the behaviour under test, for this build."""
    return seconds * SLOW


class WaitTimeout(AssertionError):
    """wait_for() gave up: names what it waited for and the last value seen."""


def wait_for(pred, what="condition", timeout=None, interval=0.05, report=None):
    """pred()'s first true value, polling every 'interval' seconds for at most
    max(timeout * SLOW, WAIT) seconds; else WaitTimeout naming 'what', the last
    value and, when given, report() (logs, states: what a person would look at)."""
    bound = max(WAIT, (timeout or 0) * SLOW)
    deadline = time.monotonic() + bound
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    msg = "timed out after %.0f s waiting for %s (last: %r)" % (bound, what, last)
    if report is not None:
        try:
            msg += "\n" + str(report())
        except Exception as e:       # the report must not hide the timeout
            msg += "\n(report failed: %s)" % e
    raise WaitTimeout(msg)
