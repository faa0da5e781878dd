package agent_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// A provider whose ask is above its class's cap in the last reward distribution earns no
// availability reward (x/dps, "Priced out"): its worker says so when it starts, naming
// the ask and the cap, and says nothing when the ask is within the cap.
func TestWorkerWarnsOfAnAskAboveItsClassCap(t *testing.T) {
	const ask = 1_000_000
	for _, c := range []struct {
		cap   int64
		warns bool
	}{{ask - 1, true}, {ask, false}} {
		a := apptest.New(t, apptest.WithAccounts("client", "p1"), apptest.WithGenesis(apptest.SmallPoCP(60*time.Second)),
			apptest.WithGenesis(func(e apptest.GenesisEditor) {
				var g gfltypes.GenesisState
				e.Edit(gfltypes.ModuleName, &g, func() {})
				var d dpstypes.GenesisState
				e.Edit(dpstypes.ModuleName, &d, func() {
					last := dpstypes.Distribution{
						Epoch: 1, Replenished: sdkmath.ZeroInt(), GflCredit: sdkmath.ZeroInt(), Uncapped: sdkmath.ZeroInt(),
						Emission: sdkmath.ZeroInt(), Availability: sdkmath.ZeroInt(), Work: sdkmath.ZeroInt(),
						PaidAvailability: sdkmath.ZeroInt(), PaidWork: sdkmath.ZeroInt(), Remainder: sdkmath.ZeroInt(),
						Phase: dpstypes.DISTRIBUTION_PHASE_DONE,
					}
					for _, class := range g.Params.GpuClasses { // every class, sorted
						last.AskCaps = append(last.AskCaps, dpstypes.AskCap{GpuClass: class.Name, ReferenceAsk: sdkmath.NewInt(c.cap / 2), Cap: sdkmath.NewInt(c.cap)})
					}
					slices.SortFunc(last.AskCaps, func(x, y dpstypes.AskCap) int { return strings.Compare(x.GpuClass, y.GpuClass) })
					d.Distributions = append(d.Distributions, last)
				})
			}))
		var logs strings.Builder
		var mu sync.Mutex
		newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{log: &logs}, func(cfg *config.Config) {
			cfg.Node.AskPerGPUHour = "1000000"
		})
		warned := strings.Contains(logs.String(), "the node asks more per GPU-hour than its class's cap")
		require.Equal(t, c.warns, warned, "cap %d: %s", c.cap, logs.String())
		if warned {
			require.Contains(t, logs.String(), "ask=1000000")
			require.Contains(t, logs.String(), "cap=999999")
		}
	}
}
