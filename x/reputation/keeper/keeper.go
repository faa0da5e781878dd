package keeper

import (
	"context"

	"cosmossdk.io/collections"
	"cosmossdk.io/collections/indexes"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/internal/epochref"
	"github.com/flopsnet/flops/internal/unitstore"
	"github.com/flopsnet/flops/x/reputation/types"
)

// ScoreIndexes index scores by rank, so that the ranked query never sorts.
type ScoreIndexes struct {
	// ByRank: (types.RankKey(score), node id); ascending keys are best first.
	ByRank *indexes.Multi[uint64, uint64, types.NodeScore]
}

// IndexesList implements collections.Indexes.
func (i ScoreIndexes) IndexesList() []collections.Index[uint64, types.NodeScore] {
	return []collections.Index[uint64, types.NodeScore]{i.ByRank}
}

// Keeper owns x/reputation's state.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	accountKeeper types.AccountKeeper
	gfl           types.GFLKeeper
	// epochs are the epochs x/epochs runs: epoch_identifier must name one (nil: not
	// checked, a keeper test without x/epochs)
	epochs epochref.Epochs
	// authority may update params (x/gov's module account).
	authority string

	Schema collections.Schema
	Params collections.Item[types.Params]
	// Scoring: the epoch events count towards, the ended epochs waiting to be scored and
	// the cursor of the first of them.
	Scoring collections.Item[types.ScoringState]
	// Scores: node id -> its score record, indexed by rank.
	Scores *collections.IndexedMap[uint64, types.NodeScore, ScoreIndexes]
	// Counters: (epoch, node id) -> the node's events in that epoch, for the current epoch
	// and the pending ones; removed once scored.
	Counters collections.Map[collections.Pair[uint64, uint64], types.EpochCounters]
	// History: (node id, epoch) -> the update of that epoch; the last history_length
	// epochs per node.
	History collections.Map[collections.Pair[uint64, uint64], types.ScoreRecord]
	// Operators: operator -> the sum and count of its nodes' scores (derived from Scores,
	// rebuilt on genesis import).
	Operators collections.Map[sdk.AccAddress, types.OperatorReputation]
	// Retries: the scoring's failed nodes, due again with back-off (internal/blockhook).
	Retries blockhook.Retries
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app.
func NewKeeper(
	cdc codec.BinaryCodec, storeService corestore.KVStoreService, addressCodec address.Codec, authority string,
	ak types.AccountKeeper, gk types.GFLKeeper, epochs epochref.Epochs,
) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic(errorsmod.Wrapf(err, "reputation: invalid authority %q", authority))
	}
	storeService = unitstore.Wrap(storeService) // a unit's store opened once (unitstore)
	sb := collections.NewSchemaBuilder(storeService)
	pairKey := collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key)
	k := Keeper{
		cdc:           cdc,
		storeService:  storeService,
		addressCodec:  addressCodec,
		accountKeeper: ak,
		gfl:           gk,
		epochs:        epochs,
		authority:     authority,
		Params:        collections.NewItem(sb, types.ParamsKey, "params", collkeys.DecodeOnce(codec.CollValue[types.Params](cdc))),
		Scoring:       collections.NewItem(sb, types.ScoringKey, "scoring", codec.CollValue[types.ScoringState](cdc)),
		Scores: collections.NewIndexedMap(sb, types.ScoresKey, "scores", collections.Uint64Key, codec.CollValue[types.NodeScore](cdc), ScoreIndexes{
			ByRank: indexes.NewMulti(sb, types.ScoresByRankKey, "scores_by_rank", collections.Uint64Key, collections.Uint64Key,
				func(_ uint64, s types.NodeScore) (uint64, error) { return types.RankKey(s.Score) }),
		}),
		Counters:  collections.NewMap(sb, types.CountersKey, "counters", pairKey, codec.CollValue[types.EpochCounters](cdc)),
		History:   collections.NewMap(sb, types.HistoryKey, "history", pairKey, codec.CollValue[types.ScoreRecord](cdc)),
		Operators: collections.NewMap(sb, types.OperatorsKey, "operators", sdk.AccAddressKey, codec.CollValue[types.OperatorReputation](cdc)),
		Retries:   blockhook.NewRetries(sb, types.ModuleName, types.RetryAttemptsKey, types.RetryDueKey),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// Authority returns the address allowed to update params.
func (k Keeper) Authority() string { return k.authority }

// GetParams returns the stored params.
func (k Keeper) GetParams(ctx context.Context) (types.Params, error) {
	return k.Params.Get(ctx)
}

// operatorAddr decodes a bech32 operator address.
func (k Keeper) operatorAddr(field, addr string) (sdk.AccAddress, error) {
	bz, err := k.addressCodec.StringToBytes(addr)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddress, "%s %q: %s", field, addr, err)
	}
	if len(bz) == 0 {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddress, "%s: empty", field)
	}
	return bz, nil
}
