// Package types holds x/reputation's messages, state records, params, errors and events.
package types
