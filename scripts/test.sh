#!/usr/bin/env bash
# Installs what the tests need and runs them all. README.md gives this command; .ci/run runs it.
#   bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
# llama-cpp-python (the tiny real model of tests/real) is built from source on first install. A
# build tuned to the build machine's CPU (GGML_NATIVE, the default) crashed in its first decode on
# a CPU with AMX/AVX-512 here; the portable build (AVX2) runs everywhere the tests do.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
"$PYTHON" -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt

# Debian packages the tests use, installed with apt when missing: Chromium (the browser tests drive
# it through Playwright; no browser download is possible), PostgreSQL's server (the tests of data/
# and annotation/ run on SQLite and on a throwaway cluster, tests/pg.py), HAProxy (the balancer
# of scripts/arena_cluster.py) and the Noto CJK fonts (Chromium draws Chinese and Japanese with
# them: without, every character is the same empty box, tests/ui/test_writer_cjk_browser.py).
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
[ -n "$(fc-list :lang=zh 2>/dev/null)" ] || missing+=(fonts-noto-cjk)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "Installing Debian's ${missing[*]} for the tests..." >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Fixture pages live beside the project in ../shared/fixtures/web.
if [ ! -f ../shared/fixtures/web/manifest.json ]; then
  echo "error: ../shared/fixtures/web is missing: clone the project next to its shared/ folder." >&2
  exit 2
fi

# Bytecode is written, as Python does by default (into the __pycache__ folders .gitignore leaves
# out), also where PYTHONDONTWRITEBYTECODE is set (this project's development machine sets it):
# without it every process the tests start (app.py, the CLI, the extraction workers) compiled the
# project anew, and a test worker's collection rewrote and compiled all the test files each run,
# 16-20 CPU-s against 8-9 with the cache. The project is compiled before the workers start (a
# file that does not compile is reported by pytest, with the test that imports it).
unset PYTHONDONTWRITEBYTECODE
"$PYTHON" -m compileall -q -j 0 app.py ui core annotation data common scripts bench >/dev/null || true

# One pytest-xdist worker more than the machine has cores (RAT_TEST_WORKERS to choose, 0 for none):
# the browser tests wait on a stand-in model paced so a run can be watched, and on pages, so with
# one worker per core the cores stood idle about a sixth of the run; one more worker fills those
# waits (vmstat: 0-2% idle once the tests run). On a fresh clone on 2 cores: 18m59s with 2 workers,
# 16m55s with 3.
WORKERS=${RAT_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}
exec "$PYTHON" -m pytest -q -p no:cacheprovider -n "$WORKERS" "$@"
