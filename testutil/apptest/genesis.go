package apptest

import (
	"time"

	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// SmallPoCP makes PoCP challenges n = 256 (about 24 GFLOP) every 10 blocks, small enough
// to solve dozens in a test and large enough to measure in whole GFLOP/s, and the reward
// epoch ("flops") epoch long.
func SmallPoCP(epoch time.Duration) func(e GenesisEditor) {
	return func(e GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() {
			g.Params.ChallengeTargetSeconds = 1
			g.Params.ChallengeMaxN = 256
			g.Params.ChallengeMaxRn = 1 << 21
			g.Params.ChallengeSamples = 16
			g.Params.ChallengeIntervalBlocks = 10
			g.Params.ChallengeRevealBlocks = 5
			g.Params.ChallengeCommitTimeout = 30 * time.Second
		})
		var ep epochstypes.GenesisState
		e.Edit(epochstypes.ModuleName, &ep, func() {
			for i := range ep.Epochs {
				if ep.Epochs[i].Identifier == "flops" {
					ep.Epochs[i].Duration = epoch
				}
			}
		})
	}
}
