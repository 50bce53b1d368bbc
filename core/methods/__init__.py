"""Writing methods. Each is a small async generator of events registered by name; importing
this package registers them all:

    rat            rat, rat-step                              (001)
    baselines      direct, cot, rag-1, rag-5                  (001's baselines)
    rat_ablations  rat-noncausal, cot-rag                     (001's ablations)
    itrg           itrg-refine, itrg-refresh                  (003)
    aag            aag, aag-nosum, aag-nocr, aag-noqr         (002)
    furepa         furepa                                     (004)

What the methods share is in ``core.methods.helpers``; the registry and the context a method
receives are in ``core.methods.base``.
"""

from core.methods.base import METHODS, MethodContext, MethodInfo, get_method, register, unsourced  # noqa: F401

# The import order is the registry's order, which the Writer's method list follows.
# isort: off
from core.methods import rat  # noqa: F401
from core.methods import baselines  # noqa: F401
from core.methods import rat_ablations  # noqa: F401
from core.methods import itrg  # noqa: F401
from core.methods import aag  # noqa: F401
from core.methods import furepa  # noqa: F401
# isort: on
