package doctor

// What the probe reports from inside the sandbox, one JSON document per run. The probe only
// observes; the doctor decides (verdict.go), together with what it sees on the host.

// launchObservation: who the probe is and which namespaces it is in (/proc/self/ns links).
type launchObservation struct {
	PID        int               `json:"pid"`
	UID        int               `json:"uid"`
	Namespaces map[string]string `json:"namespaces"`
}

// fileOp is one file-system operation and its error ("" when it succeeded).
type fileOp struct {
	Op    string `json:"op"` // create, append, remove, read
	Path  string `json:"path"`
	Error string `json:"error"`
}

type fsObservation struct {
	Ops []fileOp `json:"ops"`
}

type envObservation struct {
	Environ []string `json:"environ"`
}

// fdEntry is one descriptor the probe holds and its /proc/self/fd link target.
type fdEntry struct {
	FD     int    `json:"fd"`
	Target string `json:"target"`
}

type fdObservation struct {
	FDs   []fdEntry `json:"fds"`
	Error string    `json:"error"` // the listing failed
}

type dialObservation struct {
	Address string `json:"address"`
	Error   string `json:"error"`
}

type procEntry struct {
	PID  int    `json:"pid"`
	PPID int    `json:"ppid"`
	Comm string `json:"comm"`
}

type procObservation struct {
	Self      int         `json:"self"`
	Processes []procEntry `json:"processes"`
}

// capsObservation holds the Cap* lines of /proc/self/status, hex as the kernel prints them.
type capsObservation struct {
	Caps map[string]string `json:"caps"`
}

type usernsObservation struct {
	Errno int    `json:"errno"` // 0: the namespace was created
	Error string `json:"error"`
}

type spawnObservation struct {
	Ready bool   `json:"ready"` // the grandchild wrote its marker
	Error string `json:"error"`
}

// probeContent is what the probe writes into files it creates, so the doctor can tell the
// probe's file from anything else on the host.
const probeContent = "written by bwrapkit's self-test probe\n"
