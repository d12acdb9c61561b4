"""Alibaba GPU trace files (openb_*.csv), in a small copy made here."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from sim_support import write

from batchsched.cli import main
from batchsched.errors import WorkloadError
from batchsched.simulation.alibaba import (
    GPU,
    GPU_MILLI_ANNOTATION,
    MODEL_LABEL,
    alibaba_nodes,
    alibaba_workload,
)

NODES = """sn,cpu_milli,memory_mib,gpu,model
node-a,8000,32768,2,V100M16
node-b,8000,32768,1,T4
"""
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
) + """pod-0,1000,1024,1,1000,,LS,Running,0,100,10
pod-1,1000,1024,1,500,T4,LS,Running,5,50,5
pod-2,1000,1024,2,1000,,BE,Running,6,60,
pod-3,1000,1024,1,1000,,BE,Running,7,70,7
"""


def test_nodes_and_pods_read_as_the_trace_says() -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    assert [(n.name, n.allocatable.get(GPU), n.labels[MODEL_LABEL]) for n in nodes] == [
        ("node-a", 2000.0, "V100M16"), ("node-b", 1000.0, "T4")]
    workload = alibaba_workload("pods.csv", nodes, text=PODS)
    assert [job.submit for job in workload.jobs] == [0.0, 5.0, 6.0, 7.0]
    assert [job.run_time for job in workload.jobs] == [90.0, 45.0, 54.0, 63.0]
    task = next(iter(workload.jobs[1].prototype.tasks.values()))
    # pod-1 asks half of one T4: a share of 500 milli.
    assert task.affinity is not None and task.resreq.get(GPU) == 500.0
    assert [dict(kind) for kind in workload.pod_mix] == [
        {"cpu": "1000m", "gpu": "500m", "weight": 1, "model": "T4"},
        {"cpu": "1000m", "gpu": "1000m", "weight": 2},
        {"cpu": "1000m", "gpu": "2000m", "weight": 1}]


def test_arrived_load_stops_arrivals_and_nobody_leaves() -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    workload = alibaba_workload("pods.csv", nodes, text=PODS, arrived_load=0.5, seed=3)
    # 3 GPUs in the cluster: arrivals stop once 1.5 GPUs were asked.
    asked = [job.prototype.total_request.get(GPU) for job in workload.jobs]
    assert sum(asked) >= 1500 > sum(asked[:-1])
    assert {job.run_time for job in workload.jobs} == {float("inf")}
    assert [job.submit for job in workload.jobs] == list(range(len(workload.jobs)))
    again = alibaba_workload("pods.csv", nodes, text=PODS, arrived_load=0.5, seed=3)
    assert [job.uid for job in again.jobs] == [job.uid for job in workload.jobs]
    assert sorted(node.name for node in workload.nodes) == ["node-a", "node-b"]


def test_past_the_trace_pods_are_drawn_again_after_every_original() -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    workload = alibaba_workload("pods.csv", nodes, text=PODS, arrived_load=2.5, seed=1,
                                arrival_order="sampled")
    names = [job.prototype.name for job in workload.jobs]
    assert sorted(names[:4]) == ["pod-0", "pod-1", "pod-2", "pod-3"]
    assert names[4:] and all("-tuned-" in name for name in names[4:])


@pytest.mark.parametrize(("pods", "load", "problem"), [
    # Without a GPU asked, no sample ever reaches the load: refused, not drawn forever.
    (PODS.replace(",1,1000,", ",0,0,").replace(",1,500,", ",0,0,").replace(",2,1000,", ",0,0,"),
     1.0, "no pod of the trace asks a GPU"),
    (PODS, 1e9, "sampled arrivals stop at 100 times the cluster's GPUs"),
])
def test_sampled_arrivals_that_cannot_end_are_refused(pods: str, load: float,
                                                       problem: str) -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    with pytest.raises(WorkloadError, match=problem):
        alibaba_workload("pods.csv", nodes, text=pods, arrived_load=load,
                         arrival_order="sampled")


def test_arrived_load_takes_the_pods_in_trace_order_by_default() -> None:
    """The simulation contract: pods arrive in trace order, none leaves, until the
    GPUs they ask reach F x the cluster's (or the trace ends); the nodes keep theirs."""
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    workload = alibaba_workload("pods.csv", nodes, text=PODS, arrived_load=0.5, seed=3)
    assert [job.prototype.name for job in workload.jobs] == ["pod-0", "pod-1"]
    assert [node.name for node in workload.nodes] == ["node-a", "node-b"]
    everything = alibaba_workload("pods.csv", nodes, text=PODS, arrived_load=2.5)
    assert [job.prototype.name for job in everything.jobs] == [f"pod-{i}" for i in range(4)]


