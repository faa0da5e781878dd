package keeper

import (
	"context"
	"time"

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
	"github.com/flopsnet/flops/x/gfl/types"
)

// NodeIndexes index nodes by operator, GPU class and status, so that no query or block
// hook scans every node.
type NodeIndexes struct {
	ByOperator *indexes.Multi[sdk.AccAddress, uint64, types.Node]
	ByClass    *indexes.Multi[string, uint64, types.Node]
	ByStatus   *indexes.Multi[int32, uint64, types.Node]
}

// IndexesList implements collections.Indexes.
func (i NodeIndexes) IndexesList() []collections.Index[uint64, types.Node] {
	return []collections.Index[uint64, types.Node]{i.ByOperator, i.ByClass, i.ByStatus}
}

// ChallengeIndexes index open challenges by operator (the worker's query).
type ChallengeIndexes struct {
	ByOperator *indexes.Multi[sdk.AccAddress, uint64, types.Challenge]
}

// IndexesList implements collections.Indexes.
func (i ChallengeIndexes) IndexesList() []collections.Index[uint64, types.Challenge] {
	return []collections.Index[uint64, types.Challenge]{i.ByOperator}
}

// hooksHolder is shared by every copy of the keeper, so hooks set after the keeper was
// copied into other modules are seen by all of them.
type hooksHolder struct{ hooks types.GFLHooks }

