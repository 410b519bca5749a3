"""Users' own passes: xDSL `ModulePass`es loaded from a Python file or an installed package.

    stc-opt m.mlir --load-pass-plugin my_passes.py -p my-pass     # every ModulePass defined in the file
    [project.entry-points."stc_mlir.passes"]                       # in an installed package's pyproject
    my-pass = "my_package.passes:MyPass"

A plugin file registers every concrete `ModulePass` subclass it defines (not the ones it
imports), under the pass's `name`; `STC_PASSES = [A, B]` in the file lists them explicitly
instead. Installed packages name theirs in the `stc_mlir.passes` entry-point group, loaded
only when the pass is used. Once registered, a plugin pass is used like ours: `stc-opt -p`,
`stc-run --required-pass`, `compile(required_pass=...)`. docs/pass-authoring.md walks
through writing, testing and running one.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points

from xdsl.passes import ModulePass

from stc_mlir import universe
from stc_mlir.errors import StcError
from stc_mlir.passes import registry

ENTRY_POINT_GROUP = "stc_mlir.passes"
BUILTIN = tuple(universe.PASSES)
"""stc-mlir's own passes (before any plugin registers)."""

PassFactory = Callable[[], type[ModulePass]]


class PluginError(StcError):
    """A pass plugin that cannot be loaded: missing file, import error, no or clashing passes."""


def load_pass_plugin(path: str) -> list[type[ModulePass]]:
    """The ModulePass classes a plugin file provides (its `STC_PASSES`, else every concrete
    ModulePass subclass defined in it), checked for a usable name."""
    if not os.path.isfile(path):
        raise PluginError(f"--load-pass-plugin: no such file '{path}'")
    stem = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(f"stc_pass_plugin_{stem}", path)
    if spec is None or spec.loader is None:
        raise PluginError(f"--load-pass-plugin: '{path}' is not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # anything the user's file raises while importing
        raise PluginError(f"--load-pass-plugin: cannot import '{path}': {type(e).__name__}: {e}") from None
    listed = getattr(module, "STC_PASSES", None)
    if listed is not None:
        bad = [p for p in listed if not (inspect.isclass(p) and issubclass(p, ModulePass))]
        if bad:
            raise PluginError(f"--load-pass-plugin: {path}: STC_PASSES holds {bad[0]!r}, not a ModulePass class")
        passes = list(listed)
    else:
        passes = [obj for obj in vars(module).values()
                  if inspect.isclass(obj) and issubclass(obj, ModulePass) and obj.__module__ == module.__name__
                  and not inspect.isabstract(obj)]
    if not passes:
        raise PluginError(f"--load-pass-plugin: {path} defines no xDSL ModulePass subclass")
    for cls in passes:
        if not isinstance(getattr(cls, "name", None), str) or not cls.name:
            raise PluginError(f"--load-pass-plugin: {path}: pass class {cls.__name__} has no `name = \"...\"`")
    return passes


def installed_passes() -> dict[str, PassFactory]:
    """Passes of installed packages (the `stc_mlir.passes` entry points), imported lazily."""

    def factory(ep) -> PassFactory:
        def load() -> type[ModulePass]:
            cls = ep.load()
            if not (inspect.isclass(cls) and issubclass(cls, ModulePass)):
                raise PluginError(f"entry point {ENTRY_POINT_GROUP} '{ep.name}' = {ep.value} is not a ModulePass class")
            return cls

        return load

    return {ep.name: factory(ep) for ep in entry_points(group=ENTRY_POINT_GROUP)}


_SOURCES: dict[str, str] = {}
"""Plugin pass name -> where it came from, so loading the same plugin twice is harmless."""


def register(passes: Mapping[str, PassFactory], source: str, taken: Mapping[str, object] = {}) -> list[str]:
    """Add `passes` from `source` to stc-mlir's pass registry (`stc_mlir.passes.registry.PASSES`:
    the pipeline's required_pass, and stc-opt through `universe.PASSES`, a view of it); a name
    registered already (ours, xDSL's in `taken`, another plugin's) is an error. Returns the
    names."""
    for name, factory in passes.items():
        if _SOURCES.get(name) == source:
            continue
        if name in taken or name in universe.PASSES:
            owner = _SOURCES.get(name, "stc-mlir" if name in universe.PASSES else "xDSL")
            raise PluginError(f"{source}: pass '{name}' is already registered by {owner}; rename it")
        registry.PASSES[name] = factory
        _SOURCES[name] = source
    return list(passes)


def register_plugin_file(path: str, taken: Mapping[str, object] = {}) -> list[str]:
    """Load a plugin file and register its passes; their names."""
    passes = load_pass_plugin(path)
    return register({cls.name: _constant(cls) for cls in passes}, os.path.abspath(path), taken)


def register_installed(taken: Mapping[str, object] = {}) -> list[str]:
    """Register the installed packages' passes; their names."""
    return register(installed_passes(), f"entry point group '{ENTRY_POINT_GROUP}'", taken)


def _constant(cls: type[ModulePass]) -> PassFactory:
    return lambda: cls


def describe(cls: type[ModulePass]) -> str:
    """A pass's one-line description: the first sentence of its docstring (or its module's)."""
    doc = inspect.getdoc(cls) or ""
    if not doc or doc.startswith(cls.__name__ + "("):  # the dataclass's generated signature
        doc = inspect.getdoc(inspect.getmodule(cls)) or ""
        doc = doc.split(":", 1)[1] if doc.startswith(getattr(cls, "name", "") + ":") else doc
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = paragraph.split(". ")[0].rstrip(".:")
    return sentence[:1].upper() + sentence[1:] if sentence else "(no description)"


def options(cls: type[ModulePass]) -> str:
    """`name=default` for each of a pass's options (its dataclass fields)."""
    if not dataclasses.is_dataclass(cls):
        return ""
    shown = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            shown.append(f"{f.name}={f.default}")
        elif f.default_factory is not dataclasses.MISSING:
            shown.append(f"{f.name}={f.default_factory()}")
        else:
            shown.append(f.name)
    return " ".join(shown)