def test_a_pod_list_with_only_the_request_columns_is_read() -> None:
    """Some of the trace's files (openb_pod_list_multigpu50.csv) have only these."""
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\npod-0,1000,1024,1,1000\n"
    workload = alibaba_workload("pods.csv", nodes, text=text, arrived_load=0.3)
    assert [job.submit for job in workload.jobs] == [0.0]
    plain = alibaba_workload("pods.csv", nodes, text=text)
    assert [(job.submit, job.run_time) for job in plain.jobs] == [(0.0, float("inf"))]


@pytest.mark.parametrize(("row", "problem"), [
    ("pod-9,1000,1", "pods.csv:6: 3 fields, the header has 11"),
    ("pod-9,1000,1024,1,1000,,LS,Running,0,100,10,extra", "pods.csv:6: 12 fields"),
])
def test_a_row_with_the_wrong_number_of_fields_is_named(row: str, problem: str) -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    with pytest.raises(WorkloadError, match=problem):
        alibaba_workload("pods.csv", nodes, text=PODS + row + "\n")


def test_a_pod_asking_gpus_without_a_share_asks_whole_ones() -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    text = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
            "pod-0,1000,1024,1,0\npod-1,1000,1024,2,\npod-2,1000,1024,1,470\n")
    jobs = alibaba_workload("pods.csv", nodes, text=text).jobs
    tasks = [next(iter(job.prototype.tasks.values())) for job in jobs]
    # The request and the annotation say the same.
    assert [task.resreq.get(GPU) for task in tasks] == [1000, 2000, 470]
    assert [task.annotations[GPU_MILLI_ANNOTATION] for task in tasks] == ["1000", "1000", "470"]


@pytest.mark.parametrize(("row", "problem"), [
    ("pod-9,1000,1024,1,1500", "pods.csv:2: column gpu_milli: 1500 is more than a whole GPU"),
    ("pod-9,1000,1024,1,500.7", "pods.csv:2: column gpu_milli: '500.7' is not a whole number"),
    ("pod-9,1000.5,1024,0,0", "pods.csv:2: column cpu_milli: '1000.5' is not a whole number"),
])
def test_a_gpu_share_the_trace_cannot_mean_is_named(row: str, problem: str) -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    with pytest.raises(WorkloadError, match=problem):
        alibaba_workload("pods.csv", nodes,
                         text="name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + row + "\n")


def test_a_pod_named_twice_is_named_with_both_lines() -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    with pytest.raises(WorkloadError,
                       match=r"pods.csv:6: column name: pod 'pod-1' again \(first on line 3\)"):
        alibaba_workload("pods.csv", nodes,
                         text=PODS + "pod-1,1000,1024,1,1000,,LS,Running,9,90,9\n")


def test_a_node_named_twice_is_named_with_both_lines() -> None:
    with pytest.raises(WorkloadError,
                       match=r"nodes.csv:4: column sn: node 'node-a' again \(first on line 2\)"):
        alibaba_nodes("nodes.csv", text=NODES + "node-a,8000,32768,2,V100M16\n")


def test_an_unknown_column_is_named() -> None:
    with pytest.raises(WorkloadError, match=r"nodes.csv:1: unknown column 'gpus'"):
        alibaba_nodes("nodes.csv", text=NODES.replace("gpu,model", "gpus,model"))


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # A spreadsheet's export: the mark was read as part of the first column's name.
    path = tmp_path / "nodes.csv"
    path.write_bytes(b"\xef\xbb\xbf" + NODES.encode())
    read = [(n.name, n.allocatable.to_dict(), n.labels) for n in alibaba_nodes(path)]
    assert read == [(n.name, n.allocatable.to_dict(), n.labels)
                    for n in alibaba_nodes("nodes.csv", text=NODES)]


def test_simulate_reports_the_gpu_allocation_ratio(tmp_path: Path) -> None:
    nodes, pods = write(tmp_path, "n.csv", NODES), write(tmp_path, "p.csv", PODS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["simulate", str(pods), "--cluster", str(nodes), "--arrived-load", "1.0",
                     "--output", "json", "--no-progress"])
    assert code == 0
    data = json.loads(out.getvalue())
    nodes_list = alibaba_nodes(nodes)
    workload = alibaba_workload(pods, nodes_list, arrived_load=1.0, seed=0)
    requests = {job.uid: job.prototype.total_request.get(GPU) for job in workload.jobs}
    started = sum(requests[job["job"]] for job in data["perJob"] if job["start"] is not None)
    assert data["metrics"]["gpuAllocationRatio"] == pytest.approx(started / 3000)
    curve = data["gpuAllocationByArrivedLoad"]
    assert curve[-1][0] >= 100 and 0 < curve[-1][1] <= 100


def test_compare_takes_the_arrival_order_and_seed_simulate_takes(tmp_path: Path) -> None:
    """A sweep's replay decides as the same ``simulate`` would (arrival order, seed and
    the plugins' hints from the run)."""
    nodes, pods = write(tmp_path, "n.csv", NODES), write(tmp_path, "p.csv", PODS)
    config = write(tmp_path, "c.yaml", 'actions: "allocate"\ntiers: [{plugins: ['
                   '{name: predicates}, {name: deviceshare, arguments: '
                   '{deviceshare.GPUSharingEnable: true}}, {name: gpu-random}]}]\n')
    common = ["--cluster", str(nodes), "--arrived-load", "2.5", "--arrival-order", "sampled",
              "--seed", "7", "--config", str(config), "--output", "json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", str(pods), *common, "--no-progress"]) == 0
    single = json.loads(out.getvalue())["metrics"]["gpuAllocationRatio"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["compare", str(pods), *common, "--workers", "1"]) == 0
    table = json.loads(out.getvalue())["configurations"][str(config)]
    assert table["gpuAllocationRatio"] == pytest.approx(single)


