"""``batchsched compare``: several configurations replayed on the same workload, side by side.

Each configuration is replayed on each window of the workload (``--windows
K1,K2,... --jobs N``, or the whole workload); the replays are independent, so
they run in parallel: in local processes (``--workers``), or on a
dask.distributed cluster (``--dask ADDRESS``, with the ``[dask]`` extra
installed). Each replay is exactly ``batchsched simulate`` on that window.
The table shows, per configuration, the mean over the windows of each metric.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TextIO

import attrs

from batchsched.errors import BatchSchedError, WorkloadError
from batchsched.simulation.command import EXIT_BAD_INPUT, EXIT_OK, check_arrived_load

__all__ = ["Replay", "add_arguments", "replay", "run", "sweep"]

_SHOWN = ("averageBoundedSlowdown", "averageWait", "averageResponse", "utilization")


@attrs.frozen
class Replay:
    """One replay of a sweep: what ``batchsched simulate`` would be given."""

    workload: str
    config: str | None
    cluster: str | None = None
    first_job: int = 0
    jobs: int | None = None
    arrived_load: float | None = None
    arrival_order: str = "trace"
    seed: int = 0


def replay(spec: Replay) -> dict[str, Any]:
    """Run one replay and return its metrics (a top-level function: it is shipped to
    worker processes and dask workers)."""
    from batchsched.conf import default_configuration, load_configuration
    from batchsched.simulation.alibaba import gpu_trace_warnings
    from batchsched.simulation.command import load_workload, with_workload_hints
    from batchsched.simulation.engine import Simulator

    # The loader's warnings go back with the metrics: compare says each once, and a
    # dask worker's stderr is not the user's.
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        workload, own = load_workload(spec.workload, spec.cluster,
                                      arrived_load=spec.arrived_load, first=spec.first_job,
                                      count=spec.jobs, seed=spec.seed,
                                      arrival_order=spec.arrival_order)
    configuration = (load_configuration(spec.config) if spec.config
                     else own or default_configuration())
    workload = workload.without_oversized(configuration)
    warned = gpu_trace_warnings(workload, configuration)
    if warned is not None:
        said.write(warned + "\n")
    # What simulate gives the plugins from the run (the seed, the trace's pod mix):
    # a replay of a sweep decides as the same simulate would.
    configuration = with_workload_hints(configuration, workload, seed=spec.seed)
    simulator = Simulator(workload, configuration)
    timeline = simulator.run()
    metrics: dict[str, Any] = timeline.metrics()
    metrics["sessions"] = simulator.sessions
    metrics["leftOut"] = timeline.left_out(workload.name)
    # What simulate reports on stderr, for compare to report as it does.
    metrics["skipped"] = [[s.origin, s.job, s.reason, s.oversized] for s in workload.skipped]
    metrics["warnings"] = said.getvalue().splitlines()
    return metrics


def sweep(specs: Sequence[Replay], *, workers: int = 1, dask_address: str | None = None,
          run_one: Callable[[Replay], dict[str, Any]] = replay) -> list[dict[str, Any]]:
    """The metrics of every replay, in order, computed in parallel."""
    if workers < 1:
        raise BatchSchedError(f"--workers {workers}: at least one process runs the replays")
    if dask_address is not None:
        try:
            from distributed import Client
        except ImportError:
            raise BatchSchedError("--dask needs the [dask] extra: pip install "
                                  "'batchsched[dask]'") from None
        client = _connected(Client, dask_address)
        with client:
            futures = client.map(run_one, list(specs), pure=False)
            return list(client.gather(futures))
    if workers <= 1 or len(specs) <= 1:
        return [run_one(spec) for spec in specs]
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(run_one, specs))
    except BrokenProcessPool:
        raise BatchSchedError(f"a replay's worker process died (killed, or out of memory): "
                              f"try fewer --workers than {workers}") from None


#: How long a dask scheduler has to answer (distributed's own connect timeout is 30 s,
#: but a server that accepts the connection and never speaks holds the client forever).
DASK_CONNECT_SECONDS = 60.0


def _connected(client_class: Any, address: str) -> Any:
    """A dask client of the scheduler at ``address``, or a one-line error: nothing
    there, something else there (a web server answering garbage), or no answer."""
    outcome: dict[str, Any] = {}
    lock = threading.Lock()

    def connect() -> None:
        try:
            client = client_class(address)
        except BaseException as exc:  # reported below, whatever it is
            outcome["error"] = exc
            return
        with lock:
            if outcome.get("abandoned"):
                with contextlib.suppress(Exception):
                    client.close()  # too late: no run uses it
            else:
                outcome["client"] = client

    thread = threading.Thread(target=connect, name="dask-connect", daemon=True)
    thread.start()
    thread.join(DASK_CONNECT_SECONDS)
    with lock:
        if "client" not in outcome and "error" not in outcome:
            outcome["abandoned"] = True
            raise BatchSchedError(f"--dask {address}: no dask scheduler answered in "
                                  f"{DASK_CONNECT_SECONDS:g} s")
    error = outcome.get("error")
    if isinstance(error, (KeyboardInterrupt, SystemExit)):
        raise error
    if isinstance(error, (OSError, ValueError, TypeError)):  # no scheduler, or no address
        raise BatchSchedError(f"--dask {address}: {error}") from None
    if error is not None:
        raise BatchSchedError(f"--dask {address}: not a dask scheduler there "
                              f"({type(error).__name__}: {str(error)[:200]})") from None
    return outcome["client"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", help="a trace or workload, as for simulate")
    parser.add_argument("--config", action="append", required=True, metavar="CONF",
                        help="a configuration: a column of the table (give it once per "
                             "configuration)")
    parser.add_argument("--cluster", help="the cluster, as for simulate")
    parser.add_argument("--windows", help="comma-separated start positions (0-based)")
    parser.add_argument("--jobs", type=int, default=None, help="jobs per window")
    parser.add_argument("--arrived-load", type=float, default=None)
    parser.add_argument("--arrival-order", choices=("trace", "sampled"), default="trace",
                        help="with --arrived-load, as for simulate")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of any sampling and of the random policies")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--dask", metavar="ADDRESS", help="a dask.distributed scheduler address")
    parser.add_argument("--output", choices=("text", "json"), default="text")


def _windows(text: str | None) -> list[int]:
    if not text:
        return [0]
    try:
        windows = [int(part) for part in text.split(",")]
    except ValueError:
        raise BatchSchedError(f"--windows {text!r}: expected positions such as 0,1024") from None
    twice = sorted({first for first in windows if windows.count(first) > 1})
    if twice:
        # The mean would count that window twice.
        raise BatchSchedError(f"--windows {text!r}: position(s) {', '.join(map(str, twice))} "
                              "given twice")
    return windows


def run(args: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """Carry out ``batchsched compare``: the table on ``out``; the jobs a replay left
    out on ``err``, one line each as simulate writes them, and exit status 2 when one
    could never start or a replay left one waiting (the table is still given)."""
    windows = _windows(args.windows)
    source = Path(args.workload).name
    if any(first < 0 for first in windows) or (args.jobs is not None and args.jobs < 0):
        raise WorkloadError("--windows and --jobs must not be negative", source=source)
    check_arrived_load(args.arrived_load, source)
    # One file however it is spelt (a/x.yaml, ./a/x.yaml).
    files = [Path(config).resolve() for config in args.config]
    repeated = next((config for i, config in enumerate(args.config)
                     if files[i] in files[:i]), None)
    if repeated is not None:
        raise BatchSchedError(f"--config {repeated} given twice: each configuration is a "
                              "column")
    from batchsched.conf import load_configuration
    from batchsched.framework.arguments import collect_warnings
    from batchsched.framework.registry import default_registry
    from batchsched.scheduler import check_builds

    # Refused before any replay, not after the first ones: a configuration that does
    # not load, names a plugin or action no distribution provides or gives one
    # arguments it refuses, and a window past the trace (the last window read alone,
    # its loader warnings left to the replays, as the plugins' are).
    for config in args.config:
        configuration = load_configuration(config)
        configuration.validate(default_registry())
        with collect_warnings():
            check_builds(configuration, default_registry())
    if windows and max(windows) > 0:
        from batchsched.simulation.command import load_workload

        with contextlib.redirect_stderr(io.StringIO()):
            load_workload(args.workload, args.cluster, arrived_load=args.arrived_load,
                          first=max(windows), count=1, seed=args.seed,
                          arrival_order=args.arrival_order)

    def here(path: str | None) -> str | None:
        # A dask worker runs elsewhere: it gets the paths as they are from here.
        return None if path is None else str(Path(path).resolve())

    specs = [Replay(here(args.workload) or args.workload, here(config) or config,
                    here(args.cluster), first, args.jobs, args.arrived_load,
                    args.arrival_order, args.seed)
             for config in args.config for first in windows]
    # The replays read the files by their full paths: what they say names them as
    # given, as simulate does.
    given = {here(path): path for path in (args.workload, args.cluster, *args.config)
             if path is not None}
    try:
        results = sweep(specs, workers=args.workers, dask_address=args.dask)
    except BatchSchedError as exc:
        named = _as_given(str(exc), given)
        if named == str(exc):
            raise
        raise BatchSchedError(named) from exc
    if err is not None:
        for line in dict.fromkeys(line for metrics in results
                                  for line in metrics.get("warnings", ())):
            err.write(_as_given(line, given) + "\n")
    reported: set[tuple[str, str, str]] = set()
    incomplete = False  # a job skipped as never fitting, or left out by a replay
    for metrics in results:
        for origin, job, reason, never_fits in metrics.get("skipped", ()):
            incomplete = incomplete or never_fits
            if (origin, job, reason) not in reported:
                reported.add((origin, job, reason))
                if err is not None:
                    err.write(_as_given(f"{origin}: job {job} skipped: {reason}", given)
                              + "\n")
    # A job a replay left waiting or running: the averages leave it out (said once per
    # configuration, which it names: another configuration may start the job).
    for index, config in enumerate(args.config):
        rows = results[index * len(windows):(index + 1) * len(windows)]
        for line in dict.fromkeys(line for row in rows for line in row.get("leftOut", ())):
            incomplete = True
            if err is not None:
                err.write(f"{_as_given(line, given)} (--config {config})\n")
    table: dict[str, dict[str, float | None]] = {}
    for index, config in enumerate(args.config):
        rows = results[index * len(windows):(index + 1) * len(windows)]
        # An average no replay has (none of its jobs finished) is left out of the mean.
        # None (null, n/a in text) when no replay has it, as simulate writes it.
        table[config] = {key: statistics.fmean(values) if values else None
                         for key in _SHOWN
                         for values in ([row[key] for row in rows
                                         if row.get(key) is not None],)}
        if all("gpuAllocationRatio" in row for row in rows):
            table[config]["gpuAllocationRatio"] = statistics.fmean(
                row["gpuAllocationRatio"] for row in rows)
    if args.output == "json":
        out.write(json.dumps({"workload": Path(args.workload).name, "windows": windows,
                              "jobs": args.jobs, "configurations": table}, indent=1) + "\n")
    else:
        out.write(_format(table) + "\n")
    return EXIT_BAD_INPUT if incomplete else EXIT_OK


def _labels(configs: Iterable[str]) -> list[str]:
    """Each configuration's column label: its file's stem, or the path as given when
    two configurations share a stem."""
    configs = list(configs)
    stems = [Path(config).stem for config in configs]
    return [stem if stems.count(stem) == 1 else config
            for stem, config in zip(stems, configs, strict=True)]


def _format(table: dict[str, dict[str, float | None]]) -> str:
    names = _labels(table)
    keys: list[str] = []
    for row in table.values():
        keys.extend(key for key in row if key not in keys)
    width = max(len(key) for key in keys) if keys else 10
    columns = [max(len(name), 12) for name in names]
    lines = [" " * width + "  " + "  ".join(n.rjust(c) for n, c in zip(names, columns,
                                                                         strict=True))]
    for key in keys:
        cells: Iterable[str] = (_cell(row.get(key)).rjust(c)
                                for row, c in zip(table.values(), columns, strict=True))
        lines.append(key.ljust(width) + "  " + "  ".join(cells))
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _as_given(line: str, given: dict[str | None, str]) -> str:
    """``line`` with the full path it names written as the command line gave it."""
    for full, path in given.items():
        if full and full + ":" in line:
            return line.replace(full + ":", path + ":", 1)
    return line
