package integration

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sskeeper "github.com/flopsnet/flops/x/staking-slash/keeper"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// solved is a GEMM computed the way flops-worker does: the product and its Merkle tree.
type solved struct {
	c    pocp.Challenge
	s    []int32
	tree *pocp.Tree
}

func solveGemm(t testing.TB, c pocp.Challenge) solved {
	t.Helper()
	s, err := pocp.Solve(context.Background(), c, 2)
	require.NoError(t, err)
	return solved{c: c, s: s, tree: pocp.BuildTree(s, c.N, 2)}
}

func (g solved) root() []byte { r := g.tree.Root(); return r[:] }

// proofs opens the chunks holding the sampled entries, as MsgReveal* carry them.
func (g solved) proofs(seed [32]byte, samples uint32) []gfltypes.ChunkProof {
	positions := markettypes.GemmSamplePositions(seed, g.c, samples)
	var out []gfltypes.ChunkProof
	for _, idx := range pocp.ChunksFor(g.c.N, positions) {
		pr := g.tree.Prove(g.s, idx)
		tp := gfltypes.ChunkProof{Index: pr.Index, Chunk: pr.Chunk}
		for _, h := range pr.Path {
			tp.Path = append(tp.Path, append([]byte(nil), h[:]...))
		}
		out = append(out, tp)
	}
	return out
}

func gemmPoolSpec(unitPrice, budget int64) markettypes.PoolSpec {
	return markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM,
		UnitPrice: sdk.NewInt64Coin(udps, unitPrice), Budget: sdk.NewInt64Coin(udps, budget), MaxProviders: 4, UnitMaxDuration: time.Minute,
	}
}

func getPool(t testing.TB, a *apptest.App, id uint64) markettypes.Pool {
	t.Helper()
	res, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: id})
	require.NoError(t, err)
	return res.Pool
}

func getUnit(t testing.TB, a *apptest.App, pool, unit uint64) markettypes.Unit {
	t.Helper()
	res, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).Unit(a.Ctx(), &markettypes.QueryUnitRequest{PoolId: pool, UnitId: unit})
	require.NoError(t, err)
	return res.Unit
}

// workOf lists the verified work records of a named provider, every epoch and class.
func workOf(t testing.TB, a *apptest.App, name string) []dpstypes.WorkRecord {
	t.Helper()
	var out []dpstypes.WorkRecord
	require.NoError(t, a.DPSKeeper.Work.Walk(a.Ctx(), nil, func(k collections.Triple[uint64, sdk.AccAddress, int32], w dpstypes.WorkRecord) (bool, error) {
		if k.K2().Equals(a.Account(name).Address) {
			out = append(out, w)
		}
		return false, nil
	}))
	return out
}

// transfersTo counts the bank transfers that credited addr in a tx's events.
func transfersTo(events []abci.Event, addr string) int {
	n := 0
	for _, e := range events {
		if e.Type != "transfer" {
			continue
		}
		for _, at := range e.Attributes {
			if at.Key == "recipient" && at.Value == addr {
				n++
			}
		}
	}
	return n
}

// poolPlayer plays pool members the way flops-worker does: it solves a unit's GEMM,
// commits to its root, and reveals the sampled entries once the sampling block is known.
type poolPlayer struct {
	t      testing.TB
	a      *apptest.App
	nodes  map[string]uint64
	pool   markettypes.Pool
	salt   []byte
	work   map[uint64]solved
	sample uint32
}

func newPoolPlayer(t testing.TB, a *apptest.App, nodes map[string]uint64, poolID uint64) *poolPlayer {
	gp, err := a.GFLKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	return &poolPlayer{t: t, a: a, nodes: nodes, pool: getPool(t, a, poolID), salt: []byte("pool-worker-salt-0123"),
		work: map[uint64]solved{}, sample: gp.ChallengeSamples}
}

func (pp *poolPlayer) commit(name string, unit uint64, root []byte) sdk.Msg {
	acc := pp.a.Account(name)
	return &markettypes.MsgCommitUnit{Provider: acc.String(), PoolId: pp.pool.Id, UnitId: unit, NodeId: pp.nodes[name],
		Commitment: markettypes.Commitment(root, pp.salt, acc.Address)}
}

