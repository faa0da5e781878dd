#!/usr/bin/env bash
# DPS over IBC between two flops localnets, carried by a real relayer (ts-relayer, from
# tests/ibc/relayer), out and back, with every balance checked:
#
#   1. two localnets, flops-a-1 and flops-b-1, on port offsets 1000 and 2000;
#   2. a relayer key funded on both; a light client of each chain on the other, a connection
#      and an ICS-20 channel (transfer <-> transfer), made by `ibc-setup ics20`;
#   3. the client on A sends AMOUNT udps to the client on B; `ibc-relayer start --once`
#      relays the packet and its ack. A's channel escrow holds exactly AMOUNT udps; B's
#      client holds exactly AMOUNT of the voucher ibc/<hash of transfer/CHANNEL/udps>, and
#      that is the voucher's whole supply;
#   4. B's client sends the voucher back; the relayer carries it. The voucher's supply on B is
#      0, A's escrow is 0, and A's client has every udps it started with (localnets charge no
#      fees).
#
#   scripts/ibc-relay.sh            run it, stop both localnets at the end (about 2-3 min)
#   scripts/ibc-relay.sh --keep     leave both chains and the relayer's home for a look
#
# The relayer's home (registry.yaml, app.yaml with its mnemonic) is .ibc-relay/relayer. To
# relay continuously instead of once:
#   cd tests/ibc/relayer && node -r ./compat.cjs node_modules/@confio/relayer/build/binary/ibc-relayer/index.js \
#     start --home ../../../.ibc-relay/relayer --poll 2
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${FLOPSD:-$ROOT/build/flopsd}
WORK=${IBC_RELAY_HOME:-$ROOT/.ibc-relay}
AMOUNT=1234567
KEEP=0
[ "${1:-}" = --keep ] && KEEP=1

[ -x "$BIN" ] || { echo "ibc-relay: $BIN not found; run 'make build' first" >&2; exit 1; }
command -v node >/dev/null || { echo "ibc-relay: node (>= 20) is required" >&2; exit 1; }

say() { printf 'ibc-relay: %s\n' "$*"; }
fail() { printf 'ibc-relay: FAIL: %s\n' "$*" >&2; exit 1; }

declare -A OFFSET=([a]=1000 [b]=2000)
home() { echo "$WORK/$1/node0"; }
rpc() { echo "tcp://127.0.0.1:$((26657 + OFFSET[$1]))"; }
fl() { local c=$1; shift; "$BIN" "$@" --home "$(home "$c")" --node "$(rpc "$c")"; }

stop_all() {
  for c in a b; do
    FLOPSD=$BIN LOCALNET_HOME=$WORK/$c scripts/localnet.sh stop >/dev/null 2>&1 || true
  done
}
if [ "$KEEP" = 0 ]; then trap stop_all EXIT; fi

# balance CHAIN ADDRESS DENOM: the amount, 0 when absent.
balance() {
  fl "$1" q bank balance "$2" "$3" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["balance"]["amount"])'
}
supply() {
  fl "$1" q bank total-supply-of "$2" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["amount"]["amount"])'
}
escrowed() {
  fl "$1" q ibc-transfer total-escrow "$2" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["amount"]["amount"])'
}
# send CHAIN ARGS...: broadcast a tx from the chain's client key and wait until it is in a
# block with code 0.
send() {
  local c=$1; shift
  local out hash code
  out=$(fl "$c" tx "$@" --from client --keyring-backend test --chain-id "flops-$c-1" --yes -o json)
  hash=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["txhash"])')
  for _ in $(seq 1 30); do
    if out=$(fl "$c" q tx "$hash" -o json 2>/dev/null); then
      code=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("code", 0))')
      [ "$code" = 0 ] || fail "tx $hash on flops-$c-1 failed with code $code"
      return 0
    fi
    sleep 1
  done
  fail "tx $hash on flops-$c-1 not in a block after 30 s"
}
expect() { # expect WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got $2, want $3"
  say "ok  $1 = $2"
}

# 1. Two chains.
stop_all
rm -rf "$WORK"
mkdir -p "$WORK/relayer"
for c in a b; do
  FLOPSD=$BIN LOCALNET_HOME=$WORK/$c scripts/localnet.sh --chain-id "flops-$c-1" \
    --port-offset "${OFFSET[$c]}" --detach >"$WORK/localnet-$c.log" 2>&1 ||
    { cat "$WORK/localnet-$c.log" >&2; fail "localnet flops-$c-1 did not start"; }
