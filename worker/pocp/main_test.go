package pocp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// The external solvers of the tests are this test binary run again as
// `<test binary> fake-solver MODE`: TestMain answers the protocol of docs/pocp.md section 9
// in the way MODE says instead of running the tests.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == fakeSolverArg {
		os.Exit(fakeSolver(os.Args[2]))
	}
	os.Exit(m.Run())
}

const fakeSolverArg = "fake-solver"

// fakeExternal is an external solver running the fake in mode, with a short wait delay so
// that tests of stray processes stay fast.
func fakeExternal(t *testing.T, mode string, timeout time.Duration) *externalSolver {
	t.Helper()
	s := NewExternalSolver(os.Args[0], []string{fakeSolverArg, mode}, timeout, testLogger(t)).(*externalSolver)
	s.waitDelay = 300 * time.Millisecond
	return s
}

// fakeSolver is the helper program. Modes:
//
//	ok           the right answer, written in odd-sized pieces
//	flip-corner  the right answer with S[n-1][n-1] + 1
//	plus-one     every entry + 1
//	out-of-bound the right answer with S[17][33] = 4*n*r + 1
//	short        the right answer less its last byte
//	long         the right answer and 4 more bytes
//	exit         half the answer, a line on stderr, exit status 3
//	hang         nothing, ever
//	orphan       starts `hang` as a child sharing its stdout, prints the child's pid on
//	             stderr and exits 0 without answering
//	chatty       1000 stderr lines, then the right answer
//	fail-band    the right answer, but exit status 3 for a band that does not start at row 0
//
// A version 2 request gets its band of rows, and every answer's first stderr line names
// the device the solver was given (CUDA_VISIBLE_DEVICES) and its rows.
func fakeSolver(mode string) int {
	if mode == "hang" {
		time.Sleep(time.Hour)
		return 0
	}
	if mode == "orphan" {
		child := exec.Command(os.Args[0], fakeSolverArg, "hang")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "orphan:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "grandchild pid %d\n", child.Process.Pid)
		return 0
	}
	c, from, to, err := readRequest(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake solver:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "device=%s rows=%d-%d\n", os.Getenv("CUDA_VISIBLE_DEVICES"), from, to)
	if mode == "fail-band" && from > 0 {
		fmt.Fprintln(os.Stderr, "cuda error: device lost")
		return 3
	}
	s, err := gflpocp.Solve(context.Background(), c, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake solver:", err)
		return 2
	}
	n := int(c.N)
	s = s[int(from)*n : int(to)*n]
	switch mode {
	case "flip-corner":
		s[n*n-1]++
	case "plus-one":
		for x := range s {
			s[x]++
		}
	case "out-of-bound":
		s[17*n+33] = int32(4*c.N*c.R + 1)
	case "chatty":
		for x := range 1000 {
			fmt.Fprintf(os.Stderr, "progress line %d\n", x)
		}
	}
	out := make([]byte, 4*len(s))
	for x, v := range s {
		binary.LittleEndian.PutUint32(out[4*x:], uint32(v))
	}
	switch mode {
	case "short":
		out = out[:len(out)-1]
	case "long":
		out = append(out, 1, 2, 3, 4)
	case "exit":
		out = out[:len(out)/2]
	}
	for len(out) > 0 { // pieces of 1001 bytes: entries straddle writes
		k := min(1001, len(out))
		if _, err := os.Stdout.Write(out[:k]); err != nil {
			return 1
		}
		out = out[k:]
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "cuda error: out of memory")
		return 3
	}
	return 0
}

// readRequest reads and checks the one request line, which must be followed by EOF, and
// returns the challenge and the band of rows asked (all of them in version 1).
func readRequest(r io.Reader) (c gflpocp.Challenge, from, to uint32, err error) {
	br := bufio.NewReader(r)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return c, 0, 0, fmt.Errorf("request line: %w", err)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		return c, 0, 0, fmt.Errorf("%d bytes after the request line", len(rest))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var req Request
	if err := dec.Decode(&req); err != nil {
		return c, 0, 0, err
	}
	seed, err := hex.DecodeString(req.Seed)
	if err != nil || len(seed) != 32 {
		return c, 0, 0, fmt.Errorf("seed %q", req.Seed)
	}
	c = gflpocp.Challenge{Seed: [32]byte(seed), N: req.N, R: req.R}
	if want := fmt.Sprintf("%016x", c.Key()); req.Key != want {
		return c, 0, 0, fmt.Errorf("key %q, want %q", req.Key, want)
	}
	switch {
	case req.Version == ProtocolVersion && req.RowFrom == nil && req.RowTo == nil:
		from, to = 0, req.N
	case req.Version == BandVersion && req.RowFrom != nil && req.RowTo != nil:
		from, to = *req.RowFrom, *req.RowTo
		if from >= to || to > req.N || from%gflpocp.ChunkEntries != 0 || to%gflpocp.ChunkEntries != 0 {
			return c, 0, 0, fmt.Errorf("rows [%d, %d)", from, to)
		}
	default:
		return c, 0, 0, fmt.Errorf("version %d with rows %v-%v", req.Version, req.RowFrom, req.RowTo)
	}
	return c, from, to, c.Validate()
}
