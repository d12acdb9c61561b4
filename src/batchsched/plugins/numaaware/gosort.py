"""The order Go's ``sort.Slice`` leaves a list in, for any ``less`` function.

Volcano's CPU assignment sorts cores and sockets with ``less`` functions that are
not strict weak orders (each returns true when the left side wins on *any* of
several criteria). The order such a sort produces is whatever the sorting
algorithm makes of it, so reproducing Volcano's assignments needs Go's algorithm
itself: the pattern-defeating quicksort of Go's standard library (BSD-style
licence), with its insertion sort for up to 12 elements, its deterministic pattern
breaking and its heapsort fallback, as in the Go release Volcano's ``go.mod`` names
(1.26): its pattern breaking draws from the xorshift with shifts 13, 7 and 17 (Go's
fix of golang/go#70144; releases before it used 13, 17 and 5). With a strict weak order
the result is simply a sorted list (equal elements in some order).

>>> items = [3, 1, 2]
>>> sort_slice(items, lambda left, right: left < right)
>>> items
[1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["sort_slice"]

T = TypeVar("T")

_MAX_INSERTION = 12
_SHORTEST_NINTHER = 50
_MAX_SWAPS = 4 * 3
_SHORTEST_SHIFTING = 50
_MAX_STEPS = 5
_UINT64 = (1 << 64) - 1

# How sorted the pivot sample looked (Go's sortedHint).
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2


def sort_slice(items: list[T], less: Callable[[T, T], bool]) -> None:
    """Sort ``items`` in place exactly as Go's ``sort.Slice(items, less)`` would."""
    length = len(items)
    _GoSort(items, less).pdqsort(0, length, length.bit_length())


class _GoSort(Generic[T]):
    """One run of Go's ``pdqsort_func`` over a list (indices are absolute)."""

    def __init__(self, items: list[T], less: Callable[[T, T], bool]) -> None:
        self.items = items
        self.less_items = less

    def less(self, i: int, j: int) -> bool:
        return self.less_items(self.items[i], self.items[j])

    def swap(self, i: int, j: int) -> None:
        items = self.items
        items[i], items[j] = items[j], items[i]

    def pdqsort(self, a: int, b: int, limit: int) -> None:
        balanced = partitioned = True
        while True:
            length = b - a
            if length <= _MAX_INSERTION:
                self.insertion_sort(a, b)
                return
            if limit == 0:
                self.heap_sort(a, b)
                return
            if not balanced:
                self.break_patterns(a, b)
                limit -= 1
            pivot, hint = self.choose_pivot(a, b)
            if hint == _DECREASING:
                self.reverse(a, b)
                pivot = (b - 1) - (pivot - a)
                hint = _INCREASING
            if balanced and partitioned and hint == _INCREASING \
                    and self.partial_insertion_sort(a, b):
                return
            if a > 0 and not self.less(a - 1, pivot):
                a = self.partition_equal(a, b, pivot)
                continue
            mid, partitioned = self.partition(a, b, pivot)
            left, right = mid - a, b - mid
            threshold = length // 8
            if left < right:
                balanced = left >= threshold
                self.pdqsort(a, mid, limit)
                a = mid + 1
            else:
                balanced = right >= threshold
                self.pdqsort(mid + 1, b, limit)
                b = mid

    def insertion_sort(self, a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and self.less(j, j - 1):
                self.swap(j, j - 1)
                j -= 1

    def heap_sort(self, a: int, b: int) -> None:
        high = b - a
        for i in range((high - 1) // 2, -1, -1):
            self.sift_down(i, high, a)
        for i in range(high - 1, -1, -1):
            self.swap(a, a + i)
            self.sift_down(0, i, a)

    def sift_down(self, low: int, high: int, first: int) -> None:
        root = low
        while True:
            child = 2 * root + 1
            if child >= high:
                return
            if child + 1 < high and self.less(first + child, first + child + 1):
                child += 1
            if not self.less(first + root, first + child):
                return
            self.swap(first + root, first + child)
            root = child

    def partition(self, a: int, b: int, pivot: int) -> tuple[int, bool]:
        """Elements below the pivot, the pivot, the rest; and whether nothing moved."""
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while i <= j and self.less(i, a):
            i += 1
        while i <= j and not self.less(j, a):
            j -= 1
        if i > j:
            self.swap(j, a)
            return j, True
        self.swap(i, j)
        i += 1
        j -= 1
        while True:
            while i <= j and self.less(i, a):
                i += 1
            while i <= j and not self.less(j, a):
                j -= 1
            if i > j:
                break
            self.swap(i, j)
            i += 1
            j -= 1
        self.swap(j, a)
        return j, False

    def partition_equal(self, a: int, b: int, pivot: int) -> int:
        """Elements equal to the pivot, then the greater ones; where the latter start."""
        self.swap(a, pivot)
        i, j = a + 1, b - 1
        while True:
            while i <= j and not self.less(a, i):
                i += 1
            while i <= j and self.less(a, j):
                j -= 1
            if i > j:
                return i
            self.swap(i, j)
            i += 1
            j -= 1

    def partial_insertion_sort(self, a: int, b: int) -> bool:
        """Fix a few out-of-order neighbours; whether the range ends up sorted."""
        i = a + 1
        for _ in range(_MAX_STEPS):
            while i < b and not self.less(i, i - 1):
                i += 1
            if i == b:
                return True
            if b - a < _SHORTEST_SHIFTING:
                return False
            self.swap(i, i - 1)
            if i - a >= 2:
                # Go stops at index 1 here, not at a: kept as is.
                for j in range(i - 1, 0, -1):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
            if b - i >= 2:
                for j in range(i + 1, b):
                    if not self.less(j, j - 1):
                        break
                    self.swap(j, j - 1)
        return False

    def break_patterns(self, a: int, b: int) -> None:
        length = b - a
        if length < 8:
            return
        state = length
        modulus = 1 << length.bit_length()
        middle = a + (length // 4) * 2
        for index in range(middle - 1, middle + 2):
            state ^= (state << 13) & _UINT64
            state ^= state >> 7
            state ^= (state << 17) & _UINT64
            other = state & (modulus - 1)
            if other >= length:
                other -= length
            self.swap(index, a + other)

    def choose_pivot(self, a: int, b: int) -> tuple[int, int]:
        length = b - a
        swaps = [0]
        step = length // 4
        i, j, k = a + step, a + step * 2, a + step * 3
        if length >= 8:
            if length >= _SHORTEST_NINTHER:
                i = self.median(i - 1, i, i + 1, swaps)
                j = self.median(j - 1, j, j + 1, swaps)
                k = self.median(k - 1, k, k + 1, swaps)
            j = self.median(i, j, k, swaps)
        if swaps[0] == 0:
            return j, _INCREASING
        if swaps[0] == _MAX_SWAPS:
            return j, _DECREASING
        return j, _UNKNOWN

    def median(self, a: int, b: int, c: int, swaps: list[int]) -> int:
        a, b = self.order(a, b, swaps)
        b, c = self.order(b, c, swaps)
        a, b = self.order(a, b, swaps)
        return b

    def order(self, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
        if self.less(b, a):
            swaps[0] += 1
            return b, a
        return a, b

    def reverse(self, a: int, b: int) -> None:
        i, j = a, b - 1
        while i < j:
            self.swap(i, j)
            i += 1
            j -= 1
