package pocp

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

func TestGoSolverMatchesReference(t *testing.T) {
	cases := []struct {
		name    string
		n, r    uint32
		workers int
	}{
		// The smallest challenge on one goroutine.
		{"n256 r1 w1", 256, 1, 1},
		// Rounds accumulate; GOMAXPROCS goroutines.
		{"n256 r3 w0", 256, 3, 0},
		// A larger size with more goroutines than items of some phases.
		{"n512 r2 w5", 512, 2, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testChallenge(tc.n, tc.r, 7)
			got, err := NewGoSolver(tc.workers).Solve(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, gflpocp.ReferenceSolve(c)) {
				t.Fatal("S differs from ReferenceSolve")
			}
			if err := SpotCheck(c, got, DefaultSpotChecks); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGoSolverErrors(t *testing.T) {
	s := NewGoSolver(2)
	if s.Name() != "go-cpu/2" {
		t.Errorf("Name = %q", s.Name())
	}
	if _, err := s.Solve(context.Background(), gflpocp.Challenge{N: 256, R: 0}); !errors.Is(err, gflpocp.ErrBadSize) {
		t.Errorf("r = 0: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Solve(ctx, testChallenge(256, 1, 8)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestFallback(t *testing.T) {
	c := testChallenge(256, 1, 9)
	right, err := gflpocp.Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	errGPU := errors.New("no CUDA device")
	errCPU := errors.New("out of memory")
	answering := func(context.Context, gflpocp.Challenge) ([]int32, error) { return right, nil }
	failing := func(e error) func(context.Context, gflpocp.Challenge) ([]int32, error) {
		return func(context.Context, gflpocp.Challenge) ([]int32, error) { return nil, e }
	}
	cases := []struct {
		name                       string
		primary, secondary         func(context.Context, gflpocp.Challenge) ([]int32, error)
		cancelled                  bool
		wantPrimary, wantSecondary int // calls
		wantErrs                   []error
		wantWarn                   bool
	}{
		// A working primary is the only one asked.
		{"primary answers", answering, failing(errCPU), false, 1, 0, nil, false},
		// A failing primary is replaced, with a warning.
		{"primary fails", failing(errGPU), answering, false, 1, 1, nil, true},
		// Both fail: both errors are in the result.
		{"both fail", failing(errGPU), failing(errCPU), false, 1, 1, []error{errGPU, errCPU}, true},
		// A failure because the context ended is not retried.
		{"cancelled", failing(context.Canceled), answering, true, 1, 0, []error{context.Canceled}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			prev := slog.Default()
			slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
			defer slog.SetDefault(prev)

			p := &stubSolver{name: "gpu", solve: tc.primary}
			s := &stubSolver{name: "cpu", solve: tc.secondary}
			f := Fallback(p, s)
			if f.Name() != "gpu|cpu" {
				t.Errorf("Name = %q", f.Name())
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			got, err := f.Solve(ctx, c)
			if p.calls() != tc.wantPrimary || s.calls() != tc.wantSecondary {
				t.Errorf("calls: primary %d, secondary %d", p.calls(), s.calls())
			}
			if tc.wantErrs == nil {
				if err != nil || !slices.Equal(got, right) {
					t.Fatalf("err = %v", err)
				}
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to wrap %v", err, want)
				}
			}
			if warned := strings.Contains(logs.String(), "primary solver failed"); warned != tc.wantWarn {
				t.Errorf("warning logged: %v\n%s", warned, logs.String())
			}
		})
	}
}

// The intended deployment: a GPU solver whose answer fails the spot check falls back to
// the Go solver, and the node gets the right answer.
func TestFallbackFromWrongExternalAnswer(t *testing.T) {
	c := testChallenge(256, 2, 10)
	got, err := Fallback(fakeExternal(t, "flip-corner", 30*time.Second), NewGoSolver(0)).Solve(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, gflpocp.ReferenceSolve(c)) {
		t.Fatal("wrong answer after the fallback")
	}
}
