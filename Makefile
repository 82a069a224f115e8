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
# Whole-command benches run in a directory of their own: test-unprivileged makes SCRATCH
# world-writable (1777), and run rightly refuses a workdir every user can write.
BENCHDIR := $(SCRATCH)/bench
# Packages whose tests touch the kernel; they run again as nobody.
LIVE_PKGS := sandbox sandbox/seccomp sandbox/limits sandbox/land sandbox/lifetime sandbox/cgroup sandbox/gitmeta internal/probecache doctor doctor/selftest doctor/provenance doctor/diagnose install home netproxy internal/trust cmd/bwrapkit
NOBODY   := setpriv --reuid=65534 --regid=65534 --clear-groups

.PHONY: build doctor deps test-bwraps test test-unprivileged fleet hosts mutants fuzz check bench bench-peers lint e2e dist clean

# bwrapkit and, beside it, bwrapkit-helper: the lean binary its runs start as their keeper
# and network bridge (cmd/bwrapkit-helper; bwrapkit is its own helper without it).
build:
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o bwrapkit ./cmd/bwrapkit
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o bwrapkit-helper ./cmd/bwrapkit-helper

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
	$(GO) test -race -count=1 -timeout 45m ./...

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
			$(CURDIR)/$(TESTBIN)/$$name.test -test.count=1 -test.timeout 45m $(if $(V),-test.v)); \
	done

# The fleet pieces on the real engines, as root (docs/fleet.md): Debian 12 booted under
# systemd-nspawn runs the units, node_exporter and the Ansible role; the host's Prometheus
# alerts on them; the release build provisions hosts with no network and no bubblewrap.
fleet: dist
	scripts/fleet-check.sh dist

