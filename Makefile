# swift-convolver: build, test, demo and benchmarks. Works on a fresh Debian 12 with Swift at /opt/swift.
#   make test        install missing Debian packages, build everything, run every test (system PipeWire), then the
#                    live tests on PipeWire 1.4.2 and, in a Debian sid root, on PipeWire 1.6
#   make check-distros  in Debian 13 and sid roots, with their own Swift: make deb, apt install, play, unit tests
#   make demo        play a test signal through the node in PipeWire, record it, show `pw-convolver top`
#   make bench       offline engine benchmark (`pw-convolver bench`, release build)
#   make bench-live  our node beside filter-chain's convolver in one PipeWire graph (takes ~40 min),
#                    then bench-graph and bench-workgroup; `make bench-live PIPEWIRE=1.4` (or 1.6) against that filter-chain
#   make bench-workgroup four nodes in one process, on one shared workgroup and each on its own helpers (~10 min)
#   make bench-graph filter-chain configs (HeSuVi 7.1, room correction) on filter-chain and on our module (~15 min)
#   make bench-control how long a filter-chain graph's control takes to be heard (`pw-convolver set`, ~2 min)
#   make bench-render  `pw-convolver render` beside zita's fconvolver on the same files (~5 min)
#   make soak        10 min at quantum 256 with a 10 s stereo IR: late cycles, RSS growth, helper margins (not in CI)
#   make build       the products users install (Swift runtime linked in: no toolchain needed to run them)
#   make install     user-level (~/.local, ~/.config); `make install PREFIX=/usr/local` system-wide
#   make uninstall   the same variables; removes every file install wrote
#   make deb         a Debian package, .build/dist/swift-convolver_<version>_amd64.deb (dpkg-deb, no network)
#   make man         the man pages pw-convolver(1) and libpipewire-module-swift-convolver(7)
#   make format      formats Sources, Tests and Package.swift with the toolchain's swift-format (.swift-format)
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
SWIFT ?= swift
# Scripts use Debian's python3 (numpy/scipy from apt), not a pyenv one that may lack them.
PYTHON ?= /usr/bin/python3
export PYTHON

DEBIAN_PACKAGES := pipewire pipewire-bin libpipewire-0.3-dev libspa-0.2-dev libpipewire-0.3-modules \
	libspa-0.2-modules libfftw3-dev libsndfile1-dev libsoxr-dev pkg-config python3-numpy python3-scipy sox wireplumber \
	libmysofa-dev dpkg-dev binutils man-db ladspa-sdk swh-plugins liblilv-dev lv2-dev lsp-plugins-lv2 x42-plugins
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: deps debian-packages build man deb format fuzz test test-pipewire-system test-pipewire-1.4 test-pipewire-1.6 check-distros demo bench bench-live bench-build bench-graph bench-workgroup bench-control bench-render soak clean install uninstall

# The version, where the module reports it to PipeWire (module.version).
VERSION := $(shell sed -n 's/.*PW_KEY_MODULE_VERSION, "\([^"]*\)".*/\1/p' Sources/ConvolverNode/ModuleInstance.swift)
# What users run is built apart from the tests' build (.build, -enable-testing, the toolchain's
# shared runtime): release, the Swift runtime linked statically, no $ORIGIN runpath.
DIST_DIR := .build/dist
BUILD_DIR ?= $(DIST_DIR)/release
MAN_DIR := $(DIST_DIR)/man

