"""The columnar fast path: a layer over the scalar plugins' answers that plugins opt
into (a column form of their points) and that sessions use wherever it can be exact,
unless ``BATCHSCHED_FAST_PATH=0``.

The scalar extension points (``ssn.predicate``, ``ssn.node_order``, ...) are
the reference: they decide. A plugin may also offer a *column form* of its
node points, answering for every node at once over
:class:`~batchsched.columnar.node_columns.NodeColumns` (numpy arrays mirroring
the session's nodes). It registers it here from ``on_session_open``::

    from batchsched import columnar

    def on_session_open(self, ssn):
        ssn.add_node_order_fn(self.name, self.score)                 # the reference
        columnar.add_node_order_fn(ssn, self.name, self.score_all)   # its column form
        columnar.add_template_fn(ssn, self.name, self.template)      # optional

A column form must give exactly the scalar function's answer, or raise
:class:`VectorFallback` for a task it cannot answer exactly. When every
enabled plugin of a node point offers one, the node selector of allocate and
backfill (:mod:`batchsched.columnar.selector`) answers from the columns, and so
do the candidate scans of preempt and reclaim (their predicate reads statuses
differently: a plugin offers that reading with ``add_preempt_predicate_fn``);
otherwise they take the scalar path, which decides the same. The session never
learns which plugins offer a column form, and a plugin that offers none works
unchanged.

==========================================  ===========================================
module                                      holds
==========================================  ===========================================
:mod:`~batchsched.columnar.forms`           the registration protocol and how the forms
                                            of several plugins combine, tier by tier
:mod:`~batchsched.columnar.node_columns`    the nodes as arrays, refreshed per change
:mod:`~batchsched.columnar.kube_columns`    the Kubernetes view of the nodes as arrays
:mod:`~batchsched.columnar.scores`          kube-scheduler's and binpack's score
                                            formulas over columns
:mod:`~batchsched.columnar.selector`        the vectorised node selector
:mod:`~batchsched.columnar.kept_answers`    answers kept per task template
:mod:`~batchsched.columnar.victim_rows`     the tasks that could be victims, as rows,
                                            and the plugins' victim bounds
:mod:`~batchsched.columnar.eviction_room`   the nodes where no eviction can make room
==========================================  ===========================================
"""

from batchsched.columnar.forms import (
    VectorFallback,
    add_batch_node_order_fn,
    add_node_order_fn,
    add_predicate_fn,
    add_preempt_predicate_fn,
    add_template_fn,
    stacked,
)
from batchsched.columnar.node_columns import Candidates, NodeColumns
from batchsched.columnar.victim_rows import VictimRows, add_preemptable_bound_fn

__all__ = [
    "Candidates",
    "NodeColumns",
    "VectorFallback",
    "VictimRows",
    "add_batch_node_order_fn",
    "add_node_order_fn",
    "add_predicate_fn",
    "add_preempt_predicate_fn",
    "add_preemptable_bound_fn",
    "add_template_fn",
    "stacked",
]