def test_the_clock_runs_to_the_horizon_while_a_pod_never_ends() -> None:
    """No event is left after pod-1 arrives, yet pod-0 (no deletion time) runs on: with
    until, the clock, the makespan and the utilisation run to the horizon."""
    from batchsched.simulation import Simulator

    nodes = alibaba_nodes("nodes.csv", text="sn,cpu_milli,memory_mib,gpu,model\n"
                                             "n1,8000,16384,2,T4\n")
    pods = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n"
            "p1,4000,1024,1,1000,0\np2,4000,1024,1,1000,50\n")
    timeline = Simulator(alibaba_workload("pods.csv", nodes, text=pods), until=1000).run()
    metrics = timeline.metrics()
    assert timeline.end == 1000.0 and metrics["makespan"] == 1000
    assert metrics["utilization"] == pytest.approx((1000 + 950) / 2 / 1000)


@pytest.mark.parametrize(("pods", "problem"), [
    ("p1,1000,1024,0,500,0,10,", "gpu_milli: 500 on a pod asking no GPU"),
    ("p1,1000,1024,1,1000,0,50,100", "deletion_time: 50 is before the pod was scheduled (100)"),
    ("p1,1000,1024,1,1000,20,10,", "deletion_time: 10 is before the pod was created (20)"),
    (",1000,1024,1,1000,0,10,", "name: a pod needs a name"),
    ("p1,1000,1024,1,1000,50,100,10", "scheduled_time: 10 is before the pod was created (50)"),
])
def test_a_pod_row_no_pod_could_have_is_refused_naming_its_line(pods: str, problem: str) -> None:
    nodes = alibaba_nodes("nodes.csv", text=NODES)
    header = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,"
              "scheduled_time\n")
    with pytest.raises(WorkloadError, match=re.escape(f"pods.csv:2: column {problem}")):
        alibaba_workload("pods.csv", nodes, text=header + pods + "\n")


def test_a_node_row_without_a_name_is_refused_naming_its_line() -> None:
    with pytest.raises(WorkloadError, match=r"nodes\.csv:4: column sn: a node needs a name"):
        alibaba_nodes("nodes.csv", text=NODES + ",8000,16384,2,T4\n")