// solve computes (once) the true product of a unit.
func (pp *poolPlayer) solve(unit uint64) solved {
	if g, ok := pp.work[unit]; ok {
		return g
	}
	g := solveGemm(pp.t, pp.pool.UnitGemm(getUnit(pp.t, pp.a, pp.pool.Id, unit)))
	pp.work[unit] = g
	return g
}

func (pp *poolPlayer) reveal(name string, unit uint64, g solved) sdk.Msg {
	u := getUnit(pp.t, pp.a, pp.pool.Id, unit)
	seed := beacon.Derive(pp.a.BeaconValue(u.CommitHeight+1), markettypes.DomainPoolSample, pp.pool.Id, unit)
	return &markettypes.MsgRevealUnit{Provider: pp.a.Account(name).String(), PoolId: pp.pool.Id, UnitId: unit,
		ResultRoot: g.root(), Salt: pp.salt, OutputUri: fmt.Sprintf("https://%s.example.com/out/%d", name, unit),
		GemmProofs: g.proofs(seed, pp.sample)}
}

// unitInputs are n distinct unit inputs.
func unitInputs(n int) []markettypes.Input {
	inputs := make([]markettypes.Input, n)
	for i := range inputs {
		h := sha256.Sum256([]byte(fmt.Sprintf("prompt batch %d", i)))
		inputs[i] = markettypes.Input{Uri: fmt.Sprintf("https://client.example.com/in/%d", i), Sha256: fmt.Sprintf("%x", h)}
	}
	return inputs
}

