//go:build !flopscheat

package config

// CheatBuild is true only in a test build (go build -tags flopscheat): a production
// flops-worker has no switch that makes it commit wrong results.
const CheatBuild = false
