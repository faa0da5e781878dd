// Package keeper implements x/gfl's state machine: the node registry, PoCP challenges and
// the GFL index with its epoch rebalance.
package keeper
