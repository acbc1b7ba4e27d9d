"""One bounded, thread-safe least-recently-used store for the caches a warm query reads.

A query re-reads the same files, masks the same texts, weighs the same chunks and parses the
same notebooks as the query before it (issue 16). Each of those keeps what it worked out in a
:class:`BoundedLRU`, bounded by entries and, where the entries vary in size, by their total
size, so a long notebook session holds a known amount of memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLRU(Generic[K, V]):
    """A mapping that forgets its least recently used entries past ``max_items`` entries or
    ``max_size`` in total (each entry's size is ``size(value)``). A value over a quarter of
    ``max_size`` is not kept at all: it would push out everything else.

    >>> cache = BoundedLRU(max_items=2)
    >>> cache.put("a", 1); cache.put("b", 2); cache.get("a")
    1
    >>> cache.put("c", 3)  # "b" was used least recently
    >>> cache.get("b") is None, len(cache)
    (True, 2)
    >>> sized = BoundedLRU(max_items=100, max_size=20, size=len)
    >>> for k, text in enumerate(["abcde", "fghij", "klmno", "pqrst", "uvw"]):  # 23 > 20: the first goes
    ...     sized.put(k, text)
    >>> sized.get(0), sized.get(4), sized.total
    (None, 'uvw', 18)
    >>> sized.put(9, "x" * 6); sized.get(9) is None  # over a quarter of 20
    True
    """

    def __init__(self, max_items: int, max_size: int | None = None, size: Callable[[V], int] | None = None) -> None:
        self.max_items, self.max_size = max_items, max_size
        self._size = size or (lambda value: 1)
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self.total = 0
        """The summed size of the entries kept."""
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key`` (replacing what was kept), then forget the least recently
        used entries until both bounds hold."""
        size = self._size(value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.total -= old[1]
            if self.max_size is not None and size > self.max_size // 4:
                return
            self._entries[key] = (value, size)
            self.total += size
            while len(self._entries) > self.max_items or (self.max_size is not None and self.total > self.max_size):
                _, (_, dropped) = self._entries.popitem(last=False)
                self.total -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.total = 0

    def __len__(self) -> int:
        return len(self._entries)
