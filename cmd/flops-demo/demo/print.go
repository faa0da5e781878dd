//go:build unix

package demo

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	sdkmath "cosmossdk.io/math"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
)

// dps formats udps as DPS with six decimals.
func dps(udps sdkmath.Int) string {
	if udps.IsNil() {
		return "0 DPS"
	}
	neg := udps.IsNegative()
	a := udps.Abs()
	whole, frac := a.QuoRaw(1_000_000), a.ModRaw(1_000_000)
	s := fmt.Sprintf("%s.%06d DPS", whole, frac.Int64())
	if neg {
		s = "-" + s
	}
	return s
}

func addrOf(k cryptotypes.PrivKey) string { return sdk.AccAddress(k.PubKey().Address()).String() }

func moduleAddr(name string) string { return authtypes.NewModuleAddress(name).String() }

var balanceRows = []string{"client", "provider1", "provider2", "reward pool", "validators (fees)"}

// printSummary prints the money, the reputation table and the epoch's rewards.
func (d *Demo) printSummary() {
	s := d.sum
	w := d.out
	pf(w, "\n==== summary (%.0f s) ====\n", s.Wall.Seconds())
	gpus := "NVML"
	if s.MockGPUs {
		gpus = "mock GPUs (no NVIDIA GPU on this machine)"
	}
	pf(w, "GPUs: %s\n\nnodes (GFL index after the first epoch: %d GFLOP/s in all)\n", gpus, s.NetworkGflops)
	pf(w, "  %-10s %-5s %-14s %-16s %s\n", "provider", "node", "GPUs", "bonded", "verified GFLOP/s")
	for _, n := range s.Nodes {
		pf(w, "  %-10s %-5d %-14s %-16s %d\n", n.Provider, n.ID, fmt.Sprintf("%d x %s", n.GPUs, n.Class), dps(n.Bonded), n.PowerGflops)
	}
	pf(w, "\njobs\n")
	for _, j := range s.Jobs {
		paid := sdkmath.ZeroInt()
		var nodes []string
		for _, t := range j.Tasks {
			if !t.Paid.IsNil() {
				paid = paid.Add(t.Paid)
			}
			nodes = append(nodes, fmt.Sprintf("t%d->node %d", t.Id, t.NodeId))
		}
		pf(w, "  job %-3d %-8s %-20s %s; providers paid %s\n", j.ID, strings.TrimPrefix(j.Mode.String(), "ALLOCATION_MODE_"),
			strings.TrimPrefix(j.Status.String(), "JOB_STATUS_"), strings.Join(nodes, ", "), dps(paid))
	}
	var by []string
	for _, name := range []string{"provider1", "provider2"} {
		by = append(by, fmt.Sprintf("%s %d", name, s.Pool.PaidBy[name]))
	}
	pf(w, "  pool %-2d %-8s %-20s %d/%d units paid (%s)\n", s.Pool.ID, "POOL", strings.TrimPrefix(s.Pool.Status.String(), "POOL_STATUS_"),
		s.Pool.PaidUnits, s.Pool.Units, strings.Join(by, ", "))
	pf(w, "\nfetched task %d as its owner: %d file(s) in %s, result root checked against the chain\n", s.Fetched.TaskID, s.Fetched.Files, s.Fetched.Dir)

	pf(w, "\nbalances (udps)                before            after           change\n")
	for _, k := range balanceRows {
		b, a := s.Before[k], s.After[k]
		if b.IsNil() || a.IsNil() {
			continue
		}
		pf(w, "  %-18s %16s %16s %16s\n", k, b, a, signed(a.Sub(b)))
	}
	pf(w, "  (providers: task payments and pool credits minus fees, plus the epoch's DPS rewards; the client: the jobs' cost and fees)\n")

	sp := s.ScoreParams
	pf(w, "\nreputation (S = %s accuracy + %s responsiveness + %s previous)\n", short(sp.Alpha), short(sp.Beta), short(sp.Gamma))
	pf(w, "  %-5s %-10s %-8s %-8s %-8s\n", "node", "provider", "score", "A", "R")
	for _, sc := range s.Scores {
		name := sc.Operator
		for _, n := range s.Nodes {
			if n.ID == sc.NodeId {
				name = n.Provider
			}
		}
		pf(w, "  %-5d %-10s %-8s %-8s %-8s\n", sc.NodeId, name, sc.Score.String()[:6], sc.Accuracy.String()[:6], sc.Responsiveness.String()[:6])
	}
	e := s.Emission
	pf(w, "\nepoch %d rewards: emission %s (availability %s, work %s), paid %s, remainder %s kept in the pool\n",
		e.Epoch, dps(e.Emission), dps(e.Availability), dps(e.Work), dps(e.PaidAvailability.Add(e.PaidWork)), dps(e.Remainder))
	for _, name := range []string{"provider1", "provider2"} {
		r, ok := s.Rewards[name]
		if !ok {
			pf(w, "  %-10s nothing this epoch\n", name)
			continue
		}
		pf(w, "  %-10s availability %s + work %s\n", name, dps(r.Availability), dps(r.Work))
	}
	if e.NodesPricedOut > 0 {
		pf(w, "  %d node(s) asked more per GPU-hour than their GPU class's cap: no availability for them (x/dps, \"Priced out\")\n", e.NodesPricedOut)
	}
	if s.WorkerCrashed != "" {
		pf(w, "\n%s's worker was killed (SIGKILL) with a task in flight and started again; its work settled\n", s.WorkerCrashed)
	}
	if s.ChainCrashed {
		pf(w, "\nevery validator was killed (SIGKILL) and started again on its home; the market went on\n")
	}
	if s.Killed > 0 {
		pf(w, "\nvalidator node%d was killed mid-run; the other validators kept settling\n", s.Killed)
	}
}