def test_shares_of_one_gpu_without_deviceshare_are_said_to_be_pooled(tmp_path: Path) -> None:
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,2,T4\n")
    pods = write(tmp_path, "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                 + "".join(f"p{k},1000,1024,1,600\n" for k in range(3)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["simulate", str(pods), "--cluster", str(nodes), "--no-progress"])
    assert code == 0
    assert "shares of one GPU but the configuration has no deviceshare" in err.getvalue()


def _simulate_err(tmp_path: Path, pods: str, config: str, *args: str) -> tuple[int, str]:
    nodes = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,2,T4\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["simulate", str(write(tmp_path, "pods.csv", pods)), "--cluster", str(nodes),
                     "--config", str(write(tmp_path, "c.yaml", config)), "--no-progress",
                     *args])
    return code, err.getvalue()


def test_deviceshare_without_its_gpu_switch_pools_shares_and_says_so(tmp_path: Path) -> None:
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(
        f"p{k},1000,1024,1,600\n" for k in range(3))
    config = ('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}, '
              "{name: deviceshare%s}, {name: gpu-packing}]\n")
    code, err = _simulate_err(tmp_path, pods, config % "")
    assert code == 0 and "no deviceshare with GPUSharingEnable or GPUNumberEnable" in err
    _, err = _simulate_err(
        tmp_path, pods, config % ", arguments: {deviceshare.GPUSharingEnable: true}")
    assert "pooled" not in err


def test_gpu_models_asked_without_predicates_are_said_not_kept_to(tmp_path: Path) -> None:
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np1,1000,1024,1,1000,V100M32\n"
    config = ('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}, '
              "{name: deviceshare, arguments: {deviceshare.GPUNumberEnable: true}}%s]\n")
    _, err = _simulate_err(tmp_path, pods, config % "")
    assert "pods ask GPU models (gpu_spec) but the configuration has no predicates" in err
    _, err = _simulate_err(tmp_path, pods, config % ", {name: predicates}")
    assert "gpu_spec" not in err


def test_sampled_arrivals_take_no_window(tmp_path: Path) -> None:
    code, err = _simulate_err(tmp_path, PODS, 'actions: "enqueue, allocate"\n',
                              "--arrived-load", "1", "--arrival-order", "sampled",
                              "--first-job", "1")
    assert code == 2 and "--arrival-order sampled draws pods from the whole trace" in err


def test_arrived_load_on_a_cluster_without_gpus_is_refused() -> None:
    nodes = alibaba_nodes("nodes.csv", text="sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,0,\n")
    with pytest.raises(WorkloadError, match="--arrived-load counts in the cluster's GPUs"):
        alibaba_workload("pods.csv", nodes, text=PODS, arrived_load=1.0)


def test_a_column_named_twice_is_named() -> None:
    with pytest.raises(WorkloadError, match=r"pods.csv:1: column 'cpu_milli' named twice"):
        alibaba_workload("pods.csv", alibaba_nodes("nodes.csv", text=NODES),
                         text="name,cpu_milli,memory_mib,num_gpu,gpu_milli,cpu_milli\n"
                              "p1,1000,1024,1,1000,9999\n")


def test_pods_created_at_the_same_time_start_in_trace_order(tmp_path: Path) -> None:
    # FCFS is submit time, then trace order: zeta, listed first, goes before alpha.
    nodes = write(tmp_path, "nodes.csv",
                  "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,16384,1,V100\n")
    pods = write(tmp_path, "pods.csv", (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "first,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "zeta,1000,1024,1,1000,,LS,Running,10,110,10\n"
        "alpha,1000,1024,1,1000,,LS,Running,10,110,10\n"))
    config = write(tmp_path, "fcfs.yaml",
                   'actions: "strict-allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", str(pods), "--cluster", str(nodes), "--config", str(config),
                     "--output", "json", "--no-progress"]) == 0
    starts = {job["job"]: job["start"] for job in json.loads(out.getvalue())["perJob"]}
    assert starts == {"openb/first": 0, "openb/zeta": 100, "openb/alpha": 200}


def test_arrived_load_counts_from_the_window_s_first_pod(tmp_path: Path) -> None:
    """--first-job K with --arrived-load: the replay starts at pod K and the load is
    counted from there (it was counted from pod 0 and the window cut afterwards)."""
    from batchsched.simulation.command import load_workload

    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    # 3 GPUs; pod-1 asks half of one, pod-2 two: 2.5 >= 0.8 x 3.
    workload, _ = load_workload(tmp_path / "pods.csv", tmp_path / "nodes.csv",
                                arrived_load=0.8, first=1)
    assert [job.prototype.name for job in workload.jobs] == ["pod-1", "pod-2"]
    workload, _ = load_workload(tmp_path / "pods.csv", tmp_path / "nodes.csv",
                                arrived_load=0.3, first=3)
    assert [job.prototype.name for job in workload.jobs] == ["pod-3"]


