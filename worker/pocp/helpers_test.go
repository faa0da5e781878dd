package pocp

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

func testChallenge(n, r uint32, tag byte) gflpocp.Challenge {
	return gflpocp.Challenge{Seed: gflpocp.ChallengeSeed([]byte{tag, 0x5E}, uint64(n), uint64(r)), N: n, R: r}
}

// logBuffer collects log records; exec's copying goroutines and the test write to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logs maps a test to its log buffer, so that a test can read what its solver logged.
var logs sync.Map

// testLogger is a text logger into a buffer that testLogs returns.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	b, _ := logs.LoadOrStore(t.Name(), &logBuffer{})
	return slog.New(slog.NewTextHandler(b.(*logBuffer), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func testLogs(t *testing.T) string {
	t.Helper()
	b, ok := logs.Load(t.Name())
	if !ok {
		return ""
	}
	return b.(*logBuffer).String()
}

func countLines(s, substr string) int {
	c := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			c++
		}
	}
	return c
}

// stubSolver answers with a fixed function and counts its calls.
type stubSolver struct {
	name  string
	solve func(ctx context.Context, c gflpocp.Challenge) ([]int32, error)
	mu    sync.Mutex
	seen  []gflpocp.Challenge
}

func (s *stubSolver) Name() string { return s.name }

func (s *stubSolver) Solve(ctx context.Context, c gflpocp.Challenge) ([]int32, error) {
	s.mu.Lock()
	s.seen = append(s.seen, c)
	s.mu.Unlock()
	return s.solve(ctx, c)
}

func (s *stubSolver) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}
