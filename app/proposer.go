package app

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	abci "github.com/cometbft/cometbft/abci/types"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"
	cmttypes "github.com/cometbft/cometbft/types"
	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	"github.com/oasisprotocol/curve25519-voi/primitives/ed25519/extra/ecvrf"
	"github.com/spf13/cast"

	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/client/flags"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authsigning "github.com/cosmos/cosmos-sdk/x/auth/signing"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// The proposer's VRF (x/gfl/keeper/beacon.go "The beacon's value"): a node that holds its
// validator's consensus key in the key file puts a MsgProposerRandomness, unsigned, first
// in every block it proposes; the other validators refuse a proposal whose first tx is one
// that does not verify; FinalizeBlock checks it again (a block synced or replayed is never
// proposed to this node) and fixes the block's value from it. A node whose key is held by a
// remote signer, or is not ed25519, proposes without one: its blocks' values follow from
// the previous value alone.

// ProposerTxGas is the gas limit of the proposer's randomness tx (it needs about
// VRFVerifyGas and a few store reads and writes).
const ProposerTxGas = 200_000

// proposerKey is this node's validator key, as CometBFT reads it.
type proposerKey struct {
	priv    cmted25519.PrivKey
	address []byte
}

// loadProposerKey reads the validator key file named by the node's config
// (priv_validator_key_file under --home). None when a remote signer holds the key
// (priv_validator_laddr), when there is no file (a node that is not a validator, a test
// app) or when the key is not ed25519.
func loadProposerKey(appOpts servertypes.AppOptions, logger log.Logger) *proposerKey {
	if laddr := cast.ToString(appOpts.Get("priv_validator_laddr")); laddr != "" {
		logger.Info("the proposer's VRF is off: a remote signer holds the validator key", "priv_validator_laddr", laddr)
		return nil
	}
	home := cast.ToString(appOpts.Get(flags.FlagHome))
	file := cast.ToString(appOpts.Get("priv_validator_key_file"))
	if file == "" {
		file = filepath.Join("config", "priv_validator_key.json")
	}
	if !filepath.IsAbs(file) {
		if home == "" {
			return nil
		}
		file = filepath.Join(home, file)
	}
	bz, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		logger.Error("the proposer's VRF is off: cannot read the validator key", "file", file, "err", err)
		return nil
	}
	var key privval.FilePVKey
	if err := cmtjson.Unmarshal(bz, &key); err != nil {
		logger.Error("the proposer's VRF is off: cannot decode the validator key", "file", file, "err", err)
		return nil
	}
	priv, ok := key.PrivKey.(cmted25519.PrivKey)
	if !ok {
		logger.Info("the proposer's VRF is off: the validator key is not ed25519", "type", key.PrivKey.Type())
		return nil
	}
	logger.Info("the proposer's VRF is on: this node's blocks carry its randomness", "validator", priv.PubKey().Address().String())
	return &proposerKey{priv: priv, address: priv.PubKey().Address()}
}

// SetProposerKey makes the app propose with priv's VRF when it proposes as priv's
// validator (tests; a node reads its key file).
func (app *App) SetProposerKey(priv cmted25519.PrivKey) {
	app.proposer = &proposerKey{priv: priv, address: priv.PubKey().Address()}
}

// ProposerRandomnessTx is the unsigned tx carrying priv's VRF proof for the block at
// ctx's height, as its proposer places it.
func (app *App) ProposerRandomnessTx(ctx sdk.Context, priv cmted25519.PrivKey) ([]byte, error) {
	v, err := app.StakingKeeper.GetValidatorByConsAddr(ctx, sdk.ConsAddress(priv.PubKey().Address()))
	if err != nil {
		return nil, fmt.Errorf("validator of consensus key %X: %w", priv.PubKey().Address(), err)
	}
	op, err := sdk.ValAddressFromBech32(v.GetOperator())
	if err != nil {
		return nil, err
	}
	alpha, err := app.GFLKeeper.ProposerVRFInput(ctx, ctx.BlockHeight())
	if err != nil {
		return nil, err
	}
	msg := &gfltypes.MsgProposerRandomness{
		Proposer: sdk.AccAddress(op).String(),
		Height:   ctx.BlockHeight(),
		Proof:    ecvrf.Prove(voied25519.PrivateKey(priv), alpha),
	}
	return app.ProposerTx(msg)
}

// ProposerTx encodes msg as a proposer places it: alone in an unsigned tx with
// ProposerTxGas.
func (app *App) ProposerTx(msg *gfltypes.MsgProposerRandomness) ([]byte, error) {
	b := app.txConfig.NewTxBuilder()
	if err := b.SetMsgs(msg); err != nil {
		return nil, err
	}
	b.SetGasLimit(ProposerTxGas)
	return app.txConfig.TxEncoder()(b.GetTx())
}

