#!/usr/bin/env bash
# Builds the example CONTAINER image (a static busybox with its applets) without a
# registry, imports it into podman, pins examples/container-job.yaml (or the file given)
# to its digest, and prints the pinned reference.
# Needs: podman, busybox-static (apt-get install podman runc busybox-static).
set -euo pipefail
cd "$(dirname "$0")/.."
job=${1:-examples/container-job.yaml}
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "busybox not found: apt-get install busybox-static" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root" "$root.tar"' EXIT
mkdir -p "$root/bin" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in sh cat ls echo id cut sha256sum sleep head mkdir touch wc true false grep; do
  ln -s busybox "$root/bin/$applet"
done
tar -C "$root" -cf "$root.tar" .
podman import "$root.tar" localhost/flops-example:latest >/dev/null
ref=$(podman image inspect localhost/flops-example:latest --format '{{index .RepoDigests 0}}')
sed -i "s|^image: .*|image: $ref|" "$job"
echo "$ref"
