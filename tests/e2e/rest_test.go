package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/network"
)

// restRoute is one GET route of a flops module as a REST client meets it: what it answers
// for the network's state (a validator's address, ids that exist nowhere), and what it
// answers for malformed input.
type restRoute struct {
	ok  int // for the placeholders below
	bad int // for a malformed id or address (0: the route takes none)
}

// restRoutes is every flops query route (checkRESTRoutes fails on a route in proto/ that
// is missing here). On the in-process network: no job, task, pool, dispute, challenge or
// node exists; the address is validator 0's (a provider with nothing).
var restRoutes = map[string]restRoute{
	"/flops/dps/v1/params":                                 {ok: 200},
	"/flops/dps/v1/era":                                    {ok: 200},
	"/flops/dps/v1/pool":                                   {ok: 200},
	"/flops/dps/v1/emissions/latest":                       {ok: 200}, // found: false until an epoch ends
	"/flops/dps/v1/emissions/{epoch}":                      {ok: 404, bad: 400},
	"/flops/dps/v1/emissions":                              {ok: 200},
	"/flops/dps/v1/rewards/{provider}":                     {ok: 200, bad: 400},
	"/flops/dps/v1/distribution":                           {ok: 200},
	"/flops/dps/v1/work/{provider}/{epoch}":                {ok: 200, bad: 400},
	"/flops/gfl/v1/params":                                 {ok: 200},
	"/flops/gfl/v1/nodes/{node_id}":                        {ok: 404, bad: 400},
	"/flops/gfl/v1/nodes":                                  {ok: 200},
	"/flops/gfl/v1/nodes/by_operator/{operator}":           {ok: 200, bad: 400},
	"/flops/gfl/v1/nodes/by_class/{gpu_class}":             {ok: 200, bad: 200}, // a class no node has: an empty page
	"/flops/gfl/v1/nodes/by_status/{status}":               {ok: 200, bad: 400},
	"/flops/gfl/v1/challenges/{challenge_id}":              {ok: 404, bad: 400},
	"/flops/gfl/v1/rounds/{round_id}":                      {ok: 404, bad: 400},
	"/flops/gfl/v1/beacon/{height}":                        {ok: 200, bad: 400},
	"/flops/gfl/v1/beacon_pending":                         {ok: 200},
	"/flops/gfl/v1/challenges/by_operator/{operator}":      {ok: 200, bad: 400},
	"/flops/gfl/v1/nodes/{node_id}/power":                  {ok: 404, bad: 400},
	"/flops/gfl/v1/nodes/{node_id}/stats":                  {ok: 404, bad: 400},
	"/flops/gfl/v1/network_power":                          {ok: 200},
	"/flops/market/v1/params":                              {ok: 200},
	"/flops/market/v1/jobs/{job_id}":                       {ok: 404, bad: 400},
	"/flops/market/v1/jobs":                                {ok: 200},
	"/flops/market/v1/jobs/by_owner/{owner}":               {ok: 200, bad: 400},
	"/flops/market/v1/jobs/by_status/{status}":             {ok: 200, bad: 400},
	"/flops/market/v1/tasks/{task_id}":                     {ok: 404, bad: 400},
	"/flops/market/v1/tasks":                               {ok: 200},
	"/flops/market/v1/tasks/by_status/{status}":            {ok: 200, bad: 400},
	"/flops/market/v1/jobs/{job_id}/tasks":                 {ok: 200, bad: 400},
	"/flops/market/v1/tasks/by_node/{node_id}":             {ok: 200, bad: 400},
	"/flops/market/v1/tasks/by_provider/{provider}":        {ok: 200, bad: 400},
	"/flops/market/v1/jobs/{job_id}/bids":                  {ok: 200, bad: 400},
	"/flops/market/v1/auctions":                            {ok: 200},
	"/flops/market/v1/jobs/{job_id}/history":               {ok: 404, bad: 400},
	"/flops/market/v1/nodes/{node_id}":                     {ok: 404, bad: 400},
	"/flops/market/v1/disputes/{dispute_id}":               {ok: 404, bad: 400},
	"/flops/market/v1/pools/{pool_id}":                     {ok: 404, bad: 400},
	"/flops/market/v1/pools":                               {ok: 200},
	"/flops/market/v1/job_counts":                          {ok: 200},
	"/flops/market/v1/queue":                               {ok: 200},
	"/flops/market/v1/schedulable/by_class":                {ok: 200},
	"/flops/market/v1/schedulable/by_region":               {ok: 200},
	"/flops/market/v1/pools/by_owner/{owner}":              {ok: 200, bad: 400},
	"/flops/market/v1/pools/{pool_id}/members":             {ok: 200, bad: 400},
	"/flops/market/v1/pools/{pool_id}/open_units":          {ok: 200, bad: 400},
	"/flops/market/v1/pools/{pool_id}/units/{unit_id}":     {ok: 404, bad: 400},
	"/flops/market/v1/pools/{pool_id}/earnings/{provider}": {ok: 200, bad: 400}, // nothing earned: zero
	"/flops/reputation/v1/params":                          {ok: 200},
	"/flops/reputation/v1/scores/{node_id}":                {ok: 200, bad: 400}, // known: false, the initial score
	"/flops/reputation/v1/history/{node_id}":               {ok: 200, bad: 400},
	"/flops/reputation/v1/ranked":                          {ok: 200},
	"/flops/reputation/v1/providers/{operator}":            {ok: 200, bad: 400}, // no nodes: the initial score
	"/flops/stakingslash/v1/params":                        {ok: 200},
	"/flops/stakingslash/v1/collateral/{provider}":         {ok: 200, bad: 400}, // nothing bonded: zero
	"/flops/stakingslash/v1/unbondings/{provider}":         {ok: 200, bad: 400},
	"/flops/stakingslash/v1/slashes/{provider}":            {ok: 200, bad: 400},
}

