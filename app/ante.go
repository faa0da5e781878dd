package app

import (
	"errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/auth/ante"

	ibcante "github.com/cosmos/ibc-go/v11/modules/core/ante"
	ibckeeper "github.com/cosmos/ibc-go/v11/modules/core/keeper"
)

// HandlerOptions are the SDK's ante options plus IBC's keeper.
type HandlerOptions struct {
	ante.HandlerOptions
	IBCKeeper *ibckeeper.Keeper
}

// NewAnteHandler is the SDK's default chain (fees through x/feegrant, signatures,
// sequences) with IBC's redundant-relay filter at the end.
func NewAnteHandler(opts HandlerOptions) (sdk.AnteHandler, error) {
	if opts.AccountKeeper == nil || opts.BankKeeper == nil || opts.SignModeHandler == nil {
		return nil, errors.New("ante: account keeper, bank keeper and sign mode handler are required")
	}
	if opts.IBCKeeper == nil {
		return nil, errors.New("ante: IBC keeper is required")
	}
	decorators := []sdk.AnteDecorator{
		ante.NewSetUpContextDecorator(), // first: sets the gas meter
		ante.NewExtensionOptionsDecorator(opts.ExtensionOptionChecker),
		ante.NewValidateBasicDecorator(),
		ante.NewTxTimeoutHeightDecorator(),
		ante.NewValidateMemoDecorator(opts.AccountKeeper),
		ante.NewConsumeGasForTxSizeDecorator(opts.AccountKeeper),
		ante.NewDeductFeeDecorator(opts.AccountKeeper, opts.BankKeeper, opts.FeegrantKeeper, opts.TxFeeChecker),
		ante.NewSetPubKeyDecorator(opts.AccountKeeper), // before every signature check
		ante.NewValidateSigCountDecorator(opts.AccountKeeper),
		ante.NewSigGasConsumeDecorator(opts.AccountKeeper, opts.SigGasConsumer),
		ante.NewSigVerificationDecorator(opts.AccountKeeper, opts.SignModeHandler, opts.SigVerifyOptions...),
		ante.NewIncrementSequenceDecorator(opts.AccountKeeper),
		ibcante.NewRedundantRelayDecorator(opts.IBCKeeper),
	}
	return sdk.ChainAnteDecorators(decorators...), nil
}
