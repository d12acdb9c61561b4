"""``batchsched simulate``: the command of the simulation contract.

``batchsched simulate WORKLOAD [--config CONF] [--cluster CLUSTER] [--first-job K]
[--jobs N] [--until SECONDS] [--arrived-load F] [--seed N] [--schedule-period SECONDS]
[--output text|json] [--report DIR] [--no-progress]``

The workload's kind comes from its extension (``.swf``; ``.csv``: an Alibaba
``openb_pod_list_*.csv``, with ``--cluster openb_node_list_*.csv``;
``.yaml``/``.yml``/``.json``: batchsched's own workload format). Bad input is one line on stderr
naming the file and line or field, and exit status 2. A job that could never
start on the cluster (larger than it) is reported on stderr, left out of the
replay (the report lists it under ``skipped``), and the exit status is 2 after
the report is printed; a job that fits the cluster but never started is
listed under ``neverStarted``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, TextIO

import attrs

from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.conf import (
    SchedulerConfiguration,
    Tier,
    default_configuration,
    load_configuration,
)
from batchsched.errors import WorkloadError
from batchsched.framework.arguments import Arguments
from batchsched.kube.dra.scheduling import DraObjects
from batchsched.simulation.alibaba import gpu_trace_warnings
from batchsched.simulation.engine import MAX_SCHEDULE_PERIOD, Progress, Simulator
from batchsched.simulation.report import report, text_summary, write_report
from batchsched.simulation.workload import MOST_SECONDS, Workload

__all__ = ["add_arguments", "load_workload", "run"]

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def check_arrived_load(value: float | None, source: str) -> None:
    """``--arrived-load``: a positive finite multiple of the cluster's GPUs."""
    if value is not None and not (0 < value < math.inf):
        raise WorkloadError(f"--arrived-load must be a positive number, not {value}",
                            source=source)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", help="an .swf trace, an Alibaba GPU pod trace .csv "
                                         "(openb_pod_list_*.csv) or a workload .yaml/.json")
    parser.add_argument("--config", help="a Volcano scheduler configuration (YAML)")
    parser.add_argument("--cluster", help="a scenario file whose nodes and queues are the "
                                          "cluster, or an openb_node_list_*.csv")
    parser.add_argument("--first-job", type=int, default=0, metavar="K",
                        help="start at the job at this position of the trace (0-based)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="replay this many jobs (default: all from K on)")
    parser.add_argument("--until", type=float, default=None, metavar="SECONDS",
                        help="stop the clock this many simulated seconds after its "
                             "start (the first job's submit time)")
    parser.add_argument("--arrived-load", type=float, default=None, metavar="F",
                        help="GPU traces: stop arrivals at F x the cluster's GPUs")
    parser.add_argument("--arrival-order", choices=("trace", "sampled"), default="trace",
                        help="with --arrived-load: pods in trace order (default), or shuffled "
                             "and drawn again at random as the FGD paper's simulator does")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of any sampling and of the random policies")
    parser.add_argument("--schedule-period", type=float, default=None, metavar="SECONDS",
                        help="a session every SECONDS at most (default: after every event)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--report", metavar="DIR", help="write report.json and plots here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def load_workload(path: str | Path, cluster: str | Path | None = None, *,
                  arrived_load: float | None = None, first: int = 0, count: int | None = None,
                  seed: int = 0, arrival_order: str = "trace",
                  ) -> tuple[Workload, SchedulerConfiguration | None]:
    """The workload a file holds, on ``cluster`` if given (a scenario file or an
    ``openb_node_list_*.csv``), and the configuration the file carries (batchsched's
    own format has one). ``first`` and ``count`` keep a window of its jobs
    (:meth:`Workload.window`)."""
    from batchsched.scenario.loader import load_scenario, missing_queue_warning
    from batchsched.simulation.alibaba import alibaba_nodes, alibaba_workload
    from batchsched.simulation.scenario_workload import workload_from
    from batchsched.simulation.swf import swf_workload

    suffix = Path(path).suffix.lower()
    nodes: tuple[NodeInfo, ...] | None = None
    queues: tuple[QueueInfo, ...] | None = None
    cluster_objects: dict[str, Any] = {}
    cluster_dra: DraObjects | None = None
    if cluster is not None and Path(cluster).suffix.lower() == ".csv":
        nodes = alibaba_nodes(cluster)
    elif cluster is not None:
        scenario = load_scenario(cluster, config_required=False)  # its nodes and queues
        # The queues it declares (the default and root queues it did not declare give
        # way to the workload's own).
        nodes = scenario.nodes
        queues = tuple(queue for queue in scenario.queues
                       if queue.name not in scenario.implicit_queues)
        # And the objects that describe its nodes: each kind the file gives replaces
        # the workload's (hypernodes, node shards, ConfigMaps, DRA objects).
        cluster_objects = {field: value for field, value in (
            ("hyper_nodes", scenario.hyper_nodes), ("node_shards", scenario.node_shards),
            ("config_maps", scenario.config_maps)) if value}
        cluster_dra = scenario.dra
    if arrived_load is not None and suffix != ".csv":
        raise WorkloadError("--arrived-load applies to GPU pod traces (.csv)",
                            source=str(path))
    if arrival_order == "sampled" and first:
        # Sampled pods are drawn from the whole trace until the load: a window of them
        # would arrive below it.
        raise WorkloadError("--arrival-order sampled draws pods from the whole trace: it "
                            "takes no --first-job (or compare --windows)",
                            source=str(path))
    if arrival_order != "trace" and arrived_load is None:
        raise WorkloadError(f"--arrival-order {arrival_order} applies with --arrived-load "
                            "(the pods then arrive in that order, at no time of their own)",
                            source=str(path))
    configuration: SchedulerConfiguration | None = None
    if suffix == ".csv":
        if nodes is None:
            raise WorkloadError("a pod trace needs its nodes: --cluster openb_node_list_*.csv",
                                source=str(path))
        # Arrivals in trace order count the load from the window's first pod: the
        # window is where the replay starts.
        skipped = first if arrived_load is not None and arrival_order == "trace" else 0
        workload = alibaba_workload(path, nodes, arrived_load=arrived_load, seed=seed,
                                    arrival_order=arrival_order, first=skipped)
        first -= skipped
    elif suffix == ".swf":
        workload = swf_workload(path, nodes=nodes, first=first, count=count)
        first, count = 0, None  # already applied
    elif suffix in (".yaml", ".yml", ".json"):
        scenario = load_scenario(path, config_required=False)
        # A job of a queue neither file declares is listed as skipped (by
        # without_oversized): the loader's warning of it would say it twice.
        missing_queue = {missing_queue_warning(scenario.source, job.uid, job.queue)
                         for job in scenario.jobs}
        for warning in scenario.warnings:
            if warning not in missing_queue:
                print(f"batchsched: warning: {warning}", file=sys.stderr)
        workload = workload_from(scenario)
        if queues is not None:
            # The cluster file's queues, and the workload's own that it does not have.
            mine = {queue.name for queue in queues}
            queues = (*queues, *(queue for queue in workload.queues if queue.name not in mine))
        if scenario.configuration_given:
            configuration = scenario.configuration
        if nodes is not None:
            workload = attrs.evolve(workload, nodes=nodes)
    else:
        raise WorkloadError(f"unknown workload kind {suffix or '(no extension)'!r}: "
                            "expected .swf, .csv, .yaml, .yml or .json", source=str(path))
    if queues:
        workload = attrs.evolve(workload, queues=tuple(queues))
    if cluster_objects:
        workload = attrs.evolve(workload, **cluster_objects)
    if cluster_dra is not None and cluster_dra:
        # Device classes and slices describe the cluster; claims and claim templates
        # are the workload's pods' (the cluster file's are added, the workload's win).
        own = workload.dra
        workload = attrs.evolve(workload, dra=attrs.evolve(
            own,
            device_classes=cluster_dra.device_classes or own.device_classes,
            resource_slices=cluster_dra.resource_slices or own.resource_slices,
            resource_claims={**cluster_dra.resource_claims, **own.resource_claims},
            claim_templates={**cluster_dra.claim_templates, **own.claim_templates}))
    # The report names the workload by its file, whatever its kind.
    workload = attrs.evolve(workload, name=Path(path).name)
    return workload.window(first, count), configuration


#: Plugin arguments the simulator fills from the run when the configuration leaves
#: them out: the seed of a random policy, the trace's pod mix for FGD.
_SEED_ARGUMENTS = {"gpu-random": "gpu-random.seed"}
_POD_MIX_ARGUMENTS = {"fgd": "fgd.typicalPods"}


def with_workload_hints(configuration: SchedulerConfiguration, workload: Workload, *,
                        seed: int) -> SchedulerConfiguration:
    """``configuration`` with ``--seed`` given to the random policies and the trace's
    pod mix to the plugins that plan for the workload to come, where the
    configuration does not set them itself."""
    tiers = []
    for tier in configuration.tiers:
        options = []
        for option in tier.plugins:
            values = dict(option.arguments)
            key = _SEED_ARGUMENTS.get(option.name)
            if key is not None and key not in values:
                values[key] = seed
            key = _POD_MIX_ARGUMENTS.get(option.name)
            if key is not None and key not in values and workload.pod_mix:
                values[key] = [dict(kind) for kind in workload.pod_mix]
            options.append(attrs.evolve(option, arguments=Arguments(values)))
        tiers.append(Tier(tuple(options)))
    return attrs.evolve(configuration, tiers=tuple(tiers))


def _progress_bar(enabled: bool, total: int) -> tuple[Progress | None, Any]:
    if not enabled or not sys.stderr.isatty():
        return None, None
    try:
        from tqdm import tqdm
    except ImportError:
        return None, None
    bar = tqdm(total=total, unit="job", file=sys.stderr, leave=False)

    def progress(done: int, _total: int) -> None:
        bar.update(done - bar.n)

    return progress, bar


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Carry out ``batchsched simulate`` (errors propagate as BatchSchedError)."""
    source = str(args.workload)
    if args.first_job < 0 or (args.jobs is not None and args.jobs < 0):
        raise WorkloadError("--first-job and --jobs must not be negative", source=source)
    # The replay's own checks, said of the options before the workload is read.
    if args.until is not None and not 0 <= args.until <= MOST_SECONDS:  # NaN fails it
        raise WorkloadError(f"--until must be a number of seconds from 0 to "
                            f"{MOST_SECONDS:g}, not {args.until:g}", source=source)
    if args.schedule_period is not None and not 0 < args.schedule_period <= MAX_SCHEDULE_PERIOD:
        raise WorkloadError(f"--schedule-period must be a positive number of seconds up to "
                            f"{MAX_SCHEDULE_PERIOD:g}, not {args.schedule_period:g}",
                            source=source)
    check_arrived_load(args.arrived_load, source)
    if args.report and Path(args.report).exists() and not Path(args.report).is_dir():
        # Refused before the replay, which may take long, rather than after it.
        raise WorkloadError("--report: not a directory", source=args.report)
    workload, own_configuration = load_workload(
        args.workload, args.cluster, arrived_load=args.arrived_load,
        first=args.first_job, count=args.jobs, seed=args.seed, arrival_order=args.arrival_order,
    )
    if args.config:
        configuration = load_configuration(args.config)
    else:
        configuration = own_configuration or default_configuration()
    workload = workload.without_oversized(configuration)
    for skipped in workload.skipped:
        err.write(f"{skipped.origin}: job {skipped.job} skipped: {skipped.reason}\n")
    warned = gpu_trace_warnings(workload, configuration)
    if warned is not None:
        err.write(warned + "\n")
    configuration = with_workload_hints(configuration, workload, seed=args.seed)
    progress, bar = _progress_bar(not args.no_progress, len(workload.jobs))
    try:
        simulator = Simulator(workload, configuration, until=args.until,
                              schedule_period=args.schedule_period, progress=progress)
        timeline = simulator.run()
    finally:
        if bar is not None:
            bar.close()
    data = report(workload, timeline, sessions=simulator.sessions)
    if args.report:
        try:
            written = write_report(data, args.report)
        except OSError as exc:
            raise WorkloadError(f"--report: cannot write: {exc.strerror or exc}",
                                source=args.report) from exc
        if len(written) == 1:
            err.write("batchsched: note: report.json only; the plots need matplotlib "
                      "(pip install 'batchsched[sim]')\n")
    if args.output == "json":
        out.write(json.dumps(data, indent=1) + "\n")
    else:
        out.write(text_summary(data) + "\n")
    left_out = timeline.left_out(workload.name)
    for line in left_out:
        err.write(line + "\n")
    return EXIT_BAD_INPUT if left_out or any(s.oversized for s in workload.skipped) \
        else EXIT_OK
