// Package testpki makes the certificates the lab's Kubernetes pieces need (the
// kind node stand-in's kubeadm and the tests' API server): a CA kept as
// NAME.crt and NAME.key in a folder, leaves it signs, and the
// service-account key pair, laid out as kubeadm lays out /etc/kubernetes/pki.
package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority kept in Dir as NAME.crt and NAME.key.
type CA struct {
	Dir  string
	cert *x509.Certificate
	key  crypto.Signer
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 63))
	return n
}

// LoadOrMakeCA returns the CA NAME in dir, made when it does not exist yet
// (kind copies the CAs of the first control plane to the others).
func LoadOrMakeCA(dir, name, cn string) (*CA, error) {
	crtPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if crtPEM, err := os.ReadFile(crtPath); err == nil {
		keyPEM, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, err
		}
		cb, _ := pem.Decode(crtPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb == nil || kb == nil {
			return nil, errors.New(name + ": not PEM")
		}
		cert, err := x509.ParseCertificate(cb.Bytes)
		if err != nil {
			return nil, err
		}
		k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
		if err != nil {
			return nil, err
		}
		signer, ok := k.(crypto.Signer)
		if !ok {
			return nil, errors.New(name + ": not a signing key")
		}
		return &CA{Dir: dir, cert: cert, key: signer}, nil
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	if err := writePEM(crtPath, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, err
	}
	return &CA{Dir: dir, cert: cert, key: key}, nil
}

// Issue signs a new leaf and returns its PEM certificate and key; with a
// name it also writes NAME.crt and NAME.key into the CA's folder.
func (c *CA) Issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (crtPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	crtPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	if name != "" {
		if err := os.WriteFile(filepath.Join(c.Dir, name+".crt"), crtPEM, 0o644); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(c.Dir, name+".key"), keyPEM, 0o600); err != nil {
			return nil, nil, err
		}
	}
	return crtPEM, keyPEM, nil
}

// PEM is the CA's certificate.
func (c *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

func writePEM(path, typ string, der []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if typ != "CERTIFICATE" && typ != "PUBLIC KEY" {
		mode = 0o600
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

// ServiceAccountKey makes sa.key and sa.pub in dir unless they are there
// (kind copies them in on joining control planes).
func ServiceAccountKey(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "sa.key")); err == nil {
		return nil
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub)
}
