#!/usr/bin/env bash
# A local flops chain on 127.0.0.1 in a fresh home, with funded test-keyring accounts for a
# client and two providers, short epochs and 1 s blocks. Ctrl-C stops every node it started.
#
#   scripts/localnet.sh                    1 validator, in the foreground
#   scripts/localnet.sh --validators 4     4 validators (node0..node3) on 127.0.0.1
#   scripts/localnet.sh --detach           start, wait for blocks, return (pids in HOME/pids)
#   scripts/localnet.sh stop               stop a detached localnet
#
# Options: --home DIR (default .localnet), --binary PATH (default build/flopsd),
#          --epoch DURATION (default 60s), --chain-id ID (default flops-local-1),
#          --port-offset N (shifts every port by N, default 0),
#          --reward-pool UDPS (the DPS reward pool's genesis balance, default 1,000,000 DPS),
#          --set MODULE.PARAM=VALUE (a module param in genesis, repeatable; e.g.
#            --set gfl.challenge_interval_blocks=10),
#          --inv-check-period N (assert every registered invariant every N blocks; a broken
#            one halts the node; default 1, 0 turns the checks off)
set -euo pipefail

cd "$(dirname "$0")/.."
HOME_DIR=${LOCALNET_HOME:-$PWD/.localnet}
BIN=${FLOPSD:-$PWD/build/flopsd}
VALIDATORS=1
DETACH=0
EPOCH=60s
CHAIN_ID=flops-local-1
PORT_OFFSET=0
CMD=start
SETS=()
POOL=1000000000000
INV_PERIOD=1

while [ $# -gt 0 ]; do
  case "$1" in
    --validators) VALIDATORS=$2; shift 2 ;;
    --home) HOME_DIR=$2; shift 2 ;;
    --binary) BIN=$2; shift 2 ;;
    --epoch) EPOCH=$2; shift 2 ;;
    --chain-id) CHAIN_ID=$2; shift 2 ;;
    --port-offset) PORT_OFFSET=$2; shift 2 ;;
    --set) SETS+=("$2"); shift 2 ;;
    --reward-pool) POOL=$2; shift 2 ;;
    --inv-check-period) INV_PERIOD=$2; shift 2 ;;
    --detach) DETACH=1; shift ;;
    stop) CMD=stop; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "localnet: unknown argument $1" >&2; exit 2 ;;
  esac
done

# ours PID: the process is one of this home's nodes (a pid in a stale pids file may have
# been reused by another process since: it is left alone).
ours() {
  local args
  if [ -r "/proc/$1/cmdline" ]; then args=$(tr '\0' ' ' < "/proc/$1/cmdline")
  else args=$(ps -o args= -p "$1" 2>/dev/null) || return 1; fi
  [[ "$args" == *" --home $HOME_DIR/node"* ]]
}

stop_nodes() {
  [ -f "$HOME_DIR/pids" ] || return 0
  local pids=()
  while read -r pid; do
    if ours "$pid"; then pids+=("$pid"); kill "$pid" 2>/dev/null || true; fi
  done < "$HOME_DIR/pids"
  for pid in ${pids[@]+"${pids[@]}"}; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -f "$HOME_DIR/pids"
}

if [ "$CMD" = stop ]; then
  stop_nodes
  echo "localnet: stopped"
  exit 0
fi

[ -x "$BIN" ] || { echo "localnet: $BIN not found; run 'make build' first" >&2; exit 1; }
command -v python3 >/dev/null || { echo "localnet: python3 is required to edit genesis" >&2; exit 1; }
[ "$VALIDATORS" -ge 1 ] 2>/dev/null || { echo "localnet: --validators must be >= 1" >&2; exit 2; }

stop_nodes

port() { echo $(( $1 + PORT_OFFSET + 10 * $2 )); }   # port BASE NODE_INDEX
node_home() { echo "$HOME_DIR/node$1"; }

