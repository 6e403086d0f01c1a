// Package kindcluster is what marina does to one kind cluster through a
// session: create it with its add-ons (and roll it back when a step
// fails), delete, label, list and verify it, keep its kubeconfig, and
// complete cluster names on the command line.
package kindcluster
