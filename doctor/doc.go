// Package doctor says whether this host can sandbox with bwrap, why not, and what to do:
// checks with dependencies run concurrently, live self-tests prove the boundary's effects on
// the host, and the report renders as text, JSON (bwrapkit.doctor/v1) or Prometheus metrics.
// PlanFixes decides which remedies `doctor --fix` may apply; a Fixer applies them.
package doctor
