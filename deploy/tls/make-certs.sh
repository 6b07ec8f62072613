#!/usr/bin/env bash
# Makes the certificates of a Ringside job with openssl: a certificate authority (made once,
# kept in OUT_DIR and reused, so members added later join the same job) and one key and
# certificate per NAME, signed by it. Used by deploy/k8s/make-certs.sh and
# deploy/compose/make-certs.sh, which say which names each deployment needs.
#
#   deploy/tls/make-certs.sh OUT_DIR NAME[=DNS,DNS...]...
#
# Writes OUT_DIR/ca.crt, OUT_DIR/ca.key and, per NAME, OUT_DIR/NAME.crt and OUT_DIR/NAME.key.
# Every certificate is for both ends of a link (a member serves some peers and dials others:
# extended key usage serverAuth and clientAuth) and names, besides the DNS names given (the
# names it is dialled by: gRPC checks the dialled host against them), localhost and 127.0.0.1
# (the health checks dial the daemon in its own container). Keys are EC P-256, written 0600;
# keep ca.key out of the cluster: whoever holds it can make members.
set -euo pipefail

out=${1:?usage: make-certs.sh OUT_DIR NAME[=DNS,DNS...]...}
shift
days=${RINGSIDE_CERT_DAYS:-365}
mkdir -p "$out"
umask 077  # keys are never readable by others, not even for a moment

if [ ! -f "$out/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
    -subj "/CN=ringside CA" -keyout "$out/ca.key" -out "$out/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi

for spec in "$@"; do
  name=${spec%%=*}
  sans="DNS:localhost,IP:127.0.0.1"
  if [ "$spec" != "$name" ]; then
    IFS=, read -r -a names <<<"${spec#*=}"
    for dns in "${names[@]}"; do sans="$sans,DNS:$dns"; done
  fi
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
    -keyout "$out/$name.key" -out "$out/$name.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$sans" \
    "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid:always" >"$out/$name.ext"
  openssl x509 -req -in "$out/$name.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days "$days" -sha256 -extfile "$out/$name.ext" \
    -out "$out/$name.crt" 2>/dev/null
  rm -f "$out/$name.csr" "$out/$name.ext"
done
chmod 0644 "$out"/*.crt
