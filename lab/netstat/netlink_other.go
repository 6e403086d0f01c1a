//go:build !linux

package main

import "errors"

// kernel needs Linux's rtnetlink: the lab runs on Linux only.
type kernel struct{}

func (kernel) routes() ([]entry, error) {
	return nil, errors.New("the marina lab's netstat stand-in works on Linux only (it reads the lab's routing table over netlink)")
}
