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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// ProtocolVersion is the version of the external-solver protocol (docs/pocp.md section 9)
// that this worker speaks; it is sent in every Request. A solve on one device sends version
// 1 (the whole of S), which every solver speaks; one spread over several devices sends
// BandVersion requests, each for a band of S's rows.
const ProtocolVersion = 1

// BandVersion is the protocol version of a request for a band of rows (RowFrom, RowTo).
const BandVersion = 2

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
	// RowFrom and RowTo (version 2 only) are the band of S's rows to answer, multiples
	// of 256: the answer is then rows RowFrom .. RowTo-1, 4*(RowTo-RowFrom)*n bytes.
	RowFrom *uint32 `json:"row_from,omitempty"`
	RowTo   *uint32 `json:"row_to,omitempty"`
}

// bandRequest is the request for rows [from, to) of c's answer.
func bandRequest(c gflpocp.Challenge, from, to uint32) Request {
	r := NewRequest(c)
	r.Version, r.RowFrom, r.RowTo = BandVersion, &from, &to
	return r
}

// devicesKey is the context key of OnDevices.
type devicesKey struct{}

// OnDevices says which GPUs (NVML UUIDs, GPU-... or MIG-...) the solves made with ctx may
// use. An external solver then runs one program per device, each with
// CUDA_VISIBLE_DEVICES set to its device and answering a band of S's rows (BandVersion),
// so that a node's PoCP challenge measures all its GPUs and a GEMM task runs on the GPUs
// the chain gave it; with one device, one program on it (version 1); with none, one
// program on the solver's default device. The CPU solver ignores it.
func OnDevices(ctx context.Context, uuids []string) context.Context {
	return context.WithValue(ctx, devicesKey{}, append([]string(nil), uuids...))
}

// DevicesOf is the GPUs OnDevices put in ctx (nil: none).
func DevicesOf(ctx context.Context) []string {
	d, _ := ctx.Value(devicesKey{}).([]string)
	return d
}

// band is one program's share of a solve: rows [from, to) of S on device ("": the
// solver's default).
type band struct {
	device   string
	from, to uint32
}

// bandsOf splits S's n rows over the devices in bands of whole 256-row chunks, as even
// as they go (a device left without a chunk gets no band).
func bandsOf(n uint32, devices []string) []band {
	if len(devices) <= 1 {
		d := ""
		if len(devices) == 1 {
			d = devices[0]
		}
		return []band{{device: d, from: 0, to: n}}
	}
	chunks := n / gflpocp.ChunkEntries
	k := min(uint32(len(devices)), chunks)
	out := make([]band, 0, k)
	for i := range k {
		from, to := chunks*i/k*gflpocp.ChunkEntries, chunks*(i+1)/k*gflpocp.ChunkEntries
		out = append(out, band{device: devices[i], from: from, to: to})
	}
	return out
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
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if e.timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, e.timeout, errTimeoutCause)
	}
	defer cancel()

	n := int(c.N)
	s := make([]int32, n*n)
	bands := bandsOf(c.N, DevicesOf(ctx))
	start := time.Now()
	// the bands run together, one program per device; the first to fail stops the others
	g, bandCtx := errgroup.WithContext(runCtx)
	split := len(bands) > 1 // version 2 requests, one band each
	for _, b := range bands {
		g.Go(func() error {
			return e.solveBand(ctx, runCtx, bandCtx, c, b, split, s[int(b.from)*n:int(b.to)*n])
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	log := e.log.With("n", c.N, "r", c.R)
	if err := SpotCheck(c, s, e.spotChecks); err != nil {
		log.Error("external solver answer refused by the spot check", "err", err)
		return nil, fmt.Errorf("%s: %w", e.Name(), err)
	}
	log.Info("external solver answered", "elapsed_ms", time.Since(start).Milliseconds(), "devices", len(bands))
	return s, nil
}

// solveBand runs the program for one band (split: one of several, asked with a version 2
// request) and decodes its answer into dst: ctx is the caller's, runCtx the solve's (with
// its timeout), bandCtx runCtx ended also when another band failed.
func (e *externalSolver) solveBand(ctx, runCtx, bandCtx context.Context, c gflpocp.Challenge, b band, split bool, dst []int32) error {
	req := NewRequest(c)
	if split {
		req = bandRequest(c, b.from, b.to)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", e.Name(), err) // unreachable: plain fields
	}
	line = append(line, '\n')

	log := e.log.With("n", c.N, "r", c.R)
	if split || b.device != "" {
		log = log.With("device", b.device, "rows", fmt.Sprintf("%d-%d", b.from, b.to))
	}
	answer := &answerWriter{s: dst}
	stderr := &lineLogger{log: log}
	cmd := exec.CommandContext(bandCtx, e.path, e.args...)
	cmd.Stdin = bytes.NewReader(line)
	cmd.Stdout = answer
	cmd.Stderr = stderr
	cmd.WaitDelay = e.waitDelay
	if b.device != "" {
		cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+b.device)
	}
	killGroup := ownProcessGroup(cmd)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start %s: %w: %w", e.Name(), e.path, ErrSolverFailed, err)
	}
	log.Debug("external solver started", "pid", cmd.Process.Pid)
	waitErr := cmd.Wait()
	killGroup() // stray grandchildren, if any, die with the solver
	stderr.flush()
	elapsed := time.Since(start)

	if ctx.Err() != nil {
		return fmt.Errorf("%s: stopped after %s: %w", e.Name(), elapsed.Round(time.Millisecond), context.Cause(ctx))
	}
	if waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
		if errors.Is(context.Cause(runCtx), errTimeoutCause) {
			return fmt.Errorf("%s: killed after its timeout of %s: %w", e.Name(), e.timeout, ErrSolverTimeout)
		}
		return fmt.Errorf("%s: %w%s: %w", e.Name(), waitErr, stderr.tail(), ErrSolverFailed)
	}
	want := int64(len(answer.s)) * 4
	if got := answer.received(); got != want {
		what := "4*n*n"
		if split {
			what = fmt.Sprintf("4*n*(rows %d-%d)", b.from, b.to)
		}
		return fmt.Errorf("%s: answered %d bytes, want %s = %d%s: %w", e.Name(), got, what, want, stderr.tail(), ErrMalformedAnswer)
	}
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		// The answer is whole but something the solver started kept its output open.
		log.Warn("external solver left its output open after exiting", "err", waitErr)
	}
	return nil
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