var placeholder = regexp.MustCompile(`\{(\w+)\}`)

// checkRESTRoutes hits every flops GET route on validator 0's REST gateway: each answers
// its expected status for well-formed input (200, or 404 for a record that does not
// exist, never a 5xx), and 400 for a malformed id, address or status; the list routes
// page (pagination.limit honoured, a next_key given when more remain).
func checkRESTRoutes(t *testing.T, val *network.Validator) {
	t.Helper()
	require.NotEmpty(t, val.APIAddress, "validator 0 serves the REST gateway")
	protoRoutes := readProtoRoutes(t)
	for _, r := range protoRoutes {
		require.Contains(t, restRoutes, r, "a route in proto/ without a case in restRoutes")
	}
	require.Len(t, restRoutes, len(protoRoutes), "restRoutes lists a route proto/ no longer has")

	addr := val.Address.String()
	good := map[string]string{
		"provider": addr, "operator": addr, "owner": addr, "gpu_class": "A100-80GB",
		"epoch": "7", "height": "1", "job_id": "999", "task_id": "999", "node_id": "999", "challenge_id": "999",
		"round_id": "999", "dispute_id": "999", "pool_id": "999", "unit_id": "999",
	}
	bad := map[string]string{"provider": "flops1nope", "operator": "cosmos1xyz", "owner": "not-an-address", "status": "NO_SUCH_STATUS", "gpu_class": "NO-SUCH-GPU"}
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		res, err := client.Get(val.APIAddress + path)
		require.NoError(t, err, path)
		defer func() { _ = res.Body.Close() }()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(body)
	}
	for _, route := range protoRoutes {
		want := restRoutes[route]
		// fill puts well-formed values in the route's placeholders, a malformed one in badOne's
		fill := func(badOne string) string {
			return placeholder.ReplaceAllStringFunc(route, func(m string) string {
				name := m[1 : len(m)-1]
				if name == badOne {
					if v, ok := bad[name]; ok {
						return v
					}
					return "abc" // a malformed integer
				}
				if name == "status" {
					switch {
					case strings.Contains(route, "/nodes/"):
						return "NODE_STATUS_ACTIVE"
					case strings.Contains(route, "/tasks/"):
						return "TASK_STATUS_RUNNING"
					}
					return "JOB_STATUS_ACTIVE"
				}
				return good[name]
			})
		}
		path := fill("")
		code, body := get(path)
		assert.Equalf(t, want.ok, code, "GET %s: %s", path, body)
		names := placeholder.FindAllStringSubmatch(route, -1)
		if want.bad == 0 {
			require.Empty(t, names, "%s takes input: give it a bad status", route)
			continue
		}
		require.NotEmpty(t, names, "%s takes no input", route)
		for _, n := range names {
			path := fill(n[1])
			code, body := get(path)
			assert.Equalf(t, want.bad, code, "GET %s (malformed %s): %s", path, n[1], body)
		}
	}

	// a list route pages: two of the validators' accounts per page, then the rest
	code, body := get("/cosmos/auth/v1beta1/accounts?pagination.limit=2")
	require.Equal(t, 200, code, body)
	var page struct {
		Accounts   []json.RawMessage `json:"accounts"`
		Pagination struct {
			NextKey string `json:"next_key"`
		} `json:"pagination"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Accounts, 2)
	require.NotEmpty(t, page.Pagination.NextKey)
	// a status filter in the query string is a number (the gateway's rule for enums there)
	code, body = get("/flops/market/v1/jobs?status=1&pagination.limit=5&pagination.count_total=true")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"total":"0"`)
	for _, q := range []string{"/flops/market/v1/tasks?status=77", "/flops/market/v1/jobs?status=77", "/flops/market/v1/jobs?status=ACTIVE"} {
		code, body = get(q)
		require.Equal(t, 400, code, "%s: %s", q, body)
	}
}

// readProtoRoutes lists the GET routes the flops query services declare in proto/.
func readProtoRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../proto/flops/*/v1/query.proto")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	re := regexp.MustCompile(`(?:\(google\.api\.http\)\.get = |get: )"([^"]+)"`)
	var out []string
	for _, f := range files {
		bz, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(bz), -1) {
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}
