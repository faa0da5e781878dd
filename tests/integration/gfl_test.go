package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

const epoch = 60 * time.Second // 60 blocks of 1 s

// smallPoCP: n = 256 challenges every 10 blocks, epochs of 60 blocks.
var smallPoCP = apptest.SmallPoCP(epoch)

func a100(tag string, gpus int) gfltypes.NodeSpec {
	s := gfltypes.NodeSpec{
		Region: "eu-west", Endpoint: "https://" + tag + ".example.com",
		Workloads:     []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_TRAINING, gfltypes.WORKLOAD_CLASS_INFERENCE, gfltypes.WORKLOAD_CLASS_BATCH},
		Runtimes:      []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN, gfltypes.RUNTIME_PROCESS, gfltypes.RUNTIME_CONTAINER},
		AskPerGpuHour: sdk.NewInt64Coin("udps", 1_000_000), ClaimedGflops: 24,
	}
	for i := range gpus {
		s.Gpus = append(s.Gpus, gfltypes.GpuInfo{
			Model: "NVIDIA A100-SXM4-40GB", Uuid: "GPU-" + tag + "-" + string(rune('0'+i)), MemoryMib: 40960, ComputeCapability: "8.0",
		})
	}
	return s
}

// bondAndRegister bonds collateral for gpus GPUs and registers one node.
func bondAndRegister(t testing.TB, a *apptest.App, account string, gpus int) uint64 {
	t.Helper()
	op := a.Account(account).String()
	amount := sdk.NewInt64Coin("udps", int64(gpus)*100_000_000)
	res := a.MustDeliver(account,
		&sstypes.MsgBond{Provider: op, Amount: amount},
		&gfltypes.MsgRegisterNode{Operator: op, Spec: a100(account, gpus)},
	)
	_ = res
	return nodeOf(t, a, account)
}

// nodeOf is the id of account's first node.
func nodeOf(t testing.TB, a *apptest.App, account string) uint64 {
	t.Helper()
	nodes, err := a.GFLKeeper.Nodes.Indexes.ByOperator.MatchExact(a.Ctx(), a.Account(account).Address)
	require.NoError(t, err)
	defer func() { _ = nodes.Close() }()
	pk, err := nodes.PrimaryKey()
	require.NoError(t, err)
	return pk
}

// runUntilRebalanced steps blocks until the given epoch has been rebalanced and returns
// each node's statistics for that epoch as they stood just before the rebalance.
func runUntilRebalanced(t *testing.T, a *apptest.App, epoch uint64, nodes []uint64, provers ...*prover) map[uint64]gfltypes.NodeEpochStats {
	t.Helper()
	seen := map[uint64]gfltypes.NodeEpochStats{}
	for i := 0; i < 200; i++ {
		for _, id := range nodes {
			if st, err := a.GFLKeeper.Stats.Get(a.Ctx(), collections.Join(id, epoch)); err == nil {
				seen[id] = st
			}
		}
		step(t, a, provers...)
		st, err := a.GFLKeeper.Rebalance.Get(a.Ctx())
		require.NoError(t, err)
		if st.StatsEpoch > epoch && (len(st.Pending) == 0 || st.Pending[0] > epoch) {
			return seen
		}
	}
	t.Fatalf("epoch %d not rebalanced", epoch)
	return nil
}

// Nodes answer challenges at different speeds for several epochs: after each rebalance
// every operator's ugfl equals its node's median power times availability, the supply
// equals the sum, and a node that stops answering loses its GFL after a silent epoch.
// Registration without collateral is refused.
func TestMultiEpochIndex(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("fast", "slow", "quitter", "nobond"), apptest.WithGenesis(smallPoCP))

	// no collateral, no node
	res := a.Deliver("nobond", &gfltypes.MsgRegisterNode{Operator: a.Account("nobond").String(), Spec: a100("nobond", 1)})
	require.Equal(t, gfltypes.ErrInsufficientCollateral.ABCICode(), res.Code, res.Log)

	nFast := bondAndRegister(t, a, "fast", 1)
	nSlow := bondAndRegister(t, a, "slow", 1)
	nQuit := bondAndRegister(t, a, "quitter", 2)
	fast, slow, quitter := newProver(t, "fast", 2), newProver(t, "slow", 4), newProver(t, "quitter", 3)

	nodes := []uint64{nFast, nSlow, nQuit}
	power := func(id uint64) uint64 {
		node, err := a.GFLKeeper.GetNode(a.Ctx(), id)
		require.NoError(t, err)
		return node.PowerGflops
	}
	ugfl := func(acc string) uint64 { return a.Balance(a.Account(acc).Address, "ugfl").Uint64() }
	// index checks every node against the statistics it accumulated in the epoch
	index := func(stats map[uint64]gfltypes.NodeEpochStats, id uint64) uint64 {
		st := stats[id]
		return gfltypes.IndexPower(gfltypes.Median(st.Samples), gfltypes.AvailabilityPPM(st.Passed, st.Issued))
	}

	stats := runUntilRebalanced(t, a, 0, nodes, fast, slow, quitter)
	a.AssertInvariants()
	for _, id := range nodes {
		require.Equal(t, stats[id].Issued, stats[id].Passed, "every answer of epoch 0 verified")
		require.Equal(t, index(stats, id), power(id))
	}
	// faster answers mean more GFLOP/s: 2, 3 and 4 blocks of 1 s for the same work
	require.Greater(t, power(nFast), power(nQuit))
	require.Greater(t, power(nQuit), power(nSlow))
	require.Greater(t, power(nSlow), uint64(0))
	require.Equal(t, power(nFast), ugfl("fast"))
	require.Equal(t, power(nSlow), ugfl("slow"))
	require.Equal(t, power(nQuit), ugfl("quitter"))
	require.Equal(t, power(nFast)+power(nSlow)+power(nQuit), a.BankKeeper.GetSupply(a.Ctx(), "ugfl").Amount.Uint64())

	// the quitter stops answering: epoch 1 still holds results concluded at the boundary,
	// epoch 2 is silent and takes its GFL to zero (burned)
	quitter.stopped = true
	stats = runUntilRebalanced(t, a, 1, nodes, fast, slow, quitter)
	require.Equal(t, index(stats, nQuit), power(nQuit))
	require.Less(t, stats[nQuit].Passed, stats[nQuit].Issued, "the quitter missed challenges")
	stats = runUntilRebalanced(t, a, 2, nodes, fast, slow, quitter)
	a.AssertInvariants()
	require.Zero(t, stats[nQuit].Passed)
	require.Positive(t, stats[nQuit].Missed)
	require.Zero(t, power(nQuit))
	require.Zero(t, ugfl("quitter"))
	for _, id := range []uint64{nFast, nSlow} {
		require.Equal(t, index(stats, id), power(id))
	}
	require.Equal(t, power(nFast), ugfl("fast"))
	require.Equal(t, power(nSlow), ugfl("slow"))
	require.Equal(t, power(nFast)+power(nSlow), a.BankKeeper.GetSupply(a.Ctx(), "ugfl").Amount.Uint64())

	// missing is not cheating: no slash
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("quitter").Address)
	require.NoError(t, err)
	require.True(t, c.SlashedTotal.IsZero())
}
