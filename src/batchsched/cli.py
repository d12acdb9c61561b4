"""The ``batchsched`` command line.

``batchsched run SCENARIO [--output json|text] [--scores] [--config FILE]``
    run one session and print its decisions;
``batchsched check SCENARIO_OR_DIR...``
    compare each scenario's decisions with its ``expect`` (exit 1 if any differ);
``batchsched plugins``
    list discovered actions and plugins with the distribution providing each;
``batchsched conf validate FILE``
    check a Volcano scheduler configuration;
``batchsched simulate WORKLOAD [...]``
    replay a workload over time (see :mod:`batchsched.simulation.command`);
``batchsched explain SCENARIO (--job NS/NAME | --task NS/NAME) [--output json]``
    why a job or task is (not) placed, plugin by plugin;
``batchsched compare WORKLOAD --config A --config B [...]``
    replay it under several configurations, side by side;
``batchsched import kubectl DUMP [-o SCENARIO] [--config CONFIGMAP] [--now TIME]``
    convert ``kubectl get ... -o json`` into a scenario (``run`` and ``explain``
    also read such a dump directly).

Bad input is one line on stderr and exit code 2 (``--debug`` for a traceback).
"""

from __future__ import annotations

import argparse
import gc
import io
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from batchsched._version import __version__
from batchsched.errors import BatchSchedError

__all__ = ["main"]

