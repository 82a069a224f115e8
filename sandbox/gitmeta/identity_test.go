package gitmeta

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseGitUser(t *testing.T) {
	for _, c := range []struct{ config, name, email string }{
		{"[user]\n\tname = A B\n\temail = \"a@b\"\n", "A B", "a@b"},
		{"[core]\n\tname = no\n[User]\nemail=x@y\n", "", "x@y"},
		{"# comment\n[credential]\n\thelper = store\n", "", ""},
	} {
		if name, email := parseGitUser([]byte(c.config)); name != c.name || email != c.email {
			t.Errorf("%q: %q %q", c.config, name, email)
		}
	}
}

func TestGitIdentityEnv(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\nname = Home\nemail = home@example.com\n[credential]\nhelper = store\n"), 0o644)
	got := IdentityEnv([]string{"HOME=" + home, "GIT_AUTHOR_EMAIL=env@example.com"})
	want := []string{"GIT_AUTHOR_NAME=Home", "GIT_AUTHOR_EMAIL=env@example.com", "GIT_COMMITTER_NAME=Home", "GIT_COMMITTER_EMAIL=home@example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
