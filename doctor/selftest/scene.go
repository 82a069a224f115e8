package selftest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
)

// Scene is the self-tests' scene on the host: a workdir with a .git, a sibling directory
// next to it, and a stand-in for the caller's home holding a secret. Everything is named
// with a random token, so concurrent doctors never see each other's files.
type Scene struct {
	base      string // the workdir's parent
	workdir   string
	sibling   string
	home      string
	secret    string // a file in home only the caller can read
	gitConfig string
	fdCanary  string // a file outside the workdir that fd-isolation holds open
	token     string
	// passedOver are the better places tried first, and why they failed.
	passedOver []string
}

// Where says where the scene is, and which better places were passed over and why.
func (f *Scene) Where() string {
	where := "self-test directory: " + f.base
	for _, failure := range f.passedOver {
		where += "\npassed over: " + failure
	}
	return where
}

const gitConfigContent = "[core]\n\trepositoryformatversion = 0\n"

// NewScene makes a scene in a fresh directory under tempDir.
func NewScene(tempDir string) (*Scene, error) {
	base, err := os.MkdirTemp(tempDir, "bwrapkit-doctor-")
	if err != nil {
		return nil, err
	}
	// The sandbox binds real paths; the host side must look at the same ones.
	if base, err = filepath.EvalSymlinks(base); err != nil {
		return nil, err
	}
	f := &Scene{
		base:    base,
		workdir: filepath.Join(base, "work"),
		sibling: filepath.Join(base, "sibling"),
		home:    filepath.Join(base, "home"),
		token:   newToken(),
	}
	f.secret = filepath.Join(f.home, "secret")
	f.gitConfig = filepath.Join(f.workdir, ".git", "config")
	f.fdCanary = filepath.Join(base, "fd-canary-"+f.token)
	for _, dir := range []string{f.workdir, filepath.Join(f.workdir, ".git"), f.sibling, f.home} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			f.Remove()
			return nil, err
		}
	}
	for path, content := range map[string]string{f.secret: f.secretContent(), f.gitConfig: gitConfigContent, f.fdCanary: "canary " + f.token + "\n"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			f.Remove()
			return nil, err
		}
	}
	return f, nil
}

// Remove deletes the scene from the host.
func (f *Scene) Remove() { os.RemoveAll(f.base) }

func newToken() string {
	buf := make([]byte, 8)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}

// DirError is a self-test directory the doctor could not make: the host's file systems, not
// the sandbox, are at fault.
type DirError struct{ Err error }

func (e *DirError) Error() string { return "preparing the self-test directory: " + e.Err.Error() }
func (e *DirError) Unwrap() error { return e.Err }

// secretContent is what the scene's own secret file holds.
func (f *Scene) secretContent() string { return "canary " + f.token + "\n" }
