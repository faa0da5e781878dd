package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	abci "github.com/cometbft/cometbft/abci/types"

	sdkmath "cosmossdk.io/math"

	kmultisig "github.com/cosmos/cosmos-sdk/crypto/keys/multisig"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/cosmos/cosmos-sdk/crypto/types/multisig"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/testutil/msgfill"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

const aminoJSON = signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON

// relay re-encodes a signed tx with its messages replaced and its signatures kept, as a
// relay (or a compromised broadcaster) between a signer and the chain can.
func relay(t *testing.T, a *apptest.App, signed []byte, msgs ...sdk.Msg) []byte {
	t.Helper()
	tx, err := a.TxConfig().TxDecoder()(signed)
	require.NoError(t, err)
	b, err := a.TxConfig().WrapTxBuilder(tx)
	require.NoError(t, err)
	require.NoError(t, b.SetMsgs(msgs...))
	bz, err := a.TxConfig().TxEncoder()(b.GetTx())
	require.NoError(t, err)
	return bz
}

// deliverOne includes one tx in the next block and returns its result.
func deliverOne(t *testing.T, a *apptest.App, tx []byte) *abci.ExecTxResult {
	t.Helper()
	res := a.NextBlock(tx)
	require.Len(t, res.TxResults, 1)
	return res.TxResults[0]
}

// requireSignatureRefused: the tx failed the ante handler's signature check.
func requireSignatureRefused(t *testing.T, r *abci.ExecTxResult) {
	t.Helper()
	require.Equalf(t, sdkerrors.ErrUnauthorized.ABCICode(), r.Code, "want a signature failure, got %s/%d: %s", r.Codespace, r.Code, r.Log)
	require.Equal(t, sdkerrors.ErrUnauthorized.Codespace(), r.Codespace)
	require.Contains(t, r.Log, "signature verification failed")
}

// relayedJob is the job a client signs and what a relay makes of it: 100x the price and
// another region.
func relayedJob(a *apptest.App, owner string) (signed, tampered *markettypes.MsgSubmitJob) {
	spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_ASSIGN)
	spec.MaxPricePerTask = sdk.NewInt64Coin(udps, 1_000_000)
	spec.Requirements.Region = "eu-west"
	evil := spec
	evil.MaxPricePerTask = sdk.NewInt64Coin(udps, 100_000_000)
	evil.Requirements.Region = "ap-south"
	return &markettypes.MsgSubmitJob{Owner: owner, Spec: spec}, &markettypes.MsgSubmitJob{Owner: owner, Spec: evil}
}

// TestAttackAminoJSONRelayRaisesJobPrice: a client signs a job with amino JSON (a Ledger,
// or the CLI's --sign-mode amino-json); a relay raises its price 100x and moves its
// region before broadcasting. The chain refuses the tampered tx (its sign bytes differ
// from what was signed), moves no coin, and accepts the job as signed.
func TestAttackAminoJSONRelayRaisesJobPrice(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client"))
	owner := a.Account("client")
	signed, tampered := relayedJob(a, owner.String())
	tx := a.SignTxMode("client", aminoJSON, apptest.DefaultGas, signed)
	before := a.Balance(owner.Address, udps)

	requireSignatureRefused(t, deliverOne(t, a, relay(t, a, tx, tampered)))
	require.Equal(t, before, a.Balance(owner.Address, udps), "the refused tx moved coins")
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero())

	r := deliverOne(t, a, tx)
	require.Zerof(t, r.Code, "the untampered tx was refused: %s", r.Log)
	escrow := a.ModuleBalance(markettypes.ModuleName, udps)
	require.True(t, escrow.IsPositive())
	require.Equal(t, before.Sub(escrow), a.Balance(owner.Address, udps))
	// The escrow is the signed price's: 2 tasks at 1 DPS each plus tip and reveal costs,
	// far below one task at the tampered price.
	require.True(t, escrow.LT(sdkmath.NewInt(100_000_000)), "escrow %s is the tampered price's", escrow)
}

