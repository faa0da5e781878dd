// Package agent is flops-worker's loop: it registers the node and bonds on first start,
// then follows the chain block by block: it acks and runs the tasks assigned to its node
// (audits and committee duties included), checkpoints them, commits and reveals their
// results, heartbeats, answers PoCP challenges, bids in auctions and races for pool units.
// Everything it must remember across a restart (results committed but not yet revealed)
// is in its state directory; everything else it re-reads from the chain.
package agent
