package doctor

import "time"

// Status is a check's verdict.
type Status string

const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	// StatusSkip: the check did not run, because a check it needs did not pass or because
	// it does not apply here; Summary says which.
	StatusSkip Status = "skip"
)

// Check is the result of one check.
type Check struct {
	ID       string
	Status   Status
	Summary  string // one line
	Detail   string // the facts behind the verdict; shown with -v
	Remedy   string // what to do, with exact commands; set for warn and fail
	Duration time.Duration
	// Fix is what `doctor --fix` could automate for this check; nil when nothing can.
	Fix *Fix
}

// FixKind names an automatable remedy.
type FixKind string

const (
	FixInstall         FixKind = "install"          // run `bwrapkit install`
	FixAppArmorProfile FixKind = "apparmor-profile" // write File with Content, then run Commands (root)
	FixSysctl          FixKind = "sysctl"           // run Commands and persist in File (root)
	FixRemoveSetuid    FixKind = "remove-setuid"    // chmod u-s Bwrap (root)
)

// Fix carries the facts a fixer needs; Commands are the same steps as shell commands, for
// printing when the fixer lacks the rights to apply them.
type Fix struct {
	Kind     FixKind
	Bwrap    string   // the bwrap the fix is for
	File     string   // a file to write (AppArmor profile, sysctl.d drop-in)
	Content  string   // that file's content
	Commands []string // the steps as commands for this host, sudo included where needed
}

// healthy reports whether a status keeps the doctor's verdict healthy.
func (s Status) healthy() bool { return s != StatusFail }
