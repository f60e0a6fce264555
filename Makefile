# rdmaops.cluster: one entry point for set-up, the lab and the tests.
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eu -o pipefail -c

# The controller's Python: ansible-core 2.21 needs >= 3.12 (the nodes keep their OS Python, e.g. Debian 12's
# 3.11). Empty: the first of python3.13 and python3.12 on PATH, then pyenv's installs (newest first) that
# runs; `make venv PY=/path/to/python3.12` names one. 3.13 first: ansible-core drops the oldest controller
# Python first (2.20 dropped 3.11), so 3.12 goes before 3.13 does; every pin has 3.13 wheels.
PY ?=
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
LAB_NODES ?= 3
LAB_TOPOLOGY ?= mesh
# switched only: ports per node, their bridges (shared or rails), and the NETCONF switches (a count; one per
# rail on rails; empty: the role's default, one switch for a switched lab)
LAB_PORTS ?= 1
LAB_FABRIC ?= shared
LAB_SWITCHES ?=

.PHONY: help venv deps unit lint sanity build-check molecule molecule-up molecule-verify test demo lab-up lab-down lab-test clean plugin-test

help:
	@echo "make demo      build the local virtual cluster (root) and provision it with site.yml"
	@echo "make test      install what the tests need and run all of them (root)"
	@echo "make unit      unit tests only (no root)"
	@echo "make lab-up    LAB_NODES=3 LAB_TOPOLOGY=mesh|switched|ring|chain|rails: build the lab"
	@echo "               switched: LAB_PORTS=1..8 LAB_FABRIC=shared|rails LAB_SWITCHES=N (NETCONF switches)"
	@echo "make lab-down  tear the lab down (also after a crash)"
	@echo "make lab-test  behaviour checks of the lab itself (root, ~10 min)"

