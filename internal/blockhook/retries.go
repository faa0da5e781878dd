package blockhook

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/hashicorp/go-metrics"

	"cosmossdk.io/collections"

	"github.com/cosmos/cosmos-sdk/telemetry"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// A block hook's item that fails is neither dropped nor retried forever. Its queue entry
// moves to the module's Retries, due again 1, 2, 4, 8 blocks later; after MaxAttempts
// failures the module resolves it by its kind's documented rule (a refund, a release of
// exposure, a payout skipped with its amount kept in the pool) so that nothing stays
// locked; a resolution that fails as well marks the item stuck, retried every MaxBackoff
// blocks with an event each time (a bug to report, never a silent loss). Every failure
// emits EventItemFailed and counts in the "flops_block_item_failed" telemetry counter.

const (
	// MaxAttempts is the number of failed attempts after which an item is resolved.
	MaxAttempts = 5
	// MaxBackoff is the longest wait between attempts, in blocks (a stuck item's period).
	MaxBackoff = 64
)

// Item names a queued item: its kind (the queue it came from) and its ids (a task, job,
// node... id; Sub is a second id where the queue needs one, e.g. a pool's unit; Addr an
// account where the queue is keyed by one, e.g. a provider's payout).
type Item struct {
	Kind    string
	ID, Sub uint64
	Addr    []byte
}

// Ref encodes an item's ids: ID and Sub big-endian, then Addr.
func (it Item) Ref() []byte {
	b := make([]byte, 16, 16+len(it.Addr))
	binary.BigEndian.PutUint64(b[:8], it.ID)
	binary.BigEndian.PutUint64(b[8:], it.Sub)
	return append(b, it.Addr...)
}

// account is the item's account as an address string, or "".
func (it Item) account() string {
	if len(it.Addr) == 0 {
		return ""
	}
	return sdk.AccAddress(it.Addr).String()
}

func itemOf(kind string, ref []byte) Item {
	it := Item{Kind: kind}
	if len(ref) >= 16 {
		it.ID, it.Sub = binary.BigEndian.Uint64(ref[:8]), binary.BigEndian.Uint64(ref[8:16])
		if len(ref) > 16 {
			it.Addr = append([]byte(nil), ref[16:]...)
		}
	}
	return it
}

// Retries is a module's record of its failed block-hook items: the attempts of each, and
// the height each runs again at.
type Retries struct {
	module   string
	Attempts collections.Map[collections.Pair[string, []byte], uint32]
	Due      collections.KeySet[collections.Triple[int64, string, []byte]]
}

// NewRetries adds a module's retry collections to its schema under two prefixes of its
// own.
func NewRetries(sb *collections.SchemaBuilder, module string, attempts, due collections.Prefix) Retries {
	return Retries{
		module: module,
		Attempts: collections.NewMap(sb, attempts, "retry_attempts",
			collections.PairKeyCodec(collections.StringKey, collections.BytesKey), collections.Uint32Value),
		Due: collections.NewKeySet(sb, due, "retry_due",
			collections.TripleKeyCodec(collections.Int64Key, collections.StringKey, collections.BytesKey)),
	}
}

func (r Retries) key(it Item) collections.Pair[string, []byte] {
	return collections.Join(it.Kind, it.Ref())
}

// due is an item's key in the due queue.
func due(at int64, it Item) collections.Triple[int64, string, []byte] {
	return collections.Join3(at, it.Kind, it.Ref())
}

