#!/usr/bin/env bash
# Builds the base image Dockerfile.postgres and Dockerfile.app start FROM: a
# Debian 13 (trixie) root made from Debian's archive with mmdebstrap, slimmed the
# way debian:trixie-slim is (no manuals, docs or translations), and imported into
# podman (or docker) as localhost/codesift-base:trixie-slim. No image registry is
# involved: only the Debian mirror.
#
#   scripts/image-base.sh            # build and import (skipped when present)
#   IMAGE_BASE_FORCE=1 scripts/image-base.sh   # rebuild, e.g. for security updates
#
# Needs root (or mmdebstrap's unshare mode) and mmdebstrap (apt-get install mmdebstrap).
# Settings: CONTAINER_ENGINE (podman, else docker), DEBIAN_MIRROR
# (http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR
# (http://deb.debian.org/debian-security), IMAGE_BASE_TAR (where the root tarball is written;
# default a temporary file, removed after the import).
set -euo pipefail

engine=${CONTAINER_ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
image=localhost/codesift-base:trixie-slim

if [ -z "${IMAGE_BASE_FORCE:-}" ] && "$engine" image inspect "$image" >/dev/null 2>&1; then
  echo "image-base: $image is there (IMAGE_BASE_FORCE=1 rebuilds it)" >&2
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "image-base: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }

tar=${IMAGE_BASE_TAR:-}
if [ -z "$tar" ]; then
  tar=$(mktemp --suffix=.tar)
  trap 'rm -f "$tar"' EXIT
fi

# What debian:trixie-slim leaves out, kept out at unpack time (copyright files stay).
mmdebstrap --variant=minbase --format=tar \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/groff/*' \
  --dpkgopt='path-exclude=/usr/share/lintian/*' \
  --aptopt='Acquire::Languages "none"' \
  trixie "$tar" \
  "deb $mirror trixie main" "deb $mirror trixie-updates main" "deb $security trixie-security main"

"$engine" import --change 'CMD ["bash"]' "$tar" "$image" >/dev/null
echo "image-base: imported $image" >&2
