package outputs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// readAs sends the manifest request of task 7 signed by session under delegation d at time
// at, to the server at base.
func readAs(t *testing.T, client *http.Client, base string, session cryptotypes.PrivKey, owner string, d Delegation, at time.Time) (int, string) {
	req, err := http.NewRequest(http.MethodGet, base+"/v1/tasks/7/outputs", nil)
	require.NoError(t, err)
	require.NoError(t, SignDelegated(req, session, owner, d, at))
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error
}

// A session key the dashboard held leaks (a browser extension reads the tab's memory, a
// laptop is left signed in): with its delegation it read the owner's outputs and logs
// until the delegation expired, up to a day, and nothing the owner could do ended that.
// The owner now signs one revocation and sends it to the provider: the leaked session is
// refused from then on, also after the worker restarts (the revocations are kept on disk),
// while a session the owner delegates afterwards reads as before.
func TestAttackLeakedSessionKeyReadsAfterRevocation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revocations.json")
	kept, err := OpenRevocations(path)
	require.NoError(t, err)
	f := newFixture(t, WithRevocations(kept))
	now := f.clock()
	host := strings.TrimPrefix(f.srv.URL, "http://")
	owner := addrOf(t, f.owner)

	leaked := secp256k1.GenPrivKey()
	stolen, err := Delegate(f.owner, leaked, owner, host, now.Add(-time.Hour), now.Add(7*time.Hour))
	require.NoError(t, err)
	status, msg := readAs(t, f.srv.Client(), f.srv.URL, leaked, owner, stolen, now)
	require.Equal(t, http.StatusOK, status, msg)

	rv, err := Revoke(f.owner, owner, now)
	require.NoError(t, err)
	before, err := SendRevocation(context.Background(), f.srv.Client(), f.srv.URL, 7, rv)
	require.NoError(t, err)
	require.Equal(t, now.Unix(), before)

	status, msg = readAs(t, f.srv.Client(), f.srv.URL, leaked, owner, stolen, now.Add(time.Second))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, msg, "ended its sessions here")

	// the owner's new session, delegated after the revocation, reads
	fresh := secp256k1.GenPrivKey()
	d, err := Delegate(f.owner, fresh, owner, host, now, now.Add(8*time.Hour))
	require.NoError(t, err)
	status, msg = readAs(t, f.srv.Client(), f.srv.URL, fresh, owner, d, now.Add(time.Second))
	require.Equal(t, http.StatusOK, status, msg)

	// a delegation issued in the very second of a revocation that ends everything up to
	// now is ended too (RevokeAllUntil), and the next one is issued at its time
	sameSecond, err := Delegate(f.owner, leaked, owner, host, now.Add(time.Minute), now.Add(2*time.Hour))
	require.NoError(t, err)
	status, msg = readAs(t, f.srv.Client(), f.srv.URL, leaked, owner, sameSecond, now.Add(time.Minute))
	require.Equal(t, http.StatusOK, status, msg)
	all := RevokeAllUntil(now.Add(time.Minute + 300*time.Millisecond))
	require.Equal(t, now.Add(time.Minute).Truncate(time.Second).Add(time.Second), all)
	allOf, err := Revoke(f.owner, owner, all)
	require.NoError(t, err)
	before, err = SendRevocation(context.Background(), f.srv.Client(), f.srv.URL, 7, allOf)
	require.NoError(t, err)
	require.Equal(t, all.Unix(), before)
	status, msg = readAs(t, f.srv.Client(), f.srv.URL, leaked, owner, sameSecond, now.Add(time.Minute))
	require.Equal(t, http.StatusUnauthorized, status, msg)
	next, err := Delegate(f.owner, fresh, owner, host, all, all.Add(time.Hour))
	require.NoError(t, err)
	status, msg = readAs(t, f.srv.Client(), f.srv.URL, fresh, owner, next, now.Add(time.Minute))
	require.Equal(t, http.StatusOK, status, msg)
	now = all // what the server holds from here on

	// an older revocation sent again (by anyone who saw it) takes nothing back
	older, err := Revoke(f.owner, owner, now.Add(-2*time.Hour))
	require.NoError(t, err)
	before, err = SendRevocation(context.Background(), f.srv.Client(), f.srv.URL, 7, older)
	require.NoError(t, err)
	require.Equal(t, now.Unix(), before)

	// the worker restarts: the revocation is read back, the leaked session still refused
	reopened, err := OpenRevocations(path)
	require.NoError(t, err)
	require.Equal(t, now.Unix(), reopened.Before(owner))
	srv := httptest.NewServer(Handler(f.store, func(context.Context, uint64) (string, error) { return owner, nil }, f.clock, WithRevocations(reopened)))
	t.Cleanup(srv.Close)
	restarted := strings.TrimPrefix(srv.URL, "http://")
	stolenThere, err := Delegate(f.owner, leaked, owner, restarted, now.Add(-time.Hour), now.Add(7*time.Hour))
	require.NoError(t, err)
	status, msg = readAs(t, srv.Client(), srv.URL, leaked, owner, stolenThere, now.Add(time.Minute))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, msg, "ended its sessions here")

	// a day after the revocation every delegation issued before it has expired: the
	// server forgets it at its next change
	later := now.Add(MaxDelegation)
	got, err := reopened.revoke(owner, 0, later)
	require.NoError(t, err)
	require.Zero(t, got)
	require.Zero(t, reopened.Before(owner))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"owners": {}}`, string(b))
}

// Revocations only their owners can send, only for tasks held here: a stranger cannot end
// an owner's sessions, nor make the server keep anything for itself (keys of its own cost
// it nothing, so every one of them would have been an entry in the file).
func TestRevocationRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revocations.json")
	kept, err := OpenRevocations(path)
	require.NoError(t, err)
	f := newFixture(t, WithRevocations(kept))
	now := f.clock()
	owner, stranger := addrOf(t, f.owner), addrOf(t, f.other)
	send := func(task uint64, rv Revocation, edit func(*http.Request)) (int, string) {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/tasks/"+strconv.FormatUint(task, 10)+"/revocation", nil)
		require.NoError(t, err)
		req.Header.Set(HeaderRevocation, base64.StdEncoding.EncodeToString(rv.Doc))
		req.Header.Set(HeaderRevocationPubkey, base64.StdEncoding.EncodeToString(rv.OwnerPubkey))
		req.Header.Set(HeaderRevocationSignature, base64.StdEncoding.EncodeToString(rv.Signature))
		if rv.SignMode != "" {
			req.Header.Set(HeaderRevocationSignMode, rv.SignMode)
		}
		if edit != nil {
			edit(req)
		}
		resp, err := f.srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, body["revoked_before"]
		}
		return resp.StatusCode, body["error"]
	}
	revoke := func(by cryptotypes.PrivKey, addr string, before time.Time) Revocation {
		rv, err := Revoke(by, addr, before)
		require.NoError(t, err)
		return rv
	}
	good := revoke(f.owner, owner, now)

	for _, c := range []struct {
		name   string
		task   uint64
		rv     Revocation
		edit   func(*http.Request)
		status int
		msg    string
	}{
		{"signed by a stranger for the owner", 7, revoke(f.other, owner, now), nil, http.StatusUnauthorized, "does not belong to"},
		{"the owner's key swapped in", 7, func() Revocation {
			rv := revoke(f.other, owner, now)
			rv.OwnerPubkey = f.owner.PubKey().Bytes()
			return rv
		}(), nil, http.StatusUnauthorized, "does not verify"},
		{"the time edited", 7, func() Revocation {
			rv := good
			rv.Doc = RevocationDoc(owner, now.Add(time.Minute).Unix())
			return rv
		}(), nil, http.StatusUnauthorized, "does not verify"},
		{"ahead of the clock", 7, revoke(f.owner, owner, now.Add(MaxClockSkew+time.Minute)), nil, http.StatusUnauthorized, "after the server's clock"},
		{"a delegation doc in its place", 7, func() Revocation {
			d, err := Delegate(f.owner, secp256k1.GenPrivKey(), owner, "h", now, now.Add(time.Hour))
			require.NoError(t, err)
			return Revocation{Doc: d.Doc, OwnerPubkey: d.OwnerPubkey, Signature: d.Signature}
		}(), nil, http.StatusUnauthorized, "not a flops-output-revocation-v1 doc"},
		{"no doc", 7, good, func(r *http.Request) { r.Header.Del(HeaderRevocation) }, http.StatusUnauthorized, "must be base64"},
		{"an unknown sign mode", 7, good, func(r *http.Request) { r.Header.Set(HeaderRevocationSignMode, "eip191") }, http.StatusUnauthorized, "must be raw or adr036"},
		{"a stranger for itself, on the owner's task", 7, revoke(f.other, stranger, now), nil, http.StatusForbidden, "is not the owner of task 7"},
		{"the owner's task held nowhere here", 8, good, nil, http.StatusNotFound, "no outputs or logs on this machine"},
		{"an unknown task", 5, good, nil, http.StatusNotFound, "no outputs or logs on this machine"},
		{"a malformed task id", 0, good, func(r *http.Request) { r.URL.Path = "/v1/tasks/x/revocation" }, http.StatusBadRequest, "must be a decimal number"},
	} {
		status, msg := send(c.task, c.rv, c.edit)
		require.Equal(t, c.status, status, "%s: %s", c.name, msg)
		require.Contains(t, msg, c.msg, c.name)
	}
	require.Zero(t, kept.Before(owner))
	require.Zero(t, kept.Before(stranger))
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "no refused revocation wrote anything")

	// as a browser wallet signs it (ADR-036)
	adr := revoke(f.owner, owner, now.Add(-time.Minute))
	adr.SignMode = SignModeADR036
	adr.Signature, err = f.owner.Sign(ADR036SignDoc(owner, adr.Doc))
	require.NoError(t, err)
	status, before := send(7, adr, nil)
	require.Equal(t, http.StatusOK, status, before)
	require.Equal(t, strconv.FormatInt(now.Add(-time.Minute).Unix(), 10), before)

	// a revocation too old to matter (every delegation before it has expired) keeps nothing
	status, before = send(7, revoke(f.owner, owner, now.Add(-MaxDelegation-time.Hour)), nil)
	require.Equal(t, http.StatusOK, status, before)
	require.Equal(t, strconv.FormatInt(now.Add(-time.Minute).Unix(), 10), before)

	// a page on another origin may send one (the dashboard)
	pre, err := http.NewRequest(http.MethodOptions, f.srv.URL+"/v1/tasks/7/revocation", nil)
	require.NoError(t, err)
	pre.Header.Set("Origin", "http://127.0.0.1:8800")
	pre.Header.Set("Access-Control-Request-Method", http.MethodPost)
	resp, err := f.srv.Client().Do(pre)
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), http.MethodPost)
	for _, h := range revocationHeaders {
		require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), h)
	}
}

// A revocations file that cannot be read stops the worker rather than serving without it:
// starting with none would bring back every session its owner ended.
func TestOpenRevocationsRefusesAnUnreadableFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revocations.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"owners": {"flops1`), 0o600))
	_, err := OpenRevocations(path)
	require.ErrorContains(t, err, "output session revocations")
}

