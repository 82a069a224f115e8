package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/home"
)

// homesWarnBytes is where the project HOMEs' total becomes worth a warning: each holds a
// project's Go, npm and pip caches (100 MB is usual), and nothing removes them unasked.
const homesWarnBytes = 10 << 30

// homesSizeMaxAge bounds how old a stored HOME size the check may report (home.ListStored):
// a fleet runs the doctor every minute, and a walk of every cache file of every HOME each
// time was most of its own CPU. A `bwrapkit run` since, or a run holding the HOME now,
// has it walked at once; only a Go API run's writes wait for the bound.
const homesSizeMaxAge = time.Hour

// checkHomes reports how much the project HOMEs take, and how to prune them.
func (s *session) checkHomes(context.Context) report.Check {
	roots := home.Roots(s.cfg.Environ)
	now := s.cfg.Now()
	entries, err := home.ListStored(roots, now, homesSizeMaxAge)
	if err != nil {
		return report.Check{Status: report.StatusWarn, Summary: "the project HOMEs could not be read", Detail: err.Error(),
			Remedy: "check the permissions of " + fmt.Sprint(roots)}
	}
	total := home.TotalSize(entries)
	check := report.Check{Status: report.StatusOK,
		Summary: fmt.Sprintf("%d project HOMEs take %s", len(entries), mebibytes(total)),
		Detail:  fmt.Sprintf("roots: %v; total_bytes: %d; %s; list them with `bwrapkit home ls`", roots, total, measuredWhen(entries, now))}
	if total > homesWarnBytes {
		check.Status = report.StatusWarn
		check.Remedy = "remove the HOMEs not used for a month: bwrapkit home prune --older-than 30d"
		check.RemedyCommands = []string{"bwrapkit home prune --older-than 30d"}
	}
	return check
}

// measuredWhen says how current the sizes are (pure): how many were walked by this check
// and how old the oldest stored one is.
func measuredWhen(entries []home.Entry, now time.Time) string {
	walked, oldest := 0, now
	for _, entry := range entries {
		if !entry.Stored {
			walked++
		} else if entry.Measured.Before(oldest) {
			oldest = entry.Measured
		}
	}
	if walked == len(entries) {
		return "sizes measured now"
	}
	return fmt.Sprintf("sizes measured now for %d, stored for %d (the oldest %v ago; a HOME is measured again when a run uses it or its figure is %v old)",
		walked, len(entries)-walked, now.Sub(oldest).Round(time.Second), strings.TrimSuffix(homesSizeMaxAge.String(), "0m0s"))
}

func mebibytes(bytes int64) string {
	return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
}
