//go:build unix

// Package proctest tells tests whether a process they started, or one started under them,
// has exited.
package proctest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Gone reports whether pid has exited: no such process, or a zombie awaiting its reaper
// (which signal 0 still reaches). Zombies are told apart through /proc (Linux); where there
// is no /proc, a zombie counts as running.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		_, noProc := os.Stat("/proc/self")
		return errors.Is(err, fs.ErrNotExist) && noProc == nil // exited since the signal
	}
	// pid (comm) STATE ...: the state follows the last ')'
	s := string(b)
	if x := strings.LastIndexByte(s, ')'); x >= 0 && x+2 < len(s) {
		return s[x+2] == 'Z' || s[x+2] == 'X'
	}
	return false
}
