// Package agent is flops-worker's loop: it registers the node and bonds on first start,
// then follows the chain block by block: it acks and runs the tasks assigned to its node
// (audits and committee duties included), checkpoints them, commits and reveals their
// results, heartbeats, answers PoCP challenges, bids in auctions and races for pool units.
// Everything it must remember across a restart (results committed but not yet revealed)
// is in its state directory; everything else it re-reads from the chain.
//
// A restart does not kill running PROCESS and CONTAINER tasks: the daemon cancels the
// agent with the cause executor.ErrWorkerShutdown, on which the executor leaves their
// process groups running (executor.ErrDetached, not a failure of the task). The next start
// reconciles with the chain: a task still in flight on the node whose process the
// executor recorded (Executor.Detached) is adopted (Executor.Adopt) on the GPUs it was
// pinned to, heartbeated, committed and revealed as usual, with no reassignment; one no
// longer the node's is killed (Executor.Abandon). BUILTIN tasks and pool units are not
// kept: the former start again (from the chain's checkpoint, if any), the latter are raced
// for again.
package agent
