// Package load measures what one flops node includes per second against an in-process
// network with a real CometBFT: bank sends as the yardstick, then POOL claims (commit,
// reveal, per-batch settlement) and submit-job transactions in the same run, each reported
// as a ratio to the bank-send rate (DESIGN.md section 8, issue 5's benchmark). The figures
// are logged, never asserted; the tests assert only that every transaction did what it
// should (each unit paid once, escrow drained, balances exact) and that every submitted
// job's tasks are assigned: the provider registers a free GPU for every job (8-GPU nodes)
// at an ask its 10-minute tasks can meet, and the run reads from the chain the blocks
// from each job's inclusion to its task's assignment (p50, p99, a histogram) and the
// assignments per second. Each flood's txs per block are logged too: how a flood was cut
// into blocks moves its rate and its latency from one run to the next.
//
// `go test ./tests/load/` runs a small configuration (a few hundred transactions, a few
// blocks a phase: it proves the measurement works, its rates are mostly inclusion
// latency); FLOPS_LOAD=1 runs a larger one (thousands of transactions, tens of blocks a
// phase), and FLOPS_LOAD_TXS, FLOPS_LOAD_UNITS, FLOPS_LOAD_BATCH, FLOPS_LOAD_SENDERS and
// FLOPS_LOAD_TASKS (tasks per job: more assignments than submissions) override its sizes,
// and FLOPS_LOAD_BLOCK_MS the validator's timeout_commit (default 500 ms).
// FLOPS_LOAD_JOB_RATE paces the submit-jobs (that many a second in all, instead of a
// flood): the blocks from inclusion to assignment at an offered load under the
// scheduler's capacity, which a flood, above it by design, cannot show.
//
// The senders set what a bank send costs the chain, so `make load` runs twice. With the
// default 8 senders (500 txs each), a block's bank sends rewrite the same 16 balances and
// 8 accounts: the state does not grow and their Commit costs almost nothing, while each
// job leaves eleven new keys. With FLOPS_LOAD_SENDERS=12000 FLOPS_LOAD_TXS=12000 (one tx
// each per phase, as the many clients of a public chain send; make load's second run),
// each send writes two balances and an account that no other tx of its block touches.
// Its phases take 7-9 blocks; with 4,000 senders (the second run until 2026-11-29) they
// fit in 2 or 3, and a phase that short measures inclusion latency as much as throughput
// (report marks it). Every account's public key is in genesis, as
// for an account that has sent before, so no measured tx pays its sender's first-tx key
// write. A flood never has more than FLOPS_LOAD_INFLIGHT txs (default 4,000) sent and
// not yet in a block: the node's mempool holds 5,000 (CometBFT's default), and CometBFT
// drops a tx that CheckTx accepted when the mempool filled while it was checked, with the
// sync broadcast still answering code 0 (an ungated phase of 8,000 lost exactly 3,000).
// A phase of more txs than that is fed as blocks take them, so FLOPS_LOAD_SENDERS=12000
// FLOPS_LOAD_TXS=12000 runs phases of 12,000 one-tx senders over 7-9 blocks. waitAll
// still fails once 30 blocks pass with none of the missing txs included.
// FLOPS_LOAD_INDEX_EVENTS (a comma list, as app.toml's index-events) limits the events the
// node indexes: with only message.action, the submit-job ratio was 0.651x next to 0.660x
// indexing all (on 276b06d), so the indexing of the assignment events is not what sets it.
// FLOPS_LOAD_DB=pebbledb runs the node on pebble instead of goleveldb (its state,
// CometBFT's block store, state and tx index); README (make load) has what it measured.
// FLOPS_LOAD_CPUPROFILE (a directory) writes a CPU profile of each bank-send and
// submit-job phase there (bank-send-1.prof, submit-job-1.prof, bank-send-2.prof), the node's
// and the driver's work together from the phase's first broadcast to the block of its last
// tx (not the driver's read of the results after it), to compare with
// `go tool pprof -diff_base`.
// Each bank-send and submit-job flood also logs what a tx cost the validator's serial ABCI
// path (abciTimer: CheckTx, rechecks, the proposal calls, FinalizeBlock and Commit, which
// CometBFT's local client runs one at a time) and the rate that bounds.
// FLOPS_LOAD_WORKER (a flops-worker binary; `make load-worker`) runs a real worker on a
// node of its own during the submit-job flood and logs its take-up and CPU per task. The node and
// the driver share the machine: on a busy one the rates drift between phases, which is
// why bank sends run before and after the market phases.
package load