// TestAttackAminoJSONRelayOnMultisig: the same relay against a 2-of-3 multisig whose
// members sign amino JSON (the only mode legacy multisig members can use).
func TestAttackAminoJSONRelayOnMultisig(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client"))
	keys := []*secp256k1.PrivKey{
		secp256k1.GenPrivKeyFromSecret([]byte("member-1")),
		secp256k1.GenPrivKeyFromSecret([]byte("member-2")),
		secp256k1.GenPrivKeyFromSecret([]byte("member-3")),
	}
	pubs := make([]cryptotypes.PubKey, len(keys))
	for i, k := range keys {
		pubs[i] = k.PubKey()
	}
	msPub := kmultisig.NewLegacyAminoPubKey(2, pubs)
	msAddr := sdk.AccAddress(msPub.Address())
	a.MustDeliver("client", &banktypes.MsgSend{
		FromAddress: a.Account("client").String(), ToAddress: msAddr.String(), Amount: sdk.NewCoins(sdk.NewInt64Coin(udps, 1_000_000_000)),
	})
	acc := a.AccountKeeper.GetAccount(a.Ctx(), msAddr)
	require.NotNil(t, acc)

	signed, tampered := relayedJob(a, msAddr.String())
	cfg := a.TxConfig()
	b := cfg.NewTxBuilder()
	require.NoError(t, b.SetMsgs(signed))
	b.SetGasLimit(apptest.DefaultGas)
	signerData := authsign.SignerData{
		Address: msAddr.String(), ChainID: apptest.ChainID, AccountNumber: acc.GetAccountNumber(), Sequence: acc.GetSequence(), PubKey: msPub,
	}
	ms := multisig.NewMultisig(len(pubs))
	require.NoError(t, b.SetSignatures(signing.SignatureV2{PubKey: msPub, Data: ms, Sequence: acc.GetSequence()}))
	signBytes, err := authsign.GetSignBytesAdapter(context.Background(), cfg.SignModeHandler(), aminoJSON, signerData, b.GetTx())
	require.NoError(t, err)
	for _, k := range keys[:2] {
		sig, err := k.Sign(signBytes)
		require.NoError(t, err)
		require.NoError(t, multisig.AddSignatureV2(ms, signing.SignatureV2{
			PubKey: k.PubKey(), Data: &signing.SingleSignatureData{SignMode: aminoJSON, Signature: sig}, Sequence: acc.GetSequence(),
		}, pubs))
	}
	require.NoError(t, b.SetSignatures(signing.SignatureV2{PubKey: msPub, Data: ms, Sequence: acc.GetSequence()}))
	tx, err := cfg.TxEncoder()(b.GetTx())
	require.NoError(t, err)

	before := a.Balance(msAddr, udps)
	requireSignatureRefused(t, deliverOne(t, a, relay(t, a, tx, tampered)))
	require.Equal(t, before, a.Balance(msAddr, udps))

	r := deliverOne(t, a, tx)
	require.Zerof(t, r.Code, "the untampered multisig tx was refused: %s", r.Log)
	escrow := a.ModuleBalance(markettypes.ModuleName, udps)
	require.True(t, escrow.IsPositive() && escrow.LT(sdkmath.NewInt(100_000_000)), "escrow %s", escrow)
}

// TestAttackAminoJSONRelayEditsEveryMsg: for every flops Msg (every field set), a tx
// signed with amino JSON and edited by a relay (a leaf of its nested message: a job's
// spec, a pool's spec, a node's GPUs, a reveal's usage, a pool's units, a challenge's
// proofs, a module's params; a scalar where there is no nested message) is refused by
// the signature check and leaves the signer's sequence where it was; the untampered tx
// passes the signature check (what the Msg then does with made-up values is the
// module's business: its own error, not a signature error) and uses the sequence.
func TestAttackAminoJSONRelayEditsEveryMsg(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client"))
	signer := a.Account("client")
	msgs, err := msgfill.FlopsMsgs()
	require.NoError(t, err)
	require.Len(t, msgs, 37)
	for _, md := range msgs {
		t.Run(string(md.ParentFile().Package())+"."+string(md.Name()), func(t *testing.T) {
			msg, _, err := msgfill.Filled(md, signer.String())
			require.NoError(t, err)
			evil, path, err := msgfill.Tamper(msg)
			tx := a.SignTxMode("client", aminoJSON, apptest.DefaultGas, msg)
			seq := a.AccountKeeper.GetAccount(a.Ctx(), signer.Address).GetSequence()
			if errors.Is(err, msgfill.ErrOnlySigner) {
				require.Equal(t, 1, md.Fields().Len())
				path = "nothing (signer only)"
			} else {
				require.NoError(t, err)
				requireSignatureRefused(t, deliverOne(t, a, relay(t, a, tx, evil)))
				require.Equalf(t, seq, a.AccountKeeper.GetAccount(a.Ctx(), signer.Address).GetSequence(), "tampered %s", path)
			}

			r := deliverOne(t, a, tx)
			require.Falsef(t, r.Codespace == sdkerrors.ErrUnauthorized.Codespace() && r.Code == sdkerrors.ErrUnauthorized.ABCICode(),
				"the untampered tx failed its signature check: %s", r.Log)
			require.Equal(t, seq+1, a.AccountKeeper.GetAccount(a.Ctx(), signer.Address).GetSequence())
			t.Logf("%s: tampered %s refused; untampered signed tx went through the ante (code %s/%d)", md.Name(), path, r.Codespace, r.Code)
		})
	}
}
