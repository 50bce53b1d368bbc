"""What ui/gradio_start.py skips of Gradio (its type stubs, IPython outside a notebook, the FastAPI
apps a page makes and drops) is skipped, and the app built and served without them works: in a
fresh interpreter, since the test process imported Gradio long before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, urllib.request
from pathlib import Path
import app as app_module
import ui
from ui import gradio_start
import gradio as gr
import gradio.component_meta as meta
import gradio.routes
from common.settings import Settings

made = []
real = gradio.routes.App.create_app
def counted(*args, **kwargs):
    made.append(1)
    return real(*args, **kwargs)
gradio.routes.App.create_app = staticmethod(counted)

built = app_module.build(Settings(db_path=Path(sys.argv[1])))
from ui.app import build_app, serve
page = build_app(built.settings, built.store, built.clients, built.runner, built.rooms)
made_in_build = len(made)
served = serve(built.settings, built.store, built.clients, built.runner, built.rooms, port=int(sys.argv[2]))
try:
    with urllib.request.urlopen(served.url, timeout=30) as answer:
        first = answer.status, answer.read().decode()
finally:
    served.close()
print(json.dumps({
    "stubs_skipped": meta.create_or_modify_pyi is gradio_start._no_stub,
    "late": gradio_start.skip_unused_imports(),
    "ipython": "IPython" in sys.modules,
    "made_in_build": made_in_build,
    "queue_app": page.app is not None,
    "first_page": first[0],
    "title": "RAT Studio" in first[1],
}))
"""


def test_gradio_skips_what_the_app_never_uses_and_the_app_still_serves(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "rat.db"), str(free_port())], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["stubs_skipped"], "gradio.component_meta.create_or_modify_pyi was not replaced"
    assert seen["late"] is False, "installing the hook after Gradio's import must say it changes nothing"
    assert not seen["ipython"], "IPython was imported outside a notebook"
    assert seen["made_in_build"] == 1, f"a page made {seen['made_in_build']} FastAPI apps, not only its queue's"
    assert seen["queue_app"], "the queue has no app to run the events with"
    assert seen["first_page"] == 200 and seen["title"], "the first page was not the app's"


PROBE_IN_IPYTHON = """
import json, sys
import IPython  # as a notebook has, before any code of ours
import ui
import gradio.utils
import gradio.ipython_ext as ext
print(json.dumps({"magic": callable(getattr(ext, "magic_arguments", None)),
                  "colab": gradio.utils.colab_check(), "ipython": gradio.utils.ipython_check()}))
"""


def test_in_an_ipython_session_gradio_keeps_its_notebook_magic():
    done = subprocess.run([sys.executable, "-c", PROBE_IN_IPYTHON], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)
    if done.returncode != 0 and "No module named 'IPython'" in done.stderr:
        pytest.skip("IPython is not installed here")
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"magic": True, "colab": False, "ipython": False}
