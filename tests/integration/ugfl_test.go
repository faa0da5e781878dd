package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	"github.com/cosmos/cosmos-sdk/x/feegrant"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"

	ibctransfertypes "github.com/cosmos/ibc-go/v11/modules/apps/transfer/types"
	clienttypes "github.com/cosmos/ibc-go/v11/modules/core/02-client/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// TestAttackUgflLeavesItsHolder: an operator whose node earned GFL tries every path that
// moves coins out of an account: a bank send and multi-send, the community pool, a fee
// (its own and one paid through a fee grant), a gov deposit, an IBC transfer, an
// authz-executed send, and a module-level send to an IBC escrow. Each is refused, the
// operator's ugfl stays equal to its node's power (the registered ugfl-holders invariant
// holds), and the next rebalance can still burn the node's power when it deactivates.
// Before the send restriction, MsgFundCommunityPool and a fee in ugfl moved it, the
// rebalance's burn then failed and the node kept its power forever.
func TestAttackUgflLeavesItsHolder(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("op", "friend"), apptest.WithGenesis(smallPoCP))
	node := bondAndRegister(t, a, "op", 1)
	runUntilRebalanced(t, a, 0, []uint64{node}, newProver(t, "op", 2))
	op, friend := a.Account("op"), a.Account("friend")
	held := a.Balance(op.Address, gfltypes.Denom)
	require.True(t, held.IsPositive(), "the node earned no GFL")
	one := sdk.NewCoins(sdk.NewInt64Coin(gfltypes.Denom, 1))
	a.AssertInvariants()

	// the operator lets the friend spend through authz and pay fees through a grant
	sendAuth, err := codectypes.NewAnyWithValue(banktypes.NewSendAuthorization(one, nil))
	require.NoError(t, err)
	allowance, err := codectypes.NewAnyWithValue(&feegrant.BasicAllowance{})
	require.NoError(t, err)
	a.MustDeliver("op", &authz.MsgGrant{Granter: op.String(), Grantee: friend.String(),
		Grant: authz.Grant{Authorization: sendAuth, Expiration: ptr(a.BlockTime().Add(time.Hour))}})
	a.MustDeliver("op", &feegrant.MsgGrantAllowance{Granter: op.String(), Grantee: friend.String(), Allowance: allowance})
	execSend := authz.NewMsgExec(friend.Address, []sdk.Msg{&banktypes.MsgSend{FromAddress: op.String(), ToAddress: friend.String(), Amount: one}})

	paths := []struct {
		name string
		from string
		tx   func() []byte
	}{
		{"bank send", "op", func() []byte {
			return a.SignTx("op", apptest.DefaultGas, &banktypes.MsgSend{FromAddress: op.String(), ToAddress: friend.String(), Amount: one})
		}},
		{"bank multi-send", "op", func() []byte {
			return a.SignTx("op", apptest.DefaultGas, &banktypes.MsgMultiSend{
				Inputs: []banktypes.Input{{Address: op.String(), Coins: one}}, Outputs: []banktypes.Output{{Address: friend.String(), Coins: one}},
			})
		}},
		{"community pool", "op", func() []byte {
			return a.SignTx("op", apptest.DefaultGas, &distrtypes.MsgFundCommunityPool{Depositor: op.String(), Amount: one})
		}},
		{"fee", "op", func() []byte {
			return a.SignTxFee("op", 200_000, one, nil, &banktypes.MsgSend{
				FromAddress: op.String(), ToAddress: friend.String(), Amount: sdk.NewCoins(sdk.NewInt64Coin(udps, 1)),
			})
		}},
		{"fee through a grant", "friend", func() []byte {
			return a.SignTxFee("friend", 200_000, one, op.Address, &banktypes.MsgSend{
				FromAddress: friend.String(), ToAddress: op.String(), Amount: sdk.NewCoins(sdk.NewInt64Coin(udps, 1)),
			})
		}},
		{"gov deposit", "op", func() []byte {
			return a.SignTx("op", apptest.DefaultGas, &govv1.MsgSubmitProposal{
				InitialDeposit: one, Proposer: op.String(), Title: "t", Summary: "s", Metadata: "m",
			})
		}},
		{"ibc transfer", "op", func() []byte {
			return a.SignTx("op", apptest.DefaultGas, ibctransfertypes.NewMsgTransfer(ibctransfertypes.PortID, "channel-0",
				sdk.NewInt64Coin(gfltypes.Denom, 1), op.String(), "cosmos1xyz", clienttypes.NewHeight(1, 1000), uint64(a.BlockTime().Add(time.Hour).UnixNano()), ""))
		}},
		{"authz exec send", "friend", func() []byte { return a.SignTx("friend", apptest.DefaultGas, &execSend) }},
	}
	for _, p := range paths {
		before := a.Balance(op.Address, gfltypes.Denom)
		r := deliverOne(t, a, p.tx())
		require.NotZerof(t, r.Code, "%s moved ugfl", p.name)
		require.Equalf(t, before, a.Balance(op.Address, gfltypes.Denom), "%s moved ugfl", p.name)
		t.Logf("%s: refused (%s/%d) %s", p.name, r.Codespace, r.Code, r.Log)
	}
	// a module's own send to an IBC escrow (what ICS-20 does on a transfer)
	escrow := ibctransfertypes.GetEscrowAddress(ibctransfertypes.PortID, "channel-0")
	a.Prepare(func(ctx sdk.Context) {
		err := a.BankKeeper.SendCoins(ctx, op.Address, escrow, one)
		require.ErrorIs(t, err, gfltypes.ErrNotTransferable)
		err = a.BankKeeper.SendCoinsFromAccountToModule(ctx, op.Address, authtypes.FeeCollectorName, one)
		require.ErrorIs(t, err, gfltypes.ErrNotTransferable)
	})
	require.Equal(t, held, a.Balance(op.Address, gfltypes.Denom))
	require.True(t, a.Balance(friend.Address, gfltypes.Denom).IsZero())
	a.AssertInvariants()

	// the node leaves; its power is burned from the operator at the next rebalance
	a.MustDeliver("op", &gfltypes.MsgDeactivateNode{Operator: op.String(), NodeId: node})
	for range 200 {
		if a.Balance(op.Address, gfltypes.Denom).IsZero() {
			break
		}
		a.NextBlock()
	}
	require.True(t, a.Balance(op.Address, gfltypes.Denom).IsZero(), "the deactivated node's power was not burned")
	require.True(t, a.BankKeeper.GetSupply(a.Ctx(), gfltypes.Denom).Amount.IsZero())
	a.AssertInvariants()
}

// TestHoldersInvariantCatchesUgflAwayFromItsOperator: ugfl moved out of band (as a
// path the restriction missed would move it) breaks the ugfl-holders invariant.
func TestHoldersInvariantCatchesUgflAwayFromItsOperator(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("op", "friend"), apptest.WithGenesis(smallPoCP))
	node := bondAndRegister(t, a, "op", 1)
	runUntilRebalanced(t, a, 0, []uint64{node}, newProver(t, "op", 2))
	a.AssertInvariants()
	a.Prepare(func(ctx sdk.Context) {
		moved := gfltypes.WithLedgerMove(ctx)
		require.NoError(t, a.BankKeeper.SendCoins(moved, a.Account("op").Address, a.Account("friend").Address,
			sdk.NewCoins(sdk.NewCoin(gfltypes.Denom, sdkmath.OneInt()))))
	})
	a.NextBlock()
	msg, broken := a.GFLKeeper.HoldersInvariant(a.Ctx())
	require.True(t, broken, msg)
	require.Contains(t, msg, a.Account("op").String())
}

func ptr[T any](v T) *T { return &v }
