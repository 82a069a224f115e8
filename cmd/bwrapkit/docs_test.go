package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/bwrapkit/bwrapkit/doctor"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// The documentation lists things the code defines: run's flags, the failure reasons, the
// doctor's checks, the files that decide. Each list is checked against the code here,
// both ways, so a flag, reason or check added or removed fails until the docs say so.

func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(livetest.RepoRoot(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestDocsRunFlagsAreRunsFlags(t *testing.T) {
	doc := readDoc(t, "docs/run.md")
	flags := newRunCmd(streams{}, &globalOptions{}).Flags()
	flags.VisitAll(func(flag *pflag.Flag) {
		if flag.Name == "help" {
			return
		}
		if !strings.Contains(doc, "`--"+flag.Name) {
			t.Errorf("docs/run.md does not document --%s", flag.Name)
		}
	})
	// Every flag the table lists is one run has.
	for _, match := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)").FindAllStringSubmatch(doc, -1) {
		if flags.Lookup(match[1]) == nil {
			t.Errorf("docs/run.md documents --%s, which run does not have", match[1])
		}
	}
}

func TestDocsListEveryFailureReason(t *testing.T) {
	doc := readDoc(t, "docs/run.md")
	section := doc[strings.Index(doc, "## Failure reasons"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	documented := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(section, -1)
	var listed []string
	for _, match := range documented {
		listed = append(listed, match[1])
	}
	reasons := reasonConstants(t)
	slices.Sort(listed)
	slices.Sort(reasons)
	if !slices.Equal(listed, reasons) {
		t.Errorf("docs/run.md lists the reasons %v; sandbox defines %v", listed, reasons)
	}
}

// reasonConstants are the values of every sandbox.Reason constant, read from the source.
func reasonConstants(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(livetest.RepoRoot(), "sandbox", "outcome.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	ast.Inspect(file, func(node ast.Node) bool {
		spec, ok := node.(*ast.ValueSpec)
		if !ok || spec.Type == nil || len(spec.Values) != 1 {
			return true
		}
		if ident, ok := spec.Type.(*ast.Ident); ok && ident.Name == "Reason" {
			if lit, ok := spec.Values[0].(*ast.BasicLit); ok {
				value, _ := strconv.Unquote(lit.Value)
				reasons = append(reasons, value)
			}
		}
		return true
	})
	if len(reasons) < 10 {
		t.Fatalf("precondition: sandbox/outcome.go defines the reasons (found %v)", reasons)
	}
	return reasons
}

func TestDocsListEveryDoctorCheckInOrder(t *testing.T) {
	doc := readDoc(t, "docs/doctor.md")
	at := 0
	for _, id := range doctor.IDs() {
		short := strings.TrimPrefix(id, "selftest.")
		found := -1
		for _, name := range []string{"`" + id + "`", "`" + short + "`"} {
			if i := strings.Index(doc[at:], name); i >= 0 && (found < 0 || i < found) {
				found = i
			}
		}
		if found < 0 {
			t.Errorf("docs/doctor.md does not list the check %s (after the ones before it)", id)
			continue
		}
		at += found
	}
}

func TestDocsDesignNamesFilesThatExist(t *testing.T) {
	doc := readDoc(t, "docs/design.md")
	paths := regexp.MustCompile("`((?:cmd|sandbox|doctor|locate|install|platform|internal|home|netproxy)/[A-Za-z0-9_./*-]*)`").FindAllStringSubmatch(doc, -1)
	if len(paths) < 20 {
		t.Fatalf("precondition: docs/design.md names the files that decide (found %d)", len(paths))
	}
	for _, match := range paths {
		matches, _ := filepath.Glob(filepath.Join(livetest.RepoRoot(), strings.TrimSuffix(match[1], "/")))
		if len(matches) == 0 {
			t.Errorf("docs/design.md names %s, which does not exist", match[1])
		}
	}
}

// TestDocsStayInTheRepository: no document points at the contract or reference notes the
// repository does not have, and every relative link leads to a file, but for the documents
// other work adds.
func TestDocsStayInTheRepository(t *testing.T) {
	root := livetest.RepoRoot()
	pending := []string{"docs/fleet.md", "docs/lifetime.md", "docs/workdir.md", "docs/containers.md", "docs/kernel-surface.md"}
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	var docs []string
	filepath.WalkDir(root, func(path string, entry os.DirEntry, err error) error {
		if err != nil || entry.IsDir() && (entry.Name() == ".cache" || entry.Name() == ".git" || entry.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	for _, path := range docs {
		data, _ := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		for _, cited := range []string{"SPEC.md", "REFERENCE.md", "STYLE.md"} {
			if strings.Contains(string(data), cited) {
				t.Errorf("%s cites %s, which is not part of the repository", rel, cited)
			}
		}
		for _, match := range link.FindAllStringSubmatch(string(data), -1) {
			target := filepath.Join(filepath.Dir(path), match[1])
			relTarget, _ := filepath.Rel(root, target)
			if _, err := os.Stat(target); err != nil && !slices.Contains(pending, relTarget) {
				t.Errorf("%s links to %s, which does not exist", rel, match[1])
			}
		}
	}
}
