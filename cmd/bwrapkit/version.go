package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bwrapkit/bwrapkit/install"
)

// versionReport is version --json, schema bwrapkit.version/v1. EmbeddedBwrap is null in a
// build that carries no bwrap (go install), so a fleet can tell the two apart.
type versionReport struct {
	Schema        string               `json:"schema"`
	Version       string               `json:"version"`
	EmbeddedBwrap *install.EmbeddedPin `json:"embedded_bwrap"`
}

func printVersion(out io.Writer, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprintf(out, "bwrapkit %s\n", version)
		return err
	}
	report := versionReport{Schema: "bwrapkit.version/v1", Version: version}
	if pin, ok := install.DescribeEmbedded(); ok {
		report.EmbeddedBwrap = &pin
	}
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(data))
	return err
}
