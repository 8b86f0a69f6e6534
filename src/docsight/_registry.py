"""Name → implementation registries with lazy imports and plugin entry points.

A registry maps a short name (``"lance"``, ``"minilm-onnx"``) to ``"module:attribute"``. Nothing is
imported until the name is used, so ``import docsight`` stays light, and a missing optional
dependency surfaces as a :class:`MissingDependencyError` naming the extra to install. Third-party
packages add implementations through the entry-point group ``docsight.<kind>``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from docsight.errors import MissingDependencyError, UnknownBackendError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "package.module:Attribute"
    extra: str | None = None
    description: str = ""


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._plugins_loaded = False

    def register(
        self, name: str, target: str, *, extra: str | None = None, description: str = ""
    ) -> None:
        if ":" not in target:
            raise ValueError(f"registry target must be 'module:attribute', got {target!r}")
        self._entries[name] = Entry(name, target, extra, description)

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=f"docsight.{self.kind}"):
            self._entries.setdefault(ep.name, Entry(ep.name, ep.value, None, "plugin"))

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        if name not in self._entries:
            self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise UnknownBackendError(f"unknown {self.kind} {name!r} (known: {known})") from None

    def load(self, name: str) -> Any:
        """Import and return the registered object (usually a class or factory)."""
        entry = self.entry(name)
        module_name, _, attr = entry.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise MissingDependencyError(f"{self.kind} {name!r}", entry.extra, str(exc)) from exc
        return getattr(module, attr)

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.load(name)(*args, **kwargs)  # type: ignore[no-any-return]
