// Command echo is the lab's test workload, built into a FROM-scratch image:
// "serve ADDR" answers every TCP connection with the address it came from,
// "dial ADDR" connects, prints the server's answer and exits; "http ADDR"
// answers GET /clientip with the caller's ip:port, as agnhost netexec does
// (the server marina cluster verify deploys); "netexec --http-port=PORT" is
// the same with agnhost's own arguments, as the lab's agnhost image (in a
// pod) is run; "lookup NAME" prints the addresses NAME resolves to (with
// the resolver a pod has) and exits; "say TEXT" prints TEXT and exits (a
// pod's log with what a test planted in it); "get URL" prints the body of
// a GET of URL (a pod asking another's /clientip).
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: echo serve|dial|http ADDR, netexec --http-port=PORT, lookup NAME, say TEXT, get URL")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2])
	case "dial":
		dial(os.Args[2])
	case "http":
		clientIP(os.Args[2])
	case "lookup":
		addrs, err := net.LookupHost(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(addrs, " "))
	case "say":
		fmt.Println(os.Args[2])
	case "get":
		get(os.Args[2])
	case "netexec":
		port, ok := strings.CutPrefix(os.Args[2], "--http-port=")
		if !ok {
			fmt.Fprintln(os.Stderr, "usage: echo netexec --http-port=PORT")
			os.Exit(2)
		}
		clientIP(":" + port)
	default:
		fmt.Fprintln(os.Stderr, "usage: echo serve|dial|http ADDR, netexec --http-port=PORT, lookup NAME, say TEXT, get URL")
		os.Exit(2)
	}
}

// get prints the body of a GET of url (a pod asking another's /clientip).
func get(url string) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	fmt.Println()
}

// clientIP answers GET /clientip with the caller's ip:port.
func clientIP(addr string) {
	http.HandleFunc("/clientip", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.RemoteAddr) })
	fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, nil))
	os.Exit(1)
}

func serve(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "peer %s local %s\n", c.RemoteAddr(), c.LocalAddr())
		}()
	}
}

func dial(addr string) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(line)
}