// fakeMarket answers the market queries OwnerProviders asks, from jobs and tasks.
type fakeMarket struct {
	markettypes.QueryClient
	jobs  []markettypes.Job
	tasks []markettypes.Task
}

func (m fakeMarket) JobsByOwner(_ context.Context, in *markettypes.QueryJobsByOwnerRequest, _ ...grpc.CallOption) (*markettypes.QueryJobsByOwnerResponse, error) {
	var out []markettypes.Job
	for _, j := range m.jobs {
		if j.Owner == in.Owner {
			out = append(out, j)
		}
	}
	return &markettypes.QueryJobsByOwnerResponse{Jobs: out}, nil
}

func (m fakeMarket) TasksByJob(_ context.Context, in *markettypes.QueryTasksByJobRequest, _ ...grpc.CallOption) (*markettypes.QueryTasksByJobResponse, error) {
	var out []markettypes.Task
	for _, t := range m.tasks {
		if t.JobId == in.JobId {
			out = append(out, t)
		}
	}
	return &markettypes.QueryTasksByJobResponse{Tasks: out}, nil
}

func (m fakeMarket) Task(_ context.Context, in *markettypes.QueryTaskRequest, _ ...grpc.CallOption) (*markettypes.QueryTaskResponse, error) {
	for _, t := range m.tasks {
		if t.Id == in.TaskId {
			return &markettypes.QueryTaskResponse{Task: t}, nil
		}
	}
	return nil, fmt.Errorf("task %d not found", in.TaskId)
}

