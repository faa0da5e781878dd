// Package integration runs scenarios on the fully wired app (testutil/apptest): real
// bank, epochs and every flops module, driven block by block with signed transactions.
package integration
