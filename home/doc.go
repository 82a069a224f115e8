// Package home owns the project HOMEs bwrapkit keeps for its runs, one per project under
// the caller's cache: where they live and what each is named, making one and proving it
// private (project.go), listing and pruning them (`bwrapkit home ls/prune`), and marking
// one in use while a run has it. What a HOME must keep apart from (the workdir, trusted
// state) is the sandbox policy's to decide.
package home
