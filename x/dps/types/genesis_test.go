package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/dps/types"
)

// finished is a consistent finished distribution of an epoch: E = 100 = 40 + 60, paid
// 30 + 50, remainder 20.
func finished(epoch uint64) types.Distribution {
	return types.Distribution{
		Epoch: epoch, Replenished: i(0), GflCredit: i(0), Uncapped: i(150), Emission: i(100),
		Availability: i(40), Work: i(60), PaidAvailability: i(30), PaidWork: i(50), Remainder: i(20),
		Phase: types.DISTRIBUTION_PHASE_DONE, StartTime: t0,
	}
}

func running(epoch uint64) *types.Distribution {
	d := finished(epoch)
	d.Phase = types.DISTRIBUTION_PHASE_WORK_PAY
	d.PaidAvailability, d.PaidWork, d.Remainder = i(10), i(0), i(0)
	d.Progress = &types.DistributionProgress{TotalWeight: i(7), WorkRewardCapPpm: 40_000,
		WorkCursor: &types.WorkPosition{Provider: keepertest.Addr("p"), Workload: 1}}
	return &d
}

// validGenesis has something in every field; its rewards add up to what was paid.
func validGenesis() types.GenesisState {
	a, b := keepertest.Addr("a"), keepertest.Addr("b")
	return types.GenesisState{
		Params:        types.DefaultParams(),
		Era:           &types.EraState{Era: 2, LastHalvingTime: t0, CumulativeGfl: i(5), PoolBaseline: i(1_000)},
		PendingEpochs: []uint64{4, 5},
		InProgress:    running(3),
		Distributions: []types.Distribution{finished(1), finished(2)},
		Rewards: []types.ProviderReward{
			{Provider: a, Epoch: 1, Availability: i(30), Work: i(10)},
			{Provider: b, Epoch: 1, Availability: i(0), Work: i(40)},
			{Provider: a, Epoch: 2, Availability: i(30), Work: i(50)},
			{Provider: a, Epoch: 3, Availability: i(10), Work: i(0)},
		},
		CurrentEpoch: 6,
		Work: []types.WorkEntry{
			{Epoch: 3, Provider: a, Workload: 1, Record: types.WorkRecord{GflopSeconds: i(7), Fees: i(3), Tasks: 1}},
			{Epoch: 6, Provider: a, Workload: 1, Record: types.WorkRecord{GflopSeconds: i(9), Fees: i(4), Tasks: 2}},
			{Epoch: 6, Provider: b, Workload: 2, Record: types.WorkRecord{GflopSeconds: i(0), Fees: i(1), Tasks: 1}},
		},
		FundingLinks: []types.FundingLink{{Recipient: a, Funder: b}, {Recipient: b, Funder: a}},
	}
}

