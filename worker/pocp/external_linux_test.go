//go:build linux

package pocp

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A child the solver leaves behind on its stdout is killed with the process group.
func TestExternalSolverKillsStrayChildren(t *testing.T) {
	s := fakeExternal(t, "orphan", 30*time.Second)
	_, err := s.Solve(context.Background(), testChallenge(256, 1, 6))
	if !errors.Is(err, ErrMalformedAnswer) {
		t.Fatalf("err = %v, want ErrMalformedAnswer", err)
	}
	m := regexp.MustCompile(`grandchild pid (\d+)`).FindStringSubmatch(testLogs(t))
	if m == nil {
		t.Fatalf("no grandchild pid in the logs:\n%s", testLogs(t))
	}
	pid, _ := strconv.Atoi(m[1])
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie awaiting its reaper counts as dead).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	fields := strings.Fields(rest)
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
