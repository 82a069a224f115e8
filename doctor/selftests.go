package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The live self-tests. Each runs the probe through sandbox.Run and proves an effect on the
// host; the decisions are in verdict.go.

func (s *session) checkWorkdirWrite(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	target := filepath.Join(fixture.workdir, "written-"+fixture.token)
	observation, err := decode[fsObservation](s.runProbe(ctx, probeRun{name: "fs", args: []string{"create:" + target}}))
	if err != nil || len(observation.Ops) != 1 {
		return failed("the write probe did not run", orReport(err))
	}
	content, hostErr := os.ReadFile(target)
	return workdirWriteVerdict(observation.Ops[0], string(content), hostErr)
}

func (s *session) checkOutsideWrite(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	name := "outside-" + fixture.token
	targets := []string{
		filepath.Join(fixture.base, name),    // the workdir's parent
		filepath.Join(fixture.sibling, name), // a sibling directory
		filepath.Join("/etc", name),
		filepath.Join("/", name),
	}
	args := make([]string, len(targets))
	for i, target := range targets {
		args[i] = "create:" + target
	}
	observation, err := decode[fsObservation](s.runProbe(ctx, probeRun{name: "fs", args: args}))
	if err != nil {
		return failed("the write probe did not run", err)
	}
	var changes []string
	for _, target := range targets {
		if _, err := os.Lstat(target); err == nil {
			changes = append(changes, target)
			os.Remove(target) // the breach is reported; the host need not keep it
		}
	}
	if entries, _ := os.ReadDir(fixture.sibling); len(entries) > 0 {
		changes = append(changes, fixture.sibling+"/"+entries[0].Name())
	}
	return outsideWriteVerdict(observation.Ops, changes)
}

func (s *session) checkGitReadonly(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	created := filepath.Join(filepath.Dir(fixture.gitConfig), "hooks-"+fixture.token)
	observation, err := decode[fsObservation](s.runProbe(ctx, probeRun{name: "fs", args: []string{
		"append:" + fixture.gitConfig, "remove:" + fixture.gitConfig, "create:" + created}}))
	if err != nil {
		return failed("the .git probe did not run", err)
	}
	content, _ := os.ReadFile(fixture.gitConfig)
	if _, err := os.Lstat(created); err == nil {
		content = append(content, "\n(and a new file "+created+")"...)
	}
	return gitReadonlyVerdict(observation.Ops, string(content))
}

func (s *session) checkEnvClear(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	observation, err := decode[envObservation](s.runProbe(ctx, probeRun{name: "env"}))
	if err != nil {
		return failed("the environment probe did not run", err)
	}
	return envClearVerdict(observation.Environ, fixture.token, allowedEnv(s.cfg.Probe.Env))
}

func (s *session) checkFDIsolation(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	// Opened without O_CLOEXEC, as a descriptor bwrapkit inherited from its caller would
	// be, and held only for this probe. The other self-tests start sandboxes in parallel
	// meanwhile; the canary stays out of theirs for the reason it must stay out of this
	// one: sandbox.Run marks every descriptor above stderr close-on-exec before bwrap
	// starts. (A child the doctor starts outside sandbox.Run, such as the userns check's
	// clone, may inherit it: that child is on the host's side of the boundary anyway.)
	canary, err := syscall.Open(fixture.fdCanary, syscall.O_RDONLY, 0)
	if err != nil {
		return failed("the canary descriptor could not be opened", err)
	}
	observation, err := decode[fdObservation](s.runProbe(ctx, probeRun{name: "fds"}))
	syscall.Close(canary)
	if err != nil {
		return failed("the descriptor probe did not run", err)
	}
	return fdIsolationVerdict(observation, filepath.Base(fixture.fdCanary))
}

func (s *session) checkSecretsHidden(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	observation, err := decode[fsObservation](s.runProbe(ctx, probeRun{name: "fs", args: []string{
		"read:/etc/shadow", "read:" + fixture.secret, "read:" + fixture.home, "read:/root"}}))
	if err != nil {
		return failed("the read probe did not run", err)
	}
	return secretsHiddenVerdict(observation.Ops)
}

