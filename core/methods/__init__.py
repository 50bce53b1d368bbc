"""Writing methods. Each is a small async generator of events registered by name; importing
this package registers them all."""

from core.methods.base import METHODS, MethodContext, MethodInfo, get_method, register  # noqa: F401
from core.methods import rat  # noqa: F401  (registers rat, rat-step)
from core.methods import baselines  # noqa: F401  (direct, cot, rag-1, rag-5: 001's baselines)
from core.methods import rat_ablations  # noqa: F401  (rat-noncausal, cot-rag: 001's ablations)
from core.methods import itrg  # noqa: F401  (itrg-refine, itrg-refresh: 003)
from core.methods import aag  # noqa: F401  (aag, aag-nosum, aag-nocr, aag-noqr: 002)
from core.methods import furepa  # noqa: F401  (furepa: 004)
