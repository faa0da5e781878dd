package load

import (
	"fmt"
	"sync"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"

	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
)

// abciTimer times the validator's ABCI calls that take a tx's CPU: CheckTx (a new tx, and
// the recheck of every tx still in the mempool after each commit), PrepareProposal and
// ProcessProposal, FinalizeBlock and Commit. CometBFT's local client
// (proxy.NewLocalClientCreator, as flopsd and the SDK's in-process network use it) holds
// one mutex over all of them, so they run one at a time whatever the cores: their sum per
// tx bounds the rate one validator can take a kind of tx, and shows which part of a tx's
// path sets it. The times are wall time: where the node's other goroutines (gRPC, the
// indexer, the collector) share the cores, a call's waits for a core are in it, as they
// are in the rate.
type abciTimer struct {
	mu       sync.Mutex
	checkNew abciSum
	recheck  abciSum
	propose  abciSum // PrepareProposal and ProcessProposal
	finalize abciSum
	commit   abciSum
}

// abciSum is a count of calls and the time they took.
type abciSum struct {
	n int
	d time.Duration
}

func (s abciSum) minus(o abciSum) abciSum { return abciSum{n: s.n - o.n, d: s.d - o.d} }

// abciTotals is the timer's sums at one moment.
type abciTotals struct{ checkNew, recheck, propose, finalize, commit abciSum }

func (t abciTotals) minus(o abciTotals) abciTotals {
	return abciTotals{t.checkNew.minus(o.checkNew), t.recheck.minus(o.recheck), t.propose.minus(o.propose), t.finalize.minus(o.finalize), t.commit.minus(o.commit)}
}

func (t abciTotals) busy() time.Duration {
	return t.checkNew.d + t.recheck.d + t.propose.d + t.finalize.d + t.commit.d
}

func newABCITimer() *abciTimer { return &abciTimer{} }

// wrap makes every validator the constructor builds report its calls to the timer.
func (a *abciTimer) wrap(inner sdknetwork.AppConstructor) sdknetwork.AppConstructor {
	return func(val sdknetwork.ValidatorI) servertypes.Application {
		return timedApp{Application: inner(val), t: a}
	}
}

func (a *abciTimer) add(s *abciSum, began time.Time) {
	d := time.Since(began)
	a.mu.Lock()
	defer a.mu.Unlock()
	s.n++
	s.d += d
}

// totals is the sums so far (none when a is nil).
func (a *abciTimer) totals() abciTotals {
	if a == nil {
		return abciTotals{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return abciTotals{a.checkNew, a.recheck, a.propose, a.finalize, a.commit}
}

// timedApp is the validator's app with its CheckTx, FinalizeBlock and Commit timed.
type timedApp struct {
	servertypes.Application
	t *abciTimer
}

func (a timedApp) CheckTx(req *abci.RequestCheckTx) (*abci.ResponseCheckTx, error) {
	sum := &a.t.checkNew
	if req.Type == abci.CheckTxType_Recheck {
		sum = &a.t.recheck
	}
	defer a.t.add(sum, time.Now())
	return a.Application.CheckTx(req)
}

func (a timedApp) PrepareProposal(req *abci.RequestPrepareProposal) (*abci.ResponsePrepareProposal, error) {
	defer a.t.add(&a.t.propose, time.Now())
	return a.Application.PrepareProposal(req)
}

func (a timedApp) ProcessProposal(req *abci.RequestProcessProposal) (*abci.ResponseProcessProposal, error) {
	defer a.t.add(&a.t.propose, time.Now())
	return a.Application.ProcessProposal(req)
}

func (a timedApp) FinalizeBlock(req *abci.RequestFinalizeBlock) (*abci.ResponseFinalizeBlock, error) {
	defer a.t.add(&a.t.finalize, time.Now())
	return a.Application.FinalizeBlock(req)
}

func (a timedApp) Commit() (*abci.ResponseCommit, error) {
	defer a.t.add(&a.t.commit, time.Now())
	return a.Application.Commit()
}

// abciLine says what a phase of txs cost the validator's serial ABCI path, per tx: new
// CheckTx, rechecks, the proposal calls, FinalizeBlock and Commit (ms), the share of the
// phase's window the path was busy, and the rate the path alone would allow (1 / its time
// per tx).
func abciLine(p phase) string {
	a, per := p.abci, func(s abciSum) float64 { return float64(s.d.Microseconds()) / 1000 / float64(p.txs) }
	if p.txs == 0 || a.busy() == 0 {
		return "-"
	}
	return fmt.Sprintf("CheckTx %.3f + recheck %.3f (%.1f per tx) + proposal %.3f + FinalizeBlock %.3f + Commit %.3f = %.3f ms/tx, busy %.0f%% of the window, bound %.0f txs/s",
		per(a.checkNew), per(a.recheck), float64(a.recheck.n)/float64(p.txs), per(a.propose), per(a.finalize), per(a.commit),
		float64(a.busy().Microseconds())/1000/float64(p.txs), 100*a.busy().Seconds()/p.elapsed.Seconds(),
		float64(p.txs)/a.busy().Seconds())
}
