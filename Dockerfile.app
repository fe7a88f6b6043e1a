# codesift's loader and services: the command line (`codesift index`, `token`, `status`,
# `migrate`, ...), the MCP server over HTTP (`codesift mcp --http`, the default command)
# and the embedding worker (`codesift worker`). It talks to a codesift database
# (Dockerfile.postgres, or any server set up as README.md says) named by CODESIFT_DSN;
# the password goes in PGPASSWORD or a ~/.pgpass-style PGPASSFILE, not in the DSN.
#
#   scripts/image-base.sh        # once: the Debian base, see FROM below
#   podman build -f Dockerfile.app -t codesift-app .          (or docker build)
#   podman run --read-only -p 8765:8765 -e CODESIFT_DSN='host=db dbname=codesift user=codesift_app' \
#     -e PGPASSWORD=... codesift-app                           # MCP over HTTP at :8765/mcp
#   podman run --read-only -e CODESIFT_DSN=... -e PGPASSWORD=... codesift-app worker
#   podman run --read-only -v "$PWD:/src:ro" -e CODESIFT_DSN=... -e PGPASSWORD=... \
#     codesift-app index /src --name myrepo --tenant acme
#
# It runs as an unprivileged user (uid 10001) and writes nothing outside /tmp, so a
# read-only root filesystem works (podman --read-only gives /tmp a tmpfs; with docker add
# --tmpfs /tmp). Packages come from requirements/app.lock, every file's hash checked.
#
# The base is Debian 13 (trixie) built locally from Debian's archive by
# scripts/image-base.sh (mmdebstrap, imported as localhost/codesift-base), so a build
# needs no registry but Debian's and PyPI. With Docker Hub at hand,
# --build-arg BASE_IMAGE=debian:trixie-slim gives the same image.
ARG BASE_IMAGE=localhost/codesift-base:trixie-slim

# pip lives in this stage only: the final image gets the installed folder.
FROM ${BASE_IMAGE} AS packages
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 python3-pip ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# Behind a TLS-inspecting proxy, hand pip the CA bundle that trusts it as a build
# secret (--secret id=pip_cert,src=/etc/ssl/certs/ca-certificates.crt); it is not
# kept in the image.
COPY requirements/app.lock /tmp/app.lock
RUN --mount=type=secret,id=pip_cert,required=false \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
    && pip3 install --break-system-packages --no-cache-dir --require-hashes --no-deps \
       --index-url https://pypi.org/simple --target /opt/codesift/python -r /tmp/app.lock

FROM ${BASE_IMAGE}
# git: the loader reads repositories through it.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 codesift \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin codesift \
    && git config --system safe.directory '*'
COPY --from=packages /opt/codesift/python/ /opt/codesift/python/
# The same layout as a checkout: `codesift migrate` finds sql/ beside loader/.
COPY plpython/ /opt/codesift/plpython/
COPY loader/ /opt/codesift/loader/
COPY sql/ /opt/codesift/sql/
COPY pyproject.toml /opt/codesift/pyproject.toml
# The package's metadata (for `codesift --version`), its command, and bytecode compiled
# now, since nothing may be written at run time.
RUN python3 -c 'import pathlib, tomllib; \
v = tomllib.loads(pathlib.Path("/opt/codesift/pyproject.toml").read_text())["project"]["version"]; \
info = pathlib.Path(f"/opt/codesift/python/codesift-{v}.dist-info"); info.mkdir(); \
(info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: codesift\nVersion: {v}\n")' \
    && python3 -m compileall -q /opt/codesift/loader /opt/codesift/plpython \
    && printf '#!/bin/sh\nexec python3 -m codesift "$@"\n' >/usr/local/bin/codesift \
    && chmod 0755 /usr/local/bin/codesift

ENV PYTHONPATH=/opt/codesift/loader:/opt/codesift/plpython:/opt/codesift/python \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    CODESIFT_CACHE_DIR=/tmp/codesift-cache \
    HF_HUB_OFFLINE=1
USER codesift
WORKDIR /tmp
EXPOSE 8765
ENTRYPOINT ["codesift"]
CMD ["mcp", "--http", "--host", "0.0.0.0", "--port", "8765"]
