package keepertest

import (
	"context"
	"slices"
	"testing"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// ParamsHarness adapts one module's keeper to RunParamsSuite. P is the module's Params.
type ParamsHarness[P any, PP interface {
	*P
	proto.Message
}] struct {
	// Setup returns a fresh keeper environment with genesis (default params) applied.
	Setup func(t *testing.T) (Env, ParamsKeeper[P])
	// Changed is a valid params value that differs from the default.
	Changed func() P
	// Invalid is a params value that Validate rejects.
	Invalid func() P
	// ErrInvalidAuthority and ErrInvalidParams are the module's registered errors.
	ErrInvalidAuthority error
	ErrInvalidParams    error
	// ParamsUpdatedEvent is the proto name of the module's EventParamsUpdated.
	ParamsUpdatedEvent string
	// FollowingEpoch, for a module that follows an x/epochs epoch, is the default params
	// with its epoch_identifier set; Setup's keeper must know the epochs as Epochs{"flops"}.
	FollowingEpoch func(identifier string) P
}

// Epochs are the epochs x/epochs runs, for a keeper that checks the epoch it follows.
type Epochs []string

// HasEpoch implements epochref.Epochs.
func (e Epochs) HasEpoch(_ context.Context, identifier string) (bool, error) {
	return slices.Contains(e, identifier), nil
}

// ParamsKeeper is what the suite drives.
type ParamsKeeper[P any] struct {
	Update    func(ctx context.Context, authority string, p P) error
	Get       func(ctx context.Context) (P, error)
	Query     func(ctx context.Context) (P, error)
	InitWith  func(ctx context.Context, p P) error
	ExportGet func(ctx context.Context) (P, error)
}

// RunParamsSuite checks, for one module: default genesis stores default params and
// answers the Params query; MsgUpdateParams from the authority stores and announces new
// params; from anyone else, or with invalid params, it fails with the module's error and
// changes nothing; genesis export then import round-trips.
func RunParamsSuite[P any, PP interface {
	*P
	proto.Message
}](t *testing.T, h ParamsHarness[P, PP]) {
	t.Run("default genesis answers the params query", func(t *testing.T) {
		env, k := h.Setup(t)
		got, err := k.Query(env.Ctx)
		require.NoError(t, err)
		stored, err := k.Get(env.Ctx)
		require.NoError(t, err)
		requireSame[P, PP](t, got, stored)
	})

	t.Run("authority updates params and emits the event", func(t *testing.T) {
		env, k := h.Setup(t)
		ctx := env.Ctx.WithEventManager(sdk.NewEventManager())
		changed := h.Changed()
		require.NoError(t, k.Update(ctx, env.Authority, changed))
		got, err := k.Get(ctx)
		require.NoError(t, err)
		requireSame[P, PP](t, changed, got)
		var found bool
		for _, ev := range ctx.EventManager().Events() {
			found = found || ev.Type == h.ParamsUpdatedEvent
		}
		require.True(t, found, "event %s not emitted", h.ParamsUpdatedEvent)
	})

	t.Run("non-authority cannot update params and nothing changes", func(t *testing.T) {
		env, k := h.Setup(t)
		before, err := k.Get(env.Ctx)
		require.NoError(t, err)
		err = k.Update(env.Ctx, Addr("mallory"), h.Changed())
		require.ErrorIs(t, err, h.ErrInvalidAuthority)
		after, err := k.Get(env.Ctx)
		require.NoError(t, err)
		requireSame[P, PP](t, before, after)
	})

	t.Run("authority with invalid params is rejected and nothing changes", func(t *testing.T) {
		env, k := h.Setup(t)
		before, err := k.Get(env.Ctx)
		require.NoError(t, err)
		err = k.Update(env.Ctx, env.Authority, h.Invalid())
		require.ErrorIs(t, err, h.ErrInvalidParams)
		after, err := k.Get(env.Ctx)
		require.NoError(t, err)
		requireSame[P, PP](t, before, after)
	})

	if h.FollowingEpoch != nil {
		t.Run("an epoch x/epochs does not run is rejected and nothing changes", func(t *testing.T) {
			env, k := h.Setup(t)
			before, err := k.Get(env.Ctx)
			require.NoError(t, err)
			err = k.Update(env.Ctx, env.Authority, h.FollowingEpoch("flopz"))
			require.ErrorIs(t, err, h.ErrInvalidParams)
			require.ErrorContains(t, err, `epoch_identifier "flopz": x/epochs runs no such epoch`)
			after, err := k.Get(env.Ctx)
			require.NoError(t, err)
			requireSame[P, PP](t, before, after)
			require.NoError(t, k.Update(env.Ctx, env.Authority, h.FollowingEpoch("flops")))
		})
	}

	t.Run("genesis export then import round-trips", func(t *testing.T) {
		env, k := h.Setup(t)
		changed := h.Changed()
		require.NoError(t, k.InitWith(env.Ctx, changed))
		exported, err := k.ExportGet(env.Ctx)
		require.NoError(t, err)
		requireSame[P, PP](t, changed, exported)

		env2, k2 := h.Setup(t)
		require.NoError(t, k2.InitWith(env2.Ctx, exported))
		again, err := k2.ExportGet(env2.Ctx)
		require.NoError(t, err)
		requireSame[P, PP](t, exported, again)
	})
}

// BadParamCase is one rejected params value: the mutation and the field the error must
// name.
type BadParamCase[P any] struct {
	Field  string
	Mutate func(p *P)
}

// Bad builds a BadParamCase.
func Bad[P any](field string, mutate func(p *P)) BadParamCase[P] {
	return BadParamCase[P]{Field: field, Mutate: mutate}
}

// RunBadParams checks that the defaults validate and that every case is rejected with
// errInvalid and an error message naming its field.
func RunBadParams[P any](t *testing.T, defaults func() P, validate func(P) error, errInvalid error, cases []BadParamCase[P]) {
	t.Helper()
	require.NoError(t, validate(defaults()), "default params must validate")
	for _, tc := range cases {
		t.Run(tc.Field, func(t *testing.T) {
			p := defaults()
			tc.Mutate(&p)
			err := validate(p)
			require.ErrorIs(t, err, errInvalid)
			require.Contains(t, err.Error(), tc.Field)
		})
	}
}

// requireSame compares two messages by their deterministic encoding: gogoproto's Equal
// does not understand customtype fields (math.Int, math.LegacyDec).
func requireSame[P any, PP interface {
	*P
	proto.Message
}](t *testing.T, want, got P) {
	t.Helper()
	wb, err := proto.Marshal(PP(&want))
	require.NoError(t, err)
	gb, err := proto.Marshal(PP(&got))
	require.NoError(t, err)
	require.Equal(t, wb, gb, "want %v\ngot  %v", PP(&want), PP(&got))
}
