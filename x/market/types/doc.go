// Package types holds x/market's messages, state records, params, errors and events.
package types
