"""capacity-card: per-card-model quotas for queues (the ``capacity-card`` plugin).

Volcano's queues limit resources by resource name, so an H200 and a 4090 are both
``nvidia.com/gpu``. This plugin limits them by **card model** instead, with the
shape of Volcano's ``capacity`` plugin (queue attributes, enqueueable, allocatable,
allocate/deallocate events), for flat queues:

* the cards a node offers come from its labels and allocatable resources
  (:mod:`batchsched.plugins.capacity_card.cards`): whole cards (``NVIDIA-H200``), MIG
  slices (``NVIDIA-H200/mig-1g.18gb-mixed``), MPS slices
  (``NVIDIA-H800/mps-80g*1/2``); other scalar resources are not limited here;
* a queue's **capability** is its ``volcano.sh/card.quota`` annotation (card model
  to count; a model it does not name cannot be used) plus cpu and memory: the
  queue's ``capability`` where it writes them, else the cluster's remainder (the
  session's total minus every queue's guarantee, plus the queue's own guarantee);
* a task asks for a card with ``volcano.sh/card.name`` (one model, or ``A|B``
  alternatives in preference order) and for how many through the card's resource
  in its requests; a job may announce ``volcano.sh/card.request`` (card to total)
  for its admission before its tasks exist;
* with ``cardUnlimitedCpuMemory``, tasks and jobs that use a card are neither
  limited nor charged on cpu and memory.

Decisions:

* **queue order**: higher queue priority first, then the smaller share (the largest
  ``allocated / deserved``, deserved being the queue's cpu and memory ``deserved``
  and its card quota);
* **job enqueueable**: the queue is Open and, for cpu, memory and each card the job
  asks for, ``request + allocated + inqueue - elastic <= capability``; the quotas of
  the models of an alternatives key (``A|B``) are pooled. **job enqueued** adds the
  job's request to the queue's inqueue;
* **allocatable**: the queue is Open and ``allocated + request <= capability`` for
  cpu and memory, and for the card: the model, or at least one alternative;
* **predicate**: a card task goes only to a node offering one of its models, and
  only while its queue has quota left for that model; a task that requests a
  node's card resource without naming a model does not go there;
* **node order**: for alternatives, ``100 * 0.5**index * nodeOrderWeight`` for the
  node offering the ``index``-th alternative (0 elsewhere);
* **allocate/deallocate events** charge (and refund) the model of the node the
  task landed on.

Refusals are recorded as ``Warning`` events on the job (enqueue) or the task
(allocatable), once per object and message in a session, e.g.
``Queue <cr-queue1> has insufficient <NVIDIA-H200> quota: requested <5000>, total
would be <5000>, but capability is <3000>``: card counts and cpu in milli-units and
memory in MiB, as the seed prints them. Malformed annotations never raise: the work
waits with an event naming the annotation.

Arguments: ``cardUnlimitedCpuMemory`` (bool, default false), ``nodeOrderWeight``
(positive float, default 1.0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from batchsched.api.fit import FitError, FitStatus
from batchsched.api.job import JobInfo
from batchsched.api.node import NodeInfo
from batchsched.api.queue import QueueInfo
from batchsched.api.queue_accounting import (
    deduct_scheduling_gated,
    dominant_share,
    exceeded_part,
    resource_max,
)
from batchsched.api.resource import CPU, MEMORY, DimensionDefault, Resource
from batchsched.api.task import TaskInfo
from batchsched.api.types import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    FitStatusCode,
    PodGroupPhase,
    TaskStatus,
    Vote,
)
from batchsched.framework.arguments import Arguments, warn_unreadable
from batchsched.framework.events import Event, EventHandler
from batchsched.framework.session import Session
from batchsched.kube.go_strconv import format_g
from batchsched.plugins.capacity_card.cards import (
    CARD_NAME_ANNOTATION,
    CARD_QUOTA_ANNOTATION,
    CARD_REQUEST_ANNOTATION,
    MULTI_CARD_SEPARATOR,
    CardAnnotationError,
    CardCatalog,
    parse_card_counts,
    parse_card_name,
)

__all__ = ["CapacityCardPlugin", "Charge", "QueueCards", "TaskCards", "format_amount"]

CARD_UNLIMITED_CPU_MEMORY = "cardUnlimitedCpuMemory"
NODE_ORDER_WEIGHT = "nodeOrderWeight"
MAX_NODE_SCORE = 100.0
NODE_ORDER_DECAY = 0.5

#: Event reasons.
INSUFFICIENT_CPU = "InsufficientCPUQuota"
INSUFFICIENT_MEMORY = "InsufficientMemoryQuota"
INSUFFICIENT_CARD = "InsufficientScalarQuota"
INVALID_CARD_REQUEST = "InvalidCardRequest"
INVALID_CARD_QUOTA = "InvalidCardQuota"
CARD_MODEL_NOT_FOUND = "CardModelNotFound"
QUEUE_NOT_OPEN = "QueueNotOpen"

_LEAVING = COMPLETED_STATUSES | {TaskStatus.RELEASING}
_MIB = 1024.0 * 1024.0


def format_amount(dimension: str, amount: float) -> str:
    """An amount as the events print it, in the seed's units: cards and cpu in
    milli-units, memory in MiB followed by `` Mi``, each number as Go's ``%v`` prints
    a float64.

    >>> format_amount("NVIDIA-H200", 5000), format_amount("cpu", 1500)
    ('5000', '1500')
    >>> format_amount("memory", 4 * 2**30), format_amount("NVIDIA-H200", 1e6)
    ('4096 Mi', '1e+06')
    """
    if dimension == MEMORY:
        return f"{format_g(amount / _MIB)} Mi"
    return format_g(amount)


@attrs.frozen
class TaskCards:
    """What a task asks of cards (read once per session).

    ``alternatives``: the models of ``volcano.sh/card.name`` in preference order
    (empty: the task names none); ``resource``: the resource they share; ``amount``:
    how much of it the task requests (milli-units); ``uses_card``: the task names a
    model or requests a card resource; ``problem`` (with its event ``reason``): why
    the request cannot be served, or None.
    """

    alternatives: tuple[str, ...] = ()
    resource: str | None = None
    amount: float = 0.0
    uses_card: bool = False
    problem: str | None = None
    reason: str = ""

    @property
    def key(self) -> str:
        """``A`` or ``A|B``: the name the request is counted under before placement."""
        return MULTI_CARD_SEPARATOR.join(self.alternatives)


@attrs.frozen
class Charge:
    """What a placed task costs its queue: cpu, memory and the model it landed on."""

    queue: str
    usage: Resource
    model: str | None


@attrs.define
class QueueCards:
    """A queue's card capability and usage (cpu, memory and card models by name).

    ``quota_problem`` says why the queue's card quota annotation could not be read
    (then no card may be used); ``allocated`` is charged by placed tasks,
    ``inqueue`` by admitted jobs not yet placed, ``elastic`` is what jobs hold beyond
    their request.
    """

    name: str
    is_open: bool
    capability: Resource
    quota_problem: str | None = None
    #: cpu and memory of the queue's ``deserved`` and its card quota: what its share
    #: (queue order) is measured against.
    deserved: Resource = attrs.field(factory=Resource)
    allocated: Resource = attrs.field(factory=Resource)
    inqueue: Resource = attrs.field(factory=Resource)
    elastic: Resource = attrs.field(factory=Resource)


class CapacityCardPlugin:
    """Card-model quotas for flat queues. See the module documentation."""

    name = "capacity-card"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        # A YAML boolean only: the plugin reads it with a plain type assertion, so a
        # quoted "true" leaves the option off (Volcano's GetBool would parse it).
        unlimited = arguments.get(CARD_UNLIMITED_CPU_MEMORY)
        if unlimited is not None and not isinstance(unlimited, bool):
            warn_unreadable(self.name, CARD_UNLIMITED_CPU_MEMORY, unlimited,
                            "a boolean (true or false, unquoted)", False)
        self.card_unlimited_cpu_memory = unlimited is True
        weight = arguments.get_float(NODE_ORDER_WEIGHT, 1.0, owner=self.name)
        if not (math.isfinite(weight) and weight > 0):
            warn_unreadable(self.name, NODE_ORDER_WEIGHT, weight, "a positive number", 1.0)
            weight = 1.0
        self.node_order_weight = weight
        arguments.warn_unknown(self.name, [CARD_UNLIMITED_CPU_MEMORY, NODE_ORDER_WEIGHT])
        self.catalog = CardCatalog()
        self.queues: dict[str, QueueCards] = {}
        #: task uid -> what its queue was charged when it was placed
        self.charged: dict[str, Charge] = {}
        self._task_cards: dict[str, TaskCards] = {}
        self._recorded: set[tuple[str, str]] = set()
        self._ssn: Session | None = None

    # -- session ---------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._task_cards = {}
        self._recorded = set()
        self.charged = {}
        # The seed reads the node lister, NotReady nodes included: their cards and the
        # cards their pods hold count (ssn.node_list has the Ready nodes only).
        nodes = [*ssn.node_list, *ssn.not_ready_nodes.values()]
        self.catalog = CardCatalog.from_nodes(nodes)
        self._build_queues(ssn)
        for job in ssn.jobs.values():
            self._account_job(job)

        ssn.add_queue_order_fn(self.name, self.queue_order)
        ssn.add_job_enqueueable_fn(self.name, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        ssn.add_allocatable_fn(self.name, self.allocatable)
        ssn.add_predicate_fn(self.name, self.predicate)
        ssn.add_node_order_fn(self.name, self.node_order)
        ssn.add_event_handler(EventHandler(
            allocate=self.on_allocate, deallocate=self.on_deallocate, plugin=self.name,
        ))

    def on_session_close(self, ssn: Session) -> None:
        self.queues = {}
        self.charged = {}
        self._task_cards = {}
        self._recorded = set()
        self._ssn = None

    def _build_queues(self, ssn: Session) -> None:
        total_guarantee = Resource()
        quotas: dict[str, tuple[dict[str, float], str | None]] = {}
        for queue in ssn.queues.values():
            if queue.guarantee is not None:
                total_guarantee.add(_cpu_memory(queue.guarantee))
            try:
                quotas[queue.name] = (parse_card_counts(
                    queue.annotations.get(CARD_QUOTA_ANNOTATION, ""), alternatives=False), None)
            except CardAnnotationError as exc:
                quotas[queue.name] = ({}, str(exc))
        # The cluster total of every node, NotReady ones included (the seed's node lister).
        cluster = _cpu_memory(ssn.total_resource)
        for node in ssn.not_ready_nodes.values():
            cluster.add(_cpu_memory(node.allocatable))
        remainder = exceeded_part(cluster, total_guarantee)
        # The queue order's figures (the pull request's): guarantees carry the card
        # quotas, and the cluster its cards.
        cards_guaranteed = total_guarantee.clone()
        for quota, _ in quotas.values():
            cards_guaranteed.add(Resource(scalars=quota))
        cards_left = exceeded_part(cluster.clone().add(Resource(scalars=self.catalog.totals)),
                                   cards_guaranteed)
        self.queues = {}
        for queue in ssn.queues.values():
            own = remainder.clone()
            if queue.guarantee is not None:
                own.add(_cpu_memory(queue.guarantee))
            capability = Resource()
            for dimension in (CPU, MEMORY):
                written = queue.capability is not None and queue.defines("capability", dimension)
                source = queue.capability if written and queue.capability else own
                capability.set(dimension, source.get(dimension))
            quota, problem = quotas[queue.name]
            capability.scalars.update(quota)
            self.queues[queue.name] = QueueCards(queue.name, queue.is_open, capability, problem,
                                                 deserved=_deserved(queue, quota, cards_left))

    def _account_job(self, job: JobInfo) -> None:
        attr = self.queues.get(job.queue)
        if attr is None:
            return
        allocated = Resource()
        for status in ALLOCATED_STATUSES:
            for task in job.tasks_in(status).values():
                charge = self._charge(task, attr.name)
                self.charged[task.uid] = charge
                allocated.add(charge.usage)
        attr.allocated.add(allocated)
        request, problem = self.job_request(job)
        if problem is not None:
            request = Resource()
        podgroup = job.podgroup
        phase = podgroup.phase
        # A Running job reserves the rest of its request only when it sets minResources
        # (capacity's rule); gated pods reserve nothing, so they hold no job back.
        if phase == PodGroupPhase.INQUEUE or (
            phase == PodGroupPhase.RUNNING and podgroup.min_resources is not None
            and job.allocated_task_num() >= job.min_available
        ):
            attr.inqueue.add(deduct_scheduling_gated(job, exceeded_part(request, allocated)))
        attr.elastic.add(exceeded_part(allocated, request))

    # -- reading tasks and jobs ----------------------------------------------------------------

    def task_cards(self, task: TaskInfo) -> TaskCards:
        """What ``task`` asks of cards (cached for the session)."""
        cached = self._task_cards.get(task.uid)
        if cached is None:
            cached = self._task_cards[task.uid] = self._read_task_cards(task)
        return cached

    def _read_task_cards(self, task: TaskInfo) -> TaskCards:
        requests_card = any(task.resreq.get(r) > 0 for r in self.catalog.card_resources)
        text = task.annotations.get(CARD_NAME_ANNOTATION, "")
        if not text.strip():
            return TaskCards(uses_card=requests_card)
        try:
            alternatives = parse_card_name(text)
        except CardAnnotationError as exc:
            return TaskCards(uses_card=True, reason=INVALID_CARD_REQUEST, problem=(
                f"Task <{task.uid}> has an invalid {CARD_NAME_ANNOTATION} annotation: {exc}"
            ))
        resources = {card: self.catalog.resource_for(card) for card in alternatives}
        known = {card: r for card, r in resources.items() if r is not None}
        cards = TaskCards(alternatives, uses_card=True)
        if not known:
            return attrs.evolve(cards, reason=CARD_MODEL_NOT_FOUND, problem=(
                f"Task <{task.uid}> asks for card <{cards.key}>, which no node offers"
            ))
        if len(set(known.values())) > 1:
            return attrs.evolve(cards, reason=INVALID_CARD_REQUEST, problem=_mixed_message(
                f"Task <{task.uid}>", CARD_NAME_ANNOTATION, cards.key, known))
        resource = next(iter(known.values()))
        amount = task.resreq.get(resource)
        cards = attrs.evolve(cards, resource=resource, amount=amount)
        if amount <= 0:
            return attrs.evolve(cards, reason=INVALID_CARD_REQUEST, problem=(
                f"Task <{task.uid}> asks for card <{cards.key}> but requests no {resource}"
            ))
        others = sorted(r for r in self.catalog.card_resources
                        if r != resource and task.resreq.get(r) > 0)
        if others:
            # Only the named card is paid for by the quota; a pod asks one card resource
            # (the seed refuses two).
            return attrs.evolve(cards, reason=INVALID_CARD_REQUEST, problem=(
                f"Task <{task.uid}> asks for card <{cards.key}> ({resource}) but also "
                f"requests {', '.join(others)}, which no card quota pays for"))
        return cards

    def job_request(self, job: JobInfo) -> tuple[Resource, str | None]:
        """The job's request in the quota's terms, or a problem that keeps it waiting.

        Cards: the tasks' card requests (a placed task under the model it was charged
        to, an unplaced one under ``A`` or ``A|B``) when some task names a card, else
        the ``volcano.sh/card.request`` annotation. Cpu and memory: the pod group's
        minResources, unless ``cardUnlimitedCpuMemory`` and the job uses a card.
        """
        cards = Resource()
        uses_card = False
        for task in job.tasks.values():
            if task.status in _LEAVING:
                continue
            wanted = self.task_cards(task)
            uses_card = uses_card or wanted.uses_card
            charge = self.charged.get(task.uid)
            if charge is not None and charge.model is not None:
                cards.scalars[charge.model] = (cards.scalars.get(charge.model, 0.0)
                                               + charge.usage.get(charge.model))
            elif wanted.problem is None and wanted.alternatives:
                cards.scalars[wanted.key] = cards.scalars.get(wanted.key, 0.0) + wanted.amount
        if not cards.scalars:
            text = job.podgroup.annotations.get(CARD_REQUEST_ANNOTATION, "")
            try:
                cards.scalars.update(parse_card_counts(text, alternatives=True))
            except CardAnnotationError as exc:
                return Resource(), (
                    f"Job <{job.uid}> has an invalid {CARD_REQUEST_ANNOTATION} annotation: "
                    f"{exc}; the job waits until it is fixed"
                )
            for key in cards.scalars:
                resources = {card: self.catalog.resource_for(card)
                             for card in key.split(MULTI_CARD_SEPARATOR)}
                known = {card: r for card, r in resources.items() if r is not None}
                if len(set(known.values())) > 1:
                    return Resource(), _mixed_message(
                        f"Job <{job.uid}>", CARD_REQUEST_ANNOTATION, key, known)
        minimum = job.podgroup.min_resources
        uses_card = uses_card or bool(cards.scalars) or (
            minimum is not None and any(minimum.get(r) > 0 for r in self.catalog.card_resources)
        )
        if minimum is not None and not (self.card_unlimited_cpu_memory and uses_card):
            cards.milli_cpu, cards.memory = minimum.milli_cpu, minimum.memory
        return cards, None

    def _charge(self, task: TaskInfo, queue: str) -> Charge:
        """What a task placed on ``task.node_name`` costs its queue: the model its node
        offers among its alternatives; else (node gone, slices re-partitioned) the model
        when it names just one; else no card."""
        wanted = self.task_cards(task)
        usage = Resource()
        if not (self.card_unlimited_cpu_memory and wanted.uses_card):
            usage.milli_cpu, usage.memory = task.resreq.milli_cpu, task.resreq.memory
        model: str | None = None
        resource: str | None = None
        node_cards = self.catalog.nodes.get(task.node_name)
        if node_cards is not None:
            model = next((a for a in wanted.alternatives if node_cards.offers(a)), None)
            if model is not None:
                resource = node_cards.resources[model]
        if model is None and len(wanted.alternatives) == 1:
            model = wanted.alternatives[0]
            resource = self.catalog.resource_for(model)
        if model is not None and resource is not None and task.resreq.get(resource) > 0:
            usage.scalars[model] = task.resreq.get(resource)
        else:
            model = None
        return Charge(queue, usage, model)

    # -- decisions ---------------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Higher queue priority first, then the smaller share: the largest
        ``allocated / deserved`` over the dimensions ``deserved`` holds (cards
        counted under the model of the node each task landed on)."""
        if left.priority != right.priority:
            return right.priority - left.priority
        lattr, rattr = self.queues.get(left.name), self.queues.get(right.name)
        if lattr is None or rattr is None:
            return 0
        lshare = dominant_share(lattr.allocated, lattr.deserved)
        rshare = dominant_share(rattr.allocated, rattr.deserved)
        return -1 if lshare < rshare else (1 if lshare > rshare else 0)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        """Admit the job while its request fits its queue's capability (see the module)."""
        attr = self.queues.get(job.queue)
        if attr is None:
            return Vote.ABSTAIN
        if not attr.is_open:
            self._record(job.uid, QUEUE_NOT_OPEN,
                         f"Queue <{attr.name}> is not open; the job cannot be enqueued")
            return Vote.REJECT
        request, problem = self.job_request(job)
        if problem is not None:
            self._record(job.uid, INVALID_CARD_REQUEST, problem)
            return Vote.REJECT
        total = request.clone().add(attr.allocated).add(attr.inqueue).sub_unchecked(attr.elastic)
        refusal = self._cpu_memory_refusal(attr, request, total, job=True)
        if refusal is None:
            refusal = self._job_card_refusal(attr, request, total)
        if refusal is not None:
            self._record(job.uid, *refusal)
            return Vote.REJECT
        return Vote.PERMIT

    def _job_card_refusal(
        self, attr: QueueCards, request: Resource, total: Resource
    ) -> tuple[str, str] | None:
        keys = sorted(k for k, amount in request.scalars.items() if amount > 0)
        if keys and attr.quota_problem is not None:
            return INVALID_CARD_QUOTA, _invalid_quota_message(attr)
        for key in keys:
            alternatives = key.split(MULTI_CARD_SEPARATOR)
            pooled = set(alternatives)
            used = sum(amount for name, amount in total.scalars.items()
                       if set(name.split(MULTI_CARD_SEPARATOR)) <= pooled)
            capability = sum(attr.capability.scalars.get(a, 0.0) for a in alternatives)
            if used > capability:
                return INSUFFICIENT_CARD, _quota_message(
                    attr.name, key, request.scalars[key], [used], [capability])
        return None

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve the admitted job's request in its queue's inqueue."""
        attr = self.queues.get(job.queue)
        if attr is None:
            return
        request, problem = self.job_request(job)
        if problem is None:
            attr.inqueue.add(deduct_scheduling_gated(job, request))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether the queue may take the task: Open, and allocated + request within the
        capability on cpu, memory and (one of) the task's card model(s)."""
        attr = self.queues.get(queue.name)
        if attr is None:
            return True
        if not attr.is_open:
            self._record(task.uid, QUEUE_NOT_OPEN,
                         f"Queue <{attr.name}> is not open; the task cannot be allocated")
            return False
        wanted = self.task_cards(task)
        if wanted.problem is not None:
            self._record(task.uid, wanted.reason, wanted.problem)
            return False
        request = Resource()
        if not (self.card_unlimited_cpu_memory and wanted.uses_card):
            request.milli_cpu, request.memory = task.resreq.milli_cpu, task.resreq.memory
        total = attr.allocated.clone().add(request)
        refusal = self._cpu_memory_refusal(attr, request, total)
        if refusal is not None:
            self._record(task.uid, *refusal)
            return False
        if not wanted.alternatives:
            return True
        if attr.quota_problem is not None:
            self._record(task.uid, INVALID_CARD_QUOTA, _invalid_quota_message(attr))
            return False
        totals = [attr.allocated.scalars.get(a, 0.0) + wanted.amount for a in wanted.alternatives]
        capabilities = [attr.capability.scalars.get(a, 0.0) for a in wanted.alternatives]
        if any(t <= c for t, c in zip(totals, capabilities, strict=True)):
            return True
        self._record(task.uid, INSUFFICIENT_CARD, _quota_message(
            attr.name, wanted.key, wanted.amount, totals, capabilities))
        return False

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """A card task fits only a node offering one of its models with quota left; a
        task requesting a node's card resource without naming a model fits none."""
        wanted = self.task_cards(task)
        node_cards = self.catalog.nodes.get(node.name)
        if not wanted.alternatives:
            if node_cards is None:
                return None
            for resource in sorted(set(node_cards.resources.values())):
                if task.resreq.get(resource) > 0:
                    return _unfit(task, node, f"{resource} requested without "
                                  f"{CARD_NAME_ANNOTATION}", resolvable=False)
            return None
        if wanted.problem is not None:
            return _unfit(task, node, f"invalid card request {wanted.key}", resolvable=False)
        model = None
        if node_cards is not None:
            model = next((a for a in wanted.alternatives if node_cards.offers(a)), None)
        if model is None or node_cards is None:
            return _unfit(task, node, f"node offers no card {wanted.key}", resolvable=False)
        attr = self._queue_of(task)
        if attr is None:
            return None
        would_be = attr.allocated.scalars.get(model, 0.0) + task.resreq.get(
            node_cards.resources[model])
        if would_be > attr.capability.scalars.get(model, 0.0):
            return _unfit(task, node, f"queue {attr.name} has no {model} quota left",
                          resolvable=True)
        return None

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """Prefer the node offering an earlier alternative: ``100 * 0.5**index * weight``."""
        wanted = self.task_cards(task)
        node_cards = self.catalog.nodes.get(node.name)
        if len(wanted.alternatives) < 2 or node_cards is None:
            return 0.0
        for index, card in enumerate(wanted.alternatives):
            if node_cards.offers(card):
                return MAX_NODE_SCORE * NODE_ORDER_DECAY**index * self.node_order_weight
        return 0.0

    # -- events -------------------------------------------------------------------------------

    def on_allocate(self, event: Event) -> None:
        """Charge the task's queue with the model of the node it landed on."""
        task = event.task
        attr = self._queue_of(task)
        if attr is None:
            return
        previous = self.charged.pop(task.uid, None)
        if previous is not None:
            self._refund(previous)
        charge = self._charge(task, attr.name)
        self.charged[task.uid] = charge
        attr.allocated.add(charge.usage)

    def on_deallocate(self, event: Event) -> None:
        """Give back exactly what the task was charged."""
        charge = self.charged.pop(event.task.uid, None)
        if charge is not None:
            self._refund(charge)

    def _refund(self, charge: Charge) -> None:
        attr = self.queues.get(charge.queue)
        if attr is not None:
            attr.allocated.sub_unchecked(charge.usage)

    # -- helpers ------------------------------------------------------------------------------

    def _queue_of(self, task: TaskInfo) -> QueueCards | None:
        ssn = self._ssn
        job = ssn.jobs.get(task.job) if ssn is not None else None
        return self.queues.get(job.queue) if job is not None else None

    def _cpu_memory_refusal(
        self, attr: QueueCards, request: Resource, total: Resource, *, job: bool = False
    ) -> tuple[str, str] | None:
        for dimension, reason in ((CPU, INSUFFICIENT_CPU), (MEMORY, INSUFFICIENT_MEMORY)):
            asked, would_be = request.get(dimension), total.get(dimension)
            limit = attr.capability.get(dimension)
            if asked > 0 and would_be > limit:
                # The pull request's job message on memory names the queue bare.
                bare = job and dimension == MEMORY
                return reason, _quota_message(attr.name, dimension, asked, [would_be], [limit],
                                              bare_queue=bare)
        return None

    def _record(self, obj: str, reason: str, message: str) -> None:
        """A Warning event, once per object and message in a session."""
        if self._ssn is None or (obj, message) in self._recorded:
            return
        self._recorded.add((obj, message))
        self._ssn.record_event(obj, "Warning", reason, message)


