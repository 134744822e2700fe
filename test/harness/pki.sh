#!/usr/bin/env bash
# Creates (once, cached) the PKI of gavel's test control planes: a CA, the apiserver's
# serving certificate, an admin client certificate (system:masters), client certificates
# for the scheduler, controller-manager, kubelet and kube-proxy, and the service-account key
# pair. Certificates added later (a new SAN, a new component) are made on the next run
# without replacing the CA, so running clusters and their clients keep working.
source "$(dirname "$0")/lib.sh"
PKI="$GAVEL_CACHE/pki"
# The apiserver answers on loopback (test control planes), the node's address (the cluster)
# and the `kubernetes` Service's ClusterIP (pods).
APISERVER_SANS="IP:127.0.0.1,IP:$NODE_IP,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"

# client_cert NAME CN ORG: a client certificate signed by the CA.
client_cert() {
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2/O=$3" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment') 2>/dev/null
  rm -f "$1.csr"
}

# apiserver_cert: the apiserver's serving certificate for APISERVER_SANS (written in place of
# the old one: a running apiserver reloads it).
apiserver_cert() {
  [ -f apiserver.key ] || openssl genrsa -out apiserver.key 2048 2>/dev/null
  openssl req -new -key apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt.tmp -days 3650 \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment' "$APISERVER_SANS") 2>/dev/null
  mv apiserver.crt.tmp apiserver.crt
  rm -f apiserver.csr
}

# additions: what later versions of this script create, on a PKI made by an earlier one.
additions() {
  cd "$PKI"
  openssl x509 -in apiserver.crt -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:$NODE_IP\b" || {
    log "re-signing the apiserver certificate for $NODE_IP"; apiserver_cert; }
  [ -f kube-proxy.crt ] || client_cert kube-proxy system:kube-proxy system:node-proxier
  chmod 600 ./*.key
}

if [ -f "$PKI/.complete" ] && grep -q "$NODE_NAME" "$PKI/.complete"; then additions; exit 0; fi
rm -rf "$PKI" && mkdir -p "$PKI" && cd "$PKI"
log "creating test PKI in $PKI"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
  -subj "/CN=gavel-test-ca" 2>/dev/null

apiserver_cert

client_cert admin kubernetes-admin system:masters
client_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
client_cert scheduler system:kube-scheduler system:kube-scheduler
client_cert controller-manager system:kube-controller-manager system:kube-controller-manager
client_cert kubelet "system:node:$NODE_NAME" system:nodes
client_cert kube-proxy system:kube-proxy system:node-proxier

# The kubelet's serving certificate (the apiserver fetches logs from it).
openssl req -newkey rsa:2048 -nodes -keyout kubelet-serving.key -out kubelet-serving.csr -subj "/CN=kubelet" 2>/dev/null
openssl x509 -req -in kubelet-serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet-serving.crt -days 3650 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment') 2>/dev/null
rm -f kubelet-serving.csr

openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 600 ./*.key
echo "node=$NODE_NAME" > .complete
