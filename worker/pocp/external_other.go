//go:build !unix

package pocp

import "os/exec"

// ownProcessGroup leaves cmd as it is: without process groups ctx's kill reaches the
// solver itself only.
func ownProcessGroup(*exec.Cmd) (killGroup func()) {
	return func() {}
}
