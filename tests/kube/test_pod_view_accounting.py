"""KubeView's per-placement accounting gives exactly what the plainer version it replaced
gave (kept below as the reference): the same sums, the same used ports in the same
order and the same change log, down to the order they iterate in. The nodes it lists with
(anti-)affinity pods are those of its start, whatever moves after."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batchsched.api import NodeInfo, Resource, TaskInfo
from batchsched.kube.pod_view import KubeView, NodeView, PodInfo

NODES = [f"n{i}" for i in range(5)]

_ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}]}}
_PREFERRED = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 3, "podAffinityTerm": {"topologyKey": "zone",
                                      "labelSelector": {"matchLabels": {"app": "web"}}}}]}}


class ReferenceNodeView(NodeView):
    """NodeView's accounting as it was written before (with kube's set of used ports)."""

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.milli_cpu += sign * pod.milli_cpu
        self.memory += sign * pod.memory
        self.gpu += sign * pod.gpu
        self.nonzero_milli_cpu += sign * pod.nonzero_milli_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        for port in pod.host_ports:
            # kube-scheduler's HostPortInfo is a set: a removal deletes the port.
            if sign > 0:
                self.used_ports[port] = 1
            else:
                self.used_ports.pop(port, None)
        if pod.has_pod_affinity:
            self.pods_with_affinity += sign
        if pod.required_anti_affinity:
            self.pods_with_required_anti_affinity += sign


class ReferenceKubeView(KubeView):
    """KubeView's add and change tracking as they were written before."""

    def __init__(self, nodes: dict[str, NodeInfo]) -> None:
        super().__init__({})
        for name in nodes:
            self.nodes[name] = ReferenceNodeView(name)

    def add(self, task: TaskInfo, node_name: str) -> None:
        previous = self._where.get(task.uid)
        if previous is not None and previous in self.nodes:
            self.nodes[previous].remove(task.uid)
            self._changed(self.nodes[previous])
        node = self.nodes.get(node_name)
        if node is None:
            return
        node.add(self.pod(task))
        self._where[task.uid] = node_name
        self._changed(node)

    def _changed(self, node: NodeView) -> None:
        self.change_log.append(node.name)


def view_state(view: KubeView) -> tuple[object, ...]:
    return (
        [(name, list(node.pods), node.milli_cpu, node.memory, node.gpu, node.nonzero_milli_cpu,
          node.nonzero_memory, list(node.used_ports.items()), node.pods_with_affinity,
          node.pods_with_required_anti_affinity) for name, node in view.nodes.items()],
        list(view.change_log), list(view._where.items()),
    )


@st.composite
def tasks(draw: Any) -> list[TaskInfo]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        fields: dict[str, Any] = {
            "host_ports": tuple(draw(st.lists(st.sampled_from([80, 443, 8080]), unique=True,
                                              max_size=2))),
            "affinity": draw(st.sampled_from([None, _ANTI, _PREFERRED])),
        }
        requests = Resource(draw(st.sampled_from([0.0, 250.0, 1000.5])),
                            draw(st.sampled_from([0.0, 2.0**30])),
                            {"nvidia.com/gpu": 1.0} if draw(st.booleans()) else None)
        out.append(TaskInfo.create("ns", f"t{i}", "ns/pg", requests,
                                   labels={"app": draw(st.sampled_from(["db", "web"]))},
                                   **fields))
    return out


@given(tasks(), st.lists(st.tuples(st.integers(0, 5), st.sampled_from([*NODES, "gone", None])),
                         max_size=25))
def test_placements_account_as_before(
    pods: list[TaskInfo], moves: list[tuple[int, str | None]]
) -> None:
    nodes = {name: NodeInfo.create(name, Resource(8000, 2.0**34)) for name in NODES}
    view, reference = KubeView(nodes), ReferenceKubeView(nodes)
    for i, node_name in moves:
        task = pods[i % len(pods)]
        for target in (view, reference):
            if node_name is None:
                target.remove(task)
            else:
                target.add(task, node_name)
        assert view_state(view) == view_state(reference)


@given(tasks(), st.lists(st.tuples(st.integers(0, 5), st.sampled_from(NODES)), max_size=12),
       st.lists(st.tuples(st.integers(0, 5), st.sampled_from([*NODES, None])), max_size=12))
def test_nodes_with_affinity_pods_are_listed_once_at_the_start(
    pods: list[TaskInfo], before: list[tuple[int, str]], moves: list[tuple[int, str | None]]
) -> None:
    nodes = {name: NodeInfo.create(name, Resource(8000, 2.0**34)) for name in NODES}
    for i, node_name in before:
        task = pods[i % len(pods)]
        if not any(task.uid in node.tasks for node in nodes.values()):
            nodes[node_name].add_task(task.clone())
    view = KubeView(nodes)
    listed = (view.affinity_nodes_at_open, view.anti_affinity_nodes_at_open)
    assert listed[0] == {n for n, v in view.nodes.items() if v.pods_with_affinity}
    assert listed[1] == {n for n, v in view.nodes.items() if v.pods_with_required_anti_affinity}
    for i, node_name in moves:
        task = pods[i % len(pods)]
        if node_name is None:
            view.remove(task)
        else:
            view.add(task, node_name)
    assert (view.affinity_nodes_at_open, view.anti_affinity_nodes_at_open) == listed


def test_a_task_s_affinity_is_read_once_while_its_document_and_labels_stay(
        monkeypatch: Any) -> None:
    from batchsched.kube import pod_view
    reads: list[object] = []
    real = pod_view.parse_affinity

    def counting(raw: Any, labels: Any = None) -> Any:
        reads.append(raw)
        return real(raw, labels)

    monkeypatch.setattr(pod_view, "parse_affinity", counting)
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"tier": "web"}}, "topologyKey": "zone",
         "matchLabelKeys": ["app"]}]}}
    task = TaskInfo.create("ns", "t", "ns/j", Resource(), labels={"app": "a"}, affinity=anti)
    first = pod_view.task_affinity(task)
    assert pod_view.task_affinity(task.clone()) is first  # a session's copy shares it
    assert len(reads) == 1
    task.labels = {"app": "b"}  # other labels: read again, with them
    again = pod_view.task_affinity(task)
    assert len(reads) == 2 and again != first
