package agent

// The phases of the agent's work items, one enum each, so that every item is in exactly
// one named state and each transition is a line of code. A message that is "on its way"
// (committing, revealing) is never sent twice; a failed send, or a failure to build it,
// puts the item back where it was, and the next tick tries again.

// runPhase is where a task's execution on this machine stands.
//
//	running    -> finished (result recorded) | failed (the run failed here)
//	failed     -> reporting (the job's fault: its failure report is on its way; the
//	              machine's: its release is)
//	reporting  -> reported (accepted: the chain runs the task elsewhere) | failed (refused)
//	finished   -> committing (the commitment is on its way)
//	committing -> committed (accepted) | finished (refused, or the record unreadable)
//	committed  -> revealing (its reveal is open on chain and on its way)
//	revealing  -> revealed (accepted) | committed (refused, or the reveal not buildable)
//
// The chain's status of the task decides which step is tried: a task the chain shows
// COMMITTED is revealed from any phase before revealing (the commitment landed, whatever
// this machine remembers after a restart).
type runPhase int

const (
	phaseRunning runPhase = iota
	phaseFinished
	phaseFailed
	phaseCommitting
	phaseCommitted
	phaseRevealing
	phaseRevealed
	phaseReporting
	phaseReported
)

func (p runPhase) String() string {
	switch p {
	case phaseRunning:
		return "running"
	case phaseFinished:
		return "finished"
	case phaseFailed:
		return "failed"
	case phaseCommitting:
		return "committing"
	case phaseCommitted:
		return "committed"
	case phaseRevealing:
		return "revealing"
	case phaseRevealed:
		return "revealed"
	case phaseReporting:
		return "reporting"
	case phaseReported:
		return "reported"
	}
	return "unknown"
}

// revealable: the phases from which a task the chain shows COMMITTED may be revealed.
func (p runPhase) revealable() bool {
	return p == phaseFinished || p == phaseCommitting || p == phaseCommitted
}

// claimPhase is where a pool unit this node races for stands.
//
//	computing  -> committing (the claim is on its way) | dropped (failed, or lost the race)
//	committing -> committed (the unit is ours) | dropped
//	committed  -> revealing (the reveal is on its way) | dropped (the chain moved past it:
//	              revealed, lapsed, or the commitment never landed)
//	revealing  -> done (credited; the claim is forgotten) | committed (refused)
//
// A restart starts at committed for every unit whose record was kept (adoptClaims).
type claimPhase int

const (
	claimComputing claimPhase = iota
	claimCommitting
	claimCommitted
	claimRevealing
)

func (p claimPhase) String() string {
	switch p {
	case claimComputing:
		return "computing"
	case claimCommitting:
		return "committing"
	case claimCommitted:
		return "committed"
	case claimRevealing:
		return "revealing"
	}
	return "unknown"
}

// challengePhase is where a PoCP challenge this node answers stands.
//
//	solving    -> solved | failed (the solver failed)
//	solved     -> committing (the commitment is on its way, once past the issue block)
//	committing -> committed (accepted) | solved (refused)
//	committed  -> revealing (the reveal is on its way)
//	revealing  -> committed (refused, or the sample block's hash not available)
//
// A revealed challenge is concluded on chain and forgotten here.
type challengePhase int

const (
	challengeSolving challengePhase = iota
	challengeSolved
	challengeFailed
	challengeCommitting
	challengeCommitted
	challengeRevealing
)

func (p challengePhase) String() string {
	switch p {
	case challengeSolving:
		return "solving"
	case challengeSolved:
		return "solved"
	case challengeFailed:
		return "failed"
	case challengeCommitting:
		return "committing"
	case challengeCommitted:
		return "committed"
	case challengeRevealing:
		return "revealing"
	}
	return "unknown"
}
