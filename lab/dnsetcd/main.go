// Command dnsetcd is etcd's own server, built from go.etcd.io/etcd/server/v3
// at the version marina pins for its local DNS.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
