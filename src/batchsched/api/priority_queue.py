"""A priority queue ordered by a "comes before" function (Volcano's ``util.PriorityQueue``)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["PriorityQueue"]

T = TypeVar("T")


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


class PriorityQueue(Generic[T]):
    """Pop returns the item that comes first under ``less(a, b)``.

    Items the order cannot tell apart come out in insertion order, so a run is
    reproducible even when the order function is not total.

    >>> q = PriorityQueue(lambda a, b: a > b, [1, 3, 2])
    >>> [q.pop() for _ in range(len(q))]
    [3, 2, 1]
    """

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._seq = itertools.count()
        self._heap: list[_Entry[T]] = [_Entry(i, next(self._seq), less) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, next(self._seq), self._less))

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
