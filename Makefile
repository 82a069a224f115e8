# bwrapkit: build, test (as root and as an unprivileged user), benchmark.
# `make check` (as root) is the whole suite, as CI runs it.

# Go from PATH, else where this project's machines keep it.
GO       ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Static, stripped: a static Go binary starts a millisecond sooner, and run's cost over
# bwrap itself is mostly start-up.
GOFLAGS_BUILD = -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
CACHE    := .cache
TESTBIN  := $(CACHE)/testbin
SCRATCH  := $(CACHE)/scratch
# Packages whose tests touch the kernel; they run again as nobody.
LIVE_PKGS := sandbox sandbox/seccomp sandbox/limits doctor doctor/selftest doctor/provenance doctor/diagnose install cmd/bwrapkit
NOBODY   := setpriv --reuid=65534 --regid=65534 --clear-groups

.PHONY: build doctor deps test-bwraps test test-unprivileged fleet check bench lint e2e dist clean

build:
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o bwrapkit ./cmd/bwrapkit

# The main job: the doctor on its embedded defaults.
doctor: build
	./bwrapkit doctor

# What the tests need on a fresh Debian 12 (root).
deps:
	scripts/ci-deps.sh

# The two real static bwraps (rebuilt from the pinned source, proving the pin).
test-bwraps:
	scripts/get-test-bwraps.sh

test: test-bwraps
	$(GO) test -race -count=1 ./...

# The same live tests through the unprivileged code paths of bwrap.
test-unprivileged: test-bwraps build
	@mkdir -p $(TESTBIN) $(SCRATCH)
	@chmod 1777 $(SCRATCH)
	@chmod 0755 $(CACHE) $(TESTBIN)
	@set -e; for pkg in $(LIVE_PKGS); do \
		name=$$(echo $$pkg | tr / -); \
		$(GO) test -c -o $(TESTBIN)/$$name.test ./$$pkg; \
		chmod 0755 $(TESTBIN)/$$name.test; \
	done
	@set -e; for pkg in $(LIVE_PKGS); do \
		name=$$(echo $$pkg | tr / -); \
		echo "== $$pkg as nobody"; \
		(cd $$pkg && $(NOBODY) env HOME=/tmp PATH=$$PATH \
			BWRAPKIT_TEST_SCRATCH=$(CURDIR)/$(SCRATCH) BWRAPKIT_TEST_BINARY=$(CURDIR)/bwrapkit \
			BWRAPKIT_TEST_REQUIRE_LIVE=$${BWRAPKIT_TEST_REQUIRE_LIVE:-} \
			$(CURDIR)/$(TESTBIN)/$$name.test -test.count=1 $(if $(V),-test.v)); \
	done

# Issue 11's fleet checks, as root: systemd units (verify, ExecStart under their hardening),
# node_exporter, the Prometheus rules, the Ansible role, the README's Fleet examples.
fleet: test-bwraps build
	scripts/fleet-check.sh ./bwrapkit

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	shellcheck -x scripts/*.sh scripts/fleet/*.sh .ci/run

# Everything CI checks: its dependencies, lint, the suite as root, the suite as nobody, the
# fleet checks (about 35 s).
check: deps lint test test-unprivileged fleet

bench: build test-bwraps
	$(GO) test -run '^$$' -bench 'Argv|Run' -benchmem ./sandbox
	@# The doctor: raw launches of wall and ms of CPU (its own and every child's) per doctor;
	@# goals 8 and 20 (issue 9). benchcmp below measures the built binary the same way.
	$(GO) test -run '^$$' -bench 'Doctor' -benchtime 20x ./doctor
	$(GO) test -run '^$$' -bench 'Install' -benchtime 20x ./install
	@echo "== whole commands, interleaved side by side with bwrap itself"
	@$(GO) build -o $(CACHE)/benchcmp ./internal/benchcmp
	@mkdir -p $(SCRATCH) && cd $(SCRATCH) && \
	../benchcmp -rounds 200 -fd3 ../filter.bpf -name-a "bwrapkit run -- /bin/true" -name-b "bwrap, argv from bwrapkit argv" \
		-a '["$(CURDIR)/bwrapkit","run","--","/bin/true"]' -b "$$($(CURDIR)/bwrapkit argv --seccomp-file ../filter.bpf -- /bin/true)" && \
	../benchcmp -rounds 20 -warmup 2 -fd3 ../filter.bpf -unit "launches per doctor" -name-a "bwrapkit doctor" -name-b "one raw bwrap launch" \
		-a '["$(CURDIR)/bwrapkit","doctor","--output","/dev/null"]' -b "$$($(CURDIR)/bwrapkit argv --seccomp-file ../filter.bpf -- /bin/true)"
	@echo "== a warm go test of testdata/workloads/gomod, sandboxed against direct (goal: at most 1.05)"
	@rm -rf $(SCRATCH)/bench-gomod && cp -r testdata/workloads/gomod $(SCRATCH)/bench-gomod && cd $(SCRATCH)/bench-gomod && \
	GOPROXY=off ../../benchcmp -rounds 20 -warmup 2 -unit "of direct" -name-a "bwrapkit run -- go test ./..." -name-b "go test ./..." \
		-a '["$(CURDIR)/bwrapkit","run","--path","$(dir $(GO))","--","go","test","./..."]' -b '["$(GO)","test","./..."]'

e2e: build
	$(GO) test -count=1 -run 'E2E' ./cmd/bwrapkit

# Release binaries for amd64 and arm64 with the pinned static bwrap embedded (installs
# with no network), SHA256SUMS over every file, then an offline install from this host's.
dist: test-bwraps
	GO=$(GO) VERSION=$(VERSION) scripts/build-dist.sh --out dist
	scripts/check-dist.sh --out dist

clean:
	rm -rf bwrapkit dist $(TESTBIN) $(SCRATCH)
