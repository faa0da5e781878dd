// Package keeper implements x/staking-slash's state machine.
package keeper
