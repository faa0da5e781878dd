// Package keeper implements x/reputation's state machine.
package keeper