// Keeper owns x/gfl's state.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	accountKeeper types.AccountKeeper
	bankKeeper    types.BankKeeper
	collateral    types.CollateralKeeper
	validators    types.ValidatorKeeper
	// authority may update params and approve nodes (x/gov's module account).
	authority string
	hooks     *hooksHolder
	// epochs are the epochs x/epochs runs: epoch_identifier must name one (nil: not
	// checked, a keeper test without x/epochs)
	epochs epochref.Epochs

	Schema collections.Schema
	Params collections.Item[types.Params]

	NodeSeq collections.Sequence
	Nodes   *collections.IndexedMap[uint64, types.Node, NodeIndexes]
	// GpuOwners maps every registered GPU UUID to its node: a GPU sells once.
	GpuOwners collections.Map[string, uint64]
	// NodeRetireAt: (height, node id) of the inactive nodes, deleted at that height
	// (deactivation + node_retention_blocks) once their work is settled.
	NodeRetireAt collections.KeySet[collections.Pair[int64, uint64]]

	ChallengeSeq collections.Sequence
	// Challenges holds open challenges only; finished ones live on in events and stats.
	Challenges *collections.IndexedMap[uint64, types.Challenge, ChallengeIndexes]
	// ChallengeQueue: (height due, node id); EndBlock walks only the due range.
	ChallengeQueue collections.KeySet[collections.Pair[int64, uint64]]
	// CommitDeadlines: (deadline, challenge id) of ISSUED challenges.
	CommitDeadlines collections.KeySet[collections.Pair[time.Time, uint64]]
	// RevealDeadlines: (last height, challenge id) of COMMITTED challenges.
	RevealDeadlines collections.KeySet[collections.Pair[int64, uint64]]
	// Rounds: challenge rounds with open members (round.go); OperatorRounds: each
	// operator's latest round; RoundPulls: (height, round id) of the rounds still pulling
	// in their operator's nodes.
	RoundSeq       collections.Sequence
	Rounds         collections.Map[uint64, types.ChallengeRound]
	OperatorRounds collections.Map[sdk.AccAddress, uint64]
	RoundPulls     collections.KeySet[collections.Pair[int64, uint64]]

	// Stats: (node id, epoch) -> challenge results not yet rebalanced.
	Stats        collections.Map[collections.Pair[uint64, uint64], types.NodeEpochStats]
	Rebalance    collections.Item[types.RebalanceState]
	NetworkPower collections.Item[types.NetworkPower]
	// ClassPower: GPU class -> sum of its nodes' power; per-workload totals are derived
	// from it with the current weights.
	ClassPower collections.Map[string, uint64]

	// BlockHashes: recent block header hashes, the beacon's source (internal/beacon).
	BlockHashes collections.Map[int64, []byte]
	// BlockRounds: the drand round each recent block's draws are bound to (drand on);
	// DrandRounds: the verified rounds still in the window (beacon.go).
	BlockRounds collections.Map[int64, types.BlockRound]
	// RoundBlocks: BlockRounds by round, (round, height): its first entry is the oldest
	// round a block in the window is bound to, whatever the order of the heights (a
	// governance change of drand network can bind later blocks to lower rounds).
	RoundBlocks collections.KeySet[collections.Pair[uint64, int64]]
	DrandRounds collections.Map[uint64, types.DrandRound]
	// Retries: the block hook's items that failed, due again with back-off
	// (internal/blockhook; blockwork.go).
	Retries blockhook.Retries
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app.
func NewKeeper(
	cdc codec.BinaryCodec, storeService corestore.KVStoreService, addressCodec address.Codec, authority string,
	ak types.AccountKeeper, bk types.BankKeeper, ck types.CollateralKeeper, vk types.ValidatorKeeper, epochs epochref.Epochs,
) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic(errorsmod.Wrapf(err, "gfl: invalid authority %q", authority))
	}
	storeService = unitstore.Wrap(storeService) // a unit's store opened once (unitstore)
	sb := collections.NewSchemaBuilder(storeService)
	operatorOf := func(operator string) (sdk.AccAddress, error) { return addressCodec.StringToBytes(operator) }
	k := Keeper{
		cdc: cdc, storeService: storeService, addressCodec: addressCodec, authority: authority,
		accountKeeper: ak, bankKeeper: bk, collateral: ck, validators: vk, epochs: epochs, hooks: &hooksHolder{},

		Params:  collections.NewItem(sb, types.ParamsKey, "params", codec.CollValue[types.Params](cdc)),
		NodeSeq: collections.NewSequence(sb, types.NodeSeqKey, "node_seq"),
		Nodes: collections.NewIndexedMap(sb, types.NodesKey, "nodes", collections.Uint64Key, codec.CollValue[types.Node](cdc), NodeIndexes{
			ByOperator: indexes.NewMulti(sb, types.NodesByOperatorKey, "nodes_by_operator", sdk.AccAddressKey, collections.Uint64Key,
				func(_ uint64, n types.Node) (sdk.AccAddress, error) { return operatorOf(n.Operator) }),
			ByClass: indexes.NewMulti(sb, types.NodesByClassKey, "nodes_by_class", collections.StringKey, collections.Uint64Key,
				func(_ uint64, n types.Node) (string, error) { return n.GpuClass, nil }),
			ByStatus: indexes.NewMulti(sb, types.NodesByStatusKey, "nodes_by_status", collections.Int32Key, collections.Uint64Key,
				func(_ uint64, n types.Node) (int32, error) { return int32(n.Status), nil }),
		}),
		GpuOwners:    collections.NewMap(sb, types.GpuOwnersKey, "gpu_owners", collections.StringKey, collections.Uint64Value),
		NodeRetireAt: collections.NewKeySet(sb, types.NodeRetireAtKey, "node_retire_at", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		ChallengeSeq: collections.NewSequence(sb, types.ChallengeSeqKey, "challenge_seq"),
		Challenges: collections.NewIndexedMap(sb, types.ChallengesKey, "challenges", collections.Uint64Key, codec.CollValue[types.Challenge](cdc), ChallengeIndexes{
			ByOperator: indexes.NewMulti(sb, types.ChallengesByOperatorKey, "challenges_by_operator", sdk.AccAddressKey, collections.Uint64Key,
				func(_ uint64, c types.Challenge) (sdk.AccAddress, error) { return operatorOf(c.Operator) }),
		}),
		ChallengeQueue:  collections.NewKeySet(sb, types.ChallengeQueueKey, "challenge_queue", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		CommitDeadlines: collections.NewKeySet(sb, types.CommitDeadlinesKey, "commit_deadlines", collections.PairKeyCodec(collkeys.TimeKey, collections.Uint64Key)),
		RevealDeadlines: collections.NewKeySet(sb, types.RevealDeadlinesKey, "reveal_deadlines", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		RoundSeq:        collections.NewSequence(sb, types.RoundSeqKey, "round_seq"),
		Rounds:          collections.NewMap(sb, types.RoundsKey, "rounds", collections.Uint64Key, codec.CollValue[types.ChallengeRound](cdc)),
		OperatorRounds:  collections.NewMap(sb, types.OperatorRoundsKey, "operator_rounds", sdk.AccAddressKey, collections.Uint64Value),
		RoundPulls:      collections.NewKeySet(sb, types.RoundPullsKey, "round_pulls", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		Stats: collections.NewMap(sb, types.StatsKey, "stats", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key),
			codec.CollValue[types.NodeEpochStats](cdc)),
		Rebalance:    collections.NewItem(sb, types.RebalanceKey, "rebalance", codec.CollValue[types.RebalanceState](cdc)),
		NetworkPower: collections.NewItem(sb, types.NetworkPowerKey, "network_power", codec.CollValue[types.NetworkPower](cdc)),
		ClassPower:   collections.NewMap(sb, types.ClassPowerKey, "class_power", collections.StringKey, collections.Uint64Value),
		BlockHashes:  collections.NewMap(sb, types.BlockHashesKey, "block_hashes", collections.Int64Key, collections.BytesValue),
		BlockRounds:  collections.NewMap(sb, types.BlockRoundsKey, "block_rounds", collections.Int64Key, codec.CollValue[types.BlockRound](cdc)),
		RoundBlocks:  collections.NewKeySet(sb, types.RoundBlocksKey, "round_blocks", collections.PairKeyCodec(collections.Uint64Key, collections.Int64Key)),
		DrandRounds:  collections.NewMap(sb, types.DrandRoundsKey, "drand_rounds", collections.Uint64Key, codec.CollValue[types.DrandRound](cdc)),
		Retries:      blockhook.NewRetries(sb, types.ModuleName, types.RetryAttemptsKey, types.RetryDueKey),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// SetHooks sets the hooks of every copy of the keeper; setting them twice is a wiring
// error.
func (k Keeper) SetHooks(h types.GFLHooks) {
	if k.hooks.hooks != nil {
		panic("gfl: hooks already set")
	}
	k.hooks.hooks = h
}

func (k Keeper) gflHooks() types.GFLHooks {
	if k.hooks.hooks == nil {
		return types.MultiGFLHooks{}
	}
	return k.hooks.hooks
}

// Authority returns the address allowed to update params and approve nodes.
func (k Keeper) Authority() string { return k.authority }

// GetParams returns the stored params.
func (k Keeper) GetParams(ctx context.Context) (types.Params, error) {
	return k.Params.Get(ctx)
}

// GetNode returns a node, or ErrNodeNotFound.
func (k Keeper) GetNode(ctx context.Context, id uint64) (types.Node, error) {
	n, err := k.Nodes.Get(ctx, id)
	if err != nil {
		if errorsmod.IsOf(err, collections.ErrNotFound) {
			return n, errorsmod.Wrapf(types.ErrNodeNotFound, "node %d", id)
		}
		return n, err
	}
	return n, nil
}

// operatorAddr decodes a bech32 operator or signer address.
// addressString is the canonical bech32 form of an address (what the module stores and
// compares), or ErrInvalidAddress for an empty one.
func (k Keeper) addressString(field string, addr sdk.AccAddress) (string, error) {
	if len(addr) == 0 {
		return "", errorsmod.Wrapf(types.ErrInvalidAddress, "%s is empty", field)
	}
	s, err := k.addressCodec.BytesToString(addr)
	if err != nil {
		return "", errorsmod.Wrapf(types.ErrInvalidAddress, "%s: %s", field, err)
	}
	return s, nil
}

func (k Keeper) operatorAddr(field, addr string) (sdk.AccAddress, error) {
	bz, err := k.addressCodec.StringToBytes(addr)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddress, "%s %q: %s", field, addr, err)
	}
	return bz, nil
}
