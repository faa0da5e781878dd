package pocp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// ProtocolVersion is the version of the external-solver protocol (docs/pocp.md section 9)
// that this worker speaks; it is sent in every Request.
const ProtocolVersion = 1

// Request is the one JSON line an external solver reads on its standard input
// (docs/pocp.md section 9), e.g.
//
//	{"version":1,"seed":"4046f5...18ca","key":"5a19a1c01c466bcf","n":4096,"r":3}
type Request struct {
	// Version is ProtocolVersion; a solver that does not know it must exit non-zero.
	Version int `json:"version"`
	// Seed is the challenge seed, 64 lowercase hex characters.
	Seed string `json:"seed"`
	// Key is Challenge.Key, the PRNG key sha256("flops/pocp/key" || seed)[0:8] read
	// little-endian, as 16 lowercase hex digits of the uint64 (most significant first). It
	// is derived from Seed and only spares a solver the SHA-256.
	Key string `json:"key"`
	// N is the matrix size, R the number of rounds.
	N uint32 `json:"n"`
	R uint32 `json:"r"`
}

// NewRequest is the request for challenge c.
func NewRequest(c gflpocp.Challenge) Request {
	return Request{
		Version: ProtocolVersion,
		Seed:    hex.EncodeToString(c.Seed[:]),
		Key:     fmt.Sprintf("%016x", c.Key()),
		N:       c.N,
		R:       c.R,
	}
}

// Defaults of an external solver.
const (
	// DefaultSpotChecks is the number of random entries recomputed besides the four
	// corners: an answer with a fraction e of wrong entries passes with probability
	// about (1-e)^DefaultSpotChecks (e = 10%: 1%).
	DefaultSpotChecks = 44
	// waitDelay is how long Wait lets a killed or exited solver's pipes drain before it
	// closes them (a grandchild holding standard output open).
	waitDelay = 5 * time.Second
	// maxStderrLines and maxStderrLine bound what one run may write to the log.
	maxStderrLines = 200
	maxStderrLine  = 512
)

// externalSolver runs a program speaking the protocol of docs/pocp.md section 9.
type externalSolver struct {
	path       string
	args       []string
	timeout    time.Duration
	log        *slog.Logger
	spotChecks int
	waitDelay  time.Duration
}

// NewExternalSolver is a Solver that runs the program at path with args for each
// challenge (docs/pocp.md section 9): it writes one Request as a JSON line to the program's
// standard input, reads exactly 4*n*n bytes of S (row-major, little-endian int32) from its
// standard output and logs its standard error line by line. The program is killed, with
// its process group on unix, when ctx ends or after timeout (timeout <= 0: no limit but
// ctx's). A start failure or non-zero exit wraps ErrSolverFailed, a run past timeout
// ErrSolverTimeout, an answer of the wrong length ErrMalformedAnswer. The answer is then
// spot-checked (SpotCheck with DefaultSpotChecks) and refused with ErrWrongAnswer if any
// checked entry is wrong, so a broken GPU solver costs a failed solve, not a slash. log
// nil means slog.Default.
func NewExternalSolver(path string, args []string, timeout time.Duration, log *slog.Logger) Solver {
	if log == nil {
		log = slog.Default()
	}
	return &externalSolver{
		path:       path,
		args:       append([]string(nil), args...),
		timeout:    timeout,
		log:        log.With("component", "pocp", "solver", "external:"+filepath.Base(path)),
		spotChecks: DefaultSpotChecks,
		waitDelay:  waitDelay,
	}
}

func (e *externalSolver) Name() string {
	return "external:" + filepath.Base(e.path)
}

// errTimeoutCause is the cause of the run context when the solver's own timeout fires.
var errTimeoutCause = errors.New("external solver timeout")

