// Package testdirs prepares test directories for the worker's sandbox.
package testdirs

import (
	"os"
	"path/filepath"
	"testing"
)

// Reachable returns dir after giving it and its parents o+x when the process runs as
// root, so that the sandbox's user can reach a work directory made with t.TempDir (mode
// 0700): for tests of workers that run as root, as CI does.
func Reachable(t testing.TB, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return dir
	}
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatalf("reachable %s: %v", d, err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o001); err != nil {
				t.Fatalf("reachable %s: %v", d, err)
			}
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}
