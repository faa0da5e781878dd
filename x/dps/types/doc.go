// Package types holds x/dps's messages, state records, params, errors and events.
package types
