#!/usr/bin/env bash
# Fill .whl/ (git-ignored through .git/info/exclude) with the wheels scripts/device_check.sh installs on a GPU
# machine that has torch, typer, rich, pytest, pytest-xdist and numpy but no network (the workplace's device
# machines: Python 3.12, x86-64). Run here, from the repo root, with the dev venv.
set -eu
mkdir -p .whl .git/info
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
PIP=".venv/bin/pip download -q --no-deps -d .whl"
$PIP fsrs platformdirs pexpect ptyprocess hatchling trove-classifiers tomlkit pathspec pluggy packaging editables \
  ipykernel nbclient nbformat jupyter_client jupyter_core traitlets tornado comm nest_asyncio fastjsonschema \
  jsonschema jsonschema-specifications referencing ipython matplotlib-inline
$PIP --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_34_x86_64 \
  debugpy pyzmq rpds-py decorator ipython-pygments-lexers jedi parso prompt_toolkit wcwidth stack_data executing \
  asttokens pure_eval
rm -f .whl/*-cp311-cp311-*.whl
ls .whl | wc -l
