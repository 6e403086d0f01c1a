//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
)

// kernel is the Linux routing table of the current network namespace
// (the lab's mac namespace), over rtnetlink: the main table, IPv4.
type kernel struct{}

const (
	rtmFFibMatch = 0x2000 // RTM_F_FIB_MATCH: the route that matched, not a cached host entry
	rtaxMTU      = 2      // RTAX_MTU, inside RTA_METRICS
)

// rtmsg is struct rtmsg (linux/rtnetlink.h).
type rtmsg struct {
	family, dstLen, srcLen, tos, table, protocol, scope, typ uint8
	flags                                                    uint32
}

type rtattr struct {
	typ  uint16
	data []byte
}

// get asks the kernel which route it would use for addr: RTM_GETROUTE
// with RTM_F_FIB_MATCH answers with the matching route itself, its
// prefix length included, as RTM_GET answers on a Mac.
func (kernel) get(addr netip.Addr) (entry, error) {
	a := addr.As4()
	msgs, err := request(syscall.RTM_GETROUTE, 0,
		rtmsg{family: syscall.AF_INET, dstLen: 32, flags: rtmFFibMatch},
		rtattr{syscall.RTA_DST, a[:]})
	if err != nil {
		// No route at all: ENETUNREACH here, ESRCH on a Mac.
		if errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENOENT) {
			return entry{}, syscall.ESRCH
		}
		return entry{}, err
	}
	for _, m := range msgs {
		if m.Header.Type == syscall.RTM_NEWROUTE {
			return parseRoute(m)
		}
	}
	return entry{}, syscall.ESRCH
}

// add is RTM_ADD: a new static route, refused when one of exactly that
// network exists (EEXIST) or the gateway is not on a connected network
// (ENETUNREACH), as on a Mac.
func (kernel) add(p netip.Prefix, gw netip.Addr) error {
	_, err := request(syscall.RTM_NEWROUTE, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL, unicast(p), routeAttrs(p, gw)...)
	return err
}

// change is RTM_CHANGE: the route of exactly that network gets the new
// gateway; with none, "not in table".
func (kernel) change(p netip.Prefix, gw netip.Addr) error {
	_, err := request(syscall.RTM_NEWROUTE, syscall.NLM_F_REPLACE, unicast(p), routeAttrs(p, gw)...)
	if errors.Is(err, syscall.ENOENT) {
		return syscall.ESRCH
	}
	return err
}

// del is RTM_DELETE of the route of exactly that network; given a
// gateway, only while the route still goes through it.
func (kernel) del(p netip.Prefix, gw netip.Addr) error {
	rt := rtmsg{family: syscall.AF_INET, dstLen: uint8(p.Bits()), table: syscall.RT_TABLE_MAIN, scope: syscall.RT_SCOPE_NOWHERE}
	_, err := request(syscall.RTM_DELROUTE, 0, rt, routeAttrs(p, gw)...)
	if errors.Is(err, syscall.ENOENT) {
		return syscall.ESRCH
	}
	return err
}

func unicast(p netip.Prefix) rtmsg {
	return rtmsg{family: syscall.AF_INET, dstLen: uint8(p.Bits()), table: syscall.RT_TABLE_MAIN,
		protocol: syscall.RTPROT_STATIC, scope: syscall.RT_SCOPE_UNIVERSE, typ: syscall.RTN_UNICAST}
}

func routeAttrs(p netip.Prefix, gw netip.Addr) []rtattr {
	var attrs []rtattr
	if p.Bits() > 0 {
		a := p.Addr().As4()
		attrs = append(attrs, rtattr{syscall.RTA_DST, a[:]})
	}
	if gw.IsValid() {
		g := gw.As4()
		attrs = append(attrs, rtattr{syscall.RTA_GATEWAY, g[:]})
	}
	return attrs
}

// request sends one rtnetlink request and returns the replies before the
// kernel's acknowledgement; a negative acknowledgement is its errno.
func request(typ uint16, flags uint16, rt rtmsg, attrs ...rtattr) ([]syscall.NetlinkMessage, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("bind", err)
	}
	const seq = 1
	b := make([]byte, syscall.NLMSG_HDRLEN+syscall.SizeofRtMsg)
	ne := binary.NativeEndian
	ne.PutUint16(b[4:], typ)
	ne.PutUint16(b[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|flags)
	ne.PutUint32(b[8:], seq)
	r := b[syscall.NLMSG_HDRLEN:]
	r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7] = rt.family, rt.dstLen, rt.srcLen, rt.tos, rt.table, rt.protocol, rt.scope, rt.typ
	ne.PutUint32(r[8:], rt.flags)
	for _, a := range attrs {
		h := make([]byte, syscall.SizeofRtAttr)
		ne.PutUint16(h[0:], uint16(syscall.SizeofRtAttr+len(a.data)))
		ne.PutUint16(h[2:], a.typ)
		b = append(b, h...)
		b = append(b, a.data...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	ne.PutUint32(b[0:], uint32(len(b)))
	if err := syscall.Sendto(fd, b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("sendto", err)
	}
	var got []syscall.NetlinkMessage
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, os.NewSyscallError("recvfrom", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("read the kernel's answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			if m.Header.Type == syscall.NLMSG_ERROR {
				if len(m.Data) < 4 {
					return nil, errors.New("a short netlink error message")
				}
				if code := int32(ne.Uint32(m.Data)); code != 0 {
					return nil, syscall.Errno(-code)
				}
				return got, nil
			}
			// buf is read into again for the acknowledgement.
			m.Data = append([]byte(nil), m.Data...)
			got = append(got, m)
		}
	}
}

// parseRoute reads an RTM_NEWROUTE answer.
func parseRoute(m syscall.NetlinkMessage) (entry, error) {
	if len(m.Data) < syscall.SizeofRtMsg {
		return entry{}, errors.New("a short route message")
	}
	attrs, err := syscall.ParseNetlinkRouteAttr(&m)
	if err != nil {
		return entry{}, fmt.Errorf("read the route's attributes: %w", err)
	}
	e := entry{kernel: m.Data[5] == syscall.RTPROT_KERNEL}
	dst := netip.IPv4Unspecified()
	routeMTU := 0 // the route's own MTU, over the interface's
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
				if ifi, err := net.InterfaceByIndex(int(binary.NativeEndian.Uint32(a.Value))); err == nil {
					e.ifname, e.mtu = ifi.Name, ifi.MTU
				}
			}
		case syscall.RTA_METRICS:
			routeMTU = metricMTU(a.Value)
		}
	}
	if routeMTU > 0 {
		e.mtu = routeMTU
	}
	e.dst = netip.PrefixFrom(dst, int(m.Data[1])).Masked()
	return e, nil
}

// metricMTU is RTAX_MTU among the nested RTA_METRICS attributes, 0 if unset.
func metricMTU(b []byte) int {
	for len(b) >= syscall.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(b))
		if l < syscall.SizeofRtAttr || l > len(b) {
			return 0
		}
		if binary.NativeEndian.Uint16(b[2:]) == rtaxMTU && l >= syscall.SizeofRtAttr+4 {
			return int(binary.NativeEndian.Uint32(b[syscall.SizeofRtAttr:]))
		}
		l = (l + 3) &^ 3
		if l > len(b) {
			return 0
		}
		b = b[l:]
	}
	return 0
}
