// Package types holds x/staking-slash's messages, state records, params, errors and events.
package types
