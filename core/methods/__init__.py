"""Writing methods. Each is a small async generator of events registered by name; importing
this package registers them all."""

from core.methods.base import METHODS, MethodContext, MethodInfo, Task, get_method, register  # noqa: F401
from core.methods import rat  # noqa: F401  (registers rat, rat-step)
