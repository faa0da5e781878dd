// Package types holds x/gfl's messages, state records, params, errors and events: the
// registry of compute nodes, the Proof-of-Computing-Power challenges and the GFL index
// (1 ugfl = 1 GFLOP/s of verified power).
package types
