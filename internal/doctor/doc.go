// Package doctor checks the lab from the Mac to every cluster, in one
// guest round trip plus its probes, says how to fix what it finds, and
// repairs what up would (--fix).
package doctor
