// CoreDNS for gavel's single-node test cluster, built from the Go module proxy with only the
// plugins its Corefile uses (test/harness/addons/coredns.yaml): CoreDNS's documented way to
// compile a smaller server. The full `go install` of CoreDNS also compiles the cloud, tracing
// and geoip plugins (AWS, Azure, Google, Datadog SDKs), more than twice the build time.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
