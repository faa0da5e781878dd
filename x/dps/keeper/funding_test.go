package keeper_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

func acc(name string) sdk.AccAddress { return sdk.MustAccAddressFromBech32(keepertest.Addr(name)) }

// fundingLinks lists FundedBy as "recipient<-funder" by account name, sorted.
func fundingLinks(t *testing.T, f *fixture, names ...string) []string {
	t.Helper()
	byAddr := map[string]string{}
	for _, n := range names {
		byAddr[acc(n).String()] = n
	}
	var out []string
	require.NoError(t, f.k.FundedBy.Walk(f.ctx, nil, func(key collections.Pair[sdk.AccAddress, sdk.AccAddress]) (bool, error) {
		out = append(out, byAddr[key.K1().String()]+"<-"+byAddr[key.K2().String()])
		return false, nil
	}))
	sort.Strings(out)
	return out
}

// RecordTxFunding links the recipient of every udps bank transfer in a tx to its sender:
// MsgSend and MsgMultiSend, at the top or inside authz MsgExec, and nothing else.
func TestRecordTxFunding(t *testing.T) {
	names := []string{"p", "s", "x", "g", "o1", "o2", "o3"}
	udpsCoins := func(n int64) sdk.Coins { return sdk.NewCoins(sdk.NewInt64Coin(denom, n)) }
	send := func(from, to string, coins sdk.Coins) *banktypes.MsgSend {
		return banktypes.NewMsgSend(acc(from), acc(to), coins)
	}
	exec := func(msgs ...sdk.Msg) *authz.MsgExec {
		m := authz.NewMsgExec(acc("g"), msgs)
		return &m
	}
	multi := func(from string, coins sdk.Coins, outs map[string]sdk.Coins) *banktypes.MsgMultiSend {
		m := &banktypes.MsgMultiSend{Inputs: []banktypes.Input{banktypes.NewInput(acc(from), coins)}}
		for _, o := range []string{"o1", "o2", "o3"} {
			if c, ok := outs[o]; ok {
				m.Outputs = append(m.Outputs, banktypes.NewOutput(acc(o), c))
			}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		msgs []sdk.Msg
		max  int
		want []string
	}{
		// P funds S: S is funded by P, not the other way round.
		{"send P to S", []sdk.Msg{send("p", "s", udpsCoins(1))}, 100, []string{"s<-p"}},
		// A third party's transfer to S does not make S funded by P.
		{"send X to S", []sdk.Msg{send("x", "s", udpsCoins(5))}, 100, []string{"s<-x"}},
		// Only udps counts; a send of udps with another coin does.
		{"other denom", []sdk.Msg{send("p", "s", sdk.NewCoins(sdk.NewInt64Coin("uatom", 9)))}, 100, nil},
		{"udps among others", []sdk.Msg{send("p", "s", sdk.NewCoins(sdk.NewInt64Coin("uatom", 9), sdk.NewInt64Coin(denom, 1)))}, 100, []string{"s<-p"}},
		// Sending to oneself links nobody.
		{"to oneself", []sdk.Msg{send("p", "p", udpsCoins(1))}, 100, nil},
		// A grantee's MsgExec of P's send is P's funding (the grantee links nobody).
		{"inside MsgExec", []sdk.Msg{exec(send("p", "s", udpsCoins(1)))}, 100, []string{"s<-p"}},
		{"inside nested MsgExec", []sdk.Msg{exec(exec(send("p", "s", udpsCoins(1))))}, 100, []string{"s<-p"}},
		// MultiSend: each output that gets udps is linked to the input.
		{"MultiSend", []sdk.Msg{multi("p", udpsCoins(3), map[string]sdk.Coins{
			"o1": udpsCoins(1), "o2": sdk.NewCoins(sdk.NewInt64Coin("uatom", 1)), "o3": udpsCoins(2),
		})}, 100, []string{"o1<-p", "o3<-p"}},
		{"MultiSend inside MsgExec", []sdk.Msg{exec(multi("p", udpsCoins(1), map[string]sdk.Coins{"o2": udpsCoins(1)}))}, 100, []string{"o2<-p"}},
		// Several transfers in one tx, each linked.
		{"two sends", []sdk.Msg{send("p", "s", udpsCoins(1)), send("x", "o1", udpsCoins(1))}, 100, []string{"o1<-x", "s<-p"}},
		// The bound: the walk visits at most max msgs (the MsgExec and its first send here).
		{"bounded", []sdk.Msg{exec(send("p", "s", udpsCoins(1)), send("p", "o1", udpsCoins(1))), send("p", "o2", udpsCoins(1))}, 2, []string{"s<-p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			require.NoError(t, f.k.RecordTxFunding(f.ctx, tc.msgs, tc.max))
			require.Equal(t, tc.want, fundingLinks(t, f, names...))
			funded, err := f.k.IsFundedBy(f.ctx, acc("s"), acc("p"))
			require.NoError(t, err)
			require.Equal(t, slices.Contains(tc.want, "s<-p"), funded)
		})
	}
}

// Work counts only when its payer is neither the provider nor an account the provider
// funded: RecordWork leaves the ledger untouched otherwise (x/market pays the provider
// the same either way).
func TestWorkOfFundedPayerIsNotCounted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// link: (recipient, funder) recorded before the work.
		link  [2]string
		payer string
		count bool
	}{
		// A client nobody linked: its task is the provider's work.
		{"unfunded client", [2]string{}, "sock", true},
		// The provider pays itself: no work.
		{"self-paid", [2]string{}, "prov", false},
		// The provider funded the owner: a sock; no work.
		{"owner funded by the provider", [2]string{"sock", "prov"}, "sock", false},
		// A third party funded the owner: a normal client, work.
		{"owner funded by a third party", [2]string{"sock", "bank"}, "sock", true},
		// The owner funded the provider (paid it directly once): still work.
		{"provider funded by the owner", [2]string{"prov", "sock"}, "sock", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			f.endEpoch(6) // the current reward epoch is 7
			if tc.link != [2]string{} {
				require.NoError(t, f.k.RecordFunding(f.ctx, acc(tc.link[0]), acc(tc.link[1])))
			}
			w := markettypes.VerifiedWork{Payer: acc(tc.payer), Provider: acc("prov"), Workload: int32(gfltypes.WORKLOAD_CLASS_BATCH),
				GflopSeconds: sdkmath.NewInt(600), Fees: sdkmath.NewInt(266_667)}
			require.NoError(t, f.k.MarketHooks().AfterWorkVerified(f.ctx, w))
			require.NoError(t, f.k.MarketHooks().AfterWorkVerified(f.ctx, w))
			rec, err := f.k.Work.Get(f.ctx, collections.Join3(uint64(7), acc("prov"), int32(gfltypes.WORKLOAD_CLASS_BATCH)))
			if !tc.count {
				require.ErrorIs(t, err, collections.ErrNotFound, "no work record")
				return
			}
			require.NoError(t, err)
			require.Equal(t, uint64(2), rec.Tasks)
			require.Equal(t, "533334", rec.Fees.String())
			require.Equal(t, "1200", rec.GflopSeconds.String())
		})
	}
}

