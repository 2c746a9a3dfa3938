"""DSPy's response cache, able to forget the reply it just served, and storing no credentials.

A reply that fails to parse would otherwise be served from the cache on every rerun, with the same error, until
the cache folder is deleted. `ResponseCache` remembers, per thread, the key of the last reply it stored or served;
the adapter calls `forget_last_reply()` when that reply cannot be parsed, so the next run asks the model again.

LiteLLM keeps the call's `api_base`, `user:password@` included, in each response's `_hidden_params`; the cache
stores a copy with those scrubbed.

DSPy's key leaves the server (`api_base`) out, so switching BOOKRAG_LM_API_BASE to another server with the same model
string replayed the first server's answers. `ResponseCache` keys by the server too, without its credentials.
(Temperature, the token cap and the local model's GGUF, `make_lm`'s `metadata`, are request arguments DSPy keys by.)
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from dspy.clients.cache import Cache

from bookrag.redaction import mask_url, scrub

_SERVER_ARGS = ("api_base", "base_url")


class ResponseCache(Cache):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._last = threading.local()

    def cache_key(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> str:
        """DSPy's key, with the server in it; the server without its credentials (a new password changes no
        answer)."""
        servers = {name: mask_url(str(request[name])) for name in _SERVER_ARGS if request.get(name)}
        request = {name: value for name, value in request.items() if name not in _SERVER_ARGS} | servers
        ignored = [name for name in ignored_args_for_cache_key or () if name not in _SERVER_ARGS]
        return super().cache_key(request, ignored)

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> Any:
        self._remember(request, ignored_args_for_cache_key)
        return super().get(request, ignored_args_for_cache_key)

    def put(self, request: dict[str, Any], value: Any, ignored_args_for_cache_key: list[str] | None = None,
            enable_memory_cache: bool = True) -> None:
        self._remember(request, ignored_args_for_cache_key)
        super().put(request, _without_credentials(value), ignored_args_for_cache_key, enable_memory_cache)

    def forget_last_reply(self) -> bool:
        """Drop the entry this thread last stored or served, from memory and disk. True if there was one."""
        key = getattr(self._last, "key", None)
        self._last.key = None
        if key is None:
            return False
        with self._lock:
            found = self.memory_cache.pop(key, None) is not None
        if self.enable_disk_cache:
            found = bool(self.disk_cache.delete(key)) or found
        return found

    def _remember(self, request: dict[str, Any], ignored: list[str] | None) -> None:
        try:
            self._last.key = self.cache_key(request, ignored)
        except Exception:  # noqa: BLE001 - an uncacheable request is not cached either: nothing to forget
            self._last.key = None


def _without_credentials(value: Any) -> Any:
    """`value`, or for a LiteLLM response a copy whose `_hidden_params` hold no secret (the caller's response, in
    the LM's history, is left as it is)."""
    hidden = getattr(value, "_hidden_params", None)
    if not isinstance(hidden, dict):
        return value
    value = copy.deepcopy(value)
    value._hidden_params = _scrubbed(hidden)
    return value


def _scrubbed(item: Any) -> Any:
    if isinstance(item, str):
        return scrub(item)
    if isinstance(item, dict):
        return {key: _scrubbed(value) for key, value in item.items()}
    if isinstance(item, list | tuple):
        return type(item)(_scrubbed(value) for value in item)
    return item
