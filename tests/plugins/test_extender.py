"""extender: Volcano's HTTP extender, against a local test server."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchsched.scenario import parse_scenario, run_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Verbs answered as written here: (HTTP status, body).
RAW_ANSWERS: dict[str, tuple[int, bytes]] = {
    "open-text": (200, b"ok"),
    "prio-error": (200, b'{"errorMessage": "cannot score"}'),
    "pred-caps": (200, b'{"Status": "no, in capitals", "Code": 2}'),
    "pred-201": (201, b'{"status": ""}'),
    "pred-empty": (200, b""),
    "pred-trailing": (200, b'{"status": ""} and more'),
    "pred-number": (200, b'{"status": 5}'),
    "alloc-error": (200, b'{"errorMessage": "no room for its licence"}'),
    "pred-null": (200, b"null"),
    "pred-pending": (200, b'{"status": "extender says pending", "code": 6}'),
    # Beyond Go's int (int64) and float64: the decoding fails, so does the call.
    "pred-code-overflow": (200, b'{"status": "", "code": 9223372036854775808}'),
    "pred-code-int64": (200, b'{"status": "", "code": -9223372036854775808}'),
    "prio-inf": (200, b'{"nodeScore": {"n1": 1e400}}'),
    "prio-huge-int": (200, b'{"nodeScore": {"n1": 1' + b"0" * 400 + b'}}'),
    # Volcano's TestMaxBodySizeLimit2: one letter past maxBodySize (10 << 20 bytes).
    "oversized": (200, b'{"padding":"' + b"a" * ((10 << 20) + 1) + b'"}'),
}


class Extender(BaseHTTPRequestHandler):
    """Refuses node n2 (predicate), prefers n3 (prioritize), rejects the job `blocked`
    (jobEnqueueable); `fail` answers 500; every request is recorded."""

    calls: list[tuple[str, dict[str, Any]]] = []

    def do_POST(self) -> None:
        verb = self.path.strip("/")
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        type(self).calls.append((verb, body))
        if verb == "fail":
            self.send_response(500)
            self.end_headers()
            return
        raw = RAW_ANSWERS.get(verb)
        if raw is not None:
            status, text = raw
            self.send_response(status)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
            return
        answer: dict[str, Any] = {}
        if verb == "predicate":
            answer = {"status": "extender says no" if body["node"]["Name"] == "n2" else "",
                      "code": 2}
        elif verb == "prioritize":
            answer = {"nodeScore": {node["Name"]: 50.0 if node["Name"] == "n3" else 1.0
                                    for node in body["nodes"]}}
        elif verb == "jobEnqueueable":
            answer = {"status": -1 if body["job"]["Name"] == "blocked" else 1}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


@pytest.fixture()
def server() -> Iterator[str]:
    Extender.calls = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Extender)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def scenario(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": 1, "name": "extender",
        "config": {"actions": "enqueue, allocate", "tiers": [
            {"plugins": [{"name": "gang"}, {"name": "extender", "arguments": arguments}]}]},
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 10}}
                  for i in (1, 2, 3)],
        "jobs": [{"name": "ok", "minMember": 1, "minResources": {"cpu": 1}},
                 {"name": "blocked", "minMember": 1, "minResources": {"cpu": 1}}],
        "tasks": [{"name": "a", "job": "ok", "requests": {"cpu": 1}},
                  {"name": "b", "job": "blocked", "requests": {"cpu": 1}}],
    }


def test_predicate_prioritize_and_enqueue_follow_the_extender(server: str) -> None:
    decisions = run_scenario(parse_scenario(scenario({
        "extender.urlPrefix": server, "extender.predicateVerb": "predicate",
        "extender.prioritizeVerb": "prioritize",
        "extender.jobEnqueueableVerb": "jobEnqueueable",
        "extender.onSessionOpenVerb": "open", "extender.onSessionCloseVerb": "close"}),
        source="<test>"))
    assert decisions.binds == {"default/a": "n3"}
    assert decisions.pod_group_phases["default/blocked"] == "Pending"
    verbs = [verb for verb, _ in Extender.calls]
    assert verbs[0] == "open" and verbs[-1] == "close"
    request = next(body for verb, body in Extender.calls if verb == "predicate")
    assert request["task"]["UID"] == "default/a" and request["task"]["Resreq"]["MilliCPU"] == 1000
    opened = Extender.calls[0][1]
    # Volcano's OnSessionOpenRequest has no JSON tags: Go's field names, NodeList unset.
    assert set(opened) == {"Jobs", "Nodes", "Queues", "NamespaceInfo", "RevocableNodes",
                           "NodeList"}
    assert set(opened["Nodes"]) == {"n1", "n2", "n3"} and opened["NodeList"] is None


def test_a_failing_extender_blocks_unless_ignorable(server: str) -> None:
    strict = scenario({"extender.urlPrefix": server, "extender.predicateVerb": "fail"})
    decisions = run_scenario(parse_scenario(strict, source="<test>"))
    assert decisions.binds == {}
    # Volcano's words: they are the fit error's reason.
    assert any(f"failed fail with extender at URL {server}/fail, code 500" in event["message"]
               for event in decisions.events)
    lenient = scenario({"extender.urlPrefix": server, "extender.predicateVerb": "fail",
                        "extender.ignorable": True})
    assert run_scenario(parse_scenario(lenient, source="<test>")).binds == {
        "default/a": "n1", "default/b": "n1"}


@pytest.mark.parametrize("prefix", ["http://127.0.0.1:9", "SERVER"])
def test_a_prioritize_that_fails_leaves_the_task_without_a_node_and_the_session_going(
        server: str, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    # Volcano's PrioritizeNodes logs the error and returns no scores: no best node.
    url = server if prefix == "SERVER" else prefix
    verb = "prio-error" if prefix == "SERVER" else "prioritize"
    doc = scenario({"extender.urlPrefix": url, "extender.httpTimeout": "200ms",
                    "extender.prioritizeVerb": verb, "extender.onSessionCloseVerb": "close"})
    decisions = run_scenario(parse_scenario(doc, source="<test>"))
    assert decisions.binds == {}
    assert "extender" in caplog.text
    if prefix == "SERVER":
        assert [verb for verb, _ in Extender.calls][-1] == "close"


def test_preempt_scores_a_lone_candidate_node_and_a_failing_prioritize_tries_none(
        server: str) -> None:
    """Volcano's preempt asks PrioritizeNodes whatever the number of candidate nodes
    (only allocate and backfill skip scoring one node): with one node, the extender's
    failing prioritize leaves no node to try, and nobody is evicted."""
    doc = {
        "version": 1, "name": "preempt one node",
        "config": {"actions": "enqueue, allocate, preempt", "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {"plugins": [{"name": "predicates"}, {"name": "extender", "arguments": {
                "extender.urlPrefix": server, "extender.prioritizeVerb": "prio-error"}}]}]},
        "priorityClasses": [{"name": "high", "value": 1000}, {"name": "low", "value": 10}],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi", "pods": 20}}],
        "jobs": [{"name": "low", "minMember": 1, "phase": "Running", "priorityClassName": "low"},
                 {"name": "high", "minMember": 1, "phase": "Inqueue",
                  "priorityClassName": "high"}],
        "tasks": [{"name": f"l{i}", "job": "low", "node": "n1", "phase": "Running",
                   "priorityClassName": "low", "requests": {"cpu": 2}} for i in (1, 2)]
        + [{"name": "h1", "job": "high", "priorityClassName": "high", "requests": {"cpu": 2}}],
    }
    decisions = run_scenario(parse_scenario(doc, source="<test>"))
    assert decisions.evicted == [] and decisions.pipelined == {}
    assert "prio-error" in [verb for verb, _ in Extender.calls]


@pytest.mark.parametrize(("verb", "passes"), [
    ("pred-caps", False),      # Go matches JSON keys ignoring case: "Status" refuses
    ("pred-201", False),       # only 200 is an answer
    ("pred-empty", False),     # nothing to decode: EOF
    ("pred-trailing", True),   # Go's Decoder reads the first value only
    ("pred-number", False),    # a number where the struct has a string: no answer
    ("pred-null", True),       # Go decodes null into the struct as nothing: passes
    ("pred-pending", True),    # a code Volcano's checks do not know fails no node
    ("pred-code-overflow", False),  # no int64: Go's decoding fails
    ("pred-code-int64", True),      # the smallest int64 decodes
])
def test_predicate_answers_are_read_as_go_decodes_them(server: str, verb: str,
                                                       passes: bool) -> None:
    doc = scenario({"extender.urlPrefix": server, "extender.predicateVerb": verb})
    binds = run_scenario(parse_scenario(doc, source="<test>")).binds
    assert (binds != {}) is passes


@pytest.mark.parametrize("verb", ["prio-inf", "prio-huge-int"])
def test_a_score_beyond_float64_fails_the_prioritize(server: str, verb: str) -> None:
    """Go's decoding refuses it (Python's would read infinity): no scores, no node."""
    doc = scenario({"extender.urlPrefix": server, "extender.prioritizeVerb": verb})
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {}


def test_a_session_open_answer_is_not_read(server: str) -> None:
    doc = scenario({"extender.urlPrefix": server, "extender.onSessionOpenVerb": "open-text",
                    "extender.predicateVerb": "fail"})
    # The predicate is registered (the open succeeded), and it refuses every node.
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {}


def test_an_allocate_func_error_undoes_the_placement(server: str) -> None:
    doc = scenario({"extender.urlPrefix": server, "extender.allocateFuncVerb": "alloc-error",
                    "extender.deallocateFuncVerb": "dealloc"})
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {}
    # Volcano's unallocate tells every handler, the refusing extender's too.
    verbs = [verb for verb, _ in Extender.calls if verb in ("alloc-error", "dealloc")]
    assert verbs[:2] == ["alloc-error", "dealloc"]
    assert verbs.count("alloc-error") == verbs.count("dealloc")


def test_only_the_resources_a_pod_asks_for_make_it_interesting(server: str) -> None:
    """Volcano's IsInterested reads the containers' requests: the implicit pods is asked
    by none, cpu and memory only by a pod that asks them."""
    for managed in (["cpu"], ["pods"]):
        doc = scenario({"extender.urlPrefix": server, "extender.predicateVerb": "fail",
                        "extender.managedResources": managed})
        doc["tasks"] = [{"name": "a", "job": "ok", "requests": {"memory": "1Gi"}},
                        {"name": "b", "job": "blocked", "requests": {"example.com/x": 1}}]
        for node in doc["nodes"]:
            node["allocatable"]["example.com/x"] = 1
        Extender.calls = []
        binds = run_scenario(parse_scenario(doc, source="<test>")).binds
        assert set(binds) == {"default/a", "default/b"}, managed
        assert not any(verb == "fail" for verb, _ in Extender.calls)


def test_managed_resources_leave_other_tasks_alone(server: str) -> None:
    doc = scenario({"extender.urlPrefix": server, "extender.predicateVerb": "fail",
                    "extender.managedResources": ["example.com/fpga"]})
    assert run_scenario(parse_scenario(doc, source="<test>")).binds == {
        "default/a": "n1", "default/b": "n1"}
    assert not any(verb == "fail" for verb, _ in Extender.calls)


def test_a_verb_that_is_no_string_is_no_verb(server: str) -> None:
    doc = scenario({"extender.urlPrefix": server, "extender.predicateVerb": 123})
    assert run_scenario(parse_scenario(doc, source="<test>")).binds != {}
    assert Extender.calls == []


def test_a_failed_call_counts_against_unless_ignorable(server: str) -> None:
    from batchsched.api.job import JobInfo, PodGroup
    from batchsched.api.queue import QueueInfo
    from batchsched.api.task import TaskInfo
    from batchsched.api.types import Vote
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.extender import ExtenderPlugin

    verbs = {f"extender.{verb}Verb": "fail" for verb in
             ("preemptable", "jobEnqueueable", "queueOverused", "jobReady")}
    job = JobInfo.from_podgroup(PodGroup("pg"))
    task = TaskInfo.create("default", "t", job.uid)
    strict = ExtenderPlugin(Arguments({"extender.urlPrefix": server, **verbs}))
    lenient = ExtenderPlugin(Arguments({"extender.urlPrefix": server, "extender.ignorable": True,
                                        **verbs}))
    # Volcano answers (nil, Reject) or (nil, Permit): a vote with no victims either way.
    assert strict.victims("preemptable", task, [task]) == []
    assert lenient.victims("preemptable", task, [task]) == []
    assert (strict.job_enqueueable(job), lenient.job_enqueueable(job)) == (Vote.REJECT,
                                                                           Vote.PERMIT)
    assert (strict.queue_overused(QueueInfo("q")), lenient.queue_overused(QueueInfo("q"))) == (
        True, False)
    # Volcano's JobReady answers `!ignorable` to a failed call.
    assert (strict.job_ready(job), lenient.job_ready(job)) == (True, False)


def test_an_answer_past_volcano_s_body_limit_fails_the_call(server: str) -> None:
    """Volcano's TestMaxBodySizeLimit2 (extender_test.go, commit ed72c7c8, Apache-2.0):
    ``http.MaxBytesReader`` with ``maxBodySize = 10 << 20`` fails an answer whose value
    runs past it. Go's ``http.Client{}`` has no timeout, so neither does the plugin."""
    from batchsched.framework.arguments import Arguments
    from batchsched.plugins.extender import ExtenderError, ExtenderPlugin

    plugin = ExtenderPlugin(Arguments({"extender.urlPrefix": server,
                                       "extender.httpTimeout": "0s"}))
    with pytest.raises(ExtenderError, match="request body too large"):
        plugin.send("oversized", {"task": {}, "node": {}})


