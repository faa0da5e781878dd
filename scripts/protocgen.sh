#!/usr/bin/env bash
# Regenerates the committed Go code under x/*/types and api/ from proto/, offline.
#
# The buf.build registry is not reachable from our machines or CI, so the imported schemas
# (cosmos-sdk, gogoproto, cosmos-proto, googleapis) are copied from the Go module cache into
# the git-ignored third_party/proto, and the protoc plugins and buf are built from the
# versions pinned in tools/protoc and tools/buf.
#
#   scripts/protocgen.sh          generate
#   scripts/protocgen.sh lint     buf lint only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=$root/build/tools
mkdir -p "$bin"

(cd tools/protoc && GOBIN=$bin GOFLAGS=-mod=mod go install tool)
(cd tools/buf && GOBIN=$bin GOFLAGS=-mod=mod go install tool)
export PATH=$bin:$PATH

moddir() {
  local dir
  dir=$(go list -m -f '{{.Dir}}' "$1" 2>/dev/null || true)
  if [ -z "$dir" ]; then
    dir=$(go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  fi
  [ -n "$dir" ] || { echo "protocgen: cannot locate module $1" >&2; exit 1; }
  echo "$dir"
}

sdk=$(moddir github.com/cosmos/cosmos-sdk)
gogo=$(moddir github.com/cosmos/gogoproto)
cosmosproto=$(moddir github.com/cosmos/cosmos-proto)
gateway=$(cd tools/protoc && moddir github.com/grpc-ecosystem/grpc-gateway)

# Only the imported files and their own imports: buf compiles every file of a workspace
# module, and most of the SDK's schema pulls in CometBFT's.
tp=$root/third_party/proto
rm -rf "$tp"
mkdir -p "$tp/cosmos/base" "$tp/gogoproto" "$tp/google"
cp -r "$sdk/proto/cosmos/base/v1beta1" "$tp/cosmos/base/"
cp -r "$sdk/proto/cosmos/base/query" "$tp/cosmos/base/"
cp -r "$sdk/proto/cosmos/msg" "$tp/cosmos/"
cp -r "$sdk/proto/amino" "$tp/"
cp "$gogo/gogoproto/gogo.proto" "$tp/gogoproto/"
cp -r "$cosmosproto/proto/cosmos_proto" "$tp/"
cp -r "$gateway/third_party/googleapis/google/api" "$tp/google/"
chmod -R u+w "$tp"

if [ "${1:-}" = "lint" ]; then
  buf lint --path proto/flops
  exit 0
fi

out=$root/build/proto-gen
rm -rf "$out"
buf generate --template buf.gen.gogo.yaml --path proto/flops

# The plugins write by Go import path; move the files into the module's tree.
src=$out/github.com/flopsnet/flops
find "$src" -name '*.go' | while read -r f; do
  rel=${f#"$src"/}
  mkdir -p "$(dirname "$rel")"
  cp "$f" "$rel"
done
rm -rf "$out"

# The API v2 (protobuf-go) types, into api/ (buf.gen.api.yaml says why).
rm -rf build/proto-gen-api api/flops
buf generate --template buf.gen.api.yaml --path proto/flops
mkdir -p api
mv build/proto-gen-api/flops api/flops
rm -rf build/proto-gen-api

# The TypeScript client (clients/ts): ts-proto, pinned in its package-lock.json, writes the
# types, codecs and query clients; tools/tsgen writes what ts-proto cannot know from the
# chain's registry (the amino-JSON schema of every Msg, the Registry's Msg list, the sign-
# bytes test vectors).
if [ ! -x clients/ts/node_modules/.bin/protoc-gen-ts_proto ]; then
  (cd clients/ts && npm ci --no-audit --no-fund)
fi
rm -rf clients/ts/src/gen
buf generate --template buf.gen.ts.yaml --path proto/flops
go run ./tools/tsgen clients/ts
