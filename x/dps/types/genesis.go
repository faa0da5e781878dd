package types

import errorsmod "cosmossdk.io/errors"

// DefaultGenesisState returns the genesis state with default params and nothing else.
func DefaultGenesisState() *GenesisState {
	return &GenesisState{Params: DefaultParams()}
}

// Validate checks the params and every record of the genesis state.
func (gs GenesisState) Validate() error {
	if err := gs.Params.Validate(); err != nil {
		return errorsmod.Wrap(err, "genesis params")
	}
	return nil
}