func TestGenesisValidate(t *testing.T) {
	require.NoError(t, types.DefaultGenesisState().Validate())
	require.NoError(t, func() error { gs := validGenesis(); return gs.Validate() }())

	for _, tc := range []struct {
		name   string
		mutate func(gs *types.GenesisState)
		msg    string
	}{
		{"bad params", func(gs *types.GenesisState) { gs.Params.MaxPayoutsPerBlock = 0 }, "max_payouts_per_block"},
		{"negative cumulative GFL", func(gs *types.GenesisState) { gs.Era.CumulativeGfl = i(-1) }, "cumulative_gfl"},
		{"unset pool baseline", func(gs *types.GenesisState) { gs.Era.PoolBaseline = sdkmath.Int{} }, "pool_baseline"},
		{"pending not ascending", func(gs *types.GenesisState) { gs.PendingEpochs = []uint64{5, 4} }, "ascending"},
		{"epoch 0", func(gs *types.GenesisState) { gs.PendingEpochs = []uint64{0, 4} }, "epoch 0"},
		{"pending and finished", func(gs *types.GenesisState) { gs.PendingEpochs = []uint64{2} }, "epoch 2 already"},
		{"in progress and finished", func(gs *types.GenesisState) { gs.InProgress = running(2) }, "epoch 2 already"},
		{"finished twice", func(gs *types.GenesisState) { gs.Distributions[1].Epoch = 1 }, "epoch 1 already"},
		{"in progress without progress", func(gs *types.GenesisState) { gs.InProgress.Progress = nil }, "needs its progress"},
		{"in progress marked done", func(gs *types.GenesisState) { gs.InProgress.Phase = types.DISTRIBUTION_PHASE_DONE }, "cannot be in phase"},
		{"in progress with a remainder", func(gs *types.GenesisState) { gs.InProgress.Remainder = i(1) }, "remainder 1 before the end"},
		{"bad work cursor", func(gs *types.GenesisState) { gs.InProgress.Progress.WorkCursor.Provider = "nope" }, "work_cursor"},
		{"ask cap below 1x", func(gs *types.GenesisState) { gs.InProgress.Progress.AvailabilityAskCapPpm = 999_999 }, "progress.availability_ask_cap_ppm 999999"},
		{"asks pass without a cap", func(gs *types.GenesisState) { gs.InProgress.Phase = types.DISTRIBUTION_PHASE_ASKS }, "asks pass of a distribution without an ask cap"},
		{"classes out of order", func(gs *types.GenesisState) {
			gs.InProgress.Progress.ClassAsks = []types.ClassAsks{{GpuClass: "h100"}, {GpuClass: "a100"}}
		}, "progress.class_asks[1] \"a100\""},
		{"buckets out of order", func(gs *types.GenesisState) {
			gs.InProgress.Progress.ClassAsks = []types.ClassAsks{{GpuClass: "a100", Buckets: []types.AskBucket{{Bucket: 9}, {Bucket: 9}}}}
		}, "buckets must be sorted"},
		{"reference unset", func(gs *types.GenesisState) {
			gs.Distributions[0].AskCaps = []types.AskCap{{GpuClass: "a100", Cap: i(2)}}
		}, "ask_caps[0].reference_ask"},
		{"ask caps out of order", func(gs *types.GenesisState) {
			gs.Distributions[0].AskCaps = []types.AskCap{{GpuClass: "b", ReferenceAsk: i(1), Cap: i(2)}, {GpuClass: "a", ReferenceAsk: i(1), Cap: i(2)}}
		}, "ask_caps[1] \"a\""},
		{"finished with progress", func(gs *types.GenesisState) { gs.Distributions[0].Progress = &types.DistributionProgress{} }, "without progress"},
		{"paid + remainder != E", func(gs *types.GenesisState) { gs.Distributions[0].Remainder = i(21) }, "!= emission"},
		{"split != E", func(gs *types.GenesisState) { gs.Distributions[0].Work = i(61) }, "availability 40 + work 61"},
		{"E above uncapped", func(gs *types.GenesisState) { gs.Distributions[0].Uncapped = i(99) }, "above uncapped"},
		{"paid more than planned", func(gs *types.GenesisState) {
			gs.Distributions[0].PaidAvailability, gs.Distributions[0].PaidWork = i(41), i(39)
		}, "more than planned"},
		{"negative amount", func(gs *types.GenesisState) { gs.Distributions[0].Replenished = i(-1) }, "replenished"},
		{"reward of an unknown epoch", func(gs *types.GenesisState) { gs.Rewards[0].Epoch = 9 }, "no started distribution"},
		{"reward of a pending epoch", func(gs *types.GenesisState) { gs.Rewards[0].Epoch = 4 }, "no started distribution"},
		{"duplicate reward", func(gs *types.GenesisState) { gs.Rewards[1].Provider = gs.Rewards[0].Provider }, "duplicate"},
		{"bad provider", func(gs *types.GenesisState) { gs.Rewards[0].Provider = "flops1xyz" }, "provider"},
		{"negative reward", func(gs *types.GenesisState) { gs.Rewards[3].Work = i(-1) }, "work"},
		{"history does not add up", func(gs *types.GenesisState) { gs.Rewards[2].Work = i(49) }, "rewards history says"},
		{"work after the current epoch", func(gs *types.GenesisState) { gs.Work[1].Epoch = 7 }, "after the current epoch 6"},
		{"work of a finished distribution", func(gs *types.GenesisState) { gs.Work[0].Epoch = 2 }, "finished and pruned"},
		{"duplicate work", func(gs *types.GenesisState) { gs.Work[2].Provider, gs.Work[2].Workload = gs.Work[1].Provider, 1 }, "duplicate"},
		{"work of a bad provider", func(gs *types.GenesisState) { gs.Work[0].Provider = "nope" }, "work[0].provider"},
		{"negative work", func(gs *types.GenesisState) { gs.Work[0].Record.GflopSeconds = i(-1) }, "gflop_seconds"},
		{"unset fees", func(gs *types.GenesisState) { gs.Work[0].Record.Fees = sdkmath.Int{} }, "fees"},
		{"self funding", func(gs *types.GenesisState) { gs.FundingLinks[0].Funder = gs.FundingLinks[0].Recipient }, "cannot fund itself"},
		{"duplicate link", func(gs *types.GenesisState) { gs.FundingLinks[1] = gs.FundingLinks[0] }, "duplicate"},
		{"bad funder", func(gs *types.GenesisState) { gs.FundingLinks[0].Funder = "nope" }, "funder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := validGenesis()
			tc.mutate(&gs)
			err := gs.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.msg)
			if tc.name != "bad params" {
				require.ErrorIs(t, err, types.ErrInvalidGenesis)
			} else {
				require.ErrorIs(t, err, types.ErrInvalidParams)
			}
		})
	}
}
