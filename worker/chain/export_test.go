package chain

import "time"

// SkipSequence moves the signer's next sequence one ahead, as a tx of it does that CheckTx
// accepted and the node then lost (a validator killed and restarted loses its mempool).
// Call it between Submits only.
func (s *Signer) SkipSequence() { s.seq++ }

// FastSimulateRetries spaces the simulation's retries by d until the returned func runs.
func FastSimulateRetries(d time.Duration) (restore func()) {
	old := simulateRetry
	simulateRetry = d
	return func() { simulateRetry = old }
}

// FastResend spaces WaitTx's resends of a tx in no block yet by d until the returned func
// runs.
func FastResend(d time.Duration) (restore func()) {
	old := resendEvery
	resendEvery = d
	return func() { resendEvery = old }
}
