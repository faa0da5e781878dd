// Package keeper implements x/market's state machine.
package keeper
