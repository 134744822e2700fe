// Runs the NetworkPolicy controller of sigs.k8s.io/kube-network-policies on the test cluster's
// node as a host process with a kubeconfig (its own main reads in-cluster config only).
// network-policy.sh queues each new connection of a pod to it with iptables NFQUEUE: this
// machine's kernel has no nftables `queue` expression (CONFIG_NFT_QUEUE), so the controller's
// own nftables hook cannot load; the policy decision per packet is the controller's.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	node := flag.String("hostname-override", "", "name of this node")
	queue := flag.Int("nfqueue-id", 100, "nfqueue the iptables rules send new connections to")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(
		client,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			QueueID:  *queue,
			NodeName: *node,
			// Containerd 1.6 (Debian bookworm) has no NRI socket, so pod IPs come from the API
			// server. NRI stays "enabled" all the same: with NRIdisabled v0.8.0 looks up an IP
			// that is no pod's (the node's, where pods reach the API server) in a nil NRI plugin
			// and panics, and the iptables rules then let every packet through (--queue-bypass).
			// Enabled, the plugin is created without connecting, its Run fails once (logged),
			// and its empty IP map answers "no pod".
			NRIdisabled: false,
			// Fail closed: a packet queued while the controller is down is dropped.
			FailOpen: false,
		},
	)
	if err != nil {
		klog.Fatalf("controller: %v", err)
	}
	factory.Start(ctx.Done())
	if err := controller.Run(ctx); err != nil {
		klog.Fatalf("run: %v", err)
	}
}
