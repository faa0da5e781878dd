package pocp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

func TestExternalSolver(t *testing.T) {
	cases := []struct {
		mode    string
		timeout time.Duration
		wantErr error  // nil: the right answer
		wantMsg string // in the error, when not ""
	}{
		// A correct solver is accepted, its answer equal to the Go solver's.
		{"ok", 30 * time.Second, nil, ""},
		// One wrong entry at a corner, which the spot check always recomputes.
		{"flip-corner", 30 * time.Second, ErrWrongAnswer, "S[255][255]"},
		// A systematically wrong solver (every entry off by one).
		{"plus-one", 30 * time.Second, ErrWrongAnswer, "recomputed"},
		// One entry beyond |S| <= 4nr anywhere in the matrix: the bound scan sees all.
		{"out-of-bound", 30 * time.Second, ErrWrongAnswer, "S[17][33]"},
		// An answer one byte short, though the solver exits 0.
		{"short", 30 * time.Second, ErrMalformedAnswer, "answered 262143 bytes"},
		// Bytes past the answer are not ignored.
		{"long", 30 * time.Second, ErrMalformedAnswer, "answered 262148 bytes"},
		// A non-zero exit fails even with output, and its stderr is quoted.
		{"exit", 30 * time.Second, ErrSolverFailed, "out of memory"},
		// A solver that never answers is killed at its timeout.
		{"hang", 500 * time.Millisecond, ErrSolverTimeout, "timeout of 500ms"},
		// A solver that exits 0 without answering, leaving a child on its stdout.
		{"orphan", 30 * time.Second, ErrMalformedAnswer, "answered 0 bytes"},
	}
	c := testChallenge(256, 2, 1)
	want, err := gflpocp.Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			s := fakeExternal(t, tc.mode, tc.timeout)
			start := time.Now()
			got, err := s.Solve(context.Background(), c)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s", took)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("err = %v\nlogs:\n%s", err, testLogs(t))
				}
				if !slices.Equal(got, want) {
					t.Fatal("answer differs from the Go solver's")
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v\nlogs:\n%s", err, tc.wantErr, testLogs(t))
			}
			if got != nil {
				t.Error("an answer came back with the error")
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tc.wantMsg)
			}
		})
	}
}

// The process is killed when the caller's context ends, and the error is the context's.
func TestExternalSolverCancelled(t *testing.T) {
	s := fakeExternal(t, "hang", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Solve(ctx, testChallenge(256, 1, 2))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if errors.Is(err, ErrSolverTimeout) {
		t.Error("the caller's deadline is reported as the solver's own timeout")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s to stop", took)
	}
	// An already ended context starts nothing.
	_, err = s.Solve(ctx, testChallenge(256, 1, 2))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second call: err = %v", err)
	}
}

// An invalid challenge never reaches the program; a missing program fails cleanly.
func TestExternalSolverRefusesBeforeRunning(t *testing.T) {
	s := fakeExternal(t, "ok", time.Second)
	if _, err := s.Solve(context.Background(), gflpocp.Challenge{N: 100, R: 1}); !errors.Is(err, gflpocp.ErrBadSize) {
		t.Errorf("n = 100: err = %v, want ErrBadSize", err)
	}
	missing := NewExternalSolver("/nonexistent/gpu-solver", nil, time.Second, testLogger(t))
	if got := missing.Name(); got != "external:gpu-solver" {
		t.Errorf("Name = %q", got)
	}
	if _, err := missing.Solve(context.Background(), testChallenge(256, 1, 3)); !errors.Is(err, ErrSolverFailed) {
		t.Errorf("missing program: err = %v, want ErrSolverFailed", err)
	}
}

// Stderr is logged line by line, and a flood of it is cut at maxStderrLines.
func TestExternalSolverStderr(t *testing.T) {
	s := fakeExternal(t, "chatty", 30*time.Second)
	if _, err := s.Solve(context.Background(), testChallenge(256, 1, 4)); err != nil {
		t.Fatal(err)
	}
	logs := testLogs(t)
	if got := countLines(logs, `msg="solver stderr" `); got != maxStderrLines {
		t.Errorf("%d stderr lines logged, want %d", got, maxStderrLines)
	}
	if !strings.Contains(logs, "dropped_lines=801") { // 1000 and the fake's device line
		t.Errorf("no truncation notice in\n%s", logs[max(len(logs)-2000, 0):])
	}
	if !strings.Contains(logs, "external solver answered") {
		t.Error("the answer is not logged")
	}
}

