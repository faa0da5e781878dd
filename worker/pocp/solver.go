package pocp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// Errors a Solver returns besides x/gfl/pocp's ErrBadSize and context errors; callers
// classify failures with errors.Is (a Fallback's double failure wraps both solvers'
// errors).
var (
	// ErrSolverFailed: the external program could not be started, exited non-zero or was
	// killed.
	ErrSolverFailed = errors.New("pocp: solver failed")
	// ErrSolverTimeout: the external program ran past its timeout and was killed.
	ErrSolverTimeout = errors.New("pocp: solver timed out")
	// ErrMalformedAnswer: an answer of the wrong size (a short or long stream from an
	// external program, a slice that is not n*n entries).
	ErrMalformedAnswer = errors.New("pocp: malformed answer")
	// ErrWrongAnswer: an answer that failed the spot check: an entry out of the bound
	// 4*n*r or different from Challenge.Entry.
	ErrWrongAnswer = errors.New("pocp: wrong answer")
)

// Solver computes the answer of a PoCP challenge.
type Solver interface {
	// Name identifies the solver in logs and in `flops-worker benchmark`.
	Name() string
	// Solve returns S = sum_{t<r} A_t * B_t for c (docs/pocp.md section 3): n*n int32,
	// row-major. It returns an error, never a partial or unchecked answer, when c is not
	// valid (x/gfl/pocp.ErrBadSize), when ctx ends (ctx's error) or when the solver fails.
	Solve(ctx context.Context, c gflpocp.Challenge) ([]int32, error)
}

// goSolver is x/gfl/pocp's multi-core CPU solver.
type goSolver struct {
	workers int
}

// NewGoSolver is the Go CPU solver (x/gfl/pocp.Solve) on workers goroutines (workers < 1
// means GOMAXPROCS). Its answer equals pocp.ReferenceSolve's; memory is about 6*n^2 bytes
// (n = 65536: 24 GiB) plus the answer's 4*n^2.
func NewGoSolver(workers int) Solver {
	return goSolver{workers: workers}
}

func (s goSolver) Name() string {
	w := s.workers
	if w < 1 {
		w = runtime.GOMAXPROCS(0)
	}
	return fmt.Sprintf("go-cpu/%d", w)
}

func (s goSolver) Solve(ctx context.Context, c gflpocp.Challenge) ([]int32, error) {
	return gflpocp.Solve(ctx, c, s.workers)
}

// fallback tries primary, then secondary.
type fallback struct {
	primary, secondary Solver
	log                *slog.Logger
}

// Fallback is a Solver that asks primary and, if primary fails for any reason other than
// ctx ending (an invalid challenge included, so that the secondary reports it too), asks
// secondary. Each fallback is logged at warning level through slog.Default with
// component=pocp. A typical worker runs Fallback(NewExternalSolver(gpu...),
// NewGoSolver(0)): a broken or absent GPU solver then costs time, never a challenge.
func Fallback(primary, secondary Solver) Solver {
	return fallback{primary: primary, secondary: secondary, log: slog.Default().With("component", "pocp")}
}

func (f fallback) Name() string {
	return f.primary.Name() + "|" + f.secondary.Name()
}

func (f fallback) Solve(ctx context.Context, c gflpocp.Challenge) ([]int32, error) {
	s, err := f.primary.Solve(ctx, c)
	if err == nil {
		return s, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("%s: %w", f.primary.Name(), err)
	}
	f.log.Warn("primary solver failed; using the fallback",
		"primary", f.primary.Name(), "fallback", f.secondary.Name(), "n", c.N, "r", c.R, "err", err)
	s, err2 := f.secondary.Solve(ctx, c)
	if err2 != nil {
		return nil, fmt.Errorf("%s failed (%w), then %s: %w", f.primary.Name(), err, f.secondary.Name(), err2)
	}
	return s, nil
}
