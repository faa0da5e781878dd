package keepertest

import (
	"context"
	"fmt"
	"sort"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
)

// Bank is an in-memory bank for keeper tests: balances, supply, module accounts, mint and
// burn, with the SDK's failure modes (insufficient funds). It is deterministic: listings
// are sorted.
type Bank struct {
	balances map[string]sdk.Coins
	supply   sdk.Coins
	// Calls counts operations by name, for tests that bound the bank work of a step.
	Calls map[string]int
}

// NewBank returns an empty bank.
func NewBank() *Bank { return &Bank{balances: map[string]sdk.Coins{}, Calls: map[string]int{}} }

func (b *Bank) add(addr sdk.AccAddress, amt sdk.Coins) {
	b.balances[addr.String()] = b.balances[addr.String()].Add(amt...)
}

func (b *Bank) sub(addr sdk.AccAddress, amt sdk.Coins) error {
	bal := b.balances[addr.String()]
	res, neg := bal.SafeSub(amt...)
	if neg {
		return fmt.Errorf("insufficient funds: %s has %s, needs %s", addr, bal, amt)
	}
	b.balances[addr.String()] = res
	return nil
}

// Fund credits an account and the supply (genesis funding).
func (b *Bank) Fund(addr sdk.AccAddress, amt sdk.Coins) {
	b.add(addr, amt)
	b.supply = b.supply.Add(amt...)
}

// FundModule credits a module account and the supply.
func (b *Bank) FundModule(module string, amt sdk.Coins) {
	b.Fund(authtypes.NewModuleAddress(module), amt)
}

// MintCoins implements the bank keeper.
func (b *Bank) MintCoins(_ context.Context, module string, amt sdk.Coins) error {
	b.Calls["MintCoins"]++
	b.Fund(authtypes.NewModuleAddress(module), amt)
	return nil
}

// BurnCoins implements the bank keeper.
func (b *Bank) BurnCoins(_ context.Context, module string, amt sdk.Coins) error {
	b.Calls["BurnCoins"]++
	if err := b.sub(authtypes.NewModuleAddress(module), amt); err != nil {
		return err
	}
	b.supply = b.supply.Sub(amt...)
	return nil
}

// SendCoins implements the bank keeper.
func (b *Bank) SendCoins(_ context.Context, from, to sdk.AccAddress, amt sdk.Coins) error {
	b.Calls["SendCoins"]++
	if err := b.sub(from, amt); err != nil {
		return err
	}
	b.add(to, amt)
	return nil
}

// SendCoinsFromModuleToAccount implements the bank keeper.
func (b *Bank) SendCoinsFromModuleToAccount(ctx context.Context, module string, to sdk.AccAddress, amt sdk.Coins) error {
	return b.SendCoins(ctx, authtypes.NewModuleAddress(module), to, amt)
}

// SendCoinsFromAccountToModule implements the bank keeper.
func (b *Bank) SendCoinsFromAccountToModule(ctx context.Context, from sdk.AccAddress, module string, amt sdk.Coins) error {
	return b.SendCoins(ctx, from, authtypes.NewModuleAddress(module), amt)
}

// SendCoinsFromModuleToModule implements the bank keeper.
func (b *Bank) SendCoinsFromModuleToModule(ctx context.Context, from, to string, amt sdk.Coins) error {
	return b.SendCoins(ctx, authtypes.NewModuleAddress(from), authtypes.NewModuleAddress(to), amt)
}

// GetBalance implements the bank keeper.
func (b *Bank) GetBalance(_ context.Context, addr sdk.AccAddress, denom string) sdk.Coin {
	return sdk.NewCoin(denom, b.balances[addr.String()].AmountOf(denom))
}

// GetAllBalances implements the bank keeper.
func (b *Bank) GetAllBalances(_ context.Context, addr sdk.AccAddress) sdk.Coins {
	return b.balances[addr.String()]
}

// SpendableCoins implements the bank keeper (nothing is locked).
func (b *Bank) SpendableCoins(ctx context.Context, addr sdk.AccAddress) sdk.Coins {
	return b.GetAllBalances(ctx, addr)
}

// GetSupply implements the bank keeper.
func (b *Bank) GetSupply(_ context.Context, denom string) sdk.Coin {
	return sdk.NewCoin(denom, b.supply.AmountOf(denom))
}

// Balance is a test shorthand.
func (b *Bank) Balance(addr sdk.AccAddress, denom string) sdkmath.Int {
	return b.balances[addr.String()].AmountOf(denom)
}

// ModuleBalance is a test shorthand.
func (b *Bank) ModuleBalance(module, denom string) sdkmath.Int {
	return b.Balance(authtypes.NewModuleAddress(module), denom)
}

// Holders lists the addresses holding a denom, sorted.
func (b *Bank) Holders(denom string) []string {
	var out []string
	for addr, c := range b.balances {
		if c.AmountOf(denom).IsPositive() {
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out
}
