package app

import (
	"math/big"

	"cosmossdk.io/collections"

	abci "github.com/cometbft/cometbft/abci/types"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/flopsnet/flops/internal/nodemetrics"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Metrics is the node's Prometheus collector (internal/nodemetrics): flopsd registers it;
// it only reads.
func (app *App) Metrics() *nodemetrics.Metrics { return app.metrics }

// FinalizeBlock finalizes a block, then counts what it did for the node's metrics (from
// its events, after the state machine is done with them).
func (app *App) FinalizeBlock(req *abci.RequestFinalizeBlock) (*abci.ResponseFinalizeBlock, error) {
	res, err := app.BaseApp.FinalizeBlock(req)
	if err == nil {
		app.metrics.ObserveBlock(res)
	}
	return res, err
}

// metricsSnapshot reads the metrics' gauges from the latest committed state, through a
// query context as a gRPC query does: jobs from the market's counts (JobCounts, one
// record), nodes counted on their status index, schedulable nodes by GPU class from the
// scheduler's counters, the escrow and the reward pool from the
// module accounts, collateral from x/staking-slash's running totals, the GFL index from
// the ugfl supply.
//
// The read is the node's own, asked by its operator's scraper, not a stranger's query: it
// is not held to query-gas-limit. A query context's gas meter stops at that limit with a
// panic, which in a scrape (Collect runs on the Prometheus handler's goroutines) would
// have ended the node once its jobs outnumbered what one query may read (about 700,000
// at chain.DefaultQueryGasLimit, when they were counted on their index;
// TestMetricsScrapeIsNotHeldToTheQueryGasLimit).
func (app *App) metricsSnapshot() (nodemetrics.Snapshot, error) {
	ctx, err := app.CreateQueryContext(0, false)
	if err != nil {
		return nodemetrics.Snapshot{}, err
	}
	ctx = ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
	s := nodemetrics.Snapshot{Height: ctx.BlockHeight(), Jobs: map[string]uint64{}, Nodes: map[string]uint64{}, Schedulable: map[string][2]uint64{}}
	jobs, err := marketkeeper.NewQueryServerImpl(app.MarketKeeper).JobCounts(ctx, &markettypes.QueryJobCountsRequest{})
	if err != nil {
		return s, err
	}
	for st, n := range map[markettypes.JobStatus]uint64{
		markettypes.JOB_STATUS_BIDDING: jobs.Counts.Bidding, markettypes.JOB_STATUS_ACTIVE: jobs.Counts.Active,
		markettypes.JOB_STATUS_COMPLETED: jobs.Counts.Completed, markettypes.JOB_STATUS_FAILED: jobs.Counts.Failed,
		markettypes.JOB_STATUS_CANCELLED: jobs.Counts.Cancelled,
	} {
		s.Jobs[st.String()] = n
	}
	for st := int32(1); gfltypes.NodeStatus_name[st] != ""; st++ {
		it, err := app.GFLKeeper.Nodes.Indexes.ByStatus.MatchExact(ctx, st)
		if err != nil {
			return s, err
		}
		s.Nodes[gfltypes.NodeStatus_name[st]] = count(it)
	}
	// the scheduler's counters, a key a GPU class
	if err := app.MarketKeeper.ClassNodes.Walk(ctx, nil, func(class string, c collections.Pair[uint64, uint64]) (bool, error) {
		s.Schedulable[class] = [2]uint64{c.K1(), c.K2()}
		return false, nil
	}); err != nil {
		return s, err
	}
	balance := func(module string) *big.Int {
		return app.BankKeeper.GetBalance(ctx, authtypes.NewModuleAddress(module), BondDenom).Amount.BigInt()
	}
	s.EscrowUdps = balance(markettypes.ModuleName)
	s.RewardPoolUdps = balance(dpstypes.ModuleName)
	bonded, err := app.StakingSlashKeeper.TotalBonded.Get(ctx)
	if err != nil {
		return s, err
	}
	unbonding, err := app.StakingSlashKeeper.TotalUnbonding.Get(ctx)
	if err != nil {
		return s, err
	}
	s.BondedUdps, s.UnbondingUdps = bonded.BigInt(), unbonding.BigInt()
	s.NetworkGflops = app.BankKeeper.GetSupply(ctx, GFLDenom).Amount.BigInt()
	return s, nil
}

// count walks an index iterator to its end and closes it.
func count(it interface {
	Valid() bool
	Next()
	Close() error
}) uint64 {
	defer func() { _ = it.Close() }()
	var n uint64
	for ; it.Valid(); it.Next() {
		n++
	}
	return n
}
