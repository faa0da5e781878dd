// Package keeper implements x/dps's state machine.
package keeper