// A BUILTIN_GEMM pool raced by four providers: each unit is paid once, to the first valid
// commitment (a second commitment in the same block loses); a reveal must open the
// sampled entries of the real product; a claimer that never reveals is slashed for a
// missed reveal at the deadline (burned: the owner gets none of it) and the unit is raced again
// without it; credits are paid in one transfer per withdrawal; closing pays the rest and
// refunds the free budget. Balances exact to the udps, invariants after every phase.
func TestPoolRace(t *testing.T) {
	a, nodes := marketAppN(t, 4, func(p *markettypes.Params) { p.PoolRevealTimeoutBlocks = 10 })
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	names := []string{"client", "p1", "p2", "p3", "p4"}
	start := balances(a, names...)
	bondStart := map[string]sdkmath.Int{}
	for _, n := range names[1:] {
		bondStart[n] = bonded(t, a, n)
	}
	const price, units = 1_000_000, 6
	budget := int64(10 * price)
	owner := a.Account("client").String()

	// A pool must verify its units with BUILTIN_GEMM or NONE.
	bad := gemmPoolSpec(price, budget)
	bad.Verification = markettypes.VERIFICATION_CLASS_EXACT
	r := a.Deliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: bad})
	require.Equal(t, markettypes.ErrInvalidPool.ABCICode(), r.Code, r.Log)

	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: gemmPoolSpec(price, budget)})
	poolID := uint64(1)
	require.Equal(t, sdkmath.NewInt(budget), a.ModuleBalance(markettypes.ModuleName, udps), "the budget is escrowed")

	// Members join with their own nodes only.
	r = a.Deliver("p1", &markettypes.MsgJoinPool{Provider: a.Account("p1").String(), PoolId: poolID, NodeId: nodes["p2"]})
	require.Equal(t, markettypes.ErrNotProvider.ABCICode(), r.Code, r.Log)
	for _, n := range names[1:] {
		a.MustDeliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: poolID, NodeId: nodes[n]})
	}
	require.Equal(t, uint32(4), getPool(t, a, poolID).Members)
	// a node joins once: the refusal names it (a worker that raced its operator's own join
	// tells it from a full or closed pool by this code)
	r = a.Deliver(names[1], &markettypes.MsgJoinPool{Provider: a.Account(names[1]).String(), PoolId: poolID, NodeId: nodes[names[1]]})
	require.Equal(t, markettypes.ErrAlreadyMember.ABCICode(), r.Code, r.Log)
	require.Equal(t, markettypes.ModuleName, r.Codespace)
	require.Equal(t, uint32(4), getPool(t, a, poolID).Members)

	// Only the owner posts units; the batch must fit the free budget.
	inputs := unitInputs(units)
	r = a.Deliver("p1", &markettypes.MsgSubmitUnits{Owner: a.Account("p1").String(), PoolId: poolID, Units: inputs})
	require.Equal(t, markettypes.ErrNotOwner.ABCICode(), r.Code, r.Log)
	tooMany := append(append([]markettypes.Input{}, inputs...), inputs...)
	r = a.Deliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: poolID, Units: tooMany})
	require.Equal(t, markettypes.ErrInsufficientFunds.ABCICode(), r.Code, "12 units do not fit a 10-unit budget: %s", r.Log)
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: poolID, Units: inputs})
	a.AssertInvariants()

	pp := newPoolPlayer(t, a, nodes, poolID)
	commit, solve, reveal := pp.commit, pp.solve, pp.reveal

	// The race for unit 1: p1 and p2 both commit in the same block; p1's tx comes first.
	res := a.NextBlock(a.SignTx("p1", apptest.DefaultGas, commit("p1", 1, solve(1).root())),
		a.SignTx("p2", apptest.DefaultGas, commit("p2", 1, solve(1).root())))
	require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
	require.Equal(t, markettypes.ErrUnitClaimed.ABCICode(), res.TxResults[1].Code, "the second commitment loses: %s", res.TxResults[1].Log)
	u1 := getUnit(t, a, poolID, 1)
	require.Equal(t, markettypes.UNIT_STATUS_COMMITTED, u1.Status)
	require.Equal(t, nodes["p1"], u1.NodeId)

	// p2 and p3 claim units 2 and 3; p4 claims 4 with a commitment to nothing (a claim to
	// squat on), and 5 with the root of the wrong product.
	wrong := solveGemm(t, pocp.Challenge{Seed: sha256.Sum256([]byte("some other matrix")), N: 256, R: 1})
	res = a.NextBlock(
		a.SignTx("p2", apptest.DefaultGas, commit("p2", 2, solve(2).root())),
		a.SignTx("p3", apptest.DefaultGas, commit("p3", 3, solve(3).root())),
		a.SignTx("p4", apptest.DefaultGas, commit("p4", 4, []byte("0123456789abcdef0123456789abcdef")), commit("p4", 5, wrong.root())),
	)
	for i, tr := range res.TxResults {
		require.Zerof(t, tr.Code, "tx %d: %s", i, tr.Log)
	}
	// the claims weigh on collateral: each reserves unit price x result_penalty_multiple
	c4, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p4").Address)
	require.NoError(t, err)
	claim := sdkmath.NewInt(price).MulRaw(int64(mp.ResultPenaltyMultiple)) // 20 DPS
	require.Equal(t, claim.MulRaw(2), c4.Exposure)

	// Reveals: not in the commit block's successor before its hash is known; the wrong
	// product fails its samples and changes nothing; the honest ones are credited.
	a.NextBlock()
	r = a.Deliver("p4", reveal("p4", 5, wrong))
	require.Equal(t, markettypes.ErrWrongResult.ABCICode(), r.Code, r.Log)
	require.Equal(t, markettypes.UNIT_STATUS_COMMITTED, getUnit(t, a, poolID, 5).Status, "a failed reveal changes nothing")
	r = a.Deliver("p2", reveal("p2", 1, solve(1)))
	require.Equal(t, markettypes.ErrNotProvider.ABCICode(), r.Code, "only the claimer reveals: %s", r.Log)
	// a reveal whose proofs omit a sampled chunk is refused
	short := reveal("p1", 1, solve(1)).(*markettypes.MsgRevealUnit)
	short.GemmProofs = short.GemmProofs[1:]
	r = a.Deliver("p1", short)
	require.Equal(t, markettypes.ErrInvalidReveal.ABCICode(), r.Code, r.Log)
	res = a.NextBlock(
		a.SignTx("p1", apptest.DefaultGas, reveal("p1", 1, solve(1))),
		a.SignTx("p2", apptest.DefaultGas, reveal("p2", 2, solve(2))),
		a.SignTx("p3", apptest.DefaultGas, reveal("p3", 3, solve(3))),
	)
	for i, tr := range res.TxResults {
		require.Zerof(t, tr.Code, "tx %d: %s", i, tr.Log)
	}
	pool := getPool(t, a, poolID)
	require.Equal(t, uint64(3), pool.PaidUnits)
	require.Equal(t, sdkmath.NewInt(3*price), pool.Unpaid)
	_, err = a.MarketKeeper.Units.Get(a.Ctx(), collections.Join(poolID, uint64(1)))
	require.Error(t, err, "a paid unit's record is pruned")
	a.AssertInvariants()

	// p1 claims unit 6 too; it is credited with two units and withdraws them in one transfer.
	a.MustDeliver("p1", commit("p1", 6, solve(6).root()))
	a.NextBlock()
	a.MustDeliver("p1", reveal("p1", 6, solve(6)))
	r = a.MustDeliver("p1", &markettypes.MsgWithdrawPoolEarnings{Provider: a.Account("p1").String(), PoolId: poolID})
	require.Equal(t, 1, transfersTo(r.Events, a.Account("p1").String()), "two units, one payment")
	two := sdkmath.NewInt(2 * price)
	require.Equal(t, start["p1"].Add(paidNet(t, a, two)), a.Balance(a.Account("p1").Address, udps))
	r = a.Deliver("p1", &markettypes.MsgWithdrawPoolEarnings{Provider: a.Account("p1").String(), PoolId: poolID})
	require.Equal(t, markettypes.ErrInvalidPool.ABCICode(), r.Code, "nothing left to withdraw: %s", r.Log)
	a.AssertInvariants()

	// p4 never reveals: at the deadline both claims lapse; p4 is slashed twice for a missed
	// reveal (burned: the owner gets none of it), its exposure released, and units 4 and 5
	// open again without p4.
	deadline := getUnit(t, a, poolID, 4).RevealDeadlineHeight
	for a.Height() < deadline {
		a.NextBlock()
	}
	for _, u := range []uint64{4, 5} {
		got := getUnit(t, a, poolID, u)
		require.Equal(t, markettypes.UNIT_STATUS_OPEN, got.Status, "unit %d", u)
		require.Equal(t, []uint64{nodes["p4"]}, got.ExcludedNodes)
	}
	// each missed reveal costs max(20% of the bond, the claim's exposure): 20 DPS of 100,
	// then 20 DPS of the 80 left (25%, more than the 20% that would be 16)
	require.Equal(t, sdkmath.NewInt(100_000_000), bondStart["p4"])
	first, second := claim, claim
	require.True(t, second.GT(bondStart["p4"].Sub(first).MulRaw(int64(mp.MissedRevealSlashPpm)).QuoRaw(1e6)))
	require.Equal(t, bondStart["p4"].Sub(first).Sub(second), bonded(t, a, "p4"))
	c4, err = a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p4").Address)
	require.NoError(t, err)
	require.True(t, c4.Exposure.IsZero())
	hist, err := sskeeper.NewQueryServerImpl(a.StakingSlashKeeper).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account("p4").String()})
	require.NoError(t, err)
	require.Len(t, hist.Slashes, 2)
	for _, s := range hist.Slashes {
		require.Equal(t, sstypes.SLASH_REASON_MISSED_REVEAL, s.Reason)
	}
	r = a.Deliver("p4", commit("p4", 4, solve(4).root()))
	require.Equal(t, markettypes.ErrNodeNotEligible.ABCICode(), r.Code, "a lapsed node cannot claim the unit again: %s", r.Log)
	a.AssertInvariants()

	// p3 races unit 4 and is credited; unit 5 is left open.
	a.MustDeliver("p3", commit("p3", 4, solve(4).root()))
	a.NextBlock()
	a.MustDeliver("p3", reveal("p3", 4, solve(4)))

	// The owner closes: the open unit is cancelled, p2's and p3's credits are paid, and the
	// free budget (10 - 5 paid units) comes back.
	clientBeforeClose := a.Balance(a.Account("client").Address, udps)
	r = a.Deliver("p1", &markettypes.MsgClosePool{Owner: a.Account("p1").String(), PoolId: poolID})
	require.Equal(t, markettypes.ErrNotOwner.ABCICode(), r.Code, r.Log)
	a.MustDeliver("client", &markettypes.MsgClosePool{Owner: owner, PoolId: poolID})
	require.Equal(t, markettypes.POOL_STATUS_CLOSED, getPool(t, a, poolID).Status)
	refund := sdkmath.NewInt(budget - 5*price)
	require.Equal(t, clientBeforeClose.Add(refund), a.Balance(a.Account("client").Address, udps))
	require.Equal(t, start["client"].Sub(sdkmath.NewInt(5*price)), a.Balance(a.Account("client").Address, udps),
		"the owner pays five verified units and gains nothing from p4's lapses")
	one := sdkmath.NewInt(price)
	require.Equal(t, start["p2"].Add(paidNet(t, a, one)), a.Balance(a.Account("p2").Address, udps))
	require.Equal(t, start["p3"].Add(paidNet(t, a, two)), a.Balance(a.Account("p3").Address, udps))
	require.Equal(t, start["p4"], a.Balance(a.Account("p4").Address, udps), "the squatter earned nothing")
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "the escrow ends empty")
	r = a.Deliver("p1", commit("p1", 5, wrong.root()))
	require.Equal(t, markettypes.ErrUnitNotFound.ABCICode(), r.Code, "a closed pool races nothing: %s", r.Log)
	a.AssertInvariants()

	// The verified GEMM units count as verified work of their providers.
	var tasks, gflops uint64
	for _, w := range workOf(t, a, "p3") {
		tasks += w.Tasks
		gflops += w.GflopSeconds.Uint64()
	}
	require.Equal(t, uint64(2), tasks)
	require.Equal(t, 2*(pocp.Challenge{N: 256, R: 1}).FLOPs()/1e9, gflops)
}