// The funding links travel through genesis: export then import gives the same links, and
// a link to oneself, a duplicate or a bad address is refused.
func TestFundingLinksGenesis(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	require.NoError(t, f.k.RecordFunding(f.ctx, acc("s"), acc("p")))
	require.NoError(t, f.k.RecordFunding(f.ctx, acc("o1"), acc("p")))
	require.NoError(t, f.k.RecordFunding(f.ctx, acc("p"), acc("p")), "a self-link is ignored")
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Len(t, gs.FundingLinks, 2)

	g := newFixture(t, fixtureOpts{})
	// the fresh fixture's escrow is empty, like the exported one's
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	require.Equal(t, []string{"o1<-p", "s<-p"}, fundingLinks(t, g, "p", "s", "o1"))

	p, s := keepertest.Addr("p"), keepertest.Addr("s")
	for name, links := range map[string][]types.FundingLink{
		"self":          {{Recipient: p, Funder: p}},
		"duplicate":     {{Recipient: s, Funder: p}, {Recipient: s, Funder: p}},
		"bad recipient": {{Recipient: "nope", Funder: p}},
		"bad funder":    {{Recipient: s, Funder: "nope"}},
	} {
		bad := types.DefaultGenesisState()
		bad.FundingLinks = links
		require.ErrorIs(t, bad.Validate(), types.ErrInvalidGenesis, name)
	}
}
