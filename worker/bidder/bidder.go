// Package bidder prices a provider's bids in AUCTION jobs: a policy decides the price per
// task before anything is reserved; the agent then places the bid (which locks the bid
// deposit on chain) or passes.
package bidder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"syscall"
	"time"

	sdkmath "cosmossdk.io/math"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Offer is what the policy knows when it prices a job for one node.
type Offer struct {
	Job markettypes.Job `json:"job"`
	// GpuClass of the node that would run the tasks.
	GpuClass string `json:"gpu_class"`
	// GPUs of the node, and how many are in use now.
	GPUs     uint32 `json:"gpus"`
	GPUsUsed uint32 `json:"gpus_used"`
}

// Bid is a policy's answer: a price per task (udps) and how many tasks; Quantity 0 means
// no bid.
type Bid struct {
	Price    sdkmath.Int `json:"price"`
	Quantity uint32      `json:"quantity"`
	Reason   string      `json:"reason,omitempty"`
}

// Policy prices an offer.
type Policy interface {
	Price(ctx context.Context, o Offer) (Bid, error)
}

// Ask is the built-in policy: the ask per GPU-hour of the node's class (or the default
// ask), times the GPUs a task needs and its max duration, raised by LoadMarkup for each
// tenth of the node already in use, never above the job's max price, and for as many
// tasks as the node has free GPUs for.
type Ask struct {
	// PerGPUHour by GPU class, in udps; Default when the class is not listed.
	PerGPUHour map[string]sdkmath.Int
	Default    sdkmath.Int
	// LoadMarkupPPM is added per 10% of the node's GPUs in use (100,000 = +10%).
	LoadMarkupPPM uint64
}

// Price implements Policy.
func (a Ask) Price(_ context.Context, o Offer) (Bid, error) {
	ask, ok := a.PerGPUHour[o.GpuClass]
	if !ok {
		ask = a.Default
	}
	if ask.IsNil() || !ask.IsPositive() {
		return Bid{Reason: "no ask for class " + o.GpuClass}, nil
	}
	need := o.Job.Spec.Requirements.GPUs()
	if need == 0 || o.GPUs <= o.GPUsUsed || need > o.GPUs-o.GPUsUsed {
		return Bid{Reason: "no free GPUs"}, nil
	}
	price := markettypes.Quote(ask, need, o.Job.Spec.MaxDuration)
	if o.GPUs > 0 && a.LoadMarkupPPM > 0 {
		tenths := uint64(o.GPUsUsed) * 10 / uint64(o.GPUs)
		price = price.Mul(sdkmath.NewIntFromUint64(1_000_000 + tenths*a.LoadMarkupPPM)).QuoRaw(1_000_000)
	}
	// the gas the reveal will cost us, as the chain prices it into the job
	price = price.Add(sdkmath.NewIntFromUint64(o.Job.RevealCost))
	if price.GT(o.Job.Spec.MaxPricePerTask.Amount) {
		return Bid{Reason: fmt.Sprintf("our price %s is above the job's max %s", price, o.Job.Spec.MaxPricePerTask.Amount)}, nil
	}
	free := (o.GPUs - o.GPUsUsed) / need
	qty := min(free, o.Job.Spec.TaskCount)
	return Bid{Price: price, Quantity: qty}, nil
}

// Script asks an external program: the offer as JSON on stdin, a Bid as JSON on stdout,
// within Timeout. A failure, a timeout or an unreadable answer is no bid (logged), never a
// guess.
type Script struct {
	Path    string
	Args    []string
	Timeout time.Duration
	Log     *slog.Logger
}

// Price implements Policy.
func (s Script) Price(ctx context.Context, o Offer) (Bid, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(o)
	if err != nil {
		return Bid{}, err
	}
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	// the script and whatever it started die together at the timeout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = bytes.NewReader(in)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		return Bid{}, fmt.Errorf("bidder script %s: %w (stderr: %s)", s.Path, err, strings.TrimSpace(stderr.String()))
	}
	var b Bid
	if err := json.Unmarshal(out.Bytes(), &b); err != nil {
		return Bid{}, fmt.Errorf("bidder script %s: answer %q: %w", s.Path, strings.TrimSpace(out.String()), err)
	}
	if b.Quantity > 0 && (b.Price.IsNil() || !b.Price.IsPositive()) {
		return Bid{}, fmt.Errorf("bidder script %s: a bid needs a positive price", s.Path)
	}
	if b.Quantity > 0 && b.Price.GT(o.Job.Spec.MaxPricePerTask.Amount) {
		return Bid{Reason: "script price above the job's max"}, nil
	}
	return b, nil
}