// Closing a pool with claims pending: open units are refunded at once; a pending claim
// revealed in time is still paid (and withdrawn after the close); one that lapses is
// slashed (burned) and its price refunded to the owner. The escrow ends empty.
func TestPoolCloseWithPendingClaims(t *testing.T) {
	a, nodes := marketAppN(t, 2, func(p *markettypes.Params) { p.PoolRevealTimeoutBlocks = 10 })
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	const price = 2_000_000
	owner := a.Account("client").String()
	start := balances(a, "client", "p1", "p2")
	bond2 := bonded(t, a, "p2")
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: gemmPoolSpec(price, 4*price)})
	for _, n := range []string{"p1", "p2"} {
		a.MustDeliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: 1, NodeId: nodes[n]})
	}
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: 1, Units: unitInputs(3)})
	pp := newPoolPlayer(t, a, nodes, 1)
	res := a.NextBlock(a.SignTx("p1", apptest.DefaultGas, pp.commit("p1", 1, pp.solve(1).root())),
		a.SignTx("p2", apptest.DefaultGas, pp.commit("p2", 2, pp.solve(2).root())))
	for i, tr := range res.TxResults {
		require.Zerof(t, tr.Code, "tx %d: %s", i, tr.Log)
	}

	// closed with units 1 and 2 claimed: unit 3 and the unposted budget come back now
	a.MustDeliver("client", &markettypes.MsgClosePool{Owner: owner, PoolId: 1})
	require.Equal(t, start["client"].Sub(sdkmath.NewInt(2*price)), a.Balance(a.Account("client").Address, udps))
	require.Equal(t, sdkmath.NewInt(2*price), a.ModuleBalance(markettypes.ModuleName, udps), "the claimed units stay escrowed")
	a.AssertInvariants()

	// p1 reveals in time and withdraws; p2 lets its claim lapse
	a.MustDeliver("p1", pp.reveal("p1", 1, pp.solve(1)))
	a.MustDeliver("p1", &markettypes.MsgWithdrawPoolEarnings{Provider: a.Account("p1").String(), PoolId: 1})
	require.Equal(t, start["p1"].Add(paidNet(t, a, sdkmath.NewInt(price))), a.Balance(a.Account("p1").Address, udps))
	deadline := getUnit(t, a, 1, 2).RevealDeadlineHeight
	for a.Height() < deadline {
		a.NextBlock()
	}
	_, err = a.MarketKeeper.Units.Get(a.Ctx(), collections.Join(uint64(1), uint64(2)))
	require.Error(t, err, "the lapsed unit of a closed pool is cancelled, not raced")
	// the lapse costs the claim's exposure (2 DPS x 20 = 40 DPS), more than 20% of 100 DPS
	slash := sdkmath.NewInt(price).MulRaw(int64(mp.ResultPenaltyMultiple))
	require.True(t, slash.GT(bond2.MulRaw(int64(mp.MissedRevealSlashPpm)).QuoRaw(1e6)))
	require.Equal(t, bond2.Sub(slash), bonded(t, a, "p2"))
	require.Equal(t, start["client"].Sub(sdkmath.NewInt(price)), a.Balance(a.Account("client").Address, udps),
		"the owner pays the one revealed unit; the lapse's slash is burned")
	require.Equal(t, start["p2"], a.Balance(a.Account("p2").Address, udps))
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "the escrow ends empty")
	a.AssertInvariants()
}

