"""Burns CPU in three functions with known shares of the thread's CPU
time (alpha 50%, beta 30%, gamma 20%), each in its own file, for the
agents' Python-frame tests. Modes:
  single   the main thread only
  threads  two threads, each running the schedule
  async    the schedule inside an asyncio coroutine (delta)
usage: pyshares.py MODE SECONDS
"""
import asyncio
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shares_alpha import alpha  # noqa: E402
from shares_beta import beta  # noqa: E402
from shares_gamma import gamma  # noqa: E402

SLICES = ((alpha, 0.050), (beta, 0.030), (gamma, 0.020))


def run_for(fn, secs):
    # The clock is read every few calls: a system call per call would
    # make run_for where a busy machine preempts the thread most often.
    end = time.thread_time() + secs
    while time.thread_time() < end:
        fn()
        fn()
        fn()
        fn()


def schedule(secs):
    end = time.thread_time() + secs
    while time.thread_time() < end:
        for fn, share in SLICES:
            run_for(fn, share)


async def delta(secs):
    await asyncio.sleep(0)
    schedule(secs)


def main(mode, secs):
    if mode == "single":
        schedule(secs)
    elif mode == "threads":
        t = threading.Thread(target=schedule, args=(secs,), name="worker")
        t.start()
        schedule(secs)
        t.join()
    elif mode == "async":
        asyncio.run(delta(secs))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
