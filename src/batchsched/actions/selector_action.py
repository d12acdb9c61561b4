"""What allocate and backfill share: their arguments and a replaceable node selector."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchsched.actions.placement import NodeSelector, NodeSelectorFactory
from batchsched.columnar.selector import default_node_selector
from batchsched.framework.arguments import Arguments

if TYPE_CHECKING:
    from batchsched.framework.session import Session

__all__ = ["PREDICATE_ERROR_CACHE_KEY", "SelectorAction"]

#: Action argument turning Volcano's predicate-error cache on or off (default on).
PREDICATE_ERROR_CACHE_KEY = "predicateErrorCacheEnable"


class SelectorAction:
    """Base of the actions that choose nodes through a
    :class:`~batchsched.actions.placement.NodeSelector`.

    ``node_selector_factory`` builds the per-task node choice; replace it (on a
    subclass or an instance) to plug in another implementation.
    """

    name = ""
    node_selector_factory: NodeSelectorFactory = default_node_selector
    #: The subclass's own arguments (any other is reported as not read).
    arguments_read: tuple[str, ...] = ()

    def __init__(self, arguments: Arguments | None = None) -> None:
        self.arguments = arguments if arguments is not None else Arguments()
        self.error_cache_enabled = self.arguments.get_bool(PREDICATE_ERROR_CACHE_KEY, True,
                                                        owner=self.name)
        self.arguments.warn_unknown(self.name, [PREDICATE_ERROR_CACHE_KEY, *self.arguments_read],
                                    kind="action")
        # Read through the class so that a plain function set there is not bound as a
        # method; an instance may then override it.
        self.node_selector_factory = type(self).node_selector_factory

    def initialize(self) -> None:
        """Nothing to prepare: all state lives in one ``execute``."""

    def uninitialize(self) -> None:
        """Nothing to release."""

    def new_selector(self, ssn: Session) -> NodeSelector:
        """The node selector for one execution."""
        return self.node_selector_factory(ssn, self.error_cache_enabled)
