// Package testutil holds test-only helpers: keeper fixtures on real stores, fakes of other
// modules' keepers, the in-process network, and sample data. Nothing outside _test files
// and test helpers imports it.
package testutil
