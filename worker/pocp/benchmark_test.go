package pocp

import (
	"context"
	"errors"
	"testing"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

func TestGFLOPS(t *testing.T) {
	cases := []struct {
		name    string
		n, r    uint32
		elapsed time.Duration
		want    uint64
	}{
		// 2*4096^3 = 137,438,953,472 FLOPs in one second.
		{"n4096 1s", 4096, 1, time.Second, 137},
		// Ten rounds in ten seconds: the same rate.
		{"n4096 r10 10s", 4096, 10, 10 * time.Second, 137},
		// 2*256^3 = 33,554,432 FLOPs in 1 ms = 33.55 GFLOP/s, truncated.
		{"n256 1ms", 256, 1, time.Millisecond, 33},
		// The largest challenge, 2*65536^3*63 = 35,465,847,065,542,656 FLOPs, in 1 ns: no
		// overflow.
		{"max 1ns", 65536, 63, time.Nanosecond, 35465847065542656},
		// Zero and negative times count as 1 ns instead of dividing by zero.
		{"zero", 256, 1, 0, 33554432},
		{"negative", 256, 1, -time.Second, 33554432},
		// An hour-long small run rounds down to 0.
		{"slow", 256, 1, time.Hour, 0},
	}
	for _, tc := range cases {
		if got := GFLOPS(tc.n, tc.r, tc.elapsed); got != tc.want {
			t.Errorf("%s: GFLOPS = %d, want %d", tc.name, got, tc.want)
		}
	}
	// On whole milliseconds it is the chain's power sample.
	for _, ms := range []uint64{1, 7, 250, 1000, 123456} {
		for _, size := range [][2]uint32{{256, 1}, {4096, 3}, {65536, 63}} {
			if got, want := GFLOPS(size[0], size[1], time.Duration(ms)*time.Millisecond), gflpocp.PowerGFLOPS(size[0], size[1], ms); got != want {
				t.Errorf("n %d r %d %d ms: %d, chain says %d", size[0], size[1], ms, got, want)
			}
		}
	}
}

func TestBenchmark(t *testing.T) {
	rec := &stubSolver{name: "go", solve: NewGoSolver(0).Solve}
	gflops, elapsed, err := Benchmark(context.Background(), rec, 256, 2)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed <= 0 || gflops != GFLOPS(256, 2, elapsed) {
		t.Errorf("gflops %d over %s", gflops, elapsed)
	}
	// Each run draws a fresh seed, so no solver can replay an answer.
	if _, _, err := Benchmark(context.Background(), rec, 256, 2); err != nil {
		t.Fatal(err)
	}
	if rec.calls() != 2 || rec.seen[0].Seed == rec.seen[1].Seed || rec.seen[0].Seed == ([32]byte{}) {
		t.Error("benchmark seeds repeat")
	}
	// Sizes outside docs/pocp.md section 1 are refused.
	if _, _, err := Benchmark(context.Background(), rec, 300, 1); !errors.Is(err, gflpocp.ErrBadSize) {
		t.Errorf("n = 300: err = %v", err)
	}
	// A failing solver fails the benchmark.
	if _, _, err := Benchmark(context.Background(), fakeExternal(t, "exit", 30*time.Second), 256, 1); !errors.Is(err, ErrSolverFailed) {
		t.Errorf("failing solver: err = %v", err)
	}
}

// BenchmarkClaim grows the challenge until one takes long enough or the next is too big.
func TestBenchmarkClaim(t *testing.T) {
	s := NewGoSolver(1)
	_, n, _, err := BenchmarkClaim(context.Background(), s, 256, 1024, time.Hour)
	if err != nil || n != 1024 {
		t.Fatalf("up to the largest: n = %d, %v", n, err)
	}
	gflops, n, took, err := BenchmarkClaim(context.Background(), s, 256, 1024, 0)
	if err != nil || n != 256 || gflops == 0 || took <= 0 {
		t.Fatalf("the first took long enough: n = %d, %d GFLOP/s in %s, %v", n, gflops, took, err)
	}
	if _, _, _, err := BenchmarkClaim(context.Background(), s, 100, 1024, 0); err == nil {
		t.Fatal("an invalid size is refused")
	}
}
