# SPDX-License-Identifier: GPL-2.0
# cgroup-energy: top-level make targets. See README.md.

KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
CGE_CACHE ?= /var/cache/cgroup-energy
PYTHON ?= /usr/bin/python3
export CGE_CACHE

.PHONY: all module tool kunit style check check-full check-server demo bench validate clean install \
	uninstall dkms-install dkms-uninstall kernels-update deb

all: module tool

module:
	@if [ ! -d "$(KDIR)" ]; then \
		echo "cgroup-energy: no kernel build tree at $(KDIR)" >&2; \
		echo "cgroup-energy: install it: apt-get install linux-headers-$(KVER)" >&2; \
		echo "cgroup-energy: or point at one: make KDIR=/lib/modules/<version>/build" >&2; \
		exit 1; \
	fi
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

tool:
	$(MAKE) -C userspace

kunit:
	$(PYTHON) -m pytest -q tests/test_kunit.py

style:
	sh tests/style.sh

# The gate: what CI runs; every check in it decided by the module, not by
# the host's load, and a passing deep record for the module's hash.
check:
	CGE_TIER=gate sh tests/check.sh

# The deep tier: every test on every kernel, the timing-bound ones too; it
# appends its record, keyed by the module's hash, to tests/results/deep.jsonl
# (tests/deep.py). Run it, and commit the record, when the module changes.
check-full:
	CGE_TIER=full sh tests/check.sh

# The Debian packages on a booted Debian 12 server (tests/test_server.py):
# make check's deps, build and server stages.
check-server:
	CGE_TIER=gate CGE_STAGES="deps build server" sh tests/check.sh

# Pin the newest Debian kernel of each VM flavour in tests/vm/kernels.lock,
# and of each headers series the compile sweep builds for in
# tests/vm/sweep.lock (apt-get update first); commit both when `make check`
# is green.
kernels-update:
	$(PYTHON) tests/vm/kernels.py --update
	$(PYTHON) tests/vm/sweep.py --update

demo:
	sh tests/vm/demo.sh

bench:
	$(PYTHON) bench/bench.py

validate:
	$(PYTHON) bench/validate.py

clean:
	@if [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	$(MAKE) -C userspace clean
	rm -rf .build

# The tool, its man page, the systemd mount unit, the modules-load.d entry,
# an example modprobe.d file; PREFIX (/usr/local), DESTDIR. dist/install.sh.
install:
	MAKE='$(MAKE)' sh dist/install.sh install

uninstall:
	MAKE='$(MAKE)' sh dist/install.sh uninstall

# The module, with DKMS, for KVER (default: the running kernel) and every
# kernel installed later. See dist/dkms.sh and docs/install.md.
dkms-install:
	KVER='$(KVER)' sh dist/dkms.sh install

dkms-uninstall:
	sh dist/dkms.sh uninstall

# The Debian packages cgroup-energy-dkms and energystat, built from a copy of
# the tree into .build/deb (DEBDIR=). See dist/deb.sh and debian/rules.
deb:
	sh dist/deb.sh