// A closed pool does not stay for ever: job_retention_blocks after its close, once it
// holds nothing, its record and its members are deleted by the block work (and the
// escrow account never held more than the pool's budget).
func TestClosedPoolIsPruned(t *testing.T) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.JobRetentionBlocks = 20 })
	owner := a.Account("client").String()
	poolID := submittedPool(t, a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: gemmPoolSpec(100_000, 1_000_000)}).Data)
	for _, n := range []string{"p1", "p2"} {
		a.MustDeliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: poolID, NodeId: nodes[n]})
	}
	members := func() int {
		n := 0
		require.NoError(t, a.MarketKeeper.PoolMembers.Walk(a.Ctx(), collections.NewPrefixedPairRange[uint64, uint64](poolID),
			func(collections.Pair[uint64, uint64], markettypes.PoolMember) (bool, error) { n++; return false, nil }))
		return n
	}
	require.Equal(t, 2, members())
	a.MustDeliver("client", &markettypes.MsgClosePool{Owner: owner, PoolId: poolID})
	closed := a.Height()
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "the budget is refunded at the close")
	for a.Height() < closed+20 {
		ok, err := a.MarketKeeper.Pools.Has(a.Ctx(), poolID)
		require.NoError(t, err)
		require.True(t, ok, "pruned before its retention, at height %d", a.Height())
		a.NextBlock()
	}
	a.NextBlock()
	ok, err := a.MarketKeeper.Pools.Has(a.Ctx(), poolID)
	require.NoError(t, err)
	require.False(t, ok, "the closed pool is still stored a retention after its close")
	require.Zero(t, members())
	a.AssertInvariants()
}