// The request is one JSON line whose key and seed follow x/gfl/pocp.
func TestNewRequest(t *testing.T) {
	c := testChallenge(512, 7, 5)
	req := NewRequest(c)
	if req.Version != 1 || req.N != 512 || req.R != 7 || len(req.Seed) != 64 || len(req.Key) != 16 {
		t.Fatalf("request %+v", req)
	}
	got, from, to, err := readRequest(strings.NewReader(`{"version":1,"seed":"` + req.Seed + `","key":"` + req.Key + `","n":512,"r":7}` + "\n"))
	if err != nil || got != c || from != 0 || to != 512 {
		t.Fatalf("round trip: %+v, rows %d-%d, %v", got, from, to, err)
	}
	// a band: version 2 with its rows
	b, err := json.Marshal(bandRequest(c, 256, 512))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":2,"seed":"` + req.Seed + `","key":"` + req.Key + `","n":512,"r":7,"row_from":256,"row_to":512}`; string(b) != want {
		t.Fatalf("band request %s, want %s", b, want)
	}
}

// Spread over several devices, an external solve runs one program per device, each
// given its device in CUDA_VISIBLE_DEVICES and a band of whole 256-row chunks, and the
// bands make the answer; more devices than chunks leave the extra ones idle; one device
// runs one version 1 program on it; a band that fails fails the solve (the fallback then
// answers) and stops the others.
func TestExternalSolverSpreadsOverDevices(t *testing.T) {
	c := testChallenge(768, 2, 9)
	want, err := gflpocp.Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		devices []string
		bands   []string // the fake's first stderr line per program
	}{
		{"two of three chunks each", []string{"GPU-a", "GPU-b"}, []string{`device=GPU-a rows=0-256`, `device=GPU-b rows=256-768`}},
		{"one chunk each, one device idle", []string{"GPU-a", "GPU-b", "GPU-c", "MIG-d"}, []string{`device=GPU-a rows=0-256`, `device=GPU-b rows=256-512`, `device=GPU-c rows=512-768`}},
		{"one device", []string{"MIG-x"}, []string{`device=MIG-x rows=0-768`}},
		{"none", nil, []string{`device= rows=0-768`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeExternal(t, "ok", 30*time.Second)
			got, err := s.Solve(OnDevices(context.Background(), tc.devices), c)
			if err != nil {
				t.Fatalf("%v\n%s", err, testLogs(t))
			}
			if !slices.Equal(got, want) {
				t.Fatal("answer differs from the Go solver's")
			}
			logs := testLogs(t)
			for _, b := range tc.bands {
				if countLines(logs, `line="`+b+`"`) != 1 {
					t.Errorf("no program answered %s:\n%s", b, logs)
				}
			}
			if n := countLines(logs, "line=\"device="); n != len(tc.bands) {
				t.Errorf("%d programs, want %d:\n%s", n, len(tc.bands), logs)
			}
		})
	}
	s := fakeExternal(t, "fail-band", 30*time.Second)
	got, err := s.Solve(OnDevices(context.Background(), []string{"GPU-a", "GPU-b"}), c)
	if !errors.Is(err, ErrSolverFailed) || !strings.Contains(err.Error(), "device lost") || got != nil {
		t.Fatalf("a failed band: %v, answer %v", err, got != nil)
	}
}

func TestBandsOf(t *testing.T) {
	for _, tc := range []struct {
		n       uint32
		devices int
		want    string
	}{
		{256, 0, "[{ 0 256}]"},
		{256, 3, "[{d0 0 256}]"},
		{1024, 3, "[{d0 0 256} {d1 256 512} {d2 512 1024}]"},
		{65536, 8, "[{d0 0 8192} {d1 8192 16384} {d2 16384 24576} {d3 24576 32768} {d4 32768 40960} {d5 40960 49152} {d6 49152 57344} {d7 57344 65536}]"},
	} {
		var ds []string
		for i := range tc.devices {
			ds = append(ds, fmt.Sprintf("d%d", i))
		}
		if got := fmt.Sprint(bandsOf(tc.n, ds)); got != tc.want {
			t.Errorf("bandsOf(%d, %d devices) = %s, want %s", tc.n, tc.devices, got, tc.want)
		}
	}
}

// answerWriter decodes entries split anywhere across writes and counts what is extra.
func TestAnswerWriter(t *testing.T) {
	want := []int32{1, -2, 0x7fffffff, -0x80000000, 5, 6, 7}
	var stream []byte
	for _, v := range want {
		u := uint32(v)
		stream = append(stream, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	for _, pieces := range [][]int{{28}, {1, 1, 1, 1, 24}, {3, 3, 3, 3, 3, 3, 3, 3, 3, 1}, {5, 23}, {27, 1}} {
		w := &answerWriter{s: make([]int32, len(want))}
		rest := stream
		for _, k := range pieces {
			if n, err := w.Write(rest[:k]); n != k || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			rest = rest[k:]
		}
		if !slices.Equal(w.s, want) || w.received() != 28 {
			t.Errorf("pieces %v: %v, %d bytes", pieces, w.s, w.received())
		}
		_, _ = w.Write([]byte{9, 9, 9})
		if w.received() != 31 {
			t.Errorf("pieces %v: %d bytes after 3 extra", pieces, w.received())
		}
	}
	short := &answerWriter{s: make([]int32, 2)}
	_, _ = short.Write(stream[:7])
	if short.received() != 7 {
		t.Errorf("short: %d bytes", short.received())
	}
}
