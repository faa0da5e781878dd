//go:build linux

package pocp

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/flopsnet/flops/testutil/proctest"
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
	for !proctest.Gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
