// Package ibc runs flops over IBC with ibc-go's testing package: two flops chains, a
// client, connection and ICS-20 channel between them, and packets relayed in process.
package ibc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/log/v2"
	sdkmath "cosmossdk.io/math"
	dbm "github.com/cosmos/cosmos-db"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"

	transfertypes "github.com/cosmos/ibc-go/v11/modules/apps/transfer/types"
	clienttypes "github.com/cosmos/ibc-go/v11/modules/core/02-client/types"
	ibckeeper "github.com/cosmos/ibc-go/v11/modules/core/keeper"
	ibctesting "github.com/cosmos/ibc-go/v11/testing"

	"github.com/flopsnet/flops/app"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// testingApp is the flops app as ibc-go's testing package drives it.
type testingApp struct{ *app.App }

func (a testingApp) GetBaseApp() *baseapp.BaseApp    { return a.BaseApp }
func (a testingApp) GetIBCKeeper() *ibckeeper.Keeper { return a.IBCKeeper }
func (a testingApp) GetTxConfig() client.TxConfig    { return a.TxConfig() }

// newTestingApp is a fresh flops app in a home of its own, with its default genesis (the
// testing package adds the validators and the sender accounts).
func newTestingApp(home string) (ibctesting.TestingApp, map[string]json.RawMessage) {
	a := app.New(log.NewNopLogger(), dbm.NewMemDB(), true, simtestutil.AppOptionsMap{flags.FlagHome: home})
	return testingApp{a}, a.DefaultGenesis()
}

func flops(chain *ibctesting.TestChain) *app.App { return chain.App.(testingApp).App }

func balance(chain *ibctesting.TestChain, addr sdk.AccAddress, denom string) sdkmath.Int {
	return flops(chain).BankKeeper.GetBalance(chain.GetContext(), addr, denom).Amount
}

// DPS leaves flops for another chain over ICS-20 and comes back: on the way out it is
// escrowed in the channel's escrow account and the other chain mints its voucher; on the
// way back the voucher is burned and the escrow released, to the udps. ugfl, the index of
// verified power, cannot leave: x/gfl's send restriction refuses its transfer as it
// refuses a bank send of it.
func TestDPSRoundTripOverIBC(t *testing.T) {
	ibctesting.DefaultTestingAppInit = func() (ibctesting.TestingApp, map[string]json.RawMessage) {
		return newTestingApp(t.TempDir())
	}
	coord := ibctesting.NewCoordinator(t, 2)
	chainA := coord.GetChain(ibctesting.GetChainID(1))
	chainB := coord.GetChain(ibctesting.GetChainID(2))
	path := ibctesting.NewTransferPath(chainA, chainB)
	path.Setup()

	alice, bob := chainA.SenderAccount.GetAddress(), chainB.SenderAccount.GetAddress()
	amount := sdkmath.NewInt(1_234_567)
	escrow := transfertypes.GetEscrowAddress(path.EndpointA.ChannelConfig.PortID, path.EndpointA.ChannelID)
	voucher := transfertypes.NewDenom(app.BondDenom, transfertypes.NewHop(path.EndpointB.ChannelConfig.PortID, path.EndpointB.ChannelID)).IBCDenom()
	aliceBefore := balance(chainA, alice, app.BondDenom)
	timeout := clienttypes.NewHeight(1, 1000)

	// out: A -> B
	res, err := chainA.SendMsgs(transfertypes.NewMsgTransfer(path.EndpointA.ChannelConfig.PortID, path.EndpointA.ChannelID,
		sdk.NewCoin(app.BondDenom, amount), alice.String(), bob.String(), timeout, 0, ""))
	require.NoError(t, err)
	packet, err := ibctesting.ParseV1PacketFromEvents(res.Events)
	require.NoError(t, err)
	require.NoError(t, path.RelayPacket(packet))
	require.Equal(t, amount, balance(chainA, escrow, app.BondDenom), "escrowed on flops")
	require.Equal(t, amount, balance(chainB, bob, voucher), "the voucher on the other chain")
	require.Equal(t, aliceBefore.Sub(amount), balance(chainA, alice, app.BondDenom))
	require.Equal(t, amount, flops(chainB).BankKeeper.GetSupply(chainB.GetContext(), voucher).Amount)

	// back: B -> A
	res, err = chainB.SendMsgs(transfertypes.NewMsgTransfer(path.EndpointB.ChannelConfig.PortID, path.EndpointB.ChannelID,
		sdk.NewCoin(voucher, amount), bob.String(), alice.String(), timeout, 0, ""))
	require.NoError(t, err)
	packet, err = ibctesting.ParseV1PacketFromEvents(res.Events)
	require.NoError(t, err)
	require.NoError(t, path.RelayPacket(packet))
	require.True(t, balance(chainA, escrow, app.BondDenom).IsZero(), "the escrow released")
	require.True(t, balance(chainB, bob, voucher).IsZero(), "the voucher burned")
	require.True(t, flops(chainB).BankKeeper.GetSupply(chainB.GetContext(), voucher).Amount.IsZero())
	require.Equal(t, aliceBefore, balance(chainA, alice, app.BondDenom), "every udps back")

	// ugfl cannot leave
	_, err = chainA.SendMsgs(transfertypes.NewMsgTransfer(path.EndpointA.ChannelConfig.PortID, path.EndpointA.ChannelID,
		sdk.NewCoin(app.GFLDenom, sdkmath.NewInt(1)), alice.String(), bob.String(), timeout, 0, ""))
	require.ErrorContains(t, err, gfltypes.ErrNotTransferable.Error())
	require.ErrorContains(t, err, "gfl/25")
}
