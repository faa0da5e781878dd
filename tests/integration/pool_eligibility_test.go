package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
)

// TestAttackIneligibleMemberClaimsPoolUnits: a pool's members were checked when they
// joined and never again, so a member node that stopped being one the market gives work
// to went on taking the pool's units: deactivated (its GFL burned, its collateral lock
// released, no PoCP challenge since, so nothing says its machine is still there or still
// the class the pool asked for), or scored below the reputation minimum (a caught
// cheater, which x/reputation's README promises no work). In a NONE pool each unit was
// also drawn for such a member, so it held the unit's reservation and nobody else could
// claim it. A unit is now claimed, and drawn, only by a member that is eligible when it
// claims: active, meeting the pool's requirements, at or above the minimum score.
func TestAttackIneligibleMemberClaimsPoolUnits(t *testing.T) {
	a, nodes := marketAppN(t, 3, func(p *markettypes.Params) { p.PoolRevealTimeoutBlocks = 1000 })
	owner := a.Account("client").String()
	gemm := submittedPool(t, a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: gemmPoolSpec(10_000, 40*10_000)}).Data)
	none := gemmPoolSpec(10_000, 40*10_000)
	none.Verification = markettypes.VERIFICATION_CLASS_NONE
	drawn := submittedPool(t, a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: none}).Data)
	for _, n := range []string{"p1", "p2", "p3"} {
		for _, pool := range []uint64{gemm, drawn} {
			a.MustDeliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: pool, NodeId: nodes[n]})
		}
	}
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: gemm, Units: unitInputs(4)})
	pp := newPoolPlayer(t, a, nodes, gemm)

	// p1 takes its node off the market: nothing in flight, so the chain lets it
	a.MustDeliver("p1", &gfltypes.MsgDeactivateNode{Operator: a.Account("p1").String(), NodeId: nodes["p1"]})
	r := a.Deliver("p1", pp.commit("p1", 1, pp.solve(1).root()))
	require.Equal(t, markettypes.ErrNodeNotEligible.ABCICode(), r.Code, "a deactivated member claimed a unit: %s", r.Log)
	require.Contains(t, r.Log, "is not active")
	require.Equal(t, markettypes.UNIT_STATUS_OPEN, getUnit(t, a, gemm, 1).Status)

	// a NONE pool's units are drawn among the members that may claim them
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: drawn, Units: unitInputs(30)})
	designated := map[uint64]int{}
	for u := uint64(1); u <= 30; u++ {
		designated[getUnit(t, a, drawn, u).DesignatedNode]++
	}
	require.Zero(t, designated[nodes["p1"]], "units drawn for the deactivated member: %v", designated)
	require.Equal(t, 30, designated[nodes["p2"]]+designated[nodes["p3"]])

	// the minimum score rises above p2's and p3's (0.5, a new operator's): a member below it
	// claims nothing, as the scheduler and the auctions give it nothing
	a.Prepare(func(ctx sdk.Context) {
		p, err := a.ReputationKeeper.Params.Get(ctx)
		require.NoError(t, err)
		p.MinScore = sdkmath.LegacyNewDecWithPrec(6, 1)
		require.NoError(t, a.ReputationKeeper.Params.Set(ctx, p))
	})
	a.NextBlock()
	rp, err := a.ReputationKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	require.Equal(t, reputationtypes.DefaultParams().InitialScore, sdkmath.LegacyNewDecWithPrec(5, 1), "p2 starts at 0.5")
	require.True(t, rp.MinScore.GT(rp.InitialScore))
	r = a.Deliver("p2", pp.commit("p2", 2, pp.solve(2).root()))
	require.Equal(t, markettypes.ErrNodeNotEligible.ABCICode(), r.Code, "a member below the minimum score claimed a unit: %s", r.Log)
	require.Contains(t, r.Log, "reputation is below the minimum")
	require.Equal(t, markettypes.UNIT_STATUS_OPEN, getUnit(t, a, gemm, 2).Status)

	// back at the default minimum, p2 claims as before
	a.Prepare(func(ctx sdk.Context) {
		require.NoError(t, a.ReputationKeeper.Params.Set(ctx, reputationtypes.DefaultParams()))
	})
	a.NextBlock()
	a.MustDeliver("p2", pp.commit("p2", 2, pp.solve(2).root()))
	require.Equal(t, nodes["p2"], getUnit(t, a, gemm, 2).NodeId)
	a.AssertInvariants()
}

// TestAttackIneligibleMembersHoldAFullPool: a pool's places were held by whoever joined,
// so nodes that joined and were then deactivated (their collateral lock released: free to
// keep) held them for ever, and a pool whose places they all held took no claim from
// anyone (only members claim). A node that joins a full pool now takes the place of a
// member that may no longer claim; a pool of eligible members stays full.
func TestAttackIneligibleMembersHoldAFullPool(t *testing.T) {
	a, nodes := marketAppN(t, 3, nil)
	owner := a.Account("client").String()
	spec := gemmPoolSpec(10_000, 40*10_000)
	spec.MaxProviders = 2
	pool := submittedPool(t, a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: spec}).Data)
	join := func(n string) *abci.ExecTxResult {
		return a.Deliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: pool, NodeId: nodes[n]})
	}
	require.Zero(t, join("p1").Code)
	require.Zero(t, join("p2").Code)
	r := join("p3")
	require.Equal(t, markettypes.ErrInvalidPool.ABCICode(), r.Code, r.Log)
	require.Contains(t, r.Log, "is full")

	// the squatter takes its node off the market, keeping its place
	a.MustDeliver("p1", &gfltypes.MsgDeactivateNode{Operator: a.Account("p1").String(), NodeId: nodes["p1"]})
	r = join("p3")
	require.Zero(t, r.Code, "p3 takes the deactivated member's place: %s", r.Log)
	members := map[uint64]bool{}
	res, err := markettypes.NewQueryClient(a.QueryConn()).PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: pool})
	require.NoError(t, err)
	for _, m := range res.Members {
		members[m.NodeId] = true
	}
	require.Equal(t, map[uint64]bool{nodes["p2"]: true, nodes["p3"]: true}, members)
	require.EqualValues(t, 2, getPool(t, a, pool).Members)
	evicted := false
	for _, e := range r.Events {
		if e.Type == "flops.market.v1.EventPool" {
			for _, at := range e.Attributes {
				evicted = evicted || (at.Key == "action" && at.Value == `"evicted"`)
			}
		}
	}
	require.True(t, evicted, "the eviction is an event: %v", r.Events)

	// back on the market, p1 finds the pool full of eligible members
	a.MustDeliver("p1", &gfltypes.MsgReactivateNode{Operator: a.Account("p1").String(), NodeId: nodes["p1"]})
	r = join("p1")
	require.Equal(t, markettypes.ErrInvalidPool.ABCICode(), r.Code, r.Log)
	require.Contains(t, r.Log, "each eligible")
	a.AssertInvariants()
}
