package types_test

import (
	"testing"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/reputation/types"
)

var bad = keepertest.Bad[types.Params]

var dec = sdkmath.LegacyMustNewDecFromStr

// Every out-of-range x/reputation parameter is rejected with ErrInvalidParams naming the
// field.
func TestParamsValidateRejects(t *testing.T) {
	validate := func(p types.Params) error { return p.Validate() }
	keepertest.RunBadParams(t, types.DefaultParams, validate, types.ErrInvalidParams, []keepertest.BadParamCase[types.Params]{
		bad("alpha", func(p *types.Params) { p.Alpha = dec("-0.1") }),
		bad("alpha", func(p *types.Params) { p.Alpha = sdkmath.LegacyDec{} }),
		bad("beta", func(p *types.Params) { p.Beta = dec("1.1") }),
		bad("gamma", func(p *types.Params) { p.Gamma = dec("-0.2") }),
		bad("alpha + beta + gamma = 0.9", func(p *types.Params) { p.Gamma = dec("0.1") }),
		bad("alpha + beta + gamma = 1.1", func(p *types.Params) { p.Alpha = dec("0.7") }),
		bad("initial_score", func(p *types.Params) { p.InitialScore = dec("1.5") }),
		bad("min_score", func(p *types.Params) { p.MinScore = dec("-1") }),
		bad("idle_decay", func(p *types.Params) { p.IdleDecay = dec("2") }),
		bad("initial_score 0.300000000000000000: must be at least min_score", func(p *types.Params) { p.InitialScore = dec("0.3") }),
		bad("epoch_identifier", func(p *types.Params) { p.EpochIdentifier = "bad id" }),
		bad("max_updates_per_block", func(p *types.Params) { p.MaxUpdatesPerBlock = 0 }),
		bad("history_length", func(p *types.Params) { p.HistoryLength = 0 }),
		bad("history_length", func(p *types.Params) { p.HistoryLength = 1001 }),
	})
}

// The launch parameters are the ones the module README argues for.
func TestDefaultParams(t *testing.T) {
	p := types.DefaultParams()
	for name, c := range map[string]struct{ got, want sdkmath.LegacyDec }{
		"alpha":         {p.Alpha, dec("0.6")},
		"beta":          {p.Beta, dec("0.2")},
		"gamma":         {p.Gamma, dec("0.2")},
		"initial_score": {p.InitialScore, dec("0.5")},
		"min_score":     {p.MinScore, dec("0.4")},
		"idle_decay":    {p.IdleDecay, dec("0.1")},
	} {
		if !c.got.Equal(c.want) {
			t.Errorf("%s = %s, want %s", name, c.got, c.want)
		}
	}
	if p.HistoryLength != 30 || p.MaxUpdatesPerBlock != 100 {
		t.Errorf("history_length %d, max_updates_per_block %d", p.HistoryLength, p.MaxUpdatesPerBlock)
	}
}
