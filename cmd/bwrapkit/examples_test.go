package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestRunHelpExamples runs every example `bwrapkit run --help` shows, as shown, in a
// project it fits (the npm one only parses: it needs the network and a registry).
func TestRunHelpExamples(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	if _, err := os.Stat(filepath.Join(goBin, "go")); err != nil {
		livetest.Skip(t, "no Go at "+goBin)
	}
	cmd := newRunCmd(streams{}, &globalOptions{})
	environ, _ := attackEnv(t, bwrap)
	environ = append(environ, "PATH=/usr/bin:/bin:"+goBin)
	for _, line := range strings.Split(cmd.Example, "\n") {
		words := shellWords(t, strings.TrimSpace(line))
		if len(words) < 3 || words[0] != "bwrapkit" || words[1] != "run" {
			t.Fatalf("example %q is not a bwrapkit run command line", line)
		}
		command := strings.Join(words[slicesIndex(words, "--")+1:], " ")
		var dir string
		switch {
		case strings.HasPrefix(command, "make"):
			dir = workload(t, "c")
		case strings.HasPrefix(command, "go "):
			dir = workload(t, "gomod")
		case strings.HasPrefix(command, "git commit"):
			dir = workload(t, "c")
			os.WriteFile(filepath.Join(dir, "hello.c"), []byte("int main(void) { return 0; }\n"), 0o644)
			environ = append(environ, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		case strings.HasPrefix(command, "npm"):
			parsed := newRunCmdWith(streams{}, &globalOptions{}, func(_ context.Context, opts *runOptions) error { return nil })
			parsed.SetArgs(words[2:])
			if err := parsed.Execute(); err != nil {
				t.Errorf("example %q does not parse: %v", line, err)
			}
			continue
		default:
			t.Fatalf("no project for example %q", line)
		}
		// Paths in examples are relative to the repository (examples/policies/...).
		for i, word := range words {
			if strings.HasPrefix(word, "examples/") {
				words[i] = filepath.Join(livetest.RepoRoot(), word)
			}
		}
		run := exec.Command(builtBinary, words[1:]...)
		run.Dir, run.Env = dir, append(environ, "BWRAPKIT_POLICY=")
		if out, err := run.CombinedOutput(); err != nil {
			t.Errorf("example %q in %s: %v\n%s", line, dir, err, out)
		}
		// The commit mode example commits as the caller (GIT_* here): it must be on the host.
		if strings.HasPrefix(command, "git commit") {
			if out, _ := hostGit(dir, "log", "--format=%s", "-1").Output(); !strings.Contains(string(out), "from the sandbox") {
				t.Errorf("the example's commit is not on the host: %q", out)
			}
		}
	}
}

func slicesIndex(words []string, word string) int {
	for i, w := range words {
		if w == word {
			return i
		}
	}
	return len(words) - 1
}

// shellWords splits a command line with single quotes, as the examples use them.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var word strings.Builder
	inQuote, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			inQuote, inWord = !inQuote, true
		case r == ' ' && !inQuote:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inQuote {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
