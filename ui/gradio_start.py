"""What Gradio does when it is imported and when a page is built that this app never uses, skipped:
most of the time ``python app.py`` took before its first page (``python -m bench.startup``).

1. **Type stubs.** Each component class Gradio defines (about 40) runs
   ``gradio.component_meta.create_or_modify_pyi``: it reads the class's source, parses it and its
   ``.pyi`` stub with ``ast`` and writes the stub back when it differs. The stubs help people who
   write custom components in an editor; an installed Gradio has them already. About half of
   ``import gradio`` on two cores.
2. **IPython.** Gradio imports IPython, when it is installed, for its notebook magic
   (``gradio.ipython_ext``, a quarter of a second) and to ask whether it runs in a notebook
   (``gradio.utils.colab_check`` and ``ipython_check``, on every page built: half a second the first
   time). Outside an IPython session (IPython not imported yet: a notebook imports it before any
   code of ours), the magic's module runs as it does where IPython is not installed, and the two
   checks answer False, as they would, without importing it. Inside one, nothing changes.
3. **FastAPI apps made and dropped.** A ``gr.Blocks`` makes a FastAPI app when it is made (its
   ``queue()``), again when its ``with`` ends, again in ``queue()``, and a fourth when mounted:
   only the last two serve (the queue's app runs the events, the mounted one answers HTTP).
   ``one_app()`` makes ``App.create_app`` a no-op for the first two. Nothing reads ``blocks.app``
   before ``queue()`` replaces it; tests/ui/test_gradio_start.py checks the app still serves.

Each is found by name in Gradio; a release that renames one makes that part change nothing, and
Gradio does what it always did. 1 and 2 are an import hook (``skip_unused_imports``), which must be
installed before Gradio is imported: ``ui/__init__`` does it, and everything that builds the app
imports ``ui`` first.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType

STUBS = "gradio.component_meta"
STUB_WRITER = "create_or_modify_pyi"
NOTEBOOK = "gradio.ipython_ext"
UTILS, NOTEBOOK_CHECKS = "gradio.utils", ("colab_check", "ipython_check")


def _no_stub(*_args: object, **_kwargs: object) -> None:
    """Writes no .pyi stub (1. of the module's docstring)."""


def _without_stubs(module: ModuleType, run: Callable[[ModuleType], None]) -> None:
    run(module)
    if callable(getattr(module, STUB_WRITER, None)):
        setattr(module, STUB_WRITER, _no_stub)


def _without_ipython(module: ModuleType, run: Callable[[ModuleType], None]) -> None:
    if _in_ipython():  # in an IPython session: its magic is Gradio's to offer
        run(module)
        return
    sys.modules["IPython"] = None  # an import of it raises ImportError, as when it is not installed
    try:
        run(module)
    finally:
        if sys.modules.get("IPython", False) is None:
            del sys.modules["IPython"]


def _in_ipython() -> bool:
    return "IPython" in sys.modules


def _checks_without_ipython(module: ModuleType, run: Callable[[ModuleType], None]) -> None:
    run(module)
    for name in NOTEBOOK_CHECKS:
        check = getattr(module, name, None)
        if callable(check):
            setattr(module, name, _unless_ipython(check))


def _unless_ipython(check: Callable[[], bool]) -> Callable[[], bool]:
    def notebook_check() -> bool:
        return check() if _in_ipython() else False  # no IPython session without IPython imported

    return notebook_check


_RUN = {STUBS: _without_stubs, NOTEBOOK: _without_ipython, UTILS: _checks_without_ipython}


class _SkipUnused(importlib.abc.MetaPathFinder):
    """Finds the modules of ``_RUN`` as Python's own finder does, and runs each through its rule."""

    def find_spec(self, fullname, path, target=None):
        rule = _RUN.get(fullname)
        if rule is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module
        spec.loader.exec_module = lambda module: rule(module, run)  # this import's own loader object
        return spec


def skip_unused_imports() -> bool:
    """Install the hook of 1 and 2 unless Gradio is imported already (then it would change nothing).
    True when it is installed, now or before."""
    if STUBS in sys.modules:
        return False
    if not any(isinstance(f, _SkipUnused) for f in sys.meta_path):
        sys.meta_path.insert(0, _SkipUnused())
    return True


_building: ContextVar[bool] = ContextVar("rat_gradio_building", default=False)


def _made_when_needed(create_app: Callable) -> Callable:
    def create_app_unless_building(*args, **kwargs):
        if _building.get():
            return None
        return create_app(*args, **kwargs)

    create_app_unless_building.made_when_needed = True
    return create_app_unless_building


@contextmanager
def one_app() -> Iterator[None]:
    """Build a ``gr.Blocks`` in this block without the FastAPI apps Gradio makes and drops (3. of
    the module's docstring); call its ``queue()`` after the block. Only this thread's (this
    context's) builds are touched: a server mounting its pages meanwhile gets its app."""
    from gradio.routes import App

    create_app = getattr(App, "create_app", None)
    if create_app is not None and not getattr(create_app, "made_when_needed", False):
        App.create_app = staticmethod(_made_when_needed(create_app))
    token = _building.set(True)
    try:
        yield
    finally:
        _building.reset(token)
