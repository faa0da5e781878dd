package keeper_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"cosmossdk.io/collections"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// fakeBank is a small x/bank that really moves balances and supply. It keeps them in the
// test's (in-memory) store under prefixes the module never uses, so cache contexts roll
// its writes back together with the keeper's: a failed payout or slash leaves no half-paid
// balances behind, as with the real bank.
type fakeBank struct {
	balances collections.Map[collections.Pair[sdk.AccAddress, string], sdkmath.Int]
	supply   collections.Map[string, sdkmath.Int]
	// blocked addresses refuse incoming module sends (as bank's blocked addrs do).
	blocked map[string]bool
	// panicOnSendTo makes a module send to this address panic, to test recovery.
	panicOnSendTo sdk.AccAddress
}

var _ types.BankKeeper = (*fakeBank)(nil)

func newFakeBank(storeService corestore.KVStoreService) *fakeBank {
	sb := collections.NewSchemaBuilder(storeService)
	b := &fakeBank{
		balances: collections.NewMap(sb, collections.NewPrefix(200), "fake_balances",
			collections.PairKeyCodec(sdk.AccAddressKey, collections.StringKey), sdk.IntValue),
		supply:  collections.NewMap(sb, collections.NewPrefix(201), "fake_supply", collections.StringKey, sdk.IntValue),
		blocked: map[string]bool{},
	}
	if _, err := sb.Build(); err != nil {
		panic(err)
	}
	return b
}

func moduleAddr(name string) sdk.AccAddress { return authtypes.NewModuleAddress(name) }

func (b *fakeBank) GetBalance(ctx context.Context, addr sdk.AccAddress, denom string) sdk.Coin {
	v, err := b.balances.Get(ctx, collections.Join(addr, denom))
	if err != nil {
		return sdk.NewCoin(denom, sdkmath.ZeroInt())
	}
	return sdk.NewCoin(denom, v)
}

func (b *fakeBank) Supply(ctx context.Context, denom string) sdkmath.Int {
	v, err := b.supply.Get(ctx, denom)
	if err != nil {
		return sdkmath.ZeroInt()
	}
	return v
}

// add changes a balance and the supply by delta per coin; it refuses (before writing) to
// take a balance below zero.
func (b *fakeBank) add(ctx context.Context, addr sdk.AccAddress, amt sdk.Coins, sign int64, changeSupply bool) error {
	if !amt.IsValid() {
		return errorsmod.Wrapf(sdkerrors.ErrInvalidCoins, "%s", amt)
	}
	if sign < 0 {
		for _, c := range amt {
			if have := b.GetBalance(ctx, addr, c.Denom); have.Amount.LT(c.Amount) {
				return errorsmod.Wrapf(sdkerrors.ErrInsufficientFunds, "%s has %s, needs %s", addr, have, c)
			}
		}
	}
	for _, c := range amt {
		delta := c.Amount.MulRaw(sign)
		bal := b.GetBalance(ctx, addr, c.Denom).Amount.Add(delta)
		if err := b.balances.Set(ctx, collections.Join(addr, c.Denom), bal); err != nil {
			return err
		}
		if changeSupply {
			if err := b.supply.Set(ctx, c.Denom, b.Supply(ctx, c.Denom).Add(delta)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *fakeBank) send(ctx context.Context, from, to sdk.AccAddress, amt sdk.Coins) error {
	if !amt.IsValid() {
		return errorsmod.Wrapf(sdkerrors.ErrInvalidCoins, "%s", amt)
	}
	for _, c := range amt {
		if have := b.GetBalance(ctx, from, c.Denom); have.Amount.LT(c.Amount) {
			return errorsmod.Wrapf(sdkerrors.ErrInsufficientFunds, "%s has %s, needs %s", from, have, c)
		}
	}
	if err := b.add(ctx, from, amt, -1, false); err != nil {
		return err
	}
	return b.add(ctx, to, amt, 1, false)
}

func (b *fakeBank) SendCoinsFromAccountToModule(ctx context.Context, from sdk.AccAddress, module string, amt sdk.Coins) error {
	return b.send(ctx, from, moduleAddr(module), amt)
}

func (b *fakeBank) SendCoinsFromModuleToAccount(ctx context.Context, module string, to sdk.AccAddress, amt sdk.Coins) error {
	if b.blocked[string(to)] {
		return errorsmod.Wrapf(sdkerrors.ErrUnauthorized, "%s is not allowed to receive funds", to)
	}
	if b.panicOnSendTo != nil && to.Equals(b.panicOnSendTo) {
		panic(fmt.Sprintf("fake bank: panic on send to %s", to))
	}
	return b.send(ctx, moduleAddr(module), to, amt)
}

func (b *fakeBank) BurnCoins(ctx context.Context, module string, amt sdk.Coins) error {
	return b.add(ctx, moduleAddr(module), amt, -1, true)
}

// Mint creates coins in addr's account (test funding, or tampering behind the keeper's
// back).
func (b *fakeBank) Mint(ctx context.Context, addr sdk.AccAddress, amt sdk.Coins) error {
	return b.add(ctx, addr, amt, 1, true)
}

// Snapshot renders every balance and the supply, sorted, for before/after comparisons.
func (b *fakeBank) Snapshot(ctx context.Context) string {
	var lines []string
	if err := b.balances.Walk(ctx, nil, func(k collections.Pair[sdk.AccAddress, string], v sdkmath.Int) (bool, error) {
		lines = append(lines, fmt.Sprintf("%s %s%s", k.K1(), v, k.K2()))
		return false, nil
	}); err != nil {
		panic(err)
	}
	if err := b.supply.Walk(ctx, nil, func(d string, v sdkmath.Int) (bool, error) {
		lines = append(lines, fmt.Sprintf("supply %s%s", v, d))
		return false, nil
	}); err != nil {
		panic(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
