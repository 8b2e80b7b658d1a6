# swift-convolver: build, test, demo and benchmarks. Works on a fresh Debian 12 with Swift at /opt/swift.
#   make test        install missing Debian packages, build everything, run every test
#   make demo        play a test signal through the node in PipeWire, record it, show `pw-convolver top`
#   make bench       offline engine benchmark (`pw-convolver bench`, release build)
#   make bench-live  our node beside filter-chain's convolver in one PipeWire graph (takes ~15 min)
#   make soak        10 min at quantum 256 with a 10 s stereo IR: late cycles, RSS growth, helper margins (not in CI)
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
SWIFT ?= swift
# Scripts use Debian's python3 (numpy/scipy from apt), not a pyenv one that may lack them.
PYTHON ?= /usr/bin/python3
export PYTHON

DEBIAN_PACKAGES := pipewire pipewire-bin libpipewire-0.3-dev libspa-0.2-dev libpipewire-0.3-modules \
	libspa-0.2-modules libfftw3-dev libsndfile1-dev libsoxr-dev pkg-config python3-numpy python3-scipy sox
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: deps build test demo bench bench-live soak clean

# Installs only what is missing; `apt-get update` only when something must be installed.
deps:
	@missing=$$(for package in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q 'install ok installed' || echo $$package; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing missing Debian packages:" $$missing; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build -c release

# The node tests start their own private PipeWire; scripts/run-tests.sh ends whatever they leave behind.
test: deps
	scripts/run-tests.sh

demo: build
	scripts/demo.sh

bench: build
	.build/release/pw-convolver bench

bench-live: build
	$(PYTHON) scripts/bench-live.py

soak: build
	$(PYTHON) scripts/soak.py

clean:
	rm -rf .build
