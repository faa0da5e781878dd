package integration

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/client/flags"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Export the state of a market in full swing (jobs in every stage, a pool with claimed
// and open units, funding links, verified work, an epoch distributed and scored), import
// it into a fresh app, and export again: every module's genesis is the same, and every
// registered invariant (escrow, slots, due work, collateral, supply, rewards) holds on the
// imported state.
func TestExportImportRoundTrip(t *testing.T) {
	const r0 = 20_000
	a := incentiveApp(t, 20, r0, "client", "big", "mid", "flaky")
	registerNode(t, a, "big", h200Spec("big1", "eu-west", 1, 8), 0)
	registerNode(t, a, "big", h200Spec("big2", "eu-west", 1, 8), 0)
	registerNode(t, a, "mid", h200Spec("mid", "us-east", 1, 8), 0)
	registerNode(t, a, "flaky", h200Spec("flaky", "ap-south", 1, 4), 0)
	d := newDriver(t, a, "big", "mid", "flaky")
	d.behaviours["flaky"] = behaviour{silent: true}
	m := newMarket(t, a, d, newProver(t, "big", 1), newProver(t, "mid", 1), newProver(t, "flaky", 1))
	// a funding link, and an epoch of work distributed
	m.deliver("big", banktypes.NewMsgSend(a.Account("big").Address, a.Account("client").Address, sdk.NewCoins(sdk.NewInt64Coin(udps, 1))))
	first := workEpoch(t, a)
	m.submit("client", regionJob(a, 2, "eu-west"))
	m.submit("client", regionJob(a, 1, "us-east"))
	m.until(200, "first epoch distributed", func() bool { return distributed(a, first)() })
	// then work in every stage: new jobs, an auction in its window, tasks assigned,
	// running, committed and verified
	m.submit("client", regionJob(a, 2, "eu-west"))
	m.submit("client", regionJob(a, 1, "ap-south"))
	auction := gemmJob(a, 1, markettypes.ALLOCATION_MODE_AUCTION)
	m.submit("client", auction)
	for range 3 {
		m.step()
	}
	before, err := a.ExportAppStateAndValidators(false, nil, nil)
	require.NoError(t, err)
	statuses := map[markettypes.TaskStatus]int{}
	gsMarket := moduleGenesis(t, before.AppState, markettypes.ModuleName)
	var mg markettypes.GenesisState
	require.NoError(t, a.AppCodec().UnmarshalJSON(gsMarket, &mg))
	for _, tk := range mg.Tasks {
		statuses[tk.Status]++
	}
	require.GreaterOrEqual(t, len(statuses), 3, "a market mid-flight: %v", statuses)

	// a fresh app, its state imported from the export
	b := app.New(log.NewNopLogger(), dbm.NewMemDB(), true, simtestutil.AppOptionsMap{flags.FlagHome: t.TempDir()})
	var genesis map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(before.AppState, &genesis))
	ctxB := b.NewContextLegacy(true, cmtproto.Header{Height: a.Height(), Time: a.BlockTime(), ChainID: "flops-test-1"})
	_, err = b.ModuleManager.InitGenesis(ctxB, b.AppCodec(), genesis)
	require.NoError(t, err)
	require.NoError(t, b.Invariants.AssertAll(ctxB), "invariants after import")
	again, err := b.ModuleManager.ExportGenesisForModules(ctxB, b.AppCodec(), nil)
	require.NoError(t, err)
	var first0 map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(before.AppState, &first0))
	for name, want := range first0 {
		require.JSONEq(t, string(want), string(again[name]), "module %s: export -> import -> export", name)
	}
}

func moduleGenesis(t *testing.T, appState []byte, module string) json.RawMessage {
	t.Helper()
	var gs map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(appState, &gs))
	return gs[module]
}
