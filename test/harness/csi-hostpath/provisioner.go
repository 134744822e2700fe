package main

// The dynamic provisioner (sig-storage-lib-external-provisioner's controller): a claim of a
// StorageClass whose provisioner is this driver becomes a CSI CreateVolume call on the driver's
// socket, and a PersistentVolume of it; a claim whose dataSource is a VolumeSnapshot becomes a
// CreateVolume whose content source is that snapshot's handle (what external-provisioner does,
// which the Go module proxy does not serve). A released volume is DeleteVolume'd.

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

const snapshotGroup = "snapshot.storage.k8s.io"

var (
	volumeSnapshots        = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshots"}
	volumeSnapshotContents = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshotcontents"}
)

type provisioner struct {
	driverName string
	nodeID     string
	csi        csi.ControllerClient
	dynamic    dynamic.Interface
}

func newProvisioner(driverName, nodeID string, conn *grpc.ClientConn, dyn dynamic.Interface) *provisioner {
	return &provisioner{driverName: driverName, nodeID: nodeID, csi: csi.NewControllerClient(conn), dynamic: dyn}
}

// accessMode is the CSI access mode of a claim's Kubernetes access modes.
func accessMode(modes []v1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	for _, m := range modes {
		switch m {
		case v1.ReadWriteOncePod:
			return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		case v1.ReadWriteMany:
			return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		case v1.ReadOnlyMany:
			return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
		}
	}
	return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
}

// snapshotSource is the CSI content source of a claim restored from a VolumeSnapshot; nil for
// a claim without a dataSource. Not ready yet is an error the controller retries.
func (p *provisioner) snapshotSource(ctx context.Context, claim *v1.PersistentVolumeClaim) (*csi.VolumeContentSource, error) {
	ds := claim.Spec.DataSourceRef
	if ds == nil && claim.Spec.DataSource != nil {
		ds = &v1.TypedObjectReference{APIGroup: claim.Spec.DataSource.APIGroup, Kind: claim.Spec.DataSource.Kind, Name: claim.Spec.DataSource.Name}
	}
	if ds == nil {
		return nil, nil
	}
	if ds.APIGroup == nil || *ds.APIGroup != snapshotGroup || ds.Kind != "VolumeSnapshot" {
		return nil, fmt.Errorf("spec.dataSource: only a %s VolumeSnapshot is supported, not %s", snapshotGroup, ds.Kind)
	}
	namespace := claim.Namespace
	if ds.Namespace != nil && *ds.Namespace != "" {
		namespace = *ds.Namespace
	}
	vs, err := p.dynamic.Resource(volumeSnapshots).Namespace(namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("spec.dataSource: VolumeSnapshot %s/%s: %v", namespace, ds.Name, err)
	}
	ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
	content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	if !ready || content == "" {
		return nil, fmt.Errorf("spec.dataSource: VolumeSnapshot %s/%s is not ready to use yet", namespace, ds.Name)
	}
	vsc, err := p.dynamic.Resource(volumeSnapshotContents).Get(ctx, content, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("spec.dataSource: VolumeSnapshotContent %s: %v", content, err)
	}
	if d, _, _ := unstructured.NestedString(vsc.Object, "spec", "driver"); d != p.driverName {
		return nil, fmt.Errorf("spec.dataSource: VolumeSnapshot %s/%s was taken by driver %s, not %s", namespace, ds.Name, d, p.driverName)
	}
	handle, _, _ := unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
	if handle == "" {
		return nil, fmt.Errorf("spec.dataSource: VolumeSnapshotContent %s has no snapshotHandle yet", content)
	}
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: handle}}}, nil
}

func (p *provisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	claim := opts.PVC
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return nil, controller.ProvisioningFinished, fmt.Errorf("spec.volumeMode: Block is not supported by %s (volumes are directories)", p.driverName)
	}
	source, err := p.snapshotSource(ctx, claim)
	if err != nil {
		// Retried by the controller: a snapshot becomes ready.
		return nil, controller.ProvisioningNoChange, err
	}
	size := claim.Spec.Resources.Requests[v1.ResourceStorage]
	res, err := p.csi.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name:                opts.PVName,
		CapacityRange:       &csi.CapacityRange{RequiredBytes: size.Value()},
		VolumeCapabilities:  []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}, AccessMode: &csi.VolumeCapability_AccessMode{Mode: accessMode(claim.Spec.AccessModes)}}},
		Parameters:          opts.StorageClass.Parameters,
		VolumeContentSource: source,
	})
	if err != nil {
		return nil, controller.ProvisioningInBackground, fmt.Errorf("CreateVolume %s: %v", opts.PVName, err)
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			MountOptions:                  opts.StorageClass.MountOptions,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(res.GetVolume().GetCapacityBytes(), resource.BinarySI)},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver:           p.driverName,
				VolumeHandle:     res.GetVolume().GetVolumeId(),
				VolumeAttributes: res.GetVolume().GetVolumeContext(),
			}},
			// The directory is on this node.
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{p.nodeID}}},
			}}}},
		},
	}
	return pv, controller.ProvisioningFinished, nil
}

func (p *provisioner) Delete(ctx context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != p.driverName {
		return &controller.IgnoredError{Reason: "not a volume of " + p.driverName}
	}
	if _, err := p.csi.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle}); err != nil {
		return fmt.Errorf("DeleteVolume %s: %v", pv.Spec.CSI.VolumeHandle, err)
	}
	return nil
}