def gang_eviction_scenario(action: str, prefix: str) -> dict[str, Any]:
    """n1 and n2 are free, n3 holds a low-priority task (of another queue, for
    gangreclaim); the high-priority task fits anywhere once it goes."""
    queues = ("q1", "q2") if action == "gangreclaim" else ("q1", "q1")
    return {
        "version": 1, "name": f"{action} when scoring fails",
        "config": {"actions": action, "tiers": [{"plugins": [
            {"name": "priority"}, {"name": "gang"}, {"name": "proportion"},
            {"name": "extender", "arguments": {
                "extender.urlPrefix": prefix, "extender.prioritizeVerb": "fail"}}]}]},
        "priorityClasses": [{"name": "high", "value": 1000}, {"name": "low", "value": 10}],
        "queues": [{"name": name} for name in sorted(set(queues))],
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": 2, "memory": "2Gi", "pods": 10}}
                  for i in (1, 2, 3)],
        "jobs": [{"name": "victim", "queue": queues[0], "minMember": 0, "phase": "Running",
                  "priorityClassName": "low"},
                 {"name": "pj", "queue": queues[1], "minMember": 1, "phase": "Inqueue",
                  "priorityClassName": "high"}],
        "tasks": [{"name": "v1", "job": "victim", "node": "n3", "phase": "Running",
                   "requests": {"cpu": 2, "memory": "1Gi"}},
                  {"name": "p1", "job": "pj", "requests": {"cpu": 2, "memory": "1Gi"}}],
    }


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
def test_gang_eviction_takes_the_future_idle_nodes_when_scoring_the_idle_ones_fails(
        server: str, action: str) -> None:
    # Volcano's prioritizeNodesForSimulate: the idle group (n1, n2) yields no node when
    # its scoring fails, and the future-idle group (n3, alone: not scored) is tried next.
    decisions = run_scenario(parse_scenario(gang_eviction_scenario(action, server),
                                            source="<test>"))
    assert decisions.evicted == ["default/v1"]
    assert decisions.pipelined == {"default/pj": {"default/p1": "n3"}}


