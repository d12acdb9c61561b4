"""A priority queue ordered by a "comes before" function (Volcano's ``util.PriorityQueue``)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["PriorityQueue"]

T = TypeVar("T")

#: The default ``items``: most queues start empty and are filled by pushes, and
#: skip building and heapifying an empty list (allocate makes one queue per job).
_NO_ITEMS: tuple[()] = ()


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, seq: int, less: Callable[[T, T], bool]) -> None:
        self.item = item
        self.seq = seq
        self.less = less

    def __lt__(self, other: _Entry[T]) -> bool:
        if self.less(self.item, other.item):
            return True
        if self.less(other.item, self.item):
            return False
        return self.seq < other.seq


class _ComparedEntry(Generic[T]):
    __slots__ = ("compare", "item", "seq")

    def __init__(self, item: T, seq: int, compare: Callable[[T, T], int]) -> None:
        self.item = item
        self.seq = seq
        self.compare = compare

    def __lt__(self, other: _ComparedEntry[T]) -> bool:
        result = self.compare(self.item, other.item)
        if result:
            return result < 0
        return self.seq < other.seq


class PriorityQueue(Generic[T]):
    """Pop returns the item that comes first under ``less(a, b)``.

    Items the order cannot tell apart come out in insertion order, so a run is
    reproducible even when the order function is not total.

    >>> q = PriorityQueue(lambda a, b: a > b, [1, 3, 2])
    >>> [q.pop() for _ in range(len(q))]
    [3, 2, 1]
    """

    def __init__(
        self, less: Callable[[T, T], bool], items: Iterable[T] = _NO_ITEMS, *,
        compare: Callable[[T, T], int] | None = None,
    ) -> None:
        self._less = less
        self._compare = compare
        self._seq = itertools.count()
        self._heap: list[_Entry[T] | _ComparedEntry[T]] = []
        if items is not _NO_ITEMS:
            self._heap = [self._entry(i) for i in items]
            heapq.heapify(self._heap)

    @classmethod
    def by_comparison(
        cls, compare: Callable[[T, T], int], items: Iterable[T] = _NO_ITEMS
    ) -> PriorityQueue[T]:
        """A queue ordered by a three-way comparison (<0: the first argument comes
        first), called once per heap comparison. It orders exactly as
        ``PriorityQueue(lambda a, b: compare(a, b) < 0)`` when the comparison is
        antisymmetric (``compare(a, b)`` and ``compare(b, a)`` of opposite signs, or
        both 0), at about half the calls."""
        return cls(lambda a, b: compare(a, b) < 0, items, compare=compare)

    def _entry(self, item: T) -> _Entry[T] | _ComparedEntry[T]:
        if self._compare is not None:
            return _ComparedEntry(item, next(self._seq), self._compare)
        return _Entry(item, next(self._seq), self._less)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, self._entry(item))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def peek(self) -> T:
        return self._heap[0].item

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
