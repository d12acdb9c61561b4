"""Caches: the protocol a host implements, and the in-memory implementation."""

from batchsched.cache.memory import Bind, Eviction, MemoryCache
from batchsched.cache.protocol import Cache

__all__ = ["Bind", "Cache", "Eviction", "MemoryCache"]
