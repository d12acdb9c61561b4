"""Soak: memory of a long-running embedding loop, per 1,000 cycles.

A MemoryCache with 16 nodes where gangs arrive, run and finish (and are removed
from the cache), scheduled by Volcano's default configuration. Every 1,000 cycles
the script prints the traced Python memory (tracemalloc, after a garbage
collection) and the process's peak RSS; a loop that keeps nothing grows by
nothing after its warm-up (bounded caches fill: quantity parsing, task-name
indexes).

    python benchmarks/soak.py [--cycles 5000]
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from batchsched import MemoryCache, Scheduler
from test_embedding_faults import add_nodes, host_step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5000)
    args = parser.parse_args()
    cache = MemoryCache(now=1.0, keep_events=False)
    add_nodes(cache, 16)
    scheduler = Scheduler(cache)
    rng, serial = random.Random(1), [0]
    tracemalloc.start()
    started = time.perf_counter()
    print("cycles  traced MiB  peak RSS MiB  seconds")
    for cycle in range(1, args.cycles + 1):
        host_step(cache, rng, serial)
        scheduler.run_once()
        # The host consumes the cache's record of decisions (a real host acts on it).
        del cache.binds[:], cache.evictions[:], cache.unbinds[:]
        if cycle % 1000 == 0:
            gc.collect()  # sessions hold reference cycles: count only what is really kept
            traced = tracemalloc.get_traced_memory()[0] / 2**20
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{cycle:6d}  {traced:10.2f}  {rss:12.1f}  {time.perf_counter() - started:7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
