package agent

import "golang.org/x/sync/errgroup"

// RunBeside has the agent run its tasks, pool units and PoCP solves on g, beside the
// caller's ticks, as Follow does beside its loop (the tests' ticks otherwise run them in
// line).
func (a *Agent) RunBeside(g *errgroup.Group) { a.bg = g }
