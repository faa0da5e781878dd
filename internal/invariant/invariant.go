// Package invariant is flops' registry of accounting invariants (escrow, collateral,
// reward pool, ugfl supply). The SDK v0.54 module manager no longer collects invariants
// (x/crisis left the SDK), so modules register theirs here; the app asserts them every
// --inv-check-period blocks and tests assert them after every scenario.
package invariant

import (
	"fmt"
	"strings"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Invariant checks one accounting property. It returns a description and whether the
// property is broken; it must not write state.
type Invariant func(ctx sdk.Context) (msg string, broken bool)

// Registrar is what a module's RegisterInvariants receives.
type Registrar interface {
	Register(module, route string, inv Invariant)
}

// Route is one registered invariant.
type Route struct {
	Module string
	Route  string
	Check  Invariant
}

// FullRoute is "module/route".
func (r Route) FullRoute() string { return r.Module + "/" + r.Route }

// Set is an ordered registry of invariants.
type Set struct {
	routes []Route
}

var _ Registrar = (*Set)(nil)

// Register adds an invariant; routes keep registration order.
func (s *Set) Register(module, route string, inv Invariant) {
	s.routes = append(s.routes, Route{Module: module, Route: route, Check: inv})
}

// Routes returns the registered invariants in registration order.
func (s *Set) Routes() []Route { return s.routes }

// AssertAll runs every invariant on a cache of ctx and returns an error listing the broken
// ones, or nil.
func (s *Set) AssertAll(ctx sdk.Context) error {
	var broken []string
	for _, r := range s.routes {
		cacheCtx, _ := ctx.CacheContext()
		if msg, bad := r.Check(cacheCtx); bad {
			broken = append(broken, fmt.Sprintf("%s: %s", r.FullRoute(), msg))
		}
	}
	if len(broken) > 0 {
		return fmt.Errorf("broken invariants:\n%s", strings.Join(broken, "\n"))
	}
	return nil
}

// Format renders an invariant's message in the SDK's usual shape.
func Format(module, route, msg string, broken bool) string {
	state := "invariant holds"
	if broken {
		state = "invariant broken"
	}
	return fmt.Sprintf("%s: %s %s\n%s\n", module, route, state, msg)
}
