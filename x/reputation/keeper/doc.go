// Package keeper implements x/reputation's state machine: the hooks that count each
// node's events per reputation epoch (hooks.go), the bounded epoch-end scoring
// (scoring.go), the score reads other modules use (reputation.go), queries, genesis and
// invariants.
package keeper