# Issue 19's matrix (docs/containers.md): the doctor in unshare, chroot and bwrap-in-bwrap
# shapes and in real Docker, Podman, systemd-nspawn and LXC containers, as root and as nobody
# inside, against bwrap's own answer, remedies applied (about 7 min here, plus a first
# debootstrap of about 3).
hosts: test-bwraps build
	scripts/hosts/run.sh ./bwrapkit

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	shellcheck -x scripts/*.sh scripts/hosts/*.sh .ci/run

# Every protection taken out in turn must make its named test fail (scripts/mutants.sh;
# the table of protections is in sandbox/README.md). As root, as CI runs it.
mutants: test-bwraps
	GO=$(GO) scripts/mutants.sh

# The policy file and the run flags, fuzzed for a bounded time each.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPolicyFile$$' -fuzztime $(FUZZTIME) ./sandbox
	$(GO) test -run '^$$' -fuzz '^FuzzRunFlags$$' -fuzztime $(FUZZTIME) ./cmd/bwrapkit

# Everything CI checks: its dependencies, lint, the suite as root, the suite as nobody, the
# fleet checks (make dist, then booted Debian guests; see docs/fleet.md for the time), the
# host matrix (docs/containers.md), the mutants (a few minutes) and the fuzz targets.
check: deps lint test test-unprivileged fleet hosts mutants fuzz

bench: build test-bwraps
	$(GO) test -run '^$$' -bench 'Argv|Run|NewPolicy' -benchmem ./sandbox
	@# The transactional workdir: landing 10,000 new files (one new tree, and spread over
	@# existing directories) on the same file system.
	$(GO) test -run '^$$' -bench 'Land' -benchtime 5x ./sandbox/land
	@# The doctor in-process (the test binary as its probe): raw launches of wall and ms of
	@# CPU per doctor (wait4's account, which misses the sandboxes' own processes);
	@# scripts/bench-doctor.sh below measures the built binary with every process counted.
	$(GO) test -run '^$$' -bench 'Doctor' -benchtime 20x ./doctor
	$(GO) test -run '^$$' -bench 'Install' -benchtime 20x ./install
	@# A 100 MB download direct and through the allowlist proxy (on the listener a sandbox's bridge hands it), interleaved: both speeds, their ratio, CPU per MB.
	$(GO) test -run '^$$' -bench 'Download100MB' -benchtime 10x ./netproxy
	@echo "== a real ~100 MB download from this host's apt mirror, direct and through bwrapkit run --net-allow (goal: at least 0.8; skipped without a mirror)"
	scripts/bench-download.sh ./bwrapkit 10
	@echo "== whole commands, interleaved side by side with bwrap itself"
	@$(GO) build -o $(CACHE)/benchcmp ./internal/benchcmp
	@mkdir -p $(BENCHDIR) && chmod 0755 $(BENCHDIR) && cd $(BENCHDIR) && \
	../../benchcmp -rounds 200 -fd3 ../filter.bpf -name-a "bwrapkit run -- /bin/true" -name-b "bwrap, argv from bwrapkit argv" \
		-a '["$(CURDIR)/bwrapkit","run","--workdir",".","--","/bin/true"]' -b "$$($(CURDIR)/bwrapkit argv --workdir . --seccomp-file ../filter.bpf -- /bin/true)" \
		-also 'bwrapkit run --net -- /bin/true (no proxy, no bridge)=["$(CURDIR)/bwrapkit","run","--net","--workdir",".","--","/bin/true"]'
	@echo "== CPU per run for the whole sandbox and throughput, 8 and 32 runs at once, against bwrap with the same argv (goals: CPU 1.3, throughput 0.8)"
	@cd $(BENCHDIR) && for n in 8 32; do \
		../../benchcmp -rounds 20 -warmup 2 -parallel $$n -fd3 ../filter.bpf -name-a "bwrapkit run -- /bin/true" -name-b "bwrap, argv from bwrapkit argv" \
			-a '["$(CURDIR)/bwrapkit","run","--workdir",".","--","/bin/true"]' -b "$$($(CURDIR)/bwrapkit argv --workdir . --seccomp-file ../filter.bpf -- /bin/true)" || exit 1; done
	@echo "== the doctor against one raw launch: Debian's bwrap and the pinned static one, as root and as nobody (goals: 4 launches, 20 ms)"
	scripts/bench-doctor.sh ./bwrapkit $(CACHE)/benchcmp 20 $$(command -v bwrap) $(CACHE)/bwraps/bwrap-0.12.0
	@echo "== growth with the number of --ro paths, run against bwrap's own (goal: at most 1.1)"
	scripts/bench-paths.sh ./bwrapkit $(CACHE)/benchcmp 20
	@echo "== a fresh clone's first go test, the caller's Go caches as lower layers, against direct (goal: at most 1.5)"
	scripts/bench-fresh-clone.sh ./bwrapkit $(CACHE)/bwraps/bwrap-0.12.0 $(CACHE)/benchcmp 3
	@echo "== a warm go test of testdata/workloads/gomod, sandboxed against direct (goal: at most 1.05)"
	@rm -rf $(SCRATCH)/bench-gomod && cp -r testdata/workloads/gomod $(SCRATCH)/bench-gomod && cd $(SCRATCH)/bench-gomod && \
	GOPROXY=off ../../benchcmp -rounds 20 -warmup 2 -unit "of direct" -name-a "bwrapkit run -- go test ./..." -name-b "go test ./..." \
		-a '["$(CURDIR)/bwrapkit","run","--path","$(dir $(GO))","--","go","test","./..."]' -b '["$(GO)","test","./..."]'
	@echo "== the transactional workdir against direct, side by side on the pinned 0.12.0 (goal: at most 1.10 each)"
	@rm -rf $(SCRATCH)/bench-txn && cp -r testdata/workloads/gomod $(SCRATCH)/bench-txn && cd $(SCRATCH)/bench-txn && \
	for mode in transactional direct; do $(CURDIR)/bwrapkit run --bwrap $(CURDIR)/$(CACHE)/bwraps/bwrap-0.12.0 --workdir . --workdir-mode $$mode --path $(dir $(GO)) -- go test ./... >/dev/null; done && \
	../../benchcmp -rounds 100 -warmup 3 -unit "of direct" -name-a "transactional run -- /bin/true" -name-b "direct run -- /bin/true" \
		-a '["$(CURDIR)/bwrapkit","run","--bwrap","$(CURDIR)/$(CACHE)/bwraps/bwrap-0.12.0","--workdir",".","--workdir-mode","transactional","--","/bin/true"]' \
		-b '["$(CURDIR)/bwrapkit","run","--bwrap","$(CURDIR)/$(CACHE)/bwraps/bwrap-0.12.0","--workdir",".","--workdir-mode","direct","--","/bin/true"]' && \
	GOPROXY=off ../../benchcmp -rounds 20 -warmup 2 -unit "of direct" -name-a "transactional go test ./..." -name-b "direct go test ./..." \
		-a '["$(CURDIR)/bwrapkit","run","--bwrap","$(CURDIR)/$(CACHE)/bwraps/bwrap-0.12.0","--workdir",".","--workdir-mode","transactional","--path","$(dir $(GO))","--","go","test","./..."]' \
		-b '["$(CURDIR)/bwrapkit","run","--bwrap","$(CURDIR)/$(CACHE)/bwraps/bwrap-0.12.0","--workdir",".","--workdir-mode","direct","--path","$(dir $(GO))","--","go","test","./..."]'
	@$(MAKE) --no-print-directory bench-peers

# Codex's sandbox, srt and firejail against bwrapkit and raw bwrap, one interleaved table
# (part of make bench; fetches the peers once into .cache/peers).
bench-peers: build test-bwraps
	@echo "== bwrap-based peers on the same command, interleaved in the same rounds (scripts/get-peers.sh fetches them)"
	@$(GO) build -o $(CACHE)/benchcmp ./internal/benchcmp
	@peers=$$(scripts/get-peers.sh) && eval "$$peers" && mkdir -p $(CACHE)/peer-home $(BENCHDIR) && chmod 0755 $(BENCHDIR) && cd $(BENCHDIR) && \
	HOME=$(CURDIR)/$(CACHE)/peer-home ../../benchcmp -rounds 20 -warmup 2 -fd3 ../filter.bpf \
		-name-a "bwrapkit run -- /bin/true" -name-b "bwrap, argv from bwrapkit argv" \
		-a '["$(CURDIR)/bwrapkit","run","--workdir",".","--","/bin/true"]' -b "$$($(CURDIR)/bwrapkit argv --workdir . --seccomp-file ../filter.bpf -- /bin/true)" \
		$${codex:+-also "codex sandbox=[\"$$codex\",\"sandbox\",\"--\",\"/bin/true\"]"} \
		$${srt:+-also "srt=[\"$$srt\",\"/bin/true\"]"} \
		$${firejail:+-also "firejail --noprofile=[\"$$firejail\",\"--quiet\",\"--noprofile\",\"/bin/true\"]"}

e2e: build
	$(GO) test -count=1 -run 'E2E' ./cmd/bwrapkit

# Release binaries for amd64 and arm64 with the pinned static bwrap embedded (installs
# with no network), SHA256SUMS over every file, then an offline install from this host's.
dist: test-bwraps
	GO=$(GO) VERSION=$(VERSION) scripts/build-dist.sh --out dist
	scripts/check-dist.sh --out dist

clean:
	rm -rf bwrapkit bwrapkit-helper dist $(TESTBIN) $(SCRATCH)
