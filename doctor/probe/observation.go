// Package probe is the program the doctor runs inside the sandbox (bwrapkit's hidden
// __selftest-probe, or a test binary): it only observes and prints one JSON observation;
// the self-tests (package selftest) judge, together with what they see on the host.
package probe

// LaunchObservation: who the probe is and which namespaces it is in (/proc/self/ns links).
type LaunchObservation struct {
	PID        int               `json:"pid"`
	UID        int               `json:"uid"`
	Namespaces map[string]string `json:"namespaces"`
}

// FileOp is one file-system operation and its error ("" when it succeeded).
type FileOp struct {
	Op    string `json:"op"` // create, append, remove, read, list
	Path  string `json:"path"`
	Error string `json:"error"`
	// Content is the start of what a read got (at most MaxContent bytes), so the doctor can
	// tell its own planted secret from anything else at that path.
	Content string `json:"content,omitempty"`
	// Entries are the names a list saw (at most MaxEntries).
	Entries []string `json:"entries,omitempty"`
}

// MaxContent and MaxEntries bound what a read or a list reports.
const (
	MaxContent = 256
	MaxEntries = 256
)

type FSObservation struct {
	Ops []FileOp `json:"ops"`
}

type EnvObservation struct {
	Environ []string `json:"environ"`
}

// FDEntry is one descriptor the probe holds and its /proc/self/fd link target.
type FDEntry struct {
	FD     int    `json:"fd"`
	Target string `json:"target"`
}

type FDObservation struct {
	FDs   []FDEntry `json:"fds"`
	Error string    `json:"error"` // the listing failed
}

type DialObservation struct {
	Address string `json:"address"`
	Error   string `json:"error"`
}

type ProcEntry struct {
	PID  int    `json:"pid"`
	PPID int    `json:"ppid"`
	Comm string `json:"comm"`
}

type ProcObservation struct {
	Self      int         `json:"self"`
	Processes []ProcEntry `json:"processes"`
}

// CapsObservation holds the Cap* lines of /proc/self/status, hex as the kernel prints them.
type CapsObservation struct {
	Caps map[string]string `json:"caps"`
}

type UsernsObservation struct {
	Errno int    `json:"errno"` // 0: the namespace was created
	Error string `json:"error"`
}

type SpawnObservation struct {
	Ready bool   `json:"ready"` // the grandchild wrote its marker
	Error string `json:"error"`
}

// Content is what the probe writes into files it creates, so the doctor can tell the
// probe's file from anything else on the host.
const Content = "written by bwrapkit's self-test probe\n"

// Command is the argv prefix that runs the probe (Run) as a program: bwrapkit's hidden
// subcommand, or a test binary that dispatches on an environment variable. The doctor
// appends the probe's name and arguments. Argv[0] must be an absolute path; it is bound
// read-only into the sandbox at that path.
type Command struct {
	Argv []string
	Env  []string // NAME=VALUE set inside the sandbox (and for the userns probe)
}
