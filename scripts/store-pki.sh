#!/usr/bin/env bash
# Writes a CA for the cluster store, a server certificate for the store's
# addresses and a client certificate for the daemons, all as PEM files
# readable by their owner only (docs/security.md, "The store").
#   bash scripts/store-pki.sh DIR IP [IP...]
# DIR gets ca.pem, server.pem, server-key.pem, client.pem, client-key.pem.
# The server certificate also allows client use: etcd's own gateway
# presents it to the server.
set -euo pipefail
DIR=$1
shift
[ $# -gt 0 ] || { echo "usage: $0 DIR IP [IP...]" >&2; exit 2; }
san="IP:127.0.0.1,DNS:localhost"
for ip in "$@"; do san="$san,IP:$ip"; done
umask 077
mkdir -p "$DIR"
cd "$DIR"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca-key.pem
openssl req -x509 -new -key ca-key.pem -out ca.pem -days 365 -subj "/CN=contiv store CA" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,digitalSignature"
leaf() { # leaf NAME CN EXTENSIONS
	key "$1-key.pem"
	openssl req -new -key "$1-key.pem" -out "$1.csr" -subj "/CN=$2"
	printf '%b' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 365 \
		-out "$1.pem" -extfile "$1.ext" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}
leaf server "contiv store" "subjectAltName=$san\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n"
leaf client contiv "keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
rm -f ca.srl