def test_a_code_volcano_does_not_know_passes_the_node_and_ends_the_predicates(
        server: str) -> None:
    """Volcano's PredicateFn returns the extender's status (its code kept as given) and
    asks no later plugin; allocate's check fails none for a code it does not know."""
    doc = scenario({"extender.urlPrefix": server, "extender.predicateVerb": "pred-pending"})
    doc["config"]["tiers"][0]["plugins"].append({"name": "predicates"})
    for task in doc["tasks"]:
        task["nodeSelector"] = {"disk": "ssd"}  # no node has it: predicates would refuse
    binds = run_scenario(parse_scenario(doc, source="<test>")).binds
    assert set(binds) == {"default/a", "default/b"}


@pytest.mark.parametrize("managed", ["nvidia.com/gpu", ["cpu", 3], {"cpu": 1}])
def test_managed_resources_that_are_no_list_of_names_are_refused(managed: Any) -> None:
    """Volcano decodes the argument into a []string and exits when it cannot."""
    from batchsched.errors import PluginError

    doc = scenario({"extender.urlPrefix": "http://127.0.0.1:9",
                    "extender.managedResources": managed})
    with pytest.raises(PluginError, match=r"extender\.managedResources must be a list"):
        run_scenario(parse_scenario(doc, source="<test>"))


