#!/usr/bin/env bash
# Creates (once, cached) the PKI of gavel's test control planes: a CA, the apiserver's
# serving certificate, an admin client certificate (system:masters), client certificates
# for the scheduler, controller-manager and kubelet, and the service-account key pair.
source "$(dirname "$0")/lib.sh"
PKI="$GAVEL_CACHE/pki"
[ -f "$PKI/.complete" ] && grep -q "$NODE_NAME" "$PKI/.complete" && exit 0
rm -rf "$PKI" && mkdir -p "$PKI" && cd "$PKI"
log "creating test PKI in $PKI"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
  -subj "/CN=gavel-test-ca" 2>/dev/null

# client_cert NAME CN ORG: a client certificate signed by the CA.
client_cert() {
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2/O=$3" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment') 2>/dev/null
  rm -f "$1.csr"
}

openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment') 2>/dev/null
rm -f apiserver.csr

client_cert admin kubernetes-admin system:masters
client_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
client_cert scheduler system:kube-scheduler system:kube-scheduler
client_cert controller-manager system:kube-controller-manager system:kube-controller-manager
client_cert kubelet "system:node:$NODE_NAME" system:nodes

# The kubelet's serving certificate (the apiserver fetches logs from it).
openssl req -newkey rsa:2048 -nodes -keyout kubelet-serving.key -out kubelet-serving.csr -subj "/CN=kubelet" 2>/dev/null
openssl x509 -req -in kubelet-serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet-serving.crt -days 3650 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment') 2>/dev/null
rm -f kubelet-serving.csr

openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 600 ./*.key
echo "node=$NODE_NAME" > .complete