// Attempt is the number of failed attempts of an item so far (0: none).
func (r Retries) Attempt(ctx sdk.Context, it Item) (uint32, error) {
	n, err := r.Attempts.Get(ctx, r.key(it))
	if errors.Is(err, collections.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// Backoff is the wait after the n-th failed attempt: 2^(n-1) blocks, at most MaxBackoff.
func Backoff(n uint32) int64 {
	if n == 0 {
		return 1
	}
	if n > 7 {
		return MaxBackoff
	}
	return min(int64(1)<<(n-1), MaxBackoff)
}

// Failed records a failed attempt of an item (its queue entry already removed by the
// caller) and schedules it again: after its backoff, or, once it has failed MaxAttempts
// times, at this height for the retry pass to resolve by its kind's rule. It returns
// whether the item is to be resolved.
func (r Retries) Failed(ctx sdk.Context, it Item, cause error) (bool, error) {
	n, err := r.Attempt(ctx, it)
	if err != nil {
		return false, err
	}
	if n < math.MaxUint32 {
		n++
	}
	if err := r.Attempts.Set(ctx, r.key(it), n); err != nil {
		return false, err
	}
	r.count("failed", it)
	exhausted := n >= MaxAttempts
	at := ctx.BlockHeight() + Backoff(n)
	if exhausted {
		at = ctx.BlockHeight()
	}
	if err := r.Due.Set(ctx, due(at, it)); err != nil {
		return false, err
	}
	return exhausted, ctx.EventManager().EmitTypedEvent(&EventItemFailed{
		Module: r.module, Kind: it.Kind, Id: it.ID, Sub: it.Sub, Account: it.account(), Attempt: n, RetryHeight: at, Error: errString(cause),
	})
}

// Record counts a failed attempt of an item that its module re-queues itself (with a
// back-off of its own, e.g. a later completion time), emits EventItemFailed with the
// height it is retried at (0: not known as a height) and returns the attempt's number.
func (r Retries) Record(ctx sdk.Context, it Item, retryHeight int64, cause error) (uint32, error) {
	n, err := r.Attempt(ctx, it)
	if err != nil {
		return 0, err
	}
	if n < math.MaxUint32 {
		n++
	}
	if err := r.Attempts.Set(ctx, r.key(it), n); err != nil {
		return 0, err
	}
	r.count("failed", it)
	return n, ctx.EventManager().EmitTypedEvent(&EventItemFailed{
		Module: r.module, Kind: it.Kind, Id: it.ID, Sub: it.Sub, Account: it.account(), Attempt: n, RetryHeight: retryHeight, Error: errString(cause),
	})
}

// Again puts an item back in the retry queue for the next block without counting an
// attempt (a retried item that made progress and has more to do).
func (r Retries) Again(ctx sdk.Context, it Item) error {
	return r.Due.Set(ctx, due(ctx.BlockHeight()+1, it))
}

// Succeeded forgets an item's failures.
func (r Retries) Succeeded(ctx sdk.Context, it Item) error {
	return r.Attempts.Remove(ctx, r.key(it))
}

// Resolved forgets an item resolved by its kind's rule and says so.
func (r Retries) Resolved(ctx sdk.Context, it Item, rule string, cause error) error {
	if err := r.Attempts.Remove(ctx, r.key(it)); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&EventItemResolved{
		Module: r.module, Kind: it.Kind, Id: it.ID, Sub: it.Sub, Account: it.account(), Rule: rule, Error: errString(cause),
	})
}

// Stuck keeps an item whose resolution failed: due again in MaxBackoff blocks.
func (r Retries) Stuck(ctx sdk.Context, it Item, cause error) error {
	if err := r.Due.Set(ctx, due(ctx.BlockHeight()+MaxBackoff, it)); err != nil {
		return err
	}
	r.count("stuck", it)
	return ctx.EventManager().EmitTypedEvent(&EventItemStuck{Module: r.module, Kind: it.Kind, Id: it.ID, Sub: it.Sub, Account: it.account(), Error: errString(cause)})
}

// DueKeys reads up to limit items due at or before the block's height, oldest first.
func (r Retries) DueKeys(ctx sdk.Context, limit int) ([]collections.Triple[int64, string, []byte], error) {
	rng := new(collections.Range[collections.Triple[int64, string, []byte]]).
		EndExclusive(collections.Join3(ctx.BlockHeight()+1, "", []byte{}))
	it, err := r.Due.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	var out []collections.Triple[int64, string, []byte]
	for ; it.Valid() && len(out) < limit; it.Next() {
		k, err := it.Key()
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// count adds one to the flops_block_item_<what> telemetry counter of the module and kind
// (the SDK's go-metrics telemetry, which flopsd serves on its Prometheus endpoint).
func (r Retries) count(what string, it Item) {
	telemetry.IncrCounterWithLabels([]string{"flops", "block_item", what}, 1, //nolint:staticcheck // the SDK's telemetry is what flopsd serves
		[]metrics.Label{{Name: "module", Value: r.module}, {Name: "kind", Value: it.Kind}})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return s
}

// Export reads the retries for genesis.
func (r Retries) Export(ctx context.Context) (RetryState, error) {
	st := RetryState{Attempts: []RetryAttempt{}, Due: []RetryDue{}}
	if err := r.Attempts.Walk(ctx, nil, func(k collections.Pair[string, []byte], n uint32) (bool, error) {
		st.Attempts = append(st.Attempts, RetryAttempt{Kind: k.K1(), Ref: k.K2(), Attempts: n})
		return false, nil
	}); err != nil {
		return st, err
	}
	err := r.Due.Walk(ctx, nil, func(k collections.Triple[int64, string, []byte]) (bool, error) {
		st.Due = append(st.Due, RetryDue{Height: k.K1(), Kind: k.K2(), Ref: k.K3()})
		return false, nil
	})
	return st, err
}

// Import writes the retries of a genesis (validated by Validate).
func (r Retries) Import(ctx context.Context, st RetryState) error {
	for _, a := range st.Attempts {
		if err := r.Attempts.Set(ctx, collections.Join(a.Kind, a.Ref), a.Attempts); err != nil {
			return err
		}
	}
	for _, d := range st.Due {
		if err := r.Due.Set(ctx, collections.Join3(d.Height, d.Kind, d.Ref)); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a genesis's retries: every kind one of the module's, every ref well
// formed, every attempt count positive, no item twice.
func (st RetryState) Validate(kinds ...string) error {
	known := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		known[k] = true
	}
	check := func(what string, i int, kind string, ref []byte) error {
		if !known[kind] {
			return fmt.Errorf("retries.%s[%d]: unknown kind %q", what, i, kind)
		}
		if len(ref) < 16 {
			return fmt.Errorf("retries.%s[%d]: ref of %d bytes, want at least 16", what, i, len(ref))
		}
		return nil
	}
	seen := make(map[string]bool, len(st.Attempts))
	for i, a := range st.Attempts {
		if err := check("attempts", i, a.Kind, a.Ref); err != nil {
			return err
		}
		if a.Attempts == 0 {
			return fmt.Errorf("retries.attempts[%d]: zero attempts", i)
		}
		key := a.Kind + "\x00" + string(a.Ref)
		if seen[key] {
			return fmt.Errorf("retries.attempts[%d]: %s item recorded twice", i, a.Kind)
		}
		seen[key] = true
	}
	for i, d := range st.Due {
		if err := check("due", i, d.Kind, d.Ref); err != nil {
			return err
		}
		if d.Height < 0 {
			return fmt.Errorf("retries.due[%d]: negative height %d", i, d.Height)
		}
	}
	return nil
}
