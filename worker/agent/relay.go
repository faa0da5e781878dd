package agent

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flopsnet/flops/internal/beacon"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

const (
	// relayPerBlock bounds the rounds the relay sends per block (one tx each, so that a
	// round another relay put on chain first does not hold back the others).
	relayPerBlock = 4
	// drandFetchTimeout bounds one fetch of a round from one drand API.
	drandFetchTimeout = 5 * time.Second
	// drandMaxBody bounds a drand API's answer (a round is about 300 bytes of JSON).
	drandMaxBody = 16 << 10
)

// beaconActions relay the drand rounds the chain awaits (config beacon.drand_urls): the
// draws of a block wait for its round, and anyone may put a round on chain, the
// signature deciding. Each published round is fetched from the first API that answers
// with a signature valid under the chain's group key (so a wrong or lying API costs no
// fee), and sent in its own tx. Nothing when no URL is configured or drand is off.
func (a *Agent) beaconActions(ctx context.Context, now time.Time) []action {
	if len(a.cfg.Beacon.DrandURLs) == 0 {
		return nil
	}
	pending, err := a.gfl.PendingRounds(ctx, &gfltypes.QueryPendingRoundsRequest{})
	if err != nil || len(pending.Rounds) == 0 {
		return nil
	}
	params, err := a.gfl.Params(ctx, &gfltypes.QueryParamsRequest{})
	if err != nil {
		return nil
	}
	d := params.Params.Drand
	pk, err := beacon.DrandPublicKey(d.PublicKey)
	if err != nil {
		a.log.Warn("drand relay: the chain's group key", "err", err)
		return nil
	}
	var out []action
	for _, br := range pending.Rounds {
		if len(out) == relayPerBlock {
			break
		}
		if beacon.DrandRoundTime(d.GenesisTime, d.PeriodSeconds, br.Round).After(now) {
			break // not published yet, nor any later one
		}
		sig, err := a.fetchRound(ctx, br.Round, func(sig []byte) error {
			_, err := beacon.VerifyDrand(pk, br.Round, sig)
			return err
		})
		if err != nil {
			a.log.Warn("drand relay: no API gave the round", "round", br.Round, "err", err)
			continue
		}
		round := br.Round
		out = append(out, action{
			what: fmt.Sprintf("relay drand round %d", round),
			msgs: msgs(&gfltypes.MsgSubmitBeacon{Submitter: a.o.Chain.Address().String(), Round: round, Signature: sig}),
			after: func(err error) {
				if err == nil {
					a.log.Info("drand round relayed", "round", round, "first_block", br.Height)
				}
			},
		})
	}
	return out
}

// drandRound is a drand HTTP API's answer for a round (GET <base>/public/<round>).
type drandRound struct {
	Round     uint64 `json:"round"`
	Signature string `json:"signature"`
}

// fetchRound asks each configured drand API in turn for a round's signature and returns
// the first that check accepts.
func (a *Agent) fetchRound(ctx context.Context, round uint64, check func(sig []byte) error) ([]byte, error) {
	var errs []error
	for _, base := range a.cfg.Beacon.DrandURLs {
		sig, err := a.fetchRoundFrom(ctx, base, round)
		if err == nil {
			err = check(sig)
		}
		if err == nil {
			return sig, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", base, err))
	}
	return nil, errors.Join(errs...)
}

func (a *Agent) fetchRoundFrom(ctx context.Context, base string, round uint64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, drandFetchTimeout)
	defer cancel()
	url := strings.TrimRight(base, "/") + "/public/" + strconv.FormatUint(round, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := a.o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(res.Body, drandMaxBody))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, bytes.TrimSpace(body))
	}
	var r drandRound
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("not a drand round: %w", err)
	}
	if r.Round != round {
		return nil, fmt.Errorf("asked round %d, got round %d", round, r.Round)
	}
	return hex.DecodeString(r.Signature)
}
