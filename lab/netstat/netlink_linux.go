//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// kernel is the Linux routing table of the current network namespace
// (the lab's mac namespace): the main table, IPv4, unicast routes.
type kernel struct{}

func (kernel) routes() ([]entry, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("read the routing table: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("read the routing table: %w", err)
	}
	var out []entry
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		// struct rtmsg: family, dst_len, src_len, tos, table, protocol,
		// scope, type, flags.
		d := m.Data
		if d[0] != syscall.AF_INET || d[4] != syscall.RT_TABLE_MAIN || d[7] != syscall.RTN_UNICAST {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return nil, fmt.Errorf("read a route's attributes: %w", err)
		}
		e := entry{kernel: d[5] == syscall.RTPROT_KERNEL}
		dst := netip.IPv4Unspecified()
		for _, a := range attrs {
			switch a.Attr.Type {
			case syscall.RTA_DST:
				if v, ok := netip.AddrFromSlice(a.Value); ok {
					dst = v.Unmap()
				}
			case syscall.RTA_GATEWAY:
				if v, ok := netip.AddrFromSlice(a.Value); ok {
					e.gw = v.Unmap()
				}
			case syscall.RTA_OIF:
				if len(a.Value) >= 4 {
					e.ifindex = int(binary.NativeEndian.Uint32(a.Value))
					if ifi, err := net.InterfaceByIndex(e.ifindex); err == nil {
						e.ifname = ifi.Name
					}
				}
			}
		}
		e.dst = netip.PrefixFrom(dst, int(d[1])).Masked()
		out = append(out, e)
	}
	return out, nil
}
