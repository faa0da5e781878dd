package demo

import "syscall"

// procAttr puts a child in its own process group and has the kernel send it SIGTERM when
// the demo dies, however it dies: a demo killed outright (SIGKILL, the OOM killer, a test
// binary past its timeout) leaves no worker behind holding its ports and GPUs. SIGTERM
// lets the worker stop its tasks' sandboxes as on Ctrl-C. The signal follows the thread
// that started the child, and Go ends a thread only under a goroutine that locked it and
// returned, which the demo never does.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
