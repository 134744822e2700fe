// gavel-csi-hostpath: the test cluster's CSI driver that takes and restores snapshots (ADR
// 0045). Volumes and snapshots are directories of the one node. One host process serves:
//   - the CSI Identity, Controller and Node services on --endpoint (the kubelet mounts through
//     it; external-snapshotter's csi-snapshotter sidecar takes snapshots through it);
//   - kubelet plugin registration on <--registration-dir>/<driver>-reg.sock (what
//     node-driver-registrar does, which the Go module proxy does not serve);
//   - a dynamic provisioner (sig-storage-lib-external-provisioner) that turns claims of its
//     StorageClass, also those restored from a VolumeSnapshot, into CreateVolume calls on
//     --endpoint (what external-provisioner does, also not served).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

const version = "0.1.0"

// registration answers the kubelet's plugin watcher: a CSI plugin of this name at this endpoint.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	registered     chan error
}

func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		klog.InfoS("registered with the kubelet", "driver", r.name)
		select {
		case r.registered <- nil:
		default:
		}
	} else {
		klog.ErrorS(nil, "the kubelet refused the registration", "driver", r.name, "error", s.Error)
		select {
		case r.registered <- fmt.Errorf("the kubelet refused the registration: %s", s.Error):
		default:
		}
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// listenUnix listens on a unix socket at path, replacing a stale one.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gavel-csi-hostpath: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	klog.InitFlags(nil)
	name := flag.String("driver-name", "hostpath.csi.gavel.dev", "CSI driver name (the StorageClass's provisioner, the VolumeSnapshotClass's driver)")
	endpoint := flag.String("endpoint", "", "unix socket path of the CSI services")
	registrationDir := flag.String("registration-dir", "", "the kubelet's plugins_registry directory; empty: do not register")
	nodeID := flag.String("node-id", "", "this node's name (its kubernetes.io/hostname label)")
	data := flag.String("data-dir", "/var/lib/gavel-csi-hostpath", "where volumes and snapshots are kept")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the provisioner; empty: no provisioner")
	flag.Parse()
	if *endpoint == "" {
		fail("--endpoint is required")
	}
	if *nodeID == "" {
		fail("--node-id is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	for _, dir := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(*data, dir), 0o711); err != nil {
			fail("--data-dir %s: %v", *data, err)
		}
	}
	d := &driver{name: *name, version: version, nodeID: *nodeID, data: *data}
	csiListener, err := listenUnix(*endpoint)
	if err != nil {
		fail("--endpoint %s: %v", *endpoint, err)
	}
	server := grpc.NewServer()
	csi.RegisterIdentityServer(server, d)
	csi.RegisterControllerServer(server, d)
	csi.RegisterNodeServer(server, d)
	go func() {
		if err := server.Serve(csiListener); err != nil {
			fail("CSI server: %v", err)
		}
	}()
	klog.InfoS("CSI services listening", "endpoint", *endpoint, "driver", *name)

	if *registrationDir != "" {
		socket := filepath.Join(*registrationDir, *name+"-reg.sock")
		l, err := listenUnix(socket)
		if err != nil {
			fail("--registration-dir %s: %v", *registrationDir, err)
		}
		reg := grpc.NewServer()
		r := &registration{name: *name, endpoint: *endpoint, registered: make(chan error, 1)}
		registerapi.RegisterRegistrationServer(reg, r)
		go func() {
			if err := reg.Serve(l); err != nil {
				fail("registration server: %v", err)
			}
		}()
		klog.InfoS("registration socket listening", "socket", socket)
		defer os.Remove(socket)
	}

	if *kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			fail("--kubeconfig %s: %v", *kubeconfig, err)
		}
		client := kubernetes.NewForConfigOrDie(cfg)
		conn, err := grpc.NewClient("unix://"+*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fail("--endpoint %s: %v", *endpoint, err)
		}
		p := newProvisioner(*name, *nodeID, conn, dynamic.NewForConfigOrDie(cfg))
		// Retried fast: a claim restored from a snapshot waits for the snapshot to be ready (the
		// library's own first retry is 15 s later).
		pc := controller.NewProvisionController(ctx, client, *name, p, controller.LeaderElection(false),
			controller.RateLimiter(workqueue.NewItemExponentialFailureRateLimiter(250*time.Millisecond, 15*time.Second)))
		go pc.Run(ctx)
		klog.InfoS("provisioner running", "provisioner", *name)
	}

	<-ctx.Done()
	server.GracefulStop()
}
