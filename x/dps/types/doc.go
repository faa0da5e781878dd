// Package types holds x/dps's messages, state records, params, errors and events, and the
// emission maths: emission.go has the pure functions (era update and halvings, capped
// emission, split, availability and work rewards) that the keeper applies and that
// scripts/emission plots.
package types
