package main

// The CSI driver: Identity, Controller and Node services over volumes and snapshots that are
// directories of one node. A volume is <data>/volumes/<id>; a snapshot is a full copy of one,
// <data>/snapshots/<id>, with its record beside it (<id>.json); a volume restored from a
// snapshot starts as a copy of that directory. Each copy is made in a temporary directory and
// renamed into place, so a crash leaves no half-made volume or snapshot under its final name,
// and a repeated call (the sidecars retry) finds the finished one and answers the same.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"k8s.io/klog/v2"
)

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	name    string
	version string
	nodeID  string
	data    string
	// One call at a time changes the directories: the sidecars retry concurrently.
	mu sync.Mutex
}

// snapshotRecord is what <data>/snapshots/<id>.json keeps of a snapshot.
type snapshotRecord struct {
	SourceVolumeID string    `json:"sourceVolumeId"`
	CreatedAt      time.Time `json:"createdAt"`
	SizeBytes      int64     `json:"sizeBytes"`
}

func (d *driver) volumeDir(id string) string   { return filepath.Join(d.data, "volumes", id) }
func (d *driver) snapshotDir(id string) string { return filepath.Join(d.data, "snapshots", id) }

// validID refuses ids that would leave the data directory.
func validID(field, id string) error {
	if id == "" {
		return status.Errorf(codes.InvalidArgument, "%s is required", field)
	}
	if strings.ContainsAny(id, "/\\") || id == "." || id == ".." {
		return status.Errorf(codes.InvalidArgument, "%s %q: not a plain name", field, id)
	}
	return nil
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// copyInto makes dst a copy of the directory src (modes, owners and times kept), through a
// temporary directory renamed into place; a dst that exists is kept as it is.
func copyInto(src, dst string, mode os.FileMode) error {
	if exists(dst) {
		return nil
	}
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if src == "" {
		if err := os.MkdirAll(tmp, mode); err != nil {
			return err
		}
		// MkdirAll applies the umask; a new volume is writable by any pod user (as local-path's).
		if err := os.Chmod(tmp, mode); err != nil {
			return err
		}
	} else if out, err := exec.Command("cp", "-a", "--", src, tmp).CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cp -a %s %s: %v: %s", src, tmp, err, strings.TrimSpace(string(out)))
	}
	return os.Rename(tmp, dst)
}

// sizeOf is the bytes of the regular files under dir.
func sizeOf(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// ---- Identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: d.version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// ---- Controller

func controllerCapability(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
	return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
}

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		controllerCapability(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		controllerCapability(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT),
		controllerCapability(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS),
		controllerCapability(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER),
	}}, nil
}

