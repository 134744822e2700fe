// Wrapper module that builds the Kubernetes binaries gavel's tests run, from the Go
// module proxy: k8s.io/kubernetes at a pinned version, each staging module replaced by
// its published v0.31.13 release. build-k8s.sh unpacks those releases into ./staging
// (the proxy serves every release zip, but not every .mod/.info of them).
module gavel.local/k8s-build

go 1.22.0

require k8s.io/kubernetes v1.31.13

replace (
	k8s.io/api => ./staging/api
	k8s.io/apiextensions-apiserver => ./staging/apiextensions-apiserver
	k8s.io/apimachinery => ./staging/apimachinery
	k8s.io/apiserver => ./staging/apiserver
	k8s.io/cli-runtime => ./staging/cli-runtime
	k8s.io/client-go => ./staging/client-go
	k8s.io/cloud-provider => ./staging/cloud-provider
	k8s.io/cluster-bootstrap => ./staging/cluster-bootstrap
	k8s.io/code-generator => ./staging/code-generator
	k8s.io/component-base => ./staging/component-base
	k8s.io/component-helpers => ./staging/component-helpers
	k8s.io/controller-manager => ./staging/controller-manager
	k8s.io/cri-api => ./staging/cri-api
	k8s.io/cri-client => ./staging/cri-client
	k8s.io/csi-translation-lib => ./staging/csi-translation-lib
	k8s.io/dynamic-resource-allocation => ./staging/dynamic-resource-allocation
	k8s.io/endpointslice => ./staging/endpointslice
	k8s.io/kms => ./staging/kms
	k8s.io/kube-aggregator => ./staging/kube-aggregator
	k8s.io/kube-controller-manager => ./staging/kube-controller-manager
	k8s.io/kube-proxy => ./staging/kube-proxy
	k8s.io/kube-scheduler => ./staging/kube-scheduler
	k8s.io/kubectl => ./staging/kubectl
	k8s.io/kubelet => ./staging/kubelet
	k8s.io/metrics => ./staging/metrics
	k8s.io/mount-utils => ./staging/mount-utils
	k8s.io/pod-security-admission => ./staging/pod-security-admission
	k8s.io/sample-apiserver => ./staging/sample-apiserver
	k8s.io/sample-cli-plugin => ./staging/sample-cli-plugin
	k8s.io/sample-controller => ./staging/sample-controller
)
