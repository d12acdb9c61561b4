"""The built-in actions and plugins, registered through the same hooks as third parties'.

This module is batchsched's own entry point in the ``batchsched`` group (see
``pyproject.toml``): the registry finds it exactly as it finds a third-party
distribution's, and never imports it by name. Each action or plugin module is
imported only when a configuration names it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from typing import Any

from batchsched.framework.arguments import Arguments
from batchsched.plugin import ActionSpec, PluginSpec, hookimpl

__all__ = ["ACTIONS", "PLUGINS"]

#: action name -> "module:Class"
ACTIONS: dict[str, str] = {
    "enqueue": "batchsched.actions.enqueue:EnqueueAction",
    "allocate": "batchsched.actions.allocate:AllocateAction",
    "backfill": "batchsched.actions.backfill:BackfillAction",
    "preempt": "batchsched.actions.preempt:PreemptAction",
    "reclaim": "batchsched.actions.reclaim:ReclaimAction",
    "strict-allocate": "batchsched.actions.strict_allocate:StrictAllocateAction",
    "easy-backfill": "batchsched.actions.easy_backfill:EasyBackfillAction",
    "shuffle": "batchsched.actions.shuffle:ShuffleAction",
    "gangpreempt": "batchsched.actions.gang_preempt:GangPreemptAction",
    "gangreclaim": "batchsched.actions.gang_reclaim:GangReclaimAction",
}

#: plugin name -> "module:Class"
PLUGINS: dict[str, str] = {
    "gang": "batchsched.plugins.gang:GangPlugin",
    "priority": "batchsched.plugins.priority:PriorityPlugin",
    "conformance": "batchsched.plugins.conformance:ConformancePlugin",
    "overcommit": "batchsched.plugins.overcommit:OvercommitPlugin",
    "sla": "batchsched.plugins.sla:SlaPlugin",
    "pdb": "batchsched.plugins.pdb:PdbPlugin",
    "resourcequota": "batchsched.plugins.resourcequota:ResourceQuotaPlugin",
    "drf": "batchsched.plugins.drf:DrfPlugin",
    "proportion": "batchsched.plugins.proportion:ProportionPlugin",
    "capacity": "batchsched.plugins.capacity:CapacityPlugin",
    "predicates": "batchsched.plugins.predicates:PredicatesPlugin",
    "nodeorder": "batchsched.plugins.nodeorder:NodeOrderPlugin",
    "binpack": "batchsched.plugins.binpack:BinpackPlugin",
    "nodegroup": "batchsched.plugins.nodegroup:NodeGroupPlugin",
    "tdm": "batchsched.plugins.tdm:TdmPlugin",
    "resource-strategy-fit": "batchsched.plugins.resource_strategy_fit:ResourceStrategyFitPlugin",
    "capacity-card": "batchsched.plugins.capacity_card:CapacityCardPlugin",
    "sjf": "batchsched.plugins.sjf:SjfPlugin",
    "wfp3": "batchsched.plugins.wfp3:Wfp3Plugin",
    "unicep": "batchsched.plugins.unicep:UnicepPlugin",
    "f1": "batchsched.plugins.f1:F1Plugin",
    "kube-plugins": "batchsched.plugins.kube_plugins:KubePluginsPlugin",
    "deviceshare": "batchsched.plugins.deviceshare:DeviceSharePlugin",
    "extender": "batchsched.plugins.extender:ExtenderPlugin",
    "task-topology": "batchsched.plugins.task_topology:TaskTopologyPlugin",
    "usage": "batchsched.plugins.usage:UsagePlugin",
    "rescheduling": "batchsched.plugins.rescheduling:ReschedulingPlugin",
    "cdp": "batchsched.plugins.cdp:CooldownProtectionPlugin",
    "numa-aware": "batchsched.plugins.numaaware:NumaAwarePlugin",
    "gpu-random": "batchsched.plugins.gpu_random:RandomPlugin",
    "gpu-dotprod": "batchsched.plugins.gpu_dotprod:DotProductPlugin",
    "gpu-clustering": "batchsched.plugins.gpu_clustering:ClusteringPlugin",
    "gpu-packing": "batchsched.plugins.gpu_packing:PackingPlugin",
    "gpu-bestfit": "batchsched.plugins.gpu_bestfit:BestFitPlugin",
    "fgd": "batchsched.plugins.fgd:FgdPlugin",
    "network-topology-aware":
        "batchsched.plugins.network_topology_aware:NetworkTopologyAwarePlugin",
}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _available(table: dict[str, str]) -> Iterable[tuple[str, str]]:
    for name, target in table.items():
        module = target.partition(":")[0]
        if importlib.util.find_spec(module) is not None:
            yield name, target


def _factory(target: str) -> Any:
    """Build the action or plugin ``target`` names, importing its module on first use."""
    def build(arguments: Arguments) -> Any:
        return _load(target)(arguments)
    return build


@hookimpl
def batchsched_register_plugins() -> Iterable[PluginSpec]:
    return [PluginSpec(name, _factory(target)) for name, target in _available(PLUGINS)]


@hookimpl
def batchsched_register_actions() -> Iterable[ActionSpec]:
    return [ActionSpec(name, _factory(target)) for name, target in _available(ACTIONS)]


@hookimpl
def batchsched_register_kube_plugins() -> Iterable[Any]:
    from batchsched.kubesched.builtin_plugins import BUILTIN_KUBE_PLUGINS

    return list(BUILTIN_KUBE_PLUGINS)
