package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account.
	ModuleName = "stakingslash"
	// StoreKey is the KV store key. Not the module name: multistore keys may not be
	// prefixes of one another, and "staking" is a prefix of "stakingslash".
	StoreKey = "collateral"
	// InvariantCollateral is the route of the collateral accounting invariant.
	InvariantCollateral = "collateral"
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey = collections.NewPrefix(0)
	// CollateralsKey: provider -> Collateral.
	CollateralsKey = collections.NewPrefix(1)
	// UnbondingsKey: (provider, unbonding id) -> UnbondingEntry.
	UnbondingsKey = collections.NewPrefix(2)
	// UnbondingsByCompletionKey: (completion time, (provider, unbonding id)), the maturity
	// queue EndBlock walks.
	UnbondingsByCompletionKey = collections.NewPrefix(3)
	// SlashesKey: (provider, slash id) -> SlashRecord, the slash history.
	SlashesKey = collections.NewPrefix(4)
	// UnbondingSeqKey and SlashSeqKey hold the next ids.
	UnbondingSeqKey = collections.NewPrefix(5)
	SlashSeqKey     = collections.NewPrefix(6)
	// TotalBondedKey and TotalUnbondingKey hold the running totals, udps: the sum of every
	// provider's bonded collateral and of every open unbonding entry.
	TotalBondedKey    = collections.NewPrefix(7)
	TotalUnbondingKey = collections.NewPrefix(8)
	// RetryAttemptsKey and RetryDueKey hold the block hook's failed items
	// (internal/blockhook.Retries): the attempts of each payout that failed.
	RetryAttemptsKey = collections.NewPrefix(9)
	RetryDueKey      = collections.NewPrefix(10)
	// SlashExpiryKey: (expiry height, provider, slash id), the slash records to delete.
	SlashExpiryKey = collections.NewPrefix(11)
)

// ItemMature is the kind of the module's block-hook item: an unbonding entry paid out
// at its completion time.
const ItemMature = "mature"

// ItemKinds lists the kinds of the module's block-hook items.
var ItemKinds = []string{ItemMature}