func submittedPool(t testing.TB, data []byte) uint64 {
	t.Helper()
	var md sdk.TxMsgData
	require.NoError(t, md.Unmarshal(data))
	require.Len(t, md.MsgResponses, 1)
	var r markettypes.MsgCreatePoolResponse
	require.NoError(t, r.Unmarshal(md.MsgResponses[0].Value))
	return r.PoolId
}

// TestAttackLazyClaimerWinsNonePool: in a NONE pool (a reveal is not checked) units were
// raced, so a member that commits a made-up root the moment a unit appears took every
// unit from one that runs them. A NONE pool's units are now drawn among its members:
// over 40 units the lazy member, committing at once, claims only the units drawn for it
// (and those the honest member leaves past their reservation: none here), the honest one,
// committing three blocks later, every unit drawn for it; each share is within the
// binomial bound of half.
func TestAttackLazyClaimerWinsNonePool(t *testing.T) {
	const units = 40
	// a long reveal timeout (and so reservation): nothing lapses while the test plays
	// one claim per block
	a, nodes := marketAppN(t, 2, func(p *markettypes.Params) { p.PoolRevealTimeoutBlocks = 1000 })
	owner := a.Account("client").String()
	spec := gemmPoolSpec(10_000, units*10_000) // small units: 40 claims fit either member's collateral
	spec.Verification = markettypes.VERIFICATION_CLASS_NONE
	poolID := submittedPool(t, a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: spec}).Data)
	for _, n := range []string{"p1", "p2"} {
		a.MustDeliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: poolID, NodeId: nodes[n]})
	}
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: poolID, Units: unitInputs(units)})
	pp := newPoolPlayer(t, a, nodes, poolID)
	lazyRoot := sha256.Sum256([]byte("made up"))
	// the lazy member (p1) tries every unit at once; what it cannot claim is refused
	for u := uint64(1); u <= units; u++ {
		if getUnit(t, a, poolID, u).Status != markettypes.UNIT_STATUS_OPEN {
			continue
		}
		r := a.Deliver("p1", pp.commit("p1", u, lazyRoot[:]))
		if r.Code != 0 {
			require.Equal(t, markettypes.ErrUnitReserved.ABCICode(), r.Code, r.Log)
		}
	}
	a.NextBlocks(3) // the honest member computes
	for u := uint64(1); u <= units; u++ {
		if getUnit(t, a, poolID, u).Status == markettypes.UNIT_STATUS_OPEN {
			a.MustDeliver("p2", pp.commit("p2", u, pp.solve(u).root()))
		}
	}
	won := map[uint64]int{}
	for u := uint64(1); u <= units; u++ {
		unit := getUnit(t, a, poolID, u)
		require.Equal(t, markettypes.UNIT_STATUS_COMMITTED, unit.Status)
		require.Equal(t, unit.DesignatedNode, unit.NodeId, "unit %d claimed by a member it was not drawn for", u)
		won[unit.NodeId]++
	}
	sd := math.Sqrt(units * 0.25)
	t.Logf("lazy member %d units, honest member %d (fair %d ± %.1f)", won[nodes["p1"]], won[nodes["p2"]], units/2, sd)
	require.InDelta(t, units/2, won[nodes["p1"]], 4*sd)
	a.AssertInvariants()
}