# Installs only what is missing; `apt-get update` only when something must be installed.
deps:
	@missing=$$(for package in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q 'install ok installed' || echo $$package; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing missing Debian packages:" $$missing; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

# What a build and its tests need from Debian (scripts/debian-root.sh installs them in its roots).
debian-packages:
	@echo $(DEBIAN_PACKAGES)

build: deps
	$(SWIFT) build -c release --scratch-path $(DIST_DIR) -Xswiftc -static-stdlib --disable-local-rpath

# Generated from the commands' --help and docs/module.md's sections (scripts/man-pages.sh).
man: build
	scripts/man-pages.sh $(MAN_DIR) $(BUILD_DIR)/pw-convolver $(VERSION)

deb: man
	scripts/make-deb.sh $(BUILD_DIR) $(MAN_DIR) $(VERSION) $(DIST_DIR)

# The parsers under libFuzzer and AddressSanitizer, FUZZ_SECONDS each (default 600): scripts/fuzz.sh.
fuzz: deps
	scripts/fuzz.sh

format:
	swift-format format -i -r --configuration .swift-format Sources Plugins Tests Package.swift

# The node tests start their own private PipeWire; scripts/run-tests.sh ends whatever they leave behind.
# `make test` runs every test on the system's PipeWire, then the live tests on PipeWire 1.4.2 and
# WirePlumber 0.5.8 (Debian's bookworm-backports, unpacked under .build/ by scripts/pipewire-1.4.sh).
test: deps
	scripts/run-tests.sh all

test-pipewire-system: deps
	scripts/run-tests.sh system

test-pipewire-1.4: deps
	scripts/run-tests.sh pipewire-1.4

test-pipewire-1.6: deps
	scripts/run-tests.sh pipewire-1.6

# Not part of `make test` (it builds twice from scratch with other toolchains, ~30 min): run it when the
# code changes what it needs from Swift or PipeWire.
check-distros:
	scripts/check-distros.sh

demo: build
	PW_CONVOLVER=$(BUILD_DIR)/pw-convolver scripts/demo.sh

bench: build
	$(BUILD_DIR)/pw-convolver bench

# The PipeWire the live benchmarks run on: the system's, 1.4.2 (PIPEWIRE=1.4), or 1.6 in a sid root (PIPEWIRE=1.6).
PIPEWIRE ?= system
# The node the live benchmarks load: the test build of the chosen PipeWire (1.4.2's shares `make test`'s flags and cache).
bench-build: deps
ifeq ($(PIPEWIRE),1.4)
	eval "$$(scripts/pipewire-1.4.sh env)" && \
		$(SWIFT) build --scratch-path .build/pipewire-1.4/build -c release -Xswiftc -enable-testing --build-tests
else
	$(SWIFT) build -c release -Xswiftc -enable-testing
endif

# perf (Debian's linux-perf) tells each system's CPU in its convolution code from the rest; only this benchmark needs it.
bench-live: build bench-build
	command -v perf >/dev/null || $(SUDO) apt-get install -y linux-perf
	$(PYTHON) scripts/bench-live.py --pipewire $(PIPEWIRE) $(if $(filter-out 1.4,$(PIPEWIRE)),--executable $(BUILD_DIR)/pw-convolver)
	$(if $(filter 1.6,$(PIPEWIRE)),@echo "bench-live: bench-graph does not run on PipeWire 1.6 yet",$(MAKE) --no-print-directory bench-graph PIPEWIRE=$(PIPEWIRE))
	$(if $(filter system,$(PIPEWIRE)),$(MAKE) --no-print-directory bench-workgroup,@echo "bench-live: bench-workgroup runs on this system's PipeWire only")

# The multi-node case alone (this system's PipeWire): one process-wide workgroup against a pool per node.
bench-workgroup: build
	$(PYTHON) scripts/bench-workgroup.py --executable $(BUILD_DIR)/pw-convolver

# The graph cases alone: filter-chain configs (HeSuVi 7.1, room correction) on filter-chain and on our module.
bench-graph: bench-build
	$(PYTHON) scripts/bench-graph.py --pipewire $(PIPEWIRE)

bench-control: bench-build
	$(PYTHON) scripts/bench-control.py --pipewire $(PIPEWIRE)

# fconvolver comes with Debian's jconvolver, GNU time measures both (only this benchmark needs them).
bench-render: build
	command -v fconvolver >/dev/null && test -x /usr/bin/time || $(SUDO) apt-get install -y jconvolver time
	$(PYTHON) scripts/bench-render.py --executable $(BUILD_DIR)/pw-convolver

soak: build
	SWIFT_CONVOLVER_BUILD_DIR=$(BUILD_DIR) $(PYTHON) scripts/soak.py

clean:
	rm -rf .build

# --- install / uninstall --------------------------------------------------------------------------
# User-level by default (PREFIX = ~/.local). PipeWire 0.3.65 loads modules by name only from
# PIPEWIRE_MODULE_DIR or its own module dir (an absolute path in `name` is refused; tried), so:
# - user-level: the module goes to ~/.local/lib/pipewire-0.3/ and a systemd drop-in for the user's
#   pipewire.service sets PIPEWIRE_MODULE_DIR=<that dir>:<PipeWire's dir>;
# - system-wide (PREFIX other than ~/.local): the module goes to PipeWire's own module dir
#   (pkg-config moduledir), the units to PREFIX/lib/systemd/user.
# Like the package, it enables nothing: the daemon drop-in is one of the configs in DATADIR.
# DESTDIR is prepended to every path (tests). BUILD_DIR: where the products are.
PREFIX ?= $(HOME)/.local
MODULE_FILE := libpipewire-module-swift-convolver.so
PIPEWIRE_MODULEDIR := $(shell pkg-config --variable=moduledir libpipewire-0.3 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/pipewire-0.3)
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/swift-convolver
MANDIR ?= $(PREFIX)/share/man
ifeq ($(PREFIX),$(HOME)/.local)
MODULEDIR ?= $(PREFIX)/lib/pipewire-0.3
SYSTEMD_USERDIR ?= $(HOME)/.config/systemd/user
MODULE_ENV_DROPIN := $(SYSTEMD_USERDIR)/pipewire.service.d/swift-convolver.conf
else
MODULEDIR ?= $(PIPEWIRE_MODULEDIR)
SYSTEMD_USERDIR ?= $(PREFIX)/lib/systemd/user
MODULE_ENV_DROPIN :=
endif
INSTALLED_FILES := $(BINDIR)/pw-convolver $(MODULEDIR)/$(MODULE_FILE) \
	$(SYSTEMD_USERDIR)/swift-convolver.service \
	$(SYSTEMD_USERDIR)/swift-convolver@.service \
	$(MODULE_ENV_DROPIN) $(MANDIR)/man1/pw-convolver.1 $(MANDIR)/man7/libpipewire-module-swift-convolver.7 \
	$(addprefix $(DATADIR)/,$(notdir $(wildcard pipewire-conf/swift-convolver*.conf)) README.md)

install:
	@[ -x "$(BUILD_DIR)/pw-convolver" ] && [ -f "$(BUILD_DIR)/$(MODULE_FILE)" ] || $(MAKE) build
	scripts/man-pages.sh $(MAN_DIR) $(BUILD_DIR)/pw-convolver $(VERSION)
	install -D -m 755 "$(BUILD_DIR)/pw-convolver" "$(DESTDIR)$(BINDIR)/pw-convolver"
	install -D -m 644 "$(BUILD_DIR)/$(MODULE_FILE)" "$(DESTDIR)$(MODULEDIR)/$(MODULE_FILE)"
	install -d "$(DESTDIR)$(DATADIR)"
	install -m 644 pipewire-conf/swift-convolver*.conf README.md "$(DESTDIR)$(DATADIR)/"
	install -D -m 644 $(MAN_DIR)/pw-convolver.1 "$(DESTDIR)$(MANDIR)/man1/pw-convolver.1"
	install -D -m 644 $(MAN_DIR)/libpipewire-module-swift-convolver.7 "$(DESTDIR)$(MANDIR)/man7/libpipewire-module-swift-convolver.7"
	install -d "$(DESTDIR)$(SYSTEMD_USERDIR)"
	sed 's|@BINDIR@|$(BINDIR)|g' contrib/systemd/swift-convolver.service.in >"$(DESTDIR)$(SYSTEMD_USERDIR)/swift-convolver.service"
	sed -e 's|@DATADIR@|$(DATADIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
		contrib/systemd/swift-convolver@.service.in >"$(DESTDIR)$(SYSTEMD_USERDIR)/swift-convolver@.service"
ifneq ($(MODULE_ENV_DROPIN),)
	install -d "$(DESTDIR)$(dir $(MODULE_ENV_DROPIN))"
	printf '# swift-convolver (make install): PipeWire finds the module in $(MODULEDIR).\n[Service]\nEnvironment=PIPEWIRE_MODULE_DIR=$(MODULEDIR):$(PIPEWIRE_MODULEDIR)\n' \
		>"$(DESTDIR)$(MODULE_ENV_DROPIN)"
endif
	@echo "Installed; nothing is enabled. A config at login: systemctl --user daemon-reload && systemctl --user enable --now swift-convolver@NAME.service"
	@echo "(NAME.conf in ~/.config/swift-convolver/ or $(DATADIR)/; README, \"Recipes\")"
	@echo "Any config ~/.config/swift-convolver/NAME.conf at login: systemctl --user enable --now swift-convolver@NAME.service"

# Removes exactly the files install writes (and, at user level, the cache of FFTW wisdom and machine costs), then the
# project's own directories if empty. Shared directories (bin, lib, pipewire.conf.d) stay.
uninstall:
	rm -f $(addprefix "$(DESTDIR),$(addsuffix ",$(INSTALLED_FILES)))
	rmdir "$(DESTDIR)$(DATADIR)" 2>/dev/null || true
ifneq ($(MODULE_ENV_DROPIN),)
	rmdir "$(DESTDIR)$(dir $(MODULE_ENV_DROPIN))" 2>/dev/null || true
	rm -rf "$(DESTDIR)$(HOME)/.cache/swift-convolver"
endif
	@echo "Uninstalled. Restart PipeWire: systemctl --user daemon-reload && systemctl --user restart pipewire"
