package app

import (
	"encoding/json"
	"time"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/x/bank"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	"github.com/cosmos/cosmos-sdk/x/epochs"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"
)

// GenesisState is the app's genesis: module name -> that module's genesis JSON.
type GenesisState map[string]json.RawMessage

// DefaultEpochDuration is the production epoch: the seed's 15-day GFL rebalance.
const DefaultEpochDuration = 15 * 24 * time.Hour

// bankBasic is x/bank with flops' default genesis: udps and ugfl metadata, and ugfl bank
// sends disabled (GFL is an index of verified power, not a currency; IBC transfer checks
// the same flag).
type bankBasic struct{ bank.AppModule }

func (b bankBasic) DefaultGenesis(cdc codec.JSONCodec) json.RawMessage {
	gs := banktypes.DefaultGenesisState()
	gs.SendEnabled = append(gs.SendEnabled, banktypes.SendEnabled{Denom: GFLDenom, Enabled: false})
	gs.DenomMetadata = append(gs.DenomMetadata, DenomMetadata()...)
	return cdc.MustMarshalJSON(gs)
}

// epochsBasic is x/epochs with the "flops" epoch that drives the GFL rebalance,
// reputation scores and DPS emission.
type epochsBasic struct{ epochs.AppModule }

func (e epochsBasic) DefaultGenesis(cdc codec.JSONCodec) json.RawMessage {
	gs := epochstypes.DefaultGenesis()
	gs.Epochs = append(gs.Epochs, epochstypes.NewGenesisEpochInfo(EpochIdentifier, DefaultEpochDuration))
	return cdc.MustMarshalJSON(gs)
}

// DenomMetadata describes udps and ugfl for wallets and explorers.
func DenomMetadata() []banktypes.Metadata {
	return []banktypes.Metadata{
		{
			Description: "DPS: payment, collateral, staking and fees on flops",
			Base:        BondDenom,
			Display:     "dps",
			Name:        "DPS",
			Symbol:      "DPS",
			DenomUnits: []*banktypes.DenomUnit{
				{Denom: BondDenom, Exponent: 0},
				{Denom: "dps", Exponent: 6},
			},
		},
		{
			Description: "GFL: the non-transferable index of verified computing power (1 GFL = 1 PFLOP/s, 1 ugfl = 1 GFLOP/s)",
			Base:        GFLDenom,
			Display:     "gfl",
			Name:        "GFL",
			Symbol:      "GFL",
			DenomUnits: []*banktypes.DenomUnit{
				{Denom: GFLDenom, Exponent: 0},
				{Denom: "gfl", Exponent: 6},
			},
		},
	}
}