// printNext says where things are and what to try.
func (d *Demo) printNext() {
	w := d.out
	flopsd := d.bin("flopsd")
	home := filepath.Join(d.chainHome(), "node0")
	pf(w, `
The chain and both workers keep running. Ctrl-C stops them all.
%s  logs       %s
  gRPC       %s
  REST       %s   (e.g. %s/flops/market/v1/params)
  RPC        %s
  metrics    http://127.0.0.1:%d/metrics  http://127.0.0.1:%d/metrics

Try next:
  %s q market jobs-by-owner %s --node %s
  %s tx market submit-job examples/job.yaml --from client --home %s --keyring-backend test --chain-id flops-local-1 --node %s --gas auto --gas-adjustment 1.5 --yes
  %s status --home %s
`, d.webLine(), d.logs(), d.grpcAddr(), d.restURL(), d.restURL(), d.rpcURL(), d.port(9471), d.port(9472),
		flopsd, addrOf(d.keys["client"]), d.rpcURL(),
		flopsd, home, d.rpcURL(),
		d.bin("flops-worker"), filepath.Join(d.o.Home, "provider1"))
}

func signed(i sdkmath.Int) string {
	if i.IsNegative() {
		return i.String()
	}
	return "+" + i.String()
}

// pf prints to the demo's output; a terminal that went away is not the demo's failure.
func pf(w io.Writer, format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }

// short is a LegacyDec without its trailing zeros.
func short(d sdkmath.LegacyDec) string {
	if d.IsNil() {
		return "?"
	}
	return strings.TrimRight(strings.TrimRight(d.String(), "0"), ".")
}

// webLine is the dashboard's line of printNext.
func (d *Demo) webLine() string {
	if d.sum.WebURL == "" {
		return "  dashboard  not built: make web, then run the demo again\n"
	}
	return fmt.Sprintf("  dashboard  %s   (Client: \"Use the local test key\" signs as a funded account)\n", d.sum.WebURL)
}