// TestAttackHugePoolSpecTaxesItsMembers: a pool's record held its spec, whose command and
// environment may be about 330 KB, and every unit step rewrote the record (a member's
// commit and reveal, a lapse in the block work): at 30 gas a byte written, about
// 10,000,000 gas a step with the largest legal spec, paid by the member (a lapse: by the
// block's queue budget), while the unit price is the owner's to set. The spec is stored
// apart from the record since store version 10, and a unit step costs its member the
// same whatever the pool's spec.
func TestAttackHugePoolSpecTaxesItsMembers(t *testing.T) {
	a, nodes := marketAppN(t, 1, nil)
	owner := a.Account("client").String()
	small := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"serve"},
		Verification: markettypes.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
		Budget: sdk.NewInt64Coin(udps, 100_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
	}
	huge := small
	huge.Command, huge.Env = nil, nil
	for i := range markettypes.MaxArgs {
		huge.Command = append(huge.Command, fmt.Sprintf("%03d", i)+strings.Repeat("c", markettypes.MaxArgLen-3))
		huge.Env = append(huge.Env, markettypes.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("e", markettypes.MaxEnvValueLen)})
	}
	t.Logf("the huge spec: %d bytes", huge.Size())
	gas := map[string][2]int64{}
	for name, spec := range map[string]markettypes.PoolSpec{"small": small, "huge": huge} {
		poolID := submittedPool(t, a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: spec}).Data)
		a.MustDeliver("p1", &markettypes.MsgJoinPool{Provider: a.Account("p1").String(), PoolId: poolID, NodeId: nodes["p1"]})
		a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: poolID, Units: unitInputs(1)})
		acc := a.Account("p1")
		root := sha256.Sum256([]byte("the unit's result"))
		salt := []byte("pool-worker-salt-0123")
		commit := a.Deliver("p1", &markettypes.MsgCommitUnit{Provider: acc.String(), PoolId: poolID, UnitId: 1, NodeId: nodes["p1"],
			Commitment: markettypes.Commitment(root[:], salt, acc.Address)})
		require.Zero(t, commit.Code, commit.Log)
		reveal := a.Deliver("p1", &markettypes.MsgRevealUnit{Provider: acc.String(), PoolId: poolID, UnitId: 1,
			ResultRoot: root[:], Salt: salt, OutputUri: "https://p1.example.com/out/1"})
		require.Zero(t, reveal.Code, reveal.Log)
		pool := getPool(t, a, poolID)
		require.EqualValues(t, 1, pool.PaidUnits, "the unit paid")
		require.Equal(t, spec, pool.Spec, "the pool's spec, as the Pool query gives it")
		gas[name] = [2]int64{commit.GasUsed, reveal.GasUsed}
	}
	t.Logf("gas of a commit and a reveal: small spec %v, huge spec %v", gas["small"], gas["huge"])
	for i, step := range []string{"commit", "reveal"} {
		require.InDelta(t, gas["small"][i], gas["huge"][i], 5_000, "a unit's %s costs its member the same whatever the spec", step)
	}
	a.AssertInvariants()
}
