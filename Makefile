# vfsmount — run `make help` for the targets.

GO        ?= go
BIN       := bin/vfsmount
# git's fsmonitor hook for writable git mounts: a small program vfsmount
# names as the hook when it finds it beside itself.
HOOKBIN   := bin/vfsmount-fsmonitor
MNT       := mnt
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# The FUSE integration tests mount for real; the whole suite stays well
# under this on a 2-core machine.
TIMEOUT   ?= 600s
FUZZTIME  ?= 60s
BENCHTIME ?= 200ms
# The packages whose tests mount through the kernel: those that call
# fusetest.Need. ./stress is one too, behind its build tag and its own target.
KERNEL_PKGS = $(filter-out ./stress,$(sort $(patsubst %/,%,$(dir $(shell grep -rl --include='*_test.go' --exclude-dir=.git --exclude-dir=$(MNT) 'fusetest\.Need' .)))))
# make soak runs them SOAKCOUNT times, at each GOMAXPROCS in SOAKCPU (a
# race of the daemon's goroutines can hide at the machine's own count: the
# one fixed in 95525da showed at 4, not at 2); the timeout is per package
# binary.
SOAKCOUNT   ?= 10
SOAKCPU     ?= 2,4
SOAKTIMEOUT ?= 3600s
# Extra go test flags for soak and race-kernel, e.g. TESTFLAGS='-run ReadDir'.
TESTFLAGS   ?=
# make fidelity keeps the harness releases it downloads here.
FIDELITY_DIR ?= $(HOME)/.cache/vfsmount-fidelity

.DEFAULT_GOAL := help
.PHONY: help build test race race-kernel soak bench bench-remote fidelity lint run clean fuzz stress

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/vfsmount (static: a remote mount installs this binary as its peer on another machine) and its git hook bin/vfsmount-fsmonitor
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/vfsmount
	CGO_ENABLED=0 $(GO) build -o $(HOOKBIN) ./cmd/vfsmount-fsmonitor

test: ## run every test, FUSE integration tests included (VFSMOUNT_REQUIRE_FUSE=1 makes a missing /dev/fuse fail)
	$(GO) test -count=1 -timeout $(TIMEOUT) ./...

race: ## run every test under the race detector
	$(GO) test -count=1 -race -timeout $(TIMEOUT) ./...

race-kernel: ## run the tests that mount through the kernel (KERNEL_PKGS) under the race detector
	$(GO) test -count=1 -race -timeout $(TIMEOUT) $(TESTFLAGS) $(KERNEL_PKGS)

soak: ## run the tests that mount through the kernel SOAKCOUNT (10) times at GOMAXPROCS 2 and 4 (SOAKCPU), to shake out flakes
	$(GO) test -count=$(SOAKCOUNT) -cpu $(SOAKCPU) -timeout $(SOAKTIMEOUT) $(TESTFLAGS) $(KERNEL_PKGS)

bench: ## run the Go benchmarks briefly, then the kernel benchmarks against /dev/shm (one table)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...
	$(GO) run ./bench

bench-remote: ## the remote mount's table: a real sshd, 0 and 20 ms RTT, sshfs as the anchor (root; ~10 min)
	$(GO) run ./bench -suites remote

fidelity: ## compare each dialect with its pinned harness release from npm (~360 MB, kept in FIDELITY_DIR)
	VFSMOUNT_FIDELITY=1 VFSMOUNT_FIDELITY_DIR=$(FIDELITY_DIR) $(GO) test -count=1 -run '^TestFidelity' ./agentbridge/

# vet and staticcheck see ./stress's tests too: the stress tag adds them and
# takes nothing away.
lint: ## no tracked file over 1 MiB, gofmt clean, go vet and staticcheck (go.mod's tool) without findings
	@.ci/large-files
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet -tags stress ./...
	$(GO) tool staticcheck -tags stress ./...

run: build ## build and mount the default workspace at ./mnt in the foreground (Ctrl-C unmounts)
	@mkdir -p $(MNT)
	$(BIN) mount $(MNT)

clean: ## unmount ./mnt if mounted (live or stale), remove bin/ (and mnt/ when empty)
	@if grep -qs " $(CURDIR)/$(MNT) " /proc/mounts; then \
		echo "unmounting $(MNT)"; \
		fusermount3 -uz $(MNT) 2>/dev/null || umount -l $(MNT); \
	fi
	rm -rf bin
	@rmdir $(MNT) 2>/dev/null || true

fuzz: ## run every Fuzz target of the repo for FUZZTIME (60s) each; a crasher lands in testdata/fuzz
	@set -e; list=$$(mktemp); trap 'rm -f $$list' EXIT; \
	$(GO) test -list '^Fuzz' ./... > $$list || { cat $$list; exit 1; }; \
	targets=$$(awk '/^Fuzz/ { t = t " " $$1; next } /^ok / { n = split(t, a, " "); for (i = 1; i <= n; i++) print $$2 ":" a[i]; t = "" }' $$list); \
	test -n "$$targets" || { echo "no fuzz targets found"; exit 1; }; \
	failed=; for pt in $$targets; do \
		echo "== $${pt%%:*} $${pt##*:} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${pt##*:}$$" -fuzztime $(FUZZTIME) $${pt%%:*} || failed="$$failed $$pt"; \
	done; \
	test -z "$$failed" || { echo "fuzz failures (inputs saved under testdata/fuzz):$$failed"; exit 1; }

stress: ## hammer memory, persistent and host mounts through the kernel with a -race daemon, then check the tree (STRESS_OPS=1500)
	$(GO) test -tags stress -count=1 -v -timeout $(TIMEOUT) ./stress

# install: where `make install` puts things; DESTDIR stages a package.
PREFIX  ?= /usr/local
DESTDIR ?=
.PHONY: install uninstall

install: build ## install bin/vfsmount and its git hook into PREFIX/bin (PREFIX=/usr/local), with bash, zsh and fish completions
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/vfsmount
	install -D -m 0755 $(HOOKBIN) $(DESTDIR)$(PREFIX)/bin/vfsmount-fsmonitor
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/vfsmount
	$(BIN) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_vfsmount
	$(BIN) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/vfsmount.fish

uninstall: ## remove what make install installed
	rm -f $(DESTDIR)$(PREFIX)/bin/vfsmount $(DESTDIR)$(PREFIX)/bin/vfsmount-fsmonitor \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/vfsmount \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_vfsmount \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/vfsmount.fish
