"""The framework: Session, Statement and extension points.

Plugin discovery lives in :mod:`batchsched.framework.registry` (imported on demand).
"""

from batchsched.framework.arguments import Arguments, parse_duration
from batchsched.framework.events import (
    Event,
    EventHandler,
    EvictionContext,
    EvictionKind,
    RecordedEvent,
    ValidateResult,
)
from batchsched.framework.extension_points import EXTENSION_POINTS, ExtensionPoint, Rule
from batchsched.framework.session import Session
from batchsched.framework.statement import Operation, OperationKind, Statement

__all__ = [
    "EXTENSION_POINTS",
    "Arguments",
    "Event",
    "EventHandler",
    "EvictionContext",
    "EvictionKind",
    "ExtensionPoint",
    "Operation",
    "OperationKind",
    "RecordedEvent",
    "Rule",
    "Session",
    "Statement",
    "ValidateResult",
    "parse_duration",
]
