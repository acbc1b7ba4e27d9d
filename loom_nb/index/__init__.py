"""Indexing a workspace: walk it, outline its files, keep reference nodes fresh."""

from .indexer import IndexReport, index_workspace
from .structure import link_structure, resolve_import
from .symbols import Outline, Symbol, outline, skeleton
from .units import Unit, file_units
from .walk import FileEntry, WalkLimits, WalkResult, read_text, resolve_inside, walk_workspace

__all__ = [
    "FileEntry",
    "IndexReport",
    "Outline",
    "Symbol",
    "Unit",
    "WalkLimits",
    "WalkResult",
    "file_units",
    "index_workspace",
    "link_structure",
    "outline",
    "read_text",
    "resolve_import",
    "resolve_inside",
    "skeleton",
    "walk_workspace",
]