func (e *externalSolver) Solve(ctx context.Context, c gflpocp.Challenge) ([]int32, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Name(), context.Cause(ctx))
	}
	req, err := json.Marshal(NewRequest(c))
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", e.Name(), err) // unreachable: plain fields
	}
	req = append(req, '\n')

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if e.timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, e.timeout, errTimeoutCause)
	}
	defer cancel()

	log := e.log.With("n", c.N, "r", c.R)
	answer := &answerWriter{s: make([]int32, int(c.N)*int(c.N))}
	stderr := &lineLogger{log: log}
	cmd := exec.CommandContext(runCtx, e.path, e.args...)
	cmd.Stdin = bytes.NewReader(req)
	cmd.Stdout = answer
	cmd.Stderr = stderr
	cmd.WaitDelay = e.waitDelay
	killGroup := ownProcessGroup(cmd)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w: %w", e.Name(), e.path, ErrSolverFailed, err)
	}
	log.Debug("external solver started", "pid", cmd.Process.Pid)
	waitErr := cmd.Wait()
	killGroup() // stray grandchildren, if any, die with the solver
	stderr.flush()
	elapsed := time.Since(start)

	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: stopped after %s: %w", e.Name(), elapsed.Round(time.Millisecond), context.Cause(ctx))
	}
	if waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
		if errors.Is(context.Cause(runCtx), errTimeoutCause) {
			return nil, fmt.Errorf("%s: killed after its timeout of %s: %w", e.Name(), e.timeout, ErrSolverTimeout)
		}
		return nil, fmt.Errorf("%s: %w%s: %w", e.Name(), waitErr, stderr.tail(), ErrSolverFailed)
	}
	want := int64(len(answer.s)) * 4
	if got := answer.received(); got != want {
		return nil, fmt.Errorf("%s: answered %d bytes, want 4*n*n = %d%s: %w", e.Name(), got, want, stderr.tail(), ErrMalformedAnswer)
	}
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		// The answer is whole but something the solver started kept its output open.
		log.Warn("external solver left its output open after exiting", "err", waitErr)
	}
	if err := SpotCheck(c, answer.s, e.spotChecks); err != nil {
		log.Error("external solver answer refused by the spot check", "err", err)
		return nil, fmt.Errorf("%s: %w", e.Name(), err)
	}
	log.Info("external solver answered", "elapsed_ms", elapsed.Milliseconds())
	return answer.s, nil
}

// answerWriter decodes a stream of little-endian int32 into s, counting any bytes past
// len(s) entries instead of storing them.
type answerWriter struct {
	s       []int32
	filled  int     // entries of s written
	part    [4]byte // an entry split across writes
	partLen int
	extra   int64 // bytes past the last entry
}

// received is the number of bytes written so far.
func (w *answerWriter) received() int64 {
	return 4*int64(w.filled) + int64(w.partLen) + w.extra
}

func (w *answerWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.filled == len(w.s) {
		w.extra += int64(n)
		return n, nil
	}
	if w.partLen > 0 {
		k := copy(w.part[w.partLen:], p)
		w.partLen += k
		p = p[k:]
		if w.partLen < 4 {
			return n, nil
		}
		w.s[w.filled] = int32(binary.LittleEndian.Uint32(w.part[:]))
		w.filled++
		w.partLen = 0
	}
	k := min(len(p)/4, len(w.s)-w.filled)
	dst := w.s[w.filled : w.filled+k]
	for x := range dst {
		dst[x] = int32(binary.LittleEndian.Uint32(p[4*x:]))
	}
	w.filled += k
	p = p[4*k:]
	if w.filled == len(w.s) {
		w.extra += int64(len(p))
		return n, nil
	}
	w.partLen = copy(w.part[:], p)
	return n, nil
}

// lineLogger logs what a solver writes to standard error, one record per line, at most
// maxStderrLines lines of at most maxStderrLine bytes per run. It keeps the last line for
// error messages. exec.Cmd writes to it from one goroutine and Wait orders that before
// flush and tail.
type lineLogger struct {
	log     *slog.Logger
	buf     []byte
	lines   int
	dropped int
	last    string
}

func (l *lineLogger) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			room := max(maxStderrLine-len(l.buf), 0)
			l.buf = append(l.buf, p[:min(len(p), room)]...)
			break
		}
		room := max(maxStderrLine-len(l.buf), 0)
		l.buf = append(l.buf, p[:min(nl, room)]...)
		l.emit()
		p = p[nl+1:]
	}
	return n, nil
}

func (l *lineLogger) emit() {
	line := string(bytes.TrimRight(l.buf, "\r"))
	l.buf = l.buf[:0]
	if line == "" {
		return
	}
	l.last = line
	if l.lines >= maxStderrLines {
		l.dropped++
		return
	}
	l.lines++
	l.log.Info("solver stderr", "line", line)
}

// flush logs a last unterminated line and the count of lines dropped.
func (l *lineLogger) flush() {
	if len(l.buf) > 0 {
		l.emit()
	}
	if l.dropped > 0 {
		l.log.Warn("solver stderr truncated", "dropped_lines", l.dropped)
		l.dropped = 0
	}
}

// tail is the last stderr line as a suffix for an error message, or "".
func (l *lineLogger) tail() string {
	if l.last == "" {
		return ""
	}
	return " (stderr: " + strconv.Quote(l.last) + ")"
}
