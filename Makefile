# vtaforge: the two set-up commands (`make demo`, `make test`) and the benchmark runner.
# Everything lives in .venv; system packages the tests need are listed in APT_PACKAGES and
# installed here (as root on Debian), never assumed.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := dev,cpu,hw,plots,rtl,model,notebooks,tune
# gcc: `cc` links the compiler's shared libraries (tests/compiler/test_codegen.py); with
# python3.11-dev's headers it builds the compiled simulator (setup.py).
APT_PACKAGES := gcc g++ make perl libpython3.11 python3.11-dev
PYTEST_ARGS ?= -n 2

.PHONY: all setup system-deps demo test test-gpu lint unit bench mutate clean

all: test

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing system packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# The timing model's modules that setup.py compiles with mypyc, and the stamp of their build.
COMPILED := $(shell sed -n 's/^    "\(simulator\/[a-z_]*\.py\)",$$/\1/p' setup.py)
NATIVE := $(VENV)/.compiled

$(STAMP): pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "vtaforge needs Python >= 3.11 (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $(STAMP) $(NATIVE)

# After an edit of a compiled module: rebuild in place (simulator/_native.py runs a module whose
# source is newer than its build interpreted, and warns).
$(NATIVE): $(STAMP) $(COMPILED)
	rm -f simulator/*.so *.so
	$(PY) setup.py -q build_ext --inplace
	touch $(NATIVE)

setup: system-deps $(STAMP) $(NATIVE)

demo: setup
	$(VENV)/bin/vtaforge demo
	$(PY) -m compiler.model.demo_resnet

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

unit: setup
	$(PY) -m pytest $(PYTEST_ARGS) -m "not gpu and not ecp5"

# The tests that run kernels on an NVIDIA GPU (they fail, not skip, where there is none).
test-gpu: setup
	$(PY) -m pytest -n 0 -m gpu tests/compiler/gpu

test: lint unit

# Mutation testing of isa/, simulator/ and compiler/ (tools/mutate.py), on demand and not part of
# `make test`: a random sample of mutants per package, each against every test file that can
# observe its module; MUTATE_ARGS="--sample 0" runs all of them, "--only FILE:LINE" one line's.
MUTATE_ARGS ?= --sample 20
mutate: setup
	$(PY) tools/mutate.py $(MUTATE_ARGS)

bench: setup
	$(PY) -m pip install -q -e ".[$(EXTRAS),bench]"
	@mkdir -p benchmarks/results
	@set -e; for f in benchmarks/[!_]*.py; do \
		echo "== $$f"; $(PY) $$f; \
	done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis .mypy_cache
	rm -f *.so simulator/*.so