// checkCapabilities refuses what a directory cannot be: a block device.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume_capabilities is required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "volume_capabilities: block access is not supported (volumes are directories)")
		}
	}
	return nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := validID("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	src := ""
	if s := req.GetVolumeContentSource(); s != nil {
		snap := s.GetSnapshot()
		if snap == nil {
			return nil, status.Error(codes.InvalidArgument, "volume_content_source: only a snapshot is supported")
		}
		if err := validID("volume_content_source.snapshot.snapshot_id", snap.GetSnapshotId()); err != nil {
			return nil, err
		}
		src = d.snapshotDir(snap.GetSnapshotId())
		if !exists(src) {
			return nil, status.Errorf(codes.NotFound, "volume_content_source.snapshot.snapshot_id %s: no such snapshot", snap.GetSnapshotId())
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := copyInto(src, d.volumeDir(req.GetName()), 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", req.GetName(), err)
	}
	klog.InfoS("volume created", "id", req.GetName(), "from", src)
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:      req.GetName(),
		CapacityBytes: req.GetCapacityRange().GetRequiredBytes(),
		ContentSource: req.GetVolumeContentSource(),
	}}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if err := validID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.RemoveAll(d.volumeDir(req.GetVolumeId())); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", req.GetVolumeId(), err)
	}
	klog.InfoS("volume deleted", "id", req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := validID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if !exists(d.volumeDir(req.GetVolumeId())) {
		return nil, status.Errorf(codes.NotFound, "volume_id %s: no such volume", req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

func (d *driver) snapshotOf(id string) (*csi.Snapshot, error) {
	raw, err := os.ReadFile(d.snapshotDir(id) + ".json")
	if err != nil {
		return nil, err
	}
	var r snapshotRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s.json: %v", d.snapshotDir(id), err)
	}
	return &csi.Snapshot{SnapshotId: id, SourceVolumeId: r.SourceVolumeID, CreationTime: timestamppb.New(r.CreatedAt), SizeBytes: r.SizeBytes, ReadyToUse: true}, nil
}

func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if err := validID("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := validID("source_volume_id", req.GetSourceVolumeId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := req.GetName()
	if s, err := d.snapshotOf(id); err == nil {
		if s.SourceVolumeId != req.GetSourceVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists with source volume %s, not %s", id, s.SourceVolumeId, req.GetSourceVolumeId())
		}
		return &csi.CreateSnapshotResponse{Snapshot: s}, nil
	}
	src := d.volumeDir(req.GetSourceVolumeId())
	if !exists(src) {
		return nil, status.Errorf(codes.NotFound, "source_volume_id %s: no such volume", req.GetSourceVolumeId())
	}
	dst := d.snapshotDir(id)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	// The directory first, its record last: a snapshot is listed once both exist.
	if err := copyInto(src, dst, 0); err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %s: %v", id, err)
	}
	rec := snapshotRecord{SourceVolumeID: req.GetSourceVolumeId(), CreatedAt: time.Now().UTC(), SizeBytes: sizeOf(dst)}
	raw, _ := json.Marshal(rec)
	if err := os.WriteFile(dst+".json.tmp", raw, 0o600); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Rename(dst+".json.tmp", dst+".json"); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	klog.InfoS("snapshot created", "id", id, "source", req.GetSourceVolumeId(), "bytes", rec.SizeBytes)
	s, err := d.snapshotOf(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateSnapshotResponse{Snapshot: s}, nil
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if err := validID("snapshot_id", req.GetSnapshotId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dst := d.snapshotDir(req.GetSnapshotId())
	// The record first: a snapshot half-deleted is no longer listed.
	if err := os.Remove(dst + ".json"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.RemoveAll(dst); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	klog.InfoS("snapshot deleted", "id", req.GetSnapshotId())
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots lists every snapshot, or the one of snapshot_id, or those of source_volume_id
// (no paging: max_entries and starting_token are not needed at this size, and refused).
func (d *driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetStartingToken() != "" {
		return nil, status.Error(codes.Aborted, "starting_token: no paging")
	}
	var ids []string
	if id := req.GetSnapshotId(); id != "" {
		if err := validID("snapshot_id", id); err != nil {
			return nil, err
		}
		ids = []string{id}
	} else {
		files, _ := filepath.Glob(filepath.Join(d.data, "snapshots", "*.json"))
		for _, f := range files {
			ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".json"))
		}
	}
	out := &csi.ListSnapshotsResponse{}
	for _, id := range ids {
		s, err := d.snapshotOf(id)
		if err != nil {
			continue
		}
		if v := req.GetSourceVolumeId(); v != "" && s.SourceVolumeId != v {
			continue
		}
		out.Entries = append(out.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: s})
	}
	return out, nil
}

// ---- Node

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	// No staging: a directory is published by one bind mount.
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

// mountedAt reports whether path is a mount point (a line of /proc/self/mountinfo).
func mountedAt(path string) (bool, error) {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == path {
			return true, nil
		}
	}
	return false, nil
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if err := validID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	src := d.volumeDir(req.GetVolumeId())
	if !exists(src) {
		return nil, status.Errorf(codes.NotFound, "volume_id %s: no such volume", req.GetVolumeId())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted, err := mountedAt(target); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind mount %s at %s: %v", src, target, err)
	}
	// A read-only bind mount is a remount of the bind with MS_RDONLY.
	if req.GetReadonly() {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "read-only remount of %s: %v", target, err)
		}
	}
	klog.InfoS("volume published", "id", req.GetVolumeId(), "target", target, "readonly", req.GetReadonly())
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if err := validID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		mounted, err := mountedAt(target)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if !mounted {
			break
		}
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	klog.InfoS("volume unpublished", "id", req.GetVolumeId(), "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
