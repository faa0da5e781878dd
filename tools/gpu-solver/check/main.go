// Command check runs an external PoCP solver (tools/gpu-solver, or any program speaking
// docs/pocp.md section 9) against x/gfl/pocp's Go solver: for each size it solves the same
// challenge with both, compares S entry by entry and the Merkle roots (and, for small
// sizes, S with pocp.ReferenceSolve), and prints the time and GFLOP/s of each. It exits 1
// if any answer differs.
//
//	go run ./tools/gpu-solver/check -solver tools/gpu-solver/gpu-solver -sizes 256,1024,4096 -r 1
//
// The external solver's time is the worker's: process start, GPU start-up, the solve, the
// transfer of S and the spot check, plus the Merkle tree, as in worker/pocp.Benchmark.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	wpocp "github.com/flopsnet/flops/worker/pocp"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// options are the command's flags.
type options struct {
	solver       string
	args         []string
	sizes        []uint32
	rounds       uint32
	goWorkers    int
	referenceMax uint32
	timeout      time.Duration
	// devices: the GPUs the external solver spreads each challenge over, one process and
	// band of rows each, as the worker does (empty: one process, default device)
	devices []string
	// tag makes the challenges' seeds (ChallengeSeed(tag, n, r)): another tag, other
	// matrices
	tag string
}

// errMismatch: an external answer that differs from the Go solver's.
var errMismatch = errors.New("answers differ")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, opts, log, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
}

func parseFlags(argv []string) (options, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	solver := fs.String("solver", "tools/gpu-solver/gpu-solver", "the external solver program")
	args := fs.String("args", "", "arguments of the solver, separated by spaces")
	sizes := fs.String("sizes", "256,512,1024,2048,4096", "matrix sizes n, comma-separated")
	rounds := fs.Uint("r", 1, "rounds r of each challenge (lowered where 4*n*r would reach 2^24)")
	goWorkers := fs.Int("go-workers", 0, "goroutines of the Go solver (0: GOMAXPROCS)")
	referenceMax := fs.Uint("reference-max", 512, "largest n also checked against the naive ReferenceSolve")
	timeout := fs.Duration("timeout", 10*time.Minute, "the external solver's timeout per challenge")
	devices := fs.String("devices", "", "GPU UUIDs (or CUDA indexes) to spread each challenge over, comma-separated, as flops-worker does")
	tag := fs.String("seed", "tools/gpu-solver/check", "the challenges' seed tag: each tag draws other matrices")
	if err := fs.Parse(argv); err != nil {
		return options{}, err
	}
	o := options{
		solver:       *solver,
		args:         strings.Fields(*args),
		rounds:       uint32(*rounds),
		goWorkers:    *goWorkers,
		referenceMax: uint32(*referenceMax),
		timeout:      *timeout,
		tag:          *tag,
	}
	if *devices != "" {
		o.devices = strings.Split(*devices, ",")
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return options{}, fmt.Errorf("size %q: %w", s, err)
		}
		o.sizes = append(o.sizes, uint32(n))
	}
	return o, nil
}

// run checks every size and writes the table to out. It returns errMismatch (wrapped) if
// an answer differed, or the first error that stopped a solver.
func run(ctx context.Context, o options, log *slog.Logger, out io.Writer) error {
	ext := wpocp.NewExternalSolver(o.solver, o.args, o.timeout, log)
	goSolver := wpocp.NewGoSolver(o.goWorkers)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintf(tw, "n\tr\t%s ms\tGFLOP/s\t%s ms\tGFLOP/s\tspeed-up\tanswer\t\n", ext.Name(), goSolver.Name())
	var failed error
	for _, n := range o.sizes {
		r := max(min(o.rounds, uint32((gflpocp.ExactLimit-1)/(4*uint64(max(n, 1))))), 1)
		c := gflpocp.Challenge{N: n, R: r, Seed: gflpocp.ChallengeSeed([]byte(o.tag), uint64(n), uint64(r))}
		if err := c.Validate(); err != nil {
			return err
		}
		ea, err := wpocp.Prepare(wpocp.OnDevices(ctx, o.devices), ext, c)
		if err != nil {
			return fmt.Errorf("n = %d, r = %d: %w", n, r, err)
		}
		ga, err := wpocp.Prepare(ctx, goSolver, c)
		if err != nil {
			return fmt.Errorf("n = %d, r = %d: %w", n, r, err)
		}
		verdict := compare(c, ea.S, ga.S, o.referenceMax)
		if verdict == "" && ea.Root != ga.Root {
			verdict = fmt.Sprintf("roots differ: %x, %x", ea.Root[:8], ga.Root[:8])
		}
		if verdict == "" {
			verdict = "equal"
		} else {
			failed = fmt.Errorf("n = %d, r = %d: %s: %w", n, r, verdict, errMismatch)
		}
		eg, gg := wpocp.GFLOPS(n, r, ea.Elapsed()), wpocp.GFLOPS(n, r, ga.Elapsed())
		_, _ = fmt.Fprintf(tw, "%d\t%d\t%.1f\t%d\t%.1f\t%d\t%.1fx\t%s\t\n", n, r, ms(ea.Elapsed()), eg, ms(ga.Elapsed()), gg,
			ga.Elapsed().Seconds()/max(ea.Elapsed().Seconds(), 1e-9), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return failed
}

// compare is "" if got equals want (and, for n <= referenceMax, ReferenceSolve), else the
// first difference.
func compare(c gflpocp.Challenge, got, want []int32, referenceMax uint32) string {
	if d := firstDiff(got, want, c.N); d != "" {
		return "vs Go solver: " + d
	}
	if c.N <= referenceMax {
		if d := firstDiff(got, gflpocp.ReferenceSolve(c), c.N); d != "" {
			return "vs ReferenceSolve: " + d
		}
	}
	return ""
}

func firstDiff(got, want []int32, n uint32) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d entries, want %d", len(got), len(want))
	}
	if slices.Equal(got, want) {
		return ""
	}
	count, first := 0, -1
	for x := range want {
		if got[x] != want[x] {
			if first < 0 {
				first = x
			}
			count++
		}
	}
	return fmt.Sprintf("%d entries differ, first S[%d][%d] = %d, want %d", count, first/int(n), first%int(n), got[first], want[first])
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