FGD_CONFIG = ('actions: "allocate"\nnodesToFind: {percentageOfNodesToFind: 100}\ntiers:\n'
              '- plugins:\n  - name: predicates\n  - name: deviceshare\n'
              '    arguments: {deviceshare.GPUSharingEnable: true}\n  - name: fgd\n')


@pytest.mark.parametrize("fast", ["1", "0"])
def test_fgd_counts_a_node_of_another_model_as_fragment_for_a_model_s_pods(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: str) -> None:
    """The paper's typical pods carry their GPU models (gpu_spec): for the nine pods that
    take only model A, node-b's free GPU is all fragment, so the first pod (any model)
    goes there and leaves A for them (it went to node-a, the first of equals)."""
    monkeypatch.setenv("BATCHSCHED_FAST_PATH", fast)
    nodes = write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
                  "node-a,32000,65536,1,A\nnode-b,32000,65536,1,B\n")
    header = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,"
              "deletion_time,scheduled_time\n")
    rows = "y,1000,1024,1,500,,0,1000,0\n" + "".join(
        f"x{i},1000,1024,1,500,A,100,1000,100\n" for i in range(1, 10))
    pods = write(tmp_path, "p.csv", header + rows)
    config = write(tmp_path, "c.yaml", FGD_CONFIG)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["simulate", str(pods), "--cluster", str(nodes), "--config", str(config),
              "--output", "json", "--no-progress"])
    jobs = {job["job"]: job for job in json.loads(out.getvalue())["perJob"]}
    assert jobs["openb/y"]["start"] == 0.0 and jobs["openb/x1"]["start"] == 100.0
    assert jobs["openb/x2"]["start"] == 100.0  # both halves of node-a's GPU for model A


def test_typical_pods_keep_their_models_and_a_node_s_model_decides_access() -> None:
    from batchsched.plugins.fgd import PodType, fragmentation, typical_pods

    kept = typical_pods({(1000.0, 500, 1, "A"): 9.0, (1000.0, 500, 1, ""): 1.0}, 1.0)
    assert [(pod.model, pod.share) for pod in kept] == [("A", 0.9), ("", 0.1)]
    only_a = (PodType(1000, 500, 1, 1.0, "A|C"),)
    assert fragmentation(4000, [1000], only_a, "B") == 1000  # no access: all of it
    assert fragmentation(4000, [1000], only_a, "C") == 0


def test_nan_and_cpu_only_gpu_specs_ask_no_model_and_nodes_hold_1001_pods() -> None:
    """pandas reads "nan" as no value (the paper's simulator fills it with ""), a model
    is written only for pods asking GPUs, and every node has room for 1001 pods."""
    nodes = alibaba_nodes("nodes.csv", text="sn,cpu_milli,memory_mib,gpu,model\n"
                                             "n1,128000,16384,1,nan\n")
    assert nodes[0].labels[MODEL_LABEL] == "none" and nodes[0].allocatable.get("pods") == 1001
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
    workload = alibaba_workload("pods.csv", nodes,
                                text=header + "p1,1000,1024,1,500,NaN\np2,1000,1024,0,0,T4\n")
    for job in workload.jobs:
        (task,) = job.prototype.tasks.values()
        assert task.affinity is None
    assert all("model" not in kind for kind in workload.pod_mix)


def test_typical_pod_models_are_spelt_one_way_and_must_be_text() -> None:
    from batchsched.errors import ConfigError
    from batchsched.plugins.fgd import parse_typical_pods

    counts = parse_typical_pods([{"cpu": 1, "gpu": "500m", "model": " V100 | A100 "},
                                 {"cpu": 1, "gpu": "500m", "model": "A100|V100|A100"},
                                 {"cpu": 1, "gpu": "500m", "model": "|"},
                                 {"cpu": 1, "gpu": "500m"}])
    assert counts == {(1000.0, 500, 1, "A100|V100"): 2.0, (1000.0, 500, 1, ""): 2.0}
    for odd in (0, False, 5):
        with pytest.raises(ConfigError, match=r"typicalPods\[0\]\.model"):
            parse_typical_pods([{"cpu": 1, "gpu": "500m", "model": odd}])
