//go:build unix

package pocp

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own and makes ctx's kill reach the
// whole group, so a solver behind a wrapper script dies with its wrapper. The returned
// function kills what is left of the group once cmd has been waited for.
func ownProcessGroup(cmd *exec.Cmd) (killGroup func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH when the group is gone
		}
	}
}