# A candidate counts only where it runs: pyenv's shims python3.12/python3.13 are on PATH but fail unless
# pyenv has that version selected. Free-threaded builds (3.13t) lack wheels of several pins.
define CONTROLLER_PY
py_ok() { "$$1" -c 'import sys, sysconfig; sys.exit(sys.version_info < (3, 12) or bool(sysconfig.get_config_var("Py_GIL_DISABLED")))' 2>/dev/null; }
controller_py() {
  # PATH without this venv's bin (make puts it first): a python3.13 found there is the venv's own
  local c root=$${PYENV_ROOT:-$$HOME/.pyenv} PATH=$${PATH#"$(CURDIR)/$(BIN):"}
  if [ -n "$(PY)" ]; then
    py_ok "$(PY)" && { command -v "$(PY)"; return; }
    echo "make venv: PY=$(PY) is not a Python >= 3.12 that runs (ansible-core 2.21's controller needs one)" >&2
    return 1
  fi
  for c in python3.13 python3.12 $$(ls -d "$$root"/versions/3.1[23]*/bin/python3.1[23] 2>/dev/null | sort -rV); do
    py_ok "$$c" && { command -v "$$c"; return; }
  done
  echo "make venv: no Python >= 3.12 for the controller (ansible-core 2.21 needs one): none of python3.13," \
    "python3.12 on PATH, $$root/versions/3.13*/bin/python3.13, $$root/versions/3.12*/bin/python3.12 runs." \
    "Install one (e.g. pyenv install 3.13) or name it: make venv PY=/path/to/python3.12" >&2
  return 1
}
endef
$(VENV)/.stamp: requirements.txt files/trainer/pyproject.toml
	$(CONTROLLER_PY)
	py=$$(controller_py)
	# A venv of another Python (e.g. the 3.11 one of ansible-core 2.19) is built anew, not upgraded in place.
	if [ -e $(BIN)/python ] && [ "$$($(BIN)/python -c 'import sys; print(sys.version_info[:2])' 2>/dev/null)" != \
	    "$$("$$py" -c 'import sys; print(sys.version_info[:2])')" ]; then rm -rf $(VENV); fi
	echo "make venv: the controller's Python is $$py ($$("$$py" --version))"
	"$$py" -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# deepspeed is an sdist whose setup.py imports torch: install the rest first, then deepspeed
	# against that torch without build isolation and without prebuilt ops (they JIT-compile on use).
	grep -v '^deepspeed==' requirements.txt > $(VENV)/requirements-nodeepspeed.txt
	$(BIN)/pip install -q -r $(VENV)/requirements-nodeepspeed.txt
	DS_BUILD_OPS=0 $(BIN)/pip install -q --no-build-isolation $$(grep '^deepspeed==' requirements.txt)
	# The trainer, editable: `python -m rdmaops_trainer` (README) runs this checkout's code.
	$(BIN)/pip install -q --no-deps --no-build-isolation -e ./files/trainer
	touch $@

venv: $(VENV)/.stamp

# Host packages for the lab and the tests (Debian 12 / Ubuntu, as root).
HOST_PKGS := systemd-container mmdebstrap apt-cacher-ng iproute2 iputils-ping iperf3 openssh-client rsync libyang2-tools gcc make libc6-dev libibverbs-dev
deps:
	@missing=$$(for p in $(HOST_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done)
	if [ -n "$$missing" ]; then
	  apt-get update -q -o DPkg::Lock::Timeout=300
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 $$missing
	fi

# Two processes: Ansible's module_utils patch sys.intern on import, which breaks a later
# `import torch._dynamo` in the same interpreter; the trainer is a separate package anyway.
unit: venv
	$(BIN)/pytest -q tests/unit --ignore=tests/unit/trainer --ignore=tests/unit/benchmarks
	$(BIN)/pytest -q tests/unit/trainer tests/unit/benchmarks

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/ansible-lint --profile production

# ansible-test needs the collection under ansible_collections/<ns>/<name>.
sanity: venv
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT
	dst=$$tmp/ansible_collections/rdmaops/cluster; mkdir -p $$dst
	# ansible-test bootstraps pip from a host we cannot reach: seed its cache with an offline bootstrap.
	pipv=$$(sed -n "s/.*pip='\([0-9.]*\)'.*/\1/p" $(VENV)/lib/python3*/site-packages/ansible_test/_internal/python_requirements.py | head -1)
	mkdir -p ~/.ansible/test/cache && cp tests/sanity/get_pip_offline.py ~/.ansible/test/cache/get_pip_$${pipv//./_}.py
	git ls-files -z --cached --others --exclude-standard | grep -zv '^\.collections/' | xargs -0 cp --parents -t $$dst
	# The trainer package and the GPU benchmarks are not Ansible plugins: ruff and mypy lint
	# them; ansible-test's plugin-oriented pylint profile is skipped for them only.
	ver=$$($(BIN)/python -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')
	ign=$$dst/tests/sanity/ignore-$$ver.txt; mkdir -p $$(dirname $$ign); touch $$ign
	(cd $$dst && find files benchmarks -name '*.py' 2>/dev/null | sort | sed 's/$$/ pylint!skip/') >> $$ign
	# The controller's Python (the venv's): --local runs the tests with it (.venv/bin is first on PATH).
	pyver=$$($(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	cd $$dst && git init -q && git add -A && $(CURDIR)/$(BIN)/ansible-test sanity --local --python $$pyver --color no
	# Modules, module_utils and the trainer run on the nodes' Python (Debian 12's 3.11): compiled and imported
	# there too.
	if python3.11 -c '' 2>/dev/null; then
	  $(CURDIR)/$(BIN)/ansible-test sanity --local --python 3.11 --test compile --test import --color no
	else
	  echo "make sanity: no python3.11 that runs here: compile and import on the nodes' Python 3.11 not run"
	fi

# The built tarball installs and its playbooks resolve as rdmaops.cluster.* without the repo.
build-check: venv
	tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT
	$(BIN)/ansible-galaxy collection build --force --output-path $$tmp .
	cp -r inventories/mesh $$tmp/inv; printf '[defaults]\n' > $$tmp/ansible.cfg
	cd $$tmp; export ANSIBLE_CONFIG=$$tmp/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$$tmp/cols
	$(CURDIR)/$(BIN)/ansible-galaxy collection install --offline --no-deps -p $$tmp/cols $$tmp/rdmaops-cluster-*.tar.gz
	$(CURDIR)/$(BIN)/ansible-playbook -i inv rdmaops.cluster.site --syntax-check

# On failure, keep the instance long enough to print what it was doing (tests/lab/diagnose.sh), then
# destroy it. --destroy=never also skips the sequence's own destroys, hence the explicit ones.
# The log's failing lines are printed again last, after a brief form of the diagnosis (a task that hung
# shows its node's processes there): a CI log is often read from its tail only.
# One scenario: make molecule MOL_SCENARIO=ring4 (its lab instance molring, inventory inventories/molring;
# fabric: molfab).
MOL_SCENARIO ?= default
mol_log = /tmp/rdmaops-molecule-$(1).log
MOL_LOG ?= $(call mol_log,$(MOL_SCENARIO))
MOL_LAB = $(if $(filter ring4,$(MOL_SCENARIO)),molring,$(if $(filter fabric,$(MOL_SCENARIO)),molfab,mol))
define MOL_FAILED
mol_failed() {
  DIAG_BRIEF_FILE=$(MOL_LOG).diagnose bash tests/lab/diagnose.sh $(MOL_LAB) inventories/$(MOL_LAB) || true
  $(BIN)/molecule destroy -s $(MOL_SCENARIO) || true
  { echo "===== molecule $(MOL_SCENARIO) failed; what its nodes were doing then (tests/lab/diagnose.sh, brief):"
    cat $(MOL_LOG).diagnose
    echo "===== molecule $(MOL_SCENARIO) failed; its failing lines (full log: $(MOL_LOG)):"
    sed 's/\x1b\[[0-9;]*m//g' $(MOL_LOG) | grep -E 'FAIL|fatal:|failed=[1-9]|ERROR|Traceback|msg:' | tail -n 40
  } | tee $(MOL_LOG).failed || true
  exit 1
}
endef
molecule: venv deps
	$(MOL_FAILED)
	rm -f $(MOL_LOG).failed
	$(BIN)/molecule destroy -s $(MOL_SCENARIO)
	$(BIN)/molecule test -s $(MOL_SCENARIO) --destroy=never 2>&1 | tee $(MOL_LOG) || mol_failed
	$(BIN)/molecule destroy -s $(MOL_SCENARIO)

# The default sequence in two halves (make test runs the first beside the checks that need no lab): up to
# converge, then verify (whose first site.yml run is the idempotence check) and destroy.
molecule-up: venv deps
	$(MOL_FAILED)
	rm -f $(MOL_LOG).failed
	$(BIN)/molecule destroy -s $(MOL_SCENARIO)
	: > $(MOL_LOG)
	for step in syntax create converge; do
	  $(BIN)/molecule $$step -s $(MOL_SCENARIO) 2>&1 | tee -a $(MOL_LOG) || mol_failed
	done

molecule-verify: venv deps
	$(MOL_FAILED)
	$(BIN)/molecule verify -s $(MOL_SCENARIO) 2>&1 | tee -a $(MOL_LOG) || mol_failed
	$(BIN)/molecule destroy -s $(MOL_SCENARIO)

# The Mesh NCCL net plugin (files/plugin_src): C unit tests (plain, ASan, UBSan), ABI, functional (~40 s).
plugin-test: deps
	$(MAKE) -C tests/plugin

# Two phases, each with two CPU-bound sides that end about together (each side's time is printed):
# 1. beside the checks that need no lab (none of them timed): the fabric scenario on its own lab (molfab,
#    3 nodes x 2 NICs), then the default lab built and converged;
# 2. the default scenario's verify beside the ring scenario on its own lab (molring, 4 nodes: the data network,
#    the venv, tiny on 4 nodes); the default verify's cases are proven under two CPU hogs (docs/lab.md).
# On a fresh machine much of the lab side waits on downloads (base image, wheelhouse, packages). docs/lab.md,
# "How make test runs", has the times.
LAB_OUT ?= /tmp/rdmaops-molecule-beside.out
RING_OUT ?= /tmp/rdmaops-molecule-ring-beside.out
CHECKS_OUT ?= /tmp/rdmaops-checks.out
test: deps venv
	start=$$(date +%s)
	(
	  rc=0
	  $(MAKE) --no-print-directory molecule MOL_SCENARIO=fabric || rc=4
	  $(MAKE) --no-print-directory molecule-up MOL_SCENARIO=default || rc=$$((rc + 2))
	  echo "===== the lab side took $$(( $$(date +%s) - start )) s"
	  exit $$rc
	) > $(LAB_OUT) 2>&1 &
	lab=$$!
	rc=0; $(MAKE) --no-print-directory lint unit plugin-test sanity build-check 2>&1 | tee $(CHECKS_OUT) || rc=$$?
	echo "===== the checks took $$(( $$(date +%s) - start )) s"
	lab_rc=0; wait $$lab || lab_rc=$$?
	echo "===== beside the checks above: the fabric scenario and the default lab up to converge (rc=$$lab_rc: +4 the fabric failed, +2 the default lab; full output $(LAB_OUT)):"
	sed 's/\x1b\[[0-9;]*m//g' $(LAB_OUT) | grep -E 'PASS|FAIL|fatal:|failed=[1-9]|ERROR|Traceback|➜|=====' | tail -n 80 || true
	if [ $$rc -ne 0 ] || [ $$lab_rc -ne 0 ]; then
	  $(BIN)/molecule destroy -s default > /dev/null 2>&1 || true
	  # what failed, last (a CI log is often read from its tail only)
	  cat $(call mol_log,fabric).failed $(call mol_log,default).failed 2>/dev/null || true
	  if [ $$rc -ne 0 ]; then
	    echo "===== the checks' failing lines (full output $(CHECKS_OUT)):"
	    sed 's/\x1b\[[0-9;]*m//g' $(CHECKS_OUT) | grep -E 'FAILED|ERROR|Error [0-9]|error:|[1-9][0-9]* failed' | tail -n 30 || true
	  fi
	  echo "===== make test failed: the checks rc=$$rc (lint unit plugin-test sanity build-check), the lab side rc=$$lab_rc (fabric, default lab)"
	  exit 1
	fi
	ring_start=$$(date +%s)
	(
	  rc=0; $(MAKE) --no-print-directory molecule MOL_SCENARIO=ring4 || rc=1
	  echo "===== the ring scenario took $$(( $$(date +%s) - ring_start )) s"
	  exit $$rc
	) > $(RING_OUT) 2>&1 &
	ring=$$!
	verify_rc=0; $(MAKE) --no-print-directory molecule-verify MOL_SCENARIO=default || verify_rc=$$?
	echo "===== the default verify took $$(( $$(date +%s) - ring_start )) s"
	ring_rc=0; wait $$ring || ring_rc=$$?
	echo "===== beside the default verify: the ring scenario (rc=$$ring_rc; full output $(RING_OUT)):"
	sed 's/\x1b\[[0-9;]*m//g' $(RING_OUT) | grep -E 'PASS|FAIL|fatal:|failed=[1-9]|ERROR|Traceback|➜|=====' | tail -n 60 || true
	if [ $$verify_rc -ne 0 ] || [ $$ring_rc -ne 0 ]; then
	  cat $(call mol_log,ring4).failed $(call mol_log,default).failed 2>/dev/null || true
	  echo "===== make test failed: the default verify rc=$$verify_rc, the ring scenario rc=$$ring_rc"
	  exit 1
	fi

lab-up: venv deps
	$(BIN)/ansible-playbook playbooks/lab.yml -e lab_state=present -e lab_nodes=$(LAB_NODES) -e lab_topology=$(LAB_TOPOLOGY) \
	  -e lab_fabric_ports=$(LAB_PORTS) -e lab_fabric=$(LAB_FABRIC) \
	  $(if $(LAB_SWITCHES),-e '{"lab_switches": [$(shell seq -s, -f '"sw%g"' 1 $(LAB_SWITCHES))]}')

# Root-only behaviour checks of the lab itself (bad input, growth, crash recovery, teardown): ~10 min.
lab-test: venv deps
	bash tests/lab/lab_behaviour.sh

lab-down: venv
	$(BIN)/ansible-playbook playbooks/lab.yml -e lab_state=absent

demo: lab-up
	$(BIN)/ansible-playbook -i inventories/lab site.yml
	$(BIN)/ansible-playbook -i inventories/lab playbooks/lab_report.yml
	# ...and train the tiny recipe across the lab's nodes, master first, watched (loss every 5 s).
	$(BIN)/ansible-playbook -i inventories/lab train.yml -e recipe=tiny -e steps=60 -e overwrite=true \
	  -e train_progress_interval=5

clean: lab-down
	rm -rf $(VENV)
