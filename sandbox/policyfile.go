package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// PolicySchema names the policy file format.
const PolicySchema = "bwrapkit.policy/v1"

// PolicyFile is a policy kept in a file (`bwrapkit run --policy FILE`): every run flag,
// by the flag's name. The Go API takes the same document: decode it with
// ParsePolicyFile and pass its Request to NewPolicy.
type PolicyFile struct {
	Schema string `json:"schema"`
	Request
	// Timeout is a Go duration ("10m"); empty or "0" means none.
	Timeout string `json:"timeout,omitempty"`
	// Report is --report's file.
	Report string `json:"report,omitempty"`
}

// maxPolicyFile bounds a policy file read: a real one is a few hundred bytes.
const maxPolicyFile = 1 << 20

// MaxPolicyFile is the largest policy file read.
func MaxPolicyFile() int64 { return maxPolicyFile }

// ParsePolicyFile decodes a policy file, refusing what is not exactly one JSON object of
// schema bwrapkit.policy/v1 with known fields only: a misspelt field that was silently
// ignored would be a bind or a limit the user believes in and does not have.
func ParsePolicyFile(data []byte) (PolicyFile, error) {
	if key := repeatedKey(data); key != "" {
		return PolicyFile{}, &PolicyError{"policy", "", fmt.Sprintf("names %q twice; JSON would keep only the last, silently dropping the first: keep one (lists hold many values)", key)}
	}
	var file PolicyFile
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&file); err != nil {
		return PolicyFile{}, &PolicyError{"policy", "", "is not a " + PolicySchema + " document: " + describeJSONError(err)}
	}
	if _, err := decoder.Token(); !errors.Is(err, io.EOF) {
		return PolicyFile{}, &PolicyError{"policy", "", "has more after its JSON object"}
	}
	if file.Schema != PolicySchema {
		return PolicyFile{}, &PolicyError{"policy", "", fmt.Sprintf("has schema %q; want %q", file.Schema, PolicySchema)}
	}
	if _, err := ParseGitMode(file.Git); err != nil {
		return PolicyFile{}, err
	}
	return file, nil
}

// repeatedKey is the first key the top-level object names twice, or "": twice as
// encoding/json matches keys, ignoring case ("ro" and "RO" fill the same field).
// Anything that is not a well-formed object is left to the decoder to explain.
func repeatedKey(data []byte) string {
	decoder := json.NewDecoder(bytes.NewReader(data))
	if token, err := decoder.Token(); err != nil || token != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for decoder.More() {
		token, err := decoder.Token()
		key, isKey := token.(string)
		if err != nil || !isKey {
			return ""
		}
		if seen[foldKey(key)] {
			return key
		}
		seen[foldKey(key)] = true
		var value json.RawMessage
		if decoder.Decode(&value) != nil {
			return ""
		}
	}
	return ""
}

// foldKey maps every rune to the smallest of its case-fold orbit, as encoding/json's
// field matching equates them (the Kelvin sign with k, long s with s).
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		smallest := r
		for folded := unicode.SimpleFold(r); folded != r; folded = unicode.SimpleFold(folded) {
			smallest = min(smallest, folded)
		}
		return smallest
	}, key)
}

func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("%v (at byte %d)", syntax, syntax.Offset)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("field %q must be %s, not a JSON %s", strings.TrimPrefix(typeErr.Field, "Request."), typeErr.Type, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for an unknown field.
		return strings.TrimPrefix(err.Error(), "json: ") + " (see `bwrapkit run --help` for the fields)"
	case errors.Is(err, io.EOF):
		return "it is empty"
	}
	return err.Error()
}

// Merge is file with request added on top, as flags add to a policy file: lists are
// appended, a non-empty string replaces the file's, and --net turns the network on.
func (file PolicyFile) Merge(request Request) Request {
	merged := file.Request
	merged.ReadOnly = append(append([]string{}, merged.ReadOnly...), request.ReadOnly...)
	merged.ReadWrite = append(append([]string{}, merged.ReadWrite...), request.ReadWrite...)
	merged.Path = append(append([]string{}, merged.Path...), request.Path...)
	merged.Protect = append(append([]string{}, merged.Protect...), request.Protect...)
	merged.Env = append(append([]string{}, merged.Env...), request.Env...)
	merged.PassEnv = append(append([]string{}, merged.PassEnv...), request.PassEnv...)
	merged.Limits = append(append([]string{}, merged.Limits...), request.Limits...)
	merged.Trusted = append(append([]string{}, merged.Trusted...), request.Trusted...)
	merged.NetAllow = append(append([]string{}, merged.NetAllow...), request.NetAllow...)
	merged.Network = merged.Network || request.Network
	merged.KeepAbandoned = request.KeepAbandoned
	merged.Self = request.Self
	merged.Helper = request.Helper
	for _, field := range []struct {
		into *string
		from string
	}{
		{&merged.Workdir, request.Workdir}, {&merged.HomeDir, request.HomeDir},
		{&merged.Git, request.Git}, {&merged.Cwd, request.Cwd}, {&merged.WorkdirMode, request.WorkdirMode}, {&merged.Cache, request.Cache},
	} {
		if field.from != "" {
			*field.into = field.from
		}
	}
	return merged
}