def test_a_loopback_extender_is_called_directly_whatever_the_proxy_settings(
        server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Go's default transport never sends a request to localhost or a loopback address
    # through the proxy the environment names.
    for variable in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")
    for variable in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    # urllib reads the environment's proxies when it builds its shared opener.
    monkeypatch.setattr(urllib.request, "_opener", None)
    decisions = run_scenario(parse_scenario(scenario({
        "extender.urlPrefix": server, "extender.predicateVerb": "predicate"}),
        source="<test>"))
    assert decisions.binds == {"default/a": "n1", "default/b": "n1"}
    assert [verb for verb, _ in Extender.calls].count("predicate") >= 1


def test_the_session_open_request_carries_namespaces_with_quotas_and_revocable_nodes(
        server: str) -> None:
    document = scenario({"extender.urlPrefix": server, "extender.onSessionOpenVerb": "open"})
    document["nodes"][0]["labels"] = {"volcano.sh/revocable-zone": "rz1"}
    document["resourceQuotas"] = [{"name": "rq1", "namespace": "default",
                                   "hard": {"cpu": 8, "memory": "16G",
                                            "requests.memory": "16G"}}]
    run_scenario(parse_scenario(document, source="<test>"))
    opened = Extender.calls[0][1]
    assert set(opened["RevocableNodes"]) == {"n1"}
    assert opened["RevocableNodes"]["n1"]["Name"] == "n1"
    # The quantities as the quota's status holds them: in the format they were given.
    assert opened["NamespaceInfo"] == {"default": {"Name": "default", "QuotaStatus": {
        "rq1": {"hard": {"cpu": "8", "memory": "16G", "requests.memory": "16G"}}}}}


def test_a_managed_resource_a_device_model_hides_still_makes_the_task_interesting(
        server: str) -> None:
    # Volcano's IsInterested reads the pod's containers: an Ascend vNPU's memory is one
    # of their requests, though the session's resource requests leave it to deviceshare.
    document = yaml.safe_load((EXAMPLES / "ascend-vnpus.yaml").read_text())
    document["config"]["tiers"][1]["plugins"].append({"name": "extender", "arguments": {
        "extender.urlPrefix": server, "extender.predicateVerb": "pred-caps",
        "extender.managedResources": ["huawei.com/Ascend310P-memory"]}})
    decisions = run_scenario(parse_scenario(document, source="<test>"))
    asked = {body["task"]["UID"] for verb, body in Extender.calls if verb == "pred-caps"}
    assert asked == {"default/notebook-1-0", "default/notebook-2-0", "default/inference-0"}
    assert decisions.binds == {"default/trainer-0": "atlas-a"}
