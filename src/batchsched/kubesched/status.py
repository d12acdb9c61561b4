"""A kube-scheduler plugin's answer: a code, reasons, and the plugin that gave it."""

from __future__ import annotations

import attrs

from batchsched.api.types import FitStatusCode

__all__ = ["Code", "Status"]

#: kube-scheduler's status codes (the same values as Volcano's and the predicates').
Code = FitStatusCode


@attrs.frozen
class Status:
    """kube-scheduler's ``framework.Status``.

    >>> Status.unschedulable("too many pods", plugin="Gang").is_rejected()
    True
    """

    code: FitStatusCode = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def error(cls, reason: str | BaseException, *, plugin: str = "") -> Status:
        """An error; given an exception, its message (kube's ``AsStatus(err)``)."""
        return cls(Code.ERROR, (str(reason),), plugin)

    @classmethod
    def unschedulable(cls, reason: str, *, plugin: str = "", unresolvable: bool = False
                      ) -> Status:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return cls(code, (reason,), plugin)

    @classmethod
    def wait(cls, reason: str = "", *, plugin: str = "") -> Status:
        return cls(Code.WAIT, (reason,) if reason else (), plugin)

    @classmethod
    def skip(cls, *, plugin: str = "") -> Status:
        return cls(Code.SKIP, (), plugin)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, with or without hope (not an error)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def with_plugin(self, plugin: str) -> Status:
        """The status as given by ``plugin``: the framework names the plugin it ran,
        whatever name the status carried (kube's ``SetPlugin``; a plugin may hand on
        another's status, and the hints asked are then its own)."""
        return self if self.plugin == plugin else attrs.evolve(self, plugin=plugin)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


_SUCCESS = Status()