func (s *session) checkNetwork(ctx context.Context) Check {
	listener, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return Check{Status: StatusSkip, Summary: "no loopback listener could be opened on the host: " + err.Error()}
	}
	defer listener.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	observation, err := decode[dialObservation](s.runProbe(ctx, probeRun{name: "dial", args: []string{listener.Addr().String()}}))
	if err != nil {
		return failed("the network probe did not run", err)
	}
	return networkVerdict(observation, int(accepted.Load()))
}

func (s *session) checkProcIsolation(ctx context.Context) Check {
	observation, err := decode[procObservation](s.runProbe(ctx, probeRun{name: "procs"}))
	if err != nil {
		return failed("the /proc probe did not run", err)
	}
	return procIsolationVerdict(observation)
}

func (s *session) checkCapabilities(ctx context.Context) Check {
	observation, err := decode[capsObservation](s.runProbe(ctx, probeRun{name: "caps"}))
	if err != nil {
		return failed("the capabilities probe did not run", err)
	}
	return capabilitiesVerdict(observation)
}

// killBounds are the sandbox timeouts timeout-kill tries. The first is short to keep the
// doctor fast: a few launches' worth, as the launch check measured this host. A longer one
// is tried only when the grandchild had no time to start (a loaded host), since a kill
// before it exists proves nothing.
func killBounds(launch time.Duration) []time.Duration {
	first := min(max(5*launch, 75*time.Millisecond), time.Second)
	return []time.Duration{first, time.Second, 5 * time.Second}
}

func (s *session) checkTimeoutKill(ctx context.Context) Check {
	fixture, err := s.scene()
	if err != nil {
		return failed("no self-test directory", err)
	}
	s.mu.Lock()
	launched := s.launch.result.Duration
	s.mu.Unlock()
	var check Check
	for attempt, bound := range killBounds(launched) {
		token := fmt.Sprintf("bwrapkit-kill-%s-%d", fixture.token, attempt)
		marker := filepath.Join(fixture.workdir, token)
		res, err := s.runProbe(ctx, probeRun{name: "spawn", args: []string{token, marker}, timeout: bound})
		if err != nil {
			return failed("the timeout probe did not run", err)
		}
		var spawned spawnObservation
		_ = json.Unmarshal(res.stdout, &spawned)
		// The marker on the host, not the probe's word, says the grandchild ran.
		_, markerErr := os.Stat(marker)
		spawned.Ready = markerErr == nil
		if !spawned.Ready && spawned.Error == "" {
			spawned.Error = fmt.Sprintf("no marker within the %v timeout", bound)
		}
		check = timeoutKillVerdict(res.result, spawned, survivors(ctx, token))
		if spawned.Ready || ctx.Err() != nil {
			break
		}
	}
	return check
}

// survivors lists the host's processes whose command line carries token, waiting briefly
// for the kernel to finish tearing the namespace down.
func survivors(ctx context.Context, token string) []string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		found := processesWith(token)
		if len(found) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return found
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func processesWith(token string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, entry := range entries {
		if _, err := strconv.Atoi(entry.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + entry.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), token) {
			found = append(found, entry.Name()+": "+strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
		}
	}
	return found
}

func (s *session) checkNestedUserns(ctx context.Context) Check {
	features, err := s.features(ctx)
	if err != nil {
		return failed("bwrap could not be probed", err)
	}
	if !features.Has("disable-userns") {
		return Check{Status: StatusSkip, Summary: "this bwrap has no --disable-userns (bubblewrap 0.8.0+), so nested user namespaces stay possible (see bwrap.features)"}
	}
	observation, err := decode[usernsObservation](s.runProbe(ctx, probeRun{name: "userns"}))
	if err != nil {
		return failed("the user namespace probe did not run", err)
	}
	return nestedUsernsVerdict(observation)
}

func (s *session) scene() (*fixture, error) {
	made := s.fixture.get()
	return made.fixture, made.err
}

func orReport(err error) error {
	if err == nil {
		return fmt.Errorf("the probe reported nothing")
	}
	return err
}
