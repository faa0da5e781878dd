// Package testutil holds test-only helpers: keeper fixtures on real stores, fakes of other
// modules' keepers, the in-process network, sample data, test directories and certificates
// (testdirs) and a local container image (testimage). Nothing outside _test files
// and test helpers imports it.
package testutil