done
say "chains flops-a-1 ($(rpc a)) and flops-b-1 ($(rpc b)) are up"

# 2. The relayer, its key, and the ICS-20 channel.
RELAYER_DIR=$ROOT/tests/ibc/relayer
if [ ! -d "$RELAYER_DIR/node_modules" ] || [ "$RELAYER_DIR/package-lock.json" -nt "$RELAYER_DIR/node_modules" ]; then
  (cd "$RELAYER_DIR" && npm ci --no-audit --no-fund >/dev/null) || fail "npm ci in tests/ibc/relayer"
  touch "$RELAYER_DIR/node_modules"
fi
relayer() { # relayer ibc-setup|ibc-relayer ARGS...
  local bin=$1; shift
  (cd "$RELAYER_DIR" && node -r ./compat.cjs "node_modules/@confio/relayer/build/binary/$bin/index.js" "$@" --home "$WORK/relayer")
}
{
  echo "version: 1"
  echo "chains:"
  for c in a b; do
    cat <<EOF
  flops-$c:
    chain_id: flops-$c-1
    prefix: flops
    gas_price: 0udps
    hd_path: m/44'/118'/0'/0/0
    ics20_port: transfer
    estimated_block_time: 1000
    estimated_indexer_time: 250
    rpc:
      - http://127.0.0.1:$((26657 + OFFSET[$c]))
EOF
  done
} >"$WORK/relayer/registry.yaml"
RELAYER_ADDR=$(relayer ibc-setup init --src flops-a --dest flops-b | awk '/^Source address:/ {print $3}')
[ -n "$RELAYER_ADDR" ] || fail "ibc-setup init printed no relayer address"
for c in a b; do send "$c" bank send client "$RELAYER_ADDR" 10000000000udps; done
say "relayer $RELAYER_ADDR funded on both chains"

relayer ibc-setup ics20 -q >"$WORK/ics20.log" 2>&1 || { cat "$WORK/ics20.log" >&2; fail "ibc-setup ics20"; }
CHAN_A=$(awk '/flops-a-1: transfer\// {split($2, p, "/"); print p[2]}' "$WORK/ics20.log")
CHAN_B=$(awk '/flops-b-1: transfer\// {split($2, p, "/"); print p[2]}' "$WORK/ics20.log")
[ -n "$CHAN_A" ] && [ -n "$CHAN_B" ] || { cat "$WORK/ics20.log" >&2; fail "no channel ids in ibc-setup's output"; }
say "channel flops-a-1 transfer/$CHAN_A <-> flops-b-1 transfer/$CHAN_B"

CLIENT_A=$("$BIN" keys show client -a --keyring-backend test --home "$(home a)")
CLIENT_B=$("$BIN" keys show client -a --keyring-backend test --home "$(home b)")
START_A=$(balance a "$CLIENT_A" udps)
# ICS-20's voucher denom: ibc/ and the upper-case hex SHA-256 of the trace.
VOUCHER=ibc/$(printf 'transfer/%s/udps' "$CHAN_B" | sha256sum | cut -c1-64 | tr a-f A-F)

# 3. Out: A -> B.
send a ibc-transfer transfer transfer "$CHAN_A" "$CLIENT_B" "${AMOUNT}udps"
relayer ibc-relayer start --once -q
expect "udps escrowed on flops-a-1" "$(escrowed a udps)" "$AMOUNT"
expect "client's udps on flops-a-1" "$(balance a "$CLIENT_A" udps)" "$((START_A - AMOUNT))"
expect "client's $VOUCHER on flops-b-1" "$(balance b "$CLIENT_B" "$VOUCHER")" "$AMOUNT"
expect "supply of $VOUCHER on flops-b-1" "$(supply b "$VOUCHER")" "$AMOUNT"

# 4. Back: B -> A.
send b ibc-transfer transfer transfer "$CHAN_B" "$CLIENT_A" "${AMOUNT}$VOUCHER"
relayer ibc-relayer start --once -q
expect "supply of $VOUCHER on flops-b-1" "$(supply b "$VOUCHER")" 0
expect "udps escrowed on flops-a-1" "$(escrowed a udps)" 0
expect "client's udps on flops-a-1" "$(balance a "$CLIENT_A" udps)" "$START_A"

say "PASS: $AMOUNT udps went to flops-b-1 and came back over a relayer"
[ "$KEEP" = 1 ] && say "kept: chains in $WORK/{a,b}, relayer home $WORK/relayer; 'scripts/localnet.sh stop' with LOCALNET_HOME set stops each"
exit 0