# Every port a node listens on must be free before anything starts: a chain left running
# by an earlier localnet or demo (killed outright, its home wiped) would otherwise keep
# the ports, answer in place of this one, and be reported as this localnet making blocks.
taken=$(for i in $(seq 0 $((VALIDATORS - 1))); do
  printf '%s node%s\n' "$(port 26656 "$i") p2p" "$i" "$(port 26657 "$i") rpc" "$i" \
    "$(port 26660 "$i") metrics" "$i" "$(port 1317 "$i") rest" "$i" "$(port 9090 "$i") grpc" "$i"
done | python3 -c '
import socket, sys
for line in sys.stdin:
    port, what, node = line.split()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the nodes listen
    try:
        s.bind(("127.0.0.1", int(port)))
    except OSError as e:
        print("  127.0.0.1:%s (%s %s): %s" % (port, node, what, e.strerror))
    finally:
        s.close()
')
if [ -n "$taken" ]; then
  echo "localnet: ports in use, so nothing was started:" >&2
  echo "$taken" >&2
  echo "localnet: another localnet or demo still running? Stop it (scripts/localnet.sh stop --home ITS_HOME; 'ss -ltnp' names the process) or shift every port with --port-offset N" >&2
  exit 1
fi

rm -rf "$HOME_DIR"
mkdir -p "$HOME_DIR"
KR=(--keyring-backend test)

# 1. Homes, validator keys and the shared accounts (in node0's keyring, which clients use).
for i in $(seq 0 $((VALIDATORS - 1))); do
  "$BIN" init "node$i" --chain-id "$CHAIN_ID" --home "$(node_home "$i")" >/dev/null 2>&1
  "$BIN" keys add "val$i" "${KR[@]}" --home "$(node_home "$i")" >/dev/null 2>&1
done
H0=$(node_home 0)
for name in client provider provider2; do
  "$BIN" keys add "$name" "${KR[@]}" --home "$H0" >/dev/null 2>&1
done
addr() { "$BIN" keys show "$1" -a "${KR[@]}" --home "${2:-$H0}"; }

# 2. Genesis accounts: validators get stake, the client and providers get DPS to pay and bond.
for i in $(seq 0 $((VALIDATORS - 1))); do
  "$BIN" genesis add-genesis-account "$(addr "val$i" "$(node_home "$i")")" 1000000000000udps --home "$H0" >/dev/null
done
for name in client provider provider2; do
  "$BIN" genesis add-genesis-account "$(addr "$name")" 100000000000udps --home "$H0" >/dev/null
done

# The dps module account's address: the first 20 bytes of sha256("dps"), in bech32.
POOL_ADDR=$("$BIN" debug addr "$(printf dps | sha256sum | cut -c1-40)" | awk '/^Bech32 Acc:/ {print $3}')
[ -n "$POOL_ADDR" ] || { echo "localnet: could not derive the dps module address" >&2; exit 1; }

# 3. Dev-chain parameters: short epochs, votes and unbonding; frequent, short challenges.
python3 - "$H0/config/genesis.json" "$EPOCH" "$POOL" "$POOL_ADDR" "${SETS[@]}" <<'PY'
import json, re, sys
path, epoch, pool_udps, pool_addr, sets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
g = json.load(open(path))
s = g["app_state"]
for e in s["epochs"]["epochs"]:
    if e["identifier"] == "flops":
        e["duration"] = epoch
s["gov"]["params"]["voting_period"] = "60s"
s["gov"]["params"]["expedited_voting_period"] = "30s"
s["staking"]["params"]["unbonding_time"] = "300s"
s["stakingslash"]["params"]["unbonding_time"] = "120s"
s["gfl"]["params"]["challenge_interval_blocks"] = "30"
s["gfl"]["params"]["challenge_target_seconds"] = "5"
s["gfl"]["params"]["challenge_commit_timeout"] = "60s"
# The dev chain's GPUs are mocks (or real ones answering with the CPU solver): the launch
# class table's PoCP power floors would re-class every node at its first rebalance.
for c in s["gfl"]["params"]["gpu_classes"]:
    c["min_gflops_per_gpu"] = "0"
    c["max_gflops_per_gpu"] = "0"
s["market"]["params"]["auction_window_blocks"] = "5"
s["market"]["params"]["challenge_window_blocks"] = "5"
# A CPU's or mock GPU's few GFLOP/s are a millionth of a GPU's: the dev chain pays 1 DPS
# per 100 ugfl-epochs (mainnet: 1 DPS per 100 GFL), so that the epochs' emission shows.
s["dps"]["params"]["dps_per_gfl"] = "10000"
# The DPS reward pool (the dps module account) starts funded, as a chain's genesis would.
pool_amount = int(pool_udps)
if pool_amount > 0:
    s["bank"]["balances"].append({"address": pool_addr, "coins": [{"denom": "udps", "amount": str(pool_amount)}]})
    for c in s["bank"]["supply"]:
        if c["denom"] == "udps":
            c["amount"] = str(int(c["amount"]) + pool_amount)
for kv in sets:
    key, _, value = kv.partition("=")
    module, _, param = key.partition(".")
    params = s.get(module, {}).get("params")
    if params is None or param not in params:
        sys.exit("localnet: --set %s: no param %s in %s's genesis" % (kv, param, module))
    params[param] = value
json.dump(g, open(path, "w"), indent=1)
PY

# 4. One gentx per validator, on loopback (gentx would record the machine's LAN address).
for i in $(seq 0 $((VALIDATORS - 1))); do
  H=$(node_home "$i")
  [ "$i" -eq 0 ] || cp "$H0/config/genesis.json" "$H/config/genesis.json"
  "$BIN" genesis gentx "val$i" 500000000000udps --chain-id "$CHAIN_ID" "${KR[@]}" --home "$H" \
    --ip 127.0.0.1 --p2p-port "$(port 26656 "$i")" --moniker "node$i" >/dev/null 2>&1
  [ "$i" -eq 0 ] || cp "$H"/config/gentx/*.json "$H0/config/gentx/"
done
"$BIN" genesis collect-gentxs --home "$H0" >/dev/null 2>&1
"$BIN" genesis validate --home "$H0" >/dev/null

# 5. Every node: same genesis, loopback ports, 1 s blocks, peers = the others, no PEX.
peers=""
for i in $(seq 0 $((VALIDATORS - 1))); do
  id=$("$BIN" comet show-node-id --home "$(node_home "$i")")
  peers="$peers${peers:+,}$id@127.0.0.1:$(port 26656 "$i")"
done
for i in $(seq 0 $((VALIDATORS - 1))); do
  H=$(node_home "$i")
  [ "$i" -eq 0 ] || cp "$H0/config/genesis.json" "$H/config/genesis.json"
  my_peers=$(echo "$peers" | tr ',' '\n' | grep -v "127.0.0.1:$(port 26656 "$i")$" | paste -sd, - || true)
  python3 - "$H/config" "$my_peers" "$i" "$PORT_OFFSET" "$CHAIN_ID" <<'PY'
import re, sys
cfg, peers, i, off, chain_id = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
p = lambda base: base + off + 10 * i
def edit(path, subs):
    # Sets key = value inside [section] (the first occurrence before the next header).
    lines = open(path).read().split("\n")
    for section, key, value in subs:
        cur, done = None, False
        for n, line in enumerate(lines):
            if line.startswith("["):
                cur = line.strip()
            elif cur == "[%s]" % section and re.match(r"^%s\s*=" % re.escape(key), line):
                lines[n] = "%s = %s" % (key, value)
                done = True
                break
        if not done:
            sys.exit("localnet: %s: no [%s] %s" % (path, section, key))
    open(path, "w").write("\n".join(lines))
edit(cfg + "/config.toml", [
    ("rpc", "laddr", '"tcp://127.0.0.1:%d"' % p(26657)),
    ("rpc", "pprof_laddr", '""'),
    # the web dashboard (web/) and Keplr call the RPC from a page on another origin
    ("rpc", "cors_allowed_origins", '["*"]'),
    ("p2p", "laddr", '"tcp://127.0.0.1:%d"' % p(26656)),
    ("p2p", "persistent_peers", '"%s"' % peers),
    ("p2p", "pex", "false"),
    ("p2p", "addr_book_strict", "false"),
    ("p2p", "allow_duplicate_ip", "true"),
    ("consensus", "timeout_commit", '"1s"'),
    # CometBFT's and the app's Prometheus metrics, on loopback, shifted like every port
    ("instrumentation", "prometheus", "true"),
    ("instrumentation", "prometheus_listen_addr", '"127.0.0.1:%d"' % p(26660)),
])
edit(cfg + "/app.toml", [
    ("api", "enable", "true"),
    ("api", "address", '"tcp://127.0.0.1:%d"' % p(1317)),
    ("api", "enabled-unsafe-cors", "true"),
    ("grpc", "address", '"127.0.0.1:%d"' % p(9090)),
])
s = open(cfg + "/app.toml").read()
s = re.sub(r'^minimum-gas-prices = .*$', 'minimum-gas-prices = "0udps"', s, count=1, flags=re.M)
open(cfg + "/app.toml", "w").write(s)
s = open(cfg + "/client.toml").read()
s = re.sub(r'^node = .*$', 'node = "tcp://127.0.0.1:%d"' % p(26657), s, count=1, flags=re.M)
s = re.sub(r'^chain-id = .*$', 'chain-id = "%s"' % chain_id, s, count=1, flags=re.M)
s = re.sub(r'^keyring-backend = .*$', 'keyring-backend = "test"', s, count=1, flags=re.M)
open(cfg + "/client.toml", "w").write(s)
PY
done

# 6. Start the nodes.
: > "$HOME_DIR/pids"
for i in $(seq 0 $((VALIDATORS - 1))); do
  "$BIN" start --home "$(node_home "$i")" --inv-check-period "$INV_PERIOD" > "$HOME_DIR/node$i.log" 2>&1 &
  echo $! >> "$HOME_DIR/pids"
done

RPC="http://127.0.0.1:$(port 26657 0)"
NODE0_ID=$("$BIN" comet show-node-id --home "$H0")
# height: node0's latest block, as its RPC says; 0 while it does not answer. A node
# other than node0 answering there (another chain took the port after the check above)
# is refused, not waited on.
height() {
  curl -s "$RPC/status" 2>/dev/null | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["result"]
    node, chain, h = r["node_info"]["id"], r["node_info"]["network"], int(r["sync_info"]["latest_block_height"])
except Exception:
    print(0); sys.exit()
print(h if node == sys.argv[1] else "node %s of chain %s" % (node, chain))' "$NODE0_ID" || true
}
for _ in $(seq 1 120); do
  h=$(height)
  if [[ "$h" == node* ]]; then
    echo "localnet: $RPC answers as $h, not as this localnet's node0 ($NODE0_ID): another chain holds the port" >&2
    stop_nodes; exit 1
  fi
  [ "$h" -ge 2 ] && break
  if ! kill -0 "$(head -1 "$HOME_DIR/pids")" 2>/dev/null; then
    echo "localnet: node0 exited; see $HOME_DIR/node0.log" >&2; tail -20 "$HOME_DIR/node0.log" >&2; exit 1
  fi
  sleep 0.5
done
[ "$h" -ge 2 ] || { echo "localnet: no blocks after 60 s; see $HOME_DIR/node0.log" >&2; stop_nodes; exit 1; }

cat <<EOF
localnet: $VALIDATORS validator(s) of $CHAIN_ID making blocks (height $(height))
  home      $HOME_DIR   (keyring: test, in node0)
  rpc       $RPC
  grpc      127.0.0.1:$(port 9090 0)
  rest      http://127.0.0.1:$(port 1317 0)
  metrics   http://127.0.0.1:$(port 26660 0)/metrics
  wallet    chain/keplr/localnet.json (Keplr), chain/registry/flopslocal (chain registry)
  client    $(addr client)
  provider  $(addr provider)
  provider2 $(addr provider2)
  logs      $HOME_DIR/node*.log
  try       $BIN q gfl params --home $H0
EOF

if [ "$DETACH" -eq 1 ]; then
  exit 0
fi
trap 'echo; stop_nodes; echo "localnet: stopped"; exit 0' INT TERM
echo "localnet: Ctrl-C to stop"
while kill -0 "$(head -1 "$HOME_DIR/pids")" 2>/dev/null; do sleep 1; done
echo "localnet: node0 exited; see $HOME_DIR/node0.log" >&2
stop_nodes
exit 1