EXIT_OK, EXIT_DIFFER, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="batchsched", description="Volcano's batch-scheduling decisions without Kubernetes."
    )
    parser.add_argument("--version", action="version", version=f"batchsched {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one scheduling session on a scenario")
    run.add_argument("scenario")
    run.add_argument("--output", choices=("json", "text"), default="text")
    run.add_argument("--scores", action="store_true",
                     help="include node-order scores of every task on every feasible node")
    run.add_argument("--config", help="a Volcano scheduler configuration replacing the scenario's")
    _add_debug(run)

    check = sub.add_parser("check", help="compare scenarios' decisions with their expect")
    check.add_argument("paths", nargs="+", metavar="SCENARIO_OR_DIR")
    _add_debug(check)

    plugins = sub.add_parser("plugins", help="list discovered actions and plugins")
    _add_debug(plugins)

    conf = sub.add_parser("conf", help="scheduler configuration tools")
    conf_sub = conf.add_subparsers(dest="conf_command", required=True)
    validate = conf_sub.add_parser("validate", help="check a Volcano scheduler configuration")
    validate.add_argument("file")
    validate.add_argument("--strict", action="store_true",
                          help="exit 1 when a plugin or action ignores part of the file")
    _add_debug(validate)

    from batchsched.simulation import command as simulate_command

    simulate = sub.add_parser("simulate", help="replay a workload over time through sessions")
    simulate_command.add_arguments(simulate)
    _add_debug(simulate)

    from batchsched.simulation import sweep as compare_command

    explain = sub.add_parser("explain", help="why a job or task is (not) placed")
    explain.add_argument("scenario")
    target = explain.add_mutually_exclusive_group(required=True)
    target.add_argument("--job", metavar="NS/NAME")
    target.add_argument("--task", metavar="NS/NAME")
    explain.add_argument("--output", choices=("text", "json"), default="text")
    explain.add_argument("--config",
                         help="a Volcano scheduler configuration replacing the scenario's")
    explain.add_argument("--counterfactuals", action="store_true",
                         help="also search the smallest changes that let it start (slower)")
    explain.add_argument("--predict-start", action="store_true",
                         help="also replay the cluster forward to say when it starts "
                              "(run times from batchsched.io/run-time or "
                              "batchsched.io/requested-runtime)")
    _add_debug(explain)

    compare = sub.add_parser("compare", help="replay a workload under several configurations")
    compare_command.add_arguments(compare)
    _add_debug(compare)

    imports = sub.add_parser("import", help="convert a real cluster's state into a scenario")
    import_sub = imports.add_subparsers(dest="import_command", required=True)
    kubectl = import_sub.add_parser(
        "kubectl", help="from `kubectl get nodes,pods,podgroups,queues,priorityclasses,"
        "poddisruptionbudgets -A -o json`")
    kubectl.add_argument("dump", metavar="DUMP")
    kubectl.add_argument("-o", "--output", metavar="SCENARIO",
                         help="write the scenario here (default: standard output)")
    kubectl.add_argument("--config", metavar="CONFIGMAP",
                         help="Volcano's scheduler ConfigMap (or configuration), replacing "
                         "the dump's")
    kubectl.add_argument("--now", metavar="TIME", help="the session clock (RFC 3339 or "
                         "seconds since the epoch; default: real time)")
    _add_debug(kubectl)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv``; ``None`` means this process's own
    arguments (``sys.argv``), and then that the process ends when main returns."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(levelname)s: %(message)s", stream=sys.stderr)
    out = cast(TextIO, _ReaderMayLeave(sys.stdout))
    try:
        code = _command(args, out, process_ends=argv is None)
        out.flush()
        return code
    except BatchSchedError as exc:
        if args.debug:
            traceback.print_exc()
        # One line, whatever the input held (a quantity "1\n2"): tools read the last one.
        message = str(exc).replace("\r", "\\r").replace("\n", "\\n")
        print(f"batchsched: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _command(args: argparse.Namespace, out: TextIO, *, process_ends: bool) -> int:
    if args.command == "run":
        return _run(args, out, process_ends=process_ends)
    if args.command == "check":
        return _check(args, out)
    if args.command == "plugins":
        return _plugins(out)
    if args.command == "simulate":
        from batchsched.simulation import command as simulate_command

        return simulate_command.run(args, out, sys.stderr)
    if args.command == "explain":
        return _explain(args, out)
    if args.command == "compare":
        from batchsched.simulation import sweep as compare_command

        return compare_command.run(args, out, sys.stderr)
    if args.command == "import":
        return _import_kubectl(args, out)
    return _conf_validate(args, out)


class _ReaderMayLeave(io.TextIOBase):
    """Standard output whose reader may go away (``batchsched simulate ... | head``):
    what is written after is dropped, and the command runs on to its own exit status
    (a job skipped is still exit 2). Any other write failure (a full disk) ends the
    command with an error line and exit 2."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._leave()
            except OSError as exc:
                raise self._failed(exc) from exc
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()
            except OSError as exc:
                raise self._failed(exc) from exc

    def _failed(self, exc: OSError) -> BatchSchedError:
        """A write that failed for another reason (a full disk): one error line, exit
        2, instead of a traceback; nothing more is written there."""
        self._leave()
        return BatchSchedError(f"cannot write the output: {exc.strerror or exc}")

    def isatty(self) -> bool:
        return self._stream.isatty()

    def _leave(self) -> None:
        self._gone = True
        # What the stream still buffers must not fail again when the process exits.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())


def _add_debug(parser: argparse.ArgumentParser) -> None:
    """``--debug`` after the subcommand too; left unset there unless given, so that
    ``batchsched --debug run ...`` keeps the top-level flag."""
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)


def _run(args: argparse.Namespace, out: TextIO, *, process_ends: bool = False) -> int:
    # One run builds one large object graph and then exits: the cyclic garbage
    # collector would only walk that graph again and again (a fifth of the time on
    # large clusters), so it is off for the command.
    gc.disable()
    try:
        return _run_once(args, out)
    finally:
        if process_ends:
            # The interpreter's final collection at exit would still walk that graph
            # (0.7 s on 10,000 nodes and 50,000 tasks); frozen objects are spared,
            # and the operating system takes the memory back anyway.
            gc.freeze()
        gc.enable()


def _run_once(args: argparse.Namespace, out: TextIO) -> int:
    from batchsched.conf import load_configuration
    from batchsched.framework.events import EVENT_FIELDS, RecordedEvent
    from batchsched.scenario.json_output import MappedMembers, write_decisions
    from batchsched.scenario.kubectl import load_scenario_or_dump
    from batchsched.scenario.runner import decide

    scenario = load_scenario_or_dump(args.scenario)
    for warning in scenario.warnings:
        print(f"batchsched: warning: {warning}", file=sys.stderr)
    configuration = load_configuration(args.config) if args.config else None
    decisions, events = decide(scenario, scores=args.scores or None,
                               configuration=configuration, consume=True)
    name = scenario.name
    del scenario  # consumed: the output is written without the cluster in memory
    got = decisions.to_json()
    if args.output == "json":
        # json.dumps(..., indent=1) to the byte, written a piece at a time (json.dump
        # would write each of the many small pieces separately), the events made into
        # maps as they are written.
        got["events"] = MappedMembers(events, RecordedEvent.to_dict, fields=EVENT_FIELDS)
        write_decisions(got, out)
        out.write("\n")
    else:
        got["events"] = [event.to_dict() for event in events]
        out.write(_text(name, got))
    return EXIT_OK


def _text(name: str, got: dict[str, Any]) -> str:
    lines = [f"scenario: {name}"]
    binds = got["binds"]
    lines.append(f"binds ({len(binds)}):")
    width = max((len(t) for t in binds), default=0)
    devices = got.get("gpuDevices", {})
    vgpus = got.get("vgpuDevices", {})
    vnpus = got.get("vnpuDevices", {})
    lines.extend(f"  {task:<{width}}  -> {node}" + (
        f"  (GPUs {', '.join(map(str, devices[task]))})" if task in devices else "") + (
        "  (vGPUs " + ", ".join(f"{d['uuid']} {d['memory']} MiB {d['cores']}%"
                                for container in vgpus[task] for d in container) + ")"
        if task in vgpus else "") + (
        "  (vNPUs " + ", ".join(f"{d['type']} {d['uuid']} {d['memory']} MiB"
                                + (f" {d['cores']} cores" if d['cores'] else "")
                                for d in vnpus[task]) + ")"
        if task in vnpus else "")
        for task, node in binds.items())
    lines.append(f"evicted ({len(got['evicted'])}):")
    lines.extend(f"  {task}" for task in got["evicted"])
    if got["pipelined"]:
        lines.append("pipelined:")
        for job, tasks in got["pipelined"].items():
            lines.extend(f"  {job}: {task} -> {node}" for task, node in tasks.items())
    lines.append("pod groups:")
    for job, phase in got["podGroupPhases"].items():
        counts = ", ".join(f"{s} {n}" for s, n in got["taskStatusCounts"].get(job, {}).items())
        lines.append(f"  {job:<{max(width, 12)}}  {phase:<10} {counts}")
    if got["events"]:
        lines.append("events:")
        lines.extend(f"  {e['object']} {e['type']} {e['reason']}: {e['message']}"
                     for e in got["events"])
    if "scores" in got:
        lines.append("scores:")
        for task, nodes in got["scores"].items():
            ranked = ", ".join(f"{n} {s:g}" for n, s in sorted(nodes.items(), key=lambda x: -x[1]))
            lines.append(f"  {task}: {ranked}")
    return "\n".join(lines) + "\n"


def _check(args: argparse.Namespace, out: TextIO) -> int:
    """One line per scenario on ``out`` (``ok``, ``FAIL`` with its differences, or
    ``ERROR`` with the bad input), as the scenario format says; the loader's warnings
    and the tally go to stderr."""
    from batchsched.scenario import check_scenario, load_scenario, scenario_files

    # Each file as the arguments name it (a folder's, under the folder as given), so
    # that a tool finds the lines of the paths it passed.
    files: list[str] = []
    empty: list[str] = []
    for raw in args.paths:
        found = scenario_files(raw)
        if Path(raw).is_dir():
            files.extend(os.path.join(raw, str(path.relative_to(raw))) for path in found)
            if not found:
                empty.append(raw)
        else:
            files.append(raw)
    if not files:
        raise BatchSchedError(f"no scenario found in {', '.join(args.paths)}")
    failed = errored = 0
    for folder in empty:
        errored += 1
        out.write(f"ERROR {folder}: no scenario found (no .yaml, .yml or .json file)\n")
    for path in files:
        try:
            scenario = load_scenario(path)
            for warning in scenario.warnings:
                print(f"batchsched: warning: {warning}", file=sys.stderr)
            result = check_scenario(scenario)
        except BatchSchedError as exc:
            if getattr(args, "debug", False):
                traceback.print_exc(file=sys.stderr)
            errored += 1
            message = _one_line(str(exc))
            # The error names its file already (as it does for run).
            out.write(f"ERROR {message}\n" if message.startswith(f"{path}:")
                      else f"ERROR {path}: {message}\n")
            continue
        if result.passed:
            out.write(f"ok    {path}\n")
        else:
            failed += 1
            out.write(f"FAIL  {path}: "
                      f"{'; '.join(_one_line(d) for d in result.differences)}\n")
    checked = len(files) + len(empty)
    passed = checked - failed - errored
    print(f"check: {passed} passed, {failed} failed, {errored} errored of {checked}",
          file=sys.stderr)
    if errored:
        return EXIT_BAD_INPUT
    return EXIT_DIFFER if failed else EXIT_OK


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _plugins(out: TextIO) -> int:
    from batchsched.framework.extension_points import EXTENSION_POINTS
    from batchsched.framework.registry import default_registry
    from batchsched.kubesched.registry import kube_plugin_specs

    registry = default_registry()
    for kind, entry in registry.describe():
        origin = f"{entry.distribution} {entry.version}".strip()
        out.write(f"{kind:<7} {entry.name:<24} {origin}  ({entry.module})\n")
        if kind == "plugin":
            points = _registered_points(entry.name)
            if points:
                out.write(f"{'':8}registers: {', '.join(points)}\n")
    for spec in kube_plugin_specs(registry):
        out.write(f"kube    {spec.name:<24} {spec.description}\n")
    for name, message in registry.broken:
        out.write(f"broken  {name:<24} {message}\n")
    out.write(f"extension points: {', '.join(EXTENSION_POINTS)}\n")
    return EXIT_OK


def _registered_points(plugin: str) -> list[str]:
    """The points a plugin registers, found by opening it on an empty session."""
    from batchsched.api.cluster import ClusterInfo
    from batchsched.conf import PluginOption, SchedulerConfiguration, Tier
    from batchsched.framework.registry import default_registry
    from batchsched.framework.session import Session

    configuration = SchedulerConfiguration(actions=(), tiers=(Tier((PluginOption(plugin),)),))
    try:
        ssn = Session.open(ClusterInfo(now=1.0), configuration, registry=default_registry())
    except BatchSchedError:
        return []
    points = [p for p in ssn._fns if ssn.registered(p)]
    if ssn.event_handlers:
        points.append("event handlers")
    return points


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    import json

    from batchsched.explain import counterfactuals, explain, render
    from batchsched.scenario.kubectl import load_scenario_or_dump

    scenario = load_scenario_or_dump(args.scenario)
    for warning in scenario.warnings:
        print(f"batchsched: warning: {warning}", file=sys.stderr)
    if args.config:
        from batchsched.conf import load_configuration

        scenario = scenario.with_configuration(load_configuration(args.config))
    report = explain(scenario, job=args.job, task=args.task)
    if args.counterfactuals:
        report["counterfactuals"] = counterfactuals(scenario, job=args.job, task=args.task,
                                                    quota=report.get("quota"))
    if args.predict_start:
        from batchsched.simulation.predict import predict_start

        report["startPrediction"] = predict_start(scenario, report["job"],
                                                  task=report.get("task"))
    out.write((json.dumps(report, indent=1) if args.output == "json" else render(report)) + "\n")
    return EXIT_OK


def _import_kubectl(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path

    from batchsched.scenario.kubectl import import_kubectl_dump, scenario_yaml

    document, scenario = import_kubectl_dump(args.dump, config_path=args.config, now=args.now)
    for warning in scenario.warnings:
        print(f"batchsched: warning: {warning}", file=sys.stderr)
    text = scenario_yaml(document)
    if not args.output:
        out.write(text)
        return EXIT_OK
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BatchSchedError(f"{args.output}: cannot write: {exc.strerror}") from exc
    # The queues the file lists (the loader adds the implicit root queue besides).
    queues = len(document.get("queues") or ())
    out.write(f"{args.output}: {len(scenario.nodes)} nodes, {len(scenario.jobs)} jobs, "
              f"{len(scenario.tasks)} tasks, {queues} queues\n")
    return EXIT_OK


def _conf_validate(args: argparse.Namespace, out: TextIO) -> int:
    from batchsched.conf import load_configuration
    from batchsched.framework.registry import default_registry

    configuration = load_configuration(args.file)
    registry = default_registry()
    configuration.validate(registry)
    ignored = _ignored_by_plugins(configuration, registry)
    plugins = ", ".join(configuration.plugin_names())
    out.write(f"{args.file}: ok (actions: {', '.join(configuration.actions) or 'none'}; "
              f"plugins: {plugins or 'none'})\n")
    for message in ignored:
        out.write(f"  ignored: {message}\n")
    return 1 if ignored and args.strict else EXIT_OK


def _ignored_by_plugins(configuration: Any, registry: Any) -> list[str]:
    """What the configuration's plugins and actions, built with their arguments, say
    they will not honour (see :func:`~batchsched.framework.arguments.collect_warnings`)."""
    from batchsched.framework.arguments import collect_warnings
    from batchsched.scheduler import check_builds

    with collect_warnings() as said:
        check_builds(configuration, registry)
    interval = configuration.metrics.get("interval")
    if interval is not None:
        from batchsched.framework.arguments import parse_duration
        from batchsched.plugins.usage import DEFAULT_METRICS_INTERVAL

        try:
            readable = parse_duration(interval) > 0
        except ValueError:
            readable = False
        if not readable:
            said.append(f"metrics: interval={interval!r} is not a positive Go duration "
                        f"(such as 30s): Volcano uses {DEFAULT_METRICS_INTERVAL:g}s")
    return list(dict.fromkeys(said))
