// Package machine is the VM and what marina keeps in it and on the Mac
// for it: up (the VM, its network rules, the route, the mirrors, the
// local DNS, older clusters brought up to date), down, destroy, the
// registry commands and shell.
package machine
