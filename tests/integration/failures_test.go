package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Failures injected into the block work of the wired app: a settlement, a challenge
// conclusion and an emission payout that fail are retried (EventItemFailed, attempts 1 to
// 5 at 1, 2, 4, 8 blocks), then resolved by their kind's rule (EventItemResolved), and
// nothing stays locked. Invariants are checked after every block.

// itemLog gathers the block-hook events of one item over the blocks it watches.
type itemLog struct {
	failed   []*blockhook.EventItemFailed
	resolved []*blockhook.EventItemResolved
}

// watch reads the last block's block-hook events that match.
func (l *itemLog) watch(a *apptest.App, match func(module, kind string, id, sub uint64, account string) bool) {
	if a.LastResults == nil {
		return
	}
	for _, e := range a.LastResults.Events {
		// FinalizeBlock adds a "mode" attribute that the typed event does not have
		ev := abci.Event{Type: e.Type}
		for _, at := range e.Attributes {
			if at.Key != "mode" {
				ev.Attributes = append(ev.Attributes, at)
			}
		}
		msg, err := sdk.ParseTypedEvent(ev)
		if err != nil {
			continue
		}
		switch ev := msg.(type) {
		case *blockhook.EventItemFailed:
			if match(ev.Module, ev.Kind, ev.Id, ev.Sub, ev.Account) {
				l.failed = append(l.failed, ev)
			}
		case *blockhook.EventItemResolved:
			if match(ev.Module, ev.Kind, ev.Id, ev.Sub, ev.Account) {
				l.resolved = append(l.resolved, ev)
			}
		}
	}
}

// requireRetriedThenResolved: five failures with attempts 1 to 5, then one resolution.
func (l *itemLog) requireRetriedThenResolved(t *testing.T) {
	t.Helper()
	require.Len(t, l.failed, blockhook.MaxAttempts)
	for i, ev := range l.failed {
		require.Equal(t, uint32(i+1), ev.Attempt)
		require.Contains(t, ev.Error, "injected")
	}
	require.Len(t, l.resolved, 1)
}

// refuseSends makes the bank refuse every send from one address to another while the
// returned switch is on (a send restriction, as a module could install).
func refuseSends(a *apptest.App, from, to sdk.AccAddress) *bool {
	on := true
	a.BankKeeper.AppendSendRestriction(func(_ context.Context, f, r sdk.AccAddress, _ sdk.Coins) (sdk.AccAddress, error) {
		if on && f.Equals(from) && r.Equals(to) {
			return nil, fmt.Errorf("injected: %s refuses funds", r)
		}
		return r, nil
	})
	return &on
}

// A provider the bank refuses to pay: its task's settlement fails, is retried with
// back-off, and after five failures is resolved by ending the task FAILED without a slash:
// the owner gets the whole reservation back, the provider's exposure is released, and the
// escrow ends empty.
func TestSettlementFailureIsRetriedThenResolved(t *testing.T) {
	a, nodes := marketApp(t, nil)
	before := readLedger(a)
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job := submit(t, a, spec)
	task := jobTasks(t, a, job)[0]
	name := providerOf(nodes, task.NodeId)
	prov := a.Account(name).Address
	provBefore := a.Balance(prov, udps)
	refuseSends(a, authtypes.NewModuleAddress(markettypes.ModuleName), prov)
	run(t, a, nodes, task)

	var log itemLog
	for i := 0; i < 80 && len(log.resolved) == 0; i++ {
		a.NextBlock()
		a.AssertInvariants()
		log.watch(a, func(module, kind string, id, _ uint64, _ string) bool {
			return module == markettypes.ModuleName && kind == markettypes.ItemSettle && id == task.Id
		})
	}
	log.requireRetriedThenResolved(t)
	require.Contains(t, log.resolved[0].Rule, "could not be paid")

	got, err := a.MarketKeeper.GetTask(a.Ctx(), task.Id)
	require.NoError(t, err)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, got.Status)
	require.NotEqual(t, markettypes.JOB_STATUS_ACTIVE, getJob(t, a, job).Status)
	after := readLedger(a)
	require.True(t, after.escrow.IsZero(), "nothing stays in escrow")
	require.Equal(t, before.client, after.client, "the owner gets everything back")
	require.Equal(t, provBefore, a.Balance(prov, udps))
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), prov)
	require.NoError(t, err)
	require.True(t, c.Exposure.IsZero(), "the exposure is released")
	require.True(t, c.SlashedTotal.IsZero(), "no slash")
}

// The same failure, lifted after the first attempt: the next retry settles the task and
// pays the provider.
func TestSettlementFailureRecoversOnRetry(t *testing.T) {
	a, nodes := marketApp(t, nil)
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job := submit(t, a, spec)
	task := jobTasks(t, a, job)[0]
	name := providerOf(nodes, task.NodeId)
	prov := a.Account(name).Address
	provBefore := a.Balance(prov, udps)
	on := refuseSends(a, authtypes.NewModuleAddress(markettypes.ModuleName), prov)
	run(t, a, nodes, task)

	var log itemLog
	for i := 0; i < 40; i++ {
		a.NextBlock()
		a.AssertInvariants()
		log.watch(a, func(module, kind string, id, _ uint64, _ string) bool {
			return module == markettypes.ModuleName && kind == markettypes.ItemSettle && id == task.Id
		})
		if len(log.failed) == 1 {
			*on = false
		}
	}
	require.Len(t, log.failed, 1)
	require.Empty(t, log.resolved)
	got, err := a.MarketKeeper.GetTask(a.Ctx(), task.Id)
	require.NoError(t, err)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, got.Status)
	require.True(t, a.Balance(prov, udps).GT(provBefore), "paid by the retry")
	require.True(t, readLedger(a).escrow.IsZero())
}

