package selftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// SecretPrefix names the files secrets-hidden plants in the caller's real home (and in
// /root when the caller is root). They are removed when the check ends; a killed doctor's
// are swept at the next start (see Sweep).
const SecretPrefix = ".bwrapkit-doctor-secret-"

// plantedSecret is a secret file the check put on the host, and what is in it.
type plantedSecret struct {
	path, content string
}

// SecretsHidden plants secrets of its own where a leak would matter (the caller's home,
// /root) and proves the probe can neither read them nor see them listed. It judges by
// content, not by existence: a directory that exists inside only as the parent of a bound
// path (the workdir's, the probe's) shows nothing of the host's.
func SecretsHidden(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	scene := env.Scene
	secrets := []plantedSecret{{scene.secret, scene.secretContent()}}
	planted, notes := plantSecrets(env.Homes, scene.token)
	secrets = append(secrets, planted...)
	addFS(request, "secrets-hidden", "read:/etc/shadow")
	for _, secret := range secrets {
		addFS(request, "secrets-hidden", "read:"+secret.path)
	}
	for _, secret := range planted {
		addFS(request, "secrets-hidden", "list:"+filepath.Dir(secret.path))
	}
	return Part{
		// The planted files are gone as soon as the launch is, whatever its verdict.
		Cleanup: func() {
			for _, secret := range planted {
				os.Remove(secret.path)
			}
		},
		Judge: func(_ context.Context, launched Launched) report.Check {
			ops, ok := launched.Observation.FS["secrets-hidden"]
			if !ok {
				return missing("reads of secrets")
			}
			check := secretsHiddenVerdict(ops, secrets)
			if len(notes) > 0 {
				check.Detail = strings.TrimSpace(check.Detail + "\n" + strings.Join(notes, "\n"))
			}
			return check
		},
	}, nil
}

// plantSecrets writes a secret into each home that exists; a home that is missing, not a
// directory or not writable is noted and left as it is (never created).
func plantSecrets(homes []string, token string) (planted []plantedSecret, notes []string) {
	for _, home := range homes {
		info, err := os.Stat(home)
		if err == nil && !info.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("no secret planted in %s: %v", home, err))
			continue
		}
		secret := plantedSecret{filepath.Join(home, SecretPrefix+token), "bwrapkit doctor secret " + token + "\n"}
		if err := writeNew(secret.path, secret.content); err != nil {
			notes = append(notes, fmt.Sprintf("no secret planted in %s: %v", home, err))
			continue
		}
		planted = append(planted, secret)
	}
	return planted, notes
}

// writeNew creates name (never through an existing file or link) readable by its owner only.
func writeNew(name, content string) error {
	file, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = file.WriteString(content)
	if err = errors.Join(err, file.Close()); err != nil {
		os.Remove(name)
	}
	return err
}

// secretsHiddenVerdict: /etc/shadow and every planted secret were unreadable inside, and no
// listing of a home showed a planted secret's name. Only the planted names decide a listing:
// they exist on the host alone, where other names (.cache as the parent of a bound workdir,
// tmp under a home of /var) may exist inside and out without anything leaking.
func secretsHiddenVerdict(ops []probe.FileOp, secrets []plantedSecret) report.Check {
	var leaks, detail []string
	reads := 0
	for _, op := range ops {
		switch op.Op {
		case "read":
			reads++
			detail = append(detail, fmt.Sprintf("read %s: %s", op.Path, orSucceeded(op.Error)))
			if op.Error != "" {
				continue
			}
			leak := op.Path
			if i := slices.IndexFunc(secrets, func(s plantedSecret) bool { return s.path == op.Path }); i >= 0 && op.Content == secrets[i].content {
				leak += " (the planted secret's content)"
			}
			leaks = append(leaks, leak)
		case "list":
			var seen []string
			for _, secret := range secrets {
				if filepath.Dir(secret.path) == op.Path && slices.Contains(op.Entries, filepath.Base(secret.path)) {
					seen = append(seen, filepath.Base(secret.path))
				}
			}
			detail = append(detail, fmt.Sprintf("list %s: %s", op.Path, listingText(op)))
			if len(seen) > 0 {
				leaks = append(leaks, fmt.Sprintf("%s lists the host's %s", op.Path, strings.Join(seen, ", ")))
			}
		}
	}
	switch {
	case len(leaks) > 0:
		return breach("secrets are readable inside: "+strings.Join(leaks, "; "), strings.Join(detail, "\n"))
	case reads == 0:
		return report.Check{Status: report.StatusFail, Summary: "the probe reported no reads"}
	}
	where := "/etc/shadow and a secret outside the workdir"
	if len(secrets) > 1 {
		var homeNames []string
		for _, secret := range secrets[1:] {
			homeNames = append(homeNames, filepath.Dir(secret.path))
		}
		where = "/etc/shadow and secrets planted in " + strings.Join(homeNames, " and ")
	}
	return pass(where+" are unreadable inside", strings.Join(detail, "\n"))
}

func listingText(op probe.FileOp) string {
	if op.Error != "" {
		return op.Error
	}
	if len(op.Entries) == 0 {
		return "empty"
	}
	names := slices.Clone(op.Entries)
	slices.Sort(names)
	return strings.Join(names, " ")
}
