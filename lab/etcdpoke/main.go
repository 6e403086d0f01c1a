// Command etcdpoke plays a workload on the kind network that talks to the
// local DNS's etcd through its JSON gateway, as any pod could: it writes
// one key, or reads a prefix, anonymously or as a user, and prints etcd's
// answer with its HTTP status. The lab runs it in a container that shares
// a cluster node's network namespace.
//
//	etcdpoke URL put KEY VALUE [USER PASSWORD]
//	etcdpoke URL range PREFIX [USER PASSWORD]
//
// Credentials may come as ETCD_USERNAME and ETCD_PASSWORD instead.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: etcdpoke URL put KEY VALUE [USER PASSWORD] | etcdpoke URL range PREFIX [USER PASSWORD]")
		os.Exit(64)
	}
	url, op, key := os.Args[1], os.Args[2], os.Args[3]
	rest := os.Args[4:]
	var body map[string]string
	switch op {
	case "put":
		if len(rest) < 1 {
			os.Exit(64)
		}
		body = map[string]string{"key": b64(key), "value": b64(rest[0])}
		rest = rest[1:]
	case "range":
		end := []byte(key)
		end[len(end)-1]++
		body = map[string]string{"key": b64(key), "range_end": b64(string(end))}
	default:
		os.Exit(64)
	}
	user, pass := os.Getenv("ETCD_USERNAME"), os.Getenv("ETCD_PASSWORD")
	if len(rest) == 2 {
		user, pass = rest[0], rest[1]
	}
	c := &http.Client{Timeout: 10 * time.Second}
	tok := ""
	if user != "" {
		code, out := post(c, url+"/v3/auth/authenticate", "", map[string]string{"name": user, "password": pass})
		var r struct{ Token string }
		_ = json.Unmarshal(out, &r)
		if code != http.StatusOK || r.Token == "" {
			fmt.Printf("login HTTP %d %s\n", code, out)
			os.Exit(1)
		}
		tok = r.Token
	}
	code, out := post(c, url+"/v3/kv/"+op, tok, body)
	fmt.Printf("HTTP %d %s\n", code, out)
	if code != http.StatusOK {
		os.Exit(1)
	}
}

func post(c *http.Client, url, tok string, body any) (int, []byte) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", tok)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, bytes.TrimSpace(out)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