func (m fakeMarket) Job(_ context.Context, in *markettypes.QueryJobRequest, _ ...grpc.CallOption) (*markettypes.QueryJobResponse, error) {
	for _, j := range m.jobs {
		if j.Id == in.JobId {
			return &markettypes.QueryJobResponse{Job: j}, nil
		}
	}
	return nil, fmt.Errorf("job %d not found", in.JobId)
}

type fakeGFL struct {
	gfltypes.QueryClient
	endpoints map[uint64]string
}

func (g fakeGFL) Node(_ context.Context, in *gfltypes.QueryNodeRequest, _ ...grpc.CallOption) (*gfltypes.QueryNodeResponse, error) {
	return &gfltypes.QueryNodeResponse{Node: gfltypes.Node{Id: in.NodeId, Endpoint: g.endpoints[in.NodeId]}}, nil
}

// The owner's revocation reaches every server that may hold something of its tasks: where
// outputs were published, where a task runs and where a run failed (logs), each once, and
// a server that pruned a task's outputs is asked for the next task it may hold.
func TestRevokeEverywhereReachesTheOwnersProviders(t *testing.T) {
	f := newFixture(t) // holds task 7 of f.owner
	now := f.clock()
	owner, stranger := addrOf(t, f.owner), addrOf(t, f.other)
	market := fakeMarket{
		jobs: []markettypes.Job{{Id: 1, Owner: owner}, {Id: 2, Owner: stranger}},
		tasks: []markettypes.Task{
			{Id: 6, JobId: 1, NodeId: 10, OutputUri: f.srv.URL + "/v1/tasks/6/outputs"}, // pruned there since
			{Id: 7, JobId: 1, NodeId: 11, OutputUri: f.srv.URL + "/v1/tasks/7/outputs", Failures: []markettypes.FailureReport{{NodeId: 12}}},
			{Id: 9, JobId: 2, NodeId: 13},
		},
	}
	gfl := fakeGFL{endpoints: map[uint64]string{10: f.srv.URL, 11: "http://unreachable.invalid", 12: f.srv.URL + "/", 13: "http://strangers.example"}}

	held, err := OwnerProviders(context.Background(), market, gfl, owner, nil)
	require.NoError(t, err)
	require.Equal(t, []Held{{Endpoint: f.srv.URL, Tasks: []uint64{6, 7}}, {Endpoint: "http://unreachable.invalid", Tasks: []uint64{7}}}, held)

	named, err := OwnerProviders(context.Background(), market, gfl, owner, []uint64{7})
	require.NoError(t, err)
	require.Equal(t, []Held{{Endpoint: f.srv.URL, Tasks: []uint64{7}}, {Endpoint: "http://unreachable.invalid", Tasks: []uint64{7}}}, named)
	_, err = OwnerProviders(context.Background(), market, gfl, owner, []uint64{9})
	require.ErrorContains(t, err, "task 9 is a task of "+stranger+"'s job 2")

	rv, err := Revoke(f.owner, owner, now)
	require.NoError(t, err)
	res := RevokeEverywhere(context.Background(), f.srv.Client(), rv, held)
	require.Len(t, res, 2)
	require.NoError(t, res[0].Err)
	require.Equal(t, uint64(7), res[0].Task, "task 6 is not held there: task 7 is named next")
	require.Equal(t, now.Unix(), res[0].Before)
	require.Error(t, res[1].Err)
	require.Zero(t, res[1].Task)
}
