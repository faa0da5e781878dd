//go:build unix && !linux

package demo

import "syscall"

// procAttr puts a child in its own process group (no parent-death signal outside Linux: a
// demo killed outright leaves its workers running there).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