def _cpu_memory(resource: Resource) -> Resource:
    return Resource(resource.milli_cpu, resource.memory)


def _deserved(queue: QueueInfo, quota: dict[str, float], cards_left: Resource) -> Resource:
    """What the queue order measures a queue's share against, as the pull request
    works it out: its ``deserved`` cpu and memory and its card quota, each no more than
    its real capability (what the cluster has beyond every queue's guarantee, card
    quotas counted as guarantees, plus its own) and no less than its guarantee."""
    guarantee = _cpu_memory(queue.guarantee) if queue.guarantee is not None else Resource()
    guarantee.scalars.update(quota)
    deserved = _cpu_memory(queue.deserved) if queue.deserved is not None else Resource()
    deserved.scalars.update(quota)
    deserved.min_dimension(cards_left.clone().add(guarantee), DimensionDefault.INFINITY)
    return resource_max(deserved, guarantee)


def _joined(dimension: str, amounts: Iterable[float]) -> str:
    return MULTI_CARD_SEPARATOR.join(format_amount(dimension, a) for a in amounts)


def _quota_message(queue: str, dimension: str, requested: float,
                   totals: list[float], capabilities: list[float], *,
                   bare_queue: bool = False) -> str:
    """The seed's wording (cpu and memory as the capacity-card pull request words
    them, its job message on memory naming the queue without brackets); for
    alternatives, the totals and capabilities of each model in the same order as the
    models (``<3000|2000>``)."""
    subject = {CPU: "CPU", MEMORY: "memory"}.get(dimension)
    what = f"{subject} quota" if subject is not None else f"<{dimension}> quota"
    named = queue if bare_queue else f"<{queue}>"
    return (f"Queue {named} has insufficient {what}: requested "
            f"<{format_amount(dimension, requested)}>, total would be "
            f"<{_joined(dimension, totals)}>, but capability is "
            f"<{_joined(dimension, capabilities)}>")


def _mixed_message(subject: str, annotation: str, key: str, resources: dict[str, str]) -> str:
    listed = ", ".join(f"{card}: {resource}" for card, resource in resources.items())
    return (f"{subject} asks in {annotation} for card alternatives <{key}> that use "
            f"different resources ({listed}); alternatives must share one resource name, "
            "so choose one card model for this workload")


def _invalid_quota_message(attr: QueueCards) -> str:
    return (f"Queue <{attr.name}> has an invalid {CARD_QUOTA_ANNOTATION} annotation: "
            f"{attr.quota_problem}; no card quota is granted until it is fixed")


def _unfit(task: TaskInfo, node: NodeInfo, reason: str, *, resolvable: bool) -> FitError:
    code = (FitStatusCode.UNSCHEDULABLE if resolvable
            else FitStatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE)
    return FitError(task.namespace, task.name, node.name,
                    [FitStatus(code, reason, CapacityCardPlugin.name)])
