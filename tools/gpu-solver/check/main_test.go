package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	wpocp "github.com/flopsnet/flops/worker/pocp"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

var (
	buildDir  string
	buildOnce sync.Once
	builtBin  string
	buildSkip string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpu-solver-check")
	if err != nil {
		panic(err)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildCPUSolver compiles ../solver.cu against cpu_shim.h once, as `make cpu` does, or
// skips the test where there is no C++ compiler.
func buildCPUSolver(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		cxx := os.Getenv("CXX")
		if cxx == "" {
			cxx = "g++"
		}
		if _, err := exec.LookPath(cxx); err != nil {
			buildSkip = fmt.Sprintf("no C++ compiler (%s): %v", cxx, err)
			return
		}
		bin := filepath.Join(buildDir, "gpu-solver-cpu")
		cmd := exec.Command(cxx, "-std=c++20", "-O2", "-pthread", "-DPOCP_CPU_SHIM", "-x", "c++", "../solver.cu", "-o", bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%s: %w\n%s", cmd, err, out)
			return
		}
		builtBin = bin
	})
	if buildSkip != "" {
		t.Skip(buildSkip)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// The CUDA source, run on the CPU through the shim, answers exactly as x/gfl/pocp: the
// PRNG, the nibble decoding, the counter layout, the tiled dp4a product, the round sum
// and the output encoding are those of docs/pocp.md.
func TestCUDASourceMatchesGo(t *testing.T) {
	bin := buildCPUSolver(t)
	sizes := []uint32{256}
	if os.Getenv("FLOPS_LONG_TESTS") != "" { // 512 takes about 30 s of CPU: make test-long
		sizes = append(sizes, 512)
	}
	// random challenges: a seed tag of the run's own, logged to replay a failure (-seed)
	var tag [8]byte
	_, _ = rand.Read(tag[:])
	t.Logf("seed tag %x", tag)
	var out bytes.Buffer
	opts := options{solver: bin, sizes: sizes, rounds: 2, referenceMax: 512, timeout: 2 * time.Minute, tag: fmt.Sprintf("%x", tag)}
	if err := run(context.Background(), opts, slog.New(slog.NewTextHandler(io.Discard, nil)), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got := strings.Count(out.String(), "equal"); got != len(sizes) {
		t.Fatalf("%d sizes equal, want %d:\n%s", got, len(sizes), out.String())
	}
	t.Logf("\n%s", out.String())
}

// A request the solver refuses (here an option this build lacks) fails the check.
func TestCheckReportsSolverFailure(t *testing.T) {
	bin := buildCPUSolver(t)
	opts := options{solver: bin, args: []string{"--cublas"}, sizes: []uint32{256}, rounds: 1, timeout: time.Minute}
	err := run(context.Background(), opts, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if !errors.Is(err, wpocp.ErrSolverFailed) || !strings.Contains(err.Error(), "no cuBLAS") {
		t.Fatalf("err = %v, want ErrSolverFailed quoting the solver", err)
	}
}

func TestFirstDiff(t *testing.T) {
	cases := []struct {
		name      string
		got, want []int32
		wantMsg   string
	}{
		{"equal", []int32{1, 2, 3, 4}, []int32{1, 2, 3, 4}, ""},
		{"one", []int32{1, 2, 9, 4}, []int32{1, 2, 3, 4}, "1 entries differ, first S[1][0] = 9, want 3"},
		{"two", []int32{0, 2, 9, 4}, []int32{1, 2, 3, 4}, "2 entries differ, first S[0][0] = 0, want 1"},
		{"length", []int32{1}, []int32{1, 2, 3, 4}, "1 entries, want 4"},
	}
	for _, tc := range cases {
		if got := firstDiff(tc.got, tc.want, 2); got != tc.wantMsg {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.wantMsg)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-solver", "x", "-args", "--device 1  --cublas", "-sizes", "256, 4096", "-r", "3", "-devices", "GPU-a,GPU-b", "-seed", "again"})
	if err != nil {
		t.Fatal(err)
	}
	if o.solver != "x" || strings.Join(o.args, "|") != "--device|1|--cublas" || len(o.sizes) != 2 || o.sizes[1] != 4096 || o.rounds != 3 ||
		strings.Join(o.devices, "|") != "GPU-a|GPU-b" || o.tag != "again" {
		t.Fatalf("%+v", o)
	}
	if _, err := parseFlags([]string{"-sizes", "256,big"}); err == nil {
		t.Fatal("a bad size is accepted")
	}
}

// The CUDA source answers a band of rows (protocol version 2) exactly: a challenge spread
// over two "devices" by the worker's external solver, one program per band, gives the Go
// solver's answer (the shim ignores CUDA_VISIBLE_DEVICES). About 15 s of the shim: make
// test-long (worker/pocp's fake solver checks the worker's side in make test).
func TestCUDASourceBandsMatchGo(t *testing.T) {
	if os.Getenv("FLOPS_LONG_TESTS") == "" {
		t.Skip("make test-long")
	}
	bin := buildCPUSolver(t)
	var tag [8]byte
	_, _ = rand.Read(tag[:])
	t.Logf("seed tag %x", tag)
	c := gflpocp.Challenge{Seed: gflpocp.ChallengeSeed(tag[:], 512, 1), N: 512, R: 1}
	want, err := gflpocp.Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := wpocp.NewExternalSolver(bin, nil, 2*time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	got, err := s.Solve(wpocp.OnDevices(context.Background(), []string{"GPU-0", "GPU-1"}), c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("the bands' answer differs from the Go solver's")
	}
}
