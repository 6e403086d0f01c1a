//go:build !linux

package main

import (
	"errors"
	"net/netip"
)

// kernel needs Linux's rtnetlink: the lab runs on Linux only.
type kernel struct{}

var errNotLinux = errors.New("the marina lab's route stand-in works on Linux only (it changes the lab's routing table over netlink)")

func (kernel) get(netip.Addr) (entry, error)         { return entry{}, errNotLinux }
func (kernel) add(netip.Prefix, netip.Addr) error    { return errNotLinux }
func (kernel) change(netip.Prefix, netip.Addr) error { return errNotLinux }
func (kernel) del(netip.Prefix, netip.Addr) error    { return errNotLinux }
