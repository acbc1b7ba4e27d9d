"""loom-nb: decide what context a local LLM gets, and see that decision.

The public API is this flat namespace; the modules behind it are implementation.

>>> from loom_nb import Loom, HashingEmbedder
>>> loom = Loom(embedder=HashingEmbedder())
>>> loom.add("Ranking combines eleven weighted signals into one score.").ids
['n1']
"""

from .core.classify import Classification, Segment, classify, split_input
from .core.concepts import ConceptQuality
from .core.config import SIGNALS, LoomConfig, Weights
from .core.query import Query
from .core.relink import ThresholdPlan
from .chat.decisions import DecisionGraph
from .demo import open_sample
from .embed import CachedEmbedder, Embedder, HashingEmbedder, MiniLMEmbedder, OllamaEmbedder
from .core.engine import AddResult, Loom, QueryResult
from .core.errors import (
    EmbeddingMismatchError,
    LoomError,
    ModelNotFoundError,
    OllamaStreamError,
    OllamaTimeoutError,
    OllamaUnavailableError,
    SessionConflictError,
    SessionFormatError,
    SessionLockedError,
    StaleReferenceError,
    UnknownNodeError,
    WorkspaceNotConfirmedError,
)
from .core.graph import ConceptNode, ContentNode, LinkReport, LoomGraph, Provenance, Reference, extractive_name
from .core.pack import MODES, Budget, Mode, NodeDecision, choose_mode, compute_budget
from .core.rank import Ranking, rank
from .chat.session import Session, Turn, Zones
from .core.tokens import ContextWindow, UnknownModelWarning, count_tokens
from .ollama import OllamaNamer
from .ollama.context_window import context_window
from . import views as _views  # noqa: F401,E402 - registers how the engine's objects show themselves
from . import _moved

_moved.install()  # the module paths before the layered layout, for one release

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "Budget",
    "CachedEmbedder",
    "Classification",
    "ConceptNode",
    "ConceptQuality",
    "ContentNode",
    "ContextWindow",
    "DecisionGraph",
    "Embedder",
    "EmbeddingMismatchError",
    "HashingEmbedder",
    "LinkReport",
    "Loom",
    "LoomConfig",
    "LoomError",
    "LoomGraph",
    "MODES",
    "MiniLMEmbedder",
    "Mode",
    "ModelNotFoundError",
    "NodeDecision",
    "OllamaEmbedder",
    "OllamaNamer",
    "OllamaStreamError",
    "OllamaTimeoutError",
    "OllamaUnavailableError",
    "Provenance",
    "Query",
    "QueryResult",
    "Ranking",
    "Reference",
    "SIGNALS",
    "Segment",
    "Session",
    "SessionConflictError",
    "SessionFormatError",
    "SessionLockedError",
    "StaleReferenceError",
    "ThresholdPlan",
    "Turn",
    "UnknownNodeError",
    "Weights",
    "WorkspaceNotConfirmedError",
    "Zones",
    "choose_mode",
    "classify",
    "compute_budget",
    "context_window",
    "UnknownModelWarning",
    "count_tokens",
    "extractive_name",
    "open_sample",
    "rank",
    "split_input",
]


def __getattr__(name: str):
    # ``loom_nb.engine`` and the other pre-layout module paths, as attributes
    return _moved.old_attribute(name)
