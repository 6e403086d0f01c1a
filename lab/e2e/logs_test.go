package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/bcollard/marina/internal/dns"
)

// Secrets a pod of the test prints, for kind's export to pick up.
const (
	plantedKey   = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPlantedByTheLabTestOnlyXXXXXXXXXXXXXXXXXXXX\n-----END EC PRIVATE KEY-----"
	plantedToken = "eyJhbGciOiJSUzI1NiJ9.plantedbythelab.signature"
)

// logsArchive is TestRealCluster's part for marina logs, on its running
// cluster dev: the archive holds what a report needs, and none of the
// secrets marina has (its label key, the local DNS's etcd passwords, the
// cluster's kubeconfig key) nor those a pod printed.
func logsArchive(t *testing.T, agnhost string) {
	t.Run("logs: one archive with the VM's, Docker's and the nodes' state, and no secret", func(t *testing.T) {
		ctx := context.Background()
		cs := contextClient(t, "dev")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "secrets-"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "say", Image: agnhost, Args: []string{"say", "key " + plantedKey + "\ntoken: " + plantedToken}}},
			},
		}
		p, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Minute, "the pod that prints secrets to end", func() bool {
			got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.PodSucceeded
		})

		var secrets []string
		keyHex, err := os.ReadFile(filepath.Join(marinaHome(), "label.key"))
		if err != nil {
			t.Fatal(err)
		}
		key, err := hex.DecodeString(strings.TrimSpace(string(keyHex)))
		if err != nil {
			t.Fatal(err)
		}
		pw, err := dns.NewPasswords(key)
		if err != nil {
			t.Fatal(err)
		}
		dev, _ := pw.Cluster("dev")
		secrets = append(secrets, strings.TrimSpace(string(keyHex)), pw.Root().Password, pw.Reader().Password, dev.Password, plantedToken, "MHcCAQEEIPlantedByTheLabTestOnly")
		kc, err := clientcmd.LoadFromFile(filepath.Join(home(), ".kube", "marina", "dev.kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		clientKey := kc.AuthInfos["dev"].ClientKeyData
		secrets = append(secrets, base64.StdEncoding.EncodeToString(clientKey))
		for _, l := range strings.Split(string(clientKey), "\n") {
			if len(l) > 40 && !strings.HasPrefix(l, "-----") {
				secrets = append(secrets, l) // a line of the key's body
			}
		}

		out := filepath.Join(t.TempDir(), "bug.tar.gz")
		r := mustMarina(t, "logs", "-o", out, "--cluster", "dev")
		t.Logf("marina logs: %s", r.stdout)
		files := map[string]string{}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, "marina-logs/")] = string(b)
		}
		for _, want := range []string{"version.txt", "config.yaml", "status.json", "doctor.json", "vm/iptables-save.txt", "vm/ip-route.txt", "vm/docker-ps.txt", "vm/docker-inspect.json", "vm/containers/registry-dockerio.log", "vm/containers/marina-dns.log", "clusters/dev.txt"} {
			if _, ok := files[want]; !ok {
				t.Errorf("the archive has no %s", want)
			}
		}
		if !strings.Contains(files["vm/iptables-save.txt"], "MARINA") {
			t.Errorf("iptables-save holds no rule of marina's:\n%s", files["vm/iptables-save.txt"])
		}
		nodeFiles, podLog := 0, false
		var shown []string // what was taken out, for the log: too much hides a report's facts
		for name, body := range files {
			for _, l := range strings.Split(body, "\n") {
				if strings.Contains(l, "<redacted by marina>") && len(shown) < 40 {
					shown = append(shown, name+": "+l)
				}
			}
			if strings.HasPrefix(name, "clusters/dev/dev-control-plane/") || strings.HasPrefix(name, "clusters/dev/dev-worker/") {
				nodeFiles++
			}
			if strings.Contains(name, p.Name) {
				podLog = podLog || strings.Contains(body, "<redacted by marina>")
			}
			for _, s := range secrets {
				if strings.Contains(body, s) {
					t.Errorf("%s holds the secret %.12s…", name, s)
				}
			}
		}
		t.Logf("lines with a secret taken out (up to 40):\n%s", strings.Join(shown, "\n"))
		if nodeFiles < 4 || !podLog {
			t.Errorf("kind's export: %d files of dev's nodes, the planted pod's log redacted: %v; files: %v", nodeFiles, podLog, keys(files))
		}
	})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
