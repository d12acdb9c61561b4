"""A priority queue ordered by a "comes before" function (Volcano's ``util.PriorityQueue``).

Volcano's queue is Go's ``container/heap``, and so is this one's heap: items pushed
one at a time sift up, a pop swaps the first and last items and sifts the new first
one down until no child comes before it. Where the order is consistent this is any
binary heap; where it is not (hierarchical drf compares a queue by its parent's
share, which moves while the queue waits in the heap), which item comes out depends
on the heap's steps, and these are Go's. Python's ``heapq`` pops differently (it
sinks the new first item to a leaf, then lifts it), so it serves only the keyed
queue, whose keys never change while queued.
"""

from __future__ import annotations

import copy
import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

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
            for item in items:  # pushed one at a time, as Volcano fills its queues
                self.push(item)

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

    @classmethod
    def by_key(cls, key: Callable[[T], Any], items: Iterable[T] = _NO_ITEMS) -> PriorityQueue[T]:
        """A queue ordered by ``key(item)``, smaller first, worked out once per push.

        It orders as a comparison of the keys would, provided an item's key does not
        change while it waits in the queue (take it out and push it again when it
        does); equal keys come out in insertion order. Heap steps then compare keys
        in C instead of calling a comparison.

        >>> q = PriorityQueue.by_key(len, ["ccc", "a", "bb"])
        >>> [q.pop() for _ in range(len(q))]
        ['a', 'bb', 'ccc']
        """
        return _KeyedPriorityQueue(key, items)

    def _entry(self, item: T) -> _Entry[T] | _ComparedEntry[T]:
        if self._compare is not None:
            return _ComparedEntry(item, next(self._seq), self._compare)
        return _Entry(item, next(self._seq), self._less)

    def push(self, item: T) -> None:
        heap = self._heap
        heap.append(self._entry(item))
        _up(heap, len(heap) - 1)

    def discard(self, item: T) -> None:
        """Take ``item`` (the object itself) out, wherever it is (Go's ``heap.Remove``
        at its place); O(n) to find it."""
        heap = self._heap
        index = next((i for i, entry in enumerate(heap) if entry.item is item), None)
        while index is not None:
            last = len(heap) - 1
            if index != last:
                heap[index], heap[last] = heap[last], heap[index]
                if not _down(heap, index, last):
                    _up(heap, index)
            heap.pop()
            index = next((i for i, entry in enumerate(heap) if entry.item is item), None)

    def pop(self) -> T:
        heap = self._heap
        last = len(heap) - 1
        if last < 0:
            raise IndexError("pop from an empty priority queue")
        heap[0], heap[last] = heap[last], heap[0]
        _down(heap, 0, last)
        return heap.pop().item

    def peek(self) -> T:
        return self._heap[0].item

    def empty(self) -> bool:
        return not self._heap

    def clone(self) -> PriorityQueue[T]:
        """An independent queue of the same items and order (Volcano's ``Clone``)."""
        twin = copy.copy(self)
        twin._heap = list(self._heap)
        return twin

    def adopt(self, other: PriorityQueue[T]) -> None:
        """Hold what ``other`` (a clone of this queue) holds now."""
        self._heap = list(other._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


class _KeyedPriorityQueue(PriorityQueue[T]):
    """:meth:`PriorityQueue.by_key`: heap entries are ``(key, insertion number, item)``."""

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = _NO_ITEMS) -> None:
        super().__init__(_never_called)
        self._key = key
        if items is not _NO_ITEMS:
            seq = self._seq
            self._keyed: list[tuple[Any, int, T]] = [(key(i), next(seq), i) for i in items]
            heapq.heapify(self._keyed)
        else:
            self._keyed = []
        self._heap = self._keyed  # type: ignore[assignment]  # len and truth read it

    def push(self, item: T) -> None:
        heapq.heappush(self._keyed, (self._key(item), next(self._seq), item))

    def pop(self) -> T:
        return heapq.heappop(self._keyed)[2]

    def discard(self, item: T) -> None:
        self._keyed = [entry for entry in self._keyed if entry[2] is not item]
        heapq.heapify(self._keyed)
        self._heap = self._keyed  # type: ignore[assignment]

    def peek(self) -> T:
        return self._keyed[0][2]

    def clone(self) -> PriorityQueue[T]:
        twin = copy.copy(self)
        twin._keyed = list(self._keyed)
        twin._heap = twin._keyed  # type: ignore[assignment]
        return twin

    def adopt(self, other: PriorityQueue[T]) -> None:
        assert isinstance(other, _KeyedPriorityQueue)
        self._keyed = list(other._keyed)
        self._heap = self._keyed  # type: ignore[assignment]


def _up(heap: list[Any], child: int) -> None:
    """Go's ``container/heap`` up: lift ``heap[child]`` while it comes before its parent."""
    while child > 0:
        parent = (child - 1) // 2
        if not heap[child] < heap[parent]:
            break
        heap[parent], heap[child] = heap[child], heap[parent]
        child = parent


def _down(heap: list[Any], start: int, size: int) -> bool:
    """Go's ``container/heap`` down over the first ``size`` entries: sink
    ``heap[start]`` while its first-coming child comes before it; whether it moved."""
    parent = start
    while True:
        child = 2 * parent + 1
        if child >= size:
            break
        right = child + 1
        if right < size and heap[right] < heap[child]:
            child = right
        if not heap[child] < heap[parent]:
            break
        heap[parent], heap[child] = heap[child], heap[parent]
        parent = child
    return parent > start


def _never_called(left: object, right: object) -> bool:
    raise AssertionError("a keyed queue compares keys, not items")
