//go:build unix

package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process in its own process group, its output in a log file.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs bin with args, stdout and stderr appended to logPath.
func (d *Demo) start(name, logPath, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) //nolint:gosec // our own binaries, our own arguments
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	d.waits.Go(func() error {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
		return nil
	})
	d.procs = append(d.procs, p)
	return p, nil
}

// running says whether the process is still alive.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail is the last n lines of a log file (for error messages).
func tail(path string, n int) string {
	bz, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(bz), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// localnet runs scripts/localnet.sh with args (it returns once the chain makes blocks).
func (d *Demo) localnet(ctx context.Context, args ...string) error {
	all := append([]string{"--home", d.chainHome(), "--binary", d.bin("flopsd")}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(d.o.Root, "scripts", "localnet.sh"), all...) //nolint:gosec // our script
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("localnet.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// stopChain stops the localnet's nodes.
func (d *Demo) stopChain() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = d.localnet(ctx, "stop")
}

// killValidator kills validator i (SIGKILL: a crash, not a shutdown).
func (d *Demo) killValidator(i int) error {
	bz, err := os.ReadFile(filepath.Join(d.chainHome(), "pids"))
	if err != nil {
		return err
	}
	pids := strings.Fields(string(bz))
	if i < 0 || i >= len(pids) {
		return fmt.Errorf("no validator %d (the localnet has %d)", i, len(pids))
	}
	pid, err := strconv.Atoi(pids[i])
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// command runs a short command and returns its combined output.
func command(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput() //nolint:gosec // our binaries
	return string(out), err
}
