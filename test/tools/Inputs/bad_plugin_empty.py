"""A pass plugin that defines no pass (it only imports one)."""
from xdsl.passes import ModulePass  # noqa: F401