// prepareProposal puts this node's randomness tx first in its proposal, in the room it
// takes from the block's byte and gas limits.
func (app *App) prepareProposal(inner sdk.PrepareProposalHandler) sdk.PrepareProposalHandler {
	return func(ctx sdk.Context, req *abci.RequestPrepareProposal) (*abci.ResponsePrepareProposal, error) {
		k := app.proposer
		if k == nil || !bytes.Equal(k.address, req.ProposerAddress) {
			return inner(ctx, req)
		}
		tx, err := app.ProposerRandomnessTx(ctx, k.priv)
		if err != nil {
			app.Logger().Error("proposing without the proposer's VRF", "height", req.Height, "err", err)
			return inner(ctx, req)
		}
		r := *req
		r.MaxTxBytes -= cmttypes.ComputeProtoSizeForTxs([]cmttypes.Tx{tx})
		if cp := ctx.ConsensusParams(); cp.Block != nil && cp.Block.MaxGas > 0 {
			// the block's gas limit too: the randomness tx runs first, with ProposerTxGas
			block := *cp.Block
			block.MaxGas = max(block.MaxGas-ProposerTxGas, 0)
			cp.Block = &block
			ctx = ctx.WithConsensusParams(cp)
		}
		res, err := inner(ctx, &r)
		if err != nil {
			return nil, err
		}
		res.Txs = append([][]byte{tx}, res.Txs...)
		return res, nil
	}
}

// processProposal refuses a proposal whose first tx is a randomness tx that does not
// verify for this block and its proposer; anything else goes to inner.
func (app *App) processProposal(inner sdk.ProcessProposalHandler) sdk.ProcessProposalHandler {
	return func(ctx sdk.Context, req *abci.RequestProcessProposal) (*abci.ResponseProcessProposal, error) {
		if len(req.Txs) > 0 {
			if msg := app.proposerRandomnessIn(req.Txs[0]); msg != nil {
				if err := app.checkProposerRandomness(ctx, msg); err != nil {
					app.Logger().Info("refusing a proposal: its randomness", "height", req.Height, "proposer", fmt.Sprintf("%X", req.ProposerAddress), "err", err)
					return &abci.ResponseProcessProposal{Status: abci.ResponseProcessProposal_REJECT}, nil
				}
			}
		}
		return inner(ctx, req)
	}
}

// proposerRandomnessIn is the randomness msg of a tx made only of one, else nil.
func (app *App) proposerRandomnessIn(txBz []byte) *gfltypes.MsgProposerRandomness {
	tx, err := app.txConfig.TxDecoder()(txBz)
	if err != nil {
		return nil
	}
	msgs := tx.GetMsgs()
	if len(msgs) != 1 {
		return nil
	}
	msg, _ := msgs[0].(*gfltypes.MsgProposerRandomness)
	return msg
}

func (app *App) checkProposerRandomness(ctx sdk.Context, msg *gfltypes.MsgProposerRandomness) error {
	proposer, err := sdk.AccAddressFromBech32(msg.Proposer)
	if err != nil {
		return errorsmod.Wrapf(gfltypes.ErrInvalidRandomness, "proposer: %s", err)
	}
	cache, _ := ctx.WithGasMeter(storetypes.NewInfiniteGasMeter()).WithEventManager(sdk.NewEventManager()).CacheContext()
	_, err = app.GFLKeeper.RecordProposerRandomness(cache, proposer, msg.Height, msg.Proof)
	return err
}

// proposerTxAnte lets a tx made of one unsigned MsgProposerRandomness run without a fee,
// with a fixed gas limit, in FinalizeBlock (and a mempool's ProcessProposal check) only:
// the proposer placed it, and its proof is the credential, checked by the msg; a signed
// one is checked and pays like any tx. Everywhere else (CheckTx, simulation) and in any
// tx with other msgs it is refused, so it never comes through the mempool.
func proposerTxAnte(inner sdk.AnteHandler) sdk.AnteHandler {
	return func(ctx sdk.Context, tx sdk.Tx, simulate bool) (sdk.Context, error) {
		msgs := tx.GetMsgs()
		found := false
		for _, m := range msgs {
			if _, ok := m.(*gfltypes.MsgProposerRandomness); ok {
				found = true
			}
		}
		if !found {
			return inner(ctx, tx, simulate)
		}
		if mode := ctx.ExecMode(); len(msgs) != 1 || simulate || (mode != sdk.ExecModeFinalize && mode != sdk.ExecModeProcessProposal) {
			return ctx, errorsmod.Wrap(gfltypes.ErrInvalidRandomness,
				"MsgProposerRandomness is placed by a block's proposer, alone in its tx: it is not accepted from the mempool, in a simulation or beside other msgs")
		}
		if sigTx, ok := tx.(authsigning.SigVerifiableTx); ok {
			if sigs, err := sigTx.GetSignaturesV2(); err != nil || len(sigs) > 0 {
				// signed: it pays and is checked like any tx
				return inner(ctx, tx, simulate)
			}
		}
		return ctx.WithGasMeter(storetypes.NewGasMeter(ProposerTxGas)), nil
	}
}
