// Package probe is the program the doctor runs inside the sandbox (bwrapkit's hidden
// __selftest-probe, or a test binary): it only observes and prints one JSON observation;
// the self-tests (package selftest) judge, together with what they see on the host.
package probe

// LaunchObservation: who the probe is and which namespaces it is in (/proc/self/ns links),
// and, when the launch carried a Request, everything else the request asked for: the
// self-tests share this one run, each judging its own part.
type LaunchObservation struct {
	PID        int               `json:"pid"`
	UID        int               `json:"uid"`
	Namespaces map[string]string `json:"namespaces"`
	// Started is CLOCK_MONOTONIC (not namespaced by bwrap) when the probe began, in
	// nanoseconds: the doctor tells the launch's own cost from the observations' with it.
	Started int64 `json:"started_ns"`

	FDs     *FDObservation          `json:"fds,omitempty"`
	Env     *EnvObservation         `json:"env,omitempty"`
	FS      map[string][]FileOp     `json:"fs,omitempty"`
	Procs   *ProcObservation        `json:"procs,omitempty"`
	Caps    *CapsObservation        `json:"caps,omitempty"`
	Userns  *UsernsObservation      `json:"userns,omitempty"`
	Dial    *DialObservation        `json:"dial,omitempty"`
	Proc    *ProcSurfaceObservation `json:"proc_surface,omitempty"`
	Setuid  *SetuidObservation      `json:"setuid,omitempty"`
	Seccomp *SeccompObservation     `json:"seccomp,omitempty"`
	Keyring *KeyringObservation     `json:"keyring,omitempty"`
	Limits  *LimitsObservation      `json:"limits,omitempty"`
}

// Request is what one launch of the probe observes besides its namespaces: each
// self-test adds its part, and the probe performs them all in one run, in a fixed order
// (descriptors first, before anything could open one; the network last).
type Request struct {
	FDs    bool                `json:"fds,omitempty"`
	Env    bool                `json:"env,omitempty"`
	FS     map[string][]string `json:"fs,omitempty"` // a group (the self-test) -> OP:PATH operations, in order
	Procs  bool                `json:"procs,omitempty"`
	Caps   bool                `json:"caps,omitempty"`
	Userns bool                `json:"userns,omitempty"`
	Dial   string              `json:"dial,omitempty"` // HOST:PORT
	Proc   *ProcSurfaceRequest `json:"proc_surface,omitempty"`
	Setuid string              `json:"setuid,omitempty"` // a directory in the workdir to try setuid and setgid modes in
	// Seccomp names calls (as seccomp.Denied names them) to attempt with harmless
	// arguments; see SeccompAttempts.
	Seccomp []string       `json:"seccomp,omitempty"`
	Keyring string         `json:"keyring,omitempty"` // the description of a key to try to plant
	Limits  *LimitsRequest `json:"limits,omitempty"`
}

// ProcSurfaceRequest: the kernel surface of /proc the sandbox closes (sandbox.ProcSurface),
// and a sysctl to try to write its own value back to.
type ProcSurfaceRequest struct {
	Sysctl    string   `json:"sysctl"`
	ReadOnly  []string `json:"read_only"`
	MaskFiles []string `json:"mask_files"`
	MaskDirs  []string `json:"mask_dirs"`
}

// ProcSurfaceObservation: the sysctl write, and what each closed path looks like inside.
type ProcSurfaceObservation struct {
	Sysctl      string `json:"sysctl"`
	SysctlValue string `json:"sysctl_value"` // what it read before trying
	OpenError   string `json:"open_error"`   // open(O_WRONLY); "" when it opened
	WriteError  string `json:"write_error"`  // the write of its own value back, when it opened
	// ReadOnlyMounts maps each read-only path to its mount's options in
	// /proc/self/mountinfo ("" when no mount sits there).
	ReadOnlyMounts map[string]string `json:"read_only_mounts"`
	// Masked maps each masked path to what a read or a listing showed: "" for nothing
	// (empty, or unreadable), else the start of what leaked.
	Masked map[string]string `json:"masked"`
	// MaskMounts maps each masked path to its mount's options ("" when no mount sits
	// there): a mask is a mount, where an empty host file would also read as nothing.
	MaskMounts  map[string]string `json:"mask_mounts"`
	MaskedError map[string]string `json:"masked_error,omitempty"`
	Error       string            `json:"error,omitempty"` // mountinfo could not be read
}

// SetuidObservation: each attempt to give a file or directory setuid/setgid bits (the
// call and mode, and its errno name; "" when it worked), and an ordinary chmod that must work.
type SetuidObservation struct {
	Attempts []SyscallAttempt `json:"attempts"`
	Control  string           `json:"control"`
}

// SyscallAttempt is one call made inside and its errno name ("" when it succeeded).
type SyscallAttempt struct {
	Syscall string `json:"syscall"`
	Errno   string `json:"errno"`
}

// SeccompObservation: the filter's mode in /proc/self/status, each denied call tried,
// and ordinary calls the filter must allow.
type SeccompObservation struct {
	Mode    string           `json:"mode"`    // the Seccomp: field (2: filter)
	Filters string           `json:"filters"` // the Seccomp_filters: field
	Denied  []SyscallAttempt `json:"denied"`
	Allowed []SyscallAttempt `json:"allowed"`
	Unknown []string         `json:"unknown,omitempty"` // names the probe cannot attempt
}

// KeyringObservation: keyctl, add_key and request_key inside, and /proc/keys.
type KeyringObservation struct {
	Attempts      []SyscallAttempt `json:"attempts"`
	ProcKeys      string           `json:"proc_keys"`       // the start of /proc/keys ("" when empty)
	ProcKeysError string           `json:"proc_keys_error"` // "" when it could be read
}

// LimitsRequest: where to fill a private tmpfs, and how far at most.
type LimitsRequest struct {
	TmpfsDir string `json:"tmpfs_dir"`
	MaxFill  uint64 `json:"max_fill"`
}

// RlimitObservation is one rlimit inside and the attempt to raise it.
type RlimitObservation struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
	Error    string `json:"error,omitempty"` // getrlimit failed
	Raise    string `json:"raise"`           // errno name of setrlimit(hard+1); "" when it worked
}

// LimitsObservation: every rlimit inside, and how much a private tmpfs took.
type LimitsObservation struct {
	Rlimits   []RlimitObservation `json:"rlimits"`
	Filled    uint64              `json:"filled"`     // bytes written before the error
	FillErrno string              `json:"fill_errno"` // ENOSPC when the bound held; "" when MaxFill was reached
	FillError string              `json:"fill_error"`
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