// A challenge whose conclusion fails (the node's statistics record for the epoch is
// corrupt, so the outcome cannot be counted): the conclusion is retried, then resolved by
// dropping the challenge without statistics, penalty or hooks; the node is free to be
// challenged again and its collateral is untouched.
func TestChallengeConclusionFailureIsRetriedThenResolved(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("prov"), apptest.WithGenesis(smallPoCP))
	node := bondAndRegister(t, a, "prov", 1)
	op := a.Account("prov")
	var ch gfltypes.Challenge
	for i := 0; i < 40 && ch.Id == 0; i++ {
		a.NextBlock()
		n, err := a.GFLKeeper.GetNode(a.Ctx(), node)
		require.NoError(t, err)
		if n.OpenChallenge != 0 {
			ch, err = a.GFLKeeper.Challenges.Get(a.Ctx(), n.OpenChallenge)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, ch.Id, "a challenge was issued")
	// a commitment that will never be opened: the challenge FAILS at its reveal deadline
	a.MustDeliver("prov", &gfltypes.MsgCommitChallenge{Operator: op.String(), ChallengeId: ch.Id, Root: make([]byte, 32)})
	a.Prepare(func(ctx sdk.Context) {
		st, err := a.GFLKeeper.Rebalance.Get(ctx)
		require.NoError(t, err)
		key, err := collections.EncodeKeyWithPrefix(a.GFLKeeper.Stats.GetPrefix(), a.GFLKeeper.Stats.KeyCodec(), collections.Join(node, st.StatsEpoch))
		require.NoError(t, err)
		ctx.KVStore(a.GetKey(gfltypes.StoreKey)).Set(key, []byte("injected: not a NodeEpochStats"))
	})
	collBefore, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), op.Address)
	require.NoError(t, err)

	var log itemLog
	for i := 0; i < 80 && len(log.resolved) == 0; i++ {
		a.NextBlock()
		a.AssertInvariants()
		log.watch(a, func(module, kind string, id, _ uint64, _ string) bool {
			return module == gfltypes.ModuleName && kind == gfltypes.ItemFail && id == ch.Id
		})
	}
	require.Len(t, log.failed, blockhook.MaxAttempts)
	for i, ev := range log.failed {
		require.Equal(t, uint32(i+1), ev.Attempt)
		require.NotEmpty(t, ev.Error)
	}
	require.Len(t, log.resolved, 1)
	require.Contains(t, log.resolved[0].Rule, "dropped")

	has, err := a.GFLKeeper.Challenges.Has(a.Ctx(), ch.Id)
	require.NoError(t, err)
	require.False(t, has, "the challenge is dropped")
	n, err := a.GFLKeeper.GetNode(a.Ctx(), node)
	require.NoError(t, err)
	require.NotEqual(t, ch.Id, n.OpenChallenge, "the node is free of it")
	coll, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), op.Address)
	require.NoError(t, err)
	require.Equal(t, collBefore.Bonded, coll.Bonded, "no slash")
	require.False(t, coll.Jailed)
	// and it is challenged again
	next := ch.Id
	for i := 0; i < 40 && next == ch.Id; i++ {
		a.NextBlock()
		n, err := a.GFLKeeper.GetNode(a.Ctx(), node)
		require.NoError(t, err)
		if n.OpenChallenge != 0 {
			next = n.OpenChallenge
		}
	}
	require.Greater(t, next, ch.Id)
}

// An emission payout to a provider the bank refuses: the distribution finishes, the
// reward is deferred (reserved in the pool), retried with back-off, and after five
// failures resolved back into the pool; the other provider is paid, nothing stays
// deferred.
func TestEmissionPayoutFailureIsRetriedThenResolved(t *testing.T) {
	a := incentiveApp(t, 20, 20_000, "good", "blocked")
	registerNode(t, a, "good", h200Spec("good", "eu-west", 1, 8), 0)
	blockedNode := registerNode(t, a, "blocked", h200Spec("blocked", "us-east", 1, 8), 0)
	d := newDriver(t, a, "good", "blocked")
	m := newMarket(t, a, d, newProver(t, "good", 1), newProver(t, "blocked", 1))
	blocked := a.Account("blocked").Address
	refuseSends(a, authtypes.NewModuleAddress(dpstypes.ModuleName), blocked)
	blockedBefore := a.Balance(blocked, udps)

	// the first payout item of blocked that fails, followed to its resolution
	var first *blockhook.EventItemFailed
	var log itemLog
	for i := 0; i < 600 && len(log.resolved) == 0; i++ {
		m.step()
		a.AssertInvariants()
		log.watch(a, func(module, kind string, id, sub uint64, account string) bool {
			// an availability payout is keyed by node, a work payout by account
			if module != dpstypes.ModuleName || (sub != blockedNode && account != blocked.String()) {
				return false
			}
			return first == nil || (kind == first.Kind && id == first.Id)
		})
		if first == nil && len(log.failed) > 0 {
			first = log.failed[0]
		}
	}
	require.NotNil(t, first, "a payout to blocked was attempted")
	log.requireRetriedThenResolved(t)
	require.Equal(t, "the reward stays in the pool", log.resolved[0].Rule)

	epoch := first.Id
	e := emission(t, a, epoch)
	require.True(t, e.DeferredAvailability.Add(e.DeferredWork).IsZero(), "nothing owed any more for epoch %d", epoch)
	require.True(t, e.PaidAvailability.IsPositive(), "good was paid")
	require.True(t, rewardsOf(t, a, "good", epoch).Availability.IsPositive())
	require.True(t, rewardsOf(t, a, "blocked", epoch).Availability.IsZero())
	require.Equal(t, blockedBefore, a.Balance(blocked, udps), "blocked received nothing")
}
