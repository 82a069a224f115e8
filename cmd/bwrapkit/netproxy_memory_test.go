package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// headerFlood connects to the proxy's listener inside the sandbox (the bridge's, which
// the proxy outside serves after the hand-over) and sends one request
// line then a header that never ends, 1 MiB at a time, up to the MiB its argument names.
const headerFlood = `import socket, sys, time
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://example.org/ HTTP/1.1\r\nX-Flood: ")
chunk = b"a" * (1 << 20)
for sent in range(int(sys.argv[1])):
    try:
        s.sendall(chunk)
    except OSError:
        print("closed after", sent, "MiB", flush=True)
        break
else:
    print("took all", sys.argv[1], "MiB", flush=True)
time.sleep(1) # while the test reads bwrapkit's peak
`

// connFlood opens connections to the proxy, each with 30 KiB of a header that does not
// end yet, until the proxy answers one of them or the argument's count is open.
const connFlood = `import select, socket, sys, time
poll = select.poll()
conns = []
for i in range(int(sys.argv[1])):
    s = socket.create_connection(("127.0.0.1", 3128))
    try:
        s.sendall(b"GET http://example.org/ HTTP/1.1\r\nX-Flood: " + b"a" * (30 << 10))
    except OSError:
        pass # answered and closed at once: the answer is still there to read
    conns.append(s)
    poll.register(s, select.POLLIN)
    if poll.poll(5):
        print("answered at connection", i, s.recv(200), flush=True)
        break
else:
    print("held all", len(conns), "connections", flush=True)
time.sleep(1) # while the test reads bwrapkit's peak
`

// TestLiveProxyBoundsRequestHeaders: the --net-allow proxy runs in bwrapkit's own
// process, outside the run's cgroup and its --limit memory, so what a command sends it
// must not grow that process: a request whose header never ends is cut off at a bound,
// and so are the connections it serves at once (a process inside may open 20,000); each
// judged by bwrapkit's peak RSS (its VmHWM, read while the command waits at its end). Without
// the bounds (the code before them), 200 MiB of header peaked bwrapkit at 773 MiB, and 2,000
// connections with 30 KiB of header each at 165 MiB (and it grows with the count: 20,000 per
// process inside); bounded, 11 and 53 to 59 MiB.
func TestLiveProxyBoundsRequestHeaders(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		livetest.Skip(t, "no "+python)
	}
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				for _, flood := range []struct {
					name, script, arg, want string
				}{
					{"header", headerFlood, "200", "closed after"},
					{"connections", connFlood, "2000", "answered at connection 512 b'HTTP/1.1 503"},
				} {
					script := filepath.Join(project, flood.name+".py")
					if err := os.WriteFile(script, []byte(flood.script), 0o644); err != nil {
						t.Fatal(err)
					}
					argv := append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, builtBinary,
						"run", "--workdir", project, "--bwrap", bwrap.Path, "--net-allow", "example.org", "--", python, flood.name+".py", flood.arg)
					cmd := exec.Command(argv[0], argv[1:]...)
					cmd.Dir = project
					var out bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, &out
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					// env and setpriv exec bwrapkit in place, so the pid is bwrapkit's; its
					// VmHWM is its own peak (rusage's maxrss would carry this test's, from
					// the fork).
					done := make(chan error, 1)
					go func() { done <- cmd.Wait() }()
					peakKiB, err := 0, error(nil)
				wait:
					for {
						select {
						case err = <-done:
							break wait
						case <-time.After(20 * time.Millisecond):
							if kib := vmHWM(cmd.Process.Pid); kib > 0 {
								peakKiB = kib
							}
						}
					}
					if err != nil {
						t.Fatalf("%s: %v\n%s", flood.name, err, out.String())
					}
					if !strings.Contains(out.String(), flood.want) || peakKiB > 96<<10 {
						t.Errorf("%s flood: bwrapkit's peak RSS %d MiB\n%s", flood.name, peakKiB>>10, out.String())
					}
					if testing.Verbose() {
						t.Logf("%s flood: bwrapkit's peak RSS %d MiB: %s", flood.name, peakKiB>>10, strings.TrimSpace(out.String()))
					}
				}
			})
		})
	}
}

// vmHWM is the peak resident size of pid's memory in KiB (0: unreadable, gone).
func vmHWM(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if value, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")))
			return kib
		}
	}
	return 0
}
